// Redis addresses, settings and cluster key routing: what needs no server (and the
// slot function checked against a real cluster's CLUSTER KEYSLOT).
#include "catch2_compat.hpp"
#include "support/redis_servers.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;

namespace {
cc::redis_address parse_ok(std::string const& url) {
    std::string why;
    auto a = cc::redis_address::parse(url, why);
    INFO(url << ": " << why);
    REQUIRE(a);
    CHECK(why.empty());
    return *a;
}

std::string parse_error(std::string const& url) {
    std::string why;
    auto a = cc::redis_address::parse(url, why);
    INFO(url);
    CHECK_FALSE(a);
    CHECK_FALSE(why.empty());
    return why;
}

using compile_cache_test::env_var;

/// What a cache hands the storage: `env`, and whether a remote may be used (the cache
/// says so when entries are authenticated or PREFIX_REMOTE_INSECURE is on).
cc::storage_settings settings_of(cc::settings_reader const& env, bool remote_trusted) {
    return cc::storage_settings{env, false, remote_trusted, {}, {}};
}
} // namespace

TEST_CASE("A redis:// address gives host, port, database and credentials, with defaults", "[redis][address]") {
    auto a = parse_ok("redis://127.0.0.1");
    CHECK(a.type == cc::redis_address::kind::server);
    REQUIRE(a.nodes.size() == 1);
    CHECK(a.nodes[0].host == "127.0.0.1");
    CHECK(a.nodes[0].port == 6379);
    CHECK(a.db == 0);
    CHECK(a.password.empty());

    a = parse_ok("redis://ci:s3cret@localhost:7000/5");
    CHECK(a.user == "ci");
    CHECK(a.password == "s3cret");
    CHECK(a.nodes[0].host == "localhost");
    CHECK(a.nodes[0].port == 7000);
    CHECK(a.db == 5);

    a = parse_ok("redis://ci@localhost"); // a user whose password comes from a file
    CHECK(a.user == "ci");
    CHECK(a.password.empty());
    CHECK(a.describe() == "redis://***@localhost:6379");

    a = parse_ok("redis://:only-password@[::1]:6380");
    CHECK(a.user.empty());
    CHECK(a.password == "only-password");
    CHECK(a.nodes[0].host == "::1");
    CHECK(a.nodes[0].port == 6380);
}

TEST_CASE("A unix:// address names a socket and a cluster address lists its seed nodes", "[redis][address]") {
    auto a = parse_ok("unix:///run/redis/redis.sock");
    CHECK(a.type == cc::redis_address::kind::unix_socket);
    CHECK(a.socket_path == "/run/redis/redis.sock");

    a = parse_ok("redis+cluster://127.0.0.1:7000,127.0.0.1:7001,[::1]:7002");
    CHECK(a.type == cc::redis_address::kind::cluster);
    REQUIRE(a.nodes.size() == 3);
    CHECK(a.nodes[1].port == 7001);
    CHECK(a.nodes[2].host == "::1");
}

// A URL's scheme is case-insensitive (RFC 3986, 3.1), and the HTTP storage takes
// `HTTPS://`: `REDIS://` was refused as an unknown scheme, and no remote claimed it.
TEST_CASE("A scheme in capitals is a Redis address, as a scheme in any case is", "[redis][address]") {
    auto a = parse_ok("REDIS://ci:s3cret@127.0.0.1:7000/2");
    CHECK(a.type == cc::redis_address::kind::server);
    CHECK(a.password == "s3cret");
    CHECK(a.db == 2);
    CHECK(parse_ok("Redis+Cluster://127.0.0.1:7000,127.0.0.1:7001").type == cc::redis_address::kind::cluster);
    CHECK(parse_ok("UNIX:///run/redis/redis.sock").socket_path == "/run/redis/redis.sock");
    CHECK(cc::redis_storage::handles_url("REDIS://host"));
    CHECK(cc::redis_storage::handles_url("Redis+Cluster://host:7000"));
    CHECK_FALSE(cc::redis_storage::handles_url("rediss://host"));
    std::string why;
    CHECK_FALSE(cc::redis_address::parse("REDIS:/host", why));

    // A real server, addressed in capitals.
    std::string const url = fixture::get().server_url();
    REQUIRE(url.rfind("redis://", 0) == 0);
    cc::redis_options o;
    o.url = "REDIS://" + url.substr(8);
    o.name_space = unique_name("capitals");
    cc::redis_storage s(o);
    REQUIRE_FALSE(s.write(key_of(1), "in capitals"));
    std::string out;
    CHECK(s.read(key_of(1), out, 100).status == cc::read_status::found);
    CHECK(out == "in capitals");
}

