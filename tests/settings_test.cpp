// settings.hpp: the parsers and the reporter a storage configures itself with, and
// basic_cache::from_env delegating to a storage's own from_env in one pass: the cache
// reads its own settings, hands the storage storage_settings, and says the storage's
// answer (itself, off with a reason, or not configured). The deprecated
// from_env(settings_reader&) form: settings_deprecated_form_test.cpp.

#include "catch2_compat.hpp"
#include "support/posix.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/remote_by_url.hpp>

#include <boost/serialization/vector.hpp>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <stdlib.h>

namespace {

namespace cc = compile_cache;
using compile_cache_test::lines_of;
using namespace std::chrono_literals;

/// The CCSETTEST_* variables these tests set, unset before and after each.
struct settings_env : compile_cache_test::scoped_settings {
    settings_env()
        : scoped_settings("CCSETTEST", {"_FILE", "_DIR", "_LOG", "_SECRET_FILE", "_LIMIT", "_WAIT", "_MODE", "_FAST",
                                        "_VERIFY", "_REMOTE", "_REMOTE_INSECURE"}) {}

    /// Sets the size, duration, choice and switch settings at once.
    void set_limit_wait_mode_fast(char const* limit, char const* wait, char const* mode, char const* fast) {
        set("_LIMIT", limit);
        set("_WAIT", wait);
        set("_MODE", mode);
        set("_FAST", fast);
    }
};

/// A user's storage: entries in memory, configured by CCSETTEST_FILE (its main
/// setting, named for a single file), CCSETTEST_LIMIT (a size), CCSETTEST_WAIT (a
/// duration), CCSETTEST_MODE (a choice) and CCSETTEST_FAST (a switch). The file
/// `refuse` is off, with a reason; `logged` records what the storage_settings said.
class file_like_storage {
public:
    enum class mode { fast, safe };
    file_like_storage() = default;
    file_like_storage(std::string path_, std::uint64_t limit_, std::chrono::milliseconds wait_, mode m_, bool fast_)
        : path(std::move(path_)), limit(limit_), wait(wait_), m(m_), fast(fast_) {}

    static cc::from_env_result<file_like_storage> from_env(cc::storage_settings const& settings) {
        ++asked;
        cc::settings_reader const& env = settings.env;
        std::string path = env.value("_FILE");
        if (env.is_off("_FILE")) return cc::from_env_result<file_like_storage>::not_configured();
        if (!settings.cache_off.empty()) return cc::from_env_result<file_like_storage>::off(settings.cache_off);
        if (path == "refuse")
            return cc::from_env_result<file_like_storage>::off(env.name("_FILE") +
                                                               "=\"refuse\" is not a database; the cache is disabled");
        authenticated_seen = settings.authenticated;
        ++made;
        return file_like_storage(path, env.byte_size("_LIMIT", 1 << 20, "1M"), env.milliseconds("_WAIT", 100ms),
                                 env.choice<mode>("_MODE", {{"fast", mode::fast}, {"safe", mode::safe}}, mode::safe,
                                                  "a mode"),
                                 env.flag("_FAST", false, "using off"));
    }
    static std::vector<cc::environment_setting> environment_settings(std::string_view prefix) {
        return {{std::string(prefix) + "_FILE", "the file"}, {std::string(prefix) + "_LIMIT", "its size limit"}};
    }

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max) { return entries.read(k, out, max); }
    std::error_code write(cc::key const& k, std::string_view bytes) { return entries.write(k, bytes); }
    std::error_code remove(cc::key const& k) { return entries.remove(k); }

    std::string path;
    std::uint64_t limit = 0;
    std::chrono::milliseconds wait{};
    mode m = mode::safe;
    bool fast = false;
    cc::memory_storage entries;
    static inline bool authenticated_seen = false;
    static inline int asked = 0; ///< calls of from_env
    static inline int made = 0;  ///< storages from_env made
};

/// A storage that ignores storage_settings::cache_off (and is made anyway).
struct careless_storage : cc::memory_storage {
    static cc::from_env_result<careless_storage> from_env(cc::storage_settings const& settings) {
        if (settings.env.is_off("_FILE")) return cc::from_env_result<careless_storage>::not_configured();
        return careless_storage();
    }
};

using file_like_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, file_like_storage>;
using careless_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, careless_storage>;


} // namespace

