// compile_cache: make_object_store, an object_store over any basic_cache composition:
// the cache side of the LLVM ObjectCache adapter (compile_cache/llvm/object_cache.hpp).
// Needs Boost and RTTI, no LLVM header.
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <compile_cache/llvm/object_store.hpp>

#include <boost/serialization/string.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace compile_cache {

/// The artifact the adapter stores: an object file's bytes (ELF, Mach-O, COFF:
/// whatever the target's code generator wrote).
struct object_file {
    std::string bytes;

    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & bytes;
    }
};

/// The key of an object file: the toolchain (as toolchain::of_code gives it: the
/// library, compiler, Boost, archive format, `host_version`, and the build-id of the
/// module holding LLVM's code generator, `in.code_generator`, instead of the host
/// program's), then the module's bitcode digest, the target description, the LLVM
/// version and the LLVM options that were set. A bypass when there is no bitcode
/// digest or no target description.
template <class Cache>
key_result object_key(Cache const& cache, object_key_inputs const& in, std::string const& host_version = {}) {
    (void)cache;
    key_builder<typename Cache::hasher_type> kb;
    toolchain t = toolchain::current(host_version, Cache::format_id());
    if (!in.code_generator.empty()) t.host_build_id = in.code_generator;
    kb.add("toolchain", t);
    if (in.bitcode_digest.empty()) kb.fail("no bitcode digest for module '" + in.module_name + "'");
    if (in.target.empty()) kb.fail("no target description (set_target was not called)");
    kb.add("kind", std::string_view("llvm-object"));
    kb.add("bitcode", in.bitcode_digest);
    kb.add("target", in.target);
    kb.add("llvm", in.llvm_version);
    kb.add("llvm-options", in.llvm_options);
    return kb.finish();
}

namespace detail {

template <class Cache>
struct cache_object_store_impl {
    Cache* cache;
    std::string host_version;

    static bool load(void* p, object_key_inputs const& in, std::string& object) noexcept {
        try {
            auto& self = *static_cast<cache_object_store_impl*>(p);
            if (!self.cache->enabled()) return false;
            key_result k = object_key(*self.cache, in, self.host_version);
            std::optional<object_file> hit = self.cache->template load<object_file>(k, info_of(in));
            if (!hit) return false;
            object = std::move(hit->bytes);
            return true;
        } catch (...) {
            return false; // the cache front does not throw; this is for the key and the strings
        }
    }

    static void store(void* p, object_key_inputs const& in, std::string_view object,
                      std::chrono::nanoseconds compile_time) noexcept {
        try {
            auto& self = *static_cast<cache_object_store_impl*>(p);
            if (!self.cache->enabled()) return;
            key_result k = object_key(*self.cache, in, self.host_version);
            self.cache->count_compile(compile_time);
            self.cache->store(k, object_file{std::string(object)}, info_of(in), nullptr, compile_time);
        } catch (...) {
        }
    }

    static void log(void* p, std::string_view line) noexcept {
        try {
            auto& self = *static_cast<cache_object_store_impl*>(p);
            if (auto const& logger = self.cache->options().logger) logger(line);
        } catch (...) {
        }
    }

    static void bypass(void* p, std::string const& reason) noexcept {
        static_cast<cache_object_store_impl*>(p)->cache->count_bypass(reason);
    }

    static std::string summary(void const* p) noexcept {
        try {
            return static_cast<cache_object_store_impl const*>(p)->cache->stats().summary();
        } catch (...) {
            return {};
        }
    }

    /// The cache's own explanation of an absent miss (basic_cache::explain_miss, from
    /// the identity record of the entry's name and origin), when the cache has a logger.
    static std::string explain(void* p, object_key_inputs const& in) noexcept {
        try {
            auto& self = *static_cast<cache_object_store_impl*>(p);
            if (!self.cache->options().logger) return {}; // for the log line only: no read without one
            key_result k = object_key(*self.cache, in, self.host_version);
            return self.cache->explain_miss(k, info_of(in)).text();
        } catch (...) {
            return {};
        }
    }

    /// The entry's name: what the module defines; its origin: the module.
    static entry_info info_of(object_key_inputs const& in) {
        entry_info info;
        info.name = in.entry_name.empty() ? in.module_name : in.entry_name;
        info.origin_file = in.module_name.empty() ? in.source_file : in.module_name;
        return info;
    }

    static bool enabled(void const* p) noexcept {
        return static_cast<cache_object_store_impl const*>(p)->cache->enabled();
    }

    static void destroy(void* p) noexcept { delete static_cast<cache_object_store_impl*>(p); }

    static constexpr object_store::operations ops{&load, &store, &log, &enabled, &destroy, &bypass, &summary, &explain};
};

} // namespace detail

/// An object_store over `cache` (which must outlive it). `host_version` goes into the
/// toolchain component of every key, as with basic_cache::make_key_builder.
template <class Cache>
object_store make_object_store(Cache& cache, std::string host_version = {}) {
    using impl = detail::cache_object_store_impl<Cache>;
    return object_store(new impl{&cache, std::move(host_version)}, &impl::ops);
}

} // namespace compile_cache
