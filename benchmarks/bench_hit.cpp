// The whole hit, as a host sees it: default_cache::load of a key already computed,
// for an artifact whose entry is about 4 KiB (bytecode, constants, symbol names, and
// references: callee kernels by key, the dialect group by name, type singletons by
// uuid), against the floor measured in the same run:
//   floor = open/read/close of the same file + deserializing the same archive bytes
//           from memory (Boost binary archive, references relinked through the same
//           registry).
// Target: load <= 1.3 x floor. The parts are measured too (read alone, envelope check
// alone, deserialization alone) so that a miss of the target shows where time goes.
// Also what issue 13 adds: a miss and its store with and without the kernel's identity
// record (the record that explains misses), and a hit through get_or_compile with
// verify mode off and on (on: the host's compile, here a copy of the artifact, and
// both serialized). The miss and store with and without records also interleaved in one
// loop, each side timed alone, their medians and ratio as counters (issue 27, part 3's
// goal: <= 1.10).
// And what issue 27 (part 1) adds: whole hits of artifacts of 4 KiB, 64 KiB, 1 MiB and
// 16 MiB (one byte vector), "BM_sized_<what>/<bytes>": the cache as it loads now (entries
// of at least 1 MiB mapped: directory_options::map_min_size), the cache made to read
// (map_min_size 0: the path before) and made to map everything (1), the floor (open/read/close into a buffer large
// enough, then the same deserialization from it), and, built with LLVM 14,
// llvm::localCache's hit on a file of the same bytes (a MemoryBuffer: read below 16 KiB,
// mapped above; nothing checked) followed by the same deserialization.
#include "bench_common.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <benchmark/benchmark.h>

#if COMPILE_CACHE_BENCH_LLVM
#include <llvm/Support/Caching.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#endif

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;

struct kernel_object { // a live callee kernel: only its address matters
    int id = 0;
};
struct dialect_group {};
struct type_object {};

struct artifact {
    std::string name;
    std::vector<std::uint8_t> bytecode;
    std::vector<double> constants;
    std::vector<std::string> symbols;
    std::vector<cc::ref<kernel_object>> callees;
    cc::ref<dialect_group> dialects;
    std::vector<cc::ref<type_object>> types;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & name & bytecode & constants & symbols & callees & dialects & types;
    }
};

struct world {
    kernel_object callee_objects[4];
    dialect_group dialects;
    type_object f64, i64, boolean;
    bench::scratch_dir dir{"hit"};
    cc::default_cache cache{cc::directory_storage(dir.path())};
    cc::key_result k;
    cc::entry_info info{"saxpy_tiled", "kernels.dsl", 42};
    std::string entry_path;
    std::size_t entry_size = 0;
    std::size_t payload_offset = 0, payload_size = 0;

    world() {
        for (int i = 0; i < 4; ++i) callee_objects[i].id = i;
        register_with(cache);

        artifact a;
        a.name = info.name;
        a.bytecode.resize(2600);
        for (std::size_t i = 0; i < a.bytecode.size(); ++i) a.bytecode[i] = static_cast<std::uint8_t>(i * 31 + 7);
        for (int i = 0; i < 64; ++i) a.constants.push_back(i * 0.25);
        for (int i = 0; i < 24; ++i) a.symbols.push_back("symbol_" + std::to_string(i));
        for (auto& c : callee_objects) a.callees.push_back(&c);
        a.dialects = &dialects;
        for (int i = 0; i < 12; ++i) a.types.push_back(i % 3 == 0 ? &f64 : i % 3 == 1 ? &i64 : &boolean);

        k = cc::key_builder<>().add("ir", std::string("the kernel's canonical IR")).finish();
        if (!cache.store(k, a, info)) {
            std::fprintf(stderr, "bench_hit: store failed\n");
            std::exit(2);
        }
        entry_path = cache.storage().entry_path(k.value());
        std::string bytes = read_whole(entry_path);
        entry_size = bytes.size();
        cc::opened_envelope e = cc::open_envelope(bytes, k.value(), cc::boost_binary::format_id(), 1 << 20);
        if (e.status != cc::envelope_status::ok) {
            std::fprintf(stderr, "bench_hit: the stored entry does not open\n");
            std::exit(2);
        }
        payload_offset = static_cast<std::size_t>(e.payload.data() - bytes.data());
        payload_size = e.payload.size();
        ::sync();
    }

