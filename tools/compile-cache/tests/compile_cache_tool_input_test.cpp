// The compile-cache tool on bad input (URLs without a host, empty names, options given twice, a server
// that never answers): a one-line error and the exit status the help gives, never a wrong success.
#include "tool_test_support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#ifndef MAKE_ENTRIES
#error "MAKE_ENTRIES (the path of the make_entries helper) must be defined by the build"
#endif

using namespace tinyk_test;
using namespace compile_cache_tool_test;

namespace {

/// make_entries DIR COUNT: COUNT real entries written through the library (with `records`,
/// each kernel's identity record too, in a pack).
void input_test_entries(fs::path const& dir, int count, bool records = false) {
    process_spec spec;
    spec.argv = {MAKE_ENTRIES, dir.string(), std::to_string(count)};
    spec.env = tool_environment();
    if (records) spec.env.push_back("MAKE_ENTRIES_WITH_RECORDS=1");
    spec.timeout = std::chrono::milliseconds(120000);
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 0);
}

/// Whether the tool was built with the storage `feature` ("+sqlite", "+redis", "+http").
bool tool_has(std::string const& feature) { return tool({"--version"}).out.find(feature) != std::string::npos; }

#if defined(COMPILE_CACHE_TOOL_HTTP_TESTS)
/// A TCP socket on 127.0.0.1 that takes connections (the kernel completes them) and never answers.
struct silent_server {
    int fd = -1;
    int port = 0;
    silent_server() {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(fd, 16) == 0);
        socklen_t len = sizeof a;
        REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port = ntohs(a.sin_port);
    }
    ~silent_server() { ::close(fd); }
    silent_server(silent_server const&) = delete;
    silent_server& operator=(silent_server const&) = delete;
};
#endif

} // namespace

TEST_CASE("compile-cache: a URL without a host is refused with exit 2, never a local directory of its scheme") {
    temp_dir root("compile-cache-test");
    fs::path const src = root.path() / "src";
    input_test_entries(src, 3);
    for (std::vector<std::string> const& args : std::vector<std::vector<std::string>>{
             {"copy", src.string(), "redis://"},
             {"copy", src.string(), "http://"},
             {"copy", src.string(), "https:///"},
             {"set", "redis://", "max-size", "1G"},
             {"clear", "unix://"}}) {
        process_result const r = tool(args, root.path());
        INFO(args[0] << " " << args[args.size() > 3 ? 1 : args.size() - 1]);
        REQUIRE_EXIT(r, 2);
        CHECK(r.out.find("copied") == std::string::npos);
    }
    for (char const* made : {"redis:", "http:", "https:", "unix:"}) {
        INFO(made);
        CHECK_FALSE(fs::exists(root.path() / made));
    }
}

TEST_CASE("compile-cache: an empty cache name or sqlite: without a file is a usage error, not a lost copy") {
    temp_dir root("compile-cache-test");
    fs::path const src = root.path() / "src";
    input_test_entries(src, 3);
    // SQLite takes "" for a temporary database: the entries would be reported copied, and gone at exit.
    for (char const* dst : {"sqlite:", "sqlite:/", ""}) {
        process_result const r = tool({"copy", src.string(), dst}, root.path());
        INFO(std::string("DST \"") + dst + "\"");
        REQUIRE_EXIT(r, 2);
        CHECK(r.out.find("copied") == std::string::npos);
    }
    REQUIRE_EXIT(tool({"stats", ""}, root.path()), 2);
    if (tool_has("+signing")) {
        process_result const key = tool({"keygen", ""}, root.path());
        REQUIRE_EXIT(key, 2);
        CHECK(key.err.find("SECRET_KEY_FILE is empty") != std::string::npos);
    }
}

TEST_CASE("compile-cache: an option given twice with a value is a usage error and prune evicts nothing") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    input_test_entries(dir, 3);
    REQUIRE_EXIT(tool({"set", dir.string(), "max-size", "1G"}), 0);
    auto const before = entry_files(dir);
    REQUIRE(before.size() == 3);
    process_result const r = tool({"prune", dir.string(), "--max-size", "1G", "--max-size=1"});
    REQUIRE_EXIT(r, 2);
    CHECK(r.err.find("--max-size is given twice") != std::string::npos);
    CHECK(entry_files(dir) == before);
    REQUIRE_EXIT(tool({"list", dir.string(), "--sort", "size", "--sort", "age"}), 2);
}