TEST_CASE("parse_milliseconds: a whole number of milliseconds, with ms, or seconds with s", "[settings]") {
    CHECK(cc::parse_milliseconds("0") == 0ms);
    CHECK(cc::parse_milliseconds("250") == 250ms);
    CHECK(cc::parse_milliseconds("250ms") == 250ms);
    CHECK(cc::parse_milliseconds(" 1500MS ") == 1500ms);
    CHECK(cc::parse_milliseconds("2s") == 2000ms);
    for (char const* bad : {"", "ms", "-1", "1.5", "10 minutes", "5m", "99999999999999999999"})
        CHECK_FALSE(cc::parse_milliseconds(bad).has_value());
    // At most 2^40 ms, in seconds too: now plus the longest never overflows a clock.
    CHECK(cc::parse_milliseconds("1099511627776") == 1099511627776ms);
    CHECK(cc::parse_milliseconds("1099511627s") == 1099511627000ms);
    for (char const* beyond : {"1099511627777", "1099511628s", "1099511627776s"})
        CHECK_FALSE(cc::parse_milliseconds(beyond).has_value());
}

TEST_CASE("parse_fraction: 0 to 1 with a decimal point, whatever the locale, nothing else", "[settings]") {
    CHECK(cc::parse_fraction("0") == 0.0);
    CHECK(cc::parse_fraction("1") == 1.0);
    CHECK(cc::parse_fraction("1.000") == 1.0);
    CHECK(cc::parse_fraction("0.25") == 0.25);
    CHECK(cc::parse_fraction(".5") == 0.5);
    CHECK(cc::parse_fraction("0.01") == Approx(0.01));
    CHECK(cc::parse_fraction("1e-3") == Approx(0.001));
    CHECK(cc::parse_fraction("5E-1") == 0.5);
    CHECK(cc::parse_fraction("0.001e+2") == Approx(0.1));
    CHECK(cc::parse_fraction(" 0.5\t") == 0.5);
    CHECK(cc::parse_fraction("0e5") == 0.0);
    for (char const* bad : {"", ".", "1.5", "2", "-0.5", "+0.5", "0,5", "0.5.1", "0.1234567890123456789", "1e", "1e1",
                            "1e-1000", "e-3", "0.5 x"})
        CHECK_FALSE(cc::parse_fraction(bad).has_value());
}

TEST_CASE("parse_switch: the on and the off words, nothing else", "[settings]") {
    for (char const* on : {"1", "on", "TRUE", "Yes"}) CHECK(cc::parse_switch(on) == true);
    for (char const* off : {"", "0", "off", "False", "NO"}) CHECK(cc::parse_switch(off) == false);
    for (char const* bad : {"2", "maybe", "enabled"}) CHECK_FALSE(cc::parse_switch(bad).has_value());
}

TEST_CASE("settings_reader: each bad value is one line naming it and the default, the default is used",
          "[settings]") {
    settings_env env;
    std::vector<std::string> lines;
    cc::settings_reader r("CCSETTEST", [&](std::string_view line) { lines.emplace_back(line); });
    env.set_limit_wait_mode_fast("lots", "soon", "quick", "maybe");
    CHECK(r.byte_size("_LIMIT", 77, "77 bytes") == 77u);
    CHECK(r.milliseconds("_WAIT", 100ms) == 100ms);
    CHECK(r.choice<int>("_MODE", {{"fast", 1}, {"safe", 2}, {"slow", 3}}, 2, "a mode") == 2);
    CHECK(r.flag("_FAST", false, "it stays off") == false);
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].rfind("CCSETTEST_LIMIT=\"lots\" is not a size (", 0) == 0);
    CHECK(lines[0].find("; using the default, 77 bytes") != std::string::npos);
    CHECK(lines[1] == "CCSETTEST_WAIT=\"soon\" is not a duration (milliseconds, such as 100 or 1500ms, or seconds, "
                      "such as 2s); using the default, 100 ms");
    CHECK(lines[2] == "CCSETTEST_MODE=\"quick\" is not a mode (fast, safe or slow); using the default, safe");
    CHECK(lines[3] == "CCSETTEST_FAST=\"maybe\" is not understood (1, on, true or yes; 0, off, false or no); it "
                      "stays off");

    lines.clear();
    env.set_limit_wait_mode_fast("2K", "2s", "FAST", "on");
    CHECK(r.byte_size("_LIMIT", 77, "77 bytes") == 2048u);
    CHECK(r.milliseconds("_WAIT", 100ms) == 2000ms);
    CHECK(r.choice<int>("_MODE", {{"fast", 1}, {"safe", 2}}, 2, "a mode") == 1);
    CHECK(r.flag("_FAST", false, "it stays off") == true);
    CHECK(lines.empty());

    // A duration past parse_milliseconds' bound is said to be too long, not garbage.
    env.set("_WAIT", "1099511628s");
    CHECK(r.milliseconds("_WAIT", 100ms) == 100ms);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "CCSETTEST_WAIT=\"1099511628s\" is longer than a duration may be (at most 1099511627776 ms, "
                      "about 35 years); using the default, 100 ms");
    lines.clear();
    env.set("_WAIT", " ");
    CHECK(r.milliseconds("_WAIT", 100ms) == 100ms);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("is not a duration") != std::string::npos);
}