TEST_CASE("A bad address is refused with a sentence that says what is wrong", "[redis][address]") {
    CHECK(parse_error("http://127.0.0.1").find("unknown scheme") != std::string::npos);
    CHECK(parse_error("redis://").find("no host") != std::string::npos);
    CHECK(parse_error("redis://127.0.0.1:0").find("port") != std::string::npos);
    CHECK(parse_error("redis://127.0.0.1:70000").find("port") != std::string::npos);
    CHECK(parse_error("redis://127.0.0.1:six").find("port") != std::string::npos);
    CHECK(parse_error("redis://127.0.0.1/x").find("database") != std::string::npos);
    CHECK(parse_error("redis://a:1,b:2").find("redis+cluster://") != std::string::npos);
    CHECK(parse_error("redis+cluster://a:1,").find("empty host") != std::string::npos);
    CHECK(parse_error("unix://relative.sock").find("absolute") != std::string::npos);
    // A socket path the kernel would cut short (sun_path holds 107 bytes and a NUL).
    std::string const longest = "/" + std::string(106, 's');
    CHECK(parse_ok("unix://" + longest).socket_path == longest);
    CHECK(parse_error("unix://" + longest + "s").find("shorter than 108 bytes") != std::string::npos);
    CHECK_THROWS_AS(cc::redis_storage(std::string("nonsense")), std::invalid_argument);
}

TEST_CASE("A password never shows in an error, a description or a log line", "[redis][address]") {
    std::string const secret = "hunter2-do-not-print";
    std::string why = parse_error("redis://admin:" + secret + "@127.0.0.1:notaport");
    CHECK(why.find(secret) == std::string::npos);
    CHECK(why.find("admin:***@") != std::string::npos);
    why = parse_error("redis+cluster://:" + secret + "@a:1,");
    CHECK(why.find(secret) == std::string::npos);

    auto a = parse_ok("redis://admin:" + secret + "@127.0.0.1:6390/2");
    CHECK(a.describe() == "redis://admin:***@127.0.0.1:6390/2");
    cc::redis_storage s("redis://admin:" + secret + "@127.0.0.1:6390/2");
    CHECK(s.describe().find(secret) == std::string::npos);
    try {
        cc::redis_storage bad("redis://admin:" + secret + "@127.0.0.1:99999");
        FAIL("a bad port was accepted");
    } catch (std::invalid_argument const& e) {
        CHECK(std::string(e.what()).find(secret) == std::string::npos);
    }

    std::vector<std::string> lines;
    cc::settings_reader env("CCREDIS", [&](std::string_view line) { lines.emplace_back(line); });
    env_var url("CCREDIS_REMOTE", "redis://u:" + secret + "@127.0.0.1:bad");
    auto const r = cc::redis_storage::from_env(settings_of(env, true));
    CHECK_FALSE(r);
    CHECK(lines.empty());
    CHECK(r.why_off().find(secret) == std::string::npos);
    CHECK(r.why_off().find("CCREDIS_REMOTE") != std::string::npos);
}

TEST_CASE("read_redis_password_file reads a password file as from_env does, one line end dropped",
          "[redis][address]") {
    compile_cache_test::temp_dir dir;
    std::string password;
    compile_cache_test::write_file(dir.path() / "crlf", "p@ss:word\r\n");
    CHECK(cc::read_redis_password_file((dir.path() / "crlf").string(), password).empty());
    CHECK(password == "p@ss:word");
    compile_cache_test::write_file(dir.path() / "two", "twice\n\n");
    CHECK(cc::read_redis_password_file((dir.path() / "two").string(), password).empty());
    CHECK(password == "twice\n"); // (one line end only: the rest is the password's)
    compile_cache_test::write_file(dir.path() / "empty", "");
    CHECK_FALSE(cc::read_redis_password_file((dir.path() / "empty").string(), password).empty()); // (refused)
    CHECK_FALSE(cc::read_redis_password_file((dir.path() / "missing").string(), password).empty());
}

