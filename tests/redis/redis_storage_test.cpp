// redis_storage against a real redis-server: the Storage contract, the names and
// expiry of values on the server, bounded reads, credentials, and a basic_cache on it.
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;

namespace {
cc::redis_storage shared_storage(std::string const& name_space) {
    cc::redis_options o;
    o.url = fixture::get().server_url();
    o.name_space = name_space;
    return cc::redis_storage(o);
}

std::string value_of(std::uint64_t n, std::size_t size) {
    std::string v(size, '\0');
    for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<char>((n * 131 + i * 7) & 0xff);
    return v;
}

struct artifact {
    std::string name;
    std::vector<int> code;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & name & code;
    }
};

using redis_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::redis_storage>;
} // namespace

TEST_CASE("A value written is read back byte for byte, and a removed or unknown key is absent", "[redis][storage]") {
    auto s = shared_storage(unique_name("ns"));
    std::string const value = value_of(1, 4096) + std::string("\0\r\n$-1\r\n", 8);
    REQUIRE_FALSE(s.write(key_of(1), value));
    std::string out;
    auto r = s.read(key_of(1), out, 1 << 20);
    CHECK(r.status == cc::read_status::found);
    CHECK(out == value);

    r = s.read(key_of(2), out, 1 << 20);
    CHECK(r.status == cc::read_status::absent);
    CHECK(out.empty());

    REQUIRE_FALSE(s.write(key_of(1), "replaced"));
    CHECK(s.read(key_of(1), out, 100).status == cc::read_status::found);
    CHECK(out == "replaced");

    CHECK_FALSE(s.remove(key_of(1)));
    CHECK(s.read(key_of(1), out, 100).status == cc::read_status::absent);
    CHECK_FALSE(s.remove(key_of(1))); // removing an absent entry is not an error
}

TEST_CASE("Values live under NAMESPACE: + the key in hex, so namespaces do not see each other", "[redis][storage]") {
    std::string const ns_a = unique_name("team-a"), ns_b = unique_name("team-b");
    auto a = shared_storage(ns_a);
    auto b = shared_storage(ns_b);
    REQUIRE_FALSE(a.write(key_of(7), "from a"));
    admin server(fixture::get().server_port());
    CHECK(server({"GET", ns_a + ":" + key_of(7).hex()}) == "from a");
    CHECK(a.redis_key(key_of(7)) == ns_a + ":" + key_of(7).hex());
    std::string out;
    CHECK(b.read(key_of(7), out, 100).status == cc::read_status::absent);
    CHECK(a.read(key_of(7), out, 100).status == cc::read_status::found);
}

TEST_CASE("A value gets the configured expiry, and none by default", "[redis][storage]") {
    cc::redis_options o;
    o.url = fixture::get().server_url();
    o.name_space = unique_name("ttl");
    o.ttl = std::chrono::seconds(600);
    cc::redis_storage with_ttl(o);
    REQUIRE_FALSE(with_ttl.write(key_of(1), "expires"));
    admin server(fixture::get().server_port());
    int const ttl = std::stoi(server({"TTL", with_ttl.redis_key(key_of(1))}));
    CHECK(ttl > 590);
    CHECK(ttl <= 600);

    auto forever = shared_storage(unique_name("no-ttl"));
    REQUIRE_FALSE(forever.write(key_of(1), "stays"));
    CHECK(server({"TTL", forever.redis_key(key_of(1))}) == "-1");
}

