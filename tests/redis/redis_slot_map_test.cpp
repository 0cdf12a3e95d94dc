// How a cluster client learns its slot map from real nodes that do not all know it yet: a
// seed node that serves no slot (left the cluster, or not joined yet) and slots that no
// master had when the map was learnt must not leave keys unserved for the process's life,
// and a batch read's keys redirected to a slot's new master stay within the batch's bound.
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;

namespace {
cc::redis_storage slot_map_storage_at(std::string const& url, std::string const& name_space) {
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
    auto s = slot_map_storage_at(
        "redis+cluster://127.0.0.1:" + std::to_string(lone.port()) + ",127.0.0.1:" + std::to_string(ports[0]), ns);
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
    auto s = slot_map_storage_at("redis+cluster://127.0.0.1:" + std::to_string(lone.port()), ns);
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

// CLUSTER SLOTS names one range per run of slots a master holds: a cluster whose slots
// were moved one by one (resharding, rebalancing) has up to 16,384 ranges, each with its
// nodes. Its reply was bounded at 1 MiB: 8,192 ranges of one node with its hostname took
// 2.4 MB, and every call failed as `protocol` ("reply longer than the bound"). A 4 MiB
// bound holds one range per slot, each with a master and two replicas.
TEST_CASE("A cluster whose slots are fragmented into thousands of ranges is served", "[redis][cluster]") {
    // One node in cluster mode, master of every other slot (8,192 ranges), announcing a
    // long hostname (in each range's node, as a replica's entry would add). A new master
    // says its cluster is up only 2 s after it started (CLUSTER_WRITABLE_DELAY): it serves
    // reads meanwhile (cluster-allow-reads-when-down), and SCAN, which names no key.
    std::string const hostname = std::string(60, 'a') + "." + std::string(60, 'b') + "." + std::string(60, 'c');
    server lone(lone_node_args + " --cluster-require-full-coverage no --cluster-allow-reads-when-down yes"
                                 " --cluster-announce-hostname " + hostname);
    std::vector<std::string> add{"CLUSTER", "ADDSLOTS"};
    for (int slot = 0; slot < 16384; slot += 2) add.push_back(std::to_string(slot));
    REQUIRE(admin(lone.port())(add) == "OK");
    auto s = slot_map_storage_at("redis+cluster://127.0.0.1:" + std::to_string(lone.port()), unique_name("fragmented"));
    std::size_t read = 0;
    for (std::uint64_t n = 0; read < 3; ++n) {
        if (cc::detail::redis_hash_slot(s.redis_key(key_of(n))) % 2 != 0) continue;
        ++read;
        std::string out;
        cc::read_result const r = s.read(key_of(n), out, 100);
        INFO("key " << n << ": " << s.last_failure().text.substr(0, 200));
        CHECK(r.status == cc::read_status::absent);
    }
    std::vector<cc::stored_entry> listed;
    INFO(s.last_failure().text.substr(0, 200));
    CHECK_FALSE(s.list(listed));
    CHECK(listed.empty());
}

TEST_CASE("read_many keys redirected to their slot's new master still count against batch_max_bytes",
          "[redis][cluster][batch]") {
    cluster c;
    cc::redis_options o;
    o.url = c.url();
    o.name_space = "{budget}entries"; // (a hash tag: every key in one slot)
    o.command_timeout = std::chrono::milliseconds(2000);
    o.batch_max_bytes = 3000;
    cc::redis_storage s(o);
    std::vector<cc::key> keys;
    std::vector<std::string> names;
    for (std::uint64_t i = 0; i < 10; ++i) {
        keys.push_back(key_of(i));
        names.push_back(s.redis_key(key_of(i)));
        REQUIRE_FALSE(s.write(key_of(i), std::string(1000, 'a' + static_cast<char>(i))));
    }
    // The slot moves, with its keys, to another master after the client learnt the map:
    // each key of the batch is answered MOVED, then read alone from the new master.
    unsigned const slot = cc::detail::redis_hash_slot(names[0]);
    int const source = owner_port(c.ports()[0], slot);
    int const target = c.ports()[0] == source ? c.ports()[1] : c.ports()[0];
    std::string const slot_text = std::to_string(slot);
    admin from(source), to(target);
    std::string const source_id = from({"CLUSTER", "MYID"});
    std::string const target_id = to({"CLUSTER", "MYID"});
    REQUIRE(to({"CLUSTER", "SETSLOT", slot_text, "IMPORTING", source_id}) == "OK");
    REQUIRE(from({"CLUSTER", "SETSLOT", slot_text, "MIGRATING", target_id}) == "OK");
    std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(target), "", "0", "5000", "KEYS"};
    migrate.insert(migrate.end(), names.begin(), names.end());
    REQUIRE(from(migrate) == "OK");
    for (int port : c.ports()) REQUIRE(admin(port)({"CLUSTER", "SETSLOT", slot_text, "NODE", target_id}) == "OK");

    std::vector<std::pair<cc::read_result, std::string>> out;
    s.read_many(keys, 2000, out);
    REQUIRE(out.size() == keys.size());
    std::size_t found = 0, bytes = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        INFO("key " << i);
        if (out[i].first.status == cc::read_status::found) {
            ++found;
            bytes += out[i].second.size();
            CHECK(out[i].second == std::string(1000, 'a' + static_cast<char>(i)));
        } else {
            CHECK(out[i].first.status == cc::read_status::error);
            CHECK(out[i].first.error == cc::remote_error::too_large);
        }
    }
    // At most the bound, and one value past it.
    CHECK(found >= 1);
    CHECK(bytes <= o.batch_max_bytes + 1000);
}
