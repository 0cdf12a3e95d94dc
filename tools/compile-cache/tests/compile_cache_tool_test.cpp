// The compile-cache tool, specified by what a user sees: every step runs the tool (and
// tinyk, the example compiler that fills the cache) as a fresh child process on a real
// cache directory, and checks its output, its JSON (parsed by Python's json module)
// and its exit status, and what is left on disk.
#include "tool_test_support.hpp"

#include <compile_cache/detail/held_batch_bounds.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef MAKE_ENTRIES
#error "MAKE_ENTRIES (the path of the make_entries helper) must be defined by the build"
#endif

using namespace tinyk_test;
using namespace compile_cache_tool_test;

namespace {

// Three kernels, each calling the next: main(3) = 3 * 3 * 2 + 5 = 23.
char const* const program_text = "global OFFSET = 5.0;\n"
                                 "\n"
                                 "kernel square(x) {\n"
                                 "  return x * x;\n"
                                 "}\n"
                                 "\n"
                                 "kernel helper(x) {\n"
                                 "  return square(x) * 2.0;\n"
                                 "}\n"
                                 "\n"
                                 "kernel main(x) {\n"
                                 "  return helper(x) + OFFSET;\n"
                                 "}\n";

/// make_entries DIR COUNT [NAME]: COUNT real entries written through the library (with
/// `records`, each kernel's identity record too, packed as a host packs them).
void make_entries(fs::path const& dir, int count, std::string const& name = {}, bool records = false) {
    process_spec spec;
    spec.argv = {MAKE_ENTRIES, dir.string(), std::to_string(count)};
    if (!name.empty()) spec.argv.push_back(name);
    spec.env = tool_environment();
    if (records) spec.env.push_back("MAKE_ENTRIES_WITH_RECORDS=1");
    spec.timeout = std::chrono::milliseconds(120000);
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 0);
}

/// A scenario whose cache tinyk has filled: a cold run (everything compiled and
/// stored), then a warm one (everything loaded), both checked.
struct filled_cache {
    scenario s;
    filled_cache() {
        s.write_program(program_text);
        tinyk_result const cold = s.run({"main", "3"});
        REQUIRE_EXIT(cold, 0);
        REQUIRE(cold.compiled() == names{"square", "helper", "main"});
        tinyk_result const warm = s.run({"main", "3"});
        REQUIRE_EXIT(warm, 0);
        REQUIRE(warm.out == "23\n");
        REQUIRE(warm.loaded() == names{"square", "helper", "main"});
    }
    std::string dir() const { return s.cache_dir().string(); }
};

/// The relative path (ab/abcd...) of the entry holding kernel `name`.
std::string entry_path_of(filled_cache const& c, std::string const& name) {
    std::string const path = entry_of(c.s.entries(), name);
    REQUIRE(!path.empty());
    return path;
}

} // namespace

TEST_CASE("compile-cache stats: after a cold and a warm tinyk run it shows the entries and the hits and stores hosts recorded") {
    filled_cache c;
    process_result const r = tool({"stats", c.dir(), "--json"});
    REQUIRE_EXIT(r, 0);
    CHECK(r.err.empty());
    CHECK(json_query(r.out, "d['entries']") == "3");
    CHECK(json_query(r.out, "d['counters']['stores']") == "3");
    CHECK(json_query(r.out, "d['counters']['misses.absent']") == "3");
    CHECK(json_query(r.out, "d['counters']['hits']") == "3");
    CHECK(json_query(r.out, "d['size_limit']") == std::to_string(std::uint64_t{1} << 30)); // tinyk's default, 1G
    CHECK(json_query(r.out, "d['oldest_use'] <= d['newest_use'] and d['newest_use'].endswith('Z')") == "True");

    // The files' sizes, and what they count for against the limit: whole 4 KiB blocks,
    // the pack of the identity records' too.
    std::uintmax_t bytes = 0, blocks = 0;
    for (auto const& [path, e] : c.s.entries()) {
        bytes += e.size;
        blocks += (e.size + 4095) / 4096;
    }
    for (std::string const& pack : pack_files(c.s.cache_dir()))
        blocks += (fs::file_size(c.s.cache_dir() / pack) + 4095) / 4096;
    CHECK(json_query(r.out, "d['bytes']") == std::to_string(bytes));
    CHECK(json_query(r.out, "d['accounted_bytes']") == std::to_string(blocks * 4096));

    process_result const human = tool({"stats", c.dir()});
    REQUIRE_EXIT(human, 0);
    CHECK(line_starting(human.out, "entries ") == "3");
    CHECK(human.out.find("hit rate") != std::string::npos);
    CHECK(human.out.find("50.0%") != std::string::npos); // 3 hits of 6 lookups
    CHECK(human.out.find("1.0 GiB") != std::string::npos);
}

TEST_CASE("compile-cache stats: a host with a remote tier recorded its remote counters, shown with the remote hit rate") {
    filled_cache c;
    // What a tiered cache's flush records besides the local counters (tests/redis has it
    // recorded by a real tier; here the figures are chosen to check the arithmetic).
    REQUIRE(!compile_cache::directory_storage(c.dir()).record_counters(
        {{"remote.hits", 3}, {"remote.misses", 1}, {"remote.errors.timeout", 2}, {"remote.bytes-read", 6144}}));
    process_result const human = tool({"stats", c.dir()});
    REQUIRE_EXIT(human, 0);
    CHECK(line_starting(human.out, "  remote hit rate") == "75.0%  (3 of 4 lookups sent to the remote)"); // table columns
    CHECK(line_starting(human.out, "  remote.errors.timeout") == "2");
    CHECK(line_starting(human.out, "  remote.bytes-read") == "6144  (6.0 KiB)");
    process_result const json = tool({"stats", c.dir(), "--json"});
    REQUIRE_EXIT(json, 0);
    CHECK(json_query(json.out, "d['counters']['remote.hits']") == "3");
}

TEST_CASE("compile-cache list: each kernel with its key prefix and size and origin - and show opens one by that prefix") {
    filled_cache c;
    process_result const r = tool({"list", c.dir(), "--json"});
    REQUIRE_EXIT(r, 0);
    CHECK(json_query(r.out, "[e['name'] for e in d['entries']]") == "['helper', 'main', 'square']"); // by name
    CHECK(json_query(r.out, "set(e['origin_file'] for e in d['entries'])") ==
          "{'" + c.s.program().string() + "'}");
    CHECK(json_query(r.out, "[e['origin_line'] for e in d['entries']]") == "[7, 11, 3]");
    CHECK(json_query(r.out, "all(e['status'] == 'sound' for e in d['entries'])") == "True");

    process_result const by_size = tool({"list", c.dir(), "--sort", "size", "--json"});
    REQUIRE_EXIT(by_size, 0);
    CHECK(json_query(by_size.out, "(lambda s: s == sorted(s, reverse=True))([e['size'] for e in d['entries']])") ==
          "True");
    process_result const by_age = tool({"list", c.dir(), "--sort=age", "--json"});
    REQUIRE_EXIT(by_age, 0);
    CHECK(json_query(by_age.out, "(lambda s: s == sorted(s))([e['last_use_ns'] for e in d['entries']])") == "True");

    // The human listing: a header, one line per kernel, a total.
    process_result const human = tool({"list", c.dir()});
    REQUIRE_EXIT(human, 0);
    std::istringstream lines(human.out);
    std::string header, line;
    std::getline(lines, header);
    CHECK(header.rfind("NAME", 0) == 0);
    std::string main_line;
    while (std::getline(lines, line))
        if (line.rfind("main ", 0) == 0) main_line = line;
    REQUIRE(!main_line.empty());
    CHECK(main_line.find(c.s.program().string() + ":11") != std::string::npos);
    CHECK(human.out.find("3 entries") != std::string::npos);

    // The key prefix list printed for main, given to show.
    std::istringstream fields(main_line);
    std::string name, prefix;
    fields >> name >> prefix;
    REQUIRE(prefix.size() == 16);
    std::string const main_path = entry_path_of(c, "main");
    CHECK(main_path.substr(3, 16) == prefix);
    process_result const shown = tool({"show", c.dir(), prefix});
    REQUIRE_EXIT(shown, 0);
    CHECK(shown.out.find("mode crc32c") != std::string::npos);
    CHECK(shown.out.find(main_path.substr(3) + " (its file name)") != std::string::npos);
    CHECK(shown.out.find(c.s.program().string() + ":11") != std::string::npos);
    CHECK(shown.out.find("toolchain") != std::string::npos); // a component of every key
    // The type it was stored as (tinyk's native or VM backend's), demangled.
    std::size_t const artifact_at = shown.out.find("\nartifact ");
    REQUIRE(artifact_at != std::string::npos);
    std::string artifact_line = shown.out.substr(artifact_at + 1, shown.out.find('\n', artifact_at + 1) - artifact_at - 1);
    artifact_line.erase(0, artifact_line.find_last_of(' ') + 1);
    bool const native = artifact_line == "tinyk::native_artifact";
    CHECK((native || artifact_line == "tinyk::artifact"));

    process_result const shown_json = tool({"show", c.dir(), prefix, "--json"});
    REQUIRE_EXIT(shown_json, 0);
    CHECK(json_query(shown_json.out, "d['metadata']['name']") == "main");
    CHECK(json_query(shown_json.out, "d['metadata']['artifact']") ==
          (native ? "tinyk::native_artifact" : "tinyk::artifact"));
    CHECK(json_query(shown_json.out, "d['metadata']['format_id'].split(';artifact=')[1]") ==
          (native ? "N5tinyk15native_artifactE" : "N5tinyk8artifactE"));
    CHECK(json_query(shown_json.out, "d['envelope']['stored_key'] == d['key']") == "True");
    CHECK(json_query(shown_json.out, "d['envelope']['header_bytes'] + d['envelope']['payload_bytes'] + "
                                     "d['envelope']['check_bytes'] == d['size']") == "True");
    CHECK(json_query(shown_json.out, "'toolchain' in [x['name'] for x in d['components']]") == "True");
    CHECK(json_query(shown_json.out, "all(len(x['digest']) == 64 for x in d['components'])") == "True");
}

TEST_CASE("compile-cache show: an unknown or ambiguous key prefix is a one-line error with exit 2") {
    filled_cache c;
    make_entries(c.s.cache_dir(), 40); // 43 keys: some first hex digit is shared (16 digits)
    process_result const listed = tool({"list", c.dir(), "--json"});
    REQUIRE_EXIT(listed, 0);
    std::string const shared_digit =
        json_query(listed.out, "__import__('collections').Counter(e['key'][0] for e in d['entries']).most_common(1)[0][0]");
    std::string const unused =
        json_query(listed.out, "[p for p in ('%02x' % i for i in range(256)) "
                               "if not any(e['key'].startswith(p) for e in d['entries'])][0]");

    process_result const ambiguous = tool({"show", c.dir(), shared_digit});
    REQUIRE_EXIT(ambiguous, 2);
    CHECK(ambiguous.out.empty());
    CHECK(ambiguous.err.find("ambiguous") != std::string::npos);
    CHECK(count_lines(ambiguous.err, "") == "1");

    process_result const unknown = tool({"show", c.dir(), unused});
    REQUIRE_EXIT(unknown, 2);
    CHECK(unknown.err.find("no entry's key starts with " + unused) != std::string::npos);
    CHECK(count_lines(unknown.err, "") == "1");

    process_result const not_hex = tool({"show", c.dir(), "main"});
    REQUIRE_EXIT(not_hex, 2);
    CHECK(not_hex.err.find("not hexadecimal") != std::string::npos);
}

TEST_CASE("compile-cache verify: a flipped byte and a truncation and a misnamed entry are reported with exit 1 and --remove removes only them") {
    filled_cache c;
    process_result const sound = tool({"verify", c.dir()});
    REQUIRE_EXIT(sound, 0);
    CHECK(sound.out.find("checked 3 entries (CRC-32C): 3 sound, 0 bad") != std::string::npos);

    std::string const flipped = entry_path_of(c, "helper"), truncated = entry_path_of(c, "square");
    std::string const kept = entry_path_of(c, "main");
    {
        fs::path const p = c.s.cache_dir() / flipped;
        std::string bytes = read_file(p);
        bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
        write_file(p, bytes);
        fs::resize_file(c.s.cache_dir() / truncated, fs::file_size(c.s.cache_dir() / truncated) / 2);
    }
    // And a sound entry under another key's name: its envelope checks, its key does not.
    std::string const misnamed = kept.substr(0, 3) + kept.substr(3, 2) + std::string(62, '0');
    fs::copy_file(c.s.cache_dir() / kept, c.s.cache_dir() / misnamed);

    process_result const bad = tool({"verify", c.dir()});
    REQUIRE_EXIT(bad, 1);
    CHECK(bad.out.find("bad: " + flipped + ": corrupt") != std::string::npos);
    CHECK(bad.out.find("bad: " + truncated + ": corrupt") != std::string::npos);
    CHECK(bad.out.find("bad: " + misnamed + ": holds the entry of another key (" + kept.substr(3) + ")") !=
          std::string::npos);
    CHECK(bad.out.find("1 sound, 3 bad") != std::string::npos);
    CHECK(fs::exists(c.s.cache_dir() / flipped)); // without --remove nothing goes

    process_result const bad_json = tool({"verify", c.dir(), "--json"});
    REQUIRE_EXIT(bad_json, 1);
    std::vector<std::string> bad_paths = {flipped, truncated, misnamed};
    std::sort(bad_paths.begin(), bad_paths.end());
    CHECK(json_query(bad_json.out, "sorted(b['path'] for b in d['bad'])") ==
          "['" + bad_paths[0] + "', '" + bad_paths[1] + "', '" + bad_paths[2] + "']");
    CHECK(json_query(bad_json.out, "d['sound']") == "1");

    process_result const removed = tool({"verify", c.dir(), "--remove"});
    REQUIRE_EXIT(removed, 1);
    CHECK(removed.out.find("3 bad, 3 removed") != std::string::npos);
    CHECK(!fs::exists(c.s.cache_dir() / flipped));
    CHECK(!fs::exists(c.s.cache_dir() / truncated));
    CHECK(!fs::exists(c.s.cache_dir() / misnamed));
    CHECK(fs::exists(c.s.cache_dir() / kept));

    process_result const again = tool({"verify", c.dir()});
    REQUIRE_EXIT(again, 0);
    CHECK(again.out.find("checked 1 entry (CRC-32C): 1 sound, 0 bad") != std::string::npos);

    // tinyk compiles the two removed kernels again, loads the other, and is right.
    tinyk_result const after = c.s.run({"main", "3"});
    REQUIRE_EXIT(after, 0);
    CHECK(after.out == "23\n");
    CHECK(after.compiled() == names{"square", "helper"});
    CHECK(after.loaded() == names{"main"});
}

TEST_CASE("compile-cache verify --secret-file: HMACs are checked under the secret and without it keyed entries are kept") {
    scenario s;
    s.write_program(program_text);
    fs::path const secret = s.root() / "secret", wrong = s.root() / "wrong-secret";
    compile_cache_test::write_private_file(secret, "the host's secret\n");
    compile_cache_test::write_private_file(wrong, "another secret\n");
    tinyk_result const cold = s.run({"main", "3"}, {}, {"TINYK_CACHE_SECRET_FILE=" + secret.string()});
    REQUIRE_EXIT(cold, 0);
    REQUIRE(cold.compiled().size() == 3);
    std::string const dir = s.cache_dir().string();

    process_result const right = tool({"verify", dir, "--secret-file", secret.string()});
    REQUIRE_EXIT(right, 0);
    CHECK(right.out.find("checked 3 entries (HMAC-SHA256): 3 sound, 0 bad") != std::string::npos);

    // Without the secret nothing could be checked: not a success, and the line says what
    // was missing; --allow-unchecked accepts it.
    process_result const none = tool({"verify", dir, "--remove"});
    REQUIRE_EXIT(none, 4);
    CHECK(none.out.find("0 bad, 0 removed, 3 not checked (HMAC entries: give --secret-file)") != std::string::npos);
    // Nothing was checked, so no check is named: not "(CRC-32C)" on entries no CRC covers.
    CHECK(none.out.find("checked 3 entries: 0 sound") != std::string::npos);
    CHECK(none.out.find("CRC-32C") == std::string::npos);
    process_result const allowed = tool({"verify", dir, "--allow-unchecked", "--json"});
    REQUIRE_EXIT(allowed, 0);
    CHECK(json_query(allowed.out, "len(d['unchecked'])") == "3");

    process_result const other = tool({"verify", dir, "--secret-file", wrong.string(), "--json"});
    REQUIRE_EXIT(other, 1);
    CHECK(json_query(other.out, "len(d['bad'])") == "3");
    CHECK(json_query(other.out, "all(b['problem'].startswith('unauthenticated') for b in d['bad'])") == "True");
    CHECK(s.entries().size() == 3); // reported, not removed

    // --remove with a secret under which nothing verifies: the secret is the likelier
    // mistake, so nothing is removed, and stderr says why.
    process_result const wrong_remove = tool({"verify", dir, "--secret-file", wrong.string(), "--remove"});
    REQUIRE_EXIT(wrong_remove, 1);
    CHECK(wrong_remove.err.find("no entry verifies under the secret") != std::string::npos);
    CHECK(wrong_remove.out.find("0 removed") != std::string::npos);
    CHECK(s.entries().size() == 3);

    process_result const shown = tool({"list", dir, "--secret-file", secret.string(), "--json"});
    REQUIRE_EXIT(shown, 0);
    CHECK(json_query(shown.out, "sorted(e['name'] for e in d['entries'])") == "['helper', 'main', 'square']");

    process_result const missing = tool({"verify", dir, "--secret-file", (s.root() / "nope").string()});
    REQUIRE_EXIT(missing, 2);
    CHECK(missing.err.find("cannot open it") != std::string::npos);
}

