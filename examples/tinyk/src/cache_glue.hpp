// tinyk: the one place that talks to the cache (compile_cache::default_cache from
// the environment: TINYK_CACHE_DIR, TINYK_CACHE_LOG).
#pragma once

#include "bytecode.hpp"
#include "kernel.hpp"

#include <compile_cache/compile_cache.hpp>

#include <functional>
#include <string>

namespace tinyk::glue {

namespace cc = compile_cache;

using key = cc::key;
using key_result = cc::key_result;
using key_builder = cc::key_builder<cc::sha256>;
using outcome = cc::outcome;

struct result {
    outcome how = outcome::compiled;
    std::string reason; // for a bypass
};

/// The version that goes into every key (with the build-id of the tinyk binary).
inline constexpr char const* host_version = "tinyk 0.1";

class cache {
public:
    static cache from_env() { return cache(cc::default_cache::from_env("TINYK_CACHE")); }

    bool enabled() const { return c_.enabled(); }
    /// Registers what artifacts reference by name: the dialect group (shared, by a
    /// stable name) and the type singletons (by name-based uuid).
    void register_shared_objects();
    key_builder make_key_builder() const { return c_.make_key_builder(host_version); }
    /// Binds a live kernel to its key, so that artifacts can refer to it.
    void bind(kernel& k, key_result const& kr);
    /// Loads k's artifact or compiles it (and stores it); sets k.code.
    result get_or_compile(kernel& k, key_result const& kr, std::string const& origin_file,
                          std::function<artifact()> const& compile);
    std::string stats_summary() const;

private:
    explicit cache(cc::default_cache c) : c_(std::move(c)) {}
    cc::default_cache c_;
};

} // namespace tinyk::glue
