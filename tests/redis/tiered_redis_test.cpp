// tiered_storage<directory_storage, redis_storage> against a real redis-server: a
// remote hit is copied locally and the next cache sends no command; a stopped, killed
// or restarted server costs a bounded delay and one log line each way; an entry planted
// with a wrong HMAC is never loaded.
#include "catch2_compat.hpp"
#include "support/model.hpp"
#include "support/redis_servers.hpp"
#include "support/tier_machine.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/memory_storage.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;
using namespace std::chrono_literals;

namespace {

using compile_cache_test::model::code_kernel;

using tier = cc::tiered_storage<cc::directory_storage, cc::redis_storage>;

cc::redis_storage remote_at(std::string const& url, std::string const& ns, std::chrono::milliseconds timeout = 1000ms,
                            std::chrono::milliseconds connect_timeout = 100ms) {
    cc::redis_options o;
    o.url = url;
    o.name_space = ns;
    o.connect_timeout = std::min(timeout, connect_timeout);
    o.command_timeout = timeout;
    return cc::redis_storage(o);
}

/// Sync uploads: the remote calls these tests count happen on the host's thread, in order.
cc::tier_options sync_uploads() {
    cc::tier_options t;
    t.upload = cc::remote_upload::sync;
    return t;
}

/// A machine of these tests: HMAC-sealed entries under `secret` (support/tier_machine.hpp).
struct machine : compile_cache_test::tier_machine<cc::redis_storage> {
    machine(std::string const& local, cc::redis_storage remote, std::string secret = "one secret",
            cc::tier_options t = sync_uploads())
        : tier_machine(local, std::move(remote), options(std::move(secret)), std::move(t), "tiered_redis_test") {}
    static cc::cache_options options(std::string secret) { return with_secret(std::move(secret)); }
};

/// Calls of one command the server has answered since its statistics were reset.
std::uint64_t calls_of(admin& a, std::string const& command) { return a.calls(command); }

/// A fresh redis-server, a connection to inspect it, and a scratch folder for the machines' caches.
struct server_and_folder {
    server s;
    admin a{s.port()};
    compile_cache_test::temp_dir dir;
};

} // namespace

TEST_CASE_METHOD(server_and_folder, "Tier on Redis: a remote hit is copied locally, and the next cache loads it sending no command",
          "[redis][tiered]") {
    std::string const ns = unique_name("tier");
    {
        machine ci((dir.path() / "ci").string(), remote_at(s.url(), ns), "one secret", {});
        for (int i = 0; i < 5; ++i) CHECK(ci.get(i) == cc::outcome::compiled);
        REQUIRE(ci.cache.storage().wait_for_uploads(10s)); // (background uploads)
        // Identity records are no lookups and no entries: counted apart.
        CHECK(ci.remote("stores") == 5);
        CHECK(ci.remote("misses") == 5);
        CHECK(ci.remote("record-stores") == 5);
        CHECK(ci.remote("record-misses") == 5);
    }
    {
        machine dev((dir.path() / "dev").string(), remote_at(s.url(), ns), "one secret", {});
        for (int i = 0; i < 5; ++i) CHECK(dev.get(i) == cc::outcome::loaded);
        CHECK(dev.remote("hits") == 5);
        CHECK(dev.cache.stats().summary().find(" remote.hits=5 ") != std::string::npos);
    }
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    {
        machine dev((dir.path() / "dev").string(), remote_at(s.url(), ns));
        for (int i = 0; i < 5; ++i) CHECK(dev.get(i) == cc::outcome::loaded);
        CHECK(dev.remote("hits") == 0);
        CHECK(dev.remote("misses") == 0);
    }
    CHECK(calls_of(a, "getrange") == 0);
    CHECK(calls_of(a, "get") == 0);
    CHECK(calls_of(a, "set") == 0);
}

TEST_CASE("Tier on Redis: a server stopped mid-run costs one timeout, then is skipped, one line each way",
          "[redis][tiered][faults]") {
    server s;
    compile_cache_test::temp_dir dir;
    cc::tier_options t = sync_uploads();
    t.backoff_start = 600ms;
    machine m((dir.path() / "local").string(), remote_at(s.url(), unique_name("stop"), 150ms), "secret", t);
    CHECK(m.get(0) == cc::outcome::compiled);
    s.pause();
    auto const start = std::chrono::steady_clock::now();
    for (int i = 1; i <= 20; ++i) CHECK(m.get(i) == cc::outcome::compiled);
    double const took = ms_since(start);
    INFO("20 kernels with the server stopped took " << took << " ms");
    CHECK(took < 150 + 250); // one timed-out read; the rest skip the server
    CHECK(m.remote("errors.timeout") == 1);
    // 20 kernels, each a read and a write of its entry and of its identity record: 80
    // calls, the first timed out, the rest skipped.
    CHECK(m.remote("skipped") == 79);
    REQUIRE(m.log.size() == 1);
    CHECK(m.log[0].find("failed (timeout: ") != std::string::npos);
    CHECK(m.log[0].find("127.0.0.1:" + std::to_string(s.port())) != std::string::npos);

    s.resume();
    std::this_thread::sleep_for(650ms);
    CHECK(m.get(0) == cc::outcome::loaded); // local
    CHECK(m.get(21) == cc::outcome::compiled);
    REQUIRE(m.log.size() == 2);
    CHECK(m.log[1].find("answers again") != std::string::npos);
    CHECK(m.remote("stores") == 2); // kernels 0 and 21
    CHECK(m.remote("record-stores") == 2);
}

TEST_CASE("Tier on Redis: a killed server is refused and skipped, restarted, it is used again after the back-off",
          "[redis][tiered][faults]") {
    server s;
    compile_cache_test::temp_dir dir;
    cc::tier_options t = sync_uploads();
    t.backoff_start = 300ms;
    std::string const ns = unique_name("kill");
    // (A connect timeout of a second: a killed server's refusal comes at once, and a
    // loaded machine that handles it late still sees a refusal, not a timeout.)
    machine m((dir.path() / "local").string(), remote_at(s.url(), ns, 1000ms, 1000ms), "secret", t);
    s.kill();
    auto const start = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) CHECK(m.get(i) == cc::outcome::compiled);
    CHECK(ms_since(start) < 1000);
    INFO("log: " << (m.log.empty() ? std::string("(none)") : m.log[0]));
    CHECK(m.remote("errors.refused") == 1);
    REQUIRE(m.log.size() == 1);
    CHECK(m.log[0].find("failed (refused: ") != std::string::npos);

    s.restart();
    std::this_thread::sleep_for(350ms);
    CHECK(m.get(10) == cc::outcome::compiled);
    CHECK(m.remote("stores") == 1);
    CHECK(m.remote("record-stores") == 1);
    REQUIRE(m.log.size() == 2);
    CHECK(admin(s.port())({"EXISTS", ns + ":" + m.key(10).value().hex()}) == "1");
}