    /// Makes the objects an artifact refers to resolvable through `c`'s registry.
    void register_with(cc::default_cache& c) {
        auto& reg = c.resolver();
        for (int i = 0; i < 4; ++i) reg.bind(&callee_objects[i], cc::key_builder<>().add("callee", i).finish().value());
        reg.add_shared("bench.dialects", &dialects);
        reg.add_singleton("bench.type.f64", &f64);
        reg.add_singleton("bench.type.i64", &i64);
        reg.add_singleton("bench.type.bool", &boolean);
    }

    static std::string read_whole(std::string const& path) {
        std::string out(1 << 20, '\0');
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : ::read(fd, out.data(), out.size());
        if (fd >= 0) ::close(fd);
        if (n < 0) {
            std::perror(path.c_str());
            std::exit(2);
        }
        out.resize(static_cast<std::size_t>(n));
        return out;
    }
};

world& the_world() {
    static world w;
    return w;
}

/// open, one read into a buffer that is large enough, close: the least a hit can do.
std::size_t read_floor(std::string const& path, std::vector<char>& buffer) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    ::close(fd);
    return n < 0 ? 0 : static_cast<std::size_t>(n);
}

void BM_hit_load(benchmark::State& state) {
    world& w = the_world();
    for (auto _ : state) {
        std::optional<artifact> a = w.cache.load<artifact>(w.k, w.info);
        if (!a) {
            state.SkipWithError("not a hit");
            break;
        }
        benchmark::DoNotOptimize(a->types.back().get());
    }
    state.SetLabel("entry " + std::to_string(w.entry_size) + " B, payload " + std::to_string(w.payload_size) + " B");
}

void BM_hit_floor(benchmark::State& state) {
    world& w = the_world();
    std::vector<char> buffer(64 * 1024);
    auto ctx = cc::resolver_context::of(w.cache.resolver(), static_cast<void const*>(nullptr));
    for (auto _ : state) {
        std::size_t const n = read_floor(w.entry_path, buffer);
        if (n != w.entry_size) {
            state.SkipWithError("short read");
            break;
        }
        std::optional<artifact> a(std::in_place);
        cc::boost_binary::load(std::string_view(buffer.data() + w.payload_offset, w.payload_size), *a, ctx);
        benchmark::DoNotOptimize(a->types.back().get());
    }
}

// The parts.
void BM_part_read_floor(benchmark::State& state) {
    world& w = the_world();
    std::vector<char> buffer(64 * 1024);
    for (auto _ : state) benchmark::DoNotOptimize(read_floor(w.entry_path, buffer));
}

void BM_part_storage_read(benchmark::State& state) {
    world& w = the_world();
    std::string buffer;
    for (auto _ : state) {
        cc::read_result r = w.cache.storage().read(w.k.value(), buffer, std::size_t{64} << 20);
        benchmark::DoNotOptimize(r);
    }
}

void BM_part_open_envelope(benchmark::State& state) {
    world& w = the_world();
    std::string const bytes = world::read_whole(w.entry_path);
    for (auto _ : state) {
        cc::opened_envelope e = cc::open_envelope(bytes, w.k.value(), cc::boost_binary::format_id(), std::size_t{64} << 20);
        benchmark::DoNotOptimize(e);
    }
}

void BM_part_deserialize(benchmark::State& state) {
    world& w = the_world();
    std::string const bytes = world::read_whole(w.entry_path);
    std::string_view const payload(bytes.data() + w.payload_offset, w.payload_size);
    auto ctx = cc::resolver_context::of(w.cache.resolver(), static_cast<void const*>(nullptr));
    for (auto _ : state) {
        std::optional<artifact> a(std::in_place);
        cc::boost_binary::load(payload, *a, ctx);
        benchmark::DoNotOptimize(a->types.back().get());
    }
}

