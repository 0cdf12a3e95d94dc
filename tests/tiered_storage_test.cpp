// tiered_storage: a local storage before a remote one, through basic_cache as a host
// uses it. The remote here is a directory or memory (tests/redis has the tier on a real
// Redis server): the tier is generic over any two Storages.

#include "catch2_compat.hpp"
#include "support/model.hpp"
#include "support/posix.hpp"
#include "support/entries.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <boost/serialization/vector.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <stdexcept>
#include <vector>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using compile_cache_test::lines_of;
using compile_cache_test::temp_dir;

using compile_cache_test::model::code_kernel;

/// A directory used as the remote (configured by PREFIX_REMOTE = its path).
struct directory_remote : cc::directory_storage {
    using cc::directory_storage::directory_storage;
};

/// A remote whose server can be "down": every call then fails as a client does when
/// nothing listens (connection refused), and the calls that reach it are counted.
struct switchable_remote {
    std::shared_ptr<cc::memory_storage> entries = std::make_shared<cc::memory_storage>();
    std::shared_ptr<std::atomic<bool>> down = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) {
        ++*calls;
        if (*down) return {cc::read_status::error, std::make_error_code(std::errc::connection_refused)};
        return entries->read(k, out, max);
    }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        ++*calls;
        if (*down) return std::make_error_code(std::errc::connection_refused);
        return entries->write(k, bytes);
    }
    std::error_code remove(cc::key const& k) {
        ++*calls;
        if (*down) return std::make_error_code(std::errc::connection_refused);
        return entries->remove(k);
    }
    std::string describe() const { return "test-server"; }
};

using dir_tier = cc::tiered_storage<cc::directory_storage, directory_remote>;
using dir_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, dir_tier>;
using switch_tier = cc::tiered_storage<cc::directory_storage, switchable_remote>;
using switch_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, switch_tier>;

template <class Cache>
cc::key_result key_of(Cache const& c, std::string const& ir) {
    return c.make_key_builder("tiered_storage_test 1").add("ir", ir).finish();
}

/// Gets kernel `name` (its code is {n}) and says how.
template <class Cache>
cc::outcome get(Cache& c, std::string const& name, int n = 7) {
    auto r = c.template get_or_compile<code_kernel>(key_of(c, name), {name, "prog.tk", 1},
                                                     [n] { return code_kernel{{n}}; });
    CHECK(r.value.code == std::vector<int>{n});
    return r.outcome;
}

std::map<std::string, std::uint64_t> remote_counts(cc::statistics_snapshot const& s) {
    std::map<std::string, std::uint64_t> m;
    for (auto const& [name, n] : s.storage_counters) m[name] = n;
    return m;
}

dir_tier_cache tier_cache(fs::path const& local, fs::path const& remote, cc::cache_options o = {},
                          cc::remote_mode mode = cc::remote_mode::read_write) {
    cc::tier_options t;
    t.mode = mode;
    return dir_tier_cache(dir_tier(cc::directory_storage(local.string()), directory_remote(remote.string()), t),
                          std::move(o));
}

/// The CCTIERTEST_* variables these tests set, unset before and after each.
struct tier_env : compile_cache_test::scoped_settings {
    tier_env()
        : scoped_settings("CCTIERTEST", {"_DIR", "_LOG", "_SECRET_FILE", "_REMOTE", "_REMOTE_MODE", "_REMOTE_ONLY",
                                         "_REMOTE_INSECURE", "_MAX_SIZE", "_REMOTE_UPLOAD", "_REMOTE_UPLOAD_QUEUE",
                                         "_REMOTE_UPLOAD_DRAIN"}) {}
};


} // namespace

TEST_CASE("tiered_storage: a remote entry is loaded once, copied locally, and then read locally only",
          "[tiered]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    {
        auto a = tier_cache(dir.path() / "a", remote);
        CHECK(get(a, "helper") == cc::outcome::compiled);
        REQUIRE(a.storage().wait_for_uploads(10s)); // (uploads are sent by the tier's worker)
        auto rc = remote_counts(a.stats());
        // The entry, and apart (records are no entries and no lookups) its kernel's
        // identity record (explain.hpp), which the remote keeps too, so that a miss on
        // another machine can be explained.
        CHECK(rc["remote.stores"] == 1);
        CHECK(rc["remote.misses"] == 1);
        CHECK(rc["remote.record-stores"] == 1);
        CHECK(rc["remote.record-misses"] == 1);
    }
    CHECK(compile_cache_test::entries_under(remote) == 1);
    {
        auto b = tier_cache(dir.path() / "b", remote);
        CHECK(get(b, "helper") == cc::outcome::loaded);
        auto rc = remote_counts(b.stats());
        CHECK(rc["remote.hits"] == 1);
        CHECK(rc["remote.bytes-read"] > 0);
        CHECK(b.stats().summary().find(" remote.hits=1 ") != std::string::npos);
    }
    CHECK(compile_cache_test::entries_under(dir.path() / "b") == 1);
    {
        auto b2 = tier_cache(dir.path() / "b", remote);
        CHECK(get(b2, "helper") == cc::outcome::loaded);
        auto rc = remote_counts(b2.stats());
        CHECK(rc["remote.hits"] == 0);
        CHECK(rc["remote.misses"] == 0);
        CHECK(rc["remote.read-ns"] == 0);
    }
}

TEST_CASE("tiered_storage: a damaged remote entry is a miss counted as remote corrupt, never copied", "[tiered]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    {
        auto a = tier_cache(dir.path() / "a", remote);
        CHECK(get(a, "helper") == cc::outcome::compiled);
    }
    for (auto const& e : fs::recursive_directory_iterator(remote)) {
        if (!e.is_regular_file() || e.path().filename().string().size() < 32) continue;
        std::string bytes = compile_cache_test::read_file(e.path());
        bytes[bytes.size() / 2] ^= 0x40;
        compile_cache_test::write_file(e.path(), bytes);
    }
    auto b = tier_cache(dir.path() / "b", remote);
    CHECK(get(b, "helper") == cc::outcome::compiled);
    CHECK(b.stats().miss_count(cc::miss_reason::corrupt) == 1);
    CHECK(remote_counts(b.stats())["remote.errors.corrupt"] == 1);
    CHECK(remote_counts(b.stats())["remote.hits"] == 0);
}

TEST_CASE("tiered_storage: an entry authenticated under another secret is unauthenticated, never loaded",
          "[tiered]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    cc::cache_options one, other;
    one.secret = "secret one";
    other.secret = "secret two";
    {
        auto a = tier_cache(dir.path() / "a", remote, one);
        CHECK(get(a, "helper", 1) == cc::outcome::compiled);
    }
    auto b = tier_cache(dir.path() / "b", remote, other);
    CHECK(get(b, "helper", 2) == cc::outcome::compiled);
    CHECK(b.stats().miss_count(cc::miss_reason::unauthenticated) == 1);
    CHECK(remote_counts(b.stats())["remote.errors.unauthenticated"] == 1);
}