#if defined(COMPILE_CACHE_TOOL_HTTP_TESTS) // (the HTTP tests' suite alone: it waits out the listing's 30 s stall)
TEST_CASE("compile-cache stats: an HTTP server that takes the connection and never answers ends it with exit 3") {
    if (!tool_has("+http")) return; // built without libcurl
    silent_server server;
    process_spec spec;
    spec.argv = {COMPILE_CACHE_TOOL, "stats", "http://127.0.0.1:" + std::to_string(server.port) + "/cache/"};
    spec.env = tool_environment();
    spec.timeout = std::chrono::milliseconds(120000); // (the listing's own bound was ten minutes)
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 3);
    CHECK(r.err.find("did not answer in time") != std::string::npos);
}
#endif

TEST_CASE("compile-cache copy and set: nothing is written into a directory clear refuses, so clear never empties it") {
    temp_dir root("compile-cache-test");
    fs::path const src = root.path() / "src";
    input_test_entries(src, 3);
    // Files named like entries and nothing a host writes: maybe another tool's content-addressed store.
    fs::path const other = root.path() / "objects";
    fs::create_directories(other / "ab");
    write_file(other / "ab" / "abcdef0123", "another tool's object\n");
    process_result const copied = tool({"copy", src.string(), other.string()});
    REQUIRE_EXIT(copied, 2);
    CHECK(copied.err.find("another tool's") != std::string::npos);
    REQUIRE_EXIT(tool({"set", other.string(), "max-size", "1G"}), 2);
    CHECK_FALSE(fs::exists(other / ".cc-stats"));
    CHECK_FALSE(fs::exists(other / ".cc-settings"));
    REQUIRE_EXIT(tool({"clear", other.string()}), 2);
    CHECK(read_file(other / "ab" / "abcdef0123") == "another tool's object\n");
}

TEST_CASE("compile-cache config: a --prefix that cannot name environment variables is a usage error") {
    for (char const* prefix : {"", "my cache", "9LIVES", "A=B"}) {
        process_result const r = tool({"config", "--prefix", prefix});
        INFO(std::string("--prefix \"") + prefix + "\"");
        REQUIRE_EXIT(r, 2);
        CHECK(r.out.empty());
    }
    REQUIRE_EXIT(tool({"config", "--prefix", "TINYK_CACHE"}), 0);
}

TEST_CASE("compile-cache config: a value in the settings file no host takes is not shown in effect") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    input_test_entries(dir, 1);
    fs::path const file = dir / ".cc-settings";
    write_file(file, "max-size = banana\ndurability = full\n");
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    process_result const r = tool({"config", "--prefix", "TINYK_CACHE", dir.string(), "--json"});
    REQUIRE_EXIT(r, 0);
    auto const setting = [&](char const* name) {
        return json_query(r.out, std::string("[(s['value'], s['from']) for s in d['settings'] if s['name'] == '") +
                                     name + "']");
    };
    // Hosts take the default for it, and say so in one line: so does config.
    CHECK(setting("TINYK_CACHE_MAX_SIZE") == "[(None, 'default')]");
    CHECK(setting("TINYK_CACHE_DURABILITY") == "[('full', 'settings file')]");
    CHECK(json_query(r.out, "'banana' in d['settings_file_values_ignored'][0]") == "True");
    process_result const text = tool({"config", "--prefix", "TINYK_CACHE", dir.string()});
    REQUIRE_EXIT(text, 0);
    CHECK(text.out.find("= banana") == std::string::npos);
    CHECK(text.out.find("hosts use the default") != std::string::npos);
}

TEST_CASE("compile-cache copy: a destination directory it makes is its owner's alone, as a host makes one") {
    temp_dir root("compile-cache-test");
    fs::path const src = root.path() / "src";
    input_test_entries(src, 2);
    fs::path const dst = root.path() / "new-cache";
    mode_t const old_mask = ::umask(022); // (the usual mask, which leaves a folder readable by all)
    process_result const r = tool({"copy", src.string(), dst.string()});
    ::umask(old_mask);
    REQUIRE_EXIT(r, 0);
    CHECK((compile_cache_test::mode_of(dst) & 077u) == 0);
}