TEST_CASE_METHOD(server_and_folder, "Tier on Redis: a well-formed entry planted with a wrong HMAC is unauthenticated and never loaded",
          "[redis][tiered][security]") {
    std::string const ns = unique_name("forged");
    machine victim((dir.path() / "victim").string(), remote_at(s.url(), ns), "the team's secret");

    // The attacker's entry: sound in every way but its HMAC (made under another secret).
    cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::memory_storage> forger(cc::memory_storage{},
                                                                                           machine::options("guess"));
    auto const k = victim.key(1);
    REQUIRE(forger.store(k, code_kernel{{666}}));
    std::string forged;
    REQUIRE(forger.storage().read(k.value(), forged, 1 << 20).status == cc::read_status::found);
    REQUIRE(a({"SET", ns + ":" + k.value().hex(), forged}) == "OK");

    CHECK(victim.get(1) == cc::outcome::compiled); // its value checked by get(): {1, 2}, not {666}
    CHECK(victim.cache.stats().miss_count(cc::miss_reason::unauthenticated) == 1);
    CHECK(victim.remote("errors.unauthenticated") == 1);
    CHECK(victim.remote("hits") == 0);
    // Never copied locally: the local entry is the one compiled here.
    cc::directory_storage local((dir.path() / "victim").string());
    std::string bytes;
    REQUIRE(local.read(k.value(), bytes, 1 << 20).status == cc::read_status::found);
    CHECK(bytes != forged);
}

namespace {
/// tier_machine COUNT [MODE] as a fresh process, with MACHINE_* set to `settings` (and
/// MACHINE_LOG=1); its result.
compile_cache_test::process_result run_machine(std::vector<std::string> settings, int count,
                                               std::string const& mode = {}) {
    compile_cache_test::process_spec spec;
    spec.argv = {COMPILE_CACHE_HELPER_tier_machine, std::to_string(count)};
    if (!mode.empty()) spec.argv.push_back(mode);
    settings.push_back("MACHINE_LOG=1");
    spec.env = settings;
    spec.timeout = std::chrono::milliseconds(60000);
    return compile_cache_test::run_process(spec);
}

std::size_t count_of(std::string const& text, std::string const& needle) {
    std::size_t n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}
} // namespace

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: a machine with another secret leaves the fleet's entries alone, in fresh processes",
                 "[redis][tiered][security]") {
    std::string const ns = unique_name("foreign");
    compile_cache_test::write_private_file(dir.path() / "fleet.key", "the fleet's secret");
    compile_cache_test::write_private_file(dir.path() / "other.key", "another machine's secret");
    auto const machine_settings = [&](char const* local, char const* secret) {
        return std::vector<std::string>{"MACHINE_DIR=" + (dir.path() / local).string(), "MACHINE_REMOTE=" + s.url(),
                                        "MACHINE_REMOTE_NAMESPACE=" + ns,
                                        "MACHINE_SECRET_FILE=" + (dir.path() / secret).string()};
    };
    auto const ci = run_machine(machine_settings("ci", "fleet.key"), 3);
    INFO(ci.describe());
    REQUIRE(ci.exited(0));
    CHECK(count_of(ci.out, " compiled\n") == 3);

    // Every entry reads as unauthenticated there: it compiles, and keeps what it compiled
    // locally, but the server keeps the fleet's entries; one line says why.
    auto const stray = run_machine(machine_settings("stray", "other.key"), 3);
    INFO(stray.describe());
    REQUIRE(stray.exited(0));
    CHECK(count_of(stray.out, " compiled\n") == 3);
    CHECK(stray.out.find(" remote.store-skipped.foreign=3") != std::string::npos);
    CHECK(stray.out.find(" remote.stores=0") != std::string::npos);
    CHECK(count_of(stray.err, "secrets seem to differ") == 1);

    auto const dev = run_machine(machine_settings("dev", "fleet.key"), 3);
    INFO(dev.describe());
    REQUIRE(dev.exited(0));
    CHECK(count_of(dev.out, " loaded\n") == 3);

    // Asked to, a machine replaces what does not authenticate under its secret (to heal
    // garbage planted on the server).
    std::vector<std::string> replacing = machine_settings("stray-2", "other.key");
    replacing.push_back("MACHINE_REMOTE_REPLACE_UNAUTHENTIC=1");
    auto const healer = run_machine(replacing, 3);
    INFO(healer.describe());
    REQUIRE(healer.exited(0));
    CHECK(healer.out.find(" remote.store-skipped.foreign=0") != std::string::npos);
    CHECK(healer.out.find(" remote.stores=3") != std::string::npos);
    auto const after = run_machine(machine_settings("dev-2", "fleet.key"), 3);
    INFO(after.describe());
    CHECK(count_of(after.out, " compiled\n") == 3);
}

TEST_CASE("Tier on Redis: a redis:// address of a cluster's node says to use redis+cluster://, never that entries "
          "were evicted",
          "[redis][tiered][cluster]") {
    compile_cache_test::temp_dir dir;
    std::string const node = "127.0.0.1:" + std::to_string(fixture::get().cluster_ports().at(0));
    std::string const ns = unique_name("node");
    {
        // Stored through the cluster: the entries and records are spread over its masters.
        machine ci((dir.path() / "ci").string(), remote_at("redis+cluster://" + node, ns));
        for (int i = 0; i < 12; ++i) CHECK(ci.get(i) == cc::outcome::compiled);
    }
    machine dev((dir.path() / "dev").string(), remote_at("redis://" + node, ns));
    for (int i = 0; i < 12; ++i) dev.get(i);
    for (std::string const& line : dev.log) {
        INFO(line);
        CHECK(line.find("evicted") == std::string::npos);
    }
    cc::redis_failure const f = dev.cache.storage().remote().last_failure();
    CHECK(f.error == cc::redis_errc::cluster_node);
    CHECK(f.text.find("is a node of a Redis Cluster") != std::string::npos);
    CHECK(f.text.find("redis+cluster://" + node) != std::string::npos);
    CHECK(f.error.message().find("redis+cluster://") != std::string::npos);
}

TEST_CASE("Tier on Redis: a cluster whose nodes are all stopped is skipped after one failure, with one line",
          "[redis][tiered][cluster][faults]") {
    cluster c;
    compile_cache_test::temp_dir dir;
    for (std::size_t i = 0; i < c.ports().size(); ++i) c.pause(i);
    // A fresh storage: no slot map yet, and no node to learn it from.
    machine m((dir.path() / "local").string(), remote_at(c.url(), unique_name("stopped"), 150ms));
    for (int i = 0; i < 10; ++i) CHECK(m.get(i) == cc::outcome::compiled);
    for (std::size_t i = 0; i < c.ports().size(); ++i) c.resume(i);
    CHECK(m.remote("errors.other") == 0);
    CHECK(m.remote("errors.timeout") == 1);
    CHECK(m.remote("skipped") == 39); // 10 kernels, 4 calls each: the first timed out
    REQUIRE(m.log.size() == 1);
    INFO(m.log[0]);
    CHECK(m.log[0].find("failed (timeout") != std::string::npos);
}

TEST_CASE("Tier on Redis: one dead cluster master fails only its own slots, the others' entries are still loaded",
          "[redis][tiered][cluster][faults]") {
    // (Full coverage off: the live masters keep serving once the dead one is marked
    // failed, 2 s on, as a cluster with a replica for it would after its failover.)
    cluster c("--cluster-require-full-coverage no");
    compile_cache_test::temp_dir dir;
    std::string const ns = unique_name("master");
    int constexpr kernels = 30;
    {
        machine writer((dir.path() / "writer").string(), remote_at(c.url(), ns, 300ms));
        for (int i = 0; i < kernels; ++i) REQUIRE(writer.get(i) == cc::outcome::compiled);
    }
    machine reader((dir.path() / "reader").string(), remote_at(c.url(), ns, 300ms));
    int on_live_masters = 0;
    {
        admin doomed(c.ports()[2]);
        for (int i = 0; i < kernels; ++i)
            if (doomed({"EXISTS", ns + ":" + reader.key(i).value().hex()}) != "1") ++on_live_masters;
    }
    REQUIRE(on_live_masters > 0);
    REQUIRE(on_live_masters < kernels);
    c.kill(2);
    int loaded = 0;
    for (int i = 0; i < kernels; ++i)
        if (reader.get(i) == cc::outcome::loaded) ++loaded;
    CHECK(loaded == on_live_masters);
    CHECK(reader.remote("hits") == static_cast<std::uint64_t>(on_live_masters));
    CHECK(reader.remote("errors.refused") > 0);
}

