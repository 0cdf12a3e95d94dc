// The envelope's unkeyed integrity check: CRC-32C against SHA-256, over whole entries
// of 1 KiB, 4 KiB, 64 KiB and 1 MiB, in one run, CRC-32C on each implementation this CPU
// runs; and open_envelope (check value first, then
// the header) on entries of those sizes, which is what a hit pays before the payload
// reaches a deserializer.
#include "bench_common.hpp"

#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

std::vector<unsigned char> const& data() {
    static std::vector<unsigned char> const d = bench::random_bytes(1024 * 1024, 2);
    return d;
}

void sizes(benchmark::internal::Benchmark* b) {
    for (long n : {1024L, 4096L, 64L * 1024, 1024L * 1024}) b->Arg(n);
}

void BM_check_crc32c(benchmark::State& state) {
    state.SetLabel(compile_cache::to_string(compile_cache::crc32c_implementation()));
    auto const n = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        std::uint32_t crc = compile_cache::crc32c(data().data(), n);
        benchmark::DoNotOptimize(crc);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

/// BM_check_crc32c on implementation `b`; skipped where this CPU does not run it.
void check_crc32c_on(benchmark::State& state, compile_cache::crc32c_backend b) {
    auto const before = compile_cache::crc32c_implementation();
    if (!compile_cache::set_crc32c_implementation(b)) {
        state.SkipWithError("not available on this CPU");
        return;
    }
    BM_check_crc32c(state);
    compile_cache::set_crc32c_implementation(before);
}

void BM_check_crc32c_portable(benchmark::State& state) { check_crc32c_on(state, compile_cache::crc32c_backend::portable); }
void BM_check_crc32c_x86_sse42(benchmark::State& state) { check_crc32c_on(state, compile_cache::crc32c_backend::x86_sse42); }
void BM_check_crc32c_x86_avx512(benchmark::State& state) {
    check_crc32c_on(state, compile_cache::crc32c_backend::x86_avx512);
}

void BM_check_sha256(benchmark::State& state) {
    state.SetLabel(compile_cache::to_string(compile_cache::sha256_implementation()));
    auto const n = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        auto digest = compile_cache::sha256_digest(data().data(), n);
        benchmark::DoNotOptimize(digest);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK(BM_check_crc32c)->Apply(sizes);
BENCHMARK(BM_check_crc32c_portable)->Apply(sizes);
BENCHMARK(BM_check_crc32c_x86_sse42)->Apply(sizes);
BENCHMARK(BM_check_crc32c_x86_avx512)->Apply(sizes);
BENCHMARK(BM_check_sha256)->Apply(sizes);

/// open_envelope on a sound entry whose total size is the argument.
void BM_open_envelope(benchmark::State& state) {
    compile_cache::key const k(compile_cache::sha256_digest("k", 1));
    compile_cache::entry_metadata m;
    m.name = "kernel";
    m.origin_file = "prog.dsl";
    m.format_id = "bench-format";
    std::string entry;
    std::size_t const length_at = compile_cache::begin_envelope(entry, k, m);
    std::size_t const header = entry.size();
    std::size_t const total = static_cast<std::size_t>(state.range(0));
    entry.append(reinterpret_cast<char const*>(data().data()), total > header + 64 ? total - header - 64 : 0);
    compile_cache::seal_envelope(entry, length_at);
    for (auto _ : state) {
        auto opened = compile_cache::open_envelope(entry, k, "bench-format", std::size_t{64} << 20);
        if (opened.status != compile_cache::envelope_status::ok) state.SkipWithError("envelope not ok");
        benchmark::DoNotOptimize(opened);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(entry.size()));
}
BENCHMARK(BM_open_envelope)->Apply(sizes);

} // namespace

BENCHMARK_MAIN();
