// redis_storage's claims (single flight, storage/redis/redis_claims.hpp) against real
// redis-server processes: a release and a take-over change the claim on the server only
// if it is still the one they judged, whatever another process does on the server
// between a client's commands (a relay lets the test act there, as that process would),
// on a server and on a cluster.
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;
using namespace std::chrono_literals;

namespace {

cc::redis_storage storage_at(std::string const& url, std::string const& name_space) {
    cc::redis_options o;
    o.url = url;
    o.name_space = name_space;
    return cc::redis_storage(o);
}

cc::claim_request remote_claim(std::chrono::milliseconds expiry = 30000ms) {
    return cc::claim_request{cc::claim_scope::remote, expiry};
}

/// Whether a chunk of a client's bytes holds a command that removes or replaces a value
/// that exists (a release's or a take-over's write): DEL, EVAL, EVALSHA.
bool changes_existing(std::string_view chunk) {
    for (std::string_view const command : {"\r\nDEL\r\n", "\r\nEVAL\r\n", "\r\nEVALSHA\r\n"})
        if (chunk.find(command) != std::string_view::npos) return true;
    return false;
}

/// Waits (at most 2 s) until `name` is gone from the server behind `a`.
bool wait_gone(admin& a, std::string const& name) {
    for (int i = 0; i < 400; ++i) {
        if (a({"EXISTS", name}) == "0") return true;
        std::this_thread::sleep_for(5ms);
    }
    return false;
}

/// A claim owner's text as another machine's process writes it.
std::string other_machine_owner(char const* host) { return std::string("pid=777 boot=another-boot start=1 host=") + host; }

/// A claim owner's text naming a process of this machine (its boot id and host name) that
/// is gone: a child, ended and waited for.
std::string gone_owner() {
    pid_t const gone = ::fork();
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    int status = 0;
    REQUIRE(::waitpid(gone, &status, 0) == gone);
    std::string const mine = cc::detail::claim_owner();
    return "pid=" + std::to_string(gone) + " boot=" + cc::detail::claim_field(mine, "boot") +
           " start=1 host=" + cc::detail::claim_field(mine, "host");
}

/// A server of the test's own, an admin connection to it, and a storage that reaches it
/// as the ACL user `ci`, who may use the keys of its namespace with GETRANGE, GET, SET and
/// DEL only: its scripts (EVAL) are refused.
struct server_without_scripts {
    server s;
    admin a{s.port()};
    cc::redis_storage ci = storage_as_ci(a, s.port(), unique_name("claims"));

    static cc::redis_storage storage_as_ci(admin& a, int port, std::string const& ns) {
        REQUIRE(a({"ACL", "SETUSER", "ci", "on", ">ci-pw", "~" + ns + ":*", "+getrange", "+get", "+set", "+del"}) ==
                "OK");
        return storage_at("redis://ci:ci-pw@127.0.0.1:" + std::to_string(port), ns);
    }
};

/// A server of the test's own, an admin connection to it, and a storage that reaches it
/// through a relay (on which the test acts between the storage's commands).
struct relayed_server {
    server s;
    admin a{s.port()};
    relay r{s.port(), 0ms};
    cc::redis_storage client = storage_at(r.url(), unique_name("claims"));
};

} // namespace

