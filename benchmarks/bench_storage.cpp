// The storage path alone, bytes in and bytes out, no serialization: compile_cache's
// directory_storage with its envelope (built and sealed on store, checked on hit)
// against LLVM 14's llvm::localCache (llvm/Support/Caching.h), in one run, for
// entries of 1 KiB, 4 KiB and 64 KiB in directories holding 1,000 or 100,000 of
// them. The 100,000-entry directories are made for 1 KiB and 4 KiB only: at 64 KiB
// that would be 2 x 6.5 GB to write before measuring anything.
//
// What each side does per operation:
// - store: compile_cache builds the envelope around the payload (header, payload
//   copy, check value) and writes it with directory_storage::write (temp file,
//   rename, size ledger). LLVM asks the cache for the key (a miss: a failed open),
//   opens a temp file through the returned AddStream, writes the payload, and on
//   destruction of the stream reads the file back into a MemoryBuffer, renames it
//   and hands the buffer to AddBuffer. Each store is of a key never stored before,
//   and a store benchmark does a fixed number of them per repetition
//   (COMPILE_CACHE_BENCH_STORE_ITERATIONS, 200 by default), so that its directory
//   grows by that many times the repetitions at most. Nothing is deleted while
//   measuring: ext4 slows file creation after deletions (see bench_common.hpp).
//   LLVM's store cost grows with the number of files the *process* has created
//   (llvm::sys::RemoveFileOnSignal appends to a list it walks), so scripts/bench.sh
//   runs each size's store benchmarks in a process of their own.
// - hit: compile_cache reads the entry into a reused buffer and opens the envelope
//   (check value, header, key, format) as basic_cache::load does before
//   deserializing. LLVM opens the entry and hands AddBuffer a MemoryBuffer, which is
//   a read() copy below 16 KiB and an mmap above; "llvm_hit" touches one byte per
//   4 KiB page of it (what any consumer of the bytes pays at least: the page
//   faults of an mmap), "llvm_hit_untouched" does not look at the bytes at all.
//   Keys are visited in a shuffled order.
// - miss: a key that is not there.
// - store/compile_cache_shared: compile_cache's store into a directory in shared mode
//   (directory_options::shared()), which also opens the entry's fan-out folder without
//   following a symlink and makes the temp file through it.
//
// COMPILE_CACHE_BENCH_COUNTS=1000 (comma-separated) limits the directory sizes.
// COMPILE_CACHE_BENCH_AGE_S=N sets every populated entry's mtime N seconds back, so
// that the first hit on each is one that refreshes its use time (directory_storage
// does that for an entry last used over an hour ago): N=7200 measures hits that pay
// the futimens, the default (0) hits that do not.
#include "bench_common.hpp"

#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if COMPILE_CACHE_BENCH_LLVM
#include <llvm/Support/Caching.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#endif

namespace {

namespace cc = compile_cache;

std::string const format_id = "bench-bytes";
constexpr std::size_t max_entry = std::size_t{64} << 20;

cc::key key_of(std::size_t i, unsigned salt) {
    std::uint64_t words[2] = {i, salt};
    return cc::key(cc::sha256_digest(words, sizeof words));
}

std::string const& payload(std::size_t size) {
    static std::map<std::size_t, std::string> payloads;
    auto& p = payloads[size];
    if (p.empty()) p = bench::random_string(size, static_cast<unsigned>(size));
    return p;
}

cc::entry_metadata const& metadata() {
    static cc::entry_metadata const meta = [] {
        cc::entry_metadata m;
        m.name = "kernel";
        m.origin_file = "prog.dsl";
        m.format_id = format_id;
        m.origin_line = 12;
        m.created_ns = 1700000000000000000;
        m.compile_ns = 1000000;
        return m;
    }();
    return meta;
}

/// compile_cache's store: the envelope around the payload, then the storage.
std::error_code cc_store(cc::directory_storage& storage, cc::key const& k, std::string const& bytes,
                         std::string& entry) {
    std::size_t const length_at = cc::begin_envelope(entry, k, metadata());
    entry += bytes;
    cc::seal_envelope(entry, length_at);
    return storage.write(k, entry);
}

void write_plain_file(std::string const& path, std::string const& bytes) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
        std::perror(path.c_str());
        std::exit(2);
    }
    ::close(fd);
}

/// A directory holding `count` entries of `size` bytes for one side, made once.
struct population {
    std::unique_ptr<bench::scratch_dir> dir;
    std::vector<cc::key> keys;          ///< stored keys, in a shuffled order
    std::vector<std::string> llvm_keys; ///< the same, as LLVM cache keys (hex)
};

/// compile_cache_shared: a directory in shared mode (directory_options::shared()), whose
/// stores also open their fan-out folder without following a symlink.
enum class side { compile_cache, compile_cache_shared, llvm };

cc::directory_options options_of(side s) {
    return s == side::compile_cache_shared ? cc::directory_options::shared() : cc::directory_options();
}

