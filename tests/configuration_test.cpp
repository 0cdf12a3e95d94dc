// docs/configuration.md against what from_env does. For each bad value the page
// quotes, from_env prints exactly that line (one line on stderr, naming the variable,
// its value and the fallback), the cache is enabled or disabled as the page says with
// the fallback in effect, nothing throws, and the host still gets its kernel. The page
// quotes tinyk (prefix TINYK_CACHE); these tests use CCCONFTEST and compare with the
// prefix replaced. Every setting environment_settings() lists must have its section.
// (directory_storage_eviction_test and envelope_keyed_test check the parsing itself.)

#include "catch2_compat.hpp"
#include "support/model.hpp"
#include "support/posix.hpp"

#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/vector.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using compile_cache_test::captured_stderr;
using compile_cache_test::lines_of;
using compile_cache_test::read_file;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;

constexpr char const* test_prefix = "CCCONFTEST";
constexpr char const* documented_prefix = "TINYK_CACHE";

using compile_cache_test::model::code_kernel;

/// The CCCONFTEST_* variables, unset before and after each test, so that no test sees
/// another's.
struct config_env : compile_cache_test::scoped_settings {
    config_env()
        : scoped_settings(test_prefix, {"_DIR", "_LOG", "_MAX_SIZE", "_DURABILITY", "_SHARED", "_SECRET_FILE", "_VERIFY",
                                        "_MIN_COMPILE_TIME"}) {}
};

/// A scratch folder, and PREFIX_DIR naming the cache folder in it (made by the first store).
struct configured_dir {
    temp_dir dir;
    config_env env;
    configured_dir() { env.set("_DIR", (dir.path() / "cache").string()); }
};

/// The cache from_env(test_prefix) makes, with standard error captured to a file in `dir`
/// while this lives; used like the std::optional it holds.
class cache_from_env {
public:
    explicit cache_from_env(fs::path const& dir) : err_(dir / "stderr.txt") {
        CHECK_NOTHROW(cache_.emplace(cc::default_cache::from_env(test_prefix)));
    }
    /// What has been printed so far, a line each.
    std::vector<std::string> printed() { return lines_of(err_.text()); }
    std::string text() { return err_.text(); }
    bool has_value() const { return cache_.has_value(); }
    cc::default_cache* operator->() { return &*cache_; }
    cc::default_cache& operator*() { return *cache_; }

private:
    std::optional<cc::default_cache> cache_; // destroyed after err_, as the host's would be
    captured_stderr err_;
};

/// Runs the test in `dir`, so that relative file names match the page's.
using in_directory = compile_cache_test::working_directory;

std::string const& configuration_page() {
    // The source tree's page, found from this file's path (tests/../docs).
    static std::string const text = read_file(fs::path(COMPILE_CACHE_SOURCE_DIR) / "docs" / "configuration.md");
    return text;
}

/// Whether the page quotes `line` (printed with the test prefix) as a line of its own.
bool page_quotes(std::string line) {
    for (std::size_t at = line.find(test_prefix); at != std::string::npos; at = line.find(test_prefix, at))
        line.replace(at, std::string(test_prefix).size(), documented_prefix);
    return configuration_page().find("\n    " + line + "\n") != std::string::npos;
}

cc::key_result key_of(cc::default_cache const& c, char const* ir) {
    return c.make_key_builder("configuration_test 1").add("ir", ir).finish();
}

using outcomes = std::vector<cc::outcome>;

/// What a host does with the cache from_env gave it: gets one kernel twice, and the
/// right value each time.
outcomes get_twice(cc::default_cache& c, char const* name) {
    outcomes seen;
    for (int i = 0; i < 2; ++i) {
        auto r = c.get_or_compile<code_kernel>(key_of(c, name), {name, "prog.tk", 1},
                                                [] { return code_kernel{{1, 2, 3}}; });
        CHECK(r.value.code == std::vector<int>{1, 2, 3});
        seen.push_back(r.outcome);
    }
    return seen;
}

} // namespace