TEST_CASE("compile-cache prune --max-size: the directory ends under the size and tinyk still runs right") {
    scenario s;
    std::string program = "kernel k0(x) { return x + 1.0; }\n";
    for (int i = 1; i < 20; ++i)
        program += "kernel k" + std::to_string(i) + "(x) { return k" + std::to_string(i - 1) + "(x) * 1.0 + 1.0; }\n";
    program += "kernel main(x) { return k19(x); }\n";
    s.write_program(program);
    tinyk_result const cold = s.run({"main", "1"});
    REQUIRE_EXIT(cold, 0);
    REQUIRE(cold.out == "21\n");
    REQUIRE(s.entries().size() == 21);
    std::string const dir = s.cache_dir().string();
    process_result const before = tool({"stats", dir, "--json"});
    REQUIRE_EXIT(before, 0);
    // Half of what the entries count for now (whatever the backend makes them weigh).
    std::string const limit = json_query(before.out, "d['accounted_bytes'] // 2");

    process_result const pruned = tool({"prune", dir, "--max-size", limit, "--json"});
    REQUIRE_EXIT(pruned, 0);
    CHECK(json_query(pruned.out, "d['accounted_bytes'] <= " + limit + " and d['removed'] > 0") == "True");

    process_result const stats = tool({"stats", dir, "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "0 < d['accounted_bytes'] <= " + limit) == "True");
    CHECK(json_query(stats.out, "d['entries']") == std::to_string(s.entries().size()));
    CHECK(json_query(stats.out, "d['entries'] + " + json_query(pruned.out, "d['removed']")) == "21");

    tinyk_result const after = s.run({"main", "1"});
    REQUIRE_EXIT(after, 0);
    CHECK(after.out == "21\n");
    CHECK(after.compiled().size() + after.loaded().size() == 21);
    CHECK(!after.compiled().empty());

    process_result const bad_size = tool({"prune", dir, "--max-size", "lots"});
    REQUIRE_EXIT(bad_size, 2);
    CHECK(bad_size.err.find("is not a size") != std::string::npos);
}

namespace {
/// compile-cache ARGS... as user nobody when the tests run as root (through setpriv),
/// so that permission bits hold; as this user otherwise.
process_result tool_as_other_user(std::vector<std::string> const& args) {
    if (::geteuid() != 0) return tool(args);
    process_spec spec;
    spec.argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", COMPILE_CACHE_TOOL};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = tool_environment();
    spec.timeout = std::chrono::milliseconds(120000);
    return run_process(spec);
}

/// False, with a warning, where tool_as_other_user cannot change user (root without setpriv).
bool can_run_as_other_user() {
    if (::geteuid() == 0 && ::access("/usr/bin/setpriv", X_OK) != 0) {
        WARN("setpriv is not there to run the tool as another user; not run");
        return false;
    }
    return true;
}
} // namespace

TEST_CASE("compile-cache verify --remove keeps an entry it cannot read: unchecked, not bad") {
    if (!can_run_as_other_user()) return;
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    // Everything readable and the folders writable by the tool's user (as root: nobody),
    // but for one entry, which no one but root can read.
    fs::permissions(c.s.root(), fs::perms(0711));
    fs::permissions(dir, fs::perms(0777));
    for (auto const& e : fs::recursive_directory_iterator(dir))
        fs::permissions(e.path(), e.is_directory() ? fs::perms(0777) : fs::perms(0666));
    std::string const unreadable = entry_path_of(c, "helper");
    fs::permissions(dir / unreadable, fs::perms::none);
    process_result const verified = tool_as_other_user({"verify", dir.string(), "--remove"});
    INFO(verified.describe());
    CHECK(verified.exited(3)); // nothing bad, one the file system would not let it read (not checked)
    CHECK(verified.out.find(unreadable + ": cannot read it: Permission denied") != std::string::npos);
    CHECK(verified.out.find("2 sound, 0 bad, 0 removed, 1 not checked (entries it could not read)") !=
          std::string::npos);
    CHECK(fs::exists(dir / unreadable));
}

TEST_CASE("compile-cache clear and prune in a directory whose files they cannot remove fail, and count what stayed") {
    if (!can_run_as_other_user()) return;
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    // The folders readable and not writable by the tool's user: as root, another
    // user's (the tool runs as nobody); otherwise mode 0555.
    fs::permissions(c.s.root(), fs::perms(0711));
    fs::permissions(dir, fs::perms(0755));
    std::vector<fs::path> folders;
    for (auto const& e : fs::directory_iterator(dir))
        if (e.is_directory() && e.path().filename().string().size() == 2) folders.push_back(e.path());
    REQUIRE(!folders.empty());
    for (fs::path const& f : folders) fs::permissions(f, fs::perms(::geteuid() == 0 ? 0755 : 0555));
    // The ledger and the counters readable, so that the tool knows the directory as
    // a compile_cache one.
    fs::permissions(dir / ".cc-stats", fs::perms(0644));
    if (fs::exists(dir / ".cc-counters")) {
        fs::permissions(dir / ".cc-counters", fs::perms(0755));
        for (auto const& e : fs::directory_iterator(dir / ".cc-counters")) fs::permissions(e.path(), fs::perms(0644));
    }
    std::size_t const entries = c.s.entries().size();
    REQUIRE(entries >= 3);

    process_result const cleared = tool_as_other_user({"clear", dir.string()});
    INFO(cleared.describe());
    CHECK(cleared.exited(3));
    CHECK(cleared.err.find("could not remove") != std::string::npos);
    CHECK(cleared.err.find("Permission denied") != std::string::npos);
    CHECK(c.s.entries().size() == entries);

    process_result const pruned = tool_as_other_user({"prune", dir.string(), "--max-size", "1", "--json"});
    INFO(pruned.describe());
    CHECK(pruned.exited(3));
    CHECK(pruned.err.find("could not remove") != std::string::npos);
    CHECK(c.s.entries().size() == entries);

    for (fs::path const& f : folders) fs::permissions(f, fs::perms(0700));
    process_result const as_owner = tool({"clear", dir.string()});
    REQUIRE_EXIT(as_owner, 0);
    CHECK(c.s.entries().empty());
}

TEST_CASE("compile-cache clear: every entry and temp file goes and files that are not the cache's stay") {
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    std::string const folder = entry_path_of(c, "main").substr(0, 2);
    write_file(dir / folder / "notes.txt", "my notes\n");
    write_file(dir / "README", "what this directory is\n");
    std::string const temp = ".tmp-" + std::string(32, 'e'); // as a store names its temp file
    write_file(dir / folder / temp, "partial");
    write_file(dir / folder / ".tmp-mywork", "a user's file that merely looks like a temp file\n");

    process_result const cleared = tool({"clear", dir.string()});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.find("removed 3 entries") != std::string::npos);
    CHECK(cleared.out.find("and 1 temp file") != std::string::npos);
    CHECK(c.s.entries().empty());
    CHECK(!fs::exists(dir / folder / temp));
    CHECK(read_file(dir / folder / ".tmp-mywork") == "a user's file that merely looks like a temp file\n");
    CHECK(read_file(dir / folder / "notes.txt") == "my notes\n");
    CHECK(read_file(dir / "README") == "what this directory is\n");

    process_result const stats = tool({"stats", dir.string(), "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['entries'], d['temp_files'], d['other_files'], d['oldest_use'])") ==
          "(0, 0, 2, None)");

    tinyk_result const after = c.s.run({"main", "3"});
    REQUIRE_EXIT(after, 0);
    CHECK(after.out == "23\n");
    CHECK(after.compiled() == names{"square", "helper", "main"});
}

TEST_CASE("compile-cache prune and clear: the claims of processes that are gone go and are counted, a live one stays") {
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    // Claim files as a miss writes them (single flight): `<entry's name>.claim`, naming its
    // owner; one of a process of this machine that is gone (a child, ended and waited for),
    // one of this test process, which lives.
    std::string boot;
    std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
    char host[256] = {};
    REQUIRE(::gethostname(host, sizeof host - 1) == 0);
    pid_t const gone = ::fork();
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    int status = 0;
    REQUIRE(::waitpid(gone, &status, 0) == gone);
    auto owner = [&](pid_t pid) {
        return "pid=" + std::to_string(pid) + " boot=" + boot + " start=? host=" + host + " created_ns=1\n";
    };
    fs::path const dead = dir / (entry_path_of(c, "main") + ".claim");
    fs::path const live = dir / (entry_path_of(c, "helper") + ".claim");
    write_file(dead, owner(gone));
    write_file(live, owner(::getpid()));

    process_result const pruned = tool({"prune", dir.string(), "--max-size", "0"});
    REQUIRE_EXIT(pruned, 0);
    CHECK(pruned.out.find("removed 1 claim file whose owner is gone") != std::string::npos);
    CHECK(pruned.out.find("other files") == std::string::npos); // claims are the cache's, not others'
    CHECK(!fs::exists(dead));
    CHECK(fs::exists(live));

    write_file(dead, owner(gone));
    process_result const cleared = tool({"clear", dir.string(), "--json"});
    REQUIRE_EXIT(cleared, 0);
    CHECK(json_query(cleared.out, "(d['claim_files_removed'], d['other_files'])") == "(1, 0)");
    CHECK(!fs::exists(dead));
    CHECK(fs::exists(live));
}

TEST_CASE("compile-cache prune and clear: a cache whose first process died while it compiled (a claim, nothing else) is a cache") {
    // What a process that died during the first compile into a new directory leaves: the
    // entry's folder and the claim in it, no ledger, no entry.
    temp_dir tmp("cc-tool-claim-only");
    fs::path const dir = tmp.path() / "cache";
    std::string const name = "ab" + std::string(62, 'c');
    fs::create_directories(dir / "ab");
    pid_t const gone = ::fork();
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    int status = 0;
    REQUIRE(::waitpid(gone, &status, 0) == gone);
    std::string boot;
    std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
    char host[256] = {};
    REQUIRE(::gethostname(host, sizeof host - 1) == 0);
    fs::path const claim = dir / "ab" / (name + ".claim");
    write_file(claim, "pid=" + std::to_string(gone) + " boot=" + boot + " start=? host=" + host + " created_ns=1\n");

    process_result const pruned = tool({"prune", dir.string(), "--max-size", "1G"});
    REQUIRE_EXIT(pruned, 0);
    CHECK(pruned.out.find("removed 1 claim file whose owner is gone") != std::string::npos);
    CHECK(!fs::exists(claim));

    write_file(claim, "pid=" + std::to_string(gone) + " boot=" + boot + " start=? host=" + host + " created_ns=1\n");
    process_result const cleared = tool({"clear", dir.string()});
    REQUIRE_EXIT(cleared, 0);
    CHECK(!fs::exists(claim));
}

TEST_CASE("compile-cache: a missing directory or a file or a foreign directory is a one-line error with exit 2") {
    temp_dir root("compile-cache-test");
    fs::path const missing = root.path() / "missing", file = root.path() / "file";
    write_file(file, "not a directory\n");

    process_result const m = tool({"stats", missing.string()});
    REQUIRE_EXIT(m, 2);
    CHECK(m.err == "compile-cache: " + missing.string() + ": no such directory\n");
    process_result const f = tool({"list", file.string()});
    REQUIRE_EXIT(f, 2);
    CHECK(f.err == "compile-cache: " + file.string() + ": not a directory\n");

    // A home-like directory: files and folders, but no ledger, counters or entries.
    fs::path const home = root.path() / "home";
    fs::create_directories(home / "src");
    write_file(home / "notes.txt", "hello\n");
    write_file(home / "src" / "main.c", "int main() {}\n");
    // A git object store: two-hex-digit folders of hex-named files that are no entries.
    fs::path const objects = root.path() / "objects";
    fs::create_directories(objects / "ab");
    write_file(objects / "ab" / "cdef0123456789abcdef0123456789abcdef01", "blob");
    fs::create_directories(objects / "pack");

    for (fs::path const& foreign : {home, objects}) {
        auto const before = everything_under(foreign);
        for (std::vector<std::string> args : {std::vector<std::string>{"clear", foreign.string()},
                                              {"prune", foreign.string(), "--max-size", "0"},
                                              {"verify", foreign.string(), "--remove"},
                                              {"stats", foreign.string()}}) {
            process_result const r = tool(args);
            INFO(args[0] << " " << foreign);
            REQUIRE_EXIT(r, 2);
            CHECK(r.err.find("not a compile_cache directory") != std::string::npos);
            CHECK(count_lines(r.err, "") == "1");
            CHECK(r.out.empty());
        }
        CHECK(everything_under(foreign) == before); // nothing created, nothing deleted
    }

    // Real entries, but neither ledger nor counters: what another tool's
    // content-addressed store can look like. Read, yes; deleted in, never.
    fs::path const bare = root.path() / "bare";
    make_entries(bare, 3);
    fs::remove_all(bare / ".cc-stats");
    fs::remove_all(bare / ".cc-counters");
    auto const bare_before = everything_under(bare);
    REQUIRE_EXIT(tool({"stats", bare.string()}), 0);
    for (std::vector<std::string> args : {std::vector<std::string>{"clear", bare.string()},
                                          {"prune", bare.string(), "--max-size", "0"},
                                          {"verify", bare.string(), "--remove"}}) {
        process_result const r = tool(args);
        INFO(args[0]);
        REQUIRE_EXIT(r, 2);
        CHECK(r.err.find("neither the ledger (.cc-stats) nor the counters (.cc-counters)") != std::string::npos);
    }
    CHECK(everything_under(bare) == bare_before);

    // An empty directory is an empty cache (one that no host has written to yet).
    fs::path const empty = root.path() / "empty";
    fs::create_directories(empty);
    process_result const e = tool({"stats", empty.string(), "--json"});
    REQUIRE_EXIT(e, 0);
    CHECK(json_query(e.out, "(d['entries'], d['size_limit'], d['counters'])") == "(0, None, {})");
}

TEST_CASE("compile-cache: usage errors exit 2 and --help documents the commands and the directory rule and exit codes") {
    for (std::vector<std::string> args : {std::vector<std::string>{}, {"stats"}, {"frobnicate", "/tmp"},
                                          {"list", "/tmp", "--max-size", "1M"}, {"prune", "/tmp"},
                                          {"list", "/tmp", "--sort", "colour"}, {"show", "/tmp"},
                                          {"stats", "/tmp", "extra"}, {"stats", "/tmp", "--verbose"}}) {
        process_result const r = tool(args);
        INFO("compile-cache " << (args.empty() ? "" : args[0]));
        REQUIRE_EXIT(r, 2);
        CHECK(r.out.empty());
        CHECK(r.err.rfind("compile-cache: ", 0) == 0);
        CHECK(r.err.find("usage: compile-cache COMMAND DIR") != std::string::npos);
    }
    process_result const help = tool({"--help"});
    REQUIRE_EXIT(help, 0);
    for (char const* needle : {"stats DIR", "list DIR", "show DIR KEY_PREFIX", "verify DIR", "prune DIR [--max-size",
                               "clear DIR", "set DIR NAME VALUE", "--json", "--secret-file", ".cc-stats", ".cc-settings",
                               "exit status:", "  3  "})
        CHECK(help.out.find(needle) != std::string::npos);
}

TEST_CASE("compile-cache --json: names with quotes and control characters and invalid UTF-8 still parse") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    make_entries(dir, 1, std::string("say \"hi\"\\\n\t\x01 caf\xc3\xa9 \xff end"));
    process_result const r = tool({"list", dir.string(), "--json"});
    REQUIRE_EXIT(r, 0);
    CHECK(json_query(r.out, "ascii(d['entries'][0]['name'])") ==
          "'say \"hi\"\\\\\\n\\t\\x01 caf\\xe9 \\ufffd end'");
    // And the human listing shows the control characters escaped, not raw.
    process_result const human = tool({"list", dir.string()});
    REQUIRE_EXIT(human, 0);
    CHECK(human.out.find("say \"hi\"\\x5c\\x0a\\x09\\x01 caf\xc3\xa9") != std::string::npos);

    // C1 controls (some terminals start an escape sequence at 0x9b), raw or as UTF-8,
    // are escaped too; other UTF-8 (a euro sign has 0x82 in it) is not.
    fs::path const c1 = root.path() / "c1";
    make_entries(c1, 1, std::string("a\x9b" "31mb\xc2\x9b" "31mc \xe2\x82\xac"));
    process_result const c1_list = tool({"list", c1.string()});
    REQUIRE_EXIT(c1_list, 0);
    CHECK(c1_list.out.find("a\\x9b31mb\\xc2\\x9b31mc \xe2\x82\xac") != std::string::npos);
    CHECK(c1_list.out.find('\x9b') == std::string::npos);
}