TEST_CASE("Tier on Redis: a cluster master stalled during a prefetch fails its own keys, the remote is not skipped",
          "[redis][tiered][cluster][faults][prefetch]") {
    // SIGSTOP: the master's port accepts, nothing answers. Its keys come first in the
    // batch, so that it is asked first: it uses at most half of the batch's time.
    cluster c;
    std::vector<std::string> lines;
    cc::tier_options t;
    t.logger = [&](std::string_view l) { lines.emplace_back(l); };
    auto tiered = cc::tiered_storage<cc::memory_storage, cc::redis_storage>(
        cc::memory_storage(), remote_at(c.url(), unique_name("stall"), 300ms), t);
    cc::redis_storage& s = tiered.remote();
    int const stalled = c.ports()[0];
    std::map<std::uint64_t, int> owner;
    std::vector<cc::key> keys; // the stalled master's first
    for (int pass = 0; pass < 2; ++pass)
        for (std::uint64_t i = 0; i < 30; ++i) {
            if (pass == 0) REQUIRE_FALSE(s.write(key_of(i), "v" + std::to_string(i)));
            owner[i] = owner_port(stalled, cc::detail::redis_hash_slot(s.redis_key(key_of(i))));
            if ((pass == 0) == (owner[i] == stalled)) keys.push_back(key_of(i));
        }
    c.pause(0);
    tiered.prefetch(keys, 100);
    CHECK_FALSE(tiered.remote_skipped());
    std::string bytes;
    int healthy = 0, found = 0;
    for (std::uint64_t i = 0; i < 30; ++i) {
        if (owner[i] == stalled) continue;
        ++healthy;
        if (tiered.read(key_of(i), bytes, 100).status == cc::read_status::found && bytes == "v" + std::to_string(i))
            ++found;
    }
    c.resume(0);
    for (auto const& l : lines) UNSCOPED_INFO("tier line: " << l);
    CHECK(healthy > 0);
    CHECK(found == healthy);
    CHECK_FALSE(tiered.remote_skipped()); // one stalled master is a part of the cluster, not all of it
}

TEST_CASE("Tier on Redis: calls that fail together start one back-off, they do not each double it",
          "[redis][tiered][faults]") {
    server s;
    cc::tier_options t;
    t.backoff_start = 300ms;
    auto remote = tier::remote_only(remote_at(s.url(), unique_name("together"), 400ms), t);
    s.pause();
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&, i] {
            ++ready;
            while (ready < 8) std::this_thread::yield();
            std::string out;
            CHECK(remote.read(key_of(static_cast<std::uint64_t>(i)), out, 1000).status == cc::read_status::absent);
        });
    for (auto& th : threads) th.join();
    CHECK(remote.remote_skipped());
    // One failed outage: skipped for backoff_start (300 ms), not 2^7 times that.
    std::this_thread::sleep_for(700ms);
    CHECK_FALSE(remote.remote_skipped());
    s.resume();
}

TEST_CASE("Tier on Redis: a server that answers slowly is skipped once its waits pass the budget, with one line",
          "[redis][tiered][faults]") {
    server s;
    relay slow(s.port(), 400ms); // (the default budget: 1 s of answers of 200 ms or more)
    compile_cache_test::temp_dir dir;
    machine m((dir.path() / "local").string(), remote_at(slow.url(), unique_name("slow"), 1000ms));
    for (int i = 0; i < 10; ++i) CHECK(m.get(i) == cc::outcome::compiled);
    CHECK(m.remote("errors.timeout") == 0);
    CHECK(m.remote("skipped") > 30);
    REQUIRE(m.log.size() == 1);
    INFO(m.log[0]);
    CHECK(m.log[0].find("slow") != std::string::npos);
    CHECK(m.log[0].find("127.0.0.1:" + std::to_string(slow.port())) != std::string::npos);
}

TEST_CASE("Tier on Redis: a wrong or missing password is one line, without the password, and a back-off",
          "[redis][tiered][faults][security]") {
    server s("--requirepass the-right-one");
    compile_cache_test::temp_dir dir;
    std::string const address = "127.0.0.1:" + std::to_string(s.port());
    for (std::string const& url : {"redis://:a-wrong-one@" + address, "redis://" + address}) {
        INFO(url);
        machine m((dir.path() / unique_name("local")).string(), remote_at(url, unique_name("auth"), 300ms));
        for (int i = 0; i < 5; ++i) CHECK(m.get(i) == cc::outcome::compiled);
        CHECK(m.remote("errors.auth") == 1);
        CHECK(m.remote("skipped") == 19);
        REQUIRE(m.log.size() == 1);
        INFO(m.log[0]);
    INFO(m.log[0]);
        CHECK(m.log[0].find("auth") != std::string::npos);
        CHECK(m.log[0].find(address) != std::string::npos);
        CHECK(m.log[0].find("password") != std::string::npos); // what to check
        CHECK(m.log[0].find("a-wrong-one") == std::string::npos);
    }
}

TEST_CASE("Tier on Redis: a server out of memory (noeviction) refuses stores, and says so in one line",
          "[redis][tiered][faults]") {
    server s("--maxmemory-policy noeviction");
    admin a(s.port());
    REQUIRE(a({"SET", "filler", std::string(3 << 20, 'f')}) == "OK");
    REQUIRE(a({"CONFIG", "SET", "maxmemory", "2mb"}) == "OK"); // (now below what it holds)
    compile_cache_test::temp_dir dir;
    machine m((dir.path() / "local").string(), remote_at(s.url(), unique_name("oom"), 300ms));
    for (int i = 0; i < 5; ++i) CHECK(m.get(i) == cc::outcome::compiled);
    CHECK(m.remote("errors.other") >= 5); // every store
    REQUIRE(m.log.size() == 1);
    INFO(m.log[0]);
    CHECK(m.log[0].find("OOM") != std::string::npos);
}

TEST_CASE("Tier on Redis: a stray reply is one protocol error and one line, and every later call is answered right",
          "[redis][tiered][faults]") {
    server s;
    relay stray(s.port(), 0ms, "$5\r\nstray\r\n");
    compile_cache_test::temp_dir dir;
    cc::tier_options t = sync_uploads();
    t.backoff_start = 1ms; // (the next call after the protocol error is its probe)
    std::string const ns = unique_name("stray");
    {
        machine m((dir.path() / "one").string(), remote_at(stray.url(), ns), "secret", t);
        for (int i = 0; i < 10; ++i) {
            CHECK(m.get(i) == cc::outcome::compiled);
            std::this_thread::sleep_for(2ms);
        }
        CHECK(m.remote("errors.protocol") == 1);
        // 10 entries and their 10 identity records (counted apart); one call met the stray reply.
        CHECK(m.remote("stores") + m.remote("record-stores") >= 18);
        REQUIRE_FALSE(m.log.empty());
        INFO(m.log[0]);
        CHECK(m.log[0].find("protocol") != std::string::npos);
    }
    machine other((dir.path() / "other").string(), remote_at(stray.url(), ns), "secret", t);
    int loaded = 0;
    for (int i = 0; i < 10; ++i)
        if (other.get(i) == cc::outcome::loaded) ++loaded;
    CHECK(loaded >= 9);
    CHECK(other.remote("errors.protocol") == 0);
}