TEST_CASE("configuration.md: a bad directory, verify or compile-time setting prints the quoted line and the default is used",
          "[configuration]") {
    struct bad_setting {
        char const* suffix;
        char const* value;
        char const* fallback; // the end of the line
        bool (*defaulted)(cc::default_cache&);
    };
    bad_setting const cases[] = {
        {"_MAX_SIZE", "banana", "; using the default, 1G",
         [](cc::default_cache& c) { return c.storage().options().max_size == (std::uint64_t{1} << 30); }},
        {"_DURABILITY", "always", "; using the default, none",
         [](cc::default_cache& c) { return c.storage().options().sync == cc::durability::none; }},
        {"_SHARED", "maybe", "; the directory stays private",
         [](cc::default_cache& c) {
             cc::directory_options const& o = c.storage().options();
             return o.access == cc::sharing::owner_only && o.file_mode == 0600u && o.directory_mode == 0700u;
         }},
        {"_VERIFY", "often", "; hits are not verified",
         [](cc::default_cache& c) { return c.options().verify_fraction == 0; }},
        {"_MIN_COMPILE_TIME", "1s", "; every compiled kernel is stored",
         [](cc::default_cache& c) { return c.options().min_compile_time.count() == 0; }},
    };
    for (bool with_log : {false, true}) {
        for (auto const& bad : cases) {
            std::string const variable = std::string(test_prefix) + bad.suffix;
            INFO(variable << "=" << bad.value << (with_log ? " with PREFIX_LOG=1" : ""));
            temp_dir dir;
            config_env env;
            env.set("_DIR", (dir.path() / "cache").string());
            if (with_log) env.set("_LOG", "1");
            env.set(bad.suffix, bad.value);

            cache_from_env c(dir.path());
            std::vector<std::string> const lines = c.printed();
            REQUIRE(c.has_value());

            REQUIRE(lines.size() == 1);
            std::string const& line = lines[0];
            INFO("printed: " << line);
            CHECK(line.rfind("compile_cache: " + variable + "=\"" + bad.value + "\" ", 0) == 0);
            CHECK(line.size() > std::string(bad.fallback).size());
            CHECK(line.compare(line.size() - std::string(bad.fallback).size(), std::string::npos, bad.fallback) == 0);
            CHECK(page_quotes(line));

            CHECK(c->enabled());
            CHECK(bad.defaulted(*c));
            CHECK(get_twice(*c, "helper") == outcomes{cc::outcome::compiled, cc::outcome::loaded});
        }
    }
}

TEST_CASE("configuration.md: a secret file that cannot be used prints the quoted line and disables the cache",
          "[configuration]") {
    temp_dir dir;
    in_directory here(dir.path());
    compile_cache_test::write_private_file(dir.path() / "empty.key", "");
    compile_cache_test::write_private_file(dir.path() / "large.key", std::string((std::size_t{64} << 10) + 1, 'k'));
    fs::create_directory(dir.path() / "keys");

    for (char const* file : {"missing.key", "empty.key", "large.key", "keys"}) {
        INFO("PREFIX_SECRET_FILE=" << file);
        config_env env;
        env.set("_DIR", (dir.path() / "cache").string());
        env.set("_SECRET_FILE", file);

        cache_from_env c(dir.path());
        std::vector<std::string> const lines = c.printed();
        REQUIRE(c.has_value());

        REQUIRE(lines.size() == 1);
        INFO("printed: " << lines[0]);
        CHECK(lines[0].rfind("compile_cache: " + std::string(test_prefix) + "_SECRET_FILE=\"" + file + "\": ", 0) == 0);
        CHECK(page_quotes(lines[0]));
        CHECK(!c->enabled());
        CHECK(get_twice(*c, "helper") == outcomes{cc::outcome::compiled, cc::outcome::compiled});
        CHECK(!fs::exists(dir.path() / "cache"));
    }
}

