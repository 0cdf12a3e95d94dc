// A process forked while another thread of its parent is in the middle of a Redis call
// (the server stopped, so the call waits its timeout) must use the server in the child
// once it answers: the child does not inherit the call's locks held for ever.
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;

TEST_CASE("A child forked while a parent's thread waits on a stopped server reads from it once it answers",
          "[redis][faults][fork]") {
    server srv;
    cc::redis_options o;
    o.url = srv.url();
    o.command_timeout = std::chrono::milliseconds(2000);
    cc::redis_storage s(o);
    REQUIRE_FALSE(s.write(key_of(1), "value"));

    srv.pause();
    // A thread's read waits for the stopped server, holding the connection's lock.
    std::thread waiting([&] {
        std::string out;
        (void)s.read(key_of(1), out, 100);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // (well inside its 2 s)
    pid_t const child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The server answers again within a moment: within 10 s, the read must find the entry.
        auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        std::string out;
        while (std::chrono::steady_clock::now() < until) {
            if (s.read(key_of(1), out, 100).status == cc::read_status::found && out == "value") ::_exit(0);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ::_exit(1);
    }
    srv.resume();
    waiting.join();
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    // The parent goes on with its own connection.
    std::string out;
    CHECK(s.read(key_of(1), out, 100).status == cc::read_status::found);
}
