// tinyk with single flight across machines: 4 fresh tinyk processes on each of two
// "machines" (two cache directories) sharing one real redis-server start chain40 at the
// same moment; the remote claims make each kernel compile about once in the whole fleet.
// A read-only remote takes no claim; redis_storage's claims as the storage answers them. The server is the test's own, started through the
// Redis tests' fixture script on 127.0.0.1 and stopped even when the test fails.
#include "support/redis_servers.hpp"
#include "tinyk_support.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace tinyk_test;
namespace redis_test = compile_cache_test::redis;

namespace {

struct fleet {
    temp_dir root{"tinyk-fleet"};
    redis_test::server server;
    fs::path program = root.path() / "src" / "chain.tk";
    std::string ns = redis_test::unique_name("tinyk-flight");

    fleet() {
        fs::create_directories(root.path() / "src");
        fs::create_directories(root.path() / "home");
        compile_cache_test::write_private_file(root.path() / "secret.key", "the fleet's shared secret\n");
        write_file(program, read_file(TINYK_CHAIN40));
    }

    tinyk_run on(std::string const& machine, std::vector<std::string> const& more = {}) const {
        tinyk_run r;
        r.args = {"run", "-v", "--stats", program.string(), "--call", "main", "1"};
        r.home = (root.path() / "home").string();
        r.cwd = root.str();
        r.extra_env = {"TINYK_CACHE_DIR=" + (root.path() / machine).string(), "TINYK_CACHE_REMOTE=" + server.url(),
                       "TINYK_CACHE_REMOTE_NAMESPACE=" + ns,
                       "TINYK_CACHE_SECRET_FILE=" + (root.path() / "secret.key").string()};
        r.extra_env.insert(r.extra_env.end(), more.begin(), more.end());
        return r;
    }

    std::vector<tinyk_result> together(std::vector<tinyk_run> const& runs) const {
        std::vector<tinyk_result> results(runs.size());
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < runs.size(); ++i) threads.emplace_back([&, i] { results[i] = runs[i](); });
        for (auto& t : threads) t.join();
        return results;
    }

    std::string server_says(std::vector<std::string> const& command) const {
        return redis_test::admin(server.port())(command);
    }
};

} // namespace

TEST_CASE("tinyk remote single flight: 4 processes on each of two machines sharing a Redis start chain40 at once "
          "and compile each kernel about once in the fleet") {
    fleet f;
    tinyk_run plain;
    plain.args = {"run", f.program.string(), "--call", "main", "1"};
    plain.home = (f.root.path() / "home").string();
    plain.cwd = f.root.str();
    tinyk_result const expected = plain();
    REQUIRE(expected.exited(0));

    std::vector<tinyk_run> runs;
    for (char const* machine : {"a", "b"})
        for (int i = 0; i < 4; ++i) runs.push_back(f.on(machine));
    std::vector<tinyk_result> const results = f.together(runs);
    std::size_t compiles = 0;
    for (auto const& r : results) {
        INFO(r.describe());
        REQUIRE(r.exited(0));
        CHECK(r.out == expected.out);
        CHECK(r.compiled().size() + r.loaded().size() == 40);
        compiles += r.compiled().size();
    }
    INFO("fleet-wide compiles: " << compiles);
    CHECK(compiles <= 48); // without single flight: up to 8 x 40 = 320
    // Every claim released (after the uploads before it):
    CHECK(f.server_says({"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", f.ns + ":*:claim"}) == "0");
}

TEST_CASE("tinyk remote single flight: a read-only remote takes no claim") {
    fleet f;
    redis_test::admin(f.server.port())({"CONFIG", "RESETSTAT"});
    std::vector<tinyk_run> runs;
    for (int i = 0; i < 2; ++i) runs.push_back(f.on("a", {"TINYK_CACHE_REMOTE_MODE=read-only"}));
    for (auto const& r : f.together(runs)) {
        INFO(r.describe());
        REQUIRE(r.exited(0));
    }
    std::string const sets = f.server_says({"INFO", "commandstats"});
    CHECK(sets.find("cmdstat_set:") == std::string::npos); // nothing written: no entry, no claim
}

TEST_CASE("tinyk remote single flight: a Redis claim is SET NX with an expiry, held while its owner lives, taken "
          "over when its owner is gone, and released") {
    namespace cc = compile_cache;
    redis_test::server server;
    redis_test::admin a(server.port());
    cc::redis_options o;
    o.url = server.url();
    o.name_space = redis_test::unique_name("claims");
    cc::redis_storage s(o);
    cc::key const k = cc::key_builder<cc::sha256>().add("ir", "k").finish().value();
    std::string const name = s.redis_key(k) + ":claim";

    cc::claim_answer const first = s.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(20000)});
    REQUIRE(first.state == cc::claim_state::claimed);
    CHECK(a({"GET", name}) == cc::detail::claim_owner());
    long long const ttl = std::stoll(a({"PTTL", name}));
    CHECK(ttl > 0);
    CHECK(ttl <= 20000);
    CHECK(s.try_claim(k, {}).state == cc::claim_state::held); // its owner, this process, lives
    CHECK(s.try_claim(k, {cc::claim_scope::local, std::chrono::milliseconds(1000)}).state ==
          cc::claim_state::none); // a Redis server is no local storage

    s.release_claim(k);
    CHECK(a({"EXISTS", name}) == "0");

    // A claim of a process of this machine that has ended: taken over at once.
    pid_t const child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    std::string const boot = cc::detail::claim_field(cc::detail::claim_owner(), "boot");
    a({"SET", name,
       "pid=" + std::to_string(child) + " boot=" + boot + " start=1 host=" +
           cc::detail::claim_field(cc::detail::claim_owner(), "host"),
       "PX", "60000"});
    cc::claim_answer const taken = s.try_claim(k, {});
    CHECK(taken.state == cc::claim_state::claimed);
    CHECK(taken.took_over);
    // Another machine's claim stands (until the server expires it).
    a({"SET", name, "pid=1 boot=another-machine start=1 host=h", "PX", "60000"});
    cc::claim_answer const other = s.try_claim(k, {});
    CHECK(other.state == cc::claim_state::held);
    CHECK(other.holder == "pid 1 on h");
    s.release_claim(k); // not this process's: left alone
    CHECK(a({"EXISTS", name}) == "1");
}
