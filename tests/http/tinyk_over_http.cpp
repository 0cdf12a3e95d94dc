// tinyk on two "machines" sharing one real nginx WebDAV server through the tier
// (TINYK_CACHE_REMOTE=http://..., which remote_by_url gives to the HTTP storage): two
// cache directories, one program file, every step a fresh tinyk process. The server is
// the test's own (tests/support/nginx_servers.hpp), so that its access log counts this
// test's requests alone. Built into compile_cache_http_tests when tinyk is built with
// HTTP (COMPILE_CACHE_TINYK_WITH_HTTP).
#include "tinyk_support.hpp"
#include "support/nginx_servers.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace tinyk_test;

namespace {

using compile_cache_test::nginx::access_log_lines;
using compile_cache_test::nginx::own_server;

long long stat(tinyk_result const& r, std::string const& name) {
    std::string const s = r.stats();
    std::size_t const at = s.find(" " + name + "=");
    if (at == std::string::npos) return -1;
    return std::stoll(s.substr(at + name.size() + 2));
}

} // namespace

TEST_CASE("tinyk over HTTP: B with an empty directory loads all 40 from nginx, then all 40 locally with no request",
          "[http][tinyk]") {
    temp_dir root("tinyk-http");
    own_server const server("tinyk-http");
    fs::path const program = root.path() / "src" / "chain.tk";
    fs::create_directories(root.path() / "src");
    fs::create_directories(root.path() / "home");
    compile_cache_test::write_private_file(root.path() / "secret.key", "the fleet's shared secret\n");
    write_file(program, read_file(TINYK_CHAIN40));
    std::string const remote = server.server().url("plain", "/tinyk/");
    auto run = [&](std::string const& machine) {
        tinyk_run r;
        r.args = {"run", "-v", "--stats", program.string(), "--call", "main", "1"};
        r.home = (root.path() / "home").string();
        r.cwd = root.str();
        r.extra_env = {"TINYK_CACHE_DIR=" + (root.path() / machine).string(), "TINYK_CACHE_REMOTE=" + remote,
                       "TINYK_CACHE_REMOTE_LAYOUT=fanout",
                       "TINYK_CACHE_SECRET_FILE=" + (root.path() / "secret.key").string()};
        tinyk_result const result = r();
        INFO(result.describe());
        REQUIRE(result.exited(0));
        return result;
    };

    tinyk_result const a = run("a");
    CHECK(a.compiled().size() == 40);
    CHECK(stat(a, "remote.stores") == 40);
    CHECK(server.server().requests_of("PUT") >= 40);

    tinyk_result const b = run("b");
    CHECK(b.loaded().size() == 40);
    CHECK(b.compiled().empty());
    CHECK(stat(b, "remote.hits") == 40);
    CHECK(b.out == a.out);

    std::size_t const before = access_log_lines(server.server());
    tinyk_result const b2 = run("b");
    CHECK(b2.loaded().size() == 40);
    CHECK(stat(b2, "remote.hits") == 0);
    CHECK(access_log_lines(server.server()) == before); // nginx saw no request at all
}

TEST_CASE("tinyk over HTTP: a server that is gone costs a bounded delay, and the kernels compile as usual",
          "[http][tinyk][faults]") {
    temp_dir root("tinyk-http-gone");
    fs::path const program = root.path() / "chain.tk";
    compile_cache_test::write_private_file(root.path() / "secret.key", "the fleet's shared secret\n");
    write_file(program, read_file(TINYK_CHAIN40));
    // A port nothing listens on: bound to find a free one, then closed.
    int const probe = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    ::close(probe);
    std::string const url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/tinyk/";
    tinyk_run r;
    r.args = {"run", "-v", "--stats", program.string(), "--call", "main", "1"};
    r.home = root.str();
    r.cwd = root.str();
    r.extra_env = {"TINYK_CACHE_DIR=" + (root.path() / "cache").string(), "TINYK_CACHE_REMOTE=" + url,
                   "TINYK_CACHE_SECRET_FILE=" + (root.path() / "secret.key").string()};
    tinyk_result const result = r();
    INFO(result.describe());
    REQUIRE(result.exited(0));
    CHECK(result.compiled().size() == 40);
    long long const refused = stat(result, "remote.errors.refused");
    CHECK(refused >= 1); // once (or a few calls already out at once), then the back-off:
    CHECK(refused <= 3);
    CHECK(stat(result, "remote.skipped") >= 40);
}