population& populated(side s, std::size_t size, std::size_t count) {
    static std::map<std::tuple<side, std::size_t, std::size_t>, population> made;
    auto& p = made[{s, size, count}];
    if (p.dir) return p;
    p.dir = std::make_unique<bench::scratch_dir>(s == side::llvm ? "llvm" : "cc");
    std::string const& bytes = payload(size);
    cc::directory_storage storage(p.dir->path(), options_of(s));
    std::string entry;
    for (std::size_t i = 0; i < count; ++i) {
        cc::key const k = key_of(i, 1);
        p.keys.push_back(k);
        if (s != side::llvm) {
            if (cc_store(storage, k, bytes, entry)) {
                std::fprintf(stderr, "populating %s failed\n", p.dir->path().c_str());
                std::exit(2);
            }
        } else {
            // The file LLVM's cache would have written: "llvmcache-" + key, the bytes as they are.
            write_plain_file(p.dir->path() + "/llvmcache-" + k.hex(), bytes);
        }
    }
    if (char const* age = std::getenv("COMPILE_CACHE_BENCH_AGE_S"); age != nullptr && std::atol(age) > 0) {
        struct timespec times[2];
        times[0].tv_sec = ::time(nullptr) - static_cast<time_t>(std::atol(age));
        times[0].tv_nsec = 0;
        times[1] = times[0];
        for (auto const& k : p.keys) {
            std::string const path = s != side::llvm ? storage.entry_path(k)
                                                     : p.dir->path() + "/llvmcache-" + k.hex();
            ::utimensat(AT_FDCWD, path.c_str(), times, 0);
        }
    }
    std::shuffle(p.keys.begin(), p.keys.end(), std::mt19937(7));
    for (auto const& k : p.keys) p.llvm_keys.push_back(k.hex());
    ::sync(); // no writeback of the population while measuring
    return p;
}

std::string label(std::size_t size, std::size_t count) {
    std::ostringstream s;
    s << "size=" << size << " entries=" << count;
    return s.str();
}

// ---- compile_cache -------------------------------------------------------------