TEST_CASE("compile-cache: a progress line on stderr for more than 10000 entries and none for fewer") {
    temp_dir root("compile-cache-test");
    fs::path const big = root.path() / "big", small = root.path() / "small";
    make_entries(big, 10001);
    make_entries(small, 10000);

    process_result const stats = tool({"stats", big.string(), "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "d['entries']") == "10001");
    CHECK(stats.err.find("compile-cache: listing folders: 256 of 256 (10001 entries)\n") != std::string::npos);

    process_result const verify = tool({"verify", big.string()});
    REQUIRE_EXIT(verify, 0);
    CHECK(verify.out.find("checked 10001 entries (CRC-32C): 10001 sound, 0 bad") != std::string::npos);
    CHECK(verify.err.find("compile-cache: verifying entries: 10001 of 10001 (10001 entries)\n") != std::string::npos);

    process_result const quiet = tool({"verify", small.string()});
    REQUIRE_EXIT(quiet, 0);
    CHECK(quiet.out.find("10000 sound") != std::string::npos);
    CHECK(quiet.err.empty());
}

TEST_CASE("compile-cache explain: the entries recorded for a kernel, newest first, and what changed between them") {
    filled_cache c;
    // square changes: square's IR, then helper's callee, then main's.
    std::string changed = program_text;
    changed.replace(changed.find("x * x"), 5, "x * x * 1.5");
    c.s.write_program(changed);
    REQUIRE_EXIT(c.s.run({"main", "3"}), 0);
    // main's older entry removed: explain says it is gone.
    process_result const before = tool({"explain", c.dir(), "main", "--json"});
    REQUIRE_EXIT(before, 0);
    std::string const old_main = json_query(before.out, "d['kernels'][0]['entries'][1]['key']");
    REQUIRE(fs::remove(c.s.cache_dir() / old_main.substr(0, 2) / old_main));

    process_result const r = tool({"explain", c.dir(), "main"});
    REQUIRE_EXIT(r, 0);
    INFO(r.out);
    CHECK(count_lines(r.out, "main (") == "1");
    CHECK(r.out.find(": 2 entries recorded, newest first\n") != std::string::npos);
    CHECK(r.out.find("gone (evicted or removed)") != std::string::npos);
    CHECK(r.out.find("     since 2: changed callee:helper; unchanged toolchain, kernel, ir, const:OFFSET") !=
          std::string::npos);
    CHECK(r.out.find("     the oldest recorded\n") != std::string::npos);

    process_result const j = tool({"explain", c.dir(), "square", "--json"});
    REQUIRE_EXIT(j, 0);
    CHECK(json_query(j.out, "len(d['kernels'][0]['entries'])") == "2");
    CHECK(json_query(j.out, "d['kernels'][0]['entries'][0]['changes_from_previous']['changed']") == "['ir']");
    CHECK(json_query(j.out, "d['kernels'][0]['entries'][0]['present']") == "True");
    CHECK(json_query(j.out, "d['kernels'][0]['entries'][1]['changes_from_previous']") == "None");

    process_result const none = tool({"explain", c.dir(), "nosuchkernel"});
    REQUIRE_EXIT(none, 2);
    CHECK(none.err.find("no identity record names a kernel \"nosuchkernel\"") != std::string::npos);
}

TEST_CASE("compile-cache stats and list: identity records are no entries, and the time the hits saved is shown") {
    filled_cache c;
    process_result const r = tool({"stats", c.dir(), "--json"});
    REQUIRE_EXIT(r, 0);
    CHECK(json_query(r.out, "(d['entries'], d['identity_records'])") == "(3, 3)");
    CHECK(json_query(r.out, "d['counters']['hit-compile-ns'] > 0") == "True");
    CHECK(json_query(r.out, "d['saved_ns'] == d['counters']['hit-compile-ns'] - d['counters']['load-ns']") == "True");
    process_result const human = tool({"stats", c.dir()});
    CHECK(line_starting(human.out, "identity records ").rfind("3 (", 0) == 0);
    CHECK(human.out.find("  time saved") != std::string::npos);
    process_result const list = tool({"list", c.dir()});
    CHECK(list.out.find("3 entries, ") != std::string::npos);
    CHECK(list.out.find("(and 3 identity records, not listed)") != std::string::npos);
    process_result const verify = tool({"verify", c.dir()});
    CHECK(verify.out.find("checked 3 entries (CRC-32C): 3 sound, 0 bad; 3 identity records: 3 sound, 0 bad\n") !=
          std::string::npos);
}

namespace {

/// The slots of the pack of identity records at `pack` (ab/<name>) in `dir`, read by the library.
std::vector<compile_cache::directory_layout::pack_slot> slots_of(fs::path const& dir, std::string const& pack) {
    std::vector<compile_cache::directory_layout::pack_slot> slots;
    std::string why;
    INFO(pack);
    REQUIRE(compile_cache::directory_layout::read_pack_slots((dir / pack).string(), slots, why));
    return slots;
}

/// Flips the byte at `offset` of the file `file`.
void flip_byte(fs::path const& file, std::uint64_t offset) {
    std::string bytes = compile_cache_test::read_file(file);
    REQUIRE(offset < bytes.size());
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5a);
    write_file(file, bytes);
}

} // namespace

TEST_CASE("compile-cache stats, verify, explain, copy, prune and clear: identity records in a pack are "
          "records, the pack no entry") {
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    std::vector<std::string> const packs = pack_files(dir);
    REQUIRE(packs.size() == 1); // the cold run's batch of 3 records
    std::uint64_t record_bytes = 0;
    for (auto const& slot : slots_of(dir, packs[0])) record_bytes += slot.length;
    REQUIRE(slots_of(dir, packs[0]).size() == 3);

    // stats: the 3 kernels' entries, the 3 records and their bytes; the pack counts once
    // against the limit, as the file it is.
    process_result const stats = tool({"stats", dir.string(), "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['entries'], d['identity_records'], d['identity_record_packs'])") == "(3, 3, 1)");
    CHECK(json_query(stats.out, "d['identity_record_bytes']") == std::to_string(record_bytes));
    std::uintmax_t bytes = 0, blocks = (fs::file_size(dir / packs[0]) + 4095) / 4096;
    for (auto const& [path, e] : c.s.entries()) {
        bytes += e.size;
        blocks += (e.size + 4095) / 4096;
    }
    CHECK(json_query(stats.out, "d['bytes']") == std::to_string(bytes));
    CHECK(json_query(stats.out, "d['accounted_bytes']") == std::to_string(blocks * 4096));
    process_result const human = tool({"stats", dir.string()});
    REQUIRE_EXIT(human, 0);
    CHECK(line_starting(human.out, "entries ") == "3");
    CHECK(line_starting(human.out, "identity records ").find(", in 1 pack): ") != std::string::npos);
    process_result const metrics = tool({"stats", dir.string(), "--format=openmetrics"});
    REQUIRE_EXIT(metrics, 0);
    CHECK(metrics.out.find("compile_cache_identity_records{cache=\"" + dir.string() + "\"} 3\n") != std::string::npos);
    CHECK(metrics.out.find("compile_cache_identity_record_packs{cache=\"" + dir.string() + "\"} 1\n") !=
          std::string::npos);

    // verify reads each record from the pack and checks it.
    process_result const verified = tool({"verify", dir.string()});
    REQUIRE_EXIT(verified, 0);
    CHECK(verified.out == "checked 3 entries (CRC-32C): 3 sound, 0 bad; 3 identity records: 3 sound, 0 bad\n");

    // explain finds main's record in the pack.
    process_result const explained = tool({"explain", dir.string(), "main"});
    REQUIRE_EXIT(explained, 0);
    CHECK(explained.out.rfind("main (" + c.s.program().string() + "): 1 entry recorded, newest first\n", 0) == 0);

    // copy into another directory: the records are written there in a pack before it reports.
    fs::path const copy = c.s.root() / "copy";
    process_result const copied = tool({"copy", dir.string(), copy.string()});
    REQUIRE_EXIT(copied, 0);
    CHECK(copied.out.rfind("copied 3 entries and 3 identity records (", 0) == 0);
    CHECK(pack_files(copy).size() == 1);
    CHECK(entry_files(copy) == entry_files(dir)); // the kernels' entries, byte for byte
    process_result const there = tool({"explain", copy.string(), "helper", "--json"});
    REQUIRE_EXIT(there, 0);
    CHECK(json_query(there.out, "(len(d['kernels']), len(d['kernels'][0]['entries']), d['unreadable_records'])") ==
          "(1, 1, 0)");
    process_result const verified_copy = tool({"verify", copy.string()});
    REQUIRE_EXIT(verified_copy, 0);
    CHECK(verified_copy.out.find("; 3 identity records: 3 sound, 0 bad\n") != std::string::npos);
    process_result const again = tool({"copy", dir.string(), copy.string(), "--json"});
    REQUIRE_EXIT(again, 0);
    CHECK(json_query(again.out, "(d['copied'], d['copied_identity_records'], d['already_there'])") == "(0, 0, 6)");

    // prune under a limit it is far from: nothing goes, and the pack is not among the entries left.
    process_result const pruned = tool({"prune", dir.string(), "--max-size", "1G", "--json"});
    REQUIRE_EXIT(pruned, 0);
    CHECK(json_query(pruned.out, "(d['removed'], d['entries'])") == "(0, 3)");

    // clear: 3 kernels' entries removed; the pack (one file, 3 records) is not one of them.
    process_result const cleared = tool({"clear", copy.string(), "--json"});
    REQUIRE_EXIT(cleared, 0);
    CHECK(json_query(cleared.out, "d['removed']") == "3");
    CHECK(pack_files(copy).empty());
    process_result const after = tool({"stats", copy.string(), "--json"});
    REQUIRE_EXIT(after, 0);
    CHECK(json_query(after.out, "(d['entries'], d['identity_records'], d['identity_record_packs'])") == "(0, 0, 0)");
}

TEST_CASE("compile-cache verify: a pack of identity records whose index is damaged is a bad entry, and a "
          "damaged record in a sound pack a bad record") {
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    std::vector<std::string> const packs = pack_files(dir);
    REQUIRE(packs.size() == 1);

    SECTION("its index") {
        flip_byte(dir / packs[0], 20); // in the first slot's key: the index's CRC-32C no longer matches
        process_result const r = tool({"verify", dir.string()});
        REQUIRE_EXIT(r, 1);
        CHECK(r.out.find("bad: " + packs[0] + ": a pack of identity records that does not check") !=
              std::string::npos);
        CHECK(r.out.find("checked 4 entries (CRC-32C): 3 sound, 1 bad\n") != std::string::npos);
        process_result const j = tool({"verify", dir.string(), "--json"});
        REQUIRE_EXIT(j, 1);
        CHECK(json_query(j.out, "([b['path'] for b in d['bad']], d['identity_records'])") ==
              "(['" + packs[0] + "'], 0)");
        // --remove deletes it as the bad entry it is.
        process_result const removed = tool({"verify", dir.string(), "--remove"});
        REQUIRE_EXIT(removed, 1);
        CHECK(removed.out.find("bad: " + packs[0] + ": a pack of identity records that does not check") !=
              std::string::npos);
        CHECK(removed.out.find(" (removed)") != std::string::npos);
        CHECK(pack_files(dir).empty());
        REQUIRE_EXIT(tool({"verify", dir.string()}), 0);
    }
    SECTION("a record") {
        flip_byte(dir / packs[0], fs::file_size(dir / packs[0]) - 1); // the last record's check value
        process_result const r = tool({"verify", dir.string()});
        REQUIRE_EXIT(r, 1);
        CHECK(r.out.find("checked 3 entries (CRC-32C): 3 sound, 0 bad; 3 identity records: 2 sound, 1 bad\n") !=
              std::string::npos);
        // A pack is never changed: --remove keeps the record and says why.
        process_result const kept = tool({"verify", dir.string(), "--remove"});
        REQUIRE_EXIT(kept, 1);
        CHECK(kept.out.find("(kept: it is in the pack " + packs[0] + " with other records") != std::string::npos);
        process_result const j = tool({"verify", dir.string(), "--json"});
        REQUIRE_EXIT(j, 1);
        CHECK(json_query(j.out, "[(b['pack'], b['removed']) for b in d['bad_identity_records']]") ==
              "[('" + packs[0] + "', False)]");
        CHECK(pack_files(dir) == packs);
    }
}

TEST_CASE("compile-cache stats, verify, copy, clear and prune: a pack of identity records no marker names is a "
          "file no host reads, its records not listed") {
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    std::vector<std::string> const packs = pack_files(dir);
    REQUIRE(packs.size() == 1);
    // A host stopped between the pack's rename and its marker: no marker names the pack.
    fs::path const marker =
        dir / std::string(compile_cache::directory_layout::packs_folder_name) / packs[0].substr(3);
    REQUIRE(fs::is_symlink(marker));
    REQUIRE(fs::remove(marker));

    // stats: no record a host can read; the pack counted apart, and against the limit as the file it is.
    process_result const stats = tool({"stats", dir.string(), "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['entries'], d['identity_records'], d['identity_record_packs'], "
                                "d['unmarked_identity_record_packs'])") == "(3, 0, 0, 1)");
    std::uintmax_t blocks = (fs::file_size(dir / packs[0]) + 4095) / 4096;
    for (auto const& [path, e] : c.s.entries()) blocks += (e.size + 4095) / 4096;
    CHECK(json_query(stats.out, "d['accounted_bytes']") == std::to_string(blocks * 4096));
    process_result const human = tool({"stats", dir.string()});
    REQUIRE_EXIT(human, 0);
    CHECK(line_starting(human.out, "identity records ").rfind("0 (", 0) == 0);
    CHECK(line_starting(human.out, "record packs without a marker ").rfind("1 (", 0) == 0);
    process_result const metrics = tool({"stats", dir.string(), "--format=openmetrics"});
    REQUIRE_EXIT(metrics, 0);
    CHECK(metrics.out.find("compile_cache_unmarked_identity_record_packs{cache=\"" + dir.string() + "\"} 1\n") !=
          std::string::npos);

    // verify: the pack once, as what it is; no record is missing, and it changes nothing of the exit status.
    process_result const verified = tool({"verify", dir.string()});
    REQUIRE_EXIT(verified, 0);
    CHECK(count_lines(verified.out, packs[0]) == "1");
    CHECK(verified.out.rfind("unmarked pack: " + packs[0] + ": no marker names it, so no host reads its records", 0) ==
          0);
    CHECK(lines_of(verified.out).back() == "checked 3 entries (CRC-32C): 3 sound, 0 bad");
    CHECK(verified.out.find("gone since the listing") == std::string::npos);
    process_result const j = tool({"verify", dir.string(), "--json"});
    REQUIRE_EXIT(j, 0);
    CHECK(json_query(j.out, "([p['path'] for p in d['unmarked_identity_record_packs']], d['identity_records'], "
                            "d['gone_identity_records'])") == "(['" + packs[0] + "'], 0, 0)");

    // copy: the kernels' entries, and no record (none a host reads), none of them "not checked".
    fs::path const copy = c.s.root() / "copy";
    process_result const copied = tool({"copy", dir.string(), copy.string()});
    REQUIRE_EXIT(copied, 0);
    CHECK(copied.out.rfind("copied 3 entries and 0 identity records (", 0) == 0);
    CHECK(pack_files(copy).empty());

    // clear and prune remove it as any entry; it is not counted among the kernels' entries.
    SECTION("clear") {
        process_result const cleared = tool({"clear", dir.string(), "--json"});
        REQUIRE_EXIT(cleared, 0);
        CHECK(json_query(cleared.out, "d['removed']") == "3");
        CHECK(pack_files(dir).empty());
    }
    SECTION("prune") {
        process_result const pruned = tool({"prune", dir.string(), "--max-size", "1", "--json"});
        REQUIRE_EXIT(pruned, 0);
        CHECK(json_query(pruned.out, "(d['removed'], d['entries'])") == "(3, 0)");
        CHECK(pack_files(dir).empty());
    }
    process_result const after = tool({"stats", dir.string(), "--json"});
    REQUIRE_EXIT(after, 0);
    CHECK(json_query(after.out, "(d['entries'], d['unmarked_identity_record_packs'], d['accounted_bytes'])") ==
          "(0, 0, 0)");
}

namespace {

/// A sealed identity record of kernel `name` (in `file`) that recorded one entry, and its key.
std::pair<compile_cache::key, std::string> sealed_record(std::string const& name, std::string const& file) {
    compile_cache::identity_record r;
    r.identity = compile_cache::kernel_identity({}, name, file);
    compile_cache::key const a(std::string(8, 'a'));
    r.history.push_back({compile_cache::key(std::string(32, 'x')), 1, 1, {{"ir", a}}});
    compile_cache::key const rk = compile_cache::identity_record_key(r.identity);
    compile_cache::entry_metadata m;
    m.name = name;
    m.origin_file = file;
    m.format_id = std::string(compile_cache::identity_record_format);
    std::string entry;
    compile_cache::envelope_auth const crc; // (the writer keeps a reference: it outlives the writer)
    compile_cache::envelope_writer w(entry, rk, m, crc);
    w.out() += compile_cache::encode_identity_record(r);
    w.seal();
    return {rk, entry};
}

/// Writes `bytes` as an earlier release wrote a record: the file `dir`/ab/<hex of `rk`>; its `ab/<hex>`.
std::string write_earlier_record_file(fs::path const& dir, compile_cache::key const& rk, std::string const& bytes) {
    std::string const hex = rk.hex();
    REQUIRE(compile_cache::is_identity_record_name(hex));
    fs::create_directories(dir / hex.substr(0, 2));
    write_file(dir / hex.substr(0, 2) / hex, bytes);
    return hex.substr(0, 2) + "/" + hex;
}

} // namespace

TEST_CASE("compile-cache stats, verify, explain, copy, clear and prune: record files of an earlier release are "
          "files no host reads, not records") {
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    REQUIRE(pack_files(dir).size() == 1);
    // As an earlier release left them: main's record (the bytes its pack holds) in a file of its own, the
    // record of a kernel no pack holds, and a file that is no sound envelope.
    process_result const main_record = tool({"explain", dir.string(), "main", "--json"});
    REQUIRE_EXIT(main_record, 0);
    std::optional<compile_cache::key> const main_key =
        compile_cache::key::from_hex(json_query(main_record.out, "d['kernels'][0]['record_key']"));
    REQUIRE(main_key);
    std::string main_bytes;
    REQUIRE(compile_cache::directory_storage(dir.string()).read(*main_key, main_bytes, 1 << 20).status ==
            compile_cache::read_status::found);
    auto const [old_key, old_bytes] = sealed_record("oldkernel", "old.tk");
    std::set<std::string> const files = {
        write_earlier_record_file(dir, *main_key, main_bytes), write_earlier_record_file(dir, old_key, old_bytes),
        write_earlier_record_file(dir, compile_cache::identity_record_key("damaged"), "not an envelope")};
    std::uintmax_t earlier_bytes = 0, blocks = (fs::file_size(dir / pack_files(dir)[0]) + 4095) / 4096;
    for (std::string const& f : files) {
        earlier_bytes += fs::file_size(dir / f);
        blocks += (fs::file_size(dir / f) + 4095) / 4096;
    }
    for (auto const& [path, e] : c.s.entries())
        if (files.count(path) == 0) blocks += (e.size + 4095) / 4096;

    // stats: the packed records alone are records; the files counted apart, and against the limit.
    process_result const stats = tool({"stats", dir.string(), "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['entries'], d['identity_records'], d['identity_record_packs'], "
                                "d['earlier_identity_record_files'])") == "(3, 3, 1, 3)");
    CHECK(json_query(stats.out, "d['accounted_bytes']") == std::to_string(blocks * 4096));
    process_result const human = tool({"stats", dir.string()});
    REQUIRE_EXIT(human, 0);
    CHECK(line_starting(human.out, "identity records ").rfind("3 (", 0) == 0);
    CHECK(line_starting(human.out, "record files of an earlier release ").rfind("3 (" + std::to_string(earlier_bytes) +
                                                                                " B): no host of this release reads",
                                                                            0) == 0);
    process_result const metrics = tool({"stats", dir.string(), "--format=openmetrics"});
    REQUIRE_EXIT(metrics, 0);
    CHECK(metrics.out.find("compile_cache_earlier_identity_record_files{cache=\"" + dir.string() + "\"} 3\n") !=
          std::string::npos);
    process_result const list = tool({"list", dir.string()});
    REQUIRE_EXIT(list, 0);
    CHECK(list.out.find("(and 3 identity records, not listed)") != std::string::npos);

    // verify: the files in one line, neither read nor bad, the exit status unchanged; --remove keeps them.
    for (bool const remove : {false, true}) {
        process_result const verified =
            remove ? tool({"verify", dir.string(), "--remove"}) : tool({"verify", dir.string()});
        REQUIRE_EXIT(verified, 0);
        INFO(verified.out);
        CHECK(verified.out.find("bad:") == std::string::npos);
        CHECK(count_lines(verified.out, "earlier record files: 3 identity record files of an earlier release") ==
              "1");
        CHECK(lines_of(verified.out).back() ==
              "checked 3 entries (CRC-32C): 3 sound, 0 bad" + std::string(remove ? ", 0 removed" : "") +
                  "; 3 identity records: 3 sound, 0 bad" + (remove ? ", 0 removed" : ""));
    }
    for (std::string const& f : files) CHECK(fs::exists(dir / f));
    process_result const j = tool({"verify", dir.string(), "--json"});
    REQUIRE_EXIT(j, 0);
    CHECK(json_query(j.out, "(sorted(p['path'] for p in d['earlier_identity_record_files']), d['identity_records'], "
                            "d['bad_identity_records'])") ==
          "(['" + *files.begin() + "', '" + *std::next(files.begin()) + "', '" + *files.rbegin() + "'], 3, [])");

    // explain: no host reads the kernel recorded only in a file of an earlier release.
    process_result const old = tool({"explain", dir.string(), "oldkernel"});
    REQUIRE_EXIT(old, 2);
    CHECK(old.err.find("no identity record names a kernel \"oldkernel\"") != std::string::npos);
    REQUIRE_EXIT(tool({"explain", dir.string(), "main"}), 0);

    // copy: the kernels' entries and the packed records; not the files (no host would read them).
    fs::path const copy = c.s.root() / "copy";
    process_result const copied = tool({"copy", dir.string(), copy.string()});
    REQUIRE_EXIT(copied, 0);
    CHECK(copied.out.rfind("copied 3 entries and 3 identity records (", 0) == 0);
    for (std::string const& f : files) CHECK(!fs::exists(copy / f));

    // clear and prune remove them as any entry; they are not counted among the kernels' entries.
    SECTION("clear") {
        process_result const cleared = tool({"clear", dir.string(), "--json"});
        REQUIRE_EXIT(cleared, 0);
        CHECK(json_query(cleared.out, "d['removed']") == "3");
    }
    SECTION("prune") {
        process_result const pruned = tool({"prune", dir.string(), "--max-size", "1", "--json"});
        REQUIRE_EXIT(pruned, 0);
        CHECK(json_query(pruned.out, "(d['removed'], d['entries'])") == "(3, 0)");
    }
    for (std::string const& f : files) CHECK(!fs::exists(dir / f));
    process_result const after = tool({"stats", dir.string(), "--json"});
    REQUIRE_EXIT(after, 0);
    CHECK(json_query(after.out, "(d['entries'], d['earlier_identity_record_files'], d['accounted_bytes'])") ==
          "(0, 0, 0)");
}

TEST_CASE("compile-cache stats and verify: a marker whose pack is gone is reported, not bad, and verify --remove "
          "unlinks it") {
    filled_cache c;
    fs::path const dir = c.s.cache_dir();
    std::vector<std::string> const packs = pack_files(dir);
    REQUIRE(packs.size() == 1);
    fs::path const folder = dir / std::string(compile_cache::directory_layout::packs_folder_name);
    std::string const marker = ".cc-records/" + packs[0].substr(3);
    REQUIRE(fs::is_symlink(dir / marker));
    std::string const dangling = "dangling marker: " + marker + ": its pack " + packs[0] +
                                 " is gone (a merge or an eviction removes a pack before its marker); not bad: hosts "
                                 "unlink it at their next look";

    SECTION("beside a pack that is there: verify's look at the packs, as it reads the records, unlinks it") {
        // As a merge leaves it for a moment (the merged pack removed, its marker not yet): a marker, as a host
        // makes it, of a pack that is gone; the records are those of the pack that is there.
        std::string gone = packs[0].substr(3);
        gone[10] = gone[10] == '0' ? '1' : '0';
        REQUIRE(compile_cache::directory_layout::is_pack_name(gone));
        std::string const gone_pack = gone.substr(0, 2) + "/" + gone, gone_marker = ".cc-records/" + gone;
        fs::create_symlink("../" + gone_pack, folder / gone);
        process_result const stats = tool({"stats", dir.string(), "--json"});
        REQUIRE_EXIT(stats, 0);
        CHECK(json_query(stats.out, "(d['entries'], d['identity_records'], d['identity_record_packs'], "
                                    "d['dangling_identity_record_pack_markers'])") == "(3, 3, 1, 1)");
        process_result const human = tool({"stats", dir.string()});
        REQUIRE_EXIT(human, 0);
        CHECK(line_starting(human.out, "record pack markers without a pack ")
                  .rfind("1 (in .cc-records): their packs are gone", 0) == 0);
        process_result const metrics = tool({"stats", dir.string(), "--format=openmetrics"});
        REQUIRE_EXIT(metrics, 0);
        CHECK(metrics.out.find("compile_cache_dangling_identity_record_pack_markers{cache=\"" + dir.string() +
                               "\"} 1\n") != std::string::npos);
        CHECK(fs::is_symlink(folder / gone)); // (stats reads no record)

        process_result const verified = tool({"verify", dir.string()});
        REQUIRE_EXIT(verified, 0);
        CHECK(verified.out == "dangling marker: " + gone_marker + ": its pack " + gone_pack +
                                  " is gone (a merge or an eviction removes a pack before its marker); not bad: "
                                  "hosts unlink it at their next look (unlinked now, by a look at the packs, as hosts "
                                  "do)\nchecked 3 entries (CRC-32C): 3 sound, 0 bad; 3 identity records: 3 sound, 0 "
                                  "bad\n");
        CHECK(!fs::exists(fs::symlink_status(folder / gone)));
        CHECK(fs::is_symlink(dir / marker));
        fs::create_symlink("../" + gone_pack, folder / gone);
        process_result const j = tool({"verify", dir.string(), "--json"});
        REQUIRE_EXIT(j, 0);
        CHECK(json_query(j.out, "[(m['path'], m['pack'], m['unlinked']) "
                                "for m in d['dangling_identity_record_pack_markers']]") ==
              "[('" + gone_marker + "', '" + gone_pack + "', True)]");
    }
    SECTION("alone (its pack evicted): verify reads no record, and keeps it, --remove unlinks it") {
        REQUIRE(fs::remove(dir / packs[0]));
        process_result const stats = tool({"stats", dir.string(), "--json"});
        REQUIRE_EXIT(stats, 0);
        CHECK(json_query(stats.out, "(d['identity_records'], d['identity_record_packs'], "
                                    "d['dangling_identity_record_pack_markers'])") == "(0, 0, 1)");
        process_result const verified = tool({"verify", dir.string()});
        REQUIRE_EXIT(verified, 0);
        CHECK(verified.out == dangling + "\nchecked 3 entries (CRC-32C): 3 sound, 0 bad\n");
        process_result const j = tool({"verify", dir.string(), "--json"});
        REQUIRE_EXIT(j, 0);
        CHECK(json_query(j.out, "[(m['key'], m['path'], m['unlinked']) "
                                "for m in d['dangling_identity_record_pack_markers']]") ==
              "[('" + packs[0].substr(3) + "', '" + marker + "', False)]");
        CHECK(fs::is_symlink(dir / marker));
        process_result const removed = tool({"verify", dir.string(), "--remove"});
        REQUIRE_EXIT(removed, 0);
        CHECK(removed.out == dangling + " (unlinked)\nchecked 3 entries (CRC-32C): 3 sound, 0 bad, 0 removed\n");
        CHECK(!fs::exists(fs::symlink_status(dir / marker)));
        process_result const after = tool({"stats", dir.string(), "--json"});
        REQUIRE_EXIT(after, 0);
        CHECK(json_query(after.out, "d['dangling_identity_record_pack_markers']") == "0");
    }
}

TEST_CASE("compile-cache copy into a directory where no pack can be written: every identity record of each refused "
          "batch is counted refused, none copied") {
    temp_dir root{"compile-cache-copy-refused"};
    fs::path const src = root.path() / "src", dst = root.path() / "dst";
    // Two batches of records: a directory packs 256 at most at once, so a batch falls due during the copy.
    int const n = 2 * static_cast<int>(compile_cache::detail::held_batch_bounds::max_keys);
    make_entries(src, n, {}, true);
    REQUIRE(pack_files(src).size() >= 2);
    process_result const listed = tool({"stats", src.string(), "--json"});
    REQUIRE_EXIT(listed, 0);
    REQUIRE(json_query(listed.out, "(d['entries'], d['identity_records'])") ==
            "(" + std::to_string(n) + ", " + std::to_string(n) + ")");
    // The destination: a cache whose markers' folder is a file, so that no marker can be made and the
    // library refuses every pack (tests/directory_storage_records_test.cpp, "no pack where no marker can be made").
    REQUIRE_EXIT(tool({"set", dst.string(), "max-size", "1G"}), 0);
    write_file(dst / std::string(compile_cache::directory_layout::packs_folder_name), "not a folder");

    std::string const all = std::to_string(n);
    process_result const r = tool({"copy", src.string(), dst.string(), "--json"});
    REQUIRE_EXIT(r, 3);
    CHECK(json_query(r.out, "(d['copied'], d['copied_identity_records'], d['failed'], d['failed_identity_records'])") ==
          "(" + all + ", 0, " + all + ", " + all + ")");
    std::uint64_t entry_bytes = 0;
    for (auto const& [path, bytes] : entry_files(dst)) entry_bytes += bytes.size();
    CHECK(json_query(r.out, "d['copied_bytes']") == std::to_string(entry_bytes));
    // What was refused is named as what it is: records, not entries.
    CHECK(r.err.find("compile-cache: " + dst.string() + ": refused " + all + " identity records: ") !=
          std::string::npos);
    CHECK(r.err.find(" entries: ") == std::string::npos);
    CHECK(pack_files(dst).empty());

    // Again, in text: the entries are there now; every record is refused again.
    process_result const again = tool({"copy", src.string(), dst.string()});
    REQUIRE_EXIT(again, 3);
    CHECK(again.out.rfind("copied 0 entries and 0 identity records (", 0) == 0);
    CHECK(again.out.find("; " + all + " already there, ") != std::string::npos);
    CHECK(again.out.find(", " + all + " identity records refused by the destination\n") != std::string::npos);
    CHECK(again.err.find(": refused " + all + " identity records: ") != std::string::npos);
}

TEST_CASE("compile-cache explain escapes the names, file and components a forged identity record holds") {
    temp_dir dir{"compile-cache-forged"};
    compile_cache::directory_storage storage(dir.path().string());
    std::string const evil_name = "main\x1b[31m", evil_file = "prog\x1b]0;owned\x07.tk";
    std::string const evil_component = "\x1b[2J\ncompile-cache: all good";
    compile_cache::identity_record r;
    r.identity = compile_cache::kernel_identity({}, evil_name, evil_file);
    compile_cache::key const a(std::string(8, 'a')), b(std::string(8, 'b'));
    r.history.push_back({compile_cache::key(std::string(32, 'x')), 2, 1, {{"ir", b}, {evil_component, a}}});
    r.history.push_back({compile_cache::key(std::string(32, 'y')), 1, 1, {{"ir", a}, {evil_component, b}}});
    compile_cache::key const rk = compile_cache::identity_record_key(r.identity);
    compile_cache::entry_metadata m;
    m.name = evil_name;
    m.origin_file = evil_file;
    m.format_id = std::string(compile_cache::identity_record_format);
    compile_cache::envelope_auth const auth;
    std::string entry;
    compile_cache::envelope_writer w(entry, rk, m, auth);
    w.out() += compile_cache::encode_identity_record(r);
    w.seal();
    REQUIRE(!storage.write(rk, entry));
    REQUIRE(!storage.flush_deferred()); // (a record is held until its batch is written in a pack)

    process_result const shown = tool({"explain", dir.path().string(), evil_name});
    REQUIRE_EXIT(shown, 0);
    INFO(shown.out);
    CHECK(shown.out.find('\x1b') == std::string::npos);
    CHECK(shown.out.find('\x07') == std::string::npos);
    CHECK(shown.out.rfind("main\\x1b[31m (prog\\x1b]0;owned\\x07.tk): 2 entries recorded", 0) == 0);
    CHECK(shown.out.find("since 2: changed ir, \\x1b[2J\\x0acompile-cache: all good\n") != std::string::npos);
    CHECK(shown.out.find("\ncompile-cache: all good") == std::string::npos); // no line of its own
}

TEST_CASE("compile-cache --version, -h, and every command's --help") {
    process_result const version = tool({"--version"});
    REQUIRE_EXIT(version, 0);
    CHECK(version.out.rfind("compile-cache " + std::to_string(COMPILE_CACHE_VERSION_MAJOR) + "." +
                                std::to_string(COMPILE_CACHE_VERSION_MINOR) + "." +
                                std::to_string(COMPILE_CACHE_VERSION_PATCH) + " (",
                            0) == 0);
    CHECK(version.err.empty());
    // It says whether signed entries are built in (and that compressed ones need no library).
    bool const with_signing = version.out.find(" +signing)\n") != std::string::npos;
    CHECK(with_signing != (version.out.find(" -signing)\n") != std::string::npos));
    CHECK(version.out.find(with_signing ? "signed entries (Ed25519, libsodium): built in"
                                        : "signed entries (Ed25519): not built in") != std::string::npos);
    CHECK(version.out.find("compressed entries (zstd): ") != std::string::npos);
    process_result const h = tool({"-h"}), help = tool({"--help"});
    REQUIRE_EXIT(h, 0);
    CHECK(h.out == help.out);
    for (char const* command :
         {"stats", "list", "show", "verify", "prune", "clear", "zero", "set", "explain", "copy", "config"}) {
        INFO(command);
        process_result const r = tool({command, "--help"});
        REQUIRE_EXIT(r, 0);
        CHECK(r.err.empty());
        CHECK(r.out.rfind(std::string("usage: compile-cache ") + command + " ", 0) == 0);
        CHECK(r.out.find(std::string("\n  ") + command + " ") != std::string::npos); // its own paragraph
        CHECK(r.out != help.out);
        CHECK(help.out.find(std::string("\n  ") + command + " ") != std::string::npos); // and in the whole help
    }
    CHECK(tool({"copy", "-h"}).out.find("--since AGE") != std::string::npos);
}

TEST_CASE("compile-cache zero sets the recorded counters back to zero and stats counts from then on, as ccache -z") {
    filled_cache c;
    process_result const before = tool({"stats", c.dir(), "--json"});
    REQUIRE_EXIT(before, 0);
    REQUIRE(json_query(before.out, "(d['counters']['hits'], d['counters']['stores'], d['counters_since'])") ==
            "(3, 3, None)");

    process_result const zeroed = tool({"zero", c.dir()});
    REQUIRE_EXIT(zeroed, 0);
    CHECK(zeroed.out.find("zeroed the counters of " + c.dir()) != std::string::npos);
    process_result const after = tool({"stats", c.dir(), "--json"});
    REQUIRE_EXIT(after, 0);
    CHECK(json_query(after.out, "all(n == 0 for n in d['counters'].values()) and len(d['counters']) > 0") == "True");
    CHECK(json_query(after.out, "d['counters_since'].endswith('Z')") == "True");
    CHECK(json_query(after.out, "(d['entries'], d['size_limit'], d['hit_rate'])") ==
          "(3, " + std::to_string(std::uint64_t{1} << 30) + ", None)"); // entries and the limit stay
    process_result const human = tool({"stats", c.dir()});
    REQUIRE_EXIT(human, 0);
    CHECK(human.out.find("counters recorded by hosts since ") != std::string::npos);
    CHECK(human.out.find("hit rate") == std::string::npos);

    // A host's counts after it start from zero.
    tinyk_result const warm = c.s.run({"main", "3"});
    REQUIRE_EXIT(warm, 0);
    REQUIRE(warm.loaded().size() == 3);
    process_result const counted = tool({"stats", c.dir(), "--json"});
    CHECK(json_query(counted.out, "(d['counters']['hits'], d['counters']['stores'], d['hit_rate'])") == "(3, 0, 1)");
    CHECK(json_query(counted.out, "d['counters_since'] is not None") == "True");

    process_result const not_dir = tool({"zero", "sqlite:" + (c.s.root() / "x.db").string()});
    REQUIRE_EXIT(not_dir, 2);
    CHECK(not_dir.err.find(" keeps no counters to zero: hosts record theirs in their local cache directory") !=
          std::string::npos);
}

TEST_CASE("compile-cache zero run as root in another user's cache: the files it makes are that user's") {
    if (::geteuid() != 0) {
        WARN("not root: another user's cache cannot be made here; not tested");
        return;
    }
    temp_dir root("compile-cache-test");
    std::string const dir = (root.path() / "theirs").string();
    {
        compile_cache::directory_storage s(dir);
        REQUIRE(!s.record_counters({{"hits", 2}}));
    }
    fs::path const counters = fs::path(dir) / ".cc-counters";
    for (auto const& e : fs::directory_iterator(counters))
        if (e.path().extension() == ".lock") fs::remove(e.path());
    uid_t const nobody = 65534;
    for (auto const& p : {fs::path(dir), counters}) REQUIRE(::chown(p.c_str(), nobody, nobody) == 0);
    for (auto const& e : fs::directory_iterator(counters)) REQUIRE(::chown(e.path().c_str(), nobody, nobody) == 0);
    process_result const zeroed = tool({"zero", dir}); // as root
    REQUIRE_EXIT(zeroed, 0);
    std::size_t locks = 0;
    for (auto const& e : fs::directory_iterator(counters)) {
        INFO(e.path().filename().string());
        struct stat st {};
        REQUIRE(::stat(e.path().c_str(), &st) == 0);
        if (e.path().extension() == ".lock") ++locks;
        CHECK(st.st_uid == nobody); // else its hosts could not open it (0600)
        CHECK(st.st_gid == nobody);
    }
    CHECK(locks >= 1);
}

TEST_CASE("compile-cache zero in a shared directory: lock files with the group's mode, whatever the umask") {
    temp_dir root("compile-cache-test");
    std::string const dir = (root.path() / "group").string();
    compile_cache::directory_storage s(dir, compile_cache::directory_options::shared());
    REQUIRE(!s.record_counters({{"hits", 2}}));
    fs::path const counters = fs::path(dir) / ".cc-counters";
    REQUIRE(compile_cache_test::mode_of(counters) == 02770u);
    // Lock files gone (a cleanup of the directory, an earlier release's): zero makes them,
    // as a host would, under the usual umask.
    for (auto const& e : fs::directory_iterator(counters))
        if (e.path().extension() == ".lock") fs::remove(e.path());
    compile_cache_test::umask_guard const um(022);
    process_result const zeroed = tool({"zero", dir});
    REQUIRE_EXIT(zeroed, 0);
    std::size_t locks = 0;
    for (auto const& e : fs::directory_iterator(counters)) {
        INFO(e.path().filename().string());
        if (e.path().extension() == ".lock") ++locks;
        CHECK(compile_cache_test::mode_of(e.path()) == 0660u); // each lock file, and shard 0 it made
    }
    CHECK(locks >= 1);
    CHECK(fs::exists(counters / "0"));
    CHECK(s.recorded_counters()["hits"] == 0);
}

namespace {
/// promtool (Debian's prometheus), when installed.
std::string promtool() {
    for (char const* p : {"/usr/bin/promtool", "/usr/local/bin/promtool"})
        if (::access(p, X_OK) == 0) return p;
    return {};
}
} // namespace

TEST_CASE("compile-cache stats --format=openmetrics: the counters as Prometheus text, each with HELP and TYPE") {
    filled_cache c;
    REQUIRE(!compile_cache::directory_storage(c.dir()).record_counters({{"remote.errors.timeout", 2}}));
    process_result const r = tool({"stats", c.dir(), "--format=openmetrics"});
    REQUIRE_EXIT(r, 0);
    std::string const label = "{cache=\"" + c.dir() + "\"";
    CHECK(r.out.find("# TYPE compile_cache_hits_total counter\ncompile_cache_hits_total" + label + "} 3\n") !=
          std::string::npos);
    CHECK(r.out.find("compile_cache_misses_total" + label + ",reason=\"absent\"} 3\n") != std::string::npos);
    CHECK(r.out.find("compile_cache_stores_total" + label + "} 3\n") != std::string::npos);
    CHECK(r.out.find("compile_cache_remote_errors_total" + label + ",kind=\"timeout\"} 2\n") != std::string::npos);
    CHECK(r.out.find("compile_cache_entries" + label + "} 3\n") != std::string::npos);
    CHECK(r.out.find("# TYPE compile_cache_time_saved_seconds gauge\n") != std::string::npos);
    CHECK(r.out.size() > 6);
    CHECK(r.out.substr(r.out.size() - 6) == "# EOF\n");
    // Every sample's family has its HELP and TYPE lines before it.
    std::set<std::string> helped, typed;
    std::size_t samples = 0;
    for (std::string const& line : lines_of(r.out)) {
        std::istringstream words(line);
        std::string hash, kind, name;
        words >> hash >> kind >> name;
        if (hash == "#" && kind == "HELP") helped.insert(name);
        if (hash == "#" && kind == "TYPE") typed.insert(name);
        if (line.empty() || line[0] == '#') continue;
        std::string const family = line.substr(0, line.find_first_of("{ "));
        INFO(line);
        CHECK(helped.count(family) == 1);
        CHECK(typed.count(family) == 1);
        ++samples;
    }
    CHECK(samples >= 10);
    if (std::string const p = promtool(); !p.empty()) {
        temp_dir scratch("compile-cache-metrics");
        write_file(scratch.path() / "metrics.prom", r.out);
        process_spec spec;
        spec.argv = {"/bin/sh", "-c", "\"$0\" check metrics < \"$1\"", p, (scratch.path() / "metrics.prom").string()};
        spec.env = tool_environment();
        process_result const checked = run_process(spec);
        INFO(checked.describe());
        CHECK(checked.exited(0));
    } else {
        WARN("promtool (Debian: prometheus) is not installed: the exposition was not checked by it");
    }
    // And JSON gains the rates the text prints.
    process_result const json = tool({"stats", c.dir(), "--json"});
    CHECK(json_query(json.out, "d['hit_rate']") == "0.5");
    process_result const both = tool({"stats", c.dir(), "--json", "--format=openmetrics"});
    REQUIRE_EXIT(both, 2);
    // --json with --format=text is two formats too, not JSON printed (nor text).
    process_result const json_and_text = tool({"stats", c.dir(), "--format", "text", "--json"});
    REQUIRE_EXIT(json_and_text, 2);
    CHECK(json_and_text.err.find("--json and --format=text are two formats") != std::string::npos);
    CHECK(json_and_text.out.empty());
}

TEST_CASE("compile-cache --: what follows is operands, so a cache directory may be named like an option") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "-x";
    make_entries(dir, 2);
    process_result const r = tool({"list", "--json", "--", dir.filename().string()}, root.path());
    REQUIRE_EXIT(r, 0);
    CHECK(json_query(r.out, "len(d['entries'])") == "2");
    // (And show: these entries, written with a format that names no artifact type, show none.)
    std::string const prefix = json_query(r.out, "d['entries'][0]['key'][:16]");
    process_result const shown = tool({"show", "--json", "--", dir.filename().string(), prefix}, root.path());
    REQUIRE_EXIT(shown, 0);
    CHECK(json_query(shown.out, "d['metadata']['artifact']") == "");
    CHECK(json_query(shown.out, "d['metadata']['format_id']") == "make_entries");
    process_result const without = tool({"list", dir.filename().string()}, root.path());
    REQUIRE_EXIT(without, 2);
    CHECK(without.err.find("unknown option -x") != std::string::npos);
    // Nor is a directory named -h a request for help.
    make_entries(root.path() / "-h", 1);
    process_result const named_h = tool({"list", "--json", "--", "-h"}, root.path());
    REQUIRE_EXIT(named_h, 0);
    CHECK(json_query(named_h.out, "len(d['entries'])") == "1");
    // Nor is an option's value: --secret-file -h names a file (there is none), not help.
    process_result const value_h = tool({"verify", "--secret-file", "-h", "--", dir.filename().string()}, root.path());
    INFO(value_h.describe());
    CHECK(!value_h.exited(0));
    CHECK(value_h.out.find("usage: compile-cache") == std::string::npos);
    CHECK(value_h.err.find("-h") != std::string::npos);
    // And `--help=x`, `--version=x` are options given a value they do not take.
    for (char const* given : {"--help=x", "--version=x"}) {
        process_result const valued = tool({"list", given, "--", dir.filename().string()}, root.path());
        INFO(valued.describe());
        CHECK(valued.exited(2));
        CHECK(valued.err.find("unknown option") != std::string::npos);
    }
}