TEST_CASE("Tier on Redis: a user allowed to read only is refused its first store, then only reads, with one line",
          "[redis][tiered][faults][security]") {
    server s;
    admin a(s.port());
    REQUIRE(a({"ACL", "SETUSER", "reader", "on", ">reader-password", "~*", "+getrange", "+select"}) == "OK");
    compile_cache_test::temp_dir dir;
    std::string const ns = unique_name("reader");
    {
        machine writer((dir.path() / "writer").string(), remote_at(s.url(), ns));
        CHECK(writer.get(100) == cc::outcome::compiled);
    }
    std::string const url = "redis://reader:reader-password@127.0.0.1:" + std::to_string(s.port());
    machine reader((dir.path() / "reader").string(), remote_at(url, ns));
    for (int i = 0; i < 5; ++i) CHECK(reader.get(i) == cc::outcome::compiled);
    CHECK(reader.get(100) == cc::outcome::loaded); // reads go on
    CHECK(reader.remote("errors.auth") == 1);
    CHECK(reader.remote("hits") == 1);
    REQUIRE(reader.log.size() == 1);
    INFO(reader.log[0]);
    CHECK(reader.log[0].find("refuses stores") != std::string::npos);
    CHECK(reader.log[0].find("reader-password") == std::string::npos);
}

// --- Background uploads, over a network's round-trip time (issue 26) -------------------

namespace {
/// The latency proxy (helpers/latency_proxy.cpp) as a process of its own in front of
/// 127.0.0.1:`server_port`, each direction `one_way` later; killed at the end.
struct proxy_process {
    compile_cache_test::child_process p;
    int port = 0;
    proxy_process(int server_port, std::chrono::microseconds one_way)
        : p({COMPILE_CACHE_HELPER_latency_proxy, std::to_string(server_port), std::to_string(one_way.count())}) {
        REQUIRE(p.wait_for_line());
        port = std::stoi(p.output());
    }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port); }
};

/// The value of counter `name` in a statistics summary (` name=value `); 0 when absent.
std::uint64_t counter_in(std::string const& summary, std::string const& name) {
    std::string const needle = " " + name + "=";
    std::size_t const at = summary.find(needle);
    if (at == std::string::npos) return 0;
    return std::stoull(summary.substr(at + needle.size()));
}

/// Two fresh processes through `url` (the server, or a proxy in front of it): A prefetches
/// `n` kernels, claiming them all ahead, and waits for a go; B prefetches the same, claims
/// none (A holds them), and waits on A's claims. Then A compiles and stores every kernel,
/// its releases following its uploads: B must load all `n` and compile none (a claim it
/// saw go always had its entry there), and every claim is released in the end.
void claims_ahead_then_waiter(server_and_folder& f, std::string const& url, std::string const& ns, std::size_t n) {
    compile_cache_test::write_private_file(f.dir.path() / "fleet.key", "the fleet's secret");
    auto const settings = [&](char const* local) {
        return std::vector<std::string>{"MACHINE_DIR=" + (f.dir.path() / local).string(), "MACHINE_REMOTE=" + url,
                                        "MACHINE_REMOTE_NAMESPACE=" + ns,
                                        "MACHINE_SECRET_FILE=" + (f.dir.path() / "fleet.key").string(),
                                        "MACHINE_PREFETCH=1"};
    };
    auto const wait_until = [](auto&& done) {
        for (int i = 0; i < 2000 && !done(); ++i) std::this_thread::sleep_for(5ms);
        return done();
    };
    compile_cache_test::process_result ci, b;
    std::thread a_run([&] {
        std::vector<std::string> a_settings = settings("a");
        a_settings.push_back("MACHINE_AFTER_PREFETCH_WAIT_FOR=" + (f.dir.path() / "go").string());
        ci = run_machine(a_settings, static_cast<int>(n));
    });
    CHECK(wait_until([&] { return f.a({"DBSIZE"}) == std::to_string(n); })); // A's claims, taken ahead
    // B prefetches too: the kernels are absent and their claims held, so it claims none,
    // and its first miss waits (its SET NX refused, it asks who holds the claim: a GET).
    // Each later miss reads the server afresh (the batch's answer is dropped: another
    // process was compiling the kernel), and finds what A stored by then, or waits.
    REQUIRE(f.a({"CONFIG", "RESETSTAT"}) == "OK");
    std::thread b_run([&] { b = run_machine(settings("b"), static_cast<int>(n)); });
    CHECK(wait_until([&] { return calls_of(f.a, "get") > 0; })); // B waits on a claim
    compile_cache_test::write_file(f.dir.path() / "go", "go");
    a_run.join();
    b_run.join();
    INFO(ci.describe());
    INFO(b.describe());
    REQUIRE(ci.exited(0));
    REQUIRE(b.exited(0));
    CHECK(count_of(ci.out, " compiled\n") == n);
    CHECK(counter_in(ci.out, "remote.claims-prefetched") == n);
    CHECK(counter_in(ci.out, "remote.uploads-sent") == 2 * n);
    CHECK(count_of(b.out, " loaded\n") == n);
    CHECK(count_of(b.out, " compiled\n") == 0);
    CHECK(counter_in(b.out, "remote.claims-prefetched") == 0);
    CHECK(f.a({"DBSIZE"}) == std::to_string(2 * n)); // entries and records: every claim released
}

