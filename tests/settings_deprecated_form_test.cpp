// The deprecated storage contract, `static std::optional<S> from_env(settings_reader&)`:
// a storage written against it keeps working through basic_cache::from_env, alone and
// as a tier of tiered_storage, its reader answering confirm(), authenticated(),
// remote_trusted() and logger() from what the cache read before it asked. This file
// uses the deprecated form on purpose, so deprecation warnings are allowed here alone
// (tests/consumers checks that a host sees the sentence).
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include "catch2_compat.hpp"
#include "support/posix.hpp"

#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/string.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace cc = compile_cache;
using compile_cache_test::lines_of;
using namespace std::chrono_literals;

/// The CCOLDTEST_* variables these tests set, unset before and after each.
struct old_form_env : compile_cache_test::scoped_settings {
    old_form_env()
        : scoped_settings("CCOLDTEST", {"_FILE", "_LOG", "_SECRET_FILE", "_WAIT", "_VERIFY", "_REMOTE",
                                        "_REMOTE_INSECURE"}) {}
};

/// A user's storage written against the earlier contract: CCOLDTEST_FILE is its main
/// setting (`refuse`: it declines after one line; `needs-remote`: it asks remote_trusted()),
/// CCOLDTEST_WAIT a duration.
class old_form_storage {
public:
    old_form_storage() = default;
    explicit old_form_storage(std::string path_) : path(std::move(path_)) {}

    static std::optional<old_form_storage> from_env(cc::settings_reader& env) {
        ++asked;
        std::string path = env.value("_FILE");
        if (env.is_off("_FILE") || !env.confirm()) return std::nullopt;
        if (path == "refuse") {
            env.report(env.name("_FILE") + "=\"refuse\" is not a database; the cache is disabled");
            return std::nullopt;
        }
        if (path == "needs-remote" && !env.remote_trusted()) return std::nullopt;
        authenticated_seen = env.authenticated();
        logger_seen = static_cast<bool>(env.logger());
        wait = env.milliseconds("_WAIT", 100ms);
        ++made;
        return old_form_storage(path);
    }

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return entries.read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) { return entries.write(k, bytes); }
    std::error_code remove(cc::key const& k) { return entries.remove(k); }

    std::string path;
    cc::memory_storage entries;
    static inline int asked = 0;
    static inline int made = 0;
    static inline bool authenticated_seen = false;
    static inline bool logger_seen = false;
    static inline std::chrono::milliseconds wait{};
};

/// A remote made from the URL in CCOLDTEST_REMOTE (no from_env of its own).
struct url_remote : cc::memory_storage {
    url_remote() = default;
    explicit url_remote(std::string) {}
};

using old_form_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, old_form_storage>;
using old_form_tier = cc::tiered_storage<old_form_storage, url_remote>;
using old_form_tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, old_form_tier>;

static_assert(cc::detail::uses_deprecated_from_env<old_form_storage>::value);
static_assert(cc::detail::uses_deprecated_from_env<old_form_tier>::value);
static_assert(!cc::detail::uses_deprecated_from_env<cc::directory_storage>::value);
static_assert(cc::storage_capabilities<old_form_storage>::from_env &&
              cc::storage_capabilities<old_form_storage>::from_env_is_deprecated);
static_assert(cc::storage_capabilities<cc::directory_storage>::from_env &&
              !cc::storage_capabilities<cc::directory_storage>::from_env_is_deprecated);

/// from_env's cache, and the lines it printed on stderr.
template <class Cache>
std::pair<Cache, std::vector<std::string>> from_env_printing(compile_cache_test::temp_dir const& dir) {
    compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
    Cache c = Cache::from_env("CCOLDTEST");
    return {std::move(c), lines_of(err.text())};
}

} // namespace

