// Signed entries over a real redis-server (signing/signed_entries.hpp): CI signs what it
// uploads, a developer machine holding only trusted public keys loads it, keeps it
// locally and sends no write; entries a reader forges or plants never load on a third
// machine; rotating keys. Built where libsodium is found (COMPILE_CACHE_TEST_SIGNING).
#include "catch2_compat.hpp"
#include "support/model.hpp"
#include "support/posix.hpp"
#include "support/redis_servers.hpp"
#include "support/tier_machine.hpp"

#if COMPILE_CACHE_TEST_SIGNING

#include "support/signing_keys.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/signing/signed_entries.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace cc = compile_cache;
using namespace compile_cache_test::redis;
using namespace std::chrono_literals;

namespace {

cc::redis_storage remote_at(std::string const& url, std::string const& ns) {
    cc::redis_options o;
    o.url = url;
    o.name_space = ns;
    o.connect_timeout = 100ms;
    o.command_timeout = 1000ms;
    return cc::redis_storage(o);
}

using compile_cache_test::trusting;

cc::ed25519_signer new_key(std::string const& name) { return compile_cache_test::new_signing_key(name); }

/// One machine: a local directory before the server; `signatures` a writer's or a
/// reader's; chain40-like keys (support/tier_machine.hpp).
struct machine : compile_cache_test::tier_machine<cc::redis_storage> {
    machine(std::string const& local, cc::redis_storage remote, std::shared_ptr<cc::entry_signatures const> signatures,
            std::string secret = {}, cc::remote_mode mode = cc::remote_mode::read_write)
        : tier_machine(local, std::move(remote), with_signatures(std::move(signatures), std::move(secret)),
                       sync_uploads(mode), "signed_redis_test", true) {}
};

std::uint64_t calls_of(admin& a, std::string const& command) { return a.calls(command); }

struct server_and_keys {
    server s;
    admin a{s.port()};
    compile_cache_test::temp_dir dir;
    std::string ns = unique_name("signed");
    cc::ed25519_signer ci = new_key("ci-2026");
    cc::ed25519_public_key ci_public = ci.public_key();
    std::string local(char const* name) const { return (dir.path() / name).string(); }
    std::shared_ptr<cc::entry_signatures const> reader_trusting(std::vector<cc::ed25519_public_key> const& keys) const {
        return std::make_shared<cc::ed25519_entry_signatures>(trusting(keys));
    }
};

} // namespace

TEST_CASE_METHOD(server_and_keys,
                 "Signed on Redis: CI compiles a chain of 40, a reader with trusted keys only loads all 40 from the "
                 "server, then locally with no command sent, and never writes",
                 "[redis][signing]") {
    std::shared_ptr<cc::entry_signatures const> writer = std::make_shared<cc::ed25519_entry_signatures>(std::move(ci));
    {
        machine m(local("ci"), remote_at(s.url(), ns), writer);
        for (int i = 0; i < 40; ++i) CHECK(m.get(i) == cc::outcome::compiled);
        CHECK(m.remote("stores") == 40);
    }
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    {
        machine dev(local("dev"), remote_at(s.url(), ns), reader_trusting({ci_public}), "dev secret",
                    cc::remote_mode::read_only);
        for (int i = 0; i < 40; ++i) CHECK(dev.get(i) == cc::outcome::loaded);
        CHECK(dev.remote("hits") == 40);
        // A kernel of its own: compiled, kept locally, not sent.
        CHECK(dev.get(1000) == cc::outcome::compiled);
    }
    CHECK(calls_of(a, "set") == 0);
    CHECK(calls_of(a, "del") == 0);
    CHECK(calls_of(a, "unlink") == 0);
    REQUIRE(a({"CONFIG", "RESETSTAT"}) == "OK");
    {
        // Even in read-write mode a machine without a signing key uploads nothing.
        machine dev(local("dev"), remote_at(s.url(), ns), reader_trusting({ci_public}), "dev secret");
        for (int i = 0; i < 40; ++i) CHECK(dev.get(i) == cc::outcome::loaded);
        CHECK(dev.remote("hits") == 0);
        CHECK(calls_of(a, "getrange") == 0);
        CHECK(calls_of(a, "get") == 0);
        CHECK(dev.get(1001) == cc::outcome::compiled);
    }
    CHECK(calls_of(a, "set") == 0);
}