/// A fresh process of `tier_machine fork MODE`, with MACHINE_* set to `settings`.
compile_cache_test::process_result run_fork(std::vector<std::string> settings, std::string const& mode) {
    compile_cache_test::process_spec spec;
    spec.argv = {COMPILE_CACHE_HELPER_tier_machine, "fork", mode};
    settings.push_back("MACHINE_LOG=1");
    spec.env = settings;
    spec.timeout = std::chrono::milliseconds(60000);
    return compile_cache_test::run_process(spec);
}
} // namespace

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis behind a 5 ms round trip: uploads go in the background, B's first run loads the "
                 "fleet's kernels and its second sends no command (fresh processes)",
                 "[redis][tiered][upload]") {
    proxy_process proxy(s.port(), std::chrono::microseconds(2500));
    std::string const ns = unique_name("rtt");
    compile_cache_test::write_private_file(dir.path() / "fleet.key", "the fleet's secret");
    auto const settings = [&](char const* local) {
        return std::vector<std::string>{"MACHINE_DIR=" + (dir.path() / local).string(),
                                        "MACHINE_REMOTE=" + proxy.url(), "MACHINE_REMOTE_NAMESPACE=" + ns,
                                        "MACHINE_SECRET_FILE=" + (dir.path() / "fleet.key").string()};
    };
    auto const ci = run_machine(settings("a"), 10);
    INFO(ci.describe());
    REQUIRE(ci.exited(0));
    CHECK(count_of(ci.out, " compiled\n") == 10);
    CHECK(counter_in(ci.out, "remote.uploads-queued") == 20); // 10 entries, 10 identity records
    CHECK(counter_in(ci.out, "remote.uploads-sent") == 20);
    CHECK(counter_in(ci.out, "remote.stores") == 10);

    auto const b1 = run_machine(settings("b"), 10);
    INFO(b1.describe());
    REQUIRE(b1.exited(0));
    CHECK(count_of(b1.out, " loaded\n") == 10);
    CHECK(counter_in(b1.out, "remote.hits") == 10);
    CHECK(counter_in(b1.out, "remote.copies-dropped") == 0);

    // The copies were made by B's worker, before its end: B's second run asks nothing.
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    auto const b2 = run_machine(settings("b"), 10);
    INFO(b2.describe());
    REQUIRE(b2.exited(0));
    CHECK(count_of(b2.out, " loaded\n") == 10);
    CHECK(counter_in(b2.out, "remote.hits") == 0);
    CHECK(calls_of(a, "getrange") == 0);
    CHECK(calls_of(a, "get") == 0);
    CHECK(calls_of(a, "set") == 0);
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis behind a 5 ms round trip: a prefetch reads every kernel's entry and identity record in "
                 "one batch, A's cold run and B's first run send no other read, B's second run sends nothing (fresh "
                 "processes)",
                 "[redis][tiered][prefetch]") {
    proxy_process proxy(s.port(), std::chrono::microseconds(2500));
    std::string const ns = unique_name("prefetch");
    compile_cache_test::write_private_file(dir.path() / "fleet.key", "the fleet's secret");
    auto const settings = [&](char const* local) {
        return std::vector<std::string>{"MACHINE_DIR=" + (dir.path() / local).string(),
                                        "MACHINE_REMOTE=" + proxy.url(), "MACHINE_REMOTE_NAMESPACE=" + ns,
                                        "MACHINE_SECRET_FILE=" + (dir.path() / "fleet.key").string(),
                                        "MACHINE_PREFETCH=1",
                                        // (no claims on the server: this test counts reads and uploads)
                                        "MACHINE_SINGLE_FLIGHT=local"};
    };
    // A, cold: the batch finds nothing; each miss and its record's read are answered from it.
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    auto const ci = run_machine(settings("a"), 10);
    INFO(ci.describe());
    REQUIRE(ci.exited(0));
    CHECK(count_of(ci.out, " compiled\n") == 10);
    CHECK(counter_in(ci.out, "remote.prefetch-batches") == 1);
    CHECK(counter_in(ci.out, "remote.prefetch-keys") == 20); // 10 entries, 10 identity records
    CHECK(counter_in(ci.out, "remote.misses") == 10);
    CHECK(counter_in(ci.out, "remote.record-misses") == 10);
    CHECK(calls_of(a, "getrange") == 20); // the batch's, and no other
    CHECK(calls_of(a, "set") == 20);      // the uploads

    // B, first run with an empty directory: every entry and record comes in the batch.
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    auto const b1 = run_machine(settings("b"), 10);
    INFO(b1.describe());
    REQUIRE(b1.exited(0));
    CHECK(count_of(b1.out, " loaded\n") == 10);
    CHECK(counter_in(b1.out, "remote.hits") == 10);
    CHECK(counter_in(b1.out, "remote.prefetch-batches") == 1);
    CHECK(counter_in(b1.out, "remote.prefetch-keys") == 20);
    CHECK(calls_of(a, "getrange") == 20); // one pipelined exchange: a round trip, not 20
    CHECK(calls_of(a, "set") == 0);

    // B's second run: everything is local (the records too): the prefetch sends nothing.
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    auto const b2 = run_machine(settings("b"), 10);
    INFO(b2.describe());
    REQUIRE(b2.exited(0));
    CHECK(count_of(b2.out, " loaded\n") == 10);
    CHECK(counter_in(b2.out, "remote.prefetch-batches") == 0);
    CHECK(calls_of(a, "getrange") == 0);
    CHECK(calls_of(a, "get") == 0);
    CHECK(calls_of(a, "set") == 0);
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: a prefetch with single flight claims the kernels the server lacks in one more batch, "
                 "and each miss then claims sending no command, its claim released after its uploads, and a claim never "
                 "used is released at the tier's end",
                 "[redis][tiered][prefetch][claims]") {
    std::string const ns = unique_name("preclaim");
    auto m = std::make_unique<machine>((dir.path() / "a").string(), remote_at(s.url(), ns));
    cc::redis_storage const probe = remote_at(s.url(), ns);
    int const n = 10;
    std::vector<cc::key_result> keys; // kernels 0 to n: the last is prefetched and never asked for
    std::vector<cc::entry_info> infos;
    for (int i = 0; i <= n; ++i) {
        keys.push_back(m->key(i));
        infos.push_back({"k" + std::to_string(i), "f.tk", 1});
    }
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    m->cache.prefetch(keys, infos);
    CHECK(calls_of(a, "getrange") == 2 * (n + 1)); // entries and identity records
    CHECK(calls_of(a, "set") == n + 1);            // the entries' claims, in one batch
    CHECK(calls_of(a, "get") == 0);
    CHECK(m->remote("claims-prefetched") == n + 1);
    for (auto const& k : keys) CHECK(a({"GET", probe.claim_name(k.value())}) == cc::detail::claim_owner());

    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    for (int i = 0; i < n; ++i) CHECK(m->get(i) == cc::outcome::compiled);
    // Each miss's entry and record came with the batch and its claim was held already:
    // all it sent is its two uploads (sync here) and, after them, its claim's release (a
    // script, whose GET and DEL the server counts too).
    CHECK(calls_of(a, "set") == 2 * n);
    CHECK(calls_of(a, "eval") == n);
    CHECK(calls_of(a, "get") == n);
    CHECK(calls_of(a, "getrange") == 0);
    for (int i = 0; i < n; ++i) {
        CHECK(a({"EXISTS", probe.claim_name(keys[i].value())}) == "0");
        CHECK(a({"EXISTS", probe.redis_key(keys[i].value())}) == "1");
    }
    CHECK(m->remote("claims-prefetched-unused") == 0);
    // Kernel n was never asked for: its claim stands until the tier's end, which releases it.
    CHECK(a({"GET", probe.claim_name(keys[n].value())}) == cc::detail::claim_owner());
    m.reset();
    CHECK(a({"EXISTS", probe.claim_name(keys[n].value())}) == "0");

    // Single flight on this machine only, a read-only remote, or a prefetch that asks for
    // no claims: the prefetch reads, and claims nothing.
    for (int variant = 0; variant < 3; ++variant) {
        INFO(variant);
        std::string const other_ns = unique_name("preclaim-off");
        cc::tier_options t = sync_uploads();
        if (variant == 1) t.mode = cc::remote_mode::read_only;
        cc::cache_options o = machine::options("one secret");
        if (variant == 0) o.single_flight.scope = cc::claim_scope::local;
        compile_cache_test::tier_machine<cc::redis_storage> off(
            (dir.path() / ("off" + std::to_string(variant))).string(), remote_at(s.url(), other_ns), o, t,
            "tiered_redis_test");
        REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
        off.cache.prefetch(keys, infos, variant == 2 ? cc::prefetch_claims::none : cc::prefetch_claims::take);
        CHECK(calls_of(a, "getrange") == 2 * (n + 1));
        CHECK(calls_of(a, "set") == 0);
        CHECK(off.remote("claims-prefetched") == 0);
    }

    // A claim taken ahead and missed past half its expiry (PREFIX_WAIT_MAX, 300 ms here) is
    // released and claimed again at the miss (never waited on as another's), then released.
    cc::cache_options o = machine::options("one secret");
    o.single_flight.wait_max = 300ms;
    std::string const late_ns = unique_name("preclaim-late");
    compile_cache_test::tier_machine<cc::redis_storage> late((dir.path() / "late").string(),
                                                             remote_at(s.url(), late_ns), o, sync_uploads(),
                                                             "tiered_redis_test");
    late.cache.prefetch({keys[0]}, {infos[0]});
    REQUIRE(late.remote("claims-prefetched") == 1);
    std::this_thread::sleep_for(200ms);
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    CHECK(late.get(0) == cc::outcome::compiled);
    CHECK(late.remote("claims-prefetched-unused") == 1);
    CHECK(calls_of(a, "set") == 3); // the claim again (SET NX), the entry, the record
    CHECK(calls_of(a, "eval") == 2); // the old claim's release, then the new one's
    CHECK(late.cache.stats().waited == 0); // (never waited on its own claim till it expired)
    CHECK(a({"EXISTS", remote_at(s.url(), late_ns).claim_name(keys[0].value())}) == "0");
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: claims taken ahead and never missed are released at the next prefetch past half their "
                 "expiry, and a forked child compiles its parent's claimed kernels without waiting on them",
                 "[redis][tiered][prefetch][claims]") {
    cc::cache_options o = machine::options("one secret");
    o.single_flight.wait_max = 300ms; // claims taken ahead are used within 150 ms
    std::string const ns = unique_name("preclaim-stale");
    compile_cache_test::tier_machine<cc::redis_storage> m((dir.path() / "m").string(), remote_at(s.url(), ns), o,
                                                          sync_uploads(), "tiered_redis_test");
    cc::redis_storage const probe = remote_at(s.url(), ns);
    std::vector<cc::key_result> keys;
    std::vector<cc::entry_info> infos;
    for (int i = 0; i < 4; ++i) {
        keys.push_back(m.key(i));
        infos.push_back({"k" + std::to_string(i), "f.tk", 1});
    }
    // Kernel 0 claimed ahead and never missed: the next prefetch, past half its expiry,
    // releases it (a process that prefetches and never compiles must not hold claims, nor
    // fill its room for them).
    m.cache.prefetch({keys[0]}, {infos[0]});
    REQUIRE(m.remote("claims-prefetched") == 1);
    REQUIRE(a({"GET", probe.claim_name(keys[0].value())}) == cc::detail::claim_owner());
    std::this_thread::sleep_for(200ms);
    m.cache.prefetch({keys[1], keys[2], keys[3]}, {infos[1], infos[2], infos[3]});
    CHECK(m.remote("claims-prefetched") == 4);
    CHECK(m.remote("claims-prefetched-unused") == 1);
    CHECK(a({"EXISTS", probe.claim_name(keys[0].value())}) == "0");
    CHECK(a({"GET", probe.claim_name(keys[1].value())}) == cc::detail::claim_owner());

    // A child forked now (a pre-fork server: the parent prefetches, its workers compile):
    // the parent's claims of kernels 1 to 3 are not the child's, and the child compiles
    // them at once instead of waiting on them until its bound.
    std::string const child = compile_cache_test::run_in_child([&] {
        std::string out;
        for (int i = 1; i < 4; ++i) out += m.get(i) == cc::outcome::compiled ? "c" : "x";
        return out + " waited=" + std::to_string(m.cache.stats().waited);
    });
    CHECK(child == "ccc waited=0");
    // The parent's claims stand (the child released none of them).
    CHECK(a({"GET", probe.claim_name(keys[1].value())}) == cc::detail::claim_owner());
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: a process that prefetches kernels another process claimed ahead claims none of them, "
                 "waits, and loads every one that process compiles (fresh processes)",
                 "[redis][tiered][prefetch][claims]") {
    claims_ahead_then_waiter(*this, s.url(), unique_name("preclaim-wait"), 10);
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: a stalled server under a full upload queue: stores are dropped with a count, the "
                 "host goes on (fresh process)",
                 "[redis][tiered][upload][faults]") {
    proxy_process proxy(s.port(), std::chrono::microseconds(1000));
    std::string const ns = unique_name("stalled");
    compile_cache_test::write_private_file(dir.path() / "fleet.key", "the fleet's secret");
    std::string const local = (dir.path() / "local").string();
    // The kernels' identity records are there locally already (a run without the remote),
    // so that the stores below send nothing from the host's thread: only uploads.
    auto const first = run_machine({"MACHINE_DIR=" + local}, 20);
    INFO(first.describe());
    REQUIRE(first.exited(0));

    s.pause();
    auto const r = run_machine({"MACHINE_DIR=" + local, "MACHINE_REMOTE=" + proxy.url(),
                                "MACHINE_REMOTE_NAMESPACE=" + ns,
                                "MACHINE_SECRET_FILE=" + (dir.path() / "fleet.key").string(),
                                "MACHINE_REMOTE_TIMEOUT=1000", "MACHINE_REMOTE_UPLOAD_QUEUE=4K"},
                               20, "store");
    s.resume();
    INFO(r.describe());
    REQUIRE(r.exited(0));
    CHECK(count_of(r.out, " stored\n") == 20);
    // The worker's first upload waited for the stalled server; meanwhile the host's 40
    // uploads (entries and records) filled the queue, and what did not fit was dropped.
    std::uint64_t const queued = counter_in(r.out, "remote.uploads-queued");
    std::uint64_t const dropped = counter_in(r.out, "remote.uploads-dropped");
    CHECK(queued + dropped == 40);
    CHECK(dropped > 0);
    CHECK(counter_in(r.out, "remote.uploads-sent") == 0);
    // The worker's first batch (the uploads queued when it woke) timed out, and the remote
    // was skipped: the rest of the queue went unsent.
    std::uint64_t const timed_out = counter_in(r.out, "remote.errors.timeout");
    CHECK(timed_out >= 1);
    CHECK(timed_out + counter_in(r.out, "remote.skipped") == queued);
    CHECK(count_of(r.err, "failed (timeout") == 1);
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis behind a 5 ms round trip: 40 stores in quick succession are uploaded in batches, "
                 "every entry and identity record reaches the server, and a fresh process loads them all",
                 "[redis][tiered][upload]") {
    proxy_process proxy(s.port(), std::chrono::microseconds(2500));
    std::string const ns = unique_name("batches");
    compile_cache_test::write_private_file(dir.path() / "fleet.key", "the fleet's secret");
    auto const settings = [&](char const* local) {
        return std::vector<std::string>{"MACHINE_DIR=" + (dir.path() / local).string(),
                                        "MACHINE_REMOTE=" + proxy.url(), "MACHINE_REMOTE_NAMESPACE=" + ns,
                                        "MACHINE_SECRET_FILE=" + (dir.path() / "fleet.key").string(),
                                        "MACHINE_SINGLE_FLIGHT=local"};
    };
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    auto const ci = run_machine(settings("a"), 40, "store");
    INFO(ci.describe());
    REQUIRE(ci.exited(0));
    CHECK(count_of(ci.out, " stored\n") == 40);
    CHECK(counter_in(ci.out, "remote.uploads-queued") == 80); // 40 entries, 40 identity records
    CHECK(counter_in(ci.out, "remote.uploads-sent") == 80);
    CHECK(counter_in(ci.out, "remote.stores") == 40);
    CHECK(counter_in(ci.out, "remote.record-stores") == 40);
    CHECK(counter_in(ci.out, "remote.uploads-dropped") == 0);
    // The worker sent what it found queued together: far fewer calls than uploads.
    std::uint64_t const batches = counter_in(ci.out, "remote.upload-batches");
    CHECK(batches >= 1);
    CHECK(batches < 40);
    CHECK(calls_of(a, "set") == 80);
    CHECK(a({"DBSIZE"}) == "80");

    auto const b = run_machine(settings("b"), 40);
    INFO(b.describe());
    REQUIRE(b.exited(0));
    CHECK(count_of(b.out, " loaded\n") == 40);
    CHECK(counter_in(b.out, "remote.hits") == 40);
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: a batch of uploads to a server that is gone counts each of its entries as failed, "
                 "and the host's stores never waited for it",
                 "[redis][tiered][upload][faults]") {
    cc::tier_options t;
    t.backoff_start = 0ms; // (the batch after the first failure is sent, as a probe)
    t.backoff_max = 0ms;
    std::vector<std::string> log;
    std::mutex log_mutex;
    t.logger = [&](std::string_view line) {
        std::lock_guard<std::mutex> lock(log_mutex);
        log.emplace_back(line);
    };
    tier storage(cc::directory_storage((dir.path() / "local").string()), remote_at(s.url(), unique_name("gone"), 5000ms),
                 t);
    // The server takes nothing: the worker's first call waits for it, the host's stores do not.
    s.pause();
    for (std::uint64_t i = 0; i < 40; ++i) CHECK_FALSE(storage.write(key_of(i), "entry " + std::to_string(i)));
    CHECK_FALSE(storage.wait_for_uploads(0ms)); // still waiting: the stores returned before it
    // For real, while it is stopped (it never runs again: nothing queued is answered): the
    // connection is closed, and the next ones are refused.
    ::kill(s.pid(), SIGKILL);
    s.kill();
    REQUIRE(storage.wait_for_uploads(10s));
    std::map<std::string, std::uint64_t> c;
    for (auto const& [name, n] : storage.storage_counters()) c[name] = n;
    std::uint64_t errors = 0;
    for (auto const& [name, n] : c)
        if (name.rfind("remote.errors.", 0) == 0) errors += n;
    CHECK(c["remote.uploads-queued"] == 40);
    CHECK(c["remote.uploads-sent"] == 0);
    CHECK(c["remote.stores"] == 0);
    CHECK(errors + c["remote.skipped"] == 40);
    CHECK(errors >= 2);                       // the first call's, and the batch's after it
    CHECK(c["remote.upload-batches"] >= 1);   // the uploads queued meanwhile went as one batch
    // Every store is here locally.
    for (std::uint64_t i = 0; i < 40; ++i) {
        std::string bytes;
        CHECK(storage.local().read(key_of(i), bytes, 1 << 20).status == cc::read_status::found);
    }
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: a host that forks after a store, while the worker uploads or once it is idle: both "
                 "processes use the server at once on connections of their own, and every upload of both reaches it "
                 "(fresh processes)",
                 "[redis][tiered][upload][fork]") {
    proxy_process proxy(s.port(), std::chrono::microseconds(30000)); // (an upload takes 60 ms)
    compile_cache_test::write_private_file(dir.path() / "fleet.key", "the fleet's secret");
    for (std::string const mode : {"mid-upload", "idle"}) {
        INFO(mode);
        std::string const ns = unique_name("fork");
        auto const settings = [&](std::string const& local) {
            return std::vector<std::string>{"MACHINE_DIR=" + (dir.path() / (local + mode)).string(),
                                            "MACHINE_REMOTE=" + proxy.url(), "MACHINE_REMOTE_NAMESPACE=" + ns,
                                            "MACHINE_SECRET_FILE=" + (dir.path() / "fleet.key").string()};
        };
        auto const host = run_fork(settings("host-"), mode);
        INFO(host.describe());
        REQUIRE(host.exited(0));
        CHECK(host.out.find("child exit 0\n") != std::string::npos);
        CHECK(count_of(host.out, "child k") == 2);
        CHECK(count_of(host.out, "parent k") == 2);
        // Sharing the parent's socket, either would read the other's replies (protocol
        // errors, misses); the child closed its copy unused and connected anew.
        CHECK(host.out.find("remote.errors.") == std::string::npos);
        CHECK(host.err.find("failed (") == std::string::npos);

        auto const dev = run_machine(settings("dev-"), 4);
        INFO(dev.describe());
        REQUIRE(dev.exited(0));
        CHECK(dev.out.find("k0 loaded\n") != std::string::npos); // under way at the fork: sent by the parent
        CHECK(dev.out.find("k3 loaded\n") != std::string::npos);
        // The child started a worker of its own, which sent its uploads before its end.
        CHECK(dev.out.find("k1 loaded\n") != std::string::npos);
        CHECK(dev.out.find("k2 loaded\n") != std::string::npos);
    }
}