TEST_CASE("from_env delegates to the storage's own from_env: its settings, its main variable, its lines",
          "[settings]") {
    settings_env env;
    compile_cache_test::temp_dir dir;

    SECTION("its main setting off (not configured): no cache, and nothing is printed, the cache's own lines neither") {
        env.set("_DIR", dir.path().string()); // not this storage's setting
        env.set("_LOG", "verbose");
        env.set("_LIMIT", "lots");
        env.set("_SECRET_FILE", (dir.path() / "missing.key").string());
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        file_like_storage::asked = 0;
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        CHECK(!c.enabled());
        CHECK(err.text().empty());
        CHECK(file_like_storage::asked == 1);
    }
    SECTION("configured: its values reach it; a bad one is one line on stderr and the default") {
        env.set("_FILE", (dir.path() / "cache.db").string());
        env.set("_LIMIT", "3K");
        env.set("_WAIT", "forever");
        env.set("_MODE", "Fast");
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        std::vector<std::string> const lines = lines_of(err.text());
        REQUIRE(c.enabled());
        CHECK(c.storage().path == (dir.path() / "cache.db").string());
        CHECK(c.storage().limit == 3072u);
        CHECK(c.storage().wait == 100ms);
        CHECK(c.storage().m == file_like_storage::mode::fast);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: CCSETTEST_WAIT=\"forever\" is not a duration", 0) == 0);
        CHECK(!file_like_storage::authenticated_seen);
    }
    SECTION("the storage learns whether the cache authenticates entries") {
        compile_cache_test::write_private_file(dir.path() / "secret.key", "0123456789abcdef");
        env.set("_FILE", "x");
        env.set("_SECRET_FILE", (dir.path() / "secret.key").string());
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        CHECK(c.authenticated());
        CHECK(file_like_storage::authenticated_seen);
        file_like_storage::authenticated_seen = false;
    }
    SECTION("a bad secret file: its one line, and the storage is not made") {
        env.set("_FILE", "x");
        env.set("_LIMIT", "lots");
        env.set("_SECRET_FILE", (dir.path() / "missing.key").string());
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        file_like_storage::made = 0;
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        std::vector<std::string> const lines = lines_of(err.text());
        CHECK(!c.enabled());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: CCSETTEST_SECRET_FILE=", 0) == 0);
        CHECK(file_like_storage::made == 0);
    }
    SECTION("the storage answers off(why): that one line, and the cache is disabled") {
        env.set("_FILE", "refuse");
        env.set("_LOG", "1");
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        file_like_storage::asked = 0;
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        CHECK(!c.enabled());
        CHECK(err.text() == "compile_cache: CCSETTEST_FILE=\"refuse\" is not a database; the cache is disabled\n");
        CHECK(file_like_storage::asked == 1);
    }
    SECTION("off(why) after the cache's own bad values: theirs first, then the reason, one line each") {
        env.set("_FILE", "refuse");
        env.set("_LOG", "verbose");
        env.set("_VERIFY", "often");
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        std::vector<std::string> const lines = lines_of(err.text());
        CHECK(!c.enabled());
        REQUIRE(lines.size() == 3);
        CHECK(lines[0].rfind("compile_cache: CCSETTEST_LOG=\"verbose\" is not understood", 0) == 0);
        CHECK(lines[1].rfind("compile_cache: CCSETTEST_VERIFY=\"often\" is not understood", 0) == 0);
        CHECK(lines[2] == "compile_cache: CCSETTEST_FILE=\"refuse\" is not a database; the cache is disabled");
    }
    SECTION("configured: the cache's own bad values are said before the storage's") {
        env.set("_FILE", "x");
        env.set("_VERIFY", "often");
        env.set("_WAIT", "forever");
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        std::vector<std::string> const lines = lines_of(err.text());
        CHECK(c.enabled());
        REQUIRE(lines.size() == 2);
        CHECK(lines[0].rfind("compile_cache: CCSETTEST_VERIFY=", 0) == 0);
        CHECK(lines[1].rfind("compile_cache: CCSETTEST_WAIT=", 0) == 0);
    }
    SECTION("a storage that ignores cache_off is dropped, with the cache's one line") {
        env.set("_FILE", "x");
        env.set("_SECRET_FILE", (dir.path() / "missing.key").string());
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        careless_cache c = careless_cache::from_env("CCSETTEST");
        std::vector<std::string> const lines = lines_of(err.text());
        CHECK(!c.enabled());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: CCSETTEST_SECRET_FILE=", 0) == 0);
    }
    SECTION("environment_settings lists the storage's settings, then the cache's own") {
        std::vector<std::string> names;
        for (auto const& s : file_like_cache::environment_settings("CCSETTEST")) names.push_back(s.name);
        CHECK(names == std::vector<std::string>{"CCSETTEST_FILE", "CCSETTEST_LIMIT", "CCSETTEST_LOG",
                                                "CCSETTEST_SECRET_FILE", "CCSETTEST_SIGNING_KEY_FILE",
                                                "CCSETTEST_TRUSTED_KEYS_FILE", "CCSETTEST_VERIFY",
                                                "CCSETTEST_MIN_COMPILE_TIME", "CCSETTEST_RECORD_IDENTITIES",
                                                "CCSETTEST_SINGLE_FLIGHT", "CCSETTEST_WAIT_MAX"});
    }
}