TEST_CASE("tiered_storage: read-only never writes the remote, remote-only keeps nothing locally", "[tiered]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    SECTION("read-only") {
        auto b = tier_cache(dir.path() / "b", remote, {}, cc::remote_mode::read_only);
        CHECK(get(b, "helper") == cc::outcome::compiled);
        CHECK(get(b, "helper") == cc::outcome::loaded);
        CHECK(compile_cache_test::entries_under(dir.path() / "b") == 1);
        CHECK(!fs::exists(remote));
        CHECK(remote_counts(b.stats())["remote.stores"] == 0);
    }
    SECTION("remote-only") {
        dir_tier_cache r(dir_tier::remote_only(directory_remote(remote.string())));
        CHECK(get(r, "helper") == cc::outcome::compiled);
        REQUIRE(r.storage().wait_for_uploads(10s)); // (a background upload: not there at once)
        CHECK(get(r, "helper") == cc::outcome::loaded);
        CHECK(compile_cache_test::entries_under(remote) == 1);
        CHECK(remote_counts(r.stats())["remote.hits"] == 1);
        CHECK(fs::directory_iterator(dir.path()) != fs::directory_iterator());
        std::size_t others = 0;
        for (auto const& e : fs::directory_iterator(dir.path())) others += e.path() != remote;
        CHECK(others == 0);
    }
    SECTION("remote-only and read-only: stores go nowhere, and are counted as write errors") {
        cc::tier_options t;
        t.mode = cc::remote_mode::read_only;
        dir_tier_cache r(dir_tier::remote_only(directory_remote(remote.string()), t));
        CHECK(get(r, "helper") == cc::outcome::compiled);
        CHECK(get(r, "helper") == cc::outcome::compiled);
        CHECK(r.stats().failure_count(cc::store_failure::write_error) == 2);
        CHECK(r.stats().stores == 0);
        CHECK(!fs::exists(remote));
    }
}

TEST_CASE("tiered_storage: a remote that refuses is skipped for a back-off, with one line when it goes and one "
          "when it is back",
          "[tiered]") {
    temp_dir dir;
    switchable_remote server;
    std::vector<std::string> log;
    cc::tier_options t;
    t.backoff_start = 600ms; // (long enough for six misses on a slow, busy machine)
    t.backoff_max = 1600ms;
    t.upload = cc::remote_upload::sync; // (each store's remote call on this thread, counted here)
    // Identity records (explain.hpp) would add a remote call to each miss and store:
    // off, so that the calls counted here are the kernels' own.
    cc::cache_options no_records;
    no_records.record_identities = false;
    switch_tier_cache c(switch_tier(cc::directory_storage((dir.path() / "local").string()), server, t), no_records);
    c.set_logger([&](std::string_view line) { log.emplace_back(line); });

    *server.down = true;
    CHECK(get(c, "k0") == cc::outcome::compiled); // read refused: back-off starts; the store skips the remote
    int const calls_when_down = *server.calls;
    CHECK(calls_when_down == 1);
    for (int i = 1; i <= 5; ++i) CHECK(get(c, "k" + std::to_string(i)) == cc::outcome::compiled);
    CHECK(*server.calls == calls_when_down); // skipped: no call during the back-off
    auto rc = remote_counts(c.stats());
    CHECK(rc["remote.errors.refused"] == 1);
    CHECK(rc["remote.skipped"] == 11); // 5 reads and 6 stores
    REQUIRE(log.size() == 1);
    CHECK(log[0].rfind("the remote test-server failed (refused: ", 0) == 0);
    CHECK(log[0].find("skipped for 600 ms") != std::string::npos);

    std::this_thread::sleep_for(640ms);
    CHECK(get(c, "k6") == cc::outcome::compiled); // the probe fails: back-off doubles, silently
    CHECK(*server.calls == calls_when_down + 1);
    CHECK(log.size() == 1);
    std::this_thread::sleep_for(640ms);
    CHECK(get(c, "k7") == cc::outcome::compiled); // still inside 1200 ms: skipped
    CHECK(*server.calls == calls_when_down + 1);

    *server.down = false;
    std::this_thread::sleep_for(800ms);
    CHECK(get(c, "k8") == cc::outcome::compiled); // probe answers (absent), then the store goes through
    CHECK(*server.calls == calls_when_down + 3);
    REQUIRE(log.size() == 2);
    CHECK(log[1].rfind("the remote test-server answers again (after ", 0) == 0);
    CHECK(remote_counts(c.stats())["remote.stores"] == 1);
}

TEST_CASE("tiered_storage::from_env: unset PREFIX_REMOTE is the local storage alone, set, it needs a secret or "
          "PREFIX_REMOTE_INSECURE",
          "[tiered][settings]") {
    temp_dir dir;
    tier_env env;
    env.set("_DIR", (dir.path() / "local").string());

    SECTION("no remote: as directory_storage alone, no remote counters") {
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        auto c = dir_tier_cache::from_env("CCTIERTEST");
        CHECK(err.text().empty());
        REQUIRE(c.enabled());
        CHECK(!c.storage().has_remote());
        CHECK(get(c, "helper") == cc::outcome::compiled);
        CHECK(c.stats().storage_counters.empty());
        CHECK(c.stats().summary().find("remote") == std::string::npos);
    }
    SECTION("a remote without a secret: one line saying how to set one, and the remote is off") {
        env.set("_REMOTE", (dir.path() / "remote").string());
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        auto c = dir_tier_cache::from_env("CCTIERTEST");
        auto const lines = lines_of(err.text());
        REQUIRE(c.enabled());
        CHECK(!c.storage().has_remote());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: CCTIERTEST_REMOTE is set but entries are not authenticated", 0) == 0);
        CHECK(lines[0].find("CCTIERTEST_SECRET_FILE") != std::string::npos);
        CHECK(lines[0].find("CCTIERTEST_REMOTE_INSECURE=1") != std::string::npos);
        CHECK(get(c, "helper") == cc::outcome::compiled);
        CHECK(!fs::exists(dir.path() / "remote"));
    }
    SECTION("with a secret: the remote is used; a bad mode is one line and read-write") {
        compile_cache_test::write_private_file(dir.path() / "secret.key", "a shared secret");
        env.set("_SECRET_FILE", (dir.path() / "secret.key").string());
        env.set("_REMOTE", (dir.path() / "remote").string());
        env.set("_REMOTE_MODE", "sometimes");
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        auto c = dir_tier_cache::from_env("CCTIERTEST");
        auto const lines = lines_of(err.text());
        REQUIRE(c.enabled());
        REQUIRE(c.storage().has_remote());
        CHECK(c.storage().has_local());
        CHECK(c.storage().mode() == cc::remote_mode::read_write);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0] == "compile_cache: CCTIERTEST_REMOTE_MODE=\"sometimes\" is not a remote mode (read-write or "
                          "read-only); using the default, read-write");
        CHECK(get(c, "helper") == cc::outcome::compiled);
        REQUIRE(c.storage().wait_for_uploads(10s));
        CHECK(compile_cache_test::entries_under(dir.path() / "remote") == 1);
    }
    SECTION("insecure, read-only, remote-only") {
        env.set("_REMOTE", (dir.path() / "remote").string());
        env.set("_REMOTE_INSECURE", "1");
        env.set("_REMOTE_MODE", "Read-Only");
        env.set("_REMOTE_ONLY", "yes");
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        auto c = dir_tier_cache::from_env("CCTIERTEST");
        CHECK(err.text().empty());
        REQUIRE(c.enabled());
        CHECK(c.storage().has_remote());
        CHECK(!c.storage().has_local());
        CHECK(c.storage().mode() == cc::remote_mode::read_only);
        CHECK(!fs::exists(dir.path() / "local"));
    }
    SECTION("environment_settings: the directory's, the tier's, with one line each") {
        std::vector<std::string> names;
        for (auto const& s : dir_tier_cache::environment_settings("P")) names.push_back(s.name);
        CHECK(names == std::vector<std::string>{"P_DIR", "P_MAX_SIZE", "P_DURABILITY", "P_SHARED", "P_REMOTE",
                                                "P_REMOTE_MODE", "P_REMOTE_ONLY", "P_REMOTE_INSECURE",
                                                "P_REMOTE_REPLACE_UNAUTHENTIC", "P_REMOTE_BUDGET", "P_REMOTE_UPLOAD",
                                                "P_REMOTE_UPLOAD_QUEUE", "P_REMOTE_UPLOAD_DRAIN", "P_LOG",
                                                "P_SECRET_FILE", "P_SIGNING_KEY_FILE", "P_TRUSTED_KEYS_FILE",
                                                "P_VERIFY", "P_MIN_COMPILE_TIME", "P_RECORD_IDENTITIES",
                                                "P_SINGLE_FLIGHT", "P_WAIT_MAX"});
    }
}

