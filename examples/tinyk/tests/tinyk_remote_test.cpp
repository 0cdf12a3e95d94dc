// tinyk on two "machines" sharing one real redis-server: two cache directories, one
// program file (its path is part of every key, as on two CI runners with the same
// checkout path), every step a fresh tinyk process. The server is a test's own (so
// that its command statistics are this test's), started through the Redis tests'
// fixture script on 127.0.0.1 and stopped even when the test fails.
#include "support/redis_servers.hpp"
#include "tinyk_support.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace tinyk_test;
namespace redis_test = compile_cache_test::redis;

namespace {

/// chain40.tk: 40 kernels, each calling the previous one.
std::string chain40() { return read_file(TINYK_CHAIN40); }

/// One run of the shared program on one machine (its own cache directory).
struct world {
    temp_dir root{"tinyk-remote"};
    redis_test::server server;
    fs::path program = root.path() / "src" / "chain.tk";
    std::string ns = redis_test::unique_name("tinyk");

    world() {
        fs::create_directories(root.path() / "src");
        fs::create_directories(root.path() / "home");
        compile_cache_test::write_private_file(root.path() / "secret.key", "the fleet's shared secret\n");
        write_file(program, chain40());
    }

    /// tinyk run -v --stats on the program, calling main, as machine `name`.
    tinyk_result run(std::string const& name, std::vector<std::string> env = {}) const {
        tinyk_run r;
        r.args = {"run", "-v", "--stats", program.string(), "--call", "main", "1"};
        r.home = (root.path() / "home").string();
        r.cwd = root.str();
        std::vector<std::string> base = {"TINYK_CACHE_DIR=" + (root.path() / name).string(),
                                         "TINYK_CACHE_REMOTE=" + server.url(),
                                         "TINYK_CACHE_REMOTE_NAMESPACE=" + ns,
                                         "TINYK_CACHE_SECRET_FILE=" + (root.path() / "secret.key").string()};
        // A later setting of the same variable replaces the base one.
        for (auto const& e : env) {
            std::string const name_eq = e.substr(0, e.find('=') + 1);
            base.erase(std::remove_if(base.begin(), base.end(),
                                      [&](std::string const& b) { return b.rfind(name_eq, 0) == 0; }),
                       base.end());
            base.push_back(e);
        }
        r.extra_env = base;
        return r();
    }

    std::uint64_t calls_of(std::string const& command) { return redis_test::admin(server.port()).calls(command); }
    void reset_stats() { redis_test::admin(server.port())({"CONFIG", "RESETSTAT"}); }
    std::uint64_t keys_on_server() { return std::stoull(redis_test::admin(server.port())({"DBSIZE"})); }
};

/// The number in `name=N` of --stats' line; -1 when absent.
long long stat(tinyk_result const& r, std::string const& name) {
    std::string const s = r.stats();
    std::size_t const at = s.find(" " + name + "=");
    if (at == std::string::npos) return -1;
    return std::stoll(s.substr(at + name.size() + 2));
}

#define REQUIRE_RAN(r)                \
    do {                              \
        INFO((r).describe());         \
        REQUIRE((r).exited(0));       \
    } while (false)

} // namespace

TEST_CASE("tinyk remote 1: B with an empty directory loads all 40 from the server, then all 40 locally with no GET") {
    world w;
    auto a = w.run("a");
    REQUIRE_RAN(a);
    CHECK(a.compiled().size() == 40);
    CHECK(stat(a, "remote.stores") == 40);        // the entries; their kernels' identity records apart:
    CHECK(stat(a, "remote.record-stores") == 40); // records are no entries

    w.reset_stats();
    auto b = w.run("b");
    REQUIRE_RAN(b);
    CHECK(b.loaded().size() == 40);
    CHECK(b.compiled().empty());
    CHECK(stat(b, "remote.hits") == 40);
    CHECK(b.out == a.out); // the same result
    // tinyk prefetches: every entry and identity record in one batch, no other read.
    CHECK(stat(b, "remote.prefetch-batches") == 1);
    CHECK(stat(b, "remote.prefetch-keys") == 80);
    CHECK(w.calls_of("getrange") == 80);

    w.reset_stats();
    auto b2 = w.run("b");
    REQUIRE_RAN(b2);
    CHECK(b2.loaded().size() == 40);
    CHECK(stat(b2, "remote.hits") == 0);
    CHECK(stat(b2, "remote.misses") == 0);
    CHECK(w.calls_of("getrange") == 0);
    CHECK(w.calls_of("get") == 0);
    CHECK(w.calls_of("set") == 0);
}