TEST_CASE("compile-cache --progress: on a terminal, one line kept up to date with the rate and the time left") {
    filled_cache c;
    // Under a real pseudo-terminal (script(1)): stderr is a terminal there.
    auto const on_terminal = [&](std::vector<std::string> const& args) {
        std::string command = "exec '" + std::string(COMPILE_CACHE_TOOL) + "'";
        for (std::string const& a : args) command += " '" + a + "'";
        process_spec spec;
        spec.argv = {"/usr/bin/script", "-q", "-e", "-c", command, "/dev/null"};
        spec.env = tool_environment();
        spec.timeout = std::chrono::milliseconds(60000);
        return run_process(spec);
    };
    process_result const shown = on_terminal({"verify", c.dir(), "--progress"});
    REQUIRE_EXIT(shown, 0);
    INFO(shown.out);
    CHECK(shown.out.find("\rcompile-cache: verifying entries: 6 of 6 (6 entries), ") != std::string::npos);
    CHECK(shown.out.find(" left") != std::string::npos);
    CHECK(shown.out.find("checked 3 entries (CRC-32C): 3 sound") != std::string::npos);
    // Not asked for, on a small cache: nothing.
    process_result const quiet = on_terminal({"verify", c.dir()});
    REQUIRE_EXIT(quiet, 0);
    CHECK(quiet.out.find("verifying entries") == std::string::npos);
    // Asked for, into a pipe: a line at each tenth of the work, the last one whole.
    process_result const piped = tool({"copy", c.dir(), (c.s.root() / "copy").string(), "--progress"});
    REQUIRE_EXIT(piped, 0);
    CHECK(piped.err.find("compile-cache: copying entries: 6 of 6 (6 entries)\n") != std::string::npos);
    CHECK(piped.err.find('\r') == std::string::npos);
}