TEST_CASE("tiered_storage: remote counters reach the directory's counters file", "[tiered]") {
    temp_dir dir;
    fs::path const remote = dir.path() / "remote";
    {
        auto a = tier_cache(dir.path() / "a", remote);
        CHECK(get(a, "helper") == cc::outcome::compiled);
    }
    {
        auto b = tier_cache(dir.path() / "b", remote);
        CHECK(get(b, "helper") == cc::outcome::loaded);
    }
    auto const recorded = cc::directory_storage((dir.path() / "b").string()).recorded_counters();
    REQUIRE(recorded.count("remote.hits") == 1);
    CHECK(recorded.at("remote.hits") == 1);
    CHECK(recorded.at("hits") == 1);
}

namespace {
/// A local storage whose every call throws, as a policy may (docs/policies.md).
struct throwing_storage {
    cc::read_result read(cc::key const&, std::string&, std::size_t) { throw std::runtime_error("disk on fire"); }
    std::error_code write(cc::key const&, std::string_view) { throw std::runtime_error("disk on fire"); }
    std::error_code remove(cc::key const&) { throw std::runtime_error("disk on fire"); }
};
using throwing_tier = cc::tiered_storage<throwing_storage, cc::memory_storage>;
using throwing_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, throwing_tier>;
} // namespace

TEST_CASE("tiered_storage: a local storage that throws fails as itself, counted, nothing reaches the host",
          "[tiered]") {
    cc::cache_options no_records;
    no_records.record_identities = false;
    throwing_tier_cache c(throwing_tier(throwing_storage{}, cc::memory_storage{}), no_records);
    CHECK(get(c, "helper") == cc::outcome::compiled); // the local read threw: a read error, then the remote
    CHECK(c.stats().miss_count(cc::miss_reason::read_error) == 1);
    CHECK(c.stats().failure_count(cc::store_failure::write_error) == 1); // the local write threw
    REQUIRE(c.storage().wait_for_uploads(10s));
    CHECK(remote_counts(c.stats())["remote.stores"] == 1);                // the remote still has it
    CHECK(c.storage().remove(key_of(c, "helper").value()) == std::errc::io_error);
}

// --- Background uploads and copies (issue 26) ------------------------------------------

namespace {
/// A gate that a storage's call waits at, until the test opens it (or `bound` passes:
/// then it goes on, and says so), and which says which threads came through: for showing
/// who waits for what without timing anything.
struct gate {
    explicit gate(bool open_now = true, std::chrono::milliseconds wait_bound = 10s)
        : open(open_now), bound(wait_bound) {}
    std::mutex m;
    std::condition_variable cv;
    bool open;
    std::chrono::milliseconds bound;
    std::atomic<int> arrived{0}; ///< calls that came to the gate
    std::atomic<int> passed{0};
    std::atomic<bool> timed_out{false};
    std::atomic<bool> on_host{false}; ///< a call came through on the thread that made the gate
    std::thread::id const host = std::this_thread::get_id();

    void pass() {
        ++arrived;
        if (std::this_thread::get_id() == host) on_host = true;
        std::unique_lock<std::mutex> lock(m);
        if (!cv.wait_for(lock, bound, [&] { return open; })) timed_out = true;
        ++passed;
    }
    void release() {
        std::lock_guard<std::mutex> lock(m);
        open = true;
        cv.notify_all();
    }
    /// Waits, at most `bound`, for a call to come to the gate; whether exactly one came.
    bool one_arrived() const {
        auto const until = std::chrono::steady_clock::now() + bound;
        while (arrived == 0 && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return arrived == 1;
    }
};

/// A remote in memory whose writes pass a gate.
struct gated_remote {
    std::shared_ptr<cc::memory_storage> entries = std::make_shared<cc::memory_storage>();
    std::shared_ptr<gate> writes = std::make_shared<gate>();

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return entries->read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        writes->pass();
        return entries->write(k, bytes);
    }
    std::error_code remove(cc::key const& k) { return entries->remove(k); }
    std::string describe() const { return "gated"; }
};

/// A local directory whose writes pass a gate.
struct gated_local {
    cc::directory_storage dir;
    std::shared_ptr<gate> writes = std::make_shared<gate>();

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return dir.read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        writes->pass();
        return dir.write(k, bytes);
    }
    std::error_code remove(cc::key const& k) { return dir.remove(k); }
};

using gated_tier = cc::tiered_storage<cc::directory_storage, gated_remote>;
using gated_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, gated_tier>;
using gated_local_tier = cc::tiered_storage<gated_local, gated_remote>;
using gated_local_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, gated_local_tier>;
} // namespace

TEST_CASE("tiered_storage: a store's upload is sent by the tier's worker, started at the first one, and the host does "
          "not wait for it",
          "[tiered][upload]") {
    temp_dir dir;
    gated_remote server;
    server.writes = std::make_shared<gate>(false);
    gated_tier_cache c(gated_tier(cc::directory_storage((dir.path() / "local").string()), server));
    std::string out;
    CHECK(c.storage().read(key_of(c, "helper").value(), out, 1 << 20).status == cc::read_status::absent);
    CHECK_FALSE(c.storage().worker_started()); // reads start no thread

    // The remote's writes wait at the closed gate: the host does not.
    CHECK(get(c, "helper") == cc::outcome::compiled);
    CHECK(c.storage().worker_started());
    CHECK(server.writes->passed == 0);
    auto rc = remote_counts(c.stats());
    CHECK(rc["remote.uploads-queued"] == 2); // the entry and its identity record
    CHECK(rc["remote.uploads-sent"] == 0);
    CHECK(get(c, "helper") == cc::outcome::loaded); // locally, meanwhile

    server.writes->release();
    REQUIRE(c.storage().wait_for_uploads(10s));
    rc = remote_counts(c.stats());
    CHECK(rc["remote.uploads-sent"] == 2);
    CHECK(rc["remote.stores"] == 1);
    CHECK(rc["remote.record-stores"] == 1);
    CHECK(rc["remote.uploads-dropped"] == 0);
    CHECK_FALSE(server.writes->on_host);
    CHECK_FALSE(server.writes->timed_out);
}

TEST_CASE("tiered_storage: sync uploads (PREFIX_REMOTE_UPLOAD=sync) send each store before it returns, with no "
          "thread",
          "[tiered][upload]") {
    temp_dir dir;
    tier_env env;
    compile_cache_test::write_private_file(dir.path() / "secret.key", "a shared secret");
    env.set("_DIR", (dir.path() / "local").string());
    env.set("_SECRET_FILE", (dir.path() / "secret.key").string());
    env.set("_REMOTE", (dir.path() / "remote").string());
    SECTION("sync") {
        env.set("_REMOTE_UPLOAD", "Sync");
        auto c = dir_tier_cache::from_env("CCTIERTEST");
        REQUIRE(c.storage().has_remote());
        CHECK(c.storage().upload() == cc::remote_upload::sync);
        CHECK(get(c, "helper") == cc::outcome::compiled);
        CHECK(compile_cache_test::entries_under(dir.path() / "remote") == 1); // already there
        CHECK(remote_counts(c.stats())["remote.stores"] == 1);
        CHECK(remote_counts(c.stats())["remote.uploads-queued"] == 0);
        CHECK_FALSE(c.storage().worker_started());
    }
    SECTION("background by default; bad values are one line each and the default") {
        env.set("_REMOTE_UPLOAD_QUEUE", "lots");
        env.set("_REMOTE_UPLOAD_DRAIN", "a while");
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        auto c = dir_tier_cache::from_env("CCTIERTEST");
        auto const lines = lines_of(err.text());
        REQUIRE(c.storage().has_remote());
        CHECK(c.storage().upload() == cc::remote_upload::background);
        REQUIRE(lines.size() == 2);
        CHECK(lines[0].rfind("compile_cache: CCTIERTEST_REMOTE_UPLOAD_QUEUE=\"lots\" is not a size", 0) == 0);
        CHECK(lines[1].rfind("compile_cache: CCTIERTEST_REMOTE_UPLOAD_DRAIN=\"a while\" is not a duration", 0) == 0);
        CHECK(get(c, "helper") == cc::outcome::compiled);
        CHECK(c.storage().worker_started());
    }
}