/// A miss and its store, as get_or_compile makes them: a new key each time (so each
/// lookup is an absent miss), for 64 kernels in turn, with or without the kernels'
/// identity records. The compile is a copy of the artifact, so the figure is the cache's
/// own cost: with records, the miss reads the kernel's record (to explain itself) and
/// the store writes it again; without, neither.
void miss_store_loop(benchmark::State& state, bool record) {
    world& w = the_world();
    std::optional<artifact> const a = w.cache.load<artifact>(w.k, w.info);
    if (!a) {
        state.SkipWithError("not a hit");
        return;
    }
    bench::scratch_dir dir(record ? "store-record" : "store-plain");
    cc::cache_options o;
    o.record_identities = record;
    cc::default_cache cache(cc::directory_storage(dir.path()), o);
    w.register_with(cache); // references must resolve in this cache too
    std::vector<cc::entry_info> infos;
    for (int i = 0; i < 64; ++i) infos.push_back({"kernel" + std::to_string(i), w.info.origin_file, w.info.origin_line});
    std::uint64_t n = 0;
    for (auto _ : state) {
        cc::key_result const k = cache.make_key_builder().add("ir", n).add("options", "-O1").finish();
        cc::cached<artifact> r = cache.get_or_compile<artifact>(k, infos[n++ % infos.size()], [&] { return *a; });
        benchmark::DoNotOptimize(r.value.types.back().get());
    }
    if (cache.stats().stores != n) state.SkipWithError("a store failed");
}
void BM_miss_store_without_record(benchmark::State& state) { miss_store_loop(state, false); }
void BM_miss_store_with_record(benchmark::State& state) { miss_store_loop(state, true); }

/// The same two, interleaved miss by miss in one loop (two caches, two directories), so
/// that both sides see the same load: each iteration is a miss and store without records
/// then one with, each timed alone. Counters: the medians of each side (µs, wall time of
/// the one operation: a preempted one falls out of the median) and their ratio,
/// `ratio`; `mean_ratio`, the ratio of the means, which keeps what one store in many pays
/// for all (the held records' batch write) and what preemption adds.
void BM_miss_store_records_interleaved(benchmark::State& state) {
    world& w = the_world();
    std::optional<artifact> const a = w.cache.load<artifact>(w.k, w.info);
    if (!a) {
        state.SkipWithError("not a hit");
        return;
    }
    bench::scratch_dir plain_dir("store-plain-i"), record_dir("store-record-i");
    cc::cache_options off, on;
    off.record_identities = false;
    on.record_identities = true;
    cc::default_cache plain(cc::directory_storage(plain_dir.path()), off);
    cc::default_cache record(cc::directory_storage(record_dir.path()), on);
    w.register_with(plain);
    w.register_with(record);
    // range(0): the kernels the misses cycle through (64: each is held and missed again);
    // 0: a new kernel at every miss, as a cold run stores each once (its record is then
    // read, merged and written with the batch, once per kernel: in the mean, not the median).
    std::size_t const kernels = static_cast<std::size_t>(state.range(0));
    std::vector<cc::entry_info> infos;
    for (std::size_t i = 0; i < (kernels == 0 ? 1 : kernels); ++i)
        infos.push_back({"kernel" + std::to_string(i), w.info.origin_file, w.info.origin_line});
    std::vector<double> plain_us, record_us;
    std::uint64_t n = 0;
    auto one = [&](cc::default_cache& cache, std::vector<double>& times) {
        cc::key_result const k = cache.make_key_builder().add("ir", n).add("options", "-O1").finish();
        if (kernels == 0) infos[0].name = "kernel" + std::to_string(n);
        auto const start = std::chrono::steady_clock::now();
        cc::cached<artifact> r = cache.get_or_compile<artifact>(k, infos[kernels == 0 ? 0 : n % infos.size()], [&] { return *a; });
        benchmark::DoNotOptimize(r.value.types.back().get());
        times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    };
    for (auto _ : state) {
        one(plain, plain_us);
        one(record, record_us);
        ++n;
    }
    if (plain.stats().stores != n || record.stats().stores != n) state.SkipWithError("a store failed");
    auto median = [](std::vector<double>& v) {
        if (v.empty()) return 0.0;
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        return v[v.size() / 2];
    };
    auto mean = [](std::vector<double> const& v) {
        double sum = 0;
        for (double x : v) sum += x;
        return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
    };
    double const pm = mean(plain_us), rm = mean(record_us); // (before the medians reorder them)
    double const p = median(plain_us), r = median(record_us);
    state.counters["plain_us"] = p;
    state.counters["record_us"] = r;
    state.counters["ratio"] = p > 0 ? r / p : 0;
    state.counters["mean_ratio"] = pm > 0 ? rm / pm : 0;
}