TEST_CASE_METHOD(relayed_server,
                 "Redis claims: a claim that expired and was taken by another process is not removed by its first "
                 "owner's release",
                 "[redis][claims]") {
    cc::redis_storage& first = client;
    cc::key const k = key_of(1);
    std::string const name = first.claim_name(k);
    REQUIRE(first.try_claim(k, remote_claim()).state == cc::claim_state::claimed);
    CHECK(a({"GET", name}) == cc::detail::claim_owner());

    // Right before the release's write reaches the server, the claim expires (for real, a
    // millisecond after a PEXPIRE) and another machine's process claims the key, as its
    // SET NX does: between a separate GET and DEL, the DEL removed that process's claim.
    std::string const second = other_machine_owner("machine-b");
    bool acted = false, expired = false;
    std::string taken;
    r.before_passing([&](std::string_view chunk) {
        if (acted || !changes_existing(chunk)) return;
        acted = true;
        a({"PEXPIRE", name, "1"});
        expired = wait_gone(a, name);
        taken = a({"SET", name, second, "NX", "PX", "30000"});
    });
    first.release_claim(k);
    CHECK(acted);
    CHECK(expired);
    CHECK(taken == "OK");
    CHECK(a({"GET", name}) == second); // still the second owner's
    CHECK(std::stoll(a({"PTTL", name})) > 0);

    // Its own claim, still standing, the release removes.
    cc::key const k2 = key_of(2);
    REQUIRE(first.try_claim(k2, remote_claim()).state == cc::claim_state::claimed);
    first.release_claim(k2);
    CHECK(a({"EXISTS", first.claim_name(k2)}) == "0");
}

TEST_CASE_METHOD(relayed_server,
                 "Redis claims: a dead owner's claim taken over by another process meanwhile stays that process's, "
                 "and the late one waits",
                 "[redis][claims]") {
    cc::redis_storage& late = client;
    cc::key const k = key_of(3);
    std::string const name = late.claim_name(k);
    REQUIRE(a({"SET", name, gone_owner(), "PX", "30000"}) == "OK");

    // Right before the late one's take-over reaches the server, another process takes the
    // dead claim over (as its own take-over does): that claim must stand.
    std::string const other = other_machine_owner("machine-c");
    bool acted = false;
    r.before_passing([&](std::string_view chunk) {
        if (acted || !changes_existing(chunk)) return;
        acted = true;
        a({"SET", name, other, "PX", "30000"});
    });
    cc::claim_answer const answer = late.try_claim(k, remote_claim());
    CHECK(acted);
    CHECK(answer.state == cc::claim_state::held);
    CHECK_FALSE(answer.took_over);
    CHECK(answer.holder == "pid 777 on machine-c");
    CHECK(a({"GET", name}) == other);
}

TEST_CASE("Redis claims: a dead owner's claim is taken over in one step, with the claim's expiry",
          "[redis][claims]") {
    server s;
    admin a(s.port());
    std::string const ns = unique_name("claims");
    cc::redis_storage late = storage_at(s.url(), ns);
    cc::key const k = key_of(4);
    std::string const name = late.claim_name(k);
    REQUIRE(a({"SET", name, gone_owner()}) == "OK");
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");

    cc::claim_answer const answer = late.try_claim(k, remote_claim(20000ms));
    CHECK(answer.state == cc::claim_state::claimed);
    CHECK(answer.took_over);
    CHECK(a({"GET", name}) == cc::detail::claim_owner());
    long long const ttl = std::stoll(a({"PTTL", name}));
    CHECK(ttl > 0);
    CHECK(ttl <= 20000);
    // SET NX (refused), GET (whose?), then one script that compares and replaces.
    CHECK(a.calls("eval") == 1);
    CHECK(a.calls("del") == 0);

    late.release_claim(k);
    CHECK(a({"EXISTS", name}) == "0");
    CHECK(a.calls("eval") == 2);
}

namespace {
/// A relay hook that holds each of a client's commands `delay` before passing it on: a
/// server (or a link) that answers that late, set once the storage's connection is made.
std::function<void(std::string_view)> late_by(std::chrono::milliseconds delay) {
    return [delay](std::string_view) { std::this_thread::sleep_for(delay); };
}
} // namespace