TEST_CASE("A value over the read bound is too_large, and no more than the bound leaves the server",
          "[redis][storage]") {
    auto s = shared_storage(unique_name("big"));
    std::string const big = value_of(3, 8 << 20);
    REQUIRE_FALSE(s.write(key_of(3), big));
    admin server(fixture::get().server_port());
    auto const sent_before = std::stoll(server.info("stats", "total_net_output_bytes"));
    std::string out;
    auto r = s.read(key_of(3), out, 4096);
    auto const sent_after = std::stoll(server.info("stats", "total_net_output_bytes"));
    CHECK(r.status == cc::read_status::too_large);
    CHECK(r.error == cc::redis_errc::too_large);
    CHECK(out.empty());
    // The read's reply plus the first INFO's: a few KiB, not 8 MiB.
    CHECK(sent_after - sent_before < 64 * 1024);

    CHECK(s.read(key_of(3), out, big.size()).status == cc::read_status::found);
    CHECK(out == big);
    CHECK(s.read(key_of(3), out, big.size() - 1).status == cc::read_status::too_large);
}

TEST_CASE("read_many answers 42 keys as read answers each: found, a missing key absent, one over the bound too_large",
          "[redis][storage][batch]") {
    auto s = shared_storage(unique_name("batch"));
    std::vector<cc::key> keys;
    for (std::uint64_t i = 0; i < 40; ++i) {
        REQUIRE_FALSE(s.write(key_of(i), value_of(i, 50 + i)));
        keys.push_back(key_of(i));
    }
    REQUIRE_FALSE(s.write(key_of(41), value_of(41, 500)));
    keys.push_back(key_of(40)); // never written
    keys.push_back(key_of(41)); // 500 bytes, over the bound of 100
    admin server(fixture::get().server_port());
    auto const calls_before = server.info("commandstats", "cmdstat_getrange");
    std::vector<std::pair<cc::read_result, std::string>> out;
    s.read_many(keys, 100, out);
    REQUIRE(out.size() == keys.size());
    for (std::size_t i = 0; i < 40; ++i) {
        INFO("key " << i);
        CHECK(out[i].first.status == cc::read_status::found);
        CHECK(out[i].second == value_of(i, 50 + i));
    }
    CHECK(out[40].first.status == cc::read_status::absent);
    CHECK(out[40].second.empty());
    CHECK(out[41].first.status == cc::read_status::too_large);
    CHECK(out[41].first.error == cc::remote_error::too_large);
    CHECK(out[41].second.empty());
    // The same answers as 42 reads.
    for (std::size_t i = 0; i < keys.size(); ++i) {
        std::string one;
        CHECK(s.read(keys[i], one, 100).status == out[i].first.status);
        CHECK(one == out[i].second);
    }
    CHECK(calls_before != server.info("commandstats", "cmdstat_getrange"));
    // An empty batch is an empty answer.
    s.read_many({}, 100, out);
    CHECK(out.empty());
}

TEST_CASE("write_many stores 40 entries as write stores each, in one pipelined exchange, with the configured expiry",
          "[redis][storage][batch]") {
    cc::redis_options o;
    o.url = fixture::get().server_url();
    o.name_space = unique_name("batch-write");
    o.ttl = std::chrono::seconds(600);
    cc::redis_storage s(o);
    std::vector<std::string> values;
    std::vector<std::pair<cc::key, std::string_view>> entries;
    for (std::uint64_t i = 0; i < 40; ++i) values.push_back(value_of(i, 50 + i));
    for (std::uint64_t i = 0; i < 40; ++i) entries.emplace_back(key_of(i), values[i]);
    admin server(fixture::get().server_port());
    std::vector<std::error_code> out;
    s.write_many(entries, out);
    REQUIRE(out.size() == entries.size());
    for (std::uint64_t i = 0; i < 40; ++i) {
        INFO("key " << i);
        CHECK_FALSE(out[i]);
        std::string bytes;
        CHECK(s.read(key_of(i), bytes, 1 << 20).status == cc::read_status::found);
        CHECK(bytes == values[i]);
        int const ttl = std::stoi(server({"TTL", s.redis_key(key_of(i))}));
        CHECK(ttl > 590);
        CHECK(ttl <= 600);
    }
    s.write_many({}, out);
    CHECK(out.empty());
}

