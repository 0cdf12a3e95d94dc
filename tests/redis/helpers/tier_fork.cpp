// A host that forks after a store, as a fresh process: a cache over
// tiered_storage<directory_storage, redis_storage> configured from the environment
// (prefix MACHINE, as tier_machine), with background uploads, gets kernel 0 (a miss: its
// upload is queued), then forks, either while the tier's worker sends that upload
// (`mid-upload`: 30 ms later, for a server behind the latency proxy) or once it is sent
// (`idle`). The child gets kernels 1 and 2 with the same cache and exits through its
// destructors; the parent waits for it, then gets kernel 3. Kernels and keys are
// tier_machine's, so that a later tier_machine finds what each stored.
//
// Usage: tier_fork mid-upload|idle
// Prints `child kN compiled|loaded` and `parent kN ...` lines, the child's and the
// parent's statistics summaries (`child: ...`, `parent: ...`), and `child exit N`.
// Exit 0, or 1 when a value was wrong, the cache is not enabled or the child failed.
// Each process gives up after 30 s (alarm), so that a deadlock is a failure, not a hang.
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

/// Gets kernel n as tier_machine does; false when its value is wrong.
bool get(tier_cache& cache, int n, char const* who) {
    auto const k = cache.make_key_builder("tier_machine").add("ir", "kernel " + std::to_string(n)).finish();
    auto const r = cache.get_or_compile<kernel>(k, {"k" + std::to_string(n), "f.tk", 1},
                                                [n] { return kernel{{n, n + 1}}; });
    std::printf("%s k%d %s\n", who, n, r.outcome == cc::outcome::loaded ? "loaded" : "compiled");
    std::fflush(stdout);
    return r.value.code == std::vector<int>{n, n + 1};
}

/// The parent's run, and the child's from the fork on; the cache ends with it in both
/// (the child's worker drains at its end, as a host's child's does at exit).
int run(std::string const& mode) {
    bool right = true;
    tier_cache cache = tier_cache::from_env("MACHINE");
    if (!cache.enabled() || !cache.storage().has_remote()) {
        std::printf("not enabled\n");
        return 1;
    }
    right = get(cache, 0, "parent") && right;
    if (mode == "idle") (void)cache.storage().wait_for_uploads(std::chrono::seconds(10));
    else std::this_thread::sleep_for(std::chrono::milliseconds(30));
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
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int const child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::printf("child exit %d\n", child_status);
    right = get(cache, 3, "parent") && right;
    (void)cache.storage().wait_for_uploads(std::chrono::seconds(10));
    std::printf("parent: %s\n", cache.stats().summary().c_str());
    return right && child_status == 0 ? 0 : 1;
}
} // namespace

int main(int argc, char** argv) {
    std::string const mode = argc == 2 ? argv[1] : "";
    if (mode != "mid-upload" && mode != "idle") {
        std::fprintf(stderr, "usage: %s mid-upload|idle\n", argv[0]);
        return 2;
    }
    ::alarm(30);
    int const status = run(mode);
    std::fflush(stdout);
    return status;
}
