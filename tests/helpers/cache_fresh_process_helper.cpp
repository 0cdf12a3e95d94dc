// One run of a small host compiler in a process of its own, for cache_test.cpp and
// cpu_dispatch_test.cpp: the cache comes from the environment, as a real host's would,
// and the kernel it caches (support/model.hpp) calls another kernel, works in a dialect
// group and returns a type singleton.
//
// Usage: cache_fresh_process_helper MODE DIR
//   Sets CCFRESH_DIR=DIR, then takes compile_cache::default_cache::from_env("CCFRESH")
//   (CCFRESH_LOG comes from the caller's environment).
//   MODE store: get_or_compile the kernel, printing how it was produced.
//   MODE load:  load it only (no compile), printing whether it loaded and what its
//               references point at in this process.
//   MODE static-store: as store, with the cache an object of static storage duration,
//               destroyed at exit after the thread's thread_local objects (its destructor
//               then writes the identity record it holds, reading the directory first).
// Prints one line of `name=value` fields; exits 0 unless the arguments are wrong.
#include "support/model.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace cc = compile_cache;

using namespace compile_cache_test::model;

int usage() {
    std::fprintf(stderr, "usage: cache_fresh_process_helper store|load|static-store DIR\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3) return usage();
    std::string const mode = argv[1];
    if (mode != "store" && mode != "load" && mode != "static-store") return usage();
    ::setenv("CCFRESH_DIR", argv[2], 1);

    // The host's live objects, on the heap: nothing about their addresses carries over
    // from one process to the next.
    auto core = std::make_unique<dialect_group>(dialect_group{"core+arith"});
    auto f64 = std::make_unique<type>(type{"f64"});
    auto fma = std::make_unique<kernel>(kernel{"fma"});
    auto saxpy = std::make_unique<kernel>(kernel{"saxpy"});

    static std::optional<cc::default_cache> at_exit; // (static-store)
    std::optional<cc::default_cache> in_main;
    cc::default_cache& cache = (mode == "static-store" ? at_exit : in_main).emplace(cc::default_cache::from_env("CCFRESH"));
    cc::registry& reg = cache.resolver();
    reg.add_shared("mydsl.dialects.core", core.get());
    reg.add_singleton("mydsl.type.f64", f64.get());

    cc::key_result const fma_key = cache.make_key_builder("fresh-helper 1").add("ir", "fma(a,b,c) = a*b+c").finish();
    reg.bind(fma.get(), fma_key.value());
    cc::key_result const saxpy_key = cache.make_key_builder("fresh-helper 1")
                                          .add("ir", "saxpy(a,x,y) = fma(a,x,y)")
                                          .add("callee", fma_key.value())
                                          .finish();
    cc::entry_info const info{"saxpy", "blas.dsl", 3};

    compiled_kernel k;
    std::string outcome;
    if (mode == "store" || mode == "static-store") {
        auto r = cache.get_or_compile<compiled_kernel>(
            saxpy_key, info,
            [&] {
                compiled_kernel c;
                c.bytecode = {0x10, 0x00, 0x01, 0x02, 0x30, 0xff};
                c.constants = {1.0, 0.25};
                c.callees = {fma.get()};
                c.dialects = core.get();
                c.result_type = f64.get();
                return c;
            },
            saxpy.get());
        k = std::move(r.value);
        outcome = cc::to_string(r.outcome);
    } else if (auto loaded = cache.load<compiled_kernel>(saxpy_key, info, saxpy.get())) {
        k = std::move(*loaded);
        outcome = "loaded";
    } else {
        outcome = "miss";
    }

    std::printf("enabled=%d outcome=%s callees=%zu callee=%s callee_live=%d dialects_live=%d type_live=%d "
                "bytecode=%zu stats=[%s]\n",
                cache.enabled() ? 1 : 0, outcome.c_str(), k.callees.size(),
                k.callees.empty() ? "-" : k.callees[0]->name.c_str(),
                !k.callees.empty() && k.callees[0].get() == fma.get() ? 1 : 0, k.dialects.get() == core.get() ? 1 : 0,
                k.result_type.get() == f64.get() ? 1 : 0, k.bytecode.size(), cache.stats().summary().c_str());
    return 0;
}