// --- The claims' exchanges: releases with the uploads, claims with the prefetch's reads ---

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: the worker sends a batch's uploads and the claims' releases after them in one "
                 "exchange on a server",
                 "[redis][tiered][upload][claims]") {
    relay r(s.port(), 0ms);
    std::string const ns = unique_name("release-with-uploads");
    tier storage(cc::directory_storage((dir.path() / "local").string()), remote_at(r.url(), ns, 5000ms),
                 cc::tier_options{});
    cc::redis_storage const probe = remote_at(s.url(), ns);
    int const n = 5;
    cc::claim_request const both{cc::claim_scope::both, 30000ms};
    for (int i = 0; i < n; ++i) REQUIRE(storage.try_claim(key_of(i), both).state == cc::claim_state::claimed);
    for (int i = 0; i < n; ++i) REQUIRE(a({"GET", probe.claim_name(key_of(i))}) == cc::detail::claim_owner());

    // The worker's first upload (a plug) is held in the relay until every job below is
    // queued, so that they make the worker's next batch.
    std::mutex m;
    std::condition_variable cv;
    bool plugged = false, unplug = false, after = false;
    std::vector<std::string> chunks; // the client's chunks once the plug is let go
    r.before_passing([&](std::string_view chunk) {
        std::unique_lock<std::mutex> lock(m);
        if (after) {
            chunks.emplace_back(chunk);
            return;
        }
        if (plugged || chunk.find("\r\nSET\r\n") == std::string_view::npos) return;
        plugged = true;
        cv.notify_all();
        cv.wait_for(lock, 10s, [&] { return unplug; });
    });
    CHECK_FALSE(storage.write(key_of(100), "the plug"));
    {
        std::unique_lock<std::mutex> lock(m);
        REQUIRE(cv.wait_for(lock, 10s, [&] { return plugged; }));
    }
    for (int i = 0; i < n; ++i) {
        CHECK_FALSE(storage.write(key_of(i), "entry " + std::to_string(i)));
        storage.release_claim(key_of(i)); // (queued after its upload)
    }
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    {
        std::lock_guard<std::mutex> lock(m);
        after = true;
        unplug = true;
    }
    cv.notify_all();
    REQUIRE(storage.wait_for_uploads(10s));
    std::lock_guard<std::mutex> lock(m);
    REQUIRE(chunks.size() == 1); // one exchange: the uploads, then the releases
    std::string const& chunk = chunks[0];
    std::size_t sets = 0, evals = 0, last_set = 0, first_eval = std::string::npos;
    for (std::size_t at = chunk.find("\r\nSET\r\n"); at != std::string::npos; at = chunk.find("\r\nSET\r\n", at + 1))
        ++sets, last_set = at;
    for (std::size_t at = chunk.find("\r\nEVAL\r\n"); at != std::string::npos; at = chunk.find("\r\nEVAL\r\n", at + 1))
        ++evals, first_eval = std::min(first_eval, at);
    CHECK(sets == n);
    CHECK(evals == n);
    CHECK(last_set < first_eval);
    CHECK(calls_of(a, "set") == n + 1); // (the plug's reached the server after the reset)
    CHECK(calls_of(a, "eval") == n);
    for (int i = 0; i < n; ++i) {
        INFO(i);
        CHECK(a({"GET", probe.redis_key(key_of(i))}) == "entry " + std::to_string(i));
        CHECK(a({"EXISTS", probe.claim_name(key_of(i))}) == "0");
    }
    std::map<std::string, std::uint64_t> c;
    for (auto const& [name, count] : storage.storage_counters()) c[name] = count;
    CHECK(c["remote.uploads-sent"] == n + 1);
    CHECK(c["remote.upload-batches"] == 1); // (the plug went alone, as a single write)
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis: a prefetch with single flight claims the absent kernels in its one exchange on a "
                 "server, and a machine whose kernels the server has claims none",
                 "[redis][tiered][prefetch][claims]") {
    relay r(s.port(), 0ms);
    std::string const ns = unique_name("preclaim-one");
    cc::redis_storage const probe = remote_at(s.url(), ns);
    std::atomic<std::size_t> chunks{0};
    r.before_passing([&](std::string_view) { ++chunks; });
    int const n = 10;
    std::vector<cc::key_result> keys;
    std::vector<cc::entry_info> infos;
    {
        machine m((dir.path() / "a").string(), remote_at(r.url(), ns));
        for (int i = 0; i < n; ++i) {
            keys.push_back(m.key(i));
            infos.push_back({"k" + std::to_string(i), "f.tk", 1});
        }
        REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
        chunks = 0;
        m.cache.prefetch(keys, infos);
        CHECK(chunks == 1); // the connection's first exchange: the reads and the claims
        CHECK(calls_of(a, "getrange") == 2 * n); // entries and identity records
        CHECK(calls_of(a, "eval") == n);         // a claim for each entry, if absent
        CHECK(calls_of(a, "set") == n);
        CHECK(m.remote("claims-prefetched") == n);
        for (auto const& k : keys) CHECK(a({"GET", probe.claim_name(k.value())}) == cc::detail::claim_owner());
        for (int i = 0; i < n; ++i) CHECK(m.get(i) == cc::outcome::compiled);
        CHECK(m.remote("claims-prefetched-unused") == 0);
        CHECK(m.cache.stats().waited == 0);
    }
    for (auto const& k : keys) CHECK(a({"EXISTS", probe.claim_name(k.value())}) == "0");

    // B, an empty directory and a warm server: the same one exchange, and no claim.
    machine b((dir.path() / "b").string(), remote_at(r.url(), ns));
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    chunks = 0;
    b.cache.prefetch(keys, infos);
    CHECK(chunks == 1);
    CHECK(calls_of(a, "getrange") == 2 * n);
    CHECK(calls_of(a, "set") == 0);
    CHECK(b.remote("claims-prefetched") == 0);
    for (int i = 0; i < n; ++i) CHECK(b.get(i) == cc::outcome::loaded);
    CHECK(calls_of(a, "getrange") == 2 * n); // (each hit answered by the batch)
    CHECK(calls_of(a, "set") == 0);
    CHECK(calls_of(a, "del") == 0);
    CHECK(b.remote("claims-prefetched-unused") == 0);
    CHECK(a({"DBSIZE"}) == std::to_string(2 * n)); // entries and records: no claim
}