TEST_CASE("Redis claims against a slow server: a dead owner's claim taken over, a claim's commands bounded",
          "[redis][claims]") {
    // Commands answered 600 ms late, under a command timeout of 1 s. A dead owner's claim
    // takes three commands (SET NX, GET, the take-over script): taken over, in 1.8 s.
    // Without scripts (an ACL without EVAL) it takes six (SET NX, GET, the refused
    // script, GET, DEL, SET NX), 3.6 s when each had a timeout of its own; a claim's
    // commands now share a deadline of two timeouts, and the call ends by then.
    cc::key const k = key_of(8);
    SECTION("with scripts: taken over") {
        server s;
        admin a(s.port());
        relay r(s.port(), 0ms);
        cc::redis_options o;
        o.url = r.url();
        o.name_space = unique_name("claims");
        o.command_timeout = 1000ms;
        cc::redis_storage slow(o);
        std::string out;
        REQUIRE(slow.read(key_of(99), out, 100).status == cc::read_status::absent); // connected
        std::string const name = slow.claim_name(k);
        REQUIRE(a({"SET", name, gone_owner()}) == "OK");
        r.before_passing(late_by(600ms));
        cc::claim_answer const answer = slow.try_claim(k, remote_claim());
        r.before_passing(nullptr);
        CHECK(answer.state == cc::claim_state::claimed);
        CHECK(answer.took_over);
        CHECK(a({"GET", name}) == cc::detail::claim_owner());
    }
    SECTION("without scripts: the call ends within two timeouts") {
        server s;
        admin a(s.port());
        relay r(s.port(), 0ms);
        std::string const ns = unique_name("claims");
        REQUIRE(a({"ACL", "SETUSER", "ci", "on", ">ci-pw", "~" + ns + ":*", "+getrange", "+get", "+set", "+del"}) ==
                "OK");
        cc::redis_options o;
        o.url = "redis://ci:ci-pw@127.0.0.1:" + std::to_string(r.port());
        o.name_space = ns;
        o.command_timeout = 1000ms;
        cc::redis_storage slow(o);
        std::string out;
        REQUIRE(slow.read(key_of(99), out, 100).status == cc::read_status::absent); // connected
        REQUIRE(a({"SET", slow.claim_name(k), gone_owner()}) == "OK");
        r.before_passing(late_by(600ms));
        auto const started = std::chrono::steady_clock::now();
        cc::claim_answer const answer = slow.try_claim(k, remote_claim());
        auto const took = std::chrono::steady_clock::now() - started;
        r.before_passing(nullptr);
        INFO("try_claim took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                               << " ms, answer " << static_cast<int>(answer.state));
        CHECK(took < 3000ms);
        CHECK(answer.state != cc::claim_state::claimed); // cut before its last SET NX
    }
}

TEST_CASE("Redis claims for an ACL user without EVAL: a dead owner's claim is still taken over, and a release "
          "(alone or in a batch) still removes the claim",
          "[redis][claims]") {
    server_without_scripts acl;
    admin& a = acl.a;
    cc::redis_storage& ci = acl.ci;
    cc::key const k = key_of(5);
    std::string const name = ci.claim_name(k);
    REQUIRE(a({"SET", name, gone_owner()}) == "OK");

    cc::claim_answer const answer = ci.try_claim(k, remote_claim(20000ms));
    CHECK(answer.state == cc::claim_state::claimed);
    CHECK(answer.took_over);
    CHECK(a({"GET", name}) == cc::detail::claim_owner());
    CHECK(ci.try_claim(k, remote_claim()).state == cc::claim_state::held); // (a thread of ours: held)

    ci.release_claim(k); // the script is refused: GET, compare, DEL
    CHECK(a({"EXISTS", name}) == "0");
    // So is the batch's: each key released by GET, compare, DEL.
    std::vector<cc::claim_answer> answers;
    ci.try_claim_many({key_of(6), key_of(7)}, remote_claim(), answers);
    REQUIRE(answers.size() == 2);
    CHECK(answers[0].state == cc::claim_state::claimed);
    CHECK(answers[1].state == cc::claim_state::claimed);
    ci.release_claim_many({key_of(6), key_of(7)});
    CHECK(a({"EXISTS", ci.claim_name(key_of(6))}) == "0");
    CHECK(a({"EXISTS", ci.claim_name(key_of(7))}) == "0");
    // Another machine's claim stays through a release of ours.
    std::string const other = other_machine_owner("machine-e");
    REQUIRE(a({"SET", name, other, "PX", "30000"}) == "OK");
    ci.release_claim(k);
    CHECK(a({"GET", name}) == other);
}

TEST_CASE("Redis claims on a cluster: claimed, released, and another's claim left alone by a release",
          "[redis][claims][cluster]") {
    std::string const ns = unique_name("claims");
    cc::redis_storage s = storage_at(fixture::get().cluster_url(), ns);
    for (std::uint64_t n = 10; n < 16; ++n) { // keys in several slots, so on several masters
        cc::key const k = key_of(n);
        REQUIRE(s.try_claim(k, remote_claim()).state == cc::claim_state::claimed);
        CHECK(s.try_claim(k, remote_claim()).state == cc::claim_state::held); // (a thread of ours: held)
        s.release_claim(k);
        CHECK(s.try_claim(k, remote_claim()).state == cc::claim_state::claimed);
        s.release_claim(k);
    }
    // Another machine's claim (written on the master of its slot): a release leaves it.
    cc::key const k = key_of(20);
    std::string const name = s.claim_name(k);
    std::string const other = other_machine_owner("machine-d");
    for (int const port : fixture::get().cluster_ports()) {
        admin a(port);
        if (a({"SET", name, other, "PX", "30000"}) != "OK") continue; // (MOVED: another master's slot)
        s.release_claim(k);
        CHECK(a({"GET", name}) == other);
        CHECK(s.try_claim(k, remote_claim()).state == cc::claim_state::held);
        a({"DEL", name});
        return;
    }
    FAIL("no master of the cluster took the claim's name");
}

TEST_CASE_METHOD(relayed_server,
                 "Redis claims in a batch: one exchange of SET NX for every key, claimed or held as each key stands, "
                 "and one exchange releases this process's and leaves another's",
                 "[redis][claims][prefetch]") {
    std::vector<cc::key> keys;
    for (std::uint64_t n = 30; n < 40; ++n) keys.push_back(key_of(n));
    // Another machine's process holds the claim of one of them.
    std::string const other = other_machine_owner("machine-f");
    REQUIRE(a({"SET", client.claim_name(keys[3]), other, "PX", "30000"}) == "OK");
    std::string scratch; // (the client connects first: the exchange below is the batch alone)
    REQUIRE(client.read(key_of(99), scratch, 16).status == cc::read_status::absent);
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    std::size_t chunks = 0;
    r.before_passing([&](std::string_view) { ++chunks; });

    std::vector<cc::claim_answer> answers;
    client.try_claim_many(keys, remote_claim(20000ms), answers);
    REQUIRE(answers.size() == keys.size());
    CHECK(chunks == 1); // one pipelined exchange, not one per key
    CHECK(a.calls("set") == keys.size());
    CHECK(a.calls("get") == 0); // (a held claim's holder is not asked)
    for (std::size_t i = 0; i < keys.size(); ++i) {
        INFO(i);
        std::string const name = client.claim_name(keys[i]);
        if (i == 3) {
            CHECK(answers[i].state == cc::claim_state::held);
            CHECK(a({"GET", name}) == other); // left alone
            continue;
        }
        CHECK(answers[i].state == cc::claim_state::claimed);
        CHECK(a({"GET", name}) == cc::detail::claim_owner());
        long long const ttl = std::stoll(a({"PTTL", name}));
        CHECK(ttl > 0);
        CHECK(ttl <= 20000);
        CHECK(client.try_claim(keys[i], remote_claim()).state == cc::claim_state::held); // (a thread of ours: held)
    }
    // Released in a batch too: one exchange; the other machine's claim stays.
    chunks = 0;
    client.release_claim_many(keys);
    CHECK(chunks == 1);
    for (std::size_t i = 0; i < keys.size(); ++i)
        CHECK(a({"EXISTS", client.claim_name(keys[i])}) == (i == 3 ? "1" : "0"));
    CHECK(a({"GET", client.claim_name(keys[3])}) == other);
    // Without `remote` in the scope, nothing is sent and nothing claimed.
    chunks = 0;
    client.try_claim_many(keys, cc::claim_request{cc::claim_scope::local, 1000ms}, answers);
    CHECK(chunks == 0);
    for (auto const& answer : answers) CHECK(answer.state == cc::claim_state::none);
}

TEST_CASE("Redis claims in a batch on a cluster: each key claimed on the master of its slot, and released",
          "[redis][claims][cluster][prefetch]") {
    std::string const ns = unique_name("claims");
    cc::redis_storage s = storage_at(fixture::get().cluster_url(), ns);
    std::vector<cc::key> keys;
    for (std::uint64_t n = 40; n < 52; ++n) keys.push_back(key_of(n)); // in several slots, so on several masters
    std::vector<cc::claim_answer> answers;
    s.try_claim_many(keys, remote_claim(), answers);
    REQUIRE(answers.size() == keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        INFO(i);
        CHECK(answers[i].state == cc::claim_state::claimed);
        CHECK(s.try_claim(keys[i], remote_claim()).state == cc::claim_state::held); // ours, on its master
    }
    s.try_claim_many(keys, remote_claim(), answers); // all held now
    for (auto const& answer : answers) CHECK(answer.state == cc::claim_state::held);
    s.release_claim_many(keys);
    for (cc::key const& k : keys) CHECK(s.try_claim(k, remote_claim()).state == cc::claim_state::claimed);
    s.release_claim_many(keys);
    s.try_claim_many(keys, remote_claim(), answers); // (all released: claimed again)
    for (auto const& answer : answers) CHECK(answer.state == cc::claim_state::claimed);
    s.release_claim_many(keys);
}

namespace {
/// Where the last `command` (RESP, `$N\r\nCOMMAND\r\n`) starts in `chunk`, and the first.
std::size_t first_of(std::string_view chunk, std::string_view command) {
    return chunk.find("\r\n" + std::string(command) + "\r\n");
}
std::size_t last_of(std::string_view chunk, std::string_view command) {
    return chunk.rfind("\r\n" + std::string(command) + "\r\n");
}
std::size_t count_in(std::string_view chunk, std::string_view command) {
    std::string const needle = "\r\n" + std::string(command) + "\r\n";
    std::size_t n = 0;
    for (std::size_t at = chunk.find(needle); at != std::string_view::npos; at = chunk.find(needle, at + 1)) ++n;
    return n;
}
} // namespace

TEST_CASE_METHOD(relayed_server,
                 "Redis writes then releases on a server: the SETs and the release scripts after them go in one "
                 "exchange, and another's claim is left",
                 "[redis][claims][upload]") {
    std::vector<cc::key> keys;
    for (std::uint64_t n = 60; n < 63; ++n) keys.push_back(key_of(n));
    std::vector<cc::claim_answer> answers;
    client.try_claim_many(keys, remote_claim(), answers);
    REQUIRE(answers.size() == keys.size());
    for (auto const& answer : answers) REQUIRE(answer.state == cc::claim_state::claimed);
    cc::key const others = key_of(63); // another machine's claim, released by name here: left alone
    std::string const other = other_machine_owner("machine-g");
    REQUIRE(a({"SET", client.claim_name(others), other, "PX", "30000"}) == "OK");
    std::vector<std::error_code> out;
    client.write_many({{key_of(99), "opens the batch connection"}}, out); // (the exchange below is the batch alone)
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    std::mutex chunks_mutex;
    std::vector<std::string> chunks;
    r.before_passing([&](std::string_view chunk) {
        std::lock_guard<std::mutex> lock(chunks_mutex);
        chunks.emplace_back(chunk);
    });

    std::vector<std::pair<cc::key, std::string>> const stored = {
        {keys[0], "entry 60"}, {keys[1], "entry 61"}, {keys[2], "entry 62"}};
    std::vector<std::pair<cc::key, std::string_view>> entries;
    for (auto const& e : stored) entries.emplace_back(e.first, e.second);
    client.write_many_then_release(entries, {keys[0], keys[1], keys[2], others}, out);
    std::lock_guard<std::mutex> lock(chunks_mutex);
    REQUIRE(out.size() == 3);
    for (auto const& e : out) CHECK_FALSE(e);
    REQUIRE(chunks.size() == 1); // one exchange: the writes and the releases together
    CHECK(count_in(chunks[0], "SET") == 3);
    CHECK(count_in(chunks[0], "EVAL") == 4);
    CHECK(last_of(chunks[0], "SET") < first_of(chunks[0], "EVAL")); // each release after every write
    CHECK(a.calls("set") == 3);
    CHECK(a.calls("eval") == 4);
    for (std::size_t i = 0; i < 3; ++i) {
        INFO(i);
        CHECK(a({"GET", client.redis_key(keys[i])}) == stored[i].second);
        CHECK(a({"EXISTS", client.claim_name(keys[i])}) == "0");
    }
    CHECK(a({"GET", client.claim_name(others)}) == other);
}

TEST_CASE("Redis writes then releases: a write the server refuses still has its claim released, so that its "
          "waiters compile",
          "[redis][claims][upload]") {
    server s;
    admin a(s.port());
    std::string const ns = unique_name("claims");
    // A user who may read the entries and write only the claims: its SET of an entry is refused.
    REQUIRE(a({"ACL", "SETUSER", "claimer", "on", ">claimer-pw", "%R~" + ns + ":*", "~" + ns + ":*:claim", "+@all"}) ==
            "OK");
    cc::redis_options o;
    o.url = "redis://claimer:claimer-pw@127.0.0.1:" + std::to_string(s.port());
    o.name_space = ns;
    cc::redis_storage claimer(o);
    cc::key const k = key_of(64);
    REQUIRE(claimer.try_claim(k, remote_claim()).state == cc::claim_state::claimed);
    REQUIRE(a({"EXISTS", claimer.claim_name(k)}) == "1");
    std::vector<std::error_code> out;
    claimer.write_many_then_release({{k, "entry 64"}}, {k}, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0]); // refused
    CHECK(a({"EXISTS", claimer.redis_key(k)}) == "0");
    CHECK(a({"EXISTS", claimer.claim_name(k)}) == "0"); // released all the same
}