TEST_CASE("tiered_storage: a remote hit is the host's before its local copy is made, and the worker copies it, and its "
          "record, after the check",
          "[tiered][upload]") {
    temp_dir dir;
    gated_remote server;
    {
        gated_tier_cache a(gated_tier(cc::directory_storage((dir.path() / "a").string()), server));
        CHECK(get(a, "helper") == cc::outcome::compiled);
    } // (the end drains its uploads)
    REQUIRE(server.entries->size() == 2); // the entry and its identity record

    gated_local local{cc::directory_storage((dir.path() / "b").string()), std::make_shared<gate>(false)};
    auto const local_writes = local.writes;
    gated_local_tier_cache b(gated_local_tier(std::move(local), server));
    CHECK(get(b, "helper") == cc::outcome::loaded);
    CHECK(local_writes->passed == 0); // the copy waits at the gate, the host did not
    CHECK(remote_counts(b.stats())["remote.hits"] == 1);
    CHECK(compile_cache_test::entries_under(dir.path() / "b") == 0);

    local_writes->release();
    REQUIRE(b.storage().wait_for_uploads(10s));
    CHECK(local_writes->passed == 2); // the entry, then its record (read from the remote by the worker)
    CHECK_FALSE(local_writes->on_host);
    CHECK_FALSE(local_writes->timed_out);
    CHECK(compile_cache_test::entries_under(dir.path() / "b") == 1);
}

TEST_CASE("tiered_storage: a full upload queue drops uploads with a count, and never makes the host wait",
          "[tiered][upload]") {
    temp_dir dir;
    gated_remote server;
    server.writes = std::make_shared<gate>(false);
    cc::tier_options t;
    t.upload_queue_bytes = 4096; // a few entries
    gated_tier_cache c(gated_tier(cc::directory_storage((dir.path() / "local").string()), server, t));
    // 20 kernels while the server takes nothing: each store returns at once.
    for (int i = 0; i < 20; ++i) CHECK(get(c, "k" + std::to_string(i)) == cc::outcome::compiled);
    auto rc = remote_counts(c.stats());
    CHECK(rc["remote.uploads-queued"] + rc["remote.uploads-dropped"] == 40);
    CHECK(rc["remote.uploads-dropped"] > 20);
    CHECK(rc["remote.uploads-queued"] >= 2);
    CHECK_FALSE(server.writes->on_host);

    server.writes->release();
    REQUIRE(c.storage().wait_for_uploads(10s));
    rc = remote_counts(c.stats());
    CHECK(rc["remote.uploads-sent"] == rc["remote.uploads-queued"]);
    // What was dropped is still here locally.
    CHECK(compile_cache_test::entries_under(dir.path() / "local") == 20);
}

namespace {
/// A remote in memory with a batch write and claims released in batches, whose writes pass
/// a gate, and which notes each call it gets, in order ("write K", "write_many K K ...",
/// "release K", "release_claim_many K K ...").
struct batching_remote {
    std::shared_ptr<cc::memory_storage> entries = std::make_shared<cc::memory_storage>();
    std::shared_ptr<gate> writes = std::make_shared<gate>();
    std::shared_ptr<std::mutex> calls_mutex = std::make_shared<std::mutex>();
    std::shared_ptr<std::vector<std::string>> calls = std::make_shared<std::vector<std::string>>();

    void note(std::string call) {
        std::lock_guard<std::mutex> lock(*calls_mutex);
        calls->push_back(std::move(call));
    }
    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return entries->read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        writes->pass();
        note("write " + k.hex());
        return entries->write(k, bytes);
    }
    void write_many(std::vector<std::pair<cc::key, std::string_view>> const& batch,
                    std::vector<std::error_code>& out) noexcept {
        writes->pass();
        std::string call = "write_many";
        out.clear();
        for (auto const& [k, bytes] : batch) {
            call += " " + k.hex();
            out.push_back(entries->write(k, bytes));
        }
        note(call);
    }
    std::error_code remove(cc::key const& k) { return entries->remove(k); }
    cc::claim_answer try_claim(cc::key const&, cc::claim_request const&) {
        cc::claim_answer a;
        a.state = cc::claim_state::claimed;
        return a;
    }
    void release_claim(cc::key const& k) { note("release " + k.hex()); }
    void release_claim_many(std::vector<cc::key> const& keys) noexcept {
        std::string call = "release_claim_many";
        for (auto const& k : keys) call += " " + k.hex();
        note(call);
    }
    std::string describe() const { return "batching"; }
};
using batching_tier = cc::tiered_storage<cc::directory_storage, batching_remote>;
} // namespace

TEST_CASE("tiered_storage: the worker sends the uploads it finds queued in one batch write, and the claims' releases "
          "together after the write of their entries",
          "[tiered][upload]") {
    temp_dir dir;
    batching_remote server;
    server.writes = std::make_shared<gate>(false);
    batching_tier t(cc::directory_storage((dir.path() / "local").string()), server);
    std::vector<cc::key> keys;
    for (int i = 0; i < 20; ++i) keys.push_back(cc::key_builder<cc::sha256>().add("batched", i).finish().value());
    cc::claim_request request;
    request.scope = cc::claim_scope::remote;
    // The worker's first call waits at the closed gate while the host queues the rest.
    for (auto const& k : keys) {
        REQUIRE(t.try_claim(k, request).state == cc::claim_state::claimed);
        CHECK_FALSE(t.write(k, "entry of " + k.hex()));
        t.release_claim(k);
    }
    server.writes->release();
    REQUIRE(t.wait_for_uploads(10s));
    CHECK_FALSE(server.writes->on_host);

    auto counts = [&] {
        std::map<std::string, std::uint64_t> m;
        for (auto const& [name, n] : t.storage_counters()) m[name] = n;
        return m;
    }();
    CHECK(counts["remote.uploads-queued"] == 20);
    CHECK(counts["remote.uploads-sent"] == 20);
    CHECK(counts["remote.stores"] == 20);
    // At most the worker's first call went before the host had queued all: the rest, one batch.
    CHECK(counts["remote.upload-batches"] >= 1);
    CHECK(counts["remote.upload-batches"] <= 2);
    std::vector<std::string> const calls = *server.calls;
    std::size_t writes = 0, releases = 0;
    for (auto const& c : calls) {
        writes += c.rfind("write", 0) == 0;
        releases += c.rfind("release", 0) == 0;
    }
    CHECK(writes <= 2);
    CHECK(releases <= 2);
    // Every entry is there, and each release came after the call that wrote its entry.
    for (auto const& k : keys) {
        std::string bytes;
        CHECK(server.entries->read(k, bytes, 1 << 20).status == cc::read_status::found);
        CHECK(bytes == "entry of " + k.hex());
        std::size_t written = calls.size(), released = calls.size();
        for (std::size_t i = 0; i < calls.size(); ++i) {
            if (calls[i].rfind("write", 0) == 0 && calls[i].find(k.hex()) != std::string::npos && written == calls.size())
                written = i;
            if (calls[i].rfind("release", 0) == 0 && calls[i].find(k.hex()) != std::string::npos) released = i;
        }
        INFO(k.hex());
        CHECK(written < calls.size());
        CHECK(released < calls.size());
        CHECK(written < released);
    }
}