TEST_CASE("tinyk remote 2: A changes a helper and recompiles it and its callers, B then loads the new entries") {
    world w;
    REQUIRE_RAN(w.run("a"));
    REQUIRE_RAN(w.run("b"));
    std::string text = chain40();
    std::size_t const k39 = text.find("kernel k39(");
    REQUIRE(k39 != std::string::npos);
    std::size_t const plus = text.find("* 0.5 +", k39);
    REQUIRE(plus != std::string::npos);
    text.replace(plus, 7, "* 0.25 +");
    write_file(w.program, text);

    auto a = w.run("a");
    REQUIRE_RAN(a);
    CHECK(a.compiled() == std::vector<std::string>{"k39", "main"});
    auto b = w.run("b");
    REQUIRE_RAN(b);
    CHECK(b.compiled().empty());
    CHECK(b.loaded().size() == 40);
    CHECK(stat(b, "remote.hits") == 2);
    CHECK(b.out == a.out);
}

TEST_CASE("tinyk remote 3: B with another TINYK_CPU recompiles native kernels while VM kernels are shared") {
    if (!TINYK_HAS_NATIVE) {
        WARN("this tinyk was built without LLVM: no native backend, so no TINYK_CPU to vary");
        return;
    }
    world w;
    for (char const* backend : {"vm", "native"}) {
        auto a = w.run("a", {std::string("TINYK_BACKEND=") + backend});
        REQUIRE_RAN(a);
        CHECK(a.compiled().size() == 40);
    }
    auto vm = w.run("b", {"TINYK_BACKEND=vm", "TINYK_CPU=generic"});
    REQUIRE_RAN(vm);
    CHECK(vm.loaded().size() == 40);
    auto native = w.run("b", {"TINYK_BACKEND=native", "TINYK_CPU=generic"});
    REQUIRE_RAN(native);
    CHECK(native.compiled().size() == 40);
    CHECK(stat(native, "remote.hits") == 0);
    CHECK(native.out == vm.out);
    auto same_cpu = w.run("c", {"TINYK_BACKEND=native"});
    REQUIRE_RAN(same_cpu);
    CHECK(same_cpu.loaded().size() == 40);
}

TEST_CASE("tinyk remote 4: read-only B never writes the server, remote-only keeps no files") {
    world w;
    auto ro = w.run("b", {"TINYK_CACHE_REMOTE_MODE=read-only"});
    REQUIRE_RAN(ro);
    CHECK(ro.compiled().size() == 40);
    CHECK(w.keys_on_server() == 0);
    CHECK(fs::exists(w.root.path() / "b"));

    auto only = w.run("c", {"TINYK_CACHE_REMOTE_ONLY=1"});
    REQUIRE_RAN(only);
    CHECK(only.compiled().size() == 40);
    CHECK(w.keys_on_server() == 80); // each entry and its kernel's identity record
    auto again = w.run("c", {"TINYK_CACHE_REMOTE_ONLY=1"});
    REQUIRE_RAN(again);
    CHECK(again.loaded().size() == 40);
    CHECK(stat(again, "remote.hits") == 40);
    CHECK(!fs::exists(w.root.path() / "c"));
}

TEST_CASE("tinyk remote 5: without a secret the server is not used, and one line says how to set one") {
    world w;
    auto a = w.run("a", {"TINYK_CACHE_SECRET_FILE="});
    REQUIRE_RAN(a);
    CHECK(a.compiled().size() == 40);
    CHECK(w.keys_on_server() == 0);
    std::size_t said = 0;
    for (auto const& l : a.other_err) said += l.find("TINYK_CACHE_REMOTE is set but entries are not authenticated") !=
                                              std::string::npos;
    CHECK(said == 1);
}