TEST_CASE("compile-cache config: every setting a host reads under a prefix, its value and where it came from, a "
          "password never shown") {
    auto const config = [](std::vector<std::string> const& args, std::vector<std::string> const& env) {
        process_spec spec;
        spec.argv = {COMPILE_CACHE_TOOL, "config"};
        spec.argv.insert(spec.argv.end(), args.begin(), args.end());
        spec.env = tool_environment();
        spec.env.insert(spec.env.end(), env.begin(), env.end());
        return run_process(spec);
    };
    process_result const r =
        config({"--prefix", "TINYK_CACHE", "--json"}, {"TINYK_CACHE_DIR=/var/cache/tinyk", "TINYK_CACHE_MAX_SIZE=5G"});
    REQUIRE_EXIT(r, 0);
    CHECK(json_query(r.out, "[(s['value'], s['from']) for s in d['settings'] if s['name'] == 'TINYK_CACHE_MAX_SIZE']") ==
          "[('5G', 'environment')]");
    CHECK(json_query(r.out, "[(s['value'], s['from']) for s in d['settings'] if s['name'] == 'TINYK_CACHE_LOG']") ==
          "[(None, 'default')]");
    CHECK(json_query(r.out, "'TINYK_CACHE_SECRET_FILE' in [s['name'] for s in d['settings']]") == "True");
    CHECK(json_query(r.out, "'TINYK_CACHE_REMOTE' in [s['name'] for s in d['settings']]") == "False");
    process_result const human = config({"--prefix", "TINYK_CACHE"}, {"TINYK_CACHE_DIR=/var/cache/tinyk"});
    REQUIRE_EXIT(human, 0);
    CHECK(line_starting(human.out, "(environment)").rfind("TINYK_CACHE_DIR", 0) == 0);
    CHECK(human.out.find("= /var/cache/tinyk") != std::string::npos);
    CHECK(line_starting(human.out, "(default)").rfind("TINYK_CACHE_MAX_SIZE", 0) == 0);

    process_result const no_prefix = config({}, {});
    REQUIRE_EXIT(no_prefix, 2);
    CHECK(no_prefix.err.find("config needs --prefix PREFIX") != std::string::npos);

    // With a Redis URL (when the tool has Redis): the remote's settings too, and its password as ***.
    if (tool({"--version"}).out.find("+redis") == std::string::npos) return;
    process_result const remote = config({"--prefix", "TINYK_CACHE", "redis://127.0.0.1:1"},
                                         {"TINYK_CACHE_REMOTE=redis://user:s3cret-word@cache-host:6379"});
    REQUIRE_EXIT(remote, 0);
    CHECK(remote.out.find("TINYK_CACHE_REMOTE_NAMESPACE") != std::string::npos);
    CHECK(remote.out.find("redis://user:***@cache-host:6379") != std::string::npos);
    CHECK(remote.out.find("s3cret-word") == std::string::npos);

}

