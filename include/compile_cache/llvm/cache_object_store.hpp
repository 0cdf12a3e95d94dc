// compile_cache: make_object_store, an object_store over any basic_cache composition:
// the cache side of the LLVM ObjectCache adapter (compile_cache/llvm/object_cache.hpp).
// Needs Boost and RTTI, no LLVM header.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>

#include <compile_cache/cache.hpp>
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

/// The key of an object file: the toolchain (as make_key_builder gives it: the
/// library, compiler, Boost, archive format, `host_version` and the host's build-id),
/// then the module's bitcode digest, the target description and the LLVM version.
/// A bypass when there is no bitcode digest or no target description.
template <class Cache>
key_result object_key(Cache const& cache, object_key_inputs const& in, std::string const& host_version = {}) {
    auto kb = cache.make_key_builder(host_version);
    if (in.bitcode_digest.empty()) kb.fail("no bitcode digest for module '" + in.module_name + "'");
    if (in.target.empty()) kb.fail("no target description (set_target was not called)");
    kb.add("kind", std::string_view("llvm-object"));
    kb.add("bitcode", in.bitcode_digest);
    kb.add("target", in.target);
    kb.add("llvm", in.llvm_version);
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
            std::optional<object_file> hit =
                self.cache->template load<object_file>(k, entry_info{in.module_name, in.source_file, 0});
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
            self.cache->store(k, object_file{std::string(object)}, entry_info{in.module_name, in.source_file, 0},
                              nullptr, compile_time);
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

    static bool enabled(void const* p) noexcept {
        return static_cast<cache_object_store_impl const*>(p)->cache->enabled();
    }

    static void destroy(void* p) noexcept { delete static_cast<cache_object_store_impl*>(p); }

    static constexpr object_store::operations ops{&load, &store, &log, &enabled, &destroy};
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