TEST_CASE("The deprecated from_env(settings_reader&) form still configures a storage, answered from what the "
          "cache read first",
          "[settings]") {
    old_form_env env;
    compile_cache_test::temp_dir dir;
    old_form_storage::asked = old_form_storage::made = 0;

    SECTION("its main setting off: no cache, nothing printed, the cache's own lines neither") {
        env.set("_LOG", "verbose");
        env.set("_SECRET_FILE", (dir.path() / "missing.key").string());
        auto [c, lines] = from_env_printing<old_form_cache>(dir);
        CHECK(!c.enabled());
        CHECK(lines.empty());
        CHECK(old_form_storage::asked == 1);
    }
    SECTION("configured: the cache's lines, then the storage's, and the answers it asked for") {
        env.set("_FILE", "kept");
        env.set("_VERIFY", "often");
        env.set("_WAIT", "soon");
        auto [c, lines] = from_env_printing<old_form_cache>(dir);
        REQUIRE(c.enabled());
        CHECK(c.storage().path == "kept");
        CHECK(old_form_storage::wait == 100ms);
        CHECK(!old_form_storage::authenticated_seen);
        CHECK(!old_form_storage::logger_seen);
        REQUIRE(lines.size() == 2);
        CHECK(lines[0].rfind("compile_cache: CCOLDTEST_VERIFY=\"often\"", 0) == 0);
        CHECK(lines[1].rfind("compile_cache: CCOLDTEST_WAIT=\"soon\"", 0) == 0);
        auto const k = c.make_key_builder("old form 1").add("ir", "x").finish();
        CHECK(c.get_or_compile<std::string>(k, {}, [] { return std::string("compiled"); }).outcome ==
              cc::outcome::compiled);
        CHECK(c.get_or_compile<std::string>(k, {}, [] { return std::string("compiled"); }).outcome ==
              cc::outcome::loaded);
    }
    SECTION("authenticated() and logger() answer what the cache read") {
        compile_cache_test::write_private_file(dir.path() / "secret.key", "0123456789abcdef");
        env.set("_FILE", "kept");
        env.set("_LOG", "1");
        env.set("_SECRET_FILE", (dir.path() / "secret.key").string());
        auto [c, lines] = from_env_printing<old_form_cache>(dir);
        CHECK(c.authenticated());
        CHECK(old_form_storage::authenticated_seen);
        CHECK(old_form_storage::logger_seen);
        CHECK(lines.empty());
    }
    SECTION("a bad secret file: confirm() is false, one line, and the storage is not made") {
        env.set("_FILE", "kept");
        env.set("_WAIT", "soon");
        env.set("_SECRET_FILE", (dir.path() / "missing.key").string());
        auto [c, lines] = from_env_printing<old_form_cache>(dir);
        CHECK(!c.enabled());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: CCOLDTEST_SECRET_FILE=", 0) == 0);
        CHECK(old_form_storage::made == 0);
    }
    SECTION("the storage declines after its line: exactly that line, and no cache") {
        env.set("_FILE", "refuse");
        env.set("_LOG", "1");
        auto [c, lines] = from_env_printing<old_form_cache>(dir);
        CHECK(!c.enabled());
        CHECK(lines == std::vector<std::string>{
                           "compile_cache: CCOLDTEST_FILE=\"refuse\" is not a database; the cache is disabled"});
    }
    SECTION("remote_trusted() false: its one line, once, and no cache") {
        env.set("_FILE", "needs-remote");
        env.set("_REMOTE", "somewhere");
        auto [c, lines] = from_env_printing<old_form_cache>(dir);
        CHECK(!c.enabled());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: CCOLDTEST_REMOTE is set but entries are not authenticated", 0) == 0);
    }
}

TEST_CASE("A tier over a storage of the deprecated form: the same settings reach it, and a remote without a "
          "secret is one line, off, the local storage kept",
          "[settings][tiered]") {
    old_form_env env;
    compile_cache_test::temp_dir dir;
    env.set("_FILE", "local");
    env.set("_REMOTE", "the-server");

    SECTION("no secret: one line, the remote off, the local storage kept") {
        auto [c, lines] = from_env_printing<old_form_tier_cache>(dir);
        REQUIRE(c.enabled());
        CHECK(c.storage().has_local());
        CHECK(!c.storage().has_remote());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: CCOLDTEST_REMOTE is set but entries are not authenticated", 0) == 0);
    }
    SECTION("PREFIX_REMOTE_INSECURE: both tiers") {
        env.set("_REMOTE_INSECURE", "1");
        auto [c, lines] = from_env_printing<old_form_tier_cache>(dir);
        REQUIRE(c.enabled());
        CHECK(c.storage().has_local());
        CHECK(c.storage().has_remote());
        CHECK(lines.empty());
    }
    SECTION("the local storage declines: its line, and no cache") {
        env.set("_FILE", "refuse");
        env.set("_REMOTE_INSECURE", "1");
        auto [c, lines] = from_env_printing<old_form_tier_cache>(dir);
        CHECK(!c.enabled());
        CHECK(lines == std::vector<std::string>{
                           "compile_cache: CCOLDTEST_FILE=\"refuse\" is not a database; the cache is disabled"});
    }
}

TEST_CASE("deprecated form: a shipped storage's earlier from_env(settings_reader&) still configures it, and says why not") {
    compile_cache_test::temp_dir dir;
    compile_cache_test::env_var const unset_dir("CCOLDSHIP_DIR", nullptr);
    std::vector<std::string> lines;
    cc::settings_reader reader("CCOLDSHIP", [&](std::string_view l) { lines.emplace_back(l); });
    CHECK_FALSE(cc::directory_storage::from_env(reader)); // not configured: nothing said
    CHECK(lines.empty());

    compile_cache_test::env_var const set_dir("CCOLDSHIP_DIR", (dir.path() / "cache").string());
    std::optional<cc::directory_storage> d = cc::directory_storage::from_env(reader);
    REQUIRE(d);
    CHECK(d->directory() == (dir.path() / "cache").string());
    CHECK(lines.empty());

    // A tier asked for a remote without a secret: one line, the local storage kept.
    using tier = cc::tiered_storage<cc::directory_storage, cc::directory_storage>;
    compile_cache_test::env_var const remote("CCOLDSHIP_REMOTE", (dir.path() / "remote").string());
    std::optional<tier> t = tier::from_env(reader);
    REQUIRE(t);
    CHECK_FALSE(t->has_remote());
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("CCOLDSHIP_REMOTE is set but entries are not authenticated") == 0);
}