TEST_CASE_METHOD(server_and_keys,
                 "Signed on Redis: what a reader seals with its own key, signs with an untrusted key, changes by one "
                 "byte or moves never loads on a third machine, and CI replaces it",
                 "[redis][signing]") {
    std::shared_ptr<cc::entry_signatures const> writer = std::make_shared<cc::ed25519_entry_signatures>(std::move(ci));
    machine ci_machine(local("ci"), remote_at(s.url(), ns), writer);
    for (int i = 0; i < 6; ++i) CHECK(ci_machine.get(i) == cc::outcome::compiled);

    // The thief: a reader's machine with its HMAC secret and a key of its own nobody trusts.
    cc::redis_storage raw = remote_at(s.url(), ns);
    auto const plant = [&](int n, std::string const& bytes) { REQUIRE(!raw.write(ci_machine.key(n).value(), bytes)); };
    auto const read_remote = [&](int n) {
        std::string bytes;
        REQUIRE(raw.read(ci_machine.key(n).value(), bytes, 1 << 20).status == cc::read_status::found);
        return bytes;
    };
    {
        // 0: an entry sealed with the reader's HMAC secret (what it holds) replaces CI's.
        machine thief(local("thief"), remote_at(s.url(), unique_name("thief-ns")), nullptr, "dev secret");
        CHECK(thief.get(0) == cc::outcome::compiled);
        std::string bytes;
        REQUIRE(thief.cache.storage().local().read(thief.key(0).value(), bytes, 1 << 20).status ==
                cc::read_status::found);
        plant(0, bytes);
    }
    {
        // 1: signed by a key that no machine trusts.
        machine rogue(local("rogue"), remote_at(s.url(), unique_name("rogue-ns")),
                      std::make_shared<cc::ed25519_entry_signatures>(new_key("laptop")));
        CHECK(rogue.get(1) == cc::outcome::compiled);
        std::string bytes;
        REQUIRE(rogue.cache.storage().remote().read(rogue.key(1).value(), bytes, 1 << 20).status ==
                cc::read_status::found);
        plant(1, bytes);
    }
    {
        // 2: CI's entry with one payload byte changed.
        std::string bytes = read_remote(2);
        bytes[bytes.size() - 80] = static_cast<char>(bytes[bytes.size() - 80] ^ 0x01);
        plant(2, bytes);
        // 3: CI's valid entry for kernel 4, moved under kernel 3's key.
        plant(3, read_remote(4));
    }
    machine third(local("third"), remote_at(s.url(), ns), reader_trusting({ci_public}), "third secret",
                  cc::remote_mode::read_only);
    for (int i = 0; i < 4; ++i) CHECK(third.get(i) == cc::outcome::compiled);
    CHECK(third.get(4) == cc::outcome::loaded);
    CHECK(third.get(5) == cc::outcome::loaded);
    auto const st = third.cache.stats();
    CHECK(st.miss_count(cc::miss_reason::unauthenticated) == 2); // HMAC-sealed, one byte changed
    CHECK(st.miss_count(cc::miss_reason::untrusted_signer) == 1);
    CHECK(st.miss_count(cc::miss_reason::key_mismatch) == 1);
    CHECK(third.remote("hits") == 2);

    // CI's next run replaces what was planted (nothing unsigned is kept as another
    // secret's), and the third machine then loads CI's entries.
    {
        machine ci_again(local("ci-again"), remote_at(s.url(), ns), writer);
        for (int i = 0; i < 4; ++i) CHECK(ci_again.get(i) == cc::outcome::compiled);
        CHECK(ci_again.remote("stores") == 4);
    }
    for (int i = 0; i < 4; ++i) CHECK(third.get(i) == cc::outcome::loaded);
}

TEST_CASE_METHOD(server_and_keys,
                 "Signed on Redis: with two trusted keys both writers' entries load, and with one key removed, its entries miss "
                 "untrusted-signer, naming its id once, and the other's still load",
                 "[redis][signing]") {
    cc::ed25519_signer next = new_key("ci-2027");
    cc::ed25519_public_key const next_public = next.public_key();
    std::string const old_id = cc::to_hex(ci.id());
    {
        machine old_ci(local("old-ci"), remote_at(s.url(), ns),
                       std::make_shared<cc::ed25519_entry_signatures>(std::move(ci)));
        for (int i = 0; i < 3; ++i) CHECK(old_ci.get(i) == cc::outcome::compiled);
        machine new_ci(local("new-ci"), remote_at(s.url(), ns),
                       std::make_shared<cc::ed25519_entry_signatures>(std::move(next)));
        for (int i = 3; i < 6; ++i) CHECK(new_ci.get(i) == cc::outcome::compiled);
    }
    {
        machine both(local("both"), remote_at(s.url(), ns), reader_trusting({ci_public, next_public}), {},
                     cc::remote_mode::read_only);
        for (int i = 0; i < 6; ++i) CHECK(both.get(i) == cc::outcome::loaded);
    }
    machine rotated(local("rotated"), remote_at(s.url(), ns), reader_trusting({next_public}), {},
                    cc::remote_mode::read_only);
    for (int i = 0; i < 3; ++i) CHECK(rotated.get(i) == cc::outcome::compiled);
    for (int i = 3; i < 6; ++i) CHECK(rotated.get(i) == cc::outcome::loaded);
    CHECK(rotated.cache.stats().miss_count(cc::miss_reason::untrusted_signer) == 3);
    std::size_t naming = 0;
    for (auto const& line : rotated.log) naming += line.find(old_id) != std::string::npos;
    CHECK(naming == 1);
}

