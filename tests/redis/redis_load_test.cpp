// Load: 8 processes × 2,000 operations through redis_storage against one server and
// against a cluster, both with a memory limit small enough that they evict during the
// run. Not one wrong value may be read; evicted values are misses, not errors.
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using namespace compile_cache_test::redis;

namespace {
struct load_result {
    long wrong = -1, errors = -1, found = -1, absent = -1;
    std::string line;
};

/// Runs `count` load processes at once and collects what each printed (a process
/// still silent after 60 s is killed, and its result stays -1).
std::vector<load_result> run_load(std::string const& url, int count, int ops, int keys) {
    std::vector<std::unique_ptr<compile_cache_test::child_process>> children;
    for (int i = 0; i < count; ++i)
        children.push_back(std::make_unique<compile_cache_test::child_process>(std::vector<std::string>{
            COMPILE_CACHE_HELPER_redis_load, url, std::to_string(ops), std::to_string(1000 + i), std::to_string(keys)}));
    std::vector<load_result> results;
    for (auto& child : children) {
        if (!child->wait_for_line(60000)) child->kill();
        child->wait();
        load_result r;
        r.line = child->output().substr(0, child->output().find('\n'));
        std::sscanf(r.line.c_str(), "wrong=%ld errors=%ld found=%ld absent=%ld", &r.wrong, &r.errors, &r.found,
                    &r.absent);
        results.push_back(r);
    }
    return results;
}

void check(std::vector<load_result> const& results) {
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