namespace {
/// A remote alternative that claims `mem://` URLs only.
struct mem_remote : cc::memory_storage {
    static bool handles_url(std::string_view url) noexcept { return url.rfind("mem://", 0) == 0; }
    static cc::from_env_result<mem_remote> from_env(cc::storage_settings const&) { return mem_remote(); }
};
} // namespace

TEST_CASE("remote_by_url: a URL no alternative claims is named by its scheme only, never its password",
          "[settings]") {
    settings_env env;
    cc::storage_settings const settings{cc::settings_reader("CCSETTEST"), true, true, {}, {}};
    auto off_line = [&](char const* url) {
        env.set("_REMOTE", url);
        auto const r = cc::remote_by_url<mem_remote>::from_env(settings);
        CHECK_FALSE(r.has_value());
        return r.why_off();
    };
    // Not a URL, though "://" comes later (in a query): the text before it is no scheme.
    std::string const no_scheme = off_line("admin:hunter2@cache.example/?next=http://x");
    CHECK(no_scheme.find("hunter2") == std::string::npos);
    CHECK(no_scheme == "CCSETTEST_REMOTE is not a URL (scheme://...); the remote is off");
    CHECK(off_line("ftp ://host/").find("is not a URL") != std::string::npos);
    CHECK(off_line("://host/").find("is not a URL") != std::string::npos);
    CHECK(off_line("redis+tls://:hunter2@host:6379") ==
          "CCSETTEST_REMOTE names a remote of scheme \"redis+tls\", which this program was not built with; the "
          "remote is off");
    env.set("_REMOTE", "mem://here");
    CHECK(cc::remote_by_url<mem_remote>::from_env(settings).has_value());
}

TEST_CASE("on and off words are read without the blanks around them: a blank main setting is off",
          "[settings]") {
    CHECK(cc::parse_switch(" on ") == true);
    CHECK(cc::parse_switch("1\t") == true);
    CHECK(cc::parse_switch(" off") == false);
    CHECK(cc::parse_switch("  ") == false);
    CHECK_FALSE(cc::parse_switch("o n").has_value());
    settings_env env;
    compile_cache_test::temp_dir dir;
    compile_cache_test::working_directory here(dir.path());
    for (char const* off : {" ", "off ", "\t0"}) {
        INFO("CCSETTEST_FILE=\"" << off << "\"");
        env.set("_FILE", off);
        env.set("_MODE", "safe "); // read only by a storage that is made
        compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
        file_like_storage::made = 0;
        file_like_cache c = file_like_cache::from_env("CCSETTEST");
        CHECK(!c.enabled());
        CHECK(file_like_storage::made == 0);
        CHECK(err.text().empty());
    }
    env.set("_FILE", "cache.db");
    env.set("_MODE", " Fast ");
    env.set("_FAST", "yes ");
    compile_cache_test::captured_stderr err(dir.path() / "stderr.txt");
    file_like_cache c = file_like_cache::from_env("CCSETTEST");
    REQUIRE(c.enabled());
    CHECK(c.storage().m == file_like_storage::mode::fast);
    CHECK(c.storage().fast);
    CHECK(err.text().empty());
}

TEST_CASE("settings_reader::flag: unset or empty is the fallback, as for the other parsers", "[settings]") {
    settings_env env;
    cc::settings_reader const reader("CCSETTEST");
    // A storage's switch that is on by default (verify its server's certificate) stays on.
    CHECK(reader.flag("_FAST", true, "using on"));
    env.set("_FAST", "");
    CHECK(reader.flag("_FAST", true, "using on"));
    env.set("_FAST", "0");
    CHECK_FALSE(reader.flag("_FAST", true, "using on"));
    env.set("_FAST", "off");
    CHECK_FALSE(reader.flag("_FAST", true, "using on"));
    env.set("_FAST", "1");
    CHECK(reader.flag("_FAST", false, "using off"));
    ::unsetenv("CCSETTEST_FAST");
    CHECK_FALSE(reader.flag("_FAST", false, "using off"));
}