TEST_CASE("tiered_storage: at the end, queued uploads get the drain time, and the rest are dropped, counted, and said "
          "in one line",
          "[tiered][upload]") {
    temp_dir dir;
    gated_remote server;
    // The server takes nothing for 1 s: the worker waits there with its first upload.
    server.writes = std::make_shared<gate>(false, 1000ms);
    std::vector<std::string> log;
    {
        cc::tier_options t;
        t.upload_drain = 100ms;
        t.budget = 0ms; // (the 1 s wait is not a slow server to skip here)
        gated_tier_cache c(gated_tier(cc::directory_storage((dir.path() / "local").string()), server, t));
        c.set_logger([&](std::string_view line) {
            if (line.find("(absent)") == std::string_view::npos) log.emplace_back(line);
        });
        for (int i = 0; i < 5; ++i) CHECK(get(c, "k" + std::to_string(i)) == cc::outcome::compiled);
        CHECK(remote_counts(c.stats())["remote.uploads-queued"] == 10);
    }
    // The first upload was under way (it ran to its end); the 9 others waited past the drain time.
    CHECK(server.writes->passed == 1);
    REQUIRE(log.size() == 1);
    CHECK(log[0] == "9 uploads to the remote gated still waited at the end, after 100 ms of drain time: dropped "
                    "(counted remote.uploads-dropped)");
}

TEST_CASE("tiered_storage: the read's own answer tells entry_checked which tier answered, on whatever thread it is "
          "called",
          "[tiered]") {
    temp_dir dir;
    gated_remote server;
    gated_tier tier(cc::directory_storage((dir.path() / "local").string()), server);
    unsigned char const remote_digest[32] = {1};
    unsigned char const local_digest[32] = {2};
    cc::key const remote_key(remote_digest, sizeof remote_digest);
    cc::key const local_key(local_digest, sizeof local_digest);
    REQUIRE(!server.entries->write(remote_key, "remote bytes"));
    REQUIRE(!tier.local().write(local_key, "local bytes"));

    std::string from_remote, from_local;
    cc::read_result const remote_answer = tier.read(remote_key, from_remote, 1 << 20);
    cc::read_result const local_answer = tier.read(local_key, from_local, 1 << 20);
    REQUIRE(remote_answer.status == cc::read_status::found);
    CHECK(remote_answer.origin == gated_tier::from_remote);
    REQUIRE(local_answer.status == cc::read_status::found);
    CHECK(local_answer.origin == 0);

    // Checked on another thread, after another read: the answer says where each came from.
    std::thread([&] {
        tier.entry_checked(local_key, from_local, local_answer, cc::entry_check::sound);
        tier.entry_checked(remote_key, from_remote, remote_answer, cc::entry_check::sound);
    }).join();
    REQUIRE(tier.wait_for_uploads(10s));
    std::map<std::string, std::uint64_t> counts;
    for (auto const& [name, n] : tier.storage_counters()) counts[name] = n;
    CHECK(counts["remote.hits"] == 1);
    std::string copied;
    CHECK(tier.local().read(remote_key, copied, 1 << 20).status == cc::read_status::found);
    CHECK(copied == "remote bytes");
}

TEST_CASE("tiered_storage: a removal is not undone by an upload or a copy of the same key still queued",
          "[tiered][upload]") {
    temp_dir dir;
    gated_remote server;
    server.writes = std::make_shared<gate>(false);
    gated_tier tier(cc::directory_storage((dir.path() / "local").string()), server);
    unsigned char const first_digest[32] = {1};
    unsigned char const removed_digest[32] = {2};
    cc::key const first(first_digest, sizeof first_digest);
    cc::key const removed(removed_digest, sizeof removed_digest);
    REQUIRE(!tier.write(first, "first"));     // its upload waits at the gate, under way
    REQUIRE(!tier.write(removed, "removed")); // queued behind it
    CHECK(!tier.remove(removed));
    server.writes->release();
    REQUIRE(tier.wait_for_uploads(10s));
    std::string out;
    CHECK(tier.read(removed, out, 1 << 20).status == cc::read_status::absent);
    CHECK(server.entries->size() == 1);
}

namespace {
/// A local storage with one lock that its write holds while it waits at a gate, as a
/// SQLite storage or a directory's ledger holds a lock across its I/O.
struct locked_local {
    std::shared_ptr<cc::memory_storage> entries = std::make_shared<cc::memory_storage>();
    std::shared_ptr<std::mutex> lock = std::make_shared<std::mutex>();
    std::shared_ptr<gate> writes = std::make_shared<gate>(false);

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) {
        std::lock_guard<std::mutex> held(*lock);
        return entries->read(k, out, max);
    }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        std::lock_guard<std::mutex> held(*lock);
        writes->pass();
        return entries->write(k, bytes);
    }
    std::error_code remove(cc::key const& k) {
        std::lock_guard<std::mutex> held(*lock);
        return entries->remove(k);
    }
};
} // namespace

TEST_CASE("tiered_storage: a child forked while the worker's copy holds the local storage's lock answers at once, "
          "without its storages",
          "[tiered][upload][fork]") {
    gated_remote server;
    std::string const key_bytes(32, 'k');
    cc::key const k(key_bytes.data(), key_bytes.size());
    REQUIRE_FALSE(server.entries->write(k, "an entry"));
    locked_local local;
    auto const lock = local.lock;
    auto const writes = local.writes;
    cc::tiered_storage<locked_local, gated_remote> tier(std::move(local), server, cc::tier_options{});
    std::string out;
    cc::read_result const answer = tier.read(k, out, 1 << 20);
    REQUIRE(answer.status == cc::read_status::found);
    // As the cache does once the entry checked: the worker copies it, and its write waits
    // at the gate holding the local storage's lock.
    tier.entry_checked(k, out, answer, cc::entry_check::sound);
    auto const until = std::chrono::steady_clock::now() + 10s;
    while (lock->try_lock()) {
        lock->unlock();
        REQUIRE(std::chrono::steady_clock::now() < until);
        std::this_thread::sleep_for(1ms);
    }
    pid_t const pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::alarm(5); // a child stuck on the inherited lock is killed: the parent sees the signal
        std::string o;
        bool const read_absent = tier.read(k, o, 1 << 20).status == cc::read_status::absent;
        bool const write_refused = static_cast<bool>(tier.write(k, "from the child"));
        ::_exit(read_absent && write_refused ? 0 : 1);
    }
    writes->release();
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    REQUIRE(tier.wait_for_uploads(10s));
    CHECK(writes->passed == 1); // the parent's copy went through once the gate opened
}

namespace {
/// A local directory whose writes wait at a gate first, as a slow disk would.
struct slow_local {
    cc::directory_storage dir;
    std::shared_ptr<gate> writes;

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return dir.read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        writes->pass();
        return dir.write(k, bytes); // (its ledger's mutex, which a fork takes, after the gate)
    }
    std::error_code remove(cc::key const& k) { return dir.remove(k); }
};
} // namespace