TEST_CASE_METHOD(configured_dir, "configuration.md: several bad values are one line each, in the documented order", "[configuration]") {
    env.set("_DURABILITY", "always");
    env.set("_MAX_SIZE", "banana");
    env.set("_SHARED", "maybe");
    env.set("_MIN_COMPILE_TIME", "1s");
    env.set("_VERIFY", "often");
    std::string const p = test_prefix;

    SECTION("VERIFY, MIN_COMPILE_TIME, SHARED, MAX_SIZE, DURABILITY; the cache enabled") {
        cache_from_env c(dir.path());
        std::vector<std::string> const lines = c.printed();
        REQUIRE(lines.size() == 5);
        CHECK(lines[0].rfind("compile_cache: " + p + "_VERIFY=", 0) == 0);
        CHECK(lines[1].rfind("compile_cache: " + p + "_MIN_COMPILE_TIME=", 0) == 0);
        CHECK(lines[2].rfind("compile_cache: " + p + "_SHARED=", 0) == 0);
        CHECK(lines[3].rfind("compile_cache: " + p + "_MAX_SIZE=", 0) == 0);
        CHECK(lines[4].rfind("compile_cache: " + p + "_DURABILITY=", 0) == 0);
        REQUIRE(c.has_value());
        CHECK(c->enabled());
    }
    SECTION("a bad secret file first, and then the only line: the others are not read") {
        env.set("_SECRET_FILE", (dir.path() / "missing.key").string());
        cache_from_env c(dir.path());
        std::vector<std::string> const lines = c.printed();
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("compile_cache: " + p + "_SECRET_FILE=", 0) == 0);
        REQUIRE(c.has_value());
        CHECK(!c->enabled());
    }
}