TEST_CASE("Tier on Redis: a prefetch on a cluster, or for a user without EVAL, still claims the absent kernels "
          "ahead, after its reads, and each miss compiles without waiting",
          "[redis][tiered][prefetch][claims][cluster]") {
    server acl;
    admin a(acl.port());
    compile_cache_test::temp_dir dir;
    for (std::string const where : {"cluster", "no EVAL"}) {
        INFO(where);
        std::string const ns = unique_name("preclaim-fallback");
        std::string url = fixture::get().cluster_url();
        if (where == "no EVAL") {
            REQUIRE(a({"ACL", "SETUSER", "ci", "on", ">ci-pw", "~" + ns + ":*", "+getrange", "+get", "+set", "+del"}) ==
                    "OK");
            url = "redis://ci:ci-pw@127.0.0.1:" + std::to_string(acl.port());
        }
        machine m((dir.path() / where).string(), remote_at(url, ns));
        cc::redis_storage probe = remote_at(url, ns);
        int const n = 8;
        std::vector<cc::key_result> keys;
        std::vector<cc::entry_info> infos;
        for (int i = 0; i < n; ++i) {
            keys.push_back(m.key(i));
            infos.push_back({"k" + std::to_string(i), "f.tk", 1});
        }
        m.cache.prefetch(keys, infos);
        CHECK(m.remote("claims-prefetched") == n);
        cc::claim_request const remote_only{cc::claim_scope::remote, 1000ms};
        for (auto const& k : keys) // (this process's: held)
            CHECK(probe.try_claim(k.value(), remote_only).state == cc::claim_state::held);
        for (int i = 0; i < n; ++i) CHECK(m.get(i) == cc::outcome::compiled);
        CHECK(m.cache.stats().waited == 0);
        CHECK(m.remote("claims-prefetched-unused") == 0);
        for (auto const& k : keys) {
            std::string bytes;
            CHECK(probe.read(k.value(), bytes, 1 << 20).status == cc::read_status::found);
            cc::claim_answer const again = probe.try_claim(k.value(), remote_only);
            CHECK(again.state == cc::claim_state::claimed); // released after its uploads
            if (again.state == cc::claim_state::claimed) probe.release_claim(k.value());
        }
    }
}