TEST_CASE("compile-cache clear: the size it says it removed is named as stats names it, not as the entries' own") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    input_test_entries(dir, 3, true);
    process_result const stats = tool({"stats", dir.string()});
    REQUIRE_EXIT(stats, 0);
    // "570 B (570 bytes); 16 KiB counted against the limit (whole 4 KiB blocks)": the entries' bytes, then
    // their files' and the pack of records', in whole blocks. clear removed the latter and said "(16 KiB)".
    std::string const size = line_starting(stats.out, "size");
    std::size_t const from = size.find("; "), to = size.find(" counted against the limit");
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    std::string const accounted = size.substr(from + 2, to - from - 2);
    process_result const cleared = tool({"clear", dir.string()});
    REQUIRE_EXIT(cleared, 0);
    INFO(cleared.out);
    CHECK(cleared.out.rfind("removed 3 entries (" + accounted + " counted against the limit", 0) == 0);
}

namespace {

/// compile-cache ARGS... as user nobody when the tests run as root (setpriv), so that permission bits hold; as
/// this user otherwise. Nullopt (with a warning) where root has no setpriv.
std::optional<process_result> tool_as_nobody(std::vector<std::string> const& args) {
    if (::geteuid() != 0) return tool(args);
    if (::access("/usr/bin/setpriv", X_OK) != 0) {
        WARN("setpriv is not there to run the tool as another user; not run");
        return std::nullopt;
    }
    process_spec spec;
    spec.argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", COMPILE_CACHE_TOOL};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = tool_environment();
    spec.timeout = std::chrono::milliseconds(120000);
    return run_process(spec);
}

} // namespace

TEST_CASE("compile-cache verify --allow-unchecked, list and copy: entries it may not read are exit 3") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    input_test_entries(dir, 3);
    // Everything readable by the tool's user (as root: nobody), but for one entry file no one but root reads.
    fs::permissions(root.path(), fs::perms(0777));
    fs::permissions(dir, fs::perms(0777));
    std::string unreadable;
    for (auto const& e : fs::recursive_directory_iterator(dir)) {
        fs::permissions(e.path(), e.is_directory() ? fs::perms(0777) : fs::perms(0666));
        if (e.is_regular_file() && e.path().parent_path() != dir) unreadable = e.path().string();
    }
    REQUIRE(!unreadable.empty());
    fs::permissions(unreadable, fs::perms::none);
    // --allow-unchecked is for entries it cannot judge (no secret, no trusted keys): a refused read is no such.
    std::optional<process_result> const verified = tool_as_nobody({"verify", dir.string(), "--allow-unchecked"});
    if (!verified) return;
    REQUIRE_EXIT(*verified, 3);
    CHECK(verified->err.find("could not read 1 entry") != std::string::npos);
    std::optional<process_result> const listed = tool_as_nobody({"list", dir.string()});
    REQUIRE_EXIT(*listed, 3);
    CHECK(count_lines(listed->out, "(not checked)") == "1");
    std::optional<process_result> const copied = tool_as_nobody({"copy", dir.string(), (root.path() / "dst").string()});
    REQUIRE_EXIT(*copied, 3);
    CHECK(copied->out.find("copied 2 entries") != std::string::npos);
}

TEST_CASE("compile-cache show: an entry the file system will not let it read is exit 3, not shown as fine") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    input_test_entries(dir, 1);
    fs::permissions(root.path(), fs::perms(0777));
    fs::permissions(dir, fs::perms(0777));
    std::string unreadable;
    for (auto const& e : fs::recursive_directory_iterator(dir)) {
        fs::permissions(e.path(), e.is_directory() ? fs::perms(0777) : fs::perms(0666));
        if (e.is_regular_file() && e.path().parent_path() != dir) unreadable = e.path().string();
    }
    REQUIRE(!unreadable.empty());
    fs::permissions(unreadable, fs::perms::none);
    std::string const key = fs::path(unreadable).filename().string();
    std::optional<process_result> const shown = tool_as_nobody({"show", dir.string(), key.substr(0, 8)});
    if (!shown) return;
    REQUIRE_EXIT(*shown, 3);
    CHECK(shown->out.find("cannot read it: Permission denied") != std::string::npos);
}

TEST_CASE("compile-cache stats: a size just under a unit shows in that unit (1.0 MiB), never as 1024 of the lower") {
    temp_dir root("compile-cache-test");
    std::string const dir = (root.path() / "cache").string();
    // The kept limit, shown by human_size: each boundary, just under it, and the largest size there is.
    std::vector<std::pair<std::string, std::string>> const cases = {
        {"1023", "1023 B"},          {"1024", "1.0 KiB"},         {"10188", "9.9 KiB"},
        {"10239", "10 KiB"},         {"1048063", "1023 KiB"},     {"1048575", "1.0 MiB"},
        {"1048576", "1.0 MiB"},      {"1073741823", "1.0 GiB"},   {"1099511627775", "1.0 TiB"},
        {"1125899906842623", "1.0 PiB"}, {"1152921504606846975", "1.0 EiB"}, {"18446744073709551615", "16 EiB"}};
    for (auto const& [bytes, shown] : cases) {
        REQUIRE_EXIT(tool({"set", dir, "max-size", bytes}), 0);
        process_result const stats = tool({"stats", dir});
        REQUIRE_EXIT(stats, 0);
        INFO(bytes);
        CHECK(line_starting(stats.out, "size limit").rfind(shown + " (", 0) == 0);
    }
}

