// redis_storage on a real three-master Redis Cluster: keys routed to every node, a node
// killed (only its slots fail), and a slot migrated during a run (ASK, then MOVED,
// followed without an error).
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
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

TEST_CASE("One stalled cluster master fails only its own keys, in batches and single reads alike",
          "[redis][cluster][batch][faults]") {
    // SIGSTOP: the master's port accepts, nothing answers. (One cluster for both parts: a
    // cluster takes seconds to make. Full coverage off: past its node timeout, 2 s, the
    // other masters would answer CLUSTERDOWN.)
    cluster c("--cluster-require-full-coverage no");
    // 1. Batches. The stalled master's keys come first, so that its group is asked first: it
    // may use half of the call's time, the healthy masters after it answer within the rest
    // and are not rested.
    auto s = cluster_storage(c.url()); // (300 ms per call)
    int const stalled = c.ports()[0];
    std::vector<std::uint64_t> ids; // the stalled master's keys first
    std::map<std::uint64_t, int> owner;
    for (int pass = 0; pass < 2; ++pass)
        for (std::uint64_t i = 0; i < 30; ++i) {
            if (pass == 0) REQUIRE_FALSE(s.write(key_of(i), "v" + std::to_string(i)));
            owner[i] = owner_port(stalled, cc::detail::redis_hash_slot(s.redis_key(key_of(i))));
            if ((pass == 0) == (owner[i] == stalled)) ids.push_back(i);
        }
    REQUIRE(owner[ids.front()] == stalled);
    REQUIRE(owner[ids.back()] != stalled);
    std::vector<cc::key> keys;
    std::vector<std::pair<cc::key, std::string_view>> entries;
    std::string const later = "later";
    for (std::uint64_t i : ids) keys.push_back(key_of(i)), entries.emplace_back(key_of(i), later);
    auto check_only_stalled_failed = [&](auto const& error_of) {
        int healthy = 0, failed = 0;
        for (std::size_t j = 0; j < ids.size(); ++j) {
            std::error_code const e = error_of(j);
            INFO("key " << ids[j] << " on master " << owner[ids[j]] << ": " << e.message() << " ("
                        << s.last_failure().text << ")");
            if (owner[ids[j]] == stalled) {
                CHECK(cc::redis_storage::partial_failure(e)); // a part of the cluster, not all of it
                CHECK(e == cc::remote_error::node_timeout);
                CHECK(cc::remote_error_of(e) == cc::remote_error::timeout); // counted as what it did: no answer
                ++failed;
            } else {
                CHECK_FALSE(e);
                ++healthy;
            }
        }
        CHECK(failed > 0);
        CHECK(healthy > 0);
    };
    c.pause(0);
    // read_many first; then, once the stalled node's rest is over, write_many (on the batch
    // writes' connections), whose slot map is learnt again first, of the stalled seed first.
    std::vector<std::pair<cc::read_result, std::string>> out;
    auto start = std::chrono::steady_clock::now();
    s.read_many(keys, 100, out);
    auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < std::chrono::milliseconds(600));
    REQUIRE(out.size() == ids.size());
    check_only_stalled_failed([&](std::size_t j) { return out[j].first.error; });
    for (std::size_t j = 0; j < ids.size(); ++j)
        if (owner[ids[j]] != stalled) {
            CHECK(out[j].first.status == cc::read_status::found);
            CHECK(out[j].second == "v" + std::to_string(ids[j]));
        }
    std::this_thread::sleep_for(cc::detail::redis_client::node_rest + std::chrono::milliseconds(50));
    std::vector<std::error_code> written;
    start = std::chrono::steady_clock::now();
    s.write_many(entries, written);
    took = std::chrono::steady_clock::now() - start;
    CHECK(took < std::chrono::milliseconds(600));
    REQUIRE(written.size() == ids.size());
    check_only_stalled_failed([&](std::size_t j) { return written[j]; });
    // A healthy master's key read alone right after: not rested by the batch.
    std::string bytes;
    CHECK(s.read(keys.back(), bytes, 100).status == cc::read_status::found);

    // 2. Single reads, of a storage made now: it learns the slot map while its first seed
    // (c.ports()[0]) is stalled. That seed gets half of the call's time, the second seed
    // tells the map, the read is served.
    c.resume(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    c.pause(0);
    std::uint64_t on_stalled = 0, on_healthy = 0;
    while (owner[on_stalled] != stalled) ++on_stalled;
    while (owner[on_healthy] == stalled) ++on_healthy;
    auto fresh = cluster_storage(c.url());
    cc::read_result r = fresh.read(key_of(on_healthy), bytes, 100);
    INFO("first read: " << r.error.message() << " (" << fresh.last_failure().text << ")");
    CHECK(r.status == cc::read_status::found);
    CHECK(fresh.read(key_of(on_stalled), bytes, 100).status == cc::read_status::error); // its own keys fail
    // Reads go on past the stalled seed's rest: a read of its key then times out (rests it
    // again, the slot map is to be learnt again) and the next read learns the map; the reads
    // of the healthy masters' keys are all served.
    int reads = 0, failed = 0;
    std::string first_failure;
    auto const until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < until) {
        (void)fresh.read(key_of(on_stalled), bytes, 100);
        for (std::uint64_t i = 0; i < 30; ++i) {
            if (owner[i] == stalled) continue;
            ++reads;
            r = fresh.read(key_of(i), bytes, 100);
            if (r.status != cc::read_status::found) {
                if (failed++ == 0)
                    first_failure = "key " + std::to_string(i) + ": " + r.error.message() + " (" +
                                    fresh.last_failure().text + ")";
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    c.resume(0);
    INFO(failed << " of " << reads << " reads of the healthy masters' keys failed; the first: " << first_failure);
    CHECK(reads > 0);
    CHECK(failed == 0);
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