TEST_CASE("from_env reads the remote's settings, and a bad one is one line and its default", "[redis][address]") {
    std::vector<std::string> lines;
    cc::settings_reader env("CCREDIS", [&](std::string_view line) { lines.emplace_back(line); });
    {
        env_var off("CCREDIS_REMOTE", "off");
        auto const r = cc::redis_storage::from_env(settings_of(env, true));
        CHECK_FALSE(r);
        CHECK(r.why_off().empty()); // not configured
        CHECK(lines.empty());
    }
    compile_cache_test::temp_dir dir;
    compile_cache_test::write_file(dir.path() / "password", "from-the-file\n");
    env_var url("CCREDIS_REMOTE", "redis://127.0.0.1:6390");
    env_var password("CCREDIS_REMOTE_PASSWORD_FILE", (dir.path() / "password").string());
    env_var name_space("CCREDIS_REMOTE_NAMESPACE", "team-a");
    env_var connect("CCREDIS_REMOTE_CONNECT_TIMEOUT", "250ms");
    env_var timeout("CCREDIS_REMOTE_TIMEOUT", "soon");
    env_var ttl("CCREDIS_REMOTE_TTL", "86400");
    auto o = cc::redis_storage::redis_options_from_env(env);
    REQUIRE(o);
    CHECK(o->password == "from-the-file");
    CHECK(o->name_space == "team-a");
    CHECK(o->connect_timeout == std::chrono::milliseconds(250));
    CHECK(o->command_timeout == std::chrono::milliseconds(1000));
    CHECK(o->ttl == std::chrono::seconds(86400));
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("CCREDIS_REMOTE_TIMEOUT=\"soon\"") != std::string::npos);
    CHECK(lines[0].find("default, 1000 ms") != std::string::npos);

    // What a shared server returns runs as code: without a secret, only when the
    // server is said to be trusted, and otherwise one line saying how to set a secret.
    auto const untrusted = cc::redis_storage::from_env(settings_of(env, false));
    CHECK_FALSE(untrusted);
    CHECK(untrusted.why_off().rfind("CCREDIS_REMOTE is set but entries are not authenticated", 0) == 0);
    auto s = cc::redis_storage::from_env(settings_of(env, true));
    REQUIRE(s);
    CHECK(s->describe() == "redis://:***@127.0.0.1:6390 (namespace team-a)");
    CHECK(s->describe().find("from-the-file") == std::string::npos);
}

TEST_CASE("A zero timeout is one line and the default", "[redis][address]") {
    std::vector<std::string> lines;
    cc::settings_reader env("CCREDIS", [&](std::string_view line) { lines.emplace_back(line); });
    env_var url("CCREDIS_REMOTE", "redis://127.0.0.1:6390");
    env_var connect("CCREDIS_REMOTE_CONNECT_TIMEOUT", "0");
    env_var ttl("CCREDIS_REMOTE_TTL", "-5");
    auto o = cc::redis_storage::redis_options_from_env(env);
    REQUIRE(o);
    CHECK(o->connect_timeout == std::chrono::milliseconds(100));
    CHECK(o->ttl == std::chrono::seconds(0));
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "CCREDIS_REMOTE_CONNECT_TIMEOUT=\"0\" is not a positive duration; using the default, 100 ms");
    CHECK(lines[1] == "CCREDIS_REMOTE_TTL=\"-5\" is not a number of seconds; using the default, 0 (no expiry)");
}

TEST_CASE("A password file that cannot be read turns the remote off with one line", "[redis][address]") {
    std::vector<std::string> lines;
    cc::settings_reader env("CCREDIS", [&](std::string_view line) { lines.emplace_back(line); });
    env_var url("CCREDIS_REMOTE", "redis://127.0.0.1:6390");
    env_var password("CCREDIS_REMOTE_PASSWORD_FILE", "/nonexistent/password");
    auto const r = cc::redis_storage::from_env(settings_of(env, true));
    CHECK_FALSE(r);
    CHECK(lines.empty());
    CHECK(r.why_off().find("CCREDIS_REMOTE_PASSWORD_FILE") != std::string::npos);

    // Read as the secret file is: one that any user may write is refused too.
    compile_cache_test::temp_dir dir;
    compile_cache_test::write_file(dir.path() / "password", "planted-by-anyone");
    REQUIRE(::chmod((dir.path() / "password").c_str(), 0666) == 0);
    env_var writable("CCREDIS_REMOTE_PASSWORD_FILE", (dir.path() / "password").string());
    auto const writable_answer = cc::redis_storage::redis_options_from_env(env);
    CHECK_FALSE(writable_answer);
    CHECK(writable_answer.why_off().find("any user can write it") != std::string::npos);
    CHECK(writable_answer.why_off().find("planted-by-anyone") == std::string::npos);
}

