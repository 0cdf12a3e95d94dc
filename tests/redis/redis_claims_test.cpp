// redis_storage's claims (single flight, storage/redis/redis_claims.hpp) against real
// redis-server processes: a release and a take-over change the claim on the server only
// if it is still the one they judged, whatever another process does on the server
// between a client's commands (a relay lets the test act there, as that process would),
// on a server and on a cluster.
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>
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

TEST_CASE("Redis claims for an ACL user without EVAL: a dead owner's claim is still taken over, and a release "
          "(alone or in a batch) still removes the claim",
          "[redis][claims]") {
    server acl;
    admin a(acl.port());
    std::string const ns = unique_name("claims");
    REQUIRE(a({"ACL", "SETUSER", "ci", "on", ">ci-pw", "~" + ns + ":*", "+getrange", "+get", "+set", "+del"}) == "OK");
    cc::redis_options o;
    o.url = "redis://ci:ci-pw@127.0.0.1:" + std::to_string(acl.port());
    o.name_space = ns;
    cc::redis_storage ci(o);
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
