// Load: 8 processes × 2,000 operations through redis_storage against one server and
// against a cluster, both with a memory limit small enough that they evict during the
// run. Not one wrong value may be read; evicted values are misses, not errors.
#include "catch2_compat.hpp"
#include "redis_test_support.hpp"

#include <cstdio>
#include <string>
#include <vector>

using namespace compile_cache_test::redis;

namespace {
struct process_result {
    long wrong = -1, errors = -1, found = -1, absent = -1;
    std::string line;
};

/// Runs `count` load processes at once and collects what each printed.
std::vector<process_result> run_load(std::string const& url, int count, int ops, int keys) {
    std::vector<std::FILE*> pipes;
    for (int i = 0; i < count; ++i) {
        std::string const command = std::string(COMPILE_CACHE_HELPER_redis_load) + " '" + url + "' " +
                                    std::to_string(ops) + " " + std::to_string(1000 + i) + " " + std::to_string(keys);
        pipes.push_back(::popen(command.c_str(), "r"));
        REQUIRE(pipes.back());
    }
    std::vector<process_result> results;
    for (std::FILE* p : pipes) {
        process_result r;
        char buffer[1024] = {};
        if (std::fgets(buffer, sizeof buffer, p)) r.line = buffer;
        ::pclose(p);
        std::sscanf(r.line.c_str(), "wrong=%ld errors=%ld found=%ld absent=%ld", &r.wrong, &r.errors, &r.found,
                    &r.absent);
        results.push_back(r);
    }
    return results;
}

void check(std::vector<process_result> const& results) {
    long found = 0;
    for (auto const& r : results) {
        INFO(r.line);
        CHECK(r.wrong == 0);
        CHECK(r.errors == 0);
        found += r.found;
    }
    CHECK(found > 0);
}

long long evicted(int port) { return std::stoll(admin(port).info("stats", "evicted_keys")); }
} // namespace

TEST_CASE("8 processes against one evicting server read no wrong value", "[redis][load]") {
    server small("--maxmemory 3mb --maxmemory-policy allkeys-lru");
    check(run_load(small.url(), 8, 2000, 2000));
    CHECK(evicted(small.port()) > 0);
}

TEST_CASE("8 processes against an evicting cluster read no wrong value", "[redis][load]") {
    cluster c("--maxmemory 3mb --maxmemory-policy allkeys-lru");
    check(run_load(c.url(), 8, 2000, 3000));
    long long total = 0;
    for (int port : c.ports()) total += evicted(port);
    CHECK(total > 0);
}