TEST_CASE("CRC16 is the XMODEM variant the cluster specification gives", "[redis][cluster]") {
    STATIC_REQUIRE(cc::detail::redis_crc16("123456789") == 0x31C3);
    CHECK(cc::detail::redis_crc16("") == 0);
}

TEST_CASE("A key's slot honours the first non-empty hash tag", "[redis][cluster]") {
    // Values from the cluster specification and CLUSTER KEYSLOT.
    CHECK(cc::detail::redis_hash_slot("foo") == 12182);
    CHECK(cc::detail::redis_hash_slot("bar") == 5061);
    CHECK(cc::detail::redis_hash_slot("hello") == 866);
    CHECK(cc::detail::redis_hash_slot("{user1000}.following") == cc::detail::redis_hash_slot("{user1000}.followers"));
    CHECK(cc::detail::redis_hash_slot("{user1000}.following") == cc::detail::redis_hash_slot("user1000"));
    CHECK(cc::detail::redis_hash_slot("foo{}{bar}") == cc::detail::redis_crc16("foo{}{bar}") % 16384);
    CHECK(cc::detail::redis_hash_slot("foo{{bar}}zap") == cc::detail::redis_crc16("{bar") % 16384);
    CHECK(cc::detail::redis_hash_slot("foo{bar}{zap}") == cc::detail::redis_hash_slot("bar"));
}

TEST_CASE("The client's slots agree with a real cluster's CLUSTER KEYSLOT", "[redis][cluster]") {
    admin node(fixture::get().cluster_ports()[0]);
    for (std::string key : {"a", "compile_cache:00ff", "{tag}x", "x{}y", "\xff\xfe binary", "foo{{bar}}zap"}) {
        INFO(key);
        CHECK(node({"CLUSTER", "KEYSLOT", key}) == std::to_string(cc::detail::redis_hash_slot(key)));
    }
    for (std::uint64_t i = 0; i < 50; ++i) {
        std::string const name = "compile_cache:" + key_of(i).hex();
        CHECK(node({"CLUSTER", "KEYSLOT", name}) == std::to_string(cc::detail::redis_hash_slot(name)));
    }
}

TEST_CASE("MOVED and ASK replies are parsed, anything else is not a redirection", "[redis][cluster]") {
    auto m = cc::detail::parse_redis_redirection("MOVED 3999 127.0.0.1:6381");
    REQUIRE(m);
    CHECK_FALSE(m->ask);
    CHECK(m->slot == 3999);
    CHECK(m->host == "127.0.0.1");
    CHECK(m->port == 6381);
    auto a = cc::detail::parse_redis_redirection("ASK 1 [::1]:7000");
    REQUIRE(a);
    CHECK(a->ask);
    CHECK(a->host == "::1");
    auto empty_host = cc::detail::parse_redis_redirection("MOVED 12 :7001");
    REQUIRE(empty_host);
    CHECK(empty_host->host.empty());
    CHECK_FALSE(cc::detail::parse_redis_redirection("ERR wrong"));
    CHECK_FALSE(cc::detail::parse_redis_redirection("MOVED 16384 h:1"));
    CHECK_FALSE(cc::detail::parse_redis_redirection("MOVED 1 h"));
    CHECK_FALSE(cc::detail::parse_redis_redirection("ASK x h:1"));
}

TEST_CASE("A password in a query string is refused and never shown", "[redis][address]") {
    std::string const secret = "query-s3cret";
    std::string why;
    CHECK_FALSE(cc::redis_address::parse("redis://127.0.0.1:6390/0?password=" + secret, why));
    CHECK(why.find("query parameters are not supported") != std::string::npos);
    CHECK(why.find(secret) == std::string::npos);
    CHECK_FALSE(cc::redis_address::parse("redis://127.0.0.1?password=" + secret, why));
    CHECK(why.find(secret) == std::string::npos);
    CHECK(cc::redis_address::redact("redis://u:pw@h:1?password=" + secret) == "redis://u:***@h:1?***");
}