namespace {

/// `compile-cache config --prefix TINYK_CACHE --json ARGS` run with the tool's environment
/// and `env`: the (value, from) pairs of the settings `which` (a Python condition on `s`) selects.
std::string config_values(std::vector<std::string> args, std::vector<std::string> const& env, std::string const& which) {
    process_spec spec;
    spec.argv = {COMPILE_CACHE_TOOL, "config", "--prefix", "TINYK_CACHE", "--json"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = tool_environment();
    spec.env.insert(spec.env.end(), env.begin(), env.end());
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 0);
    return json_query(r.out, "[(s['value'], s['from']) for s in d['settings'] if " + which + "]");
}

} // namespace

TEST_CASE("compile-cache set keeps max-size in the cache directory: hosts use it, their environment wins, config "
          "says where each value came from") {
    scenario s;
    s.write_program(program_text);
    std::string const dir = s.cache_dir().string();
    fs::path const file = s.cache_dir() / ".cc-settings";
    // Before the first host: the directory is made, the file written, private.
    process_result const set = tool({"set", dir, "max-size", "48K"});
    REQUIRE_EXIT(set, 0);
    CHECK(set.out == dir + " keeps max-size = 48K (in " + file.string() +
                         "); a host's PREFIX_MAX_SIZE, when set, wins over it\n");
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(read_file(file).find("\nmax-size = 48K\n") != std::string::npos);

    // A host (tinyk) without TINYK_CACHE_MAX_SIZE uses it: it records that limit.
    tinyk_result const cold = s.run({"main", "3"});
    REQUIRE_EXIT(cold, 0);
    CHECK(cold.out == "23\n");
    CHECK(cold.err.find("compile_cache") == std::string::npos); // nothing to say
    process_result const stats = tool({"stats", dir, "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['size_limit'], d['kept_settings'])") == "(49152, {'max-size': '48K'})");
    std::string const limit_line = line_starting(tool({"stats", dir}).out, "size limit");
    CHECK(limit_line.rfind("48 KiB (", 0) == 0);
    CHECK(limit_line.find(" used), kept by the directory (compile-cache set; a host's PREFIX_MAX_SIZE wins)") !=
          std::string::npos);
    // Its environment wins. (The counters go first: the limit stats shows is that of the
    // latest host to record, and two hosts may record within the same second.)
    fs::remove_all(s.cache_dir() / ".cc-counters");
    REQUIRE_EXIT(s.run({"main", "3"}, {}, {"TINYK_CACHE_MAX_SIZE=2G"}), 0);
    CHECK(json_query(tool({"stats", dir, "--json"}).out, "d['size_limit']") == std::to_string(std::uint64_t{2} << 30));

    // config: each value and where it came from, for DIR or for PREFIX_DIR's directory.
    auto const config = [&](std::vector<std::string> args, std::vector<std::string> const& env) {
        return config_values(std::move(args), env, "s['name'] in ('TINYK_CACHE_MAX_SIZE', 'TINYK_CACHE_DURABILITY')");
    };
    CHECK(config({dir}, {}) == "[('48K', 'settings file'), (None, 'default')]");
    CHECK(config({}, {"TINYK_CACHE_DIR=" + dir}) == "[('48K', 'settings file'), (None, 'default')]");
    CHECK(config({dir}, {"TINYK_CACHE_MAX_SIZE=2G"}) == "[('2G', 'environment'), (None, 'default')]");
    CHECK(config({}, {}) == "[(None, 'default'), (None, 'default')]");
    REQUIRE_EXIT(tool({"set", dir, "durability", "File"}), 0);
    CHECK(config({dir}, {}) == "[('48K', 'settings file'), ('file', 'settings file')]");

    // prune without --max-size: the kept one.
    REQUIRE_EXIT(tool({"set", dir, "max-size", "8K"}), 0);
    process_result const pruned = tool({"prune", dir});
    REQUIRE_EXIT(pruned, 0);
    CHECK(pruned.out.find("against the limit of 8.0 KiB\n") != std::string::npos);
    tinyk_result const after = s.run({"main", "3"});
    REQUIRE_EXIT(after, 0);
    CHECK(after.out == "23\n");

    // default takes a setting out; with none left, the file goes.
    REQUIRE_EXIT(tool({"set", dir, "max-size", "default"}), 0);
    CHECK(read_file(file).find("max-size") == std::string::npos);
    process_result const no_limit = tool({"prune", dir});
    REQUIRE_EXIT(no_limit, 2);
    CHECK(no_limit.err.rfind("compile-cache: prune needs --max-size SIZE: " + dir +
                                 " keeps no max-size (compile-cache set)\nusage: ",
                             0) == 0);
    REQUIRE_EXIT(tool({"set", dir, "durability", "default"}), 0);
    CHECK(!fs::exists(file));
}

TEST_CASE("compile-cache set: an unknown setting, a bad value or a cache that keeps no settings is one sentence and "
          "exit 2, and hosts say what they cannot use in a settings file and go on") {
    scenario s;
    s.write_program(program_text);
    std::string const dir = s.cache_dir().string();
    fs::path const file = s.cache_dir() / ".cc-settings";
    REQUIRE_EXIT(tool({"set", dir, "max-size", "5G"}), 0);
    std::string const before = read_file(file);

    process_result const bad_size = tool({"set", dir, "max-size", "5Q"});
    REQUIRE_EXIT(bad_size, 2);
    CHECK(bad_size.err == "compile-cache: max-size \"5Q\" is not a size (a number of bytes, or one with a K, M or G "
                          "suffix in powers of 1024, such as 48K, 500M or 2G)\n");
    process_result const unknown = tool({"set", dir, "colour", "red"});
    REQUIRE_EXIT(unknown, 2);
    CHECK(unknown.err == "compile-cache: \"colour\" is not a setting a cache directory keeps: it keeps max-size, "
                         "durability and compress (compile-cache set --help)\n");
    process_result const bad_choice = tool({"set", dir, "durability", "always"});
    REQUIRE_EXIT(bad_choice, 2);
    CHECK(bad_choice.err == "compile-cache: durability \"always\" is not a durability (none, file or full)\n");
    process_result const missing = tool({"set", dir, "max-size"});
    REQUIRE_EXIT(missing, 2);
    CHECK(missing.err.rfind("compile-cache: set needs DIR, NAME and VALUE\n", 0) == 0);
    process_result const not_dir = tool({"set", "sqlite:" + (s.root() / "x.db").string(), "max-size", "5G"});
    REQUIRE_EXIT(not_dir, 2);
    CHECK(not_dir.err.find("set works on a cache directory only") != std::string::npos);
    fs::create_directories(s.root() / "notes");
    write_file(s.root() / "notes" / "README", "mine\n");
    process_result const foreign = tool({"set", (s.root() / "notes").string(), "max-size", "5G"});
    REQUIRE_EXIT(foreign, 2);
    CHECK(!fs::exists(s.root() / "notes" / ".cc-settings"));
    CHECK(read_file(file) == before); // nothing refused was written

    // A value the file holds that does not parse: one line from the host, the default, a right result.
    write_file(file, "max-size = lots\n");
    ::chmod(file.c_str(), 0600);
    tinyk_result const r = s.run({"main", "3"});
    REQUIRE_EXIT(r, 0);
    CHECK(r.out == "23\n");
    CHECK(count_lines(r.err, ".cc-settings: max-size = \"lots\" is not a size") == "1");
    CHECK(json_query(tool({"stats", dir, "--json"}).out, "d['size_limit']") == std::to_string(std::uint64_t{1} << 30));
    // A file others may write is not trusted: one line, and ignored.
    write_file(file, "max-size = 4K\n");
    ::chmod(file.c_str(), 0666);
    tinyk_result const untrusted = s.run({"main", "3"});
    REQUIRE_EXIT(untrusted, 0);
    CHECK(untrusted.out == "23\n");
    CHECK(count_lines(untrusted.err, ".cc-settings is owned by another user or writable by others, so it is not "
                                     "trusted; it is ignored") == "1");
    CHECK(untrusted.loaded().size() == 3); // a limit of 4K would have evicted them
}

TEST_CASE("compile-cache set keeps compress in the cache directory: config says where the value came from, a bad "
          "level is one sentence and exit 2, a host without compression says once that it is asked for") {
    scenario s;
    s.write_program(program_text);
    std::string const dir = s.cache_dir().string();
    fs::path const file = s.cache_dir() / ".cc-settings";
    process_result const set = tool({"set", dir, "compress", "19"});
    REQUIRE_EXIT(set, 0);
    CHECK(set.out == dir + " keeps compress = 19 (in " + file.string() +
                         "); a host's PREFIX_COMPRESS, when set, wins over it\n");
    CHECK(read_file(file).find("\ncompress = 19\n") != std::string::npos);
    REQUIRE_EXIT(tool({"set", dir, "max-size", "5G"}), 0); // the other settings stay as they are
    CHECK(read_file(file).find("\ncompress = 19\n") != std::string::npos);

    // config: PREFIX_COMPRESS, its value and where it came from (for any host: the tool
    // cannot know whether a host's cache compresses).
    auto const config = [&](std::vector<std::string> args, std::vector<std::string> const& env) {
        return config_values(std::move(args), env, "s['name'] == 'TINYK_CACHE_COMPRESS'");
    };
    CHECK(config({dir}, {}) == "[('19', 'settings file')]");
    CHECK(config({}, {"TINYK_CACHE_DIR=" + dir}) == "[('19', 'settings file')]");
    CHECK(config({dir}, {"TINYK_CACHE_COMPRESS=0"}) == "[('0', 'environment')]");
    CHECK(config({}, {}) == "[(None, 'default')]");
    process_result const human = tool({"config", "--prefix", "TINYK_CACHE", dir});
    REQUIRE_EXIT(human, 0);
    CHECK(count_lines(human.out, "TINYK_CACHE_COMPRESS") == "1");
    for (std::string const& line : lines_of(human.out))
        if (line.find("TINYK_CACHE_COMPRESS") != std::string::npos) {
            CHECK(line.rfind("(settings file)", 0) == 0);
            CHECK(line.find("TINYK_CACHE_COMPRESS") < line.find("= 19 "));
        }

    // A level set refuses: one sentence, exit 2, nothing written.
    std::string const before = read_file(file);
    for (char const* bad : {"25", "20", "fast", "1.5"}) {
        INFO(bad);
        process_result const r = tool({"set", dir, "compress", bad});
        REQUIRE_EXIT(r, 2);
        CHECK(r.err == std::string("compile-cache: compress \"") + bad +
                           "\" is not a compression level (0 to store entries uncompressed, 1 to compress them at the "
                           "default level, or a level from 2 to 19)\n");
    }
    CHECK(read_file(file) == before);

    // tinyk, whose cache has no Compression policy: one line naming the file, the right
    // result, its entries plain; its environment wins (0: nothing asked, nothing said).
    REQUIRE_EXIT(tool({"set", dir, "compress", "On"}), 0);
    CHECK(read_file(file).find("\ncompress = on\n") != std::string::npos); // as other choices: lower case
    tinyk_result const cold = s.run({"main", "3"});
    REQUIRE_EXIT(cold, 0);
    CHECK(cold.out == "23\n");
    CHECK(count_lines(cold.err, file.string() + ": compress = \"on\" asks for compressed entries, but this host's cache "
                                                "has no Compression policy (compile_cache/compression/zstd.hpp); "
                                                "entries are stored uncompressed") == "1");
    CHECK(count_lines(cold.err, "compile_cache") == "1");
    tinyk_result const env_wins = s.run({"main", "3"}, {}, {"TINYK_CACHE_COMPRESS=0"});
    REQUIRE_EXIT(env_wins, 0);
    CHECK(env_wins.err.find("compile_cache") == std::string::npos);
    CHECK(json_query(tool({"stats", dir, "--json"}).out, "d['kept_settings']") ==
          "{'compress': 'on', 'max-size': '5G'}");

    // default takes it out, as it does the others.
    REQUIRE_EXIT(tool({"set", dir, "compress", "default"}), 0);
    CHECK(read_file(file).find("compress") == std::string::npos);
    CHECK(config({dir}, {}) == "[(None, 'default')]");
    REQUIRE_EXIT(tool({"set", dir, "max-size", "default"}), 0);
    CHECK(!fs::exists(file));
    CHECK(tool({"set", "--help"}).out.find("compress 0|1|2..19") != std::string::npos);
}