namespace {
/// A cache over the Redis storage alone (no tier): it cannot check signatures.
using redis_alone_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::redis_storage>;

/// A file of `bytes` only its owner may read and write.
void write_private_file(std::filesystem::path const& path, std::string const& bytes) {
    compile_cache_test::write_file(path, bytes);
    ::chmod(path.c_str(), 0600);
}

/// What a reader holding the fleet secret (and no signing key) stores under `k` on the
/// server at `url`, namespace `ns`: an HMAC-sealed entry, straight to the server.
void plant_hmac_entry(std::string const& url, std::string const& ns, std::string const& secret,
                      cc::key_result const& k) {
    cc::cache_options o;
    o.secret = secret;
    redis_alone_cache forger(remote_at(url, ns), o);
    REQUIRE(forger.enabled());
    REQUIRE(forger.store(k, std::string("planted-by-a-reader")));
}
} // namespace

TEST_CASE_METHOD(server_and_keys,
                 "Signed on Redis alone, from_env: trusted keys and a secret disable the cache in one line, never an "
                 "HMAC-only cache a secret holder can plant in",
                 "[redis][signing]") {
    std::string const secret = "the-fleet-secret-every-reader-holds";
    write_private_file(dir.path() / "secret", secret);
    write_private_file(dir.path() / "trusted-keys", ci_public.line() + "\n");
    compile_cache_test::scoped_settings env("CCSIGNALONE", {"_REMOTE", "_REMOTE_NAMESPACE", "_SECRET_FILE",
                                                            "_TRUSTED_KEYS_FILE", "_SIGNING_KEY_FILE", "_LOG"});
    env.set("_REMOTE", s.url());
    env.set("_REMOTE_NAMESPACE", ns);
    env.set("_SECRET_FILE", (dir.path() / "secret").string());
    env.set("_TRUSTED_KEYS_FILE", (dir.path() / "trusted-keys").string());
    env.set("_LOG", "1");
    compile_cache_test::captured_stderr err(dir.path() / "stderr");
    redis_alone_cache host = redis_alone_cache::from_env("CCSIGNALONE");
    std::string const said = err.text();
    INFO(said);
    CHECK_FALSE(host.enabled());
    auto const k = host.make_key_builder("signed_redis_test").add("source", std::string("kernel")).finish();
    plant_hmac_entry(s.url(), ns, secret, k);
    CHECK_FALSE(host.load<std::string>(k));
    REQUIRE(compile_cache_test::lines_of(said).size() == 1);
    CHECK(said.find("CCSIGNALONE_TRUSTED_KEYS_FILE is set, but trusted keys need a tier (tiered_storage); this "
                    "storage cannot check signatures") != std::string::npos);
    CHECK(said.find("the cache is disabled") != std::string::npos);
}

TEST_CASE_METHOD(server_and_keys,
                 "Signed on Redis alone, from_env: trusted keys and REMOTE_INSECURE=1: the line says keys need a tier, "
                 "not to set what is set",
                 "[redis][signing]") {
    write_private_file(dir.path() / "trusted-keys", ci_public.line() + "\n");
    compile_cache_test::scoped_settings env("CCSIGNALONE", {"_REMOTE", "_REMOTE_NAMESPACE", "_TRUSTED_KEYS_FILE",
                                                            "_REMOTE_INSECURE"});
    env.set("_REMOTE", s.url());
    env.set("_REMOTE_NAMESPACE", ns);
    env.set("_TRUSTED_KEYS_FILE", (dir.path() / "trusted-keys").string());
    env.set("_REMOTE_INSECURE", "1");
    compile_cache_test::captured_stderr err(dir.path() / "stderr");
    bool const enabled = redis_alone_cache::from_env("CCSIGNALONE").enabled();
    std::string const said = err.text();
    INFO(said);
    CHECK_FALSE(enabled);
    CHECK(said.find("REMOTE_INSECURE") == std::string::npos);
    CHECK(said.find("SECRET_FILE") == std::string::npos);
    CHECK(said.find("CCSIGNALONE_TRUSTED_KEYS_FILE is set, but trusted keys need a tier (tiered_storage); this "
                    "storage cannot check signatures") != std::string::npos);
}

TEST_CASE_METHOD(server_and_keys,
                 "Signed on Redis alone, in code: signatures and a secret over redis_storage give a disabled cache and "
                 "one line, never an HMAC-only one",
                 "[redis][signing]") {
    std::string const secret = "the-fleet-secret-every-reader-holds";
    std::vector<std::string> said;
    cc::cache_options o;
    o.secret = secret;
    o.signatures = reader_trusting({ci_public});
    o.logger = [&said](std::string_view line) { said.emplace_back(line); };
    redis_alone_cache host(remote_at(s.url(), ns), o);
    CHECK_FALSE(host.enabled());
    auto const k = host.make_key_builder("signed_redis_test").add("source", std::string("kernel")).finish();
    plant_hmac_entry(s.url(), ns, secret, k);
    CHECK_FALSE(host.load<std::string>(k));
    REQUIRE(said.size() == 1);
    CHECK(said[0].find("trusted keys need a tier (tiered_storage); this storage cannot check signatures") !=
          std::string::npos);
    CHECK(said[0].find("the cache is disabled") != std::string::npos);
}

#endif // COMPILE_CACHE_TEST_SIGNING