TEST_CASE_METHOD(server_and_folder,
                 "Tier on Redis behind a 5 ms round trip: a process that waits on another's claims loads every kernel "
                 "that process compiles, its releases sent with its uploads (fresh processes)",
                 "[redis][tiered][prefetch][claims][upload]") {
    proxy_process proxy(s.port(), std::chrono::microseconds(2500));
    claims_ahead_then_waiter(*this, proxy.url(), unique_name("release-rtt"), 20);
}

namespace {
std::atomic<bool> health_held{false};    // the holding thread is inside the tier's health lock
std::atomic<bool> health_release{false};
void hold_health() { // (tier_health_held_for_testing: on the holding thread only)
    health_held = true;
    while (!health_release) std::this_thread::sleep_for(1ms);
}
} // namespace

// A std::mutex another thread holds when the process forks stays held for ever in the
// child. The tier's health lock is held for a few loads and stores at each remote call;
// a child forked in that moment now waits for it at most a second, then skips the remote.
TEST_CASE("Tier on Redis: a child forked while another thread admits a remote call is not blocked by that lock",
          "[redis][tiered][faults]") {
    auto tiered = cc::tiered_storage<cc::memory_storage, cc::redis_storage>(
        cc::memory_storage(), remote_at(fixture::get().server_url(), unique_name("fork"), 300ms));
    REQUIRE_FALSE(tiered.remote().write(key_of(1), "on the server"));
    std::thread holder([&] {
        cc::detail::tier_health_held_for_testing = &hold_health;
        std::string out;
        (void)tiered.read(key_of(2), out, 100);
        cc::detail::tier_health_held_for_testing = nullptr;
    });
    while (!health_held) std::this_thread::sleep_for(1ms);
    pid_t const child = ::fork();
    if (child == 0) {
        std::string out;
        auto const start = std::chrono::steady_clock::now();
        cc::read_result const r = tiered.read(key_of(1), out, 100); // (a miss: the remote is skipped)
        bool const skipped = tiered.remote_skipped();
        ::_exit(r.status != cc::read_status::error && skipped && ms_since(start) < 3000 ? 0 : 1);
    }
    health_release = true;
    holder.join();
    REQUIRE(child > 0);
    int status = 0;
    pid_t done = 0;
    auto const until = std::chrono::steady_clock::now() + 10s;
    while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(10ms);
    if (done == 0) { // blocked: the test's failure, and the child goes
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
    }
    INFO("the child " << (done == 0 ? "was still blocked after 10 s" : "ended"));
    CHECK(done == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    // The parent's lock was given back: its remote is used as before.
    std::string out;
    CHECK(tiered.read(key_of(1), out, 100).status == cc::read_status::found);
}