TEST_CASE_METHOD(relayed_server,
                 "Redis reads that claim on a server: one exchange reads every key and claims each absent entry, "
                 "none for a present one, held for another's",
                 "[redis][claims][prefetch]") {
    std::vector<cc::key> entries, keys;
    for (std::uint64_t n = 70; n < 74; ++n) entries.push_back(key_of(n));
    keys = entries;
    for (std::uint64_t n = 170; n < 174; ++n) keys.push_back(key_of(n)); // (read, not claimed: records)
    REQUIRE(a({"SET", client.redis_key(entries[0]), "entry 70"}) == "OK");
    REQUIRE(a({"SET", client.redis_key(entries[1]), "entry 71"}) == "OK");
    std::string const other = other_machine_owner("machine-h");
    REQUIRE(a({"SET", client.claim_name(entries[3]), other, "PX", "30000"}) == "OK");
    std::string scratch; // (the client connects first: the exchange below is the batch alone)
    REQUIRE(client.read(key_of(99), scratch, 16).status == cc::read_status::absent);
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    std::mutex chunks_mutex;
    std::vector<std::string> chunks;
    r.before_passing([&](std::string_view chunk) {
        std::lock_guard<std::mutex> lock(chunks_mutex);
        chunks.emplace_back(chunk);
    });

    std::vector<std::pair<cc::read_result, std::string>> out;
    std::vector<cc::claim_answer> claims;
    client.read_many_claiming(keys, 1 << 20, entries, remote_claim(20000ms), out, claims);
    {
        std::lock_guard<std::mutex> lock(chunks_mutex);
        CHECK(chunks.size() == 1); // one exchange: the reads and the claims together
        chunks.clear();
    }
    REQUIRE(out.size() == keys.size());
    REQUIRE(claims.size() == entries.size());
    CHECK(out[0].first.status == cc::read_status::found);
    CHECK(out[0].second == "entry 70");
    CHECK(out[1].first.status == cc::read_status::found);
    CHECK(out[2].first.status == cc::read_status::absent);
    CHECK(out[3].first.status == cc::read_status::absent);
    for (std::size_t i = 4; i < keys.size(); ++i) CHECK(out[i].first.status == cc::read_status::absent);
    CHECK(claims[0].state == cc::claim_state::none); // the entry is there: no claim
    CHECK(claims[1].state == cc::claim_state::none);
    CHECK(claims[2].state == cc::claim_state::claimed);
    CHECK(claims[3].state == cc::claim_state::held);
    CHECK(a.calls("getrange") == keys.size());
    CHECK(a.calls("eval") == entries.size());
    CHECK(a.calls("set") == 2); // the two absent entries' SET NX (one refused: another's claim)
    CHECK(a({"EXISTS", client.claim_name(entries[0])}) == "0");
    CHECK(a({"EXISTS", client.claim_name(entries[1])}) == "0");
    CHECK(a({"GET", client.claim_name(entries[2])}) == cc::detail::claim_owner());
    long long const ttl = std::stoll(a({"PTTL", client.claim_name(entries[2])}));
    CHECK(ttl > 0);
    CHECK(ttl <= 20000);
    CHECK(a({"GET", client.claim_name(entries[3])}) == other);
    CHECK(client.try_claim(entries[2], remote_claim()).state == cc::claim_state::held); // (ours: held)
    client.release_claim(entries[2]);

    // Without `remote` in the scope: the reads alone, nothing claimed.
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    {
        std::lock_guard<std::mutex> lock(chunks_mutex);
        chunks.clear();
    }
    client.read_many_claiming(keys, 1 << 20, entries, cc::claim_request{cc::claim_scope::local, 1000ms}, out, claims);
    {
        std::lock_guard<std::mutex> lock(chunks_mutex);
        CHECK(chunks.size() == 1);
    }
    CHECK(a.calls("getrange") == keys.size());
    CHECK(a.calls("eval") == 0);
    for (auto const& c : claims) CHECK(c.state == cc::claim_state::none);
}

