// How a cluster client learns its slot map from real nodes that do not all know it yet: a
// seed node that serves no slot (left the cluster, or not joined yet) and slots that no
// master had when the map was learnt must not leave keys unserved for the process's life.
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;

namespace {
cc::redis_storage storage_at(std::string const& url, std::string const& name_space) {
    cc::redis_options o;
    o.url = url;
    o.name_space = name_space;
    o.command_timeout = std::chrono::milliseconds(500);
    return cc::redis_storage(o);
}

std::string const lone_node_args = "--cluster-enabled yes --cluster-config-file nodes.conf";
} // namespace

TEST_CASE("A seed node that serves no slot does not hide the slot map another seed knows", "[redis][cluster]") {
    // A node in cluster mode that is no master of any slot (CLUSTER SLOTS: an empty
    // list), named first, and a node of the real cluster after it.
    server lone(lone_node_args);
    REQUIRE(admin(lone.port())({"CLUSTER", "SLOTS"}) == "(array)");
    auto const ports = fixture::get().cluster_ports();
    std::string const ns = unique_name("emptyseed");
    auto s = storage_at("redis+cluster://127.0.0.1:" + std::to_string(lone.port()) + ",127.0.0.1:" +
                            std::to_string(ports[0]),
                        ns);
    std::string out;
    for (std::uint64_t i = 0; i < 10; ++i) {
        std::error_code const e = s.write(key_of(i), "value");
        INFO("key " << i << ": " << s.last_failure().text);
        REQUIRE_FALSE(e);
        CHECK(s.read(key_of(i), out, 100).status == cc::read_status::found);
    }
}

TEST_CASE("A slot no master served when the map was learnt is served once a master takes it", "[redis][cluster]") {
    // One node in cluster mode, master of the lower half of the slots only.
    server lone(lone_node_args);
    REQUIRE(admin(lone.port())({"CLUSTER", "ADDSLOTSRANGE", "0", "8191"}) == "OK");
    std::string const ns = unique_name("unserved");
    auto s = storage_at("redis+cluster://127.0.0.1:" + std::to_string(lone.port()), ns);
    std::uint64_t n = 0;
    while (cc::detail::redis_hash_slot(s.redis_key(key_of(n))) < 8192) ++n;
    cc::key const k = key_of(n);
    // The map is learnt now, without the slot of k.
    CHECK(s.write(k, "value"));
    // The node takes the upper half: within 10 s (the client learns the map again at most
    // once a second) k is written and read back.
    REQUIRE(admin(lone.port())({"CLUSTER", "ADDSLOTSRANGE", "8192", "16383"}) == "OK");
    auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::error_code e = s.write(k, "value");
    while (e && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        e = s.write(k, "value");
    }
    INFO(s.last_failure().text);
    REQUIRE_FALSE(e);
    std::string out;
    CHECK(s.read(k, out, 100).status == cc::read_status::found);
    CHECK(out == "value");
}
