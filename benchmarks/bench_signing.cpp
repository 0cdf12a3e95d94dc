// Signed entries against the HMAC envelope, side by side in one run, at 4 KiB and 1 MiB:
// what a store pays to seal (HMAC) or to seal and sign its upload (reseal the local
// entry with Ed25519), what a remote hit pays to check (HMAC, or Ed25519 verify plus the
// reseal under the local HMAC for the local copy), and a local hit after that copy
// against a local hit on an entry the machine stored itself (the goal: equal).
#include "bench_common.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/signing/signed_entries.hpp>
#include <compile_cache/storage/directory_storage.hpp>

#include <boost/serialization/string.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

namespace {

namespace cc = compile_cache;

std::string const& payload() {
    static std::string const d = bench::random_string(std::size_t{1} << 20, 7);
    return d;
}

void sizes(benchmark::internal::Benchmark* b) {
    for (long n : {4096L, 1L << 20}) b->Arg(n);
}

std::shared_ptr<cc::ed25519_entry_signatures> const& signer() {
    static std::shared_ptr<cc::ed25519_entry_signatures> const s = [] {
        std::string why;
        auto k = cc::ed25519_signer::generate("bench", why);
        if (!k) std::abort();
        return std::make_shared<cc::ed25519_entry_signatures>(std::move(*k));
    }();
    return s;
}

std::string read_whole_file(std::string const& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

cc::envelope_auth const hmac_auth("a 32-byte secret for the bench..");

cc::key const bench_key(cc::sha256_digest("k", 1));

std::string entry_of(std::size_t size, cc::envelope_auth const& auth) {
    cc::entry_metadata m;
    m.name = "kernel";
    m.format_id = "bench-format";
    std::string out;
    cc::envelope_writer w(out, bench_key, m, auth);
    w.out().append(payload(), 0, size);
    w.seal();
    return out;
}

/// A store's seal today: the HMAC of the whole entry.
void BM_store_seal_hmac(benchmark::State& state) {
    std::string const body = entry_of(static_cast<std::size_t>(state.range(0)), cc::envelope_auth());
    std::string out;
    for (auto _ : state) {
        out.assign(body, 0, body.size() - 4);
        hmac_auth.append_check(out);
        benchmark::DoNotOptimize(out.data());
    }
}
/// A signing writer's store: the HMAC seal of its local entry, then its upload resealed and signed.
void BM_store_seal_hmac_and_sign(benchmark::State& state) {
    std::string const body = entry_of(static_cast<std::size_t>(state.range(0)), cc::envelope_auth());
    cc::envelope_auth const signing = cc::envelope_auth::signed_by(signer());
    std::string out, upload;
    for (auto _ : state) {
        out.assign(body, 0, body.size() - 4);
        hmac_auth.append_check(out);
        if (!cc::reseal_envelope(out, hmac_auth, signing, upload)) state.SkipWithError("reseal failed");
        benchmark::DoNotOptimize(upload.data());
    }
}
/// A remote hit's check today: the HMAC.
void BM_remote_hit_check_hmac(benchmark::State& state) {
    std::string const entry = entry_of(static_cast<std::size_t>(state.range(0)), hmac_auth);
    for (auto _ : state) {
        auto f = cc::detail::check_envelope(entry, bench_key, "bench-format", std::size_t{64} << 20, hmac_auth);
        if (f.status != cc::envelope_status::ok) state.SkipWithError("not ok");
        benchmark::DoNotOptimize(f);
    }
}
/// A remote hit's check with signatures: the Ed25519 verify, then the reseal of the local copy.
void BM_remote_hit_verify_and_reseal(benchmark::State& state) {
    cc::envelope_auth const signing = cc::envelope_auth::signed_by(signer());
    std::string const entry = entry_of(static_cast<std::size_t>(state.range(0)), signing);
    std::string local;
    for (auto _ : state) {
        auto f = cc::detail::check_envelope(entry, bench_key, "bench-format", std::size_t{64} << 20, signing);
        if (f.status != cc::envelope_status::ok) state.SkipWithError("not ok");
        if (!cc::reseal_envelope(entry, signing, hmac_auth, local)) state.SkipWithError("reseal failed");
        benchmark::DoNotOptimize(local.data());
    }
}
BENCHMARK(BM_store_seal_hmac)->Apply(sizes);
BENCHMARK(BM_store_seal_hmac_and_sign)->Apply(sizes);
BENCHMARK(BM_remote_hit_check_hmac)->Apply(sizes);
BENCHMARK(BM_remote_hit_verify_and_reseal)->Apply(sizes);

struct blob {
    std::string bytes;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & bytes;
    }
};

/// A local hit (directory, HMAC): on an entry this machine stored (arg 0), or on the
/// local copy of a remote entry verified by signature and resealed (arg 1).
void BM_local_hit(benchmark::State& state, bool copied) {
    bench::scratch_dir dir("signing");
    std::string const secret = "a 32-byte secret for the bench..";
    cc::cache_options o;
    o.secret = secret;
    o.record_identities = false;
    cc::default_cache cache(cc::directory_storage(dir.path() + "/cache"), o);
    cc::key_result const k = cc::key_builder<>().add("ir", "bench").finish();
    blob b{payload().substr(0, static_cast<std::size_t>(state.range(0)))};
    if (!cache.store(k, b, {"kernel", "f", 1})) state.SkipWithError("store failed");
    if (copied) {
        // What the tier writes: CI's signed entry, verified and resealed under the local secret.
        cc::envelope_auth const signing = cc::envelope_auth::signed_by(signer());
        std::string const local_entry = read_whole_file(cache.storage().entry_path(k.value()));
        std::string signed_entry, resealed;
        if (!cc::reseal_envelope(local_entry, cc::envelope_auth(secret), signing, signed_entry) ||
            !cc::reseal_envelope(signed_entry, signing, cc::envelope_auth(secret), resealed))
            state.SkipWithError("reseal failed");
        cache.storage().remove(k.value());
        if (cache.storage().write(k.value(), resealed)) state.SkipWithError("write failed");
    }
    for (auto _ : state) {
        auto loaded = cache.load<blob>(k, {"kernel", "f", 1});
        if (!loaded) state.SkipWithError("miss");
        benchmark::DoNotOptimize(loaded);
    }
}
BENCHMARK_CAPTURE(BM_local_hit, stored_here, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_local_hit, copied_from_signed_remote, true)->Apply(sizes);

} // namespace

BENCHMARK_MAIN();