TEST_CASE("compile-cache set in a directory a group shares: the file is the group's to read and write, and trusted by "
          "hosts that share it only") {
    scenario s;
    s.write_program(program_text);
    std::string const dir = s.cache_dir().string();
    fs::create_directories(s.cache_dir());
    REQUIRE(::chmod(dir.c_str(), 02770) == 0);
    REQUIRE_EXIT(tool({"set", dir, "max-size", "48K"}), 0);
    struct stat st {};
    REQUIRE(::stat((s.cache_dir() / ".cc-settings").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0660);

    tinyk_result const shared = s.run({"main", "3"}, {}, {"TINYK_CACHE_SHARED=1"});
    REQUIRE_EXIT(shared, 0);
    CHECK(shared.err.find(".cc-settings") == std::string::npos);
    CHECK(json_query(tool({"stats", dir, "--json"}).out, "d['size_limit']") == "49152");
    // A private host trusts no group-writable file: one line, and its defaults.
    tinyk_result const private_host = s.run({"main", "3"});
    REQUIRE_EXIT(private_host, 0);
    CHECK(private_host.out == "23\n");
    CHECK(count_lines(private_host.err, ".cc-settings is owned by another user or writable by others") == "1");
    // config reads it as each host would.
    for (bool const group : {true, false}) {
        process_spec spec;
        spec.argv = {COMPILE_CACHE_TOOL, "config", "--prefix", "TINYK_CACHE", dir, "--json"};
        spec.env = tool_environment();
        if (group) spec.env.push_back("TINYK_CACHE_SHARED=1");
        process_result const r = run_process(spec);
        REQUIRE_EXIT(r, 0);
        CHECK(json_query(r.out, "[(s['value'], s['from']) for s in d['settings'] if s['name'] == "
                                "'TINYK_CACHE_MAX_SIZE']") ==
              (group ? "[('48K', 'settings file')]" : "[(None, 'default')]"));
        CHECK(json_query(r.out, "'settings_file_ignored' in d") == (group ? "False" : "True"));
    }
}

TEST_CASE("compile-cache keygen: a new secret key file of mode 0600, never over an existing one, and the public line "
          "on stdout") {
    temp_dir root("compile-cache-test");
    std::string const file = (root.path() / "ci-2026.key").string();
    process_result const r = tool({"keygen", file});
    if (r.exited(2) && r.err.find("without libsodium") != std::string::npos) return; // built without signing
    REQUIRE_EXIT(r, 0);
    // One line, NAME:BASE64 of a 32-byte public key (44 characters); the name from the file.
    CHECK(r.out.size() == std::string("ci-2026:").size() + 44 + 1);
    CHECK(r.out.rfind("ci-2026:", 0) == 0);
    CHECK(r.out.back() == '\n');
    std::string const secret = read_file(file);
    CHECK(secret.rfind("ci-2026:", 0) == 0);
    CHECK(secret.size() == std::string("ci-2026:").size() + 88 + 1); // 64 bytes in base64, and a newline
    CHECK(compile_cache_test::mode_of(file) == 0600);

    // Refused, as usage errors (exit 1 is verify's bad entries): an existing file, a name no line can hold.
    process_result const again = tool({"keygen", file, "--name", "other"});
    REQUIRE_EXIT(again, 2);
    CHECK(again.out.empty());
    CHECK(again.err.find("never overwritten") != std::string::npos);
    CHECK(read_file(file) == secret);

    process_result const named = tool({"keygen", (root.path() / "k2").string(), "--name", "laptop-key", "--json"});
    REQUIRE_EXIT(named, 0);
    CHECK(named.out.find("\"public_key\": \"laptop-key:") != std::string::npos);
    CHECK(named.out.find("\"key_id\": \"") != std::string::npos);

    // A name that starts with '#' would make its trusted-keys line a comment: refused, no file made.
    process_result const comment = tool({"keygen", (root.path() / "k3").string(), "--name", "#2027-rotation"});
    REQUIRE_EXIT(comment, 2);
    CHECK(comment.err.find("the first not '#' (a comment in a trusted-keys file)") != std::string::npos);
    CHECK_FALSE(fs::exists(root.path() / "k3"));
    // A file that cannot be made is the file system's refusal: exit 3.
    process_result const no_folder = tool({"keygen", (root.path() / "no-such-folder" / "k4").string()});
    REQUIRE_EXIT(no_folder, 3);
    CHECK(no_folder.err.find("No such file or directory") != std::string::npos);
}

// (Here rather than at the top: what the signed-entry cases below need.)
#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>

namespace {

/// The key make_entries gives entry `i`, in hex.
std::string made_entry_key(int i) {
    std::string const id = "entry " + std::to_string(i);
    return compile_cache::key(compile_cache::sha256_digest(id.data(), id.size())).hex();
}

/// make_entries DIR COUNT, signed by the secret key file `key_file`.
void make_signed_entries(fs::path const& dir, int count, fs::path const& key_file) {
    process_spec spec;
    spec.argv = {MAKE_ENTRIES, dir.string(), std::to_string(count)};
    spec.env = tool_environment();
    spec.env.push_back("MAKE_ENTRIES_SIGNING_KEY_FILE=" + key_file.string());
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 0);
}

/// Two signing keys made with keygen under `root` (ci.key, old.key) and trusted.pub, a
/// trusted-keys file (mode 0644) with `header` and CI's public key only; `made` is false
/// when the tool was built without signing.
struct ci_and_old_keys {
    bool made = false;
    std::string ci_id, old_id;
    fs::path trusted;
};
ci_and_old_keys make_ci_and_old_keys(fs::path const& root, std::string const& header) {
    ci_and_old_keys keys;
    process_result const ci_key = tool({"keygen", (root / "ci.key").string(), "--json"});
    if (ci_key.exited(2) && ci_key.err.find("without libsodium") != std::string::npos) return keys;
    REQUIRE_EXIT(ci_key, 0);
    process_result const old_key = tool({"keygen", (root / "old.key").string(), "--json"});
    REQUIRE_EXIT(old_key, 0);
    keys.ci_id = json_query(ci_key.out, "d['key_id']");
    keys.old_id = json_query(old_key.out, "d['key_id']");
    keys.trusted = root / "trusted.pub";
    write_file(keys.trusted, header + json_query(ci_key.out, "d['public_key']") + "\n");
    ::chmod(keys.trusted.c_str(), 0644);
    keys.made = true;
    return keys;
}

} // namespace

TEST_CASE("compile-cache verify --trusted-keys-file checks signed entries, reports and keeps those of an untrusted "
          "signer, and show prints the signer's key id") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    ci_and_old_keys const keys = make_ci_and_old_keys(root.path(), "# CI's key only: old was rotated out\n");
    if (!keys.made) return; // built without signing
    std::string const &ci_id = keys.ci_id, &old_id = keys.old_id;
    fs::path const& trusted = keys.trusted;

    // Entries 0-4 signed by the old key, then 0-2 signed again by CI's: 3 of CI, 2 of old.
    make_signed_entries(dir, 5, root.path() / "old.key");
    make_signed_entries(dir, 3, root.path() / "ci.key");

    // Without keys, signed entries are not checked, and say what to give.
    process_result const blind = tool({"verify", dir.string()});
    REQUIRE_EXIT(blind, 4);
    CHECK(blind.out.find("checked 5 entries: 0 sound, 0 bad, 5 not checked (signed entries: give "
                         "--trusted-keys-file)\n") != std::string::npos);

    process_result const checked = tool({"verify", dir.string(), "--trusted-keys-file", trusted.string()});
    REQUIRE_EXIT(checked, 4); // the untrusted signer's entries are unchecked to these keys
    CHECK(checked.out.find("checked 5 entries (Ed25519 signatures): 3 sound, 0 bad, 2 signed by untrusted keys "
                           "(key id " + old_id + "; kept)\n") != std::string::npos);
    CHECK(count_lines(checked.out, "untrusted signer: ") == "2");
    CHECK(checked.out.find("untrusted signer: " + made_entry_key(3).substr(0, 2) + "/" + made_entry_key(3)) !=
          std::string::npos);
    REQUIRE_EXIT(tool({"verify", dir.string(), "--trusted-keys-file", trusted.string(), "--allow-unchecked"}), 0);

    // One of CI's entries damaged: bad, and --remove takes it and nothing else.
    fs::path const damaged = dir / made_entry_key(1).substr(0, 2) / made_entry_key(1);
    std::string bytes = read_file(damaged);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
    write_file(damaged, bytes);
    process_result const removed =
        tool({"verify", dir.string(), "--trusted-keys-file", trusted.string(), "--remove", "--json"});
    REQUIRE_EXIT(removed, 1);
    CHECK(json_query(removed.out, "(d['sound'], [e['key'] for e in d['bad']], d['removed'], d['signatures_checked'])") ==
          "(2, ['" + made_entry_key(1) + "'], 1, True)");
    CHECK(json_query(removed.out, "sorted((e['key'], e['signer_key_id']) for e in d['untrusted_signer'])") ==
          json_query("[]", "sorted([('" + made_entry_key(3) + "', '" + old_id + "'), ('" + made_entry_key(4) + "', '" +
                               old_id + "')])"));
    CHECK_FALSE(fs::exists(damaged));
    for (int i : {3, 4}) CHECK(fs::exists(dir / made_entry_key(i).substr(0, 2) / made_entry_key(i)));

    // show: the signer's key id, a field of its own, named when a trusted key has it.
    process_result const shown = tool({"show", dir.string(), made_entry_key(0).substr(0, 12), "--trusted-keys-file",
                                       trusted.string()});
    REQUIRE_EXIT(shown, 0);
    CHECK(line_starting(shown.out, "signer") == "key id " + ci_id + " (trusted key ci, signature verified)");
    CHECK(line_starting(shown.out, "status") == "sound");
    CHECK(line_starting(shown.out, "envelope") == "version 4, mode ed25519, check value verified");
    process_result const unkeyed = tool({"show", dir.string(), made_entry_key(0).substr(0, 12)});
    REQUIRE_EXIT(unkeyed, 0);
    CHECK(line_starting(unkeyed.out, "signer") == "key id " + ci_id + " (not checked: give --trusted-keys-file)");
    process_result const old_json = tool({"show", dir.string(), made_entry_key(4).substr(0, 12), "--trusted-keys-file",
                                          trusted.string(), "--json"});
    REQUIRE_EXIT(old_json, 0);
    CHECK(json_query(old_json.out, "(d['status'], d['signer_key_id'], d['signer_key_name'])") ==
          "('untrusted-signer', '" + old_id + "', None)");
    process_result const ci_json = tool({"show", dir.string(), made_entry_key(2).substr(0, 12), "--trusted-keys-file",
                                         trusted.string(), "--json"});
    REQUIRE_EXIT(ci_json, 0);
    CHECK(json_query(ci_json.out, "(d['status'], d['signer_key_id'], d['signer_key_name'], d['envelope']['mode'])") ==
          "('sound', '" + ci_id + "', 'ci', 'ed25519')");

    // A trusted-keys file anyone may write is refused, as the library refuses it: one line, exit 2.
    ::chmod(trusted.c_str(), 0666);
    process_result const writable = tool({"verify", dir.string(), "--trusted-keys-file", trusted.string()});
    REQUIRE_EXIT(writable, 2);
    CHECK(writable.out.empty());
    CHECK(lines_of(writable.err).size() == 1);
    CHECK(writable.err.find("--trusted-keys-file " + trusted.string() + ": ") != std::string::npos);
}

TEST_CASE("compile-cache list: a signed entry reads 'signed (key id ...), not checked' without trusted keys, and with "
          "--trusted-keys-file is checked as verify checks it") {
    temp_dir root("compile-cache-test");
    fs::path const dir = root.path() / "cache";
    ci_and_old_keys const keys = make_ci_and_old_keys(root.path(), "");
    if (!keys.made) return; // built without signing
    std::string const &ci_id = keys.ci_id, &old_id = keys.old_id;
    fs::path const& trusted = keys.trusted;
    // Entries 0-3 signed by the old key, then 0-1 signed again by CI's: 2 of CI, 2 of old.
    make_signed_entries(dir, 4, root.path() / "old.key");
    make_signed_entries(dir, 2, root.path() / "ci.key");

    // Without keys: every signed entry says so, with its signer's key id, on its line.
    process_result const blind = tool({"list", dir.string()});
    REQUIRE_EXIT(blind, 0);
    INFO(blind.out);
    CHECK(count_lines(blind.out, "(signed, not checked)") == "4");
    CHECK(count_lines(blind.out, "signed (key id " + ci_id + "), not checked: give --trusted-keys-file") == "2");
    CHECK(count_lines(blind.out, "signed (key id " + old_id + "), not checked: give --trusted-keys-file") == "2");
    CHECK(count_lines(blind.out, "kernel_") == "0"); // nothing unchecked is shown as a kernel's name

    // With the keys: CI's entries are sound (their names and origins), the old key's are
    // an untrusted signer's, and a damaged one of CI's is bad.
    fs::path const damaged = dir / made_entry_key(1).substr(0, 2) / made_entry_key(1);
    std::string bytes = read_file(damaged);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
    write_file(damaged, bytes);
    process_result const checked = tool({"list", dir.string(), "--trusted-keys-file", trusted.string()});
    REQUIRE_EXIT(checked, 0);
    INFO(checked.out);
    CHECK(count_lines(checked.out, "not checked") == "0");
    CHECK(count_lines(checked.out, "kernel_0") == "1");
    CHECK(count_lines(checked.out, "generated.tk:1") == "1");
    CHECK(count_lines(checked.out, "(untrusted signer)") == "2");
    CHECK(count_lines(checked.out, "key id " + old_id + ", which is none of the trusted keys") == "2");
    CHECK(count_lines(checked.out, "(bad entry)") == "1");
    CHECK(count_lines(checked.out, "its Ed25519 signature does not verify") == "1");

    process_result const json =
        tool({"list", dir.string(), "--trusted-keys-file", trusted.string(), "--json"});
    REQUIRE_EXIT(json, 0);
    CHECK(json_query(json.out, "sorted((e['key'], e['status'], e['signer_id']) for e in d['entries'])") ==
          json_query("[]", "sorted([('" + made_entry_key(0) + "', 'sound', '" + ci_id + "'), ('" + made_entry_key(1) +
                               "', 'bad', '" + ci_id + "'), ('" + made_entry_key(2) + "', 'untrusted-signer', '" +
                               old_id + "'), ('" + made_entry_key(3) + "', 'untrusted-signer', '" + old_id + "')])"));
    process_result const blind_json = tool({"list", dir.string(), "--json"});
    REQUIRE_EXIT(blind_json, 0);
    CHECK(json_query(blind_json.out, "sorted(set(e['status'] for e in d['entries']))") == "['unchecked']");

    // An entry of a later envelope version (6, its CRC-32C made again): not checked, and
    // the line says which versions this tool reads.
    fs::path const later = root.path() / "later";
    process_spec spec;
    spec.argv = {MAKE_ENTRIES, later.string(), "1"};
    spec.env = tool_environment();
    REQUIRE_EXIT(run_process(spec), 0);
    fs::path const entry = later / made_entry_key(0).substr(0, 2) / made_entry_key(0);
    std::string v6 = read_file(entry);
    REQUIRE(v6[8] == 3);
    v6 = v6.substr(0, v6.size() - 4);
    v6[8] = 6;
    compile_cache::detail::append_envelope_check(v6);
    write_file(entry, v6);
    process_result const listed_later = tool({"list", later.string()});
    REQUIRE_EXIT(listed_later, 0);
    CHECK(count_lines(listed_later.out, "envelope version 6, which this tool (versions 3, 4 and 5) does not read") ==
          "1");
}

