// redis_storage on a real three-master Redis Cluster: keys routed to every node, a node
// killed (only its slots fail), and a slot migrated during a run (ASK, then MOVED,
// followed without an error).
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;

namespace {
cc::redis_storage cluster_storage(std::string const& url, std::string const& name_space = "compile_cache") {
    cc::redis_options o;
    o.url = url;
    o.name_space = name_space;
    o.command_timeout = std::chrono::milliseconds(300);
    return cc::redis_storage(o);
}

std::string node_id(int port) { return admin(port)({"CLUSTER", "MYID"}); }

/// How often a node was sent `command`: executed plus rejected (redirected) calls.
long long times_sent(int port, std::string const& command) {
    std::string const stats = admin(port).info("commandstats", "cmdstat_" + command);
    long long total = 0;
    for (char const* field : {"calls=", "rejected_calls="}) {
        std::size_t const at = stats.find(field);
        if (at != std::string::npos && (at == 0 || stats[at - 1] == ',')) total += std::stoll(stats.substr(at + std::strlen(field)));
    }
    return total;
}
} // namespace

TEST_CASE("A cluster storage spreads keys over every master and reads them back", "[redis][cluster]") {
    auto const ports = fixture::get().cluster_ports();
    std::string const ns = unique_name("spread");
    auto s = cluster_storage("redis+cluster://127.0.0.1:" + std::to_string(ports[0]), ns);
    std::set<int> owners;
    for (std::uint64_t i = 0; i < 60; ++i) {
        REQUIRE_FALSE(s.write(key_of(i), "value " + std::to_string(i)));
        owners.insert(owner_port(ports[0], cc::detail::redis_hash_slot(s.redis_key(key_of(i)))));
    }
    CHECK(owners.size() == 3);
    std::string out;
    for (std::uint64_t i = 0; i < 60; ++i) {
        auto r = s.read(key_of(i), out, 100);
        REQUIRE(r.status == cc::read_status::found);
        CHECK(out == "value " + std::to_string(i));
        // On the node that owns the slot, directly.
        int const port = owner_port(ports[0], cc::detail::redis_hash_slot(s.redis_key(key_of(i))));
        CHECK(admin(port)({"GET", s.redis_key(key_of(i))}) == out);
    }
    CHECK(s.read(key_of(1000), out, 100).status == cc::read_status::absent);
}

TEST_CASE("read_many on a cluster sends each key to its slot's master and answers each as read does", "[redis][cluster][batch]") {
    auto const ports = fixture::get().cluster_ports();
    std::string const ns = unique_name("batch");
    auto s = cluster_storage("redis+cluster://127.0.0.1:" + std::to_string(ports[0]), ns);
    std::vector<cc::key> keys;
    std::set<int> owners;
    for (std::uint64_t i = 0; i < 40; ++i) {
        REQUIRE_FALSE(s.write(key_of(i), "value " + std::to_string(i)));
        owners.insert(owner_port(ports[0], cc::detail::redis_hash_slot(s.redis_key(key_of(i)))));
        keys.push_back(key_of(i));
    }
    REQUIRE(owners.size() == 3);
    REQUIRE_FALSE(s.write(key_of(41), std::string(500, 'x')));
    keys.push_back(key_of(40)); // never written
    keys.push_back(key_of(41)); // over the bound of 100
    std::vector<std::pair<cc::read_result, std::string>> out;
    s.read_many(keys, 100, out);
    REQUIRE(out.size() == keys.size());
    for (std::uint64_t i = 0; i < 40; ++i) {
        INFO("key " << i);
        CHECK(out[i].first.status == cc::read_status::found);
        CHECK(out[i].second == "value " + std::to_string(i));
    }
    CHECK(out[40].first.status == cc::read_status::absent);
    CHECK(out[41].first.status == cc::read_status::too_large);
    CHECK(out[41].second.empty());
}

TEST_CASE("read_many on a cluster with a dead master fails only that master's keys, as node_down", "[redis][cluster][batch]") {
    cluster c;
    auto s = cluster_storage(c.url());
    std::vector<cc::key> keys;
    std::map<std::uint64_t, int> owner;
    for (std::uint64_t i = 0; i < 30; ++i) {
        REQUIRE_FALSE(s.write(key_of(i), "v" + std::to_string(i)));
        owner[i] = owner_port(c.ports()[0], cc::detail::redis_hash_slot(s.redis_key(key_of(i))));
        keys.push_back(key_of(i));
    }
    int const dead = c.ports()[2];
    c.kill(2);
    std::vector<std::pair<cc::read_result, std::string>> out;
    for (int round = 0; round < 2; ++round) { // (the second while the dead node rests)
        s.read_many(keys, 100, out);
        REQUIRE(out.size() == keys.size());
        int failed = 0, served = 0;
        for (std::uint64_t i = 0; i < 30; ++i) {
            INFO("round " << round << ", key " << i);
            if (owner[i] == dead) {
                CHECK(out[i].first.status == cc::read_status::error);
                CHECK(out[i].first.error == cc::remote_error::node_down);
                CHECK(cc::remote_error_of(out[i].first.error) == cc::remote_error::refused);
                CHECK(cc::redis_storage::partial_failure(out[i].first.error));
                ++failed;
            } else {
                CHECK(out[i].first.status == cc::read_status::found);
                CHECK(out[i].second == "v" + std::to_string(i));
                ++served;
            }
        }
        CHECK(failed > 0);
        CHECK(served > 0);
    }
}

