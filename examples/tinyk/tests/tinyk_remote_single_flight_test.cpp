// tinyk with single flight across machines: 4 fresh tinyk processes on each of two
// "machines" (two cache directories) sharing one real redis-server start chain40 at the
// same moment; the remote claims make each kernel compile about once in the whole fleet.
// A read-only remote takes no claim. The server is the test's own, started through the
// Redis tests' fixture script on 127.0.0.1 and stopped even when the test fails.
#include "support/redis_servers.hpp"
#include "tinyk_support.hpp"

#include <string>
#include <thread>
#include <vector>

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
        write_file(root.path() / "secret.key", "the fleet's shared secret\n");
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