TEST_CASE("tiered_storage: a fork lets the worker's copy end before it takes the directory storages' locks, "
          "whichever was made first",
          "[tiered][upload][fork]") {
    // A tier whose worker exists before any directory storage: run alone, as ctest runs
    // each case, this process installs the tier's fork handlers first. The library runs
    // them in one order all the same: the worker's, then the directories'.
    gated_remote first_server;
    cc::tiered_storage<cc::memory_storage, gated_remote> first(cc::memory_storage(), first_server,
                                                               cc::tier_options{});
    temp_dir dir;
    gated_remote server;
    std::string const key_bytes(32, 'f');
    cc::key const k(key_bytes.data(), key_bytes.size());
    REQUIRE_FALSE(server.entries->write(k, "an entry"));
    auto const writes = std::make_shared<gate>(false, 20ms); // the copy waits 20 ms, then writes (the fork waits 200)
    cc::tiered_storage<slow_local, gated_remote> tier(slow_local{cc::directory_storage((dir.path() / "local").string()), writes},
                                                      server, cc::tier_options{});
    std::string out;
    cc::read_result const answer = tier.read(k, out, 1 << 20);
    REQUIRE(answer.status == cc::read_status::found);
    tier.entry_checked(k, out, answer, cc::entry_check::sound); // the worker copies it here
    auto const until = std::chrono::steady_clock::now() + 10s;
    while (writes->arrived == 0) {
        REQUIRE(std::chrono::steady_clock::now() < until);
        std::this_thread::sleep_for(1ms);
    }
    pid_t const pid = ::fork(); // while the copy waits at the gate
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::alarm(5);
        // The copy ended before the fork: this child has its storages and finds the entry
        // here (a child forked mid-job answers absent, without them).
        std::string o;
        cc::read_result const r = tier.read(k, o, 1 << 20);
        ::_exit(r.status == cc::read_status::found && o == "an entry" ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    REQUIRE(tier.wait_for_uploads(10s));
    CHECK(writes->passed == 1);
}

// --- The worker's bounds, signals, and deferred records -------------------------------

TEST_CASE("tiered_storage: the cache's end waits for an upload under way no longer than the drain time and its grace, "
          "the upload then ends on its own",
          "[tiered][upload]") {
    temp_dir dir;
    gated_remote server;
    server.writes = std::make_shared<gate>(false, 30s); // far past the bound below
    std::vector<std::string> log;
    {
        cc::tier_options t;
        t.upload_drain = 50ms;
        t.upload_end_grace = 100ms;
        gated_tier_cache c(gated_tier(cc::directory_storage((dir.path() / "local").string()), server, t));
        c.set_logger([&](std::string_view line) {
            if (line.find("(absent)") == std::string_view::npos) log.emplace_back(line);
        });
        CHECK(get(c, "helper") == cc::outcome::compiled);
        auto const until = std::chrono::steady_clock::now() + 10s;
        while (server.writes->arrived == 0) { // the upload under way
            REQUIRE(std::chrono::steady_clock::now() < until);
            std::this_thread::sleep_for(1ms);
        }
    }
    // The cache is gone while its upload still waits at the closed gate.
    CHECK(server.writes->passed == 0);
    REQUIRE(log.size() == 1);
    CHECK(log[0] == "the remote gated: an upload under way did not end within 150 ms of the cache's end; it is left "
                    "to finish on its own");
    server.writes->release();
    auto const until = std::chrono::steady_clock::now() + 10s;
    while (server.writes->passed == 0) {
        REQUIRE(std::chrono::steady_clock::now() < until);
        std::this_thread::sleep_for(1ms);
    }
    CHECK_FALSE(server.writes->timed_out);
}

namespace {
/// The signals blocked in thread `tid` of this process (SigBlk of /proc/self/task/TID/status).
std::optional<unsigned long long> blocked_signals(std::string const& tid) {
    std::ifstream in("/proc/self/task/" + tid + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("SigBlk:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
    return std::nullopt;
}

/// A directory that counts its writes and deferred writes.
struct counting_local {
    cc::directory_storage dir;
    std::shared_ptr<std::atomic<int>> writes = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> deferred = std::make_shared<std::atomic<int>>(0);
    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return dir.read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        ++*writes;
        return dir.write(k, bytes);
    }
    std::error_code write_deferred(cc::key const& k, std::string_view bytes) {
        ++*deferred;
        return dir.write_deferred(k, bytes);
    }
    std::error_code remove(cc::key const& k) { return dir.remove(k); }
};
} // namespace

TEST_CASE("tiered_storage: the worker's thread takes no signal: the host's handlers run on the host's threads",
          "[tiered][upload]") {
    temp_dir dir;
    gated_remote server;
    server.writes = std::make_shared<gate>(false);
    gated_tier_cache c(gated_tier(cc::directory_storage((dir.path() / "local").string()), server));
    CHECK(get(c, "helper") == cc::outcome::compiled);
    REQUIRE(c.storage().worker_started());
    std::string const self = std::to_string(::gettid());
    int others = 0;
    for (auto const& task : fs::directory_iterator("/proc/self/task")) {
        std::string const tid = task.path().filename().string();
        std::optional<unsigned long long> const mask = blocked_signals(tid);
        REQUIRE(mask);
        if (tid == self) continue;
        ++others;
        INFO("thread " << tid << " blocks " << std::hex << *mask);
        for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGALRM, SIGPIPE}) CHECK((*mask >> (sig - 1)) & 1u);
    }
    CHECK(others >= 1); // the worker
    server.writes->release();
    REQUIRE(c.storage().wait_for_uploads(10s));
}

TEST_CASE("tiered_storage: identity records go through the local storage's write_deferred when it has one, and to "
          "the remote as any store",
          "[tiered][upload]") {
    using counting_tier = cc::tiered_storage<counting_local, gated_remote>;
    static_assert(cc::detail::has_write_deferred<counting_tier>::value);
    static_assert(!cc::detail::has_write_deferred<gated_local_tier>::value);
    temp_dir dir;
    gated_remote server;
    counting_local local{cc::directory_storage((dir.path() / "local").string())};
    auto const writes = local.writes;
    auto const deferred = local.deferred;
    cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, counting_tier> c(
        counting_tier(std::move(local), server));
    CHECK(get(c, "helper") == cc::outcome::compiled);
    CHECK(*writes == 1);   // the entry
    CHECK(*deferred == 1); // its identity record
    REQUIRE(c.storage().wait_for_uploads(10s));
    CHECK(remote_counts(c.stats())["remote.stores"] == 1);
    CHECK(remote_counts(c.stats())["remote.record-stores"] == 1);
}

// --- Prefetch: a batch read for the reads that follow -----------------------------------

namespace {
/// A remote in memory with the optional batch read, counting single reads and batches.
struct batch_remote {
    std::shared_ptr<cc::memory_storage> entries = std::make_shared<cc::memory_storage>();
    std::shared_ptr<std::atomic<int>> reads = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> batches = std::make_shared<std::atomic<int>>(0);
    /// When set, a batch's answers, read, wait at this gate before they are returned (the
    /// first `gated_batches` batches only).
    std::shared_ptr<gate> answers;
    std::shared_ptr<std::atomic<int>> gated_batches = std::make_shared<std::atomic<int>>(1 << 30);
    /// When set, a removal waits at this gate before it removes.
    std::shared_ptr<gate> removals;
    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) {
        ++*reads;
        return entries->read(k, out, max);
    }
    void read_many(std::vector<cc::key> const& keys, std::size_t max,
                   std::vector<std::pair<cc::read_result, std::string>>& out) noexcept {
        ++*batches;
        out.clear();
        out.resize(keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) out[i].first = entries->read(keys[i], out[i].second, max);
        if (answers && gated_batches->fetch_sub(1) > 0) answers->pass();
    }
    std::error_code write(cc::key const& k, std::string_view bytes) { return entries->write(k, bytes); }
    std::error_code remove(cc::key const& k) {
        if (removals) removals->pass();
        return entries->remove(k);
    }
};
using batch_tier = cc::tiered_storage<cc::directory_storage, batch_remote>;
using batch_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, batch_tier>;
} // namespace