namespace {
/// Every way a URL may carry a secret: as the user alone (which some clients take for
/// a password), as the password with or without a user, with `?`, `@`, `:` and `%` in
/// it, and percent-encoded. Each names its secret's distinctive parts.
struct secret_url {
    std::string url;                  ///< with HOST where the host and port go
    std::vector<std::string> secrets; ///< none of which may ever be shown
};

std::vector<secret_url> secret_urls() {
    return {
        {"redis://S3cretPW@HOST", {"S3cretPW", "S3cret"}},
        {"redis://:Sec?retPW@HOST", {"Sec?retPW", "Sec", "retPW"}},
        {"redis://ci:Sec?retPW@HOST/2", {"Sec?retPW", "Sec", "retPW"}},
        {"redis://ci:p@ssw0rd@HOST", {"p@ssw0rd", "ssw0rd"}},
        {"redis://ci:pa:ssw0rd@HOST", {"pa:ssw0rd", "ssw0rd"}},
        {"redis://ci:pc%t-w0rd@HOST", {"pc%t-w0rd", "w0rd"}},
        {"redis://ci:p%40ss%3Fw0rd%3A@HOST", {"p%40ss%3Fw0rd%3A", "p@ss?w0rd:", "ss%3Fw0rd", "ss?w0rd", "w0rd"}},
        {"redis://%53ecr%45t@HOST", {"%53ecr%45t", "SecrEt", "ecr"}},
        {"redis+cluster://:Sec?retPW@HOST,HOST", {"Sec?retPW", "Sec", "retPW"}},
        {"redis://HOST/0?password=Qu3ry", {"Qu3ry"}},
        {"redis://ci:Sec?retPW@HOST?password=Qu3ry", {"Sec?retPW", "Sec", "retPW", "Qu3ry"}},
        {"unix://:Sock3tPW@/run/redis.sock", {"Sock3tPW"}},
    };
}

std::string with_host(std::string url, std::string const& host) {
    for (std::size_t at = url.find("HOST"); at != std::string::npos; at = url.find("HOST", at + host.size()))
        url.replace(at, 4, host);
    return url;
}

void check_hidden(std::string const& shown, secret_url const& u) {
    INFO(u.url << " shown as " << shown);
    for (std::string const& s : u.secrets) CHECK(shown.find(s) == std::string::npos);
}
} // namespace

TEST_CASE("No form of URL ever shows its password: not parsed, described, redacted or in a setting's line",
          "[redis][address]") {
    for (secret_url const& u : secret_urls()) {
        for (std::string const host : {"127.0.0.1:6390", "127.0.0.1:notaport", "127.0.0.1:0"}) {
            std::string const url = with_host(u.url, host);
            check_hidden(cc::redis_address::redact(url), u);
            std::string why;
            if (auto const a = cc::redis_address::parse(url, why)) check_hidden(a->describe(), u);
            check_hidden(why, u);
            try {
                cc::redis_storage s(url);
                check_hidden(s.describe(), u);
            } catch (std::invalid_argument const& e) {
                check_hidden(e.what(), u);
            }
            std::vector<std::string> lines;
            {
                env_var remote("CCREDIS_REMOTE", url);
                env_var insecure("CCREDIS_REMOTE_INSECURE", "1");
                cc::settings_reader env("CCREDIS", [&](std::string_view line) { lines.emplace_back(line); });
                auto s = cc::redis_storage::from_env(settings_of(env, true));
                if (s) check_hidden(s->describe(), u);
                check_hidden(s.why_off(), u);
            }
            for (std::string const& line : lines) check_hidden(line, u);
        }
    }
}

TEST_CASE("A password may hold ?, @, : and % as they are, or percent-encoded", "[redis][address]") {
    auto a = parse_ok("redis://:Sec?retPW@127.0.0.1:6390");
    CHECK(a.password == "Sec?retPW");
    CHECK(a.nodes.at(0).port == 6390);
    CHECK(a.describe() == "redis://:***@127.0.0.1:6390");
    a = parse_ok("redis://ci:p@ss:w0rd@127.0.0.1");
    CHECK(a.user == "ci");
    CHECK(a.password == "p@ss:w0rd");
    a = parse_ok("redis://c%69:p%40ss%3Fw0rd%3a@127.0.0.1");
    CHECK(a.user == "ci");
    CHECK(a.password == "p@ss?w0rd:");
    a = parse_ok("redis://ci:100%-sure@127.0.0.1"); // a % that encodes nothing is itself
    CHECK(a.password == "100%-sure");
    // A query after the host is still refused, and its value never shown.
    std::string why;
    CHECK_FALSE(cc::redis_address::parse("redis://:pw@127.0.0.1?db=1", why));
    CHECK(why.find("query parameters") != std::string::npos);
}