TEST_CASE("Redis without EVAL for an ACL user: writes then releases, and reads that claim, the claims still taken "
          "after the reads, and released after the writes",
          "[redis][claims][prefetch][upload]") {
    server_without_scripts acl;
    admin& a = acl.a;
    cc::redis_storage& ci = acl.ci;
    std::vector<cc::key> const entries = {key_of(80), key_of(81), key_of(82)};
    REQUIRE(a({"SET", ci.redis_key(entries[0]), "entry 80"}) == "OK");
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    std::vector<std::pair<cc::read_result, std::string>> out;
    std::vector<cc::claim_answer> claims;
    ci.read_many_claiming(entries, 1 << 20, entries, remote_claim(), out, claims);
    REQUIRE(out.size() == 3);
    REQUIRE(claims.size() == 3);
    CHECK(out[0].first.status == cc::read_status::found);
    CHECK(claims[0].state == cc::claim_state::none);
    CHECK(claims[1].state == cc::claim_state::claimed);
    CHECK(claims[2].state == cc::claim_state::claimed);
    CHECK(a.calls("set") == 2); // (the refused scripts ran nothing: the claims are try_claim_many's)
    CHECK(a({"EXISTS", ci.claim_name(entries[0])}) == "0");
    CHECK(a({"GET", ci.claim_name(entries[1])}) == cc::detail::claim_owner());

    std::vector<std::error_code> written;
    ci.write_many_then_release({{entries[1], "entry 81"}, {entries[2], "entry 82"}}, {entries[1], entries[2]}, written);
    REQUIRE(written.size() == 2);
    CHECK_FALSE(written[0]);
    CHECK_FALSE(written[1]);
    CHECK(a({"GET", ci.redis_key(entries[1])}) == "entry 81");
    CHECK(a({"EXISTS", ci.claim_name(entries[1])}) == "0"); // released without the script: GET, compare, DEL
    CHECK(a({"EXISTS", ci.claim_name(entries[2])}) == "0");
}

