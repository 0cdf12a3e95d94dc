// One machine of a fleet sharing a Redis server, as a fresh process: a cache over
// tiered_storage<directory_storage, redis_storage> configured from the environment
// (prefix MACHINE: MACHINE_DIR, MACHINE_REMOTE, MACHINE_SECRET_FILE, ...), which gets or
// compiles kernels 0 to COUNT - 1.
//
// Usage: tier_machine COUNT [store]
//        tier_machine fork mid-upload|idle
// Prints a line per kernel, `kN loaded` or `kN compiled`, then, once the tier's uploads
// are out (a bound of 10 s), the cache's statistics summary; the cache's log lines
// (MACHINE_LOG=1) go to stderr. With `store`, only stores kernels 0 to COUNT - 1 (no
// lookup; `kN stored` or `kN not stored`). MACHINE_PREFETCH=1: the kernels' keys (and
// identity records) are prefetched first, in one call (basic_cache::prefetch, which with
// single flight on the remote also claims the absent ones); MACHINE_AFTER_PREFETCH_WAIT_FOR
// (a path): then waits until that file exists (at most 20 s) before the first kernel.
// Exit 0, or 1 when a value was wrong or the cache is not enabled.
//
// `fork`: a host that forks after a store. It gets kernel 0 (a miss: its upload is
// queued), then forks, either while the tier's worker sends that upload (`mid-upload`:
// 30 ms later, for a server behind the latency proxy) or once it is sent (`idle`). The
// child gets kernels 1 and 2 with the same cache and ends through its destructors (its
// worker drains); meanwhile the parent gets kernel 3 (both use the server at once), then
// waits for the child. Lines `parent kN ...`,
// `child kN ...`, `child exit N`, and both summaries (`child: ...`, `parent: ...`). Exit
// 0, or 1 when a value was wrong or the child failed. Each process gives up after 30 s
// (alarm): a deadlock is a failure, not a hang. (One program for both, so that every run
// has the same build-id, which the keys hold.)
#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <boost/serialization/vector.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace cc = compile_cache;

namespace {
struct kernel {
    std::vector<int> code;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & code;
    }
};
using tier = cc::tiered_storage<cc::directory_storage, cc::redis_storage>;
using tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, tier>;

cc::key_result key_of(tier_cache const& cache, int n) {
    return cache.make_key_builder("tier_machine").add("ir", "kernel " + std::to_string(n)).finish();
}

/// Gets kernel n, says how (after `who`, when given); false when its value is wrong.
bool get(tier_cache& cache, int n, std::string const& who = {}) {
    auto const r = cache.get_or_compile<kernel>(key_of(cache, n), {"k" + std::to_string(n), "f.tk", 1},
                                                [n] { return kernel{{n, n + 1}}; });
    std::printf("%sk%d %s\n", who.empty() ? "" : (who + " ").c_str(), n,
                r.outcome == cc::outcome::loaded ? "loaded" : "compiled");
    std::fflush(stdout);
    return r.value.code == std::vector<int>{n, n + 1};
}

int machine(int count, bool store_only) {
    int wrong = 0;
    tier_cache cache = tier_cache::from_env("MACHINE");
    if (!cache.enabled()) {
        std::printf("not enabled\n");
        return 1;
    }
    if (char const* p = std::getenv("MACHINE_PREFETCH"); p && std::string(p) == "1") {
        std::vector<cc::key_result> keys;
        std::vector<cc::entry_info> infos;
        for (int n = 0; n < count; ++n) {
            keys.push_back(key_of(cache, n));
            infos.push_back({"k" + std::to_string(n), "f.tk", 1});
        }
        cache.prefetch(keys, infos);
        if (char const* file = std::getenv("MACHINE_AFTER_PREFETCH_WAIT_FOR"))
            for (int i = 0; i < 4000 && ::access(file, F_OK) != 0; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int n = 0; n < count; ++n) {
        if (store_only) {
            bool const stored = cache.store(key_of(cache, n), kernel{{n, n + 1}}, {"k" + std::to_string(n), "f.tk", 1});
            std::printf("k%d %s\n", n, stored ? "stored" : "not stored");
            continue;
        }
        if (!get(cache, n)) ++wrong;
    }
    (void)cache.storage().wait_for_uploads(std::chrono::seconds(10));
    std::printf("%s\n", cache.stats().summary().c_str());
    return wrong == 0 ? 0 : 1;
}

/// The parent's run, and the child's from the fork on; the cache ends with it in both
/// (the child's worker drains at its end, as a host's child's does at exit).
int forking_host(bool mid_upload) {
    ::alarm(30);
    tier_cache cache = tier_cache::from_env("MACHINE");
    if (!cache.enabled() || !cache.storage().has_remote()) {
        std::printf("not enabled\n");
        return 1;
    }
    bool right = get(cache, 0, "parent");
    if (mid_upload) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    else (void)cache.storage().wait_for_uploads(std::chrono::seconds(10));
    std::fflush(stdout);
    pid_t const pid = ::fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        ::alarm(30);
        bool const child_right = get(cache, 1, "child") && get(cache, 2, "child");
        std::printf("child: %s\n", cache.stats().summary().c_str());
        std::fflush(stdout);
        return child_right ? 0 : 1;
    }
    right = get(cache, 3, "parent") && right;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int const child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::printf("child exit %d\n", child_status);
    (void)cache.storage().wait_for_uploads(std::chrono::seconds(10));
    std::printf("parent: %s\n", cache.stats().summary().c_str());
    return right && child_status == 0 ? 0 : 1;
}
} // namespace

int main(int argc, char** argv) {
    std::string const first = argc > 1 ? argv[1] : "";
    std::string const second = argc > 2 ? argv[2] : "";
    int status = 2;
    if (argc == 3 && first == "fork" && (second == "mid-upload" || second == "idle"))
        status = forking_host(second == "mid-upload");
    else if (argc == 2 || (argc == 3 && second == "store"))
        status = machine(std::atoi(argv[1]), argc == 3);
    else
        std::fprintf(stderr, "usage: %s COUNT [store] | fork mid-upload|idle\n", argv[0]);
    std::fflush(stdout);
    return status;
}
