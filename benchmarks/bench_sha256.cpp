// SHA-256 throughput: compile_cache::sha256 (the backend chosen for this CPU, and the
// portable code forced) against OpenSSL's EVP interface with its context reused, at
// 64 B, 1 KiB, 64 KiB and 1 MiB, in one run. Each iteration hashes one whole message,
// as a key or an envelope check does: set-up and finalization included.
//
// scripts/bench.sh divides the medians: the targets are >= 0.95 of OpenSSL's bytes/s
// at 64 KiB and 1 MiB, and >= 1.1 at 64 B.
#include "bench_common.hpp"

#include <compile_cache/hasher/sha256.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#if COMPILE_CACHE_BENCH_OPENSSL
#include <openssl/evp.h>
#endif

namespace {

using compile_cache::sha256_backend;

std::vector<unsigned char> const& message() {
    static std::vector<unsigned char> const m = bench::random_bytes(std::size_t{1} << 20, 1);
    return m;
}

void sizes(benchmark::internal::Benchmark* b) {
    for (long n : {64L, 1024L, 64L * 1024, 1024L * 1024}) b->Arg(n);
}

/// compile_cache::sha256_digest with the given backend; `automatic` uses the one the
/// process chose (COMPILE_CACHE_SHA256 and the CPU).
void run_compile_cache(benchmark::State& state, sha256_backend backend, bool automatic) {
    auto const before = compile_cache::sha256_implementation();
    if (!automatic && !compile_cache::set_sha256_implementation(backend)) {
        state.SkipWithError("backend not available on this machine");
        return;
    }
    state.SetLabel(compile_cache::to_string(compile_cache::sha256_implementation()));
    auto const n = static_cast<std::size_t>(state.range(0));
    unsigned char const* p = message().data();
    for (auto _ : state) {
        auto digest = compile_cache::sha256_digest(p, n);
        benchmark::DoNotOptimize(digest);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
    compile_cache::set_sha256_implementation(before);
}

void BM_sha256_compile_cache(benchmark::State& state) { run_compile_cache(state, {}, true); }
void BM_sha256_compile_cache_portable(benchmark::State& state) {
    run_compile_cache(state, sha256_backend::portable, false);
}
BENCHMARK(BM_sha256_compile_cache)->Apply(sizes);
BENCHMARK(BM_sha256_compile_cache_portable)->Apply(sizes);

#if COMPILE_CACHE_BENCH_OPENSSL
/// EVP with one context reused and re-initialized per message, and `md` either the
/// explicitly fetched implementation (OpenSSL 3's recommended, fastest form) or the
/// legacy EVP_sha256() (resolved by an implicit fetch inside EVP_DigestInit_ex).
void run_openssl(benchmark::State& state, bool fetched) {
    EVP_MD* fetched_md = fetched ? EVP_MD_fetch(nullptr, "SHA256", nullptr) : nullptr;
    EVP_MD const* md = fetched ? fetched_md : EVP_sha256();
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (md == nullptr || ctx == nullptr) {
        state.SkipWithError("OpenSSL: no SHA-256");
        EVP_MD_CTX_free(ctx);
        EVP_MD_free(fetched_md);
        return;
    }
    auto const n = static_cast<std::size_t>(state.range(0));
    unsigned char const* p = message().data();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    for (auto _ : state) {
        EVP_DigestInit_ex(ctx, md, nullptr);
        EVP_DigestUpdate(ctx, p, n);
        EVP_DigestFinal_ex(ctx, digest, &len);
        benchmark::DoNotOptimize(digest);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(fetched_md);
}
void BM_sha256_openssl_evp(benchmark::State& state) { run_openssl(state, true); }
void BM_sha256_openssl_evp_legacy_md(benchmark::State& state) { run_openssl(state, false); }
BENCHMARK(BM_sha256_openssl_evp)->Apply(sizes);
BENCHMARK(BM_sha256_openssl_evp_legacy_md)->Apply(sizes);
#endif

} // namespace

int main(int argc, char** argv) {
    // Before anything hashes: a check that every backend gives the standard digest
    // of "abc", so a benchmark never measures a broken path.
    if (!bench::check_sha256_backends()) return 1;
#if !COMPILE_CACHE_BENCH_OPENSSL
    std::fprintf(stderr, "bench_sha256: built without OpenSSL (libssl-dev): no peer to compare with\n");
#endif
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
