// tinyk: the one place that talks to the cache (from the environment: TINYK_CACHE_DIR,
// TINYK_CACHE_LOG, ...). Built with hiredis (TINYK_WITH_REDIS) or libcurl (TINYK_WITH_HTTP),
// the cache directory sits in front of a shared Redis server or cluster, or an HTTP cache
// server, whichever the scheme of TINYK_CACHE_REMOTE names (remote_by_url), with the other
// TINYK_CACHE_REMOTE_* settings (docs/remote.md); unset, it is the directory alone.
// Built with SQLite (TINYK_WITH_SQLITE), TINYK_CACHE_FILE names one SQLite file that takes
// the directory's place (alone, or as the local tier in front of the remote); with
// TINYK_CACHE_FILE_MODE=read-only it is read and never written (a CI job's restored cache).
// TINYK_CACHE_FILE and TINYK_CACHE_DIR both set: one line, and no cache.
#pragma once

#include "bytecode.hpp"
#include "kernel.hpp"

#include <compile_cache/compile_cache.hpp>
#if TINYK_WITH_REDIS
#include <compile_cache/storage/redis/redis_storage.hpp>
#endif
#if TINYK_WITH_HTTP
#include <compile_cache/storage/http/http_storage.hpp>
#endif
#if TINYK_WITH_REDIS || TINYK_WITH_HTTP
#include <compile_cache/storage/remote_by_url.hpp>
#endif
#if TINYK_WITH_SQLITE
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#endif

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace tinyk::glue {

namespace cc = compile_cache;

using key = cc::key;
using key_result = cc::key_result;
using key_builder = cc::key_builder<cc::sha256>;
using outcome = cc::outcome;

/// The storage tinyk uses, over a local storage `Local`: in front of the remote the
/// build can reach (TINYK_CACHE_REMOTE), or alone.
#if TINYK_WITH_REDIS && TINYK_WITH_HTTP
template <class Local>
using storage_over = cc::tiered_storage<Local, cc::remote_by_url<cc::redis_storage, cc::http_storage>>;
#elif TINYK_WITH_REDIS
template <class Local>
using storage_over = cc::tiered_storage<Local, cc::remote_by_url<cc::redis_storage>>;
#elif TINYK_WITH_HTTP
template <class Local>
using storage_over = cc::tiered_storage<Local, cc::remote_by_url<cc::http_storage>>;
#else
template <class Local>
using storage_over = Local;
#endif
template <class Local>
using cache_over = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, storage_over<Local>>;

/// The cache on a directory (TINYK_CACHE_DIR); also what a disabled cache is.
using directory_cache_type = cache_over<cc::directory_storage>;
#if TINYK_WITH_SQLITE
/// The cache on one SQLite file (TINYK_CACHE_FILE).
using file_cache_type = cache_over<cc::sqlite_storage>;
using any_cache = std::variant<directory_cache_type, file_cache_type>;
#else
using any_cache = std::variant<directory_cache_type>;
#endif

struct result {
    outcome how = outcome::compiled;
    std::string reason; // why it was not loaded: the bypass or miss reason, or "disabled"
    std::string explanation; // for an absent miss, what changed: "callee:helper, ir changed", "new"
};

/// Where the driver spent its time before the cache was asked for any kernel (shown
/// by --stats beside the cache's own figures).
struct driver_times {
    std::uint64_t front_ns = 0; // parse, check, lower, canonical IR text
    std::uint64_t key_ns = 0;   // call graph components and every kernel's key
};

/// The environment prefix: TINYK_CACHE_DIR and the other settings from_env reads.
inline constexpr char const* env_prefix = "TINYK_CACHE";

/// The version that goes into every key (with the build-id of the tinyk binary).
inline constexpr char const* host_version = "tinyk 0.1";

class cache {
public:
    /// The cache the environment asks for: on TINYK_CACHE_FILE's SQLite file when it is
    /// set (and this tinyk was built with SQLite), else on TINYK_CACHE_DIR's directory;
    /// both set, or TINYK_CACHE_FILE without SQLite: one line, and no cache.
    static cache from_env();
    /// Every TINYK_CACHE_* setting from_env reads, with one line each (for --help).
    static std::vector<cc::environment_setting> environment_settings();

    bool enabled() const;
    /// Registers what artifacts reference by name: the dialect group (shared, by a
    /// stable name) and the type singletons (by name-based uuid).
    void register_shared_objects();
    key_builder make_key_builder() const;
    /// Adds to the toolchain component of every key made after it (the native
    /// backend's LLVM version and target).
    void add_to_toolchain(std::string const& what) { toolchain_ += "; " + what; }
    /// Binds a live kernel to its key, so that artifacts can refer to it.
    void bind(kernel& k, key_result const& kr);
    /// Reads ahead every kernel's entry and identity record (keys[k->index] for each
    /// kernel of `kernels`): with a remote, one round trip for all of them before the
    /// first get_or_compile; without one, nothing.
    void prefetch(std::vector<std::unique_ptr<kernel>> const& kernels, std::vector<key_result> const& keys,
                  std::string const& origin_file);
    /// Loads k's artifact or compiles it (and stores it); sets k.code.
    result get_or_compile(kernel& k, key_result const& kr, std::string const& origin_file,
                          std::function<artifact()> const& compile);
    /// The same for the native backend's artifact; sets k.native (native_glue.cpp).
    result get_or_compile_native(kernel& k, key_result const& kr, std::string const& origin_file,
                                 std::function<native_artifact()> const& compile);
    /// One line: the cache's statistics, then the driver's key-ms and front-ms.
    std::string stats_summary(driver_times const& t); // (waits for the uploads first: up to 10 s)

private:
    explicit cache(any_cache c) : c_(std::move(c)) {}
    any_cache c_;
    std::string toolchain_ = host_version;
};

} // namespace tinyk::glue
