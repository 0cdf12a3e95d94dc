// Compressed entries (compile_cache/compression/zstd.hpp), side by side in one run:
//   - a whole hit through basic_cache over a directory at 4 KiB, 64 KiB and 1 MiB, its
//     entry plain (no Compression policy) and compressed (zstd_compression, level 3),
//     and the codec alone (compress at levels 1, 3 and 19; decompress); the payload is
//     real machine code, from the middle of libLLVM-14.so's .text (this program's when
//     that is absent), as compiled kernels are;
//   - with `--entries DIR [--train DIR]`, no timing loop but a table: the kernel entries
//     a host left in DIR (tinyk's chain40, say), their bytes on disk (apparent and
//     allocated) and on the wire (the entry is the value sent) plain and compressed,
//     and whether a zstd dictionary is worth it: one trained on DIR itself (the best it
//     can do, and the trial the issue quotes) and one trained on another program's
//     entries (--train: what a fleet that ships a dictionary would see on new kernels).
//     Times there are per kernel, each the median of 21 calls (3 at level 19).
// docs/benchmarks.md ("Compressed entries") has the commands and the figures.
#include "bench_common.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/compression/zstd.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/identity_record.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <boost/serialization/string.hpp>

#include <benchmark/benchmark.h>

#include <zdict.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <elf.h>
#include <sys/stat.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;

using plain_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage>;
using zstd_cache =
    cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage, cc::zstd_compression>;

/// Where the .text section of the ELF file `in` starts, and its size; 0, 0 when it has none.
std::pair<std::uint64_t, std::uint64_t> text_section(std::ifstream& in) {
    Elf64_Ehdr eh{};
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64)
        return {0, 0};
    std::vector<Elf64_Shdr> sections(eh.e_shnum);
    in.seekg(static_cast<std::streamoff>(eh.e_shoff));
    if (!in.read(reinterpret_cast<char*>(sections.data()), static_cast<std::streamsize>(sections.size() * sizeof(Elf64_Shdr))) ||
        eh.e_shstrndx >= sections.size())
        return {0, 0};
    Elf64_Shdr const& names = sections[eh.e_shstrndx];
    std::string table(names.sh_size, '\0');
    in.seekg(static_cast<std::streamoff>(names.sh_offset));
    in.read(table.data(), static_cast<std::streamsize>(table.size()));
    for (Elf64_Shdr const& sh : sections)
        if (sh.sh_name < table.size() && std::strcmp(table.c_str() + sh.sh_name, ".text") == 0)
            return {sh.sh_offset, sh.sh_size};
    return {0, 0};
}

/// `size` bytes of real machine code: from the middle of libLLVM-14.so's .text (of this
/// program's when that is absent or too small).
std::string machine_code(std::size_t size) {
    for (char const* path : {"/usr/lib/llvm-14/lib/libLLVM-14.so.1", "/proc/self/exe"}) {
        std::ifstream in(path, std::ios::binary);
        if (!in) continue;
        auto const [offset, length] = text_section(in);
        if (length < size) continue;
        in.clear();
        in.seekg(static_cast<std::streamoff>(offset + (length - size) / 2));
        std::string s(size, '\0');
        in.read(s.data(), static_cast<std::streamsize>(size));
        if (static_cast<std::size_t>(in.gcount()) == size) return s;
    }
    std::fprintf(stderr, "bench_compression: no machine code to read\n");
    std::exit(2);
}

cc::key_result key_of(std::size_t size) { return cc::key_builder<cc::sha256>().add("bench-size", size).finish(); }

template <class Cache>
void hit(benchmark::State& state) {
    auto const size = static_cast<std::size_t>(state.range(0));
    bench::scratch_dir dir("compression");
    std::string const payload = machine_code(size);
    Cache cache{cc::directory_storage(dir.path())};
    cc::key_result const k = key_of(size);
    if (!cache.store(k, payload)) state.SkipWithError("store failed");
    for (auto _ : state) {
        std::optional<std::string> got = cache.template load<std::string>(k);
        if (!got || got->size() != size) state.SkipWithError("not a hit");
        benchmark::DoNotOptimize(got);
    }
    state.counters["entry_bytes"] = static_cast<double>(cache.stats().bytes_read / cache.stats().hits);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}
void BM_hit_plain(benchmark::State& state) { hit<plain_cache>(state); }
void BM_hit_zstd(benchmark::State& state) { hit<zstd_cache>(state); }

void BM_compress(benchmark::State& state) {
    std::string const payload = machine_code(static_cast<std::size_t>(state.range(0)));
    auto const level = static_cast<int>(state.range(1));
    std::string out;
    for (auto _ : state) {
        out.clear();
        if (!cc::zstd_compression::compress(payload, level, out)) state.SkipWithError("compress failed");
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["ratio"] = static_cast<double>(payload.size()) / static_cast<double>(out.size());
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * payload.size()));
}

