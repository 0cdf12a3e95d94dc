// The latency proxy (support/latency_proxy.hpp) as a program of its own, for tests that
// put a network's round-trip time between fresh processes and a real redis-server.
//
// Usage: latency_proxy SERVER_PORT ONE_WAY_US [LISTEN_PORT]
// Prints the port it listens on (one line), then passes connections on to
// 127.0.0.1:SERVER_PORT, each direction ONE_WAY_US microseconds later, until it is killed
// or its parent process is gone.
#include "support/latency_proxy.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: %s SERVER_PORT ONE_WAY_US [LISTEN_PORT]\n", argv[0]);
        return 2;
    }
    try {
        compile_cache_test::latency_proxy proxy(std::atoi(argv[1]), std::chrono::microseconds(std::atoll(argv[2])),
                                                argc == 4 ? std::atoi(argv[3]) : 0);
        std::printf("%d\n", proxy.port());
        std::fflush(stdout);
        proxy.start();
        // Until a signal ends the process, or its parent is gone (then it is adopted).
        pid_t const parent = ::getppid();
        while (::getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        proxy.stop();
    } catch (std::exception const& e) {
        std::fprintf(stderr, "latency_proxy: %s\n", e.what());
        return 1;
    }
    return 0;
}
