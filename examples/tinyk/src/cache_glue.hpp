// tinyk: the one place that talks to the cache. STUB until compile_cache's cache
// headers land: keys are FNV-1a digests and nothing is stored; every kernel compiles.
#pragma once

#include "bytecode.hpp"
#include "kernel.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tinyk::glue {

using key = std::string;

class key_result {
public:
    key_result() = default;
    key_result(key k, std::string reason) : key_(std::move(k)), reason_(std::move(reason)) {}
    bool ok() const { return reason_.empty(); }
    key const& value() const { return key_; }
    std::string const& bypass_reason() const { return reason_; }

private:
    key key_;
    std::string reason_;
};

class key_builder {
public:
    void add(std::string_view name, std::string_view value);
    void add(std::string_view name, std::map<std::string, double> const& values);
    void add(std::string_view name, std::vector<key> const& keys);
    void fail(std::string reason) {
        if (reason_.empty()) reason_ = std::move(reason);
    }
    key_result finish() const;

private:
    std::string message_;
    std::string reason_;
};

enum class outcome { compiled, loaded, bypassed };

struct result {
    outcome how = outcome::compiled;
    std::string reason;
};

class cache {
public:
    static cache from_env();
    bool enabled() const { return false; }
    /// Registers the objects artifacts reference by name: dialect group, type singletons.
    void register_shared_objects() {}
    key_builder make_key_builder() const { return {}; }
    void bind(kernel&, key_result const&) {}
    /// Loads k's artifact or compiles it; sets k.code.
    result get_or_compile(kernel& k, key_result const& kr, std::string const& file,
                          std::function<artifact()> const& compile);
    std::string stats_summary() const { return "cache disabled (stub)"; }
};

} // namespace tinyk::glue
