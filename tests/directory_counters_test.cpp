// The cumulative counters a cache directory keeps: every cache that used the
// directory adds what it counted when it is destroyed or flushed, many processes at
// once lose nothing, and nothing is written on a hit or a store.
#include "catch2_compat.hpp"
#include "support/posix.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>

#include <boost/serialization/string.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <new>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;

struct note {
    std::string text;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & text;
    }
};

cc::key_result key_of(std::string const& s) { return cc::key_builder<>().add("ir", s).finish(); }

/// Makes a cache over `dir`, does `stores` stores of new keys, loads each one back
/// once (hits) and loads one absent key (a miss), then destroys the cache.
void use_cache(fs::path const& dir, std::string const& tag, int stores, std::uint64_t max_size = 1 << 20) {
    cc::directory_options o;
    o.max_size = max_size;
    cc::default_cache cache{cc::directory_storage(dir.string(), o)};
    for (int i = 0; i < stores; ++i) {
        auto const k = key_of(tag + std::to_string(i));
        REQUIRE(cache.store(k, note{tag}));
        REQUIRE(cache.load<note>(k));
    }
    REQUIRE(!cache.load<note>(key_of(tag + "absent")));
}

/// The shard this process adds to (its pid picks it), and one it does not.
std::string our_shard() { return std::string(1, "0123456789abcdef"[static_cast<unsigned>(::getpid()) % 16]); }
std::string other_shard() { return std::string(1, "0123456789abcdef"[(static_cast<unsigned>(::getpid()) + 1) % 16]); }

std::uint64_t counter(std::map<std::string, std::uint64_t> const& c, std::string const& name) {
    auto const it = c.find(name);
    return it == c.end() ? 0 : it->second;
}

} // namespace

TEST_CASE("a directory sums the counters of every cache that used it", "[counters]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    CHECK(cc::directory_storage(root.string()).recorded_counters().empty());

    use_cache(root, "a", 3);
    use_cache(root, "b", 2, 48 << 10);

    auto const c = cc::directory_storage(root.string()).recorded_counters();
    CHECK(counter(c, "stores") == 5);
    CHECK(counter(c, "hits") == 5);
    CHECK(counter(c, "misses.absent") == 2);
    CHECK(counter(c, "misses.corrupt") == 0);
    CHECK(counter(c, "bytes-written") > 0);
    CHECK(counter(c, "max-size") == 48 << 10); // the latest writer's limit
    CHECK(c.count("updated-s") == 1);
}

TEST_CASE("nothing is written for the counters on a hit or a store, only at a flush", "[counters]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::default_cache cache{cc::directory_storage(root.string())};
    auto const k = key_of("x");
    REQUIRE(cache.store(k, note{"x"}));
    REQUIRE(cache.load<note>(k));
    CHECK(!fs::exists(root / ".cc-counters"));

    cache.flush_statistics();
    CHECK(counter(cache.storage().recorded_counters(), "hits") == 1);
    SECTION("a second flush adds only what was counted since the first") {
        REQUIRE(cache.load<note>(k));
        cache.flush_statistics();
        cache.flush_statistics();
        CHECK(counter(cache.storage().recorded_counters(), "hits") == 2);
        CHECK(counter(cache.storage().recorded_counters(), "stores") == 1);
    }
}

TEST_CASE("a cache that did nothing, or a disabled one, records nothing", "[counters]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    { cc::default_cache idle{cc::directory_storage(root.string())}; }
    { cc::default_cache disabled; }
    CHECK(!fs::exists(root));
}

TEST_CASE("eight processes exiting at once lose no count", "[counters][processes]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    constexpr int processes = 8, stores_each = 5;
    pid_t children[processes];
    for (int p = 0; p < processes; ++p) {
        pid_t const pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int status = 0;
            try {
                use_cache(root, "p" + std::to_string(p) + "-", stores_each);
            } catch (...) {
                status = 1;
            }
            ::_exit(status);
        }
        children[p] = pid;
    }
    for (pid_t pid : children) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        REQUIRE(WIFEXITED(status));
        REQUIRE(WEXITSTATUS(status) == 0);
    }
    auto const c = cc::directory_storage(root.string()).recorded_counters();
    CHECK(counter(c, "stores") == processes * stores_each);
    CHECK(counter(c, "hits") == processes * stores_each);
    CHECK(counter(c, "misses.absent") == processes);
}

TEST_CASE("damaged or hostile counter files are read with bounds and never fail a cache", "[counters]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    fs::create_directories(root / ".cc-counters");
    // A torn or foreign shard: malformed lines are skipped, good ones still count.
    write_file(root / ".cc-counters" / other_shard(), "hits 7\nnot a line\nstores -3\nbytes-read 99999999999999999999999\n"
                                            "misses.absent 2");
    // What a writer killed between writing `N.new` and its rename leaves behind.
    for (char shard : std::string("0123456789abcdef")) write_file(root / ".cc-counters" / (std::string(1, shard) + ".new"), "junk");

    auto c = cc::directory_storage(root.string()).recorded_counters();
    CHECK(counter(c, "hits") == 7);
    CHECK(counter(c, "misses.absent") == 2);
    CHECK(c.count("stores") == 0);
    CHECK(c.count("bytes-read") == 0);

    use_cache(root, "h", 1);
    c = cc::directory_storage(root.string()).recorded_counters();
    CHECK(counter(c, "hits") == 8);
    CHECK(counter(c, "stores") == 1);
}

