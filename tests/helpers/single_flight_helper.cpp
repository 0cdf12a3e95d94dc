// A host process for single_flight_test.cpp: one cache over a directory (from the
// environment, as a host's), kernels keyed by name, values that say who compiled them.
//
// Usage: single_flight_helper MODE DIR WAIT_MAX_MS NAME [OTHER]
//   Sets SFH_DIR=DIR and SFH_WAIT_MAX=WAIT_MAX_MS, then default_cache::from_env("SFH").
//   hold:    get_or_compile NAME with a compile that prints `compiling` and sleeps 60 s
//            (for the test to kill or stop it while it holds the claim).
//   get:     get_or_compile NAME, whose value is `value-of-NAME`.
//   recurse: get_or_compile NAME, whose compile announces itself (the file DIR/../NAME.ready),
//            waits (at most 5 s) until OTHER's announcement exists, then get_or_compiles
//            OTHER (`inner`, whose value is `OTHER<NAME>`): NAME's value is `NAME<OTHER>`.
//   at-exit: get NAME, then, at exit, from the destructor of an object of static storage
//            duration (after this thread's thread_local objects are gone), get_or_compile
//            OTHER through a cache of static storage duration: prints a second line,
//            `at-exit outcome=... value=...`.
// Prints one line: `outcome=... value=... waited=N took-over=N wait-timeout=N compiles=N`.
#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>

#include <boost/serialization/string.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;

int usage() {
    std::fprintf(stderr, "usage: single_flight_helper hold|get|recurse|at-exit DIR WAIT_MAX_MS NAME [OTHER]\n");
    return 2;
}

/// A host's object of static storage duration that compiles a kernel as it is destroyed,
/// through a cache of static storage duration made before it (so destroyed after it).
struct compiles_at_exit {
    cc::default_cache* cache = nullptr;
    std::string name;
    ~compiles_at_exit() {
        if (cache == nullptr) return;
        auto const k = cache->make_key_builder("sf-helper 1").add("ir", name).finish();
        auto const r = cache->get_or_compile<std::string>(k, {name, "sf.dsl", 1}, [&] { return "value-of-" + name; });
        std::printf("at-exit outcome=%s value=%s\n", cc::to_string(r.outcome), r.value.c_str());
        std::fflush(stdout);
    }
};

} // namespace

int main(int argc, char** argv) {
    if (argc < 5) return usage();
    std::string const mode = argv[1];
    fs::path const dir = argv[2];
    std::string const name = argv[4];
    std::string const other = argc > 5 ? argv[5] : "";
    if (mode != "hold" && mode != "get" && mode != "recurse" && mode != "at-exit") return usage();
    if ((mode == "recurse" || mode == "at-exit") && other.empty()) return usage();
    ::setenv("SFH_DIR", dir.c_str(), 1);
    ::setenv("SFH_WAIT_MAX", argv[3], 1);

    auto cache = cc::default_cache::from_env("SFH");
    int compiles = 0;
    auto key_of = [&](std::string const& n) { return cache.make_key_builder("sf-helper 1").add("ir", n).finish(); };

    cc::cached<std::string> r;
    std::string inner = "-";
    if (mode == "hold") {
        r = cache.get_or_compile<std::string>(key_of(name), {name, "sf.dsl", 1}, [&] {
            ++compiles;
            std::printf("compiling\n");
            std::fflush(stdout);
            std::this_thread::sleep_for(std::chrono::seconds(60));
            return "value-of-" + name;
        });
    } else if (mode == "get" || mode == "at-exit") {
        if (mode == "at-exit") {
            static cc::default_cache at_exit_cache = cc::default_cache::from_env("SFH");
            static compiles_at_exit at_exit;
            at_exit.cache = &at_exit_cache;
            at_exit.name = other;
        }
        r = cache.get_or_compile<std::string>(key_of(name), {name, "sf.dsl", 1}, [&] {
            ++compiles;
            return "value-of-" + name;
        });
    } else {
        fs::path const mine = dir.parent_path() / (name + ".ready");
        fs::path const theirs = dir.parent_path() / (other + ".ready");
        r = cache.get_or_compile<std::string>(key_of(name), {name, "sf.dsl", 1}, [&] {
            ++compiles;
            std::ofstream(mine) << "ready\n";
            for (int i = 0; i < 500 && !fs::exists(theirs); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            // The callee, which calls this kernel back: its value is the same whoever compiles it.
            inner = cache.get_or_compile<std::string>(key_of(other), {other, "sf.dsl", 1}, [&] {
                ++compiles;
                return other + "<" + name + ">";
            }).value;
            return name + "<" + other + ">";
        });
    }
    cc::statistics_snapshot const s = cache.stats();
    std::printf("outcome=%s value=%s inner=%s waited=%llu took-over=%llu wait-timeout=%llu compiles=%d\n",
                cc::to_string(r.outcome), r.value.c_str(), inner.c_str(), static_cast<unsigned long long>(s.waited),
                static_cast<unsigned long long>(s.took_over), static_cast<unsigned long long>(s.wait_timeouts),
                compiles);
    return 0;
}