TEST_CASE("Redis writes then releases, and reads that claim, on a cluster: the claims taken after the reads for the "
          "absent entries, released after the writes",
          "[redis][claims][cluster][prefetch][upload]") {
    std::string const ns = unique_name("claims");
    cc::redis_storage s = storage_at(fixture::get().cluster_url(), ns);
    std::vector<cc::key> entries;
    for (std::uint64_t n = 90; n < 100; ++n) entries.push_back(key_of(n)); // in several slots
    REQUIRE_FALSE(s.write(entries[0], "entry 90"));
    REQUIRE_FALSE(s.write(entries[1], "entry 91"));
    std::vector<std::pair<cc::read_result, std::string>> out;
    std::vector<cc::claim_answer> claims;
    s.read_many_claiming(entries, 1 << 20, entries, remote_claim(), out, claims);
    REQUIRE(out.size() == entries.size());
    REQUIRE(claims.size() == entries.size());
    CHECK(out[0].first.status == cc::read_status::found);
    CHECK(out[1].first.status == cc::read_status::found);
    CHECK(claims[0].state == cc::claim_state::none);
    CHECK(claims[1].state == cc::claim_state::none);
    std::vector<std::pair<cc::key, std::string_view>> writes;
    std::vector<cc::key> releases;
    for (std::size_t i = 2; i < entries.size(); ++i) {
        INFO(i);
        CHECK(out[i].first.status == cc::read_status::absent);
        CHECK(claims[i].state == cc::claim_state::claimed);
        CHECK(s.try_claim(entries[i], remote_claim()).state == cc::claim_state::held); // ours, on its master
        writes.emplace_back(entries[i], "an entry");
        releases.push_back(entries[i]);
    }
    std::vector<std::error_code> written;
    s.write_many_then_release(writes, releases, written);
    REQUIRE(written.size() == writes.size());
    for (std::size_t i = 2; i < entries.size(); ++i) {
        INFO(i);
        CHECK_FALSE(written[i - 2]);
        std::string bytes;
        CHECK(s.read(entries[i], bytes, 1 << 20).status == cc::read_status::found);
        CHECK(s.try_claim(entries[i], remote_claim()).state == cc::claim_state::claimed); // released: claimed again
    }
    s.release_claim_many(releases);
}

