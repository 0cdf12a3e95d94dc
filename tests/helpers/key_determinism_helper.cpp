// Fresh-process helper for key_test.cpp: builds a key from a fixed set of components
// and prints its hex on stdout. Containers are filled in an order, and with a bucket
// count, drawn at random in each process, so that anything order-, address- or
// seed-dependent that reached the key would make two runs disagree.
//
// Usage: key_determinism_helper [changed]   ("changed" alters one value, so the test
// can tell a working helper from one that prints a constant)
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/toolchain.hpp>
#include <compile_cache/key/writer.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace {

enum class opt_level : std::uint8_t { o0, o1, o2, o3 };

struct kernel_options {
    opt_level level = opt_level::o2;
    bool fast_math = false;
    std::optional<std::string> target;
    std::vector<std::string> flags;
    friend void describe(compile_cache::key_writer& w, kernel_options const& o) {
        w(o.level, o.fast_math, o.target, o.flags);
    }
};

} // namespace

int main(int argc, char** argv) {
    bool const changed = argc > 1 && std::strcmp(argv[1], "changed") == 0;
    std::random_device rd;
    std::mt19937_64 rng((std::uint64_t{rd()} << 32) ^ rd() ^ reinterpret_cast<std::uintptr_t>(&rd));

    // Heap noise, so that allocations land at a process-dependent place.
    std::vector<std::unique_ptr<char[]>> noise;
    for (std::size_t i = 0, n = rng() % 64; i < n; ++i) noise.emplace_back(new char[1 + rng() % 4096]);

    std::vector<std::pair<std::string, std::int64_t>> globals;
    for (std::int64_t i = 0; i < 2000; ++i)
        globals.emplace_back("global_" + std::to_string(i * 7919 % 10007), i * i - 1000);
    if (changed) globals[1234].second += 1;
    std::shuffle(globals.begin(), globals.end(), rng);
    std::unordered_map<std::string, std::int64_t> globals_map;
    globals_map.reserve(2000 + rng() % 20000);
    for (auto const& g : globals) globals_map.insert(g);

    std::vector<int> dialects_in{3, 1, 4, 15, 9, 2, 6, 5, 35, 8, 97, 93};
    std::shuffle(dialects_in.begin(), dialects_in.end(), rng);
    std::set<int> dialects(dialects_in.begin(), dialects_in.end());
    std::unordered_set<std::string> passes;
    for (int d : dialects_in) passes.insert("pass." + std::to_string(d));

    kernel_options opts;
    opts.target = "x86-64-v2";
    opts.flags = {"-O2", "-fno-plt", ""};

    compile_cache::key_builder<> kb;
    kb.add("toolchain", compile_cache::toolchain::current("key_determinism_helper 1.0", "none"))
        .add("ints", std::make_tuple(std::int8_t{-1}, std::uint16_t{65535}, std::int32_t{-123456},
                                     std::uint64_t{0xfedcba9876543210ull}))
        .add("floats", std::vector<double>{0.0, -0.0, 1.5, -2.25e300, 5e-324})
        .add("float", 3.25f)
        .add("strings", std::vector<std::string>{"", "a", "bc", std::string("nul\0inside", 10)})
        .add("nested", std::vector<std::vector<std::vector<int>>>{{{1}, {}, {}}, {}, {{}, {2, 3}}})
        .add("globals", globals_map)
        .add("dialects", dialects)
        .add("passes", passes)
        .add("choice", std::variant<int, std::string>(std::string("alt")))
        .add("options", opts);
    compile_cache::key_result r = kb.finish();
    if (!r.ok()) {
        std::fprintf(stderr, "bypass: %s\n", r.bypass_reason().c_str());
        return 1;
    }
    std::printf("%s\n", r.value().hex().c_str());
    return 0;
}