TEST_CASE("write_many on a cluster sends each entry to its slot's master, and a dead master fails only its own, as "
          "node_down",
          "[redis][cluster][batch]") {
    cluster c;
    auto s = cluster_storage(c.url());
    std::vector<std::string> values;
    std::vector<std::pair<cc::key, std::string_view>> entries;
    std::map<std::uint64_t, int> owner;
    for (std::uint64_t i = 0; i < 30; ++i) values.push_back("v" + std::to_string(i));
    for (std::uint64_t i = 0; i < 30; ++i) {
        entries.emplace_back(key_of(i), values[i]);
        owner[i] = owner_port(c.ports()[0], cc::detail::redis_hash_slot(s.redis_key(key_of(i))));
    }
    std::vector<std::error_code> out;
    s.write_many(entries, out);
    REQUIRE(out.size() == entries.size());
    for (std::uint64_t i = 0; i < 30; ++i) {
        INFO("key " << i);
        CHECK_FALSE(out[i]);
        CHECK(admin(owner[i])({"GET", s.redis_key(key_of(i))}) == values[i]); // on its slot's master
    }
    int const dead = c.ports()[2];
    c.kill(2);
    std::string const later = "later";
    for (auto& e : entries) e.second = later;
    s.write_many(entries, out);
    REQUIRE(out.size() == entries.size());
    int failed = 0, stored = 0;
    for (std::uint64_t i = 0; i < 30; ++i) {
        INFO("key " << i);
        if (owner[i] == dead) {
            CHECK(out[i] == cc::remote_error::node_down);
            CHECK(cc::redis_storage::partial_failure(out[i]));
            ++failed;
        } else {
            CHECK_FALSE(out[i]);
            CHECK(admin(owner[i])({"GET", s.redis_key(key_of(i))}) == later);
            ++stored;
        }
    }
    CHECK(failed > 0);
    CHECK(stored > 0);
}

TEST_CASE("A cluster node killed mid-run fails only its own slots, the others keep working", "[redis][cluster]") {
    cluster c;
    auto s = cluster_storage(c.url());
    std::map<std::uint64_t, int> owner;
    for (std::uint64_t i = 0; i < 60; ++i) {
        REQUIRE_FALSE(s.write(key_of(i), "v" + std::to_string(i)));
        owner[i] = owner_port(c.ports()[0], cc::detail::redis_hash_slot(s.redis_key(key_of(i))));
    }
    int const dead = c.ports()[2];
    c.kill(2);
    std::string out;
    int failed = 0, served = 0;
    auto const start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < 60; ++i) {
        auto r = s.read(key_of(i), out, 100);
        if (owner[i] == dead) {
            CHECK(r.status == cc::read_status::error);
            CHECK(r.error == cc::redis_errc::node_down); // (only this node: partial_failure says so to a tier)
            CHECK(cc::redis_storage::partial_failure(r.error));
            ++failed;
        } else {
            CHECK(r.status == cc::read_status::found);
            CHECK(out == "v" + std::to_string(i));
            CHECK_FALSE(s.write(key_of(i), "w" + std::to_string(i)));
            ++served;
        }
    }
    CHECK(failed > 0);
    CHECK(served > 0);
    // Refused at once on loopback: the dead node costs no timeouts.
    CHECK(ms_since(start) < 2000);
}

TEST_CASE("A slot migrated during a run is followed through ASK and then MOVED, with no error", "[redis][cluster]") {
    cluster c;
    auto s = cluster_storage(c.url());
    std::string const moved_key = s.redis_key(key_of(1));
    unsigned const slot = cc::detail::redis_hash_slot(moved_key);
    int const source = owner_port(c.ports()[0], slot);
    int target = c.ports()[0] == source ? c.ports()[1] : c.ports()[0];
    // Another key of the same slot, written after the migration began, never on the source.
    std::uint64_t sibling = 2;
    while (cc::detail::redis_hash_slot(s.redis_key(key_of(sibling))) != slot) ++sibling;

    REQUIRE_FALSE(s.write(key_of(1), "migrating value"));
    std::string out;
    REQUIRE(s.read(key_of(1), out, 100).status == cc::read_status::found);

    admin from(source), to(target);
    std::string const slot_text = std::to_string(slot);
    REQUIRE(to({"CLUSTER", "SETSLOT", slot_text, "IMPORTING", node_id(source)}) == "OK");
    REQUIRE(from({"CLUSTER", "SETSLOT", slot_text, "MIGRATING", node_id(target)}) == "OK");
    REQUIRE(from({"MIGRATE", "127.0.0.1", std::to_string(target), moved_key, "0", "5000"}) == "OK");

    // The source now answers ASK for the moved key and for a key it does not have.
    CHECK(s.read(key_of(1), out, 100).status == cc::read_status::found);
    CHECK(out == "migrating value");
    CHECK_FALSE(s.write(key_of(sibling), "written during the migration"));
    CHECK(times_sent(target, "asking") == 2);
    CHECK(to({"ASKING"}) == "OK"); // (the slot is only importing: the next command must ask)
    CHECK(to({"EXISTS", s.redis_key(key_of(sibling))}) == "1");

    // The slot now belongs to the target: the source answers MOVED.
    for (int port : c.ports())
        REQUIRE(admin(port)({"CLUSTER", "SETSLOT", slot_text, "NODE", node_id(target)}) == "OK");
    auto r = s.read(key_of(sibling), out, 100);
    CHECK(r.status == cc::read_status::found);
    CHECK(out == "written during the migration");
    CHECK_FALSE(r.error);
    CHECK(s.read(key_of(1), out, 100).status == cc::read_status::found);
    CHECK(owner_port(c.ports()[0], slot) == target);
    // The next call goes straight to the new owner: no more redirections.
    long long const sent_to_source = times_sent(source, "getrange");
    CHECK(s.read(key_of(1), out, 100).status == cc::read_status::found);
    CHECK(times_sent(source, "getrange") == sent_to_source);
}