TEST_CASE("read_many_claiming without scripts: the reads and the claims after them end within one timeout",
          "[redis][claims]") {
    // Commands answered 700 ms late, under a command timeout of 1 s, for a user without
    // EVAL: the reads (and their refused scripts), then SET NX for the entries found absent.
    // With a timeout each, the claims answered at 1.4 s; they now get what the reads left
    // of the one timeout (a tier's prefetch waits for no more), and find too little.
    server s;
    admin a(s.port());
    relay r(s.port(), 0ms);
    std::string const ns = unique_name("claims");
    REQUIRE(a({"ACL", "SETUSER", "ci", "on", ">ci-pw", "~" + ns + ":*", "+getrange", "+get", "+set", "+del"}) ==
            "OK");
    cc::redis_options o;
    o.url = "redis://ci:ci-pw@127.0.0.1:" + std::to_string(r.port());
    o.name_space = ns;
    o.command_timeout = 1000ms;
    cc::redis_storage slow(o);
    std::string out;
    REQUIRE(slow.read(key_of(99), out, 100).status == cc::read_status::absent); // connected
    std::vector<cc::key> const keys{key_of(1), key_of(2)};
    r.before_passing(late_by(700ms));
    std::vector<std::pair<cc::read_result, std::string>> read;
    std::vector<cc::claim_answer> claims;
    auto const started = std::chrono::steady_clock::now();
    slow.read_many_claiming(keys, 1000, keys, remote_claim(), read, claims);
    auto const took = std::chrono::steady_clock::now() - started;
    r.before_passing(nullptr);
    INFO("read_many_claiming took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
    CHECK(took < 1200ms);
    REQUIRE(read.size() == 2);
    for (auto const& [result, bytes] : read) CHECK(result.status == cc::read_status::absent);
    REQUIRE(claims.size() == 2);
    for (cc::claim_answer const& c : claims) CHECK(c.state != cc::claim_state::claimed);
}