/// A hit through get_or_compile, verify mode off (0) or on for every hit (1).
void hit_get_or_compile(benchmark::State& state, double verify) {
    world& w = the_world();
    std::optional<artifact> const stored = w.cache.load<artifact>(w.k, w.info);
    if (!stored) {
        state.SkipWithError("not a hit");
        return;
    }
    cc::cache_options o;
    o.verify_fraction = verify;
    cc::default_cache cache(cc::directory_storage(w.dir.path()), o);
    w.register_with(cache);
    for (auto _ : state) {
        cc::cached<artifact> r = cache.get_or_compile<artifact>(w.k, w.info, [&] { return *stored; });
        if (r.outcome != cc::outcome::loaded) {
            state.SkipWithError("not a hit");
            break;
        }
        benchmark::DoNotOptimize(r.value.types.back().get());
    }
    state.SetLabel("verified " + std::to_string(cache.stats().verified));
}
void BM_hit_verify_off(benchmark::State& state) { hit_get_or_compile(state, 0); }
void BM_hit_verify_every(benchmark::State& state) { hit_get_or_compile(state, 1); }

// ---- sized hits (issue 27, part 1) ----

struct sized_artifact {
    std::string name;
    std::vector<std::uint8_t> code;

    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & name & code;
    }
};

/// One entry of an artifact of about `size` bytes, stored by the cache, and the same
/// bytes in a file named as LLVM's cache names its entries.
struct sized_world {
    bench::scratch_dir dir{"sized"};
    cc::key_result k;
    cc::entry_info info{"big_kernel", "kernels.dsl", 7};
    std::string entry_path, llvm_dir;
    std::size_t entry_size = 0, payload_offset = 0, payload_size = 0;

    explicit sized_world(std::size_t size) {
        sized_artifact a;
        a.name = info.name;
        a.code.resize(size);
        for (std::size_t i = 0; i < size; ++i) a.code[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
        k = cc::key_builder<>().add("sized", size).finish();
        cc::default_cache c{cc::directory_storage(dir.path() + "/cc")};
        if (!c.store(k, a, info)) {
            std::fprintf(stderr, "bench_hit: sized store failed\n");
            std::exit(2);
        }
        entry_path = c.storage().entry_path(k.value());
        std::string bytes(size + (1 << 16), '\0');
        int fd = ::open(entry_path.c_str(), O_RDONLY | O_CLOEXEC);
        ssize_t const n = fd < 0 ? -1 : ::read(fd, bytes.data(), bytes.size());
        if (fd >= 0) ::close(fd);
        if (n <= 0) std::exit(2);
        bytes.resize(static_cast<std::size_t>(n));
        entry_size = bytes.size();
        cc::opened_envelope e = cc::open_envelope(bytes, k.value(), cc::boost_binary::format_id(), std::size_t{64} << 20);
        if (e.status != cc::envelope_status::ok) std::exit(2);
        payload_offset = static_cast<std::size_t>(e.payload.data() - bytes.data());
        payload_size = e.payload.size();
        llvm_dir = dir.path() + "/llvm";
        ::mkdir(llvm_dir.c_str(), 0700);
        int out = ::open((llvm_dir + "/llvmcache-" + k.value().hex()).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (out < 0 || ::write(out, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) std::exit(2);
        ::close(out);
        ::sync();
    }
};

sized_world& sized(std::size_t size) {
    static std::map<std::size_t, std::unique_ptr<sized_world>> worlds;
    auto& w = worlds[size];
    if (!w) w = std::make_unique<sized_world>(size);
    return *w;
}

void sized_label(benchmark::State& state, sized_world const& w) {
    state.SetLabel("entry " + std::to_string(w.entry_size) + " B");
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * w.entry_size));
}

/// The cache's load with entries of at least `map_min_size` bytes mapped (0: none, as
/// before; 1: all).
void sized_cache(benchmark::State& state, std::size_t map_min_size) {
    sized_world& w = sized(static_cast<std::size_t>(state.range(0)));
    cc::directory_options o;
    o.map_min_size = map_min_size;
    cc::default_cache cache{cc::directory_storage(w.dir.path() + "/cc", o)};
    for (auto _ : state) {
        std::optional<sized_artifact> a = cache.load<sized_artifact>(w.k, w.info);
        if (!a) {
            state.SkipWithError("not a hit");
            break;
        }
        benchmark::DoNotOptimize(a->code.data());
    }
    sized_label(state, w);
}
void BM_sized_cache(benchmark::State& state) { sized_cache(state, cc::directory_options{}.map_min_size); }
void BM_sized_cache_read(benchmark::State& state) { sized_cache(state, 0); }
void BM_sized_cache_map_all(benchmark::State& state) { sized_cache(state, 1); }

/// open/read/close into a buffer large enough, then the same deserialization.
void BM_sized_floor(benchmark::State& state) {
    sized_world& w = sized(static_cast<std::size_t>(state.range(0)));
    std::vector<char> buffer(w.entry_size + 4096);
    for (auto _ : state) {
        int fd = ::open(w.entry_path.c_str(), O_RDONLY | O_CLOEXEC);
        ssize_t const n = ::read(fd, buffer.data(), buffer.size());
        ::close(fd);
        if (n != static_cast<ssize_t>(w.entry_size)) {
            state.SkipWithError("short read");
            break;
        }
        sized_artifact a;
        cc::boost_binary::load(std::string_view(buffer.data() + w.payload_offset, w.payload_size), a,
                               cc::resolver_context{});
        benchmark::DoNotOptimize(a.code.data());
    }
    sized_label(state, w);
}

#if COMPILE_CACHE_BENCH_LLVM
/// llvm::localCache's hit, its MemoryBuffer deserialized the same way.
void BM_sized_llvm(benchmark::State& state) {
    sized_world& w = sized(static_cast<std::size_t>(state.range(0)));
    std::uint64_t loaded = 0;
    auto cache = llvm::localCache("bench", "bench-tmp", w.llvm_dir,
                                  [&](unsigned, std::unique_ptr<llvm::MemoryBuffer> mb) {
                                      sized_artifact a;
                                      cc::boost_binary::load(
                                          std::string_view(mb->getBufferStart() + w.payload_offset, w.payload_size), a,
                                          cc::resolver_context{});
                                      loaded += a.code.size();
                                  });
    if (!cache) {
        llvm::consumeError(cache.takeError());
        state.SkipWithError("llvm::localCache");
        return;
    }
    std::string const hex = w.k.value().hex();
    for (auto _ : state) {
        llvm::Expected<llvm::AddStreamFn> r = (*cache)(0, hex);
        if (!r || *r) {
            if (!r) llvm::consumeError(r.takeError());
            state.SkipWithError("llvm: not a hit");
            break;
        }
    }
    benchmark::DoNotOptimize(loaded);
    sized_label(state, w);
}
#endif

void sized_sizes(benchmark::internal::Benchmark* b) {
    for (long s : {4096L, 65536L, 1L << 20, 16L << 20}) b->Arg(s);
}
BENCHMARK(BM_sized_floor)->Apply(sized_sizes);
BENCHMARK(BM_sized_cache)->Apply(sized_sizes);
BENCHMARK(BM_sized_cache_read)->Apply(sized_sizes);
BENCHMARK(BM_sized_cache_map_all)->Apply(sized_sizes);
#if COMPILE_CACHE_BENCH_LLVM
BENCHMARK(BM_sized_llvm)->Apply(sized_sizes);
#endif

BENCHMARK(BM_hit_load);
BENCHMARK(BM_miss_store_without_record);
BENCHMARK(BM_miss_store_with_record);
BENCHMARK(BM_miss_store_records_interleaved)->Arg(64)->Arg(0);
BENCHMARK(BM_hit_verify_off);
BENCHMARK(BM_hit_verify_every);
BENCHMARK(BM_hit_floor);
BENCHMARK(BM_part_read_floor);
BENCHMARK(BM_part_storage_read);
BENCHMARK(BM_part_open_envelope);
BENCHMARK(BM_part_deserialize);

} // namespace