TEST_CASE("write_many stores 1,100 entries of 2 KiB, each its own piece of the exchange, past the system's 1,024 "
          "pieces per send",
          "[redis][storage][batch]") {
    cc::redis_options o;
    o.url = fixture::get().server_url();
    o.name_space = unique_name("batch-write-many-pieces");
    cc::redis_storage s(o);
    std::vector<std::string> values;
    std::vector<std::pair<cc::key, std::string_view>> entries;
    for (std::uint64_t i = 0; i < 1100; ++i) values.push_back(value_of(i, 2048));
    for (std::uint64_t i = 0; i < 1100; ++i) entries.emplace_back(key_of(i), values[i]);
    std::vector<std::error_code> out;
    s.write_many(entries, out);
    REQUIRE(out.size() == entries.size());
    std::size_t failed = 0;
    for (auto const& e : out) failed += e ? 1 : 0;
    CHECK(failed == 0);
    for (std::uint64_t i = 0; i < 1100; i += 99) {
        INFO("key " << i);
        std::string bytes;
        CHECK(s.read(key_of(i), bytes, 1 << 20).status == cc::read_status::found);
        CHECK(bytes == values[i]);
    }
}

TEST_CASE("read_many stops at its byte bound: the replies before it are answered, the keys after it are too_large errors",
          "[redis][storage][batch]") {
    cc::redis_options o;
    o.url = fixture::get().server_url();
    o.name_space = unique_name("batch-bound");
    o.batch_max_bytes = 64 * 1024;
    cc::redis_storage s(o);
    std::vector<cc::key> keys;
    for (std::uint64_t i = 0; i < 40; ++i) {
        REQUIRE_FALSE(s.write(key_of(i), value_of(i, 3000)));
        keys.push_back(key_of(i));
    }
    std::vector<std::pair<cc::read_result, std::string>> out;
    s.read_many(keys, 1 << 20, out);
    REQUIRE(out.size() == keys.size());
    std::size_t found = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        INFO("key " << i);
        if (out[i].first.status == cc::read_status::found) {
            CHECK(found == i); // the answered ones come first
            CHECK(out[i].second == value_of(i, 3000));
            ++found;
        } else {
            CHECK(out[i].first.status == cc::read_status::error);
            CHECK(out[i].first.error == cc::remote_error::too_large);
            CHECK(out[i].second.empty());
        }
    }
    // 64 KiB hold 21 values of 3,000 bytes: those up to the exchange's last check that it
    // is in step before the bound (an ECHO of its nonce after every 16th command) are answered.
    CHECK(found >= 16);
    CHECK(found <= 21);
    // The connection was closed at the bound; the next call opens another and reads all.
    std::string one;
    CHECK(s.read(key_of(39), one, 1 << 20).status == cc::read_status::found);
    o.batch_max_bytes = std::size_t(1) << 20;
    o.url = fixture::get().server_url();
    cc::redis_storage roomy(o);
    roomy.read_many(keys, 1 << 20, out);
    for (auto const& [r, bytes] : out) CHECK(r.status == cc::read_status::found);
}

TEST_CASE("A Unix socket and a database number are honoured", "[redis][storage]") {
    compile_cache_test::temp_dir dir;
    std::string const socket = (dir.path() / "redis.sock").string();
    server own("--unixsocket " + socket);
    cc::redis_storage over_socket("unix://" + socket);
    REQUIRE_FALSE(over_socket.write(key_of(1), "by socket"));
    admin a(own.port());
    CHECK(a({"GET", "compile_cache:" + key_of(1).hex()}) == "by socket");

    cc::redis_storage db3(own.url() + "/3");
    REQUIRE_FALSE(db3.write(key_of(2), "in db 3"));
    CHECK(a({"EXISTS", "compile_cache:" + key_of(2).hex()}) == "0");
    REQUIRE(a({"SELECT", "3"}) == "OK");
    CHECK(a({"GET", "compile_cache:" + key_of(2).hex()}) == "in db 3");
    std::string out;
    CHECK(db3.read(key_of(2), out, 100).status == cc::read_status::found);
    CHECK(out == "in db 3");
}