TEST_CASE("compile-cache verify and show: a reader's local copy of a signed entry names its signer, untrusted once "
          "the trusted keys no longer list it") {
    temp_dir root("compile-cache-test");
    fs::path const remote = root.path() / "remote", laptop = root.path() / "laptop";
    ci_and_old_keys const keys = make_ci_and_old_keys(root.path(), "");
    if (!keys.made) return; // built without signing
    // Entries 0-4 signed by the old key, then 0-2 signed again by CI's: 3 of CI, 2 of old.
    make_signed_entries(remote, 5, root.path() / "old.key");
    make_signed_entries(remote, 3, root.path() / "ci.key");
    // The laptop's copies, as a reader's tier keeps them (reseal_envelope: CRC-32C here):
    // everything before the signature's key id, that key id, flags 0x0200, version 5.
    for (int i = 0; i < 5; ++i) {
        std::string const name = made_entry_key(i);
        std::string const signed_entry = read_file(remote / name.substr(0, 2) / name);
        std::size_t const check = compile_cache::detail::envelope_signed_check_size;
        std::string copy = signed_entry.substr(0, signed_entry.size() - check) +
                           signed_entry.substr(signed_entry.size() - check, 8);
        copy[8] = 5;
        copy[10] = 0;
        copy[11] = 2;
        compile_cache::detail::append_envelope_check(copy);
        fs::create_directories(laptop / name.substr(0, 2));
        write_file(laptop / name.substr(0, 2) / name, copy);
    }
    process_result const checked =
        tool({"verify", laptop.string(), "--trusted-keys-file", keys.trusted.string(), "--json"});
    REQUIRE_EXIT(checked, 4);
    CHECK(json_query(checked.out, "sorted((e['key'], e['signer_key_id']) for e in d['untrusted_signer'])") ==
          json_query("[]", "sorted([('" + made_entry_key(3) + "', '" + keys.old_id + "'), ('" + made_entry_key(4) +
                               "', '" + keys.old_id + "')])"));
    process_result const old_copy = tool({"show", laptop.string(), made_entry_key(4).substr(0, 12),
                                          "--trusted-keys-file", keys.trusted.string()});
    REQUIRE_EXIT(old_copy, 0);
    CHECK(line_starting(old_copy.out, "status").rfind("untrusted-signer: a local copy of an entry signed by key id " +
                                                          keys.old_id,
                                                      0) == 0);
    CHECK(line_starting(old_copy.out, "signer") ==
          "key id " + keys.old_id + ", of the signed entry this is a local copy of (none of the trusted keys)");
    CHECK(line_starting(old_copy.out, "envelope") == "version 5, mode crc32c, check value verified");
    // A trusted signer's copy, under a CRC-32C anyone who can write here could make: not
    // taken for sound with the trusted keys alone (as any entry no trusted key signed).
    process_result const ci_copy = tool({"show", laptop.string(), made_entry_key(0).substr(0, 12),
                                         "--trusted-keys-file", keys.trusted.string(), "--json"});
    REQUIRE_EXIT(ci_copy, 0);
    CHECK(json_query(ci_copy.out, "(d['status'], d['signer_key_id'], d['envelope']['signer_copy'], "
                                  "d['envelope']['signer_bytes'], d['envelope']['version'])") ==
          "('unchecked', '" + keys.ci_id + "', True, 8, 5)");
    CHECK(json_query(ci_copy.out, "d['problem']").rfind("a local copy of an entry signed by key id " + keys.ci_id +
                                                            " (a trusted key), under a CRC-32C",
                                                        0) == 0);
    // Without the trusted keys nothing says whether a host still uses a copy: unchecked,
    // never sound (a host without trusted keys misses every copy).
    process_result const blind = tool({"verify", laptop.string(), "--json"});
    REQUIRE_EXIT(blind, 4);
    CHECK(json_query(blind.out, "(d['sound'], len(d['unchecked']))") == "(0, 5)");
    // ...and copy copies them all the same: the destination's hosts ask their own trusted keys.
    process_result const moved = tool({"copy", laptop.string(), (root.path() / "new-laptop").string(), "--json"});
    REQUIRE_EXIT(moved, 0);
    CHECK(json_query(moved.out, "(d['copied'], d['skipped_unchecked'])") == "(5, 0)");
    // ...but never from a directory others can write (group-writable here): anyone there could
    // have sealed a copy naming any signer, and the destination's hosts would take it as theirs.
    fs::permissions(laptop, fs::perms::group_write, fs::perm_options::add);
    process_result const from_shared =
        tool({"copy", laptop.string(), (root.path() / "from-shared").string(), "--json"});
    fs::permissions(laptop, fs::perms::group_write, fs::perm_options::remove);
    REQUIRE_EXIT(from_shared, 4); // none could be taken
    CHECK(json_query(from_shared.out, "(d['copied'], d['skipped_unchecked'])") == "(0, 5)");
    process_result const blind_show = tool({"show", laptop.string(), made_entry_key(0).substr(0, 12)});
    REQUIRE_EXIT(blind_show, 0);
    CHECK(line_starting(blind_show.out, "status").rfind("unchecked: a local copy of an entry signed by key id " +
                                                            keys.ci_id + ": give --trusted-keys-file",
                                                        0) == 0);
}

namespace {

/// A reader's cache `dir`, as its tier keeps what it fetched from a remote CI signs:
/// make_entries DIR COUNT [NAME] signed by `key_file`, each kernel with its identity
/// record (origin file `origin`), both written as the signer's local copies (flag 0x0200).
void make_signer_copies(fs::path const& dir, int count, fs::path const& key_file, std::string const& name,
                        std::string const& origin) {
    process_spec spec;
    spec.argv = {MAKE_ENTRIES, dir.string(), std::to_string(count)};
    if (!name.empty()) spec.argv.push_back(name);
    spec.env = tool_environment();
    spec.env.push_back("MAKE_ENTRIES_SIGNING_KEY_FILE=" + key_file.string());
    spec.env.push_back("MAKE_ENTRIES_WITH_RECORDS=1");
    spec.env.push_back("MAKE_ENTRIES_SIGNER_COPIES=1");
    spec.env.push_back("MAKE_ENTRIES_ORIGIN=" + origin);
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 0);
}

} // namespace

TEST_CASE("compile-cache explain: a signer's copy of a record is refused with --trusted-keys-file when its signer "
          "is none of the trusted keys, and shown as not checked without the file") {
    temp_dir root("compile-cache-test");
    fs::path const laptop = root.path() / "laptop";
    ci_and_old_keys const keys = make_ci_and_old_keys(root.path(), "# CI's key only: old was rotated out\n");
    if (!keys.made) return; // built without signing
    std::string const trusted = keys.trusted.string();
    // kernel_0 and kernel_1 of generated.tk copied from the old key's records, and a
    // kernel_1 of other.tk from CI's: one kernel_1 a host with CI's key alone still uses.
    make_signer_copies(laptop, 2, root.path() / "old.key", "", "generated.tk");
    make_signer_copies(laptop, 1, root.path() / "ci.key", "kernel_1", "other.tk");
    // The records are signer's copies, as verify sees them: two of an untrusted signer.
    process_result const verified = tool({"verify", laptop.string(), "--trusted-keys-file", trusted, "--json"});
    REQUIRE_EXIT(verified, 4);
    CHECK(json_query(verified.out, "sorted(set(e['signer_key_id'] for e in d['untrusted_signer_identity_records']))"
                                   " + [len(d['untrusted_signer_identity_records'])]") ==
          "['" + keys.old_id + "', 2]");

    // With the keys: CI's copy is shown, naming its signer, and the old key's apart.
    process_result const checked = tool({"explain", laptop.string(), "kernel_1", "--trusted-keys-file", trusted});
    REQUIRE_EXIT(checked, 0);
    INFO(checked.out);
    CHECK(count_lines(checked.out, "kernel_1 (") == "1");
    CHECK(checked.out.rfind("kernel_1 (other.tk): 1 entry recorded, newest first\n", 0) == 0);
    CHECK(line_starting(checked.out, "  signer:") ==
          "key id " + keys.ci_id + ", of the signed record this is a local copy of (trusted key ci)");
    CHECK(count_lines(checked.out, "generated.tk") == "0");
    CHECK(lines_of(checked.out).back() == "1 record refused: signed by key id " + keys.old_id +
                                              ", not a trusted key (a host that trusts these keys misses it)");
    process_result const checked_json =
        tool({"explain", laptop.string(), "kernel_1", "--trusted-keys-file", trusted, "--json"});
    REQUIRE_EXIT(checked_json, 0);
    CHECK(json_query(checked_json.out, "[(k['origin_file'], k['signer_copy'], k['signer_key_id'], "
                                       "k['signer_key_name'], k['signer_checked'], len(k['entries'])) "
                                       "for k in d['kernels']]") ==
          "[('other.tk', True, '" + keys.ci_id + "', 'ci', True, 1)]");
    CHECK(json_query(checked_json.out, "[(r['origin_file'], r['signer_key_id'], len(r['record_key'])) "
                                       "for r in d['untrusted_signer_records']]") ==
          "[('generated.tk', '" + keys.old_id + "', 66)]");
    CHECK(json_query(checked_json.out, "d['unreadable_records']") == "0");

    // A kernel whose only record is refused: nothing shown, exit 2, and why.
    process_result const refused = tool({"explain", laptop.string(), "kernel_0", "--trusted-keys-file", trusted});
    REQUIRE_EXIT(refused, 2);
    CHECK(refused.out.empty());
    CHECK(refused.err.find("no identity record a host that trusts these keys reads names a kernel \"kernel_0\"") !=
          std::string::npos);
    CHECK(refused.err.find(": 1 record refused: signed by key id " + keys.old_id + ", not a trusted key") !=
          std::string::npos);
    process_result const refused_json =
        tool({"explain", laptop.string(), "kernel_0", "--trusted-keys-file", trusted, "--json"});
    REQUIRE_EXIT(refused_json, 2);
    CHECK(json_query(refused_json.out, "(len(d['kernels']), len(d['untrusted_signer_records']))") == "(0, 1)");

    // Without the keys nothing says which signer a host trusts: each copy is shown, its
    // signer said not checked (as verify and show call such a copy unchecked).
    process_result const blind = tool({"explain", laptop.string(), "kernel_1"});
    REQUIRE_EXIT(blind, 0);
    INFO(blind.out);
    CHECK(count_lines(blind.out, "kernel_1 (") == "2");
    CHECK(count_lines(blind.out, "  signer: key id " + keys.old_id +
                                     ", of the signed record this is a local copy of (not checked: give "
                                     "--trusted-keys-file") == "1");
    CHECK(count_lines(blind.out, "  signer: key id " + keys.ci_id + ", of the signed record") == "1");
    CHECK(count_lines(blind.out, "refused") == "0");
    process_result const blind_json = tool({"explain", laptop.string(), "kernel_1", "--json"});
    REQUIRE_EXIT(blind_json, 0);
    CHECK(json_query(blind_json.out, "sorted((k['origin_file'], k['signer_key_id'], k['signer_checked']) "
                                     "for k in d['kernels'])") ==
          "[('generated.tk', '" + keys.old_id + "', False), ('other.tk', '" + keys.ci_id + "', False)]");
    CHECK(json_query(blind_json.out, "d['untrusted_signer_records']") == "[]");
}

TEST_CASE("compile-cache copy --trusted-keys-file copies signed entries byte for byte, and without the keys or from an "
          "untrusted signer skips and counts them") {
    temp_dir root("compile-cache-test");
    fs::path const src = root.path() / "src";
    ci_and_old_keys const keys = make_ci_and_old_keys(root.path(), "");
    if (!keys.made) return; // built without signing
    fs::path const& trusted = keys.trusted;
    // Entries 0-4 signed by a key that is not trusted, then 0-2 signed again by CI's.
    make_signed_entries(src, 5, root.path() / "old.key");
    make_signed_entries(src, 3, root.path() / "ci.key");

    fs::path const blind_dst = root.path() / "blind";
    process_result const blind = tool({"copy", src.string(), blind_dst.string(), "--json"});
    REQUIRE_EXIT(blind, 4); // none could be checked
    CHECK(json_query(blind.out, "d['copied']") == "0");

    fs::path const dst = root.path() / "dst";
    process_result const copied = tool({"copy", src.string(), dst.string(), "--trusted-keys-file", trusted.string(),
                                        "--json"});
    REQUIRE_EXIT(copied, 4); // the untrusted signer's two are left out, and counted
    CHECK(json_query(copied.out, "d['copied']") == "3");
    for (int i = 0; i < 5; ++i) {
        std::string const name = made_entry_key(i).substr(0, 2) + "/" + made_entry_key(i);
        CHECK(fs::exists(dst / name) == (i < 3));
        if (i < 3) CHECK(read_file(dst / name) == read_file(src / name));
    }
    process_result const verified = tool({"verify", dst.string(), "--trusted-keys-file", trusted.string()});
    REQUIRE_EXIT(verified, 0);

    // An unsigned (CRC-32C) entry, which anyone who can write the source could have made:
    // with trusted keys and no secret it is not taken for sound, so not copied.
    fs::path const plain = root.path() / "plain";
    process_spec spec;
    spec.argv = {MAKE_ENTRIES, plain.string(), "1"};
    spec.env = tool_environment();
    REQUIRE_EXIT(run_process(spec), 0);
    fs::path const plain_dst = root.path() / "plain-dst";
    process_result const plain_copied = tool({"copy", plain.string(), plain_dst.string(), "--trusted-keys-file",
                                              trusted.string(), "--json"});
    REQUIRE_EXIT(plain_copied, 4);
    CHECK(json_query(plain_copied.out, "d['copied']") == "0");
    process_result const plain_copied_text = tool({"copy", plain.string(), plain_dst.string(), "--trusted-keys-file",
                                                   trusted.string()});
    CHECK(plain_copied_text.out.find("unsigned entries: with --trusted-keys-file only signed ones are sound") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(plain_dst / made_entry_key(0).substr(0, 2) / made_entry_key(0)));
    process_result const plain_verified = tool({"verify", plain.string(), "--trusted-keys-file", trusted.string()});
    REQUIRE_EXIT(plain_verified, 4);
    CHECK(plain_verified.out.find("not signed: with --trusted-keys-file only an entry a trusted key signed") !=
          std::string::npos);
}

TEST_CASE("compile-cache copy, verify and list with trusted keys and a secret: an unsigned HMAC entry is not sound, "
          "so not copied") {
    // Every reader holds the fleet's secret: an HMAC entry is anyone's of them, not a
    // trusted key's. A host's tier refuses it from a signed remote; copied into a
    // directory it would load as a local entry.
    scenario s;
    s.write_program(program_text);
    fs::path const secret = s.root() / "secret";
    compile_cache_test::write_private_file(secret, "the fleet's secret\n");
    REQUIRE_EXIT(s.run({"main", "3"}, {}, {"TINYK_CACHE_SECRET_FILE=" + secret.string()}), 0);
    ci_and_old_keys const keys = make_ci_and_old_keys(s.root(), "");
    if (!keys.made) return; // built without signing
    std::string const dir = s.cache_dir().string();
    std::vector<std::string> const both = {"--secret-file", secret.string(), "--trusted-keys-file",
                                           keys.trusted.string(), "--json"};
    auto with_both = [&both](std::vector<std::string> argv) {
        argv.insert(argv.end(), both.begin(), both.end());
        return argv;
    };

    fs::path const dst = s.root() / "laundered";
    process_result const copied = tool(with_both({"copy", dir, dst.string()}));
    INFO(copied.out << copied.err);
    REQUIRE_EXIT(copied, 4); // nothing could be taken for sound
    CHECK(json_query(copied.out, "d['copied']") == "0");
    for (auto const& e : s.entries()) CHECK_FALSE(fs::exists(dst / e.first));

    process_result const verified = tool(with_both({"verify", dir}));
    REQUIRE_EXIT(verified, 4);
    CHECK(json_query(verified.out, "len(d['unchecked'])") == "3");
    CHECK(json_query(verified.out, "d['sound']") == "0");
    CHECK(json_query(verified.out, "all(u['reason'].startswith('not signed: with --trusted-keys-file only an entry a "
                                   "trusted key signed is taken for sound, whatever the secret') for u in "
                                   "d['unchecked'])") == "True");

    process_result const listed = tool(with_both({"list", dir}));
    REQUIRE_EXIT(listed, 0);
    CHECK(json_query(listed.out, "sorted(e['status'] for e in d['entries'])") ==
          "['unchecked', 'unchecked', 'unchecked']");
    CHECK(json_query(listed.out, "[e for e in d['entries'] if 'name' in e]") == "[]");

    // The secret alone still checks them, as before.
    process_result const hmac_only = tool({"verify", dir, "--secret-file", secret.string()});
    REQUIRE_EXIT(hmac_only, 0);
}

TEST_CASE("compile-cache verify and explain read the identity records a shared directory's hosts packed "
          "(group-writable)") {
    scenario s;
    s.write_program(program_text);
    tinyk_result const cold = s.run({"main", "3"}, {}, {"TINYK_CACHE_SHARED=1"});
    REQUIRE_EXIT(cold, 0);
    std::vector<std::string> const packs = pack_files(s.cache_dir());
    REQUIRE(packs.size() == 1);
    struct stat st {};
    REQUIRE(::stat((s.cache_dir() / packs[0]).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0660); // as a shared directory's entries are
    process_result const verified = tool({"verify", s.cache_dir().string()});
    REQUIRE_EXIT(verified, 0);
    CHECK(verified.out.find("3 identity records: 3 sound, 0 bad") != std::string::npos);
    process_result const explained = tool({"explain", s.cache_dir().string(), "main"});
    REQUIRE_EXIT(explained, 0);
    CHECK(explained.out.find("1 entry recorded") != std::string::npos);
}