void BM_decompress(benchmark::State& state) {
    std::string const payload = machine_code(static_cast<std::size_t>(state.range(0)));
    std::string frame;
    cc::zstd_compression::compress(payload, 3, frame);
    std::string out(payload.size(), '\0');
    for (auto _ : state) {
        if (!cc::zstd_compression::decompress(frame, out.data(), out.size())) state.SkipWithError("decompress failed");
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * payload.size()));
}

void sizes(benchmark::internal::Benchmark* b) {
    for (long n : {4L << 10, 64L << 10, 1L << 20}) b->Arg(n);
}
void sizes_and_levels(benchmark::internal::Benchmark* b) {
    for (long n : {4L << 10, 64L << 10, 1L << 20})
        for (long level : {1L, 3L, 19L}) b->Args({n, level});
}

BENCHMARK(BM_hit_plain)->Apply(sizes);
BENCHMARK(BM_hit_zstd)->Apply(sizes);
BENCHMARK(BM_compress)->Apply(sizes_and_levels);
BENCHMARK(BM_decompress)->Apply(sizes);

// --- --entries: bytes per kernel, and the dictionary question ------------------------

struct kernel_entry {
    std::string bytes;   ///< the whole entry as stored
    std::string payload; ///< its serializer's bytes
};

/// The kernel entries (not identity records) under `dir`, plain (a compressed one is
/// skipped: the host that made them should run without compression).
std::vector<kernel_entry> kernel_entries(fs::path const& dir) {
    std::vector<kernel_entry> out;
    for (auto const& f : fs::recursive_directory_iterator(dir)) {
        std::string const name = f.path().filename().string();
        if (!f.is_regular_file() || name.size() < 64 || name.find_first_not_of("0123456789abcdef") != std::string::npos)
            continue;
        std::ifstream in(f.path(), std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        cc::opened_envelope const e = cc::inspect_envelope(bytes);
        if (e.status != cc::envelope_status::ok || e.compressed || e.metadata.format_id == cc::identity_record_format)
            continue;
        out.push_back({bytes, std::string(e.payload)});
    }
    return out;
}

struct sizes_total {
    std::size_t entry = 0;     ///< apparent bytes (and on the wire)
    std::size_t allocated = 0; ///< st_blocks * 512, as written by directory_storage
    double compress_us = 0, decompress_us = 0;
};

/// Writes each entry (its payload replaced by `transform`'s result) through a
/// directory_storage in a scratch directory on the benchmark disk, and sums.
template <class Transform>
sizes_total measure(std::vector<kernel_entry> const& entries, Transform&& transform) {
    bench::scratch_dir dir("compression-entries");
    cc::directory_storage storage(dir.path());
    sizes_total t;
    std::size_t i = 0;
    for (kernel_entry const& e : entries) {
        std::string const entry = transform(e, t);
        cc::key const k = cc::key_builder<cc::sha256>().add("entry", i++).finish().value();
        if (storage.write(k, entry)) std::exit(3);
        t.entry += entry.size();
    }
    for (auto const& f : fs::recursive_directory_iterator(dir.path())) {
        std::string const name = f.path().filename().string();
        struct stat st {};
        if (f.is_regular_file() && name.size() == 64 && ::stat(f.path().c_str(), &st) == 0)
            t.allocated += static_cast<std::size_t>(st.st_blocks) * 512;
    }
    return t;
}

double us_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

/// The median of `reps` timings of `f`, in microseconds (the machine is shared: the
/// median keeps one preempted call from standing for all).
template <class F>
double median_us(int reps, F&& f) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        auto const start = std::chrono::steady_clock::now();
        f();
        t.push_back(us_since(start));
    }
    std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
    return t[static_cast<std::size_t>(reps / 2)];
}