TEST_CASE("tiered_storage: a prefetch reads the kernels' entries and records in one batch, the gets that follow read "
          "nothing more from the remote, and each entry is still checked",
          "[tiered][prefetch]") {
    static_assert(cc::detail::has_prefetch<batch_tier>::value);
    temp_dir dir;
    batch_remote server;
    std::vector<std::string> const names = {"k0", "k1", "k2"};
    {
        batch_tier_cache a(batch_tier(cc::directory_storage((dir.path() / "a").string()), server));
        for (auto const& n : names) CHECK(get(a, n) == cc::outcome::compiled);
    } // (the end drains its uploads)
    REQUIRE(server.entries->size() == 6); // the entries and their identity records
    // k2's entry on the server is damaged: the batch returns it, the cache's check refuses it.
    batch_tier_cache probe(batch_tier(cc::directory_storage((dir.path() / "probe").string()), server));
    cc::key const damaged = key_of(probe, "k2").value();
    std::string bytes;
    REQUIRE(server.entries->read(damaged, bytes, 1 << 20).status == cc::read_status::found);
    bytes[bytes.size() / 2] ^= 0x55;
    REQUIRE_FALSE(server.entries->write(damaged, bytes));

    *server.reads = 0;
    batch_tier_cache b(batch_tier(cc::directory_storage((dir.path() / "b").string()), server));
    std::vector<cc::key_result> keys;
    std::vector<cc::entry_info> infos;
    for (auto const& n : names) {
        keys.push_back(key_of(b, n));
        infos.push_back({n, "prog.tk", 1});
    }
    b.prefetch(keys, infos);
    CHECK(*server.batches == 1);
    CHECK(remote_counts(b.stats())["remote.prefetch-keys"] == 6);
    CHECK(get(b, "k0") == cc::outcome::loaded);
    CHECK(get(b, "k1") == cc::outcome::loaded);
    CHECK(get(b, "k2") == cc::outcome::compiled); // damaged: a miss, never loaded
    REQUIRE(b.storage().wait_for_uploads(10s));
    auto rc = remote_counts(b.stats());
    CHECK(rc["remote.hits"] == 2);
    CHECK(rc["remote.errors.corrupt"] == 1);
    CHECK(*server.reads == 0); // the entries, the records' copies and k2's record: all from the batch

    // Its directory has them all now (records too): another prefetch asks nothing.
    b.prefetch({keys[0], keys[1]}, {infos[0], infos[1]});
    CHECK(*server.batches == 1);
}

TEST_CASE("tiered_storage: a prefetched answer is used once, and a store or a removal of its key drops it",
          "[tiered][prefetch]") {
    temp_dir dir;
    batch_remote server;
    cc::tier_options t;
    t.upload = cc::remote_upload::sync;
    batch_tier tier = batch_tier::remote_only(server, t);
    batch_tier_cache keys(batch_tier(cc::directory_storage((dir.path() / "keys").string())));
    cc::key const k = key_of(keys, "one").value();
    REQUIRE_FALSE(server.entries->write(k, "first"));
    tier.prefetch({k}, 1 << 20);
    REQUIRE_FALSE(server.entries->write(k, "second")); // (behind the tier's back)
    std::string out;
    CHECK(tier.read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "first"); // the batch's answer
    CHECK(tier.read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "second"); // used once: the remote again
    tier.prefetch({k}, 1 << 20);
    REQUIRE_FALSE(tier.write(k, "third"));
    CHECK(tier.read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "third");
    tier.prefetch({k}, 1 << 20);
    REQUIRE_FALSE(tier.remove(k));
    CHECK(tier.read(k, out, 1 << 20).status == cc::read_status::absent);
    CHECK(*server.batches == 3);
}

TEST_CASE("tiered_storage: a store or a removal made while a prefetch's batch is in flight drops that batch's "
          "answer for its key",
          "[tiered][prefetch]") {
    temp_dir dir;
    batch_remote server;
    server.answers = std::make_shared<gate>(false);
    cc::tier_options t;
    t.upload = cc::remote_upload::sync;
    batch_tier tier = batch_tier::remote_only(server, t);
    batch_tier_cache keys(batch_tier(cc::directory_storage((dir.path() / "keys").string())));
    cc::key const removed = key_of(keys, "removed").value();
    cc::key const stored = key_of(keys, "stored").value();
    cc::key const kept = key_of(keys, "kept").value();
    REQUIRE_FALSE(server.entries->write(removed, "before the removal"));
    REQUIRE_FALSE(server.entries->write(kept, "kept"));
    // The batch reads the three keys (`stored` absent), then waits at the gate while the
    // host removes one and stores another: its answers for those two are stale.
    std::thread prefetching([&] { tier.prefetch({removed, stored, kept}, 1 << 20); });
    bool const read_first = server.answers->one_arrived();
    CHECK_FALSE(tier.remove(removed));
    CHECK_FALSE(tier.write(stored, "stored"));
    server.answers->release();
    prefetching.join();
    REQUIRE(read_first);
    CHECK_FALSE(server.answers->timed_out);
    REQUIRE(*server.batches == 1);
    std::string out;
    CHECK(tier.read(removed, out, 1 << 20).status == cc::read_status::absent); // not the batch's stale entry
    CHECK(tier.read(stored, out, 1 << 20).status == cc::read_status::found);   // not the batch's `absent`
    CHECK(out == "stored");
    int const single_reads = *server.reads;
    CHECK(tier.read(kept, out, 1 << 20).status == cc::read_status::found); // the batch's answer, kept
    CHECK(out == "kept");
    CHECK(*server.reads == single_reads);
}

TEST_CASE("tiered_storage: a batch that reads the server while a removal is on its way there keeps no answer "
          "for that key",
          "[tiered][prefetch]") {
    temp_dir dir;
    batch_remote server;
    server.removals = std::make_shared<gate>(false);
    cc::tier_options t;
    t.upload = cc::remote_upload::sync;
    batch_tier tier = batch_tier::remote_only(server, t);
    batch_tier_cache keys(batch_tier(cc::directory_storage((dir.path() / "keys").string())));
    cc::key const k = key_of(keys, "removed").value();
    REQUIRE_FALSE(server.entries->write(k, "before the removal"));
    // The removal forgets what prefetch holds, then waits on its way to the server...
    std::error_code removed;
    std::thread removing([&] { removed = tier.remove(k); });
    bool const removal_waits = server.removals->one_arrived();
    // ...while a batch reads the server, which still has the entry.
    tier.prefetch({k}, 1 << 20);
    server.removals->release();
    removing.join();
    REQUIRE(removal_waits);
    CHECK_FALSE(removed);
    std::string out;
    CHECK(tier.read(k, out, 1 << 20).status == cc::read_status::absent); // not the batch's stale entry
}

TEST_CASE("tiered_storage: a store made before a batch began does not make it drop that key's answer, "
          "however long an older batch stays in flight",
          "[tiered][prefetch]") {
    temp_dir dir;
    batch_remote server;
    server.answers = std::make_shared<gate>(false);
    *server.gated_batches = 1; // the first batch waits; the second does not
    cc::tier_options t;
    t.upload = cc::remote_upload::sync;
    batch_tier tier = batch_tier::remote_only(server, t);
    batch_tier_cache keys(batch_tier(cc::directory_storage((dir.path() / "keys").string())));
    cc::key const older = key_of(keys, "older").value();
    cc::key const k = key_of(keys, "stored").value();
    std::thread first([&] { tier.prefetch({older}, 1 << 20); }); // in flight until released
    bool const first_waits = server.answers->one_arrived();
    CHECK_FALSE(tier.write(k, "stored")); // while the first batch is in flight
    tier.prefetch({k}, 1 << 20);          // begun after the store: its answer is fresh
    int const single_reads = *server.reads;
    std::string out;
    CHECK(tier.read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "stored");
    CHECK(*server.reads == single_reads); // from the second batch, kept
    server.answers->release();
    first.join();
    REQUIRE(first_waits);
    CHECK(*server.batches == 2);
}