void cc_hit(benchmark::State& state, std::size_t size, std::size_t count) {
    population& p = populated(side::compile_cache, size, count);
    cc::directory_storage storage(p.dir->path());
    std::string buffer; // reused, as basic_cache::load reuses a thread_local one
    std::size_t i = 0;
    for (auto _ : state) {
        cc::key const& k = p.keys[i];
        i = i + 1 == p.keys.size() ? 0 : i + 1;
        cc::read_result r = storage.read(k, buffer, max_entry);
        cc::opened_envelope e = cc::open_envelope(buffer, k, format_id, max_entry);
        if (r.status != cc::read_status::found || e.status != cc::envelope_status::ok) {
            state.SkipWithError("compile_cache: not a hit");
            break;
        }
        benchmark::DoNotOptimize(e.payload.data());
    }
    state.SetLabel(label(size, count));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

void cc_miss(benchmark::State& state, std::size_t size, std::size_t count) {
    population& p = populated(side::compile_cache, size, count);
    cc::directory_storage storage(p.dir->path());
    std::string buffer;
    cc::key const absent = key_of(0, 99);
    for (auto _ : state) {
        cc::read_result r = storage.read(absent, buffer, max_entry);
        benchmark::DoNotOptimize(r);
    }
    state.SetLabel(label(size, count));
}

void cc_store_bench(benchmark::State& state, std::size_t size, std::size_t count, side s) {
    population& p = populated(s, size, count);
    cc::directory_storage storage(p.dir->path(), options_of(s));
    std::string const& bytes = payload(size);
    std::string entry;
    static std::size_t next = 0; // keys never stored before, across repetitions too
    for (auto _ : state) {
        cc::key const k = key_of(next++, 2);
        if (cc_store(storage, k, bytes, entry)) {
            state.SkipWithError("compile_cache: store failed");
            break;
        }
    }
    state.SetLabel(label(size, count));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

// ---- LLVM ----------------------------------------------------------------------

#if COMPILE_CACHE_BENCH_LLVM
/// What AddBuffer receives; kept until the next operation, as a consumer would keep it.
struct llvm_sink {
    std::unique_ptr<llvm::MemoryBuffer> buffer;
    bool touch = true;
    std::uint64_t sum = 0;
    std::size_t buffers = 0;
};

llvm::FileCache make_llvm_cache(std::string const& dir, llvm_sink& sink) {
    auto cache = llvm::localCache("bench", "bench-tmp", dir, [&sink](unsigned, std::unique_ptr<llvm::MemoryBuffer> mb) {
        if (sink.touch) {
            char const* p = mb->getBufferStart();
            std::size_t const n = mb->getBufferSize();
            for (std::size_t at = 0; at < n; at += 4096) sink.sum += static_cast<unsigned char>(p[at]);
        }
        sink.buffer = std::move(mb);
        ++sink.buffers;
    });
    if (!cache) {
        std::fprintf(stderr, "llvm::localCache: %s\n", llvm::toString(cache.takeError()).c_str());
        std::exit(2);
    }
    return std::move(*cache);
}

void llvm_hit(benchmark::State& state, std::size_t size, std::size_t count, bool touch) {
    population& p = populated(side::llvm, size, count);
    llvm_sink sink;
    sink.touch = touch;
    llvm::FileCache cache = make_llvm_cache(p.dir->path(), sink);
    std::size_t i = 0;
    for (auto _ : state) {
        std::string const& k = p.llvm_keys[i];
        i = i + 1 == p.llvm_keys.size() ? 0 : i + 1;
        std::size_t const before = sink.buffers;
        llvm::Expected<llvm::AddStreamFn> r = cache(0, k);
        if (!r) {
            llvm::consumeError(r.takeError());
            state.SkipWithError("llvm: error");
            break;
        }
        if (*r || sink.buffers != before + 1) {
            state.SkipWithError("llvm: not a hit");
            break;
        }
    }
    benchmark::DoNotOptimize(sink.sum);
    state.SetLabel(label(size, count));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

void llvm_miss(benchmark::State& state, std::size_t size, std::size_t count) {
    population& p = populated(side::llvm, size, count);
    llvm_sink sink;
    llvm::FileCache cache = make_llvm_cache(p.dir->path(), sink);
    std::string const absent = key_of(0, 99).hex();
    for (auto _ : state) {
        llvm::Expected<llvm::AddStreamFn> r = cache(0, absent);
        if (!r) {
            llvm::consumeError(r.takeError());
            state.SkipWithError("llvm: error");
            break;
        }
        benchmark::DoNotOptimize(*r);
    }
    state.SetLabel(label(size, count));
}

void llvm_store(benchmark::State& state, std::size_t size, std::size_t count) {
    population& p = populated(side::llvm, size, count);
    llvm_sink sink;
    llvm::FileCache cache = make_llvm_cache(p.dir->path(), sink);
    std::string const& bytes = payload(size);
    static std::size_t next = 0;
    for (auto _ : state) {
        std::string const k = key_of(next++, 3).hex();
        llvm::Expected<llvm::AddStreamFn> r = cache(0, k);
        if (!r || !*r) {
            if (!r) llvm::consumeError(r.takeError());
            state.SkipWithError("llvm: not a miss");
            break;
        }
        llvm::Expected<std::unique_ptr<llvm::CachedFileStream>> stream = (*r)(0);
        if (!stream) {
            llvm::consumeError(stream.takeError());
            state.SkipWithError("llvm: no stream");
            break;
        }
        (*stream)->OS->write(bytes.data(), bytes.size());
        stream->reset();     // commits: read back, rename, AddBuffer
        sink.buffer.reset(); // the consumer is done with it
    }
    state.SetLabel(label(size, count));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}
#endif

std::vector<std::size_t> counts() {
    std::vector<std::size_t> out;
    char const* env = std::getenv("COMPILE_CACHE_BENCH_COUNTS");
    std::string s = env != nullptr && *env != '\0' ? env : "1000,100000";
    std::istringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(static_cast<std::size_t>(std::stoull(item)));
    return out;
}

std::int64_t store_iterations() {
    char const* env = std::getenv("COMPILE_CACHE_BENCH_STORE_ITERATIONS");
    return env != nullptr && *env != '\0' ? std::stoll(env) : 200;
}

void register_all() {
    std::int64_t const stores = store_iterations();
    for (std::size_t count : counts())
        for (std::size_t size : {std::size_t{1024}, std::size_t{4096}, std::size_t{65536}}) {
            if (size == 65536 && count > 1000) continue; // see the header comment
            std::string const suffix = "/" + std::to_string(size) + "/" + std::to_string(count);
            benchmark::RegisterBenchmark(("store/compile_cache" + suffix).c_str(), cc_store_bench, size, count,
                                         side::compile_cache)
                ->Iterations(stores);
            benchmark::RegisterBenchmark(("store/compile_cache_shared" + suffix).c_str(), cc_store_bench, size, count,
                                         side::compile_cache_shared)
                ->Iterations(stores);
            benchmark::RegisterBenchmark(("hit/compile_cache" + suffix).c_str(), cc_hit, size, count);
            benchmark::RegisterBenchmark(("miss/compile_cache" + suffix).c_str(), cc_miss, size, count);
#if COMPILE_CACHE_BENCH_LLVM
            benchmark::RegisterBenchmark(("store/llvm" + suffix).c_str(), llvm_store, size, count)->Iterations(stores);
            benchmark::RegisterBenchmark(("hit/llvm" + suffix).c_str(), llvm_hit, size, count, true);
            benchmark::RegisterBenchmark(("hit/llvm_untouched" + suffix).c_str(), llvm_hit, size, count, false);
            benchmark::RegisterBenchmark(("miss/llvm" + suffix).c_str(), llvm_miss, size, count);
#endif
        }
}

} // namespace

int main(int argc, char** argv) {
#if !COMPILE_CACHE_BENCH_LLVM
    std::fprintf(stderr, "bench_storage: built without LLVM 14 (llvm-14-dev): no llvm::localCache to compare with\n");
#endif
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