/// The entry with its payload compressed (with `dict` when not null), timed, and the
/// decompression checked and timed (each the median of 21 runs).
std::string compressed_entry(kernel_entry const& e, int level, ZSTD_CDict const* cdict, ZSTD_DDict const* ddict,
                             sizes_total& t) {
    static ZSTD_CCtx* const c = ZSTD_createCCtx();
    static ZSTD_DCtx* const d = ZSTD_createDCtx();
    std::string frame(ZSTD_compressBound(e.payload.size()), '\0');
    std::size_t n = 0;
    int const reps = level >= 19 ? 3 : 21;
    t.compress_us += median_us(reps, [&] {
        n = cdict ? ZSTD_compress_usingCDict(c, frame.data(), frame.size(), e.payload.data(), e.payload.size(), cdict)
                  : ZSTD_compressCCtx(c, frame.data(), frame.size(), e.payload.data(), e.payload.size(), level);
    });
    if (ZSTD_isError(n)) std::exit(4);
    frame.resize(n);
    std::string back(e.payload.size(), '\0');
    std::size_t m = 0;
    t.decompress_us += median_us(21, [&] {
        m = ddict ? ZSTD_decompress_usingDDict(d, back.data(), back.size(), frame.data(), n, ddict)
                  : ZSTD_decompressDCtx(d, back.data(), back.size(), frame.data(), n);
    });
    if (ZSTD_isError(m) || back != e.payload) std::exit(5);
    // The entry as zstd_cache writes it: header, the declared size and the frame, check value.
    std::size_t const payload_at = e.bytes.size() - 4 - e.payload.size();
    return e.bytes.substr(0, payload_at) + std::string(8, 'n') + frame + std::string(4, 'c');
}

std::string train(std::vector<kernel_entry> const& from, std::size_t capacity) {
    std::string samples;
    std::vector<std::size_t> sizes;
    for (kernel_entry const& e : from) {
        samples += e.payload;
        sizes.push_back(e.payload.size());
    }
    std::string dict(capacity, '\0');
    std::size_t const n = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), sizes.data(),
                                                static_cast<unsigned>(sizes.size()));
    if (ZDICT_isError(n)) {
        std::printf("  dictionary of %zu bytes from %zu entries: cannot train (%s)\n", capacity, from.size(),
                    ZDICT_getErrorName(n));
        return {};
    }
    dict.resize(n);
    return dict;
}

void row(char const* what, sizes_total const& t, std::size_t n, sizes_total const& plain) {
    std::printf("  %-44s %8.0f B/kernel (%.2fx)  %8.0f B/kernel allocated   compress %6.2f us  decompress %6.2f us\n",
                what, double(t.entry) / double(n), double(plain.entry) / double(t.entry), double(t.allocated) / double(n),
                t.compress_us / double(n), t.decompress_us / double(n));
}

int entries_report(fs::path const& dir, std::optional<fs::path> const& train_dir) {
    std::vector<kernel_entry> const entries = kernel_entries(dir);
    if (entries.empty()) {
        std::fprintf(stderr, "bench_compression: no plain kernel entries under %s\n", dir.c_str());
        return 2;
    }
    std::size_t payload = 0;
    for (auto const& e : entries) payload += e.payload.size();
    std::size_t const n = entries.size();
    std::printf("entries: %zu kernel entries under %s, payload %.0f B/kernel on average\n", n, dir.c_str(),
                double(payload) / double(n));
    sizes_total const plain = measure(entries, [](kernel_entry const& e, sizes_total&) { return e.bytes; });
    row("plain (no compression)", plain, n, plain);
    for (int level : {1, 3, 19}) {
        sizes_total const z = measure(entries, [&](kernel_entry const& e, sizes_total& t) {
            return compressed_entry(e, level, nullptr, nullptr, t);
        });
        row(("zstd level " + std::to_string(level)).c_str(), z, n, plain);
    }
    auto with_dictionary = [&](char const* what, std::string const& dict) {
        if (dict.empty()) return;
        ZSTD_CDict* cd = ZSTD_createCDict(dict.data(), dict.size(), 3);
        ZSTD_DDict* dd = ZSTD_createDDict(dict.data(), dict.size());
        sizes_total const z =
            measure(entries, [&](kernel_entry const& e, sizes_total& t) { return compressed_entry(e, 3, cd, dd, t); });
        row((std::string(what) + " (" + std::to_string(dict.size()) + " B)").c_str(), z, n, plain);
        ZSTD_freeCDict(cd);
        ZSTD_freeDDict(dd);
    };
    with_dictionary("zstd 3 + dictionary trained on these entries", train(entries, 16 << 10));
    if (train_dir) {
        std::vector<kernel_entry> const others = kernel_entries(*train_dir);
        std::printf("  (training set for the next row: %zu kernel entries under %s)\n", others.size(),
                    train_dir->c_str());
        with_dictionary("zstd 3 + dictionary trained on another program", train(others, 16 << 10));
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    std::optional<fs::path> entries, train_dir;
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        std::string const a = argv[i];
        if (a == "--entries" && i + 1 < argc)
            entries = argv[++i];
        else if (a == "--train" && i + 1 < argc)
            train_dir = argv[++i];
        else
            rest.push_back(argv[i]);
    }
    if (entries) return entries_report(*entries, train_dir);
    int rest_count = static_cast<int>(rest.size());
    benchmark::Initialize(&rest_count, rest.data());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