TEST_CASE("configuration.md: with PREFIX_DIR off no other setting is read, so nothing is printed",
          "[configuration]") {
    temp_dir dir;
    in_directory here(dir.path()); // a directory named after an off value would appear here
    for (char const* off : {"", "0", "off", "No"}) {
        INFO("PREFIX_DIR=\"" << off << "\"");
        config_env env;
        env.set("_DIR", off);
        env.set("_LOG", "1");
        env.set("_MAX_SIZE", "banana");
        env.set("_SECRET_FILE", "missing.key");
        cache_from_env c(dir.path());
        CHECK(c.text().empty());
        REQUIRE(c.has_value());
        CHECK(!c->enabled());
        CHECK(get_twice(*c, "helper") == outcomes{cc::outcome::compiled, cc::outcome::compiled});
    }
    fs::remove(dir.path() / "stderr.txt");
    CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("configuration.md: a PREFIX_DIR that cannot be made a directory prints the quoted line and disables the cache",
          "[configuration]") {
    temp_dir dir;
    in_directory here(dir.path());
    write_file(dir.path() / "file", "not a directory");
    for (bool with_log : {false, true}) {
        INFO((with_log ? "with" : "without") << " PREFIX_LOG");
        config_env env;
        env.set("_DIR", "file/cache"); // ENOTDIR
        if (with_log) env.set("_LOG", "1");

        cache_from_env c(dir.path());
        REQUIRE(c.has_value());
        CHECK(get_twice(*c, "helper") == outcomes{cc::outcome::compiled, cc::outcome::compiled});
        std::vector<std::string> const lines = c.printed();
        REQUIRE(lines.size() == 1);
        INFO("printed: " << lines[0]);
        CHECK(page_quotes(lines[0]));
        CHECK(!c->enabled());
    }
}

TEST_CASE("configuration.md: a PREFIX_DIR that is an on value prints the quoted line and the cache is that relative directory",
          "[configuration]") {
    temp_dir dir;
    in_directory here(dir.path());
    for (char const* on : {"on", "1", "TRUE", "yes"}) {
        INFO("PREFIX_DIR=\"" << on << "\"");
        config_env env;
        env.set("_DIR", on);

        cache_from_env c(dir.path());
        REQUIRE(c.has_value());
        CHECK(c->enabled());
        CHECK(get_twice(*c, "helper") == outcomes{cc::outcome::compiled, cc::outcome::loaded});
        CHECK(fs::is_directory(dir.path() / on));
        std::vector<std::string> const lines = c.printed();
        REQUIRE(lines.size() == 1);
        INFO("printed: " << lines[0]);
        if (std::string(on) == "on") CHECK(page_quotes(lines[0]));
        CHECK(lines[0].find("\"" + std::string(on) + "\" in the working directory") != std::string::npos);
    }
}

TEST_CASE_METHOD(configured_dir, "configuration.md: a PREFIX_LOG value that is neither on nor off prints the quoted line, logging stays off",
          "[configuration]") {
    env.set("_LOG", "verbose");

    cache_from_env c(dir.path());
    REQUIRE(c.has_value());
    CHECK(!c->options().logger);
    CHECK(c->enabled());
    CHECK(get_twice(*c, "helper") == outcomes{cc::outcome::compiled, cc::outcome::loaded});
    std::vector<std::string> const lines = c.printed();
    REQUIRE(lines.size() == 1);
    INFO("printed: " << lines[0]);
    CHECK(page_quotes(lines[0]));
}

TEST_CASE_METHOD(configured_dir, "configuration.md: a misspelled PREFIX_* variable prints the quoted line, naming the "
                                  "setting meant, with or without PREFIX_LOG",
                 "[configuration]") {
    in_directory here(dir.path());
    compile_cache_test::write_private_file(dir.path() / "secret.key", "the fleet's secret");
    env.set("_SECRET_FILE", "secret.key");
    // The typo: KEY for KEYS. The cache runs without trusted keys, and says so.
    compile_cache_test::env_var typo(std::string(test_prefix) + "_TRUSTED_KEY_FILE", "keys.pub");
    // A name of the host's own (or one its storage reads unlisted), far from any setting: not said.
    compile_cache_test::env_var unknown(std::string(test_prefix) + "_COLOUR", "blue");
    // A file setting without its _FILE: the setting meant is named.
    compile_cache_test::env_var cut(std::string(test_prefix) + "_SIGNING_KEY", "ci.key");
    for (bool const log : {false, true}) {
        INFO("PREFIX_LOG " << log);
        if (log) env.set("_LOG", "1");
        cache_from_env c(dir.path());
        std::vector<std::string> const lines = c.printed();
        REQUIRE(c.has_value());
        CHECK(c->enabled());
        REQUIRE(lines.size() == 2);
        std::string const typo_line = lines[0].find("_SIGNING_KEY ") == std::string::npos ? lines[0] : lines[1];
        std::string const cut_line = lines[0].find("_SIGNING_KEY ") == std::string::npos ? lines[1] : lines[0];
        INFO(typo_line);
        CHECK(page_quotes(typo_line));
        CHECK(cut_line == "compile_cache: " + std::string(test_prefix) + "_SIGNING_KEY is set, but it is no setting of "
                                                                         "this cache or its storage (" +
                              test_prefix + "_SIGNING_KEY_FILE, misspelled?); it is ignored");
    }
}

TEST_CASE("configuration.md has a section for every setting from_env reads", "[configuration]") {
    for (auto const& setting : cc::default_cache::environment_settings("PREFIX")) {
        INFO(setting.name);
        CHECK(configuration_page().find("\n### `" + setting.name + "`\n") != std::string::npos);
        CHECK(configuration_page().find("\n| `" + setting.name + "` |") != std::string::npos);
    }
}

TEST_CASE_METHOD(configured_dir, "PREFIX_VERIFY and PREFIX_MIN_COMPILE_TIME are read as documented", "[configuration]") {
    env.set("_VERIFY", "0.25");
    env.set("_MIN_COMPILE_TIME", "40");
    CHECK(cc::default_cache::from_env(test_prefix).options().verify_fraction == 0.25);
    CHECK(cc::default_cache::from_env(test_prefix).options().min_compile_time == std::chrono::milliseconds(40));
    env.set("_MIN_COMPILE_TIME", " 40\t"); // the blanks around a number are no part of it, as for sizes
    CHECK(cc::default_cache::from_env(test_prefix).options().min_compile_time == std::chrono::milliseconds(40));
    {
        compile_cache_test::env_var const wait(std::string(test_prefix) + "_WAIT_MAX", "2000 ");
        CHECK(cc::default_cache::from_env(test_prefix).options().single_flight.wait_max ==
              std::chrono::milliseconds(2000));
    }
    env.set("_VERIFY", "on");
    CHECK(cc::default_cache::from_env(test_prefix).options().verify_fraction == 1);
    env.set("_VERIFY", "off");
    CHECK(cc::default_cache::from_env(test_prefix).options().verify_fraction == 0);
    env.set("_VERIFY", "2"); // not a share of hits: one line (as above), and none verified
    captured_stderr err(dir.path() / "stderr.txt");
    CHECK(cc::default_cache::from_env(test_prefix).options().verify_fraction == 0);
    CHECK(err.text().find(std::string(test_prefix) + "_VERIFY=\"2\" is not understood") != std::string::npos);
}

TEST_CASE_METHOD(configured_dir, "configuration.md: a settings file's line that is not name = value, or a misspelled "
                                  "name, is one line each, the others are used",
                 "[configuration]") {
    fs::path const cache = dir.path() / "cache";
    fs::create_directories(cache);
    std::string const file = (cache / ".cc-settings").string();
    compile_cache_test::write_private_file(file, "# kept\nmax_size = 5G\ndurability: full\ncolour = blue\n"
                                                 "durability = file\ncompress 3\n");
    cache_from_env c(dir.path());
    REQUIRE(c.has_value());
    CHECK(c->enabled());
    CHECK(c->storage().options().sync == cc::durability::file); // the good line is used
    CHECK(c->storage().options().max_size == (std::uint64_t{1} << 30)); // the misspelled one is not
    std::vector<std::string> const lines = c.printed();
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] ==
          "compile_cache: " + file + ": line 3 is not \"name = value\" (and 1 more such lines); it is ignored");
    CHECK(lines[1] == "compile_cache: " + file + ": max_size = \"5G\" is no setting a cache directory keeps (max-size, "
                                                 "misspelled?); it is ignored");
    auto quoted = [&](std::string line) {
        line.replace(line.find(file), file.size(), "/var/cache/tinyk/.cc-settings");
        return configuration_page().find("\n    " + line + "\n") != std::string::npos;
    };
    CHECK(quoted(lines[0]));
    CHECK(quoted(lines[1]));
}

TEST_CASE("write_directory_settings: an old file writable by others is replaced by one a reader trusts",
          "[configuration]") {
    temp_dir dir;
    fs::path const cache = dir.path() / "cache";
    fs::create_directories(cache);
    fs::permissions(cache, fs::perms::owner_all);
    fs::path const file = cache / ".cc-settings";
    write_file(file, "max-size = 1G\n");
    REQUIRE(::chmod(file.c_str(), 0666) == 0);
    cc::directory_settings read;
    std::string why;
    REQUIRE(cc::read_directory_settings(cache.string(), cc::sharing::owner_only, read, why) == EACCES);
    REQUIRE(cc::write_directory_settings(cache.string(), {{"max-size", "5G"}}) == 0);
    CHECK((fs::status(file).permissions() & (fs::perms::group_write | fs::perms::others_write)) == fs::perms::none);
    CHECK((fs::status(file).permissions() & fs::perms::owner_read) != fs::perms::none);
    CHECK(cc::read_directory_settings(cache.string(), cc::sharing::owner_only, read, why) == 0);
    CHECK(read.values["max-size"] == "5G");
}