int main(int argc, char** argv) {
    // --strace-hit=N / --strace-store=N: do N hits (or stores) and nothing else, for
    // `strace -c -f` in scripts/bench.sh; no benchmark runs.
    for (int i = 1; i < argc; ++i) {
        std::string const a = argv[i];
        bool const hit = a.rfind("--strace-hit=", 0) == 0, store = a.rfind("--strace-store=", 0) == 0;
        if (!hit && !store) continue;
        long const n = std::stol(a.substr(a.find('=') + 1));
        world& w = the_world();
        artifact a0 = *w.cache.load<artifact>(w.k, w.info);
        // A warm cache: every fan-out folder exists (the first store into one creates it).
        for (long j = 0; j < 2048; ++j) w.cache.store(cc::key_builder<>().add("warm", j).finish(), a0, w.info);
        std::fprintf(stderr, "strace marker: start\n"); // the calls before this are set-up
        for (long j = 0; j < n; ++j) {
            if (hit) {
                if (!w.cache.load<artifact>(w.k, w.info)) return 1;
            } else {
                cc::key_result const kj = cc::key_builder<>().add("store", j).finish();
                if (!w.cache.store(kj, a0, w.info)) return 1;
            }
        }
        std::fprintf(stderr, "strace marker: end\n");
        std::_Exit(0); // no clean-up of the scratch directory inside the count
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
