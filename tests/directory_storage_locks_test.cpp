// A lock on one of the cache's files held by a process that does not let go — a
// compiler stopped with Ctrl-Z, in a debugger, frozen by its cgroup — costs the other
// processes a bounded delay, never a hang: each lock the library takes (the size
// ledger, the cache directory for cleanups, the counters shards) is held here by a
// real stopped process while a host, in a fresh process, compiles and stores.
#include "catch2_compat.hpp"
#include "support/process.hpp"
#include "support/posix.hpp"

#include <compile_cache/storage/directory/directory_storage.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef COMPILE_CACHE_HELPER_storage_worker
#error "tests/CMakeLists.txt passes the path of tests/helpers/storage_worker.cpp's program"
#endif

namespace {

namespace fs = std::filesystem;
namespace cc = compile_cache;
using compile_cache_test::child_process;
using compile_cache_test::temp_dir;

/// A process that takes an exclusive flock on each path (creating files that do not
/// exist; a directory is locked as itself), then stops itself with SIGSTOP, as a
/// process stopped with Ctrl-Z would. Killed (and reaped) when this goes away.
class stopped_lock_holder {
public:
    explicit stopped_lock_holder(std::vector<std::string> const& paths) {
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            for (auto const& p : paths) {
                int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0) fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(3);
            }
            ::raise(SIGSTOP);
            ::_exit(0);
        }
        int status = 0;
        while (::waitpid(pid_, &status, WUNTRACED) < 0 && errno == EINTR) {
        }
        if (!WIFSTOPPED(status)) {
            pid_ = -1;
            throw std::runtime_error("the lock holder did not take its locks");
        }
    }
    stopped_lock_holder(stopped_lock_holder const&) = delete;
    stopped_lock_holder& operator=(stopped_lock_holder const&) = delete;
    ~stopped_lock_holder() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }

private:
    pid_t pid_ = -1;
};

struct host_run {
    int status = -1;
    std::string output;
    double seconds = 0;
};

/// `storage_worker host DIR KEYS MAX_SIZE` in a fresh process, timed.
host_run run_host(fs::path const& dir, unsigned keys, std::uint64_t max_size = 0) {
    auto const start = std::chrono::steady_clock::now();
    child_process p({COMPILE_CACHE_HELPER_storage_worker, "host", dir.string(), std::to_string(keys),
                     std::to_string(max_size)});
    host_run r;
    // A host that hangs is killed after 20 s (and then fails the checks), rather
    // than left to ctest's timeout.
    if (!p.wait_for_line(20000)) p.kill();
    r.status = p.wait();
    r.output = p.output();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

std::uint64_t field(std::string const& line, std::string const& name) {
    auto const at = line.find(name + "=");
    if (at == std::string::npos) return ~std::uint64_t{0};
    return std::stoull(line.substr(at + name.size() + 1));
}

std::vector<std::string> counters_shard_locks(fs::path const& dir) {
    fs::create_directories(dir / ".cc-counters");
    std::vector<std::string> locks;
    for (char const* digit : {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"})
        locks.push_back((dir / ".cc-counters" / (std::string(digit) + ".lock")).string());
    return locks;
}

// Stores wait at most 50 ms for the ledger, and not again for a second after; the
// counters wait at most a second at exit. 200 kernels take well under a second
// here, so 5 s is the bound with a wide margin for a loaded machine, and a hang
// would be caught by it (ctest's own timeout is far longer).
constexpr double bound_s = 5.0;

/// run_host, checked: the host exited cleanly within bound_s, having `done` ("compiled"
/// or "loaded") all `keys` kernels.
host_run run_host_in_time(fs::path const& dir, unsigned keys, std::uint64_t max_size, char const* done) {
    host_run r = run_host(dir, keys, max_size);
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.seconds < bound_s);
    CHECK(field(r.output, done) == keys);
    return r;
}

/// A scratch cache directory, made (the lock holders lock files inside it).
struct cache_dir {
    temp_dir tmp;
    fs::path dir = tmp.path() / "cache";
    cache_dir() { fs::create_directories(dir); }
};

} // namespace

TEST_CASE("a stopped process holding the size ledger's lock: a host stores every entry within a bounded delay",
          "[storage][processes][locks]") {
    cache_dir const cache;
    fs::path const& dir = cache.dir;
    stopped_lock_holder holder({(dir / ".cc-stats").string()});

    host_run const cold = run_host_in_time(dir, 200, std::uint64_t{1} << 30, "compiled");
    INFO(cold.output);
    CHECK(field(cold.output, "wrong") == 0);
    CHECK(field(cold.output, "lock_timeouts") >= 1);
    CHECK(field(cold.output, "logged") == 1); // said once, however often it happened

    // The entries are there: a second host, in a fresh process, loads them all.
    host_run const warm = run_host_in_time(dir, 200, std::uint64_t{1} << 30, "loaded");
}

TEST_CASE("a stopped process holding every counters shard's lock: the host's exit is delayed a bounded time",
          "[storage][processes][locks]") {
    cache_dir const cache;
    fs::path const& dir = cache.dir;
    stopped_lock_holder holder(counters_shard_locks(dir));

    host_run const r = run_host_in_time(dir, 20, 0, "compiled");
    INFO(r.output);
    CHECK(field(r.output, "lock_timeouts") == 1);
    CHECK(field(r.output, "logged") == 1);
    CHECK(run_host(dir, 20).output.find("loaded=20") != std::string::npos);
}

TEST_CASE("a stopped process holding the directory's cleanup lock: stores skip cleanup, prune() gives up in time",
          "[storage][processes][locks]") {
    cache_dir const cache;
    fs::path const& dir = cache.dir;
    stopped_lock_holder holder({dir.string()});

    // A limit far below what 200 entries need: every flush asks for a cleanup step.
    host_run const r = run_host_in_time(dir, 200, 64 * 1024, "compiled");
    INFO(r.output);
    CHECK(field(r.output, "wrong") == 0);

    // An explicit prune() waits for a running cleanup, but not for ever.
    cc::directory_storage storage(dir.string());
    std::vector<std::string> said;
    storage.set_logger([&](std::string_view line) { said.emplace_back(line); });
    auto const start = std::chrono::steady_clock::now();
    cc::cleanup_result const pruned = storage.prune();
    double const waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(pruned.error == std::errc::resource_unavailable_try_again);
    CHECK(waited >= 1.5);
    CHECK(waited < bound_s);
    CHECK(storage.counters().lock_timeouts == 1);
    REQUIRE(said.size() == 1);
    CHECK(said[0].find(dir.string()) != std::string::npos);
    CHECK(said[0].find("so the cleanup did not run") != std::string::npos);
}

TEST_CASE("a stopped process holding every lock of the cache at once: a host still finishes within a bound",
          "[storage][processes][locks]") {
    cache_dir const cache;
    fs::path const& dir = cache.dir;
    std::vector<std::string> all = counters_shard_locks(dir);
    all.push_back((dir / ".cc-stats").string());
    all.push_back(dir.string());
    stopped_lock_holder holder(all);

    host_run const r = run_host_in_time(dir, 200, 64 * 1024, "compiled");
    INFO(r.output);
    CHECK(field(r.output, "wrong") == 0);
    CHECK(field(r.output, "logged") == 1);
}
