// directory_storage's size limit under load, against its own floor, in one run
// (issue 27, part 2): what a store costs when the limit is hit continuously next to
// a store with no limit, and what prune() costs next to a bare walk-and-unlink of
// the same files. Not a Google Benchmark: latency percentiles and a one-shot prune
// are what is measured, so this program has its own main.
//
//   bench_eviction store [ENTRIES [STORES]]   (default 20000 entries, 20000 stores)
//     Two directories are filled alike with ENTRIES entries of 1 KiB. Then STORES
//     new keys are stored, alternately in one (no limit) and the other (a limit
//     equal to what it held at the start, so that every store finds it at the limit),
//     so that the machine's load falls on both alike. Prints p50, p99, max of each
//     and the ratios.
//   bench_eviction prune [ENTRIES]            (default 100000)
//     Two directories are filled alike with ENTRIES entries of 1 KiB, entry i last
//     used at t0 + i. In one, the floor: every fan-out folder listed and the oldest
//     10% unlinked by name (the names are known in advance: nothing is stat-ed). In
//     the other, directory_storage::prune() with a limit that makes it evict those
//     same 10%. Prints both times, wall and CPU (prune() surveys in two threads), and
//     their ratios. The floor runs first, then prune() (in a directory filled alike, so
//     that both find the same page cache state); each starts after a sync(), so that
//     neither pays for the writeback of what came before.
//
// The directories are under $COMPILE_CACHE_BENCH_DIR, else $TMPDIR, else /tmp.
#include "bench_common.hpp"

#include <compile_cache/storage/directory/directory_storage.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
using clock_type = std::chrono::steady_clock;

cc::key key_of(std::uint32_t n) {
    auto const d = cc::sha256_digest(&n, sizeof n);
    return cc::key(d);
}

double us_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

void set_mtime(std::string const& path, std::int64_t seconds) {
    struct timespec times[2];
    times[0].tv_sec = static_cast<time_t>(seconds);
    times[0].tv_nsec = 0;
    times[1] = times[0];
    ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

/// Fills `s` with entries 0..n-1 of 1 KiB, entry i last used at t0 + i.
void fill(cc::directory_storage& s, std::uint32_t n, std::int64_t t0) {
    std::string const payload = bench::random_string(1024, 7);
    for (std::uint32_t i = 0; i < n; ++i) {
        if (std::error_code const ec = s.write(key_of(i), payload)) {
            std::fprintf(stderr, "fill: store %u: %s\n", i, ec.message().c_str());
            std::exit(2);
        }
        set_mtime(s.entry_path(key_of(i)), t0 + i);
    }
}

struct percentiles {
    double p50, p99, p999, max, mean;
};
percentiles of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    return {v[v.size() / 2], v[v.size() * 99 / 100], v[v.size() * 999 / 1000], v.back(), sum / static_cast<double>(v.size())};
}

int run_store(std::uint32_t entries, std::uint32_t stores) {
    bench::scratch_dir free_dir("evict-nolimit"), limited_dir("evict-limit");
    std::int64_t const t0 = static_cast<std::int64_t>(::time(nullptr)) - 10000000;
    cc::directory_options unlimited;
    unlimited.max_size = 0;
    cc::directory_storage free_storage(free_dir.path() + "/c", unlimited);
    fill(free_storage, entries, t0);
    {
        cc::directory_storage filler(limited_dir.path() + "/c", unlimited);
        fill(filler, entries, t0);
    }
    cc::directory_options limit;
    limit.max_size = std::uint64_t{entries} * 4096;
    cc::directory_storage limited_storage(limited_dir.path() + "/c", limit);
    std::string const payload = bench::random_string(1024, 8);
    std::vector<double> free_us, limited_us;
    free_us.reserve(stores);
    limited_us.reserve(stores);
    for (std::uint32_t i = 0; i < stores; ++i) {
        cc::key const k = key_of(entries + i);
        auto t = clock_type::now();
        if (free_storage.write(k, payload)) return 2;
        free_us.push_back(us_since(t));
        t = clock_type::now();
        if (limited_storage.write(k, payload)) return 2;
        limited_us.push_back(us_since(t));
    }
    percentiles const f = of(free_us), l = of(limited_us);
    auto const c = limited_storage.counters();
    std::printf("store of 1 KiB into %u entries, %u stores each (us):\n", entries, stores);
    std::printf("  %-22s p50 %8.1f  p99 %8.1f  p99.9 %8.1f  max %9.1f  mean %8.1f\n", "no limit", f.p50, f.p99,
                f.p999, f.max, f.mean);
    std::printf("  %-22s p50 %8.1f  p99 %8.1f  p99.9 %8.1f  max %9.1f  mean %8.1f\n", "limit hit continuously",
                l.p50, l.p99, l.p999, l.max, l.mean);
    std::printf("  ratio                  p50 %8.2f  p99 %8.2f  p99.9 %8.2f  max %9.2f  mean %8.2f\n", l.p50 / f.p50,
                l.p99 / f.p99, l.p999 / f.p999, l.max / f.max, l.mean / f.mean);
    std::printf("  limited: %llu evicted in %llu cleanup steps; accounted %llu of a %llu limit\n",
                static_cast<unsigned long long>(c.evicted), static_cast<unsigned long long>(c.cleanup_steps),
                static_cast<unsigned long long>(limited_storage.accounted_size()),
                static_cast<unsigned long long>(limit.max_size));
    return 0;
}