namespace {
/// A directory remote whose writes are slow (a remote's round trip), so that the worker
/// is busy when what follows is queued.
struct slow_writing_remote : cc::directory_storage {
    using cc::directory_storage::directory_storage;
    std::error_code write(cc::key const& k, std::string_view bytes) noexcept {
        std::this_thread::sleep_for(400ms);
        return cc::directory_storage::write(k, bytes);
    }
};

cc::key key_of_bytes(char c) {
    std::string const bytes(32, c);
    return cc::key(bytes.data(), bytes.size());
}

/// What another process of the fleet finds when it claims `k` on the remote directory now
/// (from another thread, through a handle of its own).
cc::claim_state fleet_claim(std::string const& dir, cc::key const& k) {
    cc::claim_state s = cc::claim_state::none;
    std::thread([&] {
        cc::directory_storage other(dir);
        cc::claim_answer const a = other.try_claim(k, cc::claim_request{cc::claim_scope::both, 30000ms});
        s = a.state;
        if (s == cc::claim_state::claimed) other.release_claim(k);
    }).join();
    return s;
}
} // namespace

TEST_CASE("remove(k) drops k's queued uploads, not the queued release of k's remote claim", "[tiered]") {
    for (bool const remove_after : {false, true}) {
        CAPTURE(remove_after);
        temp_dir dir;
        cc::tiered_storage<cc::memory_storage, slow_writing_remote> t(cc::memory_storage{},
                                                                      slow_writing_remote(dir.str()));
        cc::key const k = key_of_bytes('k');
        REQUIRE(!t.write(key_of_bytes('x'), "an entry whose upload keeps the worker busy"));
        std::this_thread::sleep_for(50ms); // the worker has taken it
        REQUIRE(t.try_claim(k, cc::claim_request{cc::claim_scope::both, 30000ms}).state == cc::claim_state::claimed);
        REQUIRE(fleet_claim(dir.str(), k) == cc::claim_state::held);
        t.release_claim(k); // queued behind the upload
        if (remove_after) (void)t.remove(k); // the host invalidates the kernel it just compiled
        REQUIRE(t.wait_for_uploads(5000ms));
        CHECK(fleet_claim(dir.str(), k) == cc::claim_state::claimed);
    }
}

namespace {
/// A remote with a batch read that takes a while (a round trip to a server), as
/// redis_storage's and http_storage's do.
struct slow_batch_remote {
    std::shared_ptr<cc::memory_storage> entries = std::make_shared<cc::memory_storage>();
    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return entries->read(k, out, max); }
    void read_many(std::vector<cc::key> const& keys, std::size_t max,
                   std::vector<std::pair<cc::read_result, std::string>>& out) noexcept {
        std::this_thread::sleep_for(200ms);
        out.clear();
        out.resize(keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) out[i].first = entries->read(keys[i], out[i].second, max);
    }
    std::error_code write(cc::key const& k, std::string_view bytes) { return entries->write(k, bytes); }
    std::error_code remove(cc::key const& k) { return entries->remove(k); }
};

template <class Tier>
std::uint64_t tier_counter(Tier const& t, std::string const& name) {
    for (auto const& [n, v] : t.storage_counters())
        if (n == name) return v;
    return ~std::uint64_t{0};
}
} // namespace

TEST_CASE("overlapping prefetches of one key hold one answer and count its bytes once", "[tiered]") {
    slow_batch_remote remote;
    std::string const value(300, 'v'); // cost 300 + 96 = 396 each
    for (char c : {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}) REQUIRE(!remote.entries->write(key_of_bytes(c), value));
    cc::tier_options options;
    options.upload = cc::remote_upload::sync;
    options.prefetch_bytes = 2000; // room for five answers
    cc::tiered_storage<cc::memory_storage, slow_batch_remote> t(cc::memory_storage{}, remote, options);
    // Four rounds: two threads prefetch the same key at once, then the key is read (which
    // takes the one answer held).
    for (char c : {'a', 'b', 'c', 'd'}) {
        std::thread other([&] { t.prefetch({key_of_bytes(c)}, 1 << 20); });
        t.prefetch({key_of_bytes(c)}, 1 << 20);
        other.join();
        std::string out;
        REQUIRE(t.read(key_of_bytes(c), out, 1 << 20).status == cc::read_status::found);
        REQUIRE(out == value);
    }
    // Nothing is held now: four 396-byte answers (1584 bytes) fit in 2000.
    std::uint64_t const dropped_before = tier_counter(t, "remote.prefetch-dropped");
    t.prefetch({key_of_bytes('e'), key_of_bytes('f'), key_of_bytes('g'), key_of_bytes('h')}, 1 << 20);
    std::uint64_t const dropped_after = tier_counter(t, "remote.prefetch-dropped");
    INFO("remote.prefetch-dropped before the last prefetch: " << dropped_before << ", after: " << dropped_after);
    CHECK(dropped_after == dropped_before);
}

namespace {
/// A remote with claims, that keeps nothing and takes no lock of its own: a child forked
/// from a process using it can wait only on the tier's own locks.
struct lockless_claims_remote {
    cc::read_result read(cc::key const&, std::string& out, std::size_t) noexcept {
        out.clear();
        return {cc::read_status::absent, {}};
    }
    std::error_code write(cc::key const&, std::string_view) noexcept { return {}; }
    std::error_code remove(cc::key const&) noexcept { return {}; }
    cc::claim_answer try_claim(cc::key const&, cc::claim_request const&) noexcept {
        cc::claim_answer a{};
        a.state = cc::claim_state::claimed;
        return a;
    }
    void release_claim(cc::key const&) noexcept {}
};

/// Forks up to `forks` children while `busy` runs on another thread of this process, each
/// child running `in_child` under a 5 s alarm; the children killed by their alarm. Stops at
/// the first such child, or after 15 s.
template <class Busy, class InChild>
int children_that_hang(int forks, Busy busy, InChild in_child) {
    std::atomic<bool> stop{false};
    std::thread busy_thread([&] {
        while (!stop.load(std::memory_order_relaxed)) busy();
    });
    int hung = 0;
    auto const until = std::chrono::steady_clock::now() + 6s; // (on the earlier headers, one hung within it)
    for (int i = 0; i < forks && hung == 0 && std::chrono::steady_clock::now() < until; ++i) {
        pid_t const child = ::fork();
        if (child < 0) break;
        if (child == 0) {
            ::alarm(5);
            in_child();
            ::_exit(0);
        }
        int status = 0;
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) ++hung;
    }
    stop = true;
    busy_thread.join();
    return hung;
}
} // namespace

TEST_CASE("a child forked while another thread claims or stores through the tier is not blocked by its locks",
          "[tiered][fork]") {
    // The tier's preclaim lock (each claim) and foreign lock (each remote store) are held
    // for a few instructions; a child forked in that moment waits at most a second for them.
    cc::tier_options options;
    options.upload = cc::remote_upload::sync;
    auto t = cc::tiered_storage<cc::memory_storage, lockless_claims_remote>::remote_only(lockless_claims_remote{},
                                                                                         options);
    cc::claim_request const request{cc::claim_scope::both, 30000ms};
    SECTION("claims") {
        int const hung = children_that_hang(
            1000,
            [&] {
                for (char c = 'a'; c < 'q'; ++c) {
                    (void)t.try_claim(key_of_bytes(c), request);
                    t.release_claim(key_of_bytes(c));
                }
            },
            [&] {
                (void)t.try_claim(key_of_bytes('z'), request);
                t.release_claim(key_of_bytes('z'));
            });
        CHECK(hung == 0);
    }
    SECTION("stores") {
        int const hung = children_that_hang(
            1000, [&] { (void)t.write(key_of_bytes('s'), "bytes"); },
            [&] { (void)t.write(key_of_bytes('z'), "bytes"); });
        CHECK(hung == 0);
    }
}