TEST_CASE("The right password connects, a wrong one is an auth error that shows no password", "[redis][storage]") {
    server guarded("--requirepass right-password");
    cc::redis_options o;
    o.url = "redis://:wrong-password@127.0.0.1:" + std::to_string(guarded.port());
    o.name_space = "auth";
    cc::redis_storage wrong(o);
    std::string out;
    auto r = wrong.read(key_of(1), out, 100);
    CHECK(r.status == cc::read_status::error);
    CHECK(r.error == cc::redis_errc::auth);
    CHECK(wrong.write(key_of(1), "x") == cc::redis_errc::auth);
    CHECK(wrong.last_failure().text.find("wrong-password") == std::string::npos);
    CHECK(r.error.message().find("wrong-password") == std::string::npos);

    o.url = "redis://127.0.0.1:" + std::to_string(guarded.port());
    cc::redis_storage none(o);
    CHECK(none.write(key_of(1), "x") == cc::redis_errc::auth); // NOAUTH

    o.password = "right-password"; // as from PREFIX_REMOTE_PASSWORD_FILE
    cc::redis_storage right(o);
    CHECK_FALSE(right.write(key_of(1), "x"));
    CHECK(right.read(key_of(1), out, 100).status == cc::read_status::found);
}

TEST_CASE("An ACL user without write permission reads, and its writes fail as auth", "[redis][storage]") {
    server acl;
    admin a(acl.port());
    REQUIRE(a({"SET", "ro:" + key_of(1).hex(), "written by CI"}) == "OK");
    REQUIRE(a({"ACL", "SETUSER", "reader", "on", ">reader-pw", "~ro:*", "+getrange", "+get", "+ping"}) == "OK");
    cc::redis_options o;
    o.url = "redis://reader:reader-pw@127.0.0.1:" + std::to_string(acl.port());
    o.name_space = "ro";
    cc::redis_storage reader(o);
    std::string out;
    CHECK(reader.read(key_of(1), out, 100).status == cc::read_status::found);
    CHECK(out == "written by CI");
    CHECK(reader.write(key_of(2), "x") == cc::redis_errc::auth);
    CHECK(reader.remove(key_of(1)) == cc::redis_errc::auth);
    CHECK(reader.last_failure().text.rfind("NOPERM", 0) == 0);
    CHECK(a({"EXISTS", "ro:" + key_of(2).hex()}) == "0");

    o.url = "redis://reader:not-its-password@127.0.0.1:" + std::to_string(acl.port());
    cc::redis_storage wrong(o);
    CHECK(wrong.read(key_of(1), out, 100).error == cc::redis_errc::auth);
}

TEST_CASE("Threads may share one storage", "[redis][storage]") {
    auto s = shared_storage(unique_name("threads"));
    std::atomic<int> wrong{0}, errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            std::string out;
            for (std::uint64_t i = 0; i < 200; ++i) {
                std::uint64_t const k = (i * 7 + static_cast<std::uint64_t>(t)) % 50;
                if (i % 3 == 0) {
                    if (s.write(key_of(k), value_of(k, 100 + k))) ++errors;
                } else {
                    auto r = s.read(key_of(k), out, 1 << 16);
                    if (r.status == cc::read_status::error) ++errors;
                    if (r.status == cc::read_status::found && out != value_of(k, 100 + k)) ++wrong;
                }
            }
        });
    for (auto& t : threads) t.join();
    CHECK(wrong == 0);
    CHECK(errors == 0);
}