/// The CPU time this process has used, every thread's (user and system), in microseconds.
double cpu_us() {
    struct rusage u {};
    ::getrusage(RUSAGE_SELF, &u);
    return (static_cast<double>(u.ru_utime.tv_sec) + static_cast<double>(u.ru_stime.tv_sec)) * 1e6 +
           static_cast<double>(u.ru_utime.tv_usec) + static_cast<double>(u.ru_stime.tv_usec);
}

/// The floor: each fan-out folder listed, the names in `doomed` unlinked.
double walk_and_unlink(std::string const& root, std::unordered_set<std::string> const& doomed, std::uint64_t& n) {
    auto const t = clock_type::now();
    for (unsigned f = 0; f < 256; ++f) {
        std::string const folder = root + "/" + cc::detail::directory_storage_impl::folder_name(f);
        int const fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) continue;
        DIR* const d = ::fdopendir(fd);
        while (dirent* e = ::readdir(d))
            if (doomed.count(e->d_name) != 0 && ::unlinkat(fd, e->d_name, 0) == 0) ++n;
        ::closedir(d);
    }
    return us_since(t);
}

int run_prune(std::uint32_t entries) {
    bench::scratch_dir floor_dir("prune-floor"), prune_dir("prune-lib");
    std::int64_t const t0 = static_cast<std::int64_t>(::time(nullptr)) - 10000000;
    cc::directory_options unlimited;
    unlimited.max_size = 0;
    {
        cc::directory_storage a(floor_dir.path() + "/c", unlimited), b(prune_dir.path() + "/c", unlimited);
        fill(a, entries, t0);
        fill(b, entries, t0);
    }
    // prune() evicts down to 90% of the limit, oldest first: a limit one entry under
    // what the cache holds makes it evict the oldest 10% (and one).
    std::uint64_t const max_size = std::uint64_t{entries - 1} * 4096;
    std::uint32_t const evict = entries - static_cast<std::uint32_t>((max_size - max_size / 10) / 4096);
    std::unordered_set<std::string> doomed;
    for (std::uint32_t i = 0; i < evict; ++i) doomed.insert(key_of(i).hex());
    std::uint64_t floor_removed = 0;
    ::sync(); // the fills' writeback done before either side is timed, not charged to the first
    double const floor_cpu = cpu_us();
    double const floor_us = walk_and_unlink(floor_dir.path() + "/c", doomed, floor_removed);
    double const floor_cpu_us = cpu_us() - floor_cpu;
    cc::directory_options limit;
    limit.max_size = max_size;
    cc::directory_storage s(prune_dir.path() + "/c", limit);
    ::sync(); // (the floor's unlinks written back before prune() starts)
    double const prune_cpu = cpu_us();
    auto const t = clock_type::now();
    cc::cleanup_result const r = s.prune();
    double const prune_us = us_since(t);
    double const prune_cpu_us = cpu_us() - prune_cpu;
    std::printf("prune of %u entries, evicting 10%%:\n", entries);
    std::printf("  %-28s %10.0f ms  CPU %6.0f ms  (%llu unlinked)\n", "walk-and-unlink (floor)", floor_us / 1000,
                floor_cpu_us / 1000, static_cast<unsigned long long>(floor_removed));
    std::printf("  %-28s %10.0f ms  CPU %6.0f ms  (%llu evicted, %llu left)\n", "directory_storage::prune()",
                prune_us / 1000, prune_cpu_us / 1000, static_cast<unsigned long long>(r.removed),
                static_cast<unsigned long long>(r.entries));
    // prune() surveys in two threads: its wall time is what a user waits, its CPU time
    // (both threads') the work.
    std::printf("  ratio %.2f (wall), %.2f (CPU)\n", prune_us / floor_us, prune_cpu_us / floor_cpu_us);
    return r.error ? 2 : 0;
}

} // namespace

int main(int argc, char** argv) {
    std::string const mode = argc > 1 ? argv[1] : "";
    auto number = [&](int i, std::uint32_t fallback) {
        return argc > i ? static_cast<std::uint32_t>(std::strtoul(argv[i], nullptr, 10)) : fallback;
    };
    if (mode == "store") return run_store(number(2, 20000), number(3, 20000));
    if (mode == "prune") return run_prune(number(2, 100000));
    std::fprintf(stderr, "usage: bench_eviction store [ENTRIES [STORES]] | prune [ENTRIES]\n");
    return 2;
}
