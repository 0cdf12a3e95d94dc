// What single flight costs a miss that no other process shares (a lone cold miss): a
// get_or_compile of a new key that compiles (a trivial compile, so that only the
// cache's work is timed) and stores a 4 KiB artifact in a directory, with single flight
// on (the claim file created and written, the entry's absence checked, then the entry
// written into the claim file, which is renamed onto the entry) and off
// (PREFIX_SINGLE_FLIGHT=0), side by side in one run; and the claim alone (try_claim and
// release_claim of a new key, with no store between: the claim file removed). docs/benchmarks.md, "Single flight", sets the
// difference against a chain40 cold run.
#include "bench_common.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>

#include <boost/serialization/string.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

namespace cc = compile_cache;
using bench::random_string;
using bench::scratch_dir;

void miss_store(benchmark::State& state, cc::claim_scope scope) {
    scratch_dir dir("bench-flight");
    cc::cache_options o;
    o.single_flight.scope = scope;
    o.record_identities = false; // the same in both: only the claim differs
    cc::default_cache cache(cc::directory_storage(dir.path()), o);
    std::string const value = random_string(4096, 7);
    std::uint64_t n = 0;
    for (auto _ : state) {
        cc::key_result const k = cache.make_key_builder("bench").add("n", n++).finish();
        cc::cached<std::string> r = cache.get_or_compile<std::string>(k, {"k", "bench.dsl", 1}, [&] { return value; });
        benchmark::DoNotOptimize(r.value.data());
    }
    if (cache.stats().stores != n) state.SkipWithError("a store failed");
}
void BM_lone_miss_single_flight_off(benchmark::State& state) { miss_store(state, cc::claim_scope::none); }
void BM_lone_miss_single_flight_on(benchmark::State& state) { miss_store(state, cc::claim_scope::both); }

void BM_claim_and_release(benchmark::State& state) {
    scratch_dir dir("bench-claim");
    cc::directory_storage s(dir.path());
    std::uint64_t n = 0;
    for (auto _ : state) {
        cc::key const k = cc::key_builder<>().add("n", n++).finish().value();
        if (s.try_claim(k, {}).state != cc::claim_state::claimed) {
            state.SkipWithError("not claimed");
            break;
        }
        s.release_claim(k);
    }
}

BENCHMARK(BM_lone_miss_single_flight_off);
BENCHMARK(BM_lone_miss_single_flight_on);
BENCHMARK(BM_lone_miss_single_flight_off);
BENCHMARK(BM_lone_miss_single_flight_on);
BENCHMARK(BM_claim_and_release);

} // namespace

BENCHMARK_MAIN();