TEST_CASE("a shard that is there but cannot be read is left as it is, not replaced by one process's counts",
          "[counters]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    fs::create_directories(root / ".cc-counters");
    std::string const oversized(100000, '1'); // over the 64 KiB a shard may have
    write_file(root / ".cc-counters" / our_shard(), oversized);
    use_cache(root, "o", 1);
    CHECK(compile_cache_test::read_file(root / ".cc-counters" / our_shard()) == oversized);
    CHECK(cc::directory_storage(root.string()).recorded_counters().count("stores") == 0);
}

TEST_CASE("FIFOs planted at a shard's side file and lock never make a host hang at exit", "[counters]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    fs::create_directories(root / ".cc-counters");
    for (char shard : std::string("0123456789abcdef"))
        REQUIRE(::mkfifo((root / ".cc-counters" / (std::string(1, shard) + ".new")).c_str(), 0600) == 0);

    // In a child with an alarm, so that a hang fails the test instead of stopping it.
    auto finishes = [&](std::string const& tag) {
        pid_t const pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::alarm(20);
            int status = 0;
            try {
                use_cache(root, tag, 1);
            } catch (...) {
                status = 1;
            }
            ::_exit(status);
        }
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    };
    CHECK(finishes("fifo-new"));
    // The side file was replaced by a regular one and the counts recorded.
    CHECK(counter(cc::directory_storage(root.string()).recorded_counters(), "stores") == 1);

    for (char shard : std::string("0123456789abcdef")) {
        fs::path const lock = root / ".cc-counters" / (std::string(1, shard) + ".lock");
        fs::remove(lock);
        REQUIRE(::mkfifo(lock.c_str(), 0600) == 0);
    }
    CHECK(finishes("fifo-lock")); // gives up on the counts, finishes
}

TEST_CASE("a forked child does not record its parent's counts again", "[counters][processes]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    {
        cc::default_cache cache{cc::directory_storage(root.string())};
        auto const k = key_of("forked");
        REQUIRE(cache.store(k, note{"x"}));
        REQUIRE(cache.load<note>(k));
        pid_t const pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            // The child's copy of the cache is destroyed here, as by exit() in a host
            // whose cache is a global.
            cache.~basic_cache();
            new (&cache) cc::default_cache();
            ::_exit(0);
        }
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
    }
    auto const c = cc::directory_storage(root.string()).recorded_counters();
    CHECK(counter(c, "stores") == 1);
    CHECK(counter(c, "hits") == 1);
}

namespace {

/// In a forked child: `n` stores of new keys (`tag`), each loaded back (a hit); true
/// when all were.
bool forked_uses(cc::default_cache& cache, std::string const& tag, int n) {
    bool ok = true;
    for (int i = 0; i < n; ++i) {
        auto const k = key_of(tag + std::to_string(i));
        ok = cache.store(k, note{tag}) && cache.load<note>(k).has_value() && ok;
    }
    return ok;
}

/// Waits for `pid` (at most 30 s: its own alarm); whether it exited 0.
bool exited_well(pid_t pid) {
    int status = 0;
    return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

// A pre-fork host makes its cache, then forks the workers that compile: each worker's
// own counts are recorded when it flushes (the parent's copy in it never), also those
// of a worker's own child. Until the audit of the local store a flush anywhere but in
// the cache's maker recorded nothing.
TEST_CASE("counters of a forked child: its own are recorded when it flushes, once, and its own child's too",
          "[counters][processes]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    {
        cc::default_cache cache{cc::directory_storage(root.string())};
        REQUIRE(forked_uses(cache, "parent-before", 1)); // counted before the fork: the parent's
        pid_t const pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::alarm(30);
            bool ok = forked_uses(cache, "child", 3);
            cache.flush_statistics();
            cache.flush_statistics(); // (adds nothing more)
            pid_t const grandchild = ::fork();
            if (grandchild == 0) {
                bool const done = forked_uses(cache, "grandchild", 2);
                cache.flush_statistics();
                ::_exit(done ? 0 : 1);
            }
            ok = exited_well(grandchild) && ok;
            ::_exit(ok ? 0 : 1); // (no destructor: its flush was made above)
        }
        REQUIRE(exited_well(pid));
        REQUIRE(forked_uses(cache, "parent-after", 1));
    } // the parent's flush, at its cache's end
    auto const c = cc::directory_storage(root.string()).recorded_counters();
    CHECK(counter(c, "stores") == 1 + 3 + 2 + 1);
    CHECK(counter(c, "hits") == 1 + 3 + 2 + 1);
}

TEST_CASE("a counters folder that cannot be written leaves the host's cache working", "[counters]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    fs::create_directories(root);
    write_file(root / ".cc-counters", "a file where the folder should be");
    {
        cc::default_cache cache{cc::directory_storage(root.string())};
        auto const k = key_of("y");
        REQUIRE(cache.store(k, note{"y"}));
        REQUIRE(cache.load<note>(k));
        cache.flush_statistics();
    }
    CHECK(cc::directory_storage(root.string()).recorded_counters().empty());
}
