// Measures directory_storage stores, for docs/reliability.md (run by
// scripts/reliability.sh; the test suite asserts no timings).
//
//   storage_bench scale DIR N
//       stores N small entries (16..63 bytes) into an empty DIR and prints the
//       median and mean time of a store over the first 1,000 and the last 1,000.
//   storage_bench durability DIR COUNT SIZE
//       COUNT stores of SIZE bytes under each durability setting; median, mean, p99.
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace cc = compile_cache;

cc::key key_n(std::uint32_t n) {
    unsigned char b[32];
    std::uint64_t x = 0x9e3779b97f4a7c15ull * (n + 1);
    for (unsigned char& c : b) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c = static_cast<unsigned char>(x);
    }
    return cc::key(b, sizeof b);
}

struct figures {
    double median_us, mean_us, p99_us;
};

figures summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    return {v[v.size() / 2], sum / static_cast<double>(v.size()), v[v.size() * 99 / 100]};
}

double time_store(cc::directory_storage& s, cc::key const& k, std::string const& bytes) {
    auto const t = std::chrono::steady_clock::now();
    if (std::error_code ec = s.write(k, bytes)) {
        std::fprintf(stderr, "storage_bench: store failed: %s\n", ec.message().c_str());
        std::exit(1);
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

int scale(std::string const& dir, std::uint32_t n) {
    cc::directory_storage s(dir);
    std::vector<double> first, last;
    for (std::uint32_t i = 0; i < n; ++i) {
        std::string const value(16 + i % 48, static_cast<char>('a' + i % 26));
        double const us = time_store(s, key_n(i), value);
        if (i < 1000) first.push_back(us);
        if (i + 1000 >= n) last.push_back(us);
    }
    figures const a = summarize(first), b = summarize(last);
    std::printf("store at 1k entries: median %.1f us, mean %.1f us; at %u entries: median %.1f us, mean %.1f us\n",
                a.median_us, a.mean_us, n, b.median_us, b.mean_us);
    return 0;
}

int durability(std::string const& dir, std::uint32_t count, std::size_t size) {
    std::string const value(size, 'd');
    for (auto sync : {cc::durability::none, cc::durability::file, cc::durability::full}) {
        cc::directory_options o;
        o.sync = sync;
        std::string const root = dir + "/" + cc::to_string(sync);
        cc::directory_storage s(root, o);
        std::vector<double> times;
        for (std::uint32_t i = 0; i < count; ++i) times.push_back(time_store(s, key_n(i), value));
        figures const f = summarize(times);
        std::printf("durability %-4s: %u stores of %zu bytes: median %.1f us, mean %.1f us, p99 %.1f us\n",
                    cc::to_string(sync), count, size, f.median_us, f.mean_us, f.p99_us);
        std::error_code ec;
        std::filesystem::remove_all(root, ec);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    std::string const mode = argc > 1 ? argv[1] : "";
    if (mode == "scale" && argc == 4) return scale(argv[2], static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)));
    if (mode == "durability" && argc == 5)
        return durability(argv[2], static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)),
                          std::strtoul(argv[4], nullptr, 10));
    std::fprintf(stderr, "usage: storage_bench scale DIR N | durability DIR COUNT SIZE\n");
    return 2;
}