TEST_CASE("A cache over Redis stores, loads in a fresh cache, and misses garbage planted on the server as corrupt",
          "[redis][storage][cache]") {
    std::string const ns = unique_name("cache");
    artifact const kernel{"k", {1, 2, 3}};
    cc::key_result k = [&] {
        redis_cache probe{shared_storage(ns)};
        return probe.make_key_builder("redis test").add("source", std::string("x * 2")).finish();
    }();
    REQUIRE(k.ok());
    {
        redis_cache cache{shared_storage(ns)};
        CHECK_FALSE(cache.load<artifact>(k));
        CHECK(cache.store(k, kernel));
    }
    {
        redis_cache cache{shared_storage(ns)};
        auto loaded = cache.load<artifact>(k);
        REQUIRE(loaded);
        CHECK(loaded->code == kernel.code);
        CHECK(cache.stats().hits == 1);
    }
    admin server(fixture::get().server_port());
    std::string const name = ns + ":" + k.value().hex();
    REQUIRE(server({"SET", name, "garbage planted by someone else, not an envelope"}) == "OK");
    {
        redis_cache cache{shared_storage(ns)};
        CHECK_FALSE(cache.load<artifact>(k));
        CHECK(cache.stats().miss_count(cc::miss_reason::corrupt) == 1);
        CHECK(cache.stats().hits == 0);
    }
}

TEST_CASE("A cache over Redis alone comes from the environment: PREFIX_REMOTE names the server",
          "[redis][storage][cache]") {
    std::string const ns = unique_name("from-env");
    ::setenv("CCREDIS_ENV_REMOTE", fixture::get().server_url().c_str(), 1);
    ::setenv("CCREDIS_ENV_REMOTE_NAMESPACE", ns.c_str(), 1);
    artifact const kernel{"k", {4, 5}};
    // Without a secret, a shared server is not used unless it is said to be trusted.
    CHECK_FALSE(redis_cache::from_env("CCREDIS_ENV").enabled());
    ::setenv("CCREDIS_ENV_REMOTE_INSECURE", "1", 1);
    {
        auto cache = redis_cache::from_env("CCREDIS_ENV");
        REQUIRE(cache.enabled());
        auto k = cache.make_key_builder("env test").add("source", std::string("y")).finish();
        CHECK(cache.store(k, kernel));
        CHECK(admin(fixture::get().server_port())({"EXISTS", ns + ":" + k.value().hex()}) == "1");
    }
    ::unsetenv("CCREDIS_ENV_REMOTE");
    ::unsetenv("CCREDIS_ENV_REMOTE_NAMESPACE");
    ::unsetenv("CCREDIS_ENV_REMOTE_INSECURE");
    CHECK_FALSE(redis_cache::from_env("CCREDIS_ENV").enabled());
}

TEST_CASE("list gives the keys of its namespace only, with their sizes and last use, on a server and on a cluster", "[redis][storage]") {
    auto const cluster_ports = fixture::get().cluster_ports();
    for (std::string const& url : {fixture::get().server_url(),
                                  "redis+cluster://127.0.0.1:" + std::to_string(cluster_ports[1])}) {
        INFO(url);
        std::string const ns = unique_name("list*[x]");
        cc::redis_options o;
        o.url = url;
        o.name_space = ns;
        cc::redis_storage s(o);
        o.name_space = ns + "-other";
        cc::redis_storage other(o);
        std::set<cc::key> written;
        for (std::uint64_t i = 0; i < 40; ++i) {
            REQUIRE_FALSE(s.write(key_of(i), "v"));
            written.insert(key_of(i));
        }
        REQUIRE_FALSE(other.write(key_of(100), "elsewhere"));
        // A name in the namespace that is not a key: skipped.
        int const port = url.rfind("redis://", 0) == 0 ? fixture::get().server_port() : 0;
        if (port) REQUIRE(admin(port)({"SET", ns + ":not-hex", "x"}) == "OK");
        std::vector<cc::stored_entry> listed;
        auto const before = std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
        CHECK_FALSE(s.list(listed));
        std::set<cc::key> seen;
        for (cc::stored_entry const& e : listed) {
            seen.insert(e.k);
            CHECK(e.size == 1);
            CHECK(e.last_use_s >= before - 5);
            CHECK(e.last_use_s <= before + 5);
        }
        CHECK(seen == written);
    }
}
