// Step 6 of docs/tutorial.md: sharing kernels between machines. tiered_storage puts
// each machine's directory in front of a shared remote; here the remote is a third
// directory standing in for the Redis server a real fleet uses (docs/remote.md).
#include "scratch_dir.hpp"
#include "toy_compiler.hpp"

#include <compile_cache/compile_cache.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace cc = compile_cache;

// [tutorial:tier]
// A machine: its own directory before the shared remote. In production the remote is
// cc::redis_storage (compile_cache/storage/redis/redis_storage.hpp) and from_env builds the
// tier from MYDSL_CACHE_DIR, MYDSL_CACHE_REMOTE and MYDSL_CACHE_SECRET_FILE.
struct shared_remote : cc::directory_storage {
    using cc::directory_storage::directory_storage;
};
using machine_storage = cc::tiered_storage<cc::directory_storage, shared_remote>;
using machine_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, machine_storage>;

machine_cache machine(std::string const& local, std::string const& remote, cc::remote_mode mode) {
    cc::cache_options options;
    options.secret = "the fleet's secret"; // entries from a shared remote run as code: authenticate them
    cc::tier_options tier;
    tier.mode = mode;
    return machine_cache(machine_storage(cc::directory_storage(local), shared_remote(remote), tier), options);
}
// [tutorial:tier]

std::uint64_t counter(machine_cache const& cache, std::string const& name) {
    for (auto const& [n, value] : cache.stats().storage_counters)
        if (n == name) return value;
    return 0;
}

void compile_kernel(machine_cache& cache, char const* who) {
    std::string const source = "x * (x + 3) - 7 * 2";
    cc::key_result key = cache.make_key_builder("toyc 1.0").add("source", source).finish();
    cc::cached<toy::program> r =
        cache.get_or_compile<toy::program>(key, {"poly", "team.toy", 1}, [&] { return toy::compile(source); });
    // The tier sends remote stores from a worker thread, off the compile path; wait for
    // it before counting them (a host never needs to: the cache's end drains the queue).
    cache.storage().wait_for_uploads(std::chrono::seconds(10));
    std::printf("  %s: poly %s, poly(5) = %lld; remote hits %llu, remote stores %llu\n", who,
                cc::to_string(r.outcome), static_cast<long long>(toy::run(r.value, 5)),
                static_cast<unsigned long long>(counter(cache, "remote.hits")),
                static_cast<unsigned long long>(counter(cache, "remote.stores")));
}

int main() {
    scratch_dir dir;
    std::printf("a CI runner compiles and stores locally and remotely:\n");
    {
        machine_cache ci = machine(dir / "ci", dir / "server", cc::remote_mode::read_write);
        compile_kernel(ci, "ci");
    }
    std::printf("a developer's machine (read-only remote), first process, then the next:\n");
    for (int process = 0; process < 2; ++process) {
        machine_cache dev = machine(dir / "dev", dir / "server", cc::remote_mode::read_only);
        compile_kernel(dev, "dev");
    }
    return 0;
}
