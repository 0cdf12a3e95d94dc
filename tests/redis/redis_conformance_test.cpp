// The conformance kit (compile_cache/testing/storage_conformance.hpp) on the Redis
// storages, against the real servers of the ctest fixture: redis_storage on one server
// and on a three-master cluster, and tiered_storage of a directory before a server.
// Each run uses a namespace of its own and leaves no entry behind.
#include "catch2_compat.hpp"
#include "support/conformance.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <string>
#include <vector>

namespace cc = compile_cache;
namespace cct = compile_cache::testing;
using namespace compile_cache_test::redis;

namespace {

using compile_cache_test::failure_lines;

cc::redis_storage storage_at(std::string const& url, std::string const& name_space) {
    cc::redis_options o;
    o.url = url;
    o.name_space = name_space;
    return cc::redis_storage(o);
}

/// What the kit asks of a storage shared by processes, with one difference for Redis: an
/// empty value may read as absent (GETRANGE, which bounds the read, answers "" for both).
cct::storage_conformance_options redis_options() {
    cct::storage_conformance_options o;
    o.keeps_empty_values = false;
    o.processes = 4;
    o.writes_per_process = 50;
    o.process_timeout = std::chrono::seconds(30);
    return o;
}

/// How many values of `name_space` are left on the server at `port`.
std::size_t values_left(int port, std::string const& name_space) {
    admin a(port);
    std::string const keys = a({"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", name_space + ":*"});
    return static_cast<std::size_t>(std::stoul(keys));
}

} // namespace

TEST_CASE("redis_storage on one server passes the conformance kit, an empty value reading as absent",
          "[redis][conformance]") {
    std::string const url = fixture::get().server_url();
    std::string const ns = unique_name("conformance");
    auto const failures = cct::check_storage_conformance([&] { return storage_at(url, ns); }, redis_options());
    INFO(failure_lines(failures));
    CHECK(failures.empty());
    CHECK(values_left(fixture::get().server_port(), ns) == 0);
}

TEST_CASE("redis_storage on a Redis Cluster passes the conformance kit", "[redis][conformance][cluster]") {
    std::string const url = fixture::get().cluster_url();
    std::string const ns = unique_name("conformance");
    auto const failures = cct::check_storage_conformance([&] { return storage_at(url, ns); }, redis_options());
    INFO(failure_lines(failures));
    CHECK(failures.empty());
    for (int port : fixture::get().cluster_ports()) CHECK(values_left(port, ns) == 0);
}

TEST_CASE("tiered_storage of a directory before a Redis server passes the conformance kit",
          "[redis][conformance][tiered]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::redis_storage>;
    compile_cache_test::temp_dir dir;
    std::string const local = (dir.path() / "cache").string();
    std::string const url = fixture::get().server_url();
    std::string const ns = unique_name("conformance");
    auto const failures = cct::check_storage_conformance(
        [&] { return tier(cc::directory_storage(local), storage_at(url, ns)); }, redis_options());
    INFO(failure_lines(failures));
    CHECK(failures.empty());
    CHECK(values_left(fixture::get().server_port(), ns) == 0);
}

TEST_CASE("with the kit's default options Redis fails one check only: the empty value", "[redis][conformance]") {
    std::string const url = fixture::get().server_url();
    std::string const ns = unique_name("conformance");
    cct::storage_conformance_options o; // keeps_empty_values = true
    auto const failures = cct::check_storage_conformance([&] { return storage_at(url, ns); }, o);
    INFO(failure_lines(failures));
    REQUIRE(failures.size() == 1);
    CHECK(failures[0] == "round trip: an empty value reads absent, not an empty found entry");
}

TEST_CASE("redis_storage reads an empty value as absent, never as an error",
          "[redis][conformance]") {
    // What keeps_empty_values = false allows, and no more: found-and-empty or absent.
    cc::redis_storage s = storage_at(fixture::get().server_url(), unique_name("empty"));
    cc::key const k = key_of(7);
    REQUIRE(!s.write(k, std::string_view()));
    std::string out = "stale";
    cc::read_result const r = s.read(k, out, 100);
    CHECK(r.status == cc::read_status::absent);
    CHECK(out.empty());
    CHECK(!s.remove(k));
}
