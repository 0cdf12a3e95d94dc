// The cache side of the fresh-process helper: compiled with RTTI, no LLVM header.
#include "helper_store.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/llvm/cache_object_store.hpp>

namespace {
compile_cache::default_cache& helper_cache() {
    static compile_cache::default_cache cache = compile_cache::default_cache::from_env("LLVM_HELPER_CACHE");
    return cache;
}
} // namespace

compile_cache::object_store make_helper_store() {
    return compile_cache::make_object_store(helper_cache(), "llvm_object_cache_helper 1");
}

std::string helper_cache_summary() {
    compile_cache::statistics_snapshot s = helper_cache().stats();
    return "hits=" + std::to_string(s.hits) +
           " absent=" + std::to_string(s.miss_count(compile_cache::miss_reason::absent)) +
           " corrupt=" + std::to_string(s.miss_count(compile_cache::miss_reason::corrupt)) +
           " stores=" + std::to_string(s.stores) + " bypasses=" + std::to_string(s.bypasses) +
           " compile-ns=" + std::to_string(s.compile_ns);
}