namespace {

/// The `NAME = VALUE` lines of DIR's settings file, in its order.
std::vector<std::string> kept_settings(fs::path const& dir) {
    std::vector<std::string> out;
    for (std::string const& line : lines_of(compile_cache_test::read_file(dir / ".cc-settings")))
        if (!line.empty() && line[0] != '#') out.push_back(line);
    return out;
}

} // namespace

TEST_CASE("compile-cache set: three sets run at once in fresh processes each keep their setting") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    std::string const t = std::string("'") + COMPILE_CACHE_TOOL + "' ";
    std::string const d = "'" + dir.string() + "' ";
    // Without a lock, a set read the file, another wrote it, and the first wrote its own change over the
    // second's: 17 of 20 such rounds lost a setting. Each set's exit status is printed by the shell.
    for (int round = 0; round < 6; ++round) {
        fs::remove_all(dir);
        REQUIRE_EXIT(tool({"set", dir.string(), "durability", "file"}), 0);
        process_result const r = compile_cache_test::run_shell(
            t + "set " + d + "max-size 1G >/dev/null & a=$!; " + t + "set " + d +
            "durability full >/dev/null & b=$!; " + t + "set " + d +
            "compress 3 >/dev/null & c=$!; wait $a; x=$?; wait $b; y=$?; wait $c; echo $x $y $?");
        REQUIRE_EXIT(r, 0);
        CHECK(r.out == "0 0 0\n");
        INFO("round " << round);
        CHECK(kept_settings(dir) == std::vector<std::string>{"compress = 3", "durability = full", "max-size = 1G"});
    }
}

TEST_CASE("compile-cache set: a directory another process keeps locked is exit 3 after 2 s, the file unchanged") {
    // About 2 s: the bound set waits for the lock.
    if (::access("/usr/bin/flock", X_OK) != 0) {
        WARN("flock(1) is not there to hold the directory's lock; not run");
        return;
    }
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    REQUIRE_EXIT(tool({"set", dir.string(), "max-size", "1G"}), 0);
    std::string const before = compile_cache_test::read_file(dir / ".cc-settings");
    // flock(1) holds the directory's lock while the set it runs (its own open of the directory) waits for it.
    process_result const r = compile_cache_test::run_shell("/usr/bin/flock -x '" + dir.string() + "' '" +
                                                           COMPILE_CACHE_TOOL + "' set '" + dir.string() +
                                                           "' max-size 2G");
    INFO(r.describe());
    REQUIRE(r.exited(3));
    CHECK(r.out.empty());
    CHECK(r.err.find("another process held the directory's lock") != std::string::npos);
    CHECK(r.err.find("nothing was written") != std::string::npos);
    CHECK(compile_cache_test::read_file(dir / ".cc-settings") == before);
}

TEST_CASE("compile-cache stats: a limit short of full is never shown 100.0% used, nor a used one 0.0%") {
    temp_dir root("compile-cache-test");
    std::string const dir = (root.path() / "cache").string();
    input_test_entries(dir, 1);
    process_result const before = tool({"stats", dir, "--json"});
    REQUIRE_EXIT(before, 0);
    std::uint64_t const accounted = std::stoull(json_query(before.out, "d['accounted_bytes']"));
    REQUIRE(accounted > 0);
    // One byte short of full printed "100.0% used", and a used limit 1 EiB "0.0% used", as if empty.
    std::vector<std::pair<std::uint64_t, std::string>> const cases = {
        {accounted + 1, ">99.9% used"}, {accounted, "100.0% used"}, {std::uint64_t{1} << 60, "<0.1% used"}};
    for (auto const& [limit, shown] : cases) {
        REQUIRE_EXIT(tool({"set", dir, "max-size", std::to_string(limit)}), 0);
        process_result const stats = tool({"stats", dir});
        REQUIRE_EXIT(stats, 0);
        INFO(limit);
        CHECK(line_starting(stats.out, "size limit").find(" (" + shown + "), kept by the directory") !=
              std::string::npos);
    }
}
