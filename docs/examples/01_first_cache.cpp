// Step 1 of docs/tutorial.md: the toy compiler gets a cache. Run without arguments,
// the program runs itself three times as fresh processes: without TOY_CACHE_DIR,
// then twice with it naming a new, empty directory.
#include "scratch_dir.hpp"
#include "toy_compiler.hpp"

#include <compile_cache/compile_cache.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace cc = compile_cache;

// [tutorial:host]
int compile_and_run() {
    // Off unless TOY_CACHE_DIR names a directory: a host that is not asked to
    // cache behaves exactly as before.
    cc::default_cache cache = cc::default_cache::from_env("TOY_CACHE");

    std::string const source = "x * (x + 3) - 7 * 2";
    int const opt_level = 2;

    // Everything the compiled code depends on goes into the key. make_key_builder
    // adds the toolchain (this program's build, its compiler, Boost, the format).
    cc::key_result key = cache.make_key_builder("toyc 1.0")
                             .add("source", source)
                             .add("opt-level", opt_level)
                             .finish();

    cc::cached<toy::program> result = cache.get_or_compile<toy::program>(
        key, {"poly", "poly.toy", 1}, [&] { return toy::compile(source); });

    std::printf("  cache %s\n", cache.enabled() ? "enabled" : "disabled");
    std::printf("  poly: %s, poly(5) = %lld, compiler runs: %d\n", cc::to_string(result).c_str(),
                static_cast<long long>(toy::run(result.value, 5)), toy::compiler_runs);
    cc::statistics_snapshot const s = cache.stats();
    std::printf("  hits=%llu misses=%llu stores=%llu\n", static_cast<unsigned long long>(s.hits),
                static_cast<unsigned long long>(s.total_misses()), static_cast<unsigned long long>(s.stores));
    return 0;
}
// [tutorial:host]

// Runs this program again, as a new process, with the argument "run".
int run_fresh_process() {
    std::fflush(stdout);
    std::string self = "/proc/self/exe";
    std::string mode = "run";
    char* argv[] = {self.data(), mode.data(), nullptr};
    pid_t pid = 0;
    if (::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ) != 0) return 1;
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "run") return compile_and_run();

    // [tutorial:settings]
    std::printf("settings:");
    for (cc::environment_setting const& setting : cc::default_cache::environment_settings("TOY_CACHE"))
        std::printf(" %s", setting.name.c_str());
    std::printf("\n");
    // [tutorial:settings]

    scratch_dir dir;
    int failures = 0;
    ::unsetenv("TOY_CACHE_DIR");
    std::printf("run 1, TOY_CACHE_DIR unset:\n");
    failures += run_fresh_process();
    ::setenv("TOY_CACHE_DIR", dir.path().c_str(), 1);
    std::printf("run 2, TOY_CACHE_DIR=<a new directory>:\n");
    failures += run_fresh_process();
    std::printf("run 3, the same directory:\n");
    failures += run_fresh_process();
    return failures == 0 ? 0 : 1;
}
