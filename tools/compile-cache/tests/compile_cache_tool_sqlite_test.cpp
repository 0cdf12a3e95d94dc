// The compile-cache tool on a SQLite file that a real cache (fill_cache) made: found by
// `sqlite:FILE` and by the file's content, and what it lists, shows and verifies.
#include "tool_test_support.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

using namespace compile_cache_tool_test;

namespace {

/// A scratch folder for one SQLite cache file, which fill() makes.
struct sqlite_file {
    temp_dir dir{"compile-cache-sqlite"};
    std::string const file = (dir.path() / "cache.db").string();

    /// Stores `n` kernels into the file through a real cache (fill_cache); their keys.
    std::vector<std::string> fill(int n) const {
        std::vector<std::string> keys = lines_of(fill_cache({"sqlite:" + file, std::to_string(n)}));
        REQUIRE(keys.size() == static_cast<std::size_t>(n));
        return keys;
    }
};

} // namespace

TEST_CASE_METHOD(sqlite_file, "compile-cache on a SQLite file a cache made tells its entries, named sqlite:FILE or by its path alone",
          "[compile-cache][sqlite]") {
    std::vector<std::string> const keys = fill(3);
    for (std::string const& cache : {"sqlite:" + file, file}) {
        INFO(cache);
        process_result const stats = tool({"stats", cache, "--json"});
        REQUIRE_EXIT(stats, 0);
        CHECK(json_query(stats.out, "(d['storage'], d['entries'], d['bytes'] > 0, d['newest_use'] is not None)") ==
              "('" + file + "', 3, True, True)");
        process_result const listed = tool({"list", cache, "--json"});
        REQUIRE_EXIT(listed, 0);
        CHECK(json_query(listed.out, "sorted((e['name'], e['status'], e['origin_file'], e['origin_line']) for e in "
                                     "d['entries'])") ==
              "[('kernel_0', 'sound', 'fill.tk', 1), ('kernel_1', 'sound', 'fill.tk', 2), "
              "('kernel_2', 'sound', 'fill.tk', 3)]");
        CHECK(json_query(listed.out, "sorted(e['key'] for e in d['entries']) == sorted(" + [&] {
                  std::string list = "[";
                  for (auto const& k : keys) list += "'" + k + "',";
                  return list + "]";
              }() + ")") == "True");
        process_result const human = tool({"list", cache});
        REQUIRE_EXIT(human, 0);
        CHECK(human.out.find("3 entries") != std::string::npos);
        process_result const shown = tool({"show", cache, keys[1].substr(0, 12)});
        REQUIRE_EXIT(shown, 0);
        CHECK(line_starting(shown.out, "name") == "kernel_1");
        CHECK(line_starting(shown.out, "origin") == "fill.tk:2");
        CHECK(line_starting(shown.out, "status") == "sound");
    }
}

TEST_CASE_METHOD(sqlite_file, "verify on a SQLite file finds a damaged row (exit 1) and --remove deletes that row only",
          "[compile-cache][sqlite]") {
    std::vector<std::string> const keys = fill(3);
    process_result const clean = tool({"verify", file});
    REQUIRE_EXIT(clean, 0);
    // 3 entries, and their 3 identity records apart (records are no entries).
    CHECK(clean.out.find("checked 3 entries (CRC-32C): 3 sound, 0 bad; 3 identity records: 3 sound, 0 bad") !=
          std::string::npos);
    fill_cache({"--corrupt", "sqlite:" + file, keys[1]});
    process_result const found = tool({"verify", file, "--json"});
    REQUIRE_EXIT(found, 1);
    CHECK(json_query(found.out, "(d['sound'], [(b['key'], b['problem'].split(':')[0], b['removed']) for b in d['bad']])") ==
          "(2, [('" + keys[1] + "', 'corrupt', False)])");
    process_result const shown = tool({"show", file, keys[1]});
    REQUIRE_EXIT(shown, 1);
    CHECK(line_starting(shown.out, "status").rfind("bad: corrupt", 0) == 0);
    process_result const removed = tool({"verify", file, "--remove"});
    REQUIRE_EXIT(removed, 1);
    CHECK(removed.out.find("bad: " + keys[1] + ": corrupt") != std::string::npos);
    CHECK(removed.out.find("1 removed") != std::string::npos);
    process_result const after = tool({"verify", file});
    REQUIRE_EXIT(after, 0);
    CHECK(after.out.find(": 2 sound, 0 bad; 3 identity records: 3 sound, 0 bad") != std::string::npos);
    process_result const listed = tool({"list", file, "--json"});
    REQUIRE_EXIT(listed, 0);
    CHECK(json_query(listed.out, "sorted(e['name'] for e in d['entries'])") == "['kernel_0', 'kernel_2']");
}

TEST_CASE_METHOD(sqlite_file, "clear empties a SQLite cache, a missing file, a file that is no database, another program's database and prune are refused",
          "[compile-cache][sqlite]") {
    fill(2);
    process_result const cleared = tool({"clear", "sqlite:" + file});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.rfind("removed 2 entries (", 0) == 0); // (and their identity records, no entries)
    process_result const stats = tool({"stats", file, "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['entries'], d['identity_records'])") == "(0, 0)");

    REQUIRE_EXIT(tool({"stats", "sqlite:" + (dir.path() / "missing.db").string()}), 2);
    CHECK(!fs::exists(dir.path() / "missing.db"));
    fs::path const text = dir.path() / "notes.txt";
    write_file(text, "not a database, and must stay as it is\n");
    process_result const refused = tool({"verify", "sqlite:" + text.string()});
    REQUIRE_EXIT(refused, 2);
    CHECK(refused.err.find("not an SQLite database") != std::string::npos);
    CHECK(read_file(text) == "not a database, and must stay as it is\n");
    // Another program's SQLite database (made by Python's sqlite3 module): refused, untouched.
    fs::path const foreign = dir.path() / "other.db";
    process_spec make;
    make.argv = {python3(), "-c",
                 "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute('CREATE TABLE notes(t)')\n"
                 "c.execute(\"INSERT INTO notes VALUES ('mine')\")\nc.commit()",
                 foreign.string()};
    make.env = tool_environment();
    process_result const made = run_process(make);
    REQUIRE_EXIT(made, 0);
    std::string const foreign_bytes = read_file(foreign);
    process_result const other = tool({"clear", foreign.string()});
    REQUIRE_EXIT(other, 2);
    CHECK(other.err.find(foreign.string() + ": ") != std::string::npos);
    CHECK(read_file(foreign) == foreign_bytes);
    process_result const prune = tool({"prune", file, "--max-size", "1M"});
    REQUIRE_EXIT(prune, 2);
    CHECK(prune.err.find("prune works on a cache directory only") != std::string::npos);
}

namespace {
/// Runs SQL on the file with Python's sqlite3 (another program); what it selects, one
/// row a line.
std::string sql(std::string const& file, std::string const& statement) {
    process_spec spec;
    spec.argv = {python3(), "-c",
                 "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\n"
                 "rows = db.execute(sys.argv[2]).fetchall()\ndb.commit()\n"
                 "print('\\n'.join(' '.join(str(v) for v in r) for r in rows))",
                 file, statement};
    spec.env = tool_environment();
    process_result const r = run_process(spec);
    INFO(r.describe());
    REQUIRE(r.exited(0));
    return r.out;
}
} // namespace

TEST_CASE_METHOD(sqlite_file, "show and verify on a SQLite file leave the entries' use times, and so the eviction order, alone",
          "[compile-cache][sqlite]") {
    std::vector<std::string> const keys = fill(2);
    // As if last used two hours ago: a read by a cache would now refresh them.
    sql(file, "UPDATE entries SET used = used - 7200");
    std::string const before = sql(file, "SELECT hex(key), used FROM entries ORDER BY key");
    REQUIRE_EXIT(tool({"show", file, keys[0]}), 0);
    REQUIRE_EXIT(tool({"verify", file}), 0);
    REQUIRE_EXIT(tool({"list", file}), 0);
    CHECK(sql(file, "SELECT hex(key), used FROM entries ORDER BY key") == before);
}

TEST_CASE_METHOD(sqlite_file, "compile-cache explain reads the identity records of a SQLite file",
                 "[compile-cache][sqlite]") {
    std::vector<std::string> const keys = fill(2);
    process_result const r = tool({"explain", "sqlite:" + file, "kernel_1"});
    REQUIRE_EXIT(r, 0);
    CHECK(r.out.rfind("kernel_1 (fill.tk): 1 entry recorded, newest first\n", 0) == 0);
    CHECK(r.out.find("key " + keys[1].substr(0, 16) + "  ") != std::string::npos);
    CHECK(r.out.find("present") != std::string::npos);
    process_result const j = tool({"explain", file, "kernel_0", "--json"});
    REQUIRE_EXIT(j, 0);
    CHECK(json_query(j.out, "(d['storage'], d['kernels'][0]['entries'][0]['key'])") ==
          "('" + file + "', '" + keys[0] + "')");
    process_result const none = tool({"explain", "sqlite:" + file, "nosuchkernel"});
    REQUIRE_EXIT(none, 2);
    CHECK(none.err.find("no identity record names a kernel \"nosuchkernel\" in " + file) != std::string::npos);
}

namespace {
/// Overwrites the root page of the index on the entries' keys with garbage (the rows
/// stay intact), as a disk fault would: every lookup by key then finds damage.
void damage_key_index(std::string const& file) {
    sql(file, "PRAGMA wal_checkpoint(TRUNCATE)");
    std::size_t const page = std::stoul(sql(file, "PRAGMA page_size"));
    std::size_t const root =
        std::stoul(sql(file, "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_entries_1'"));
    std::string bytes = read_file(file);
    REQUIRE(bytes.size() >= root * page);
    for (std::size_t i = (root - 1) * page; i < root * page; ++i) bytes[i] = static_cast<char>(0x5a ^ (i & 0xff));
    write_file(file, bytes);
}

std::vector<std::string> files_in(fs::path const& dir) {
    std::vector<std::string> names;
    for (auto const& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}
} // namespace

TEST_CASE_METHOD(sqlite_file, "stats, list, show and verify on a SQLite file with a damaged index never move, repair or "
                              "rewrite it",
                 "[compile-cache][sqlite]") {
    std::vector<std::string> const keys = fill(3);
    damage_key_index(file);
    std::string const before = read_file(file);
    for (std::vector<std::string> const& command :
         {std::vector<std::string>{"list", file}, {"stats", file}, {"show", file, keys[0]}, {"verify", file},
          {"list", file, "--json"}}) {
        process_result const r = tool(command);
        INFO(command[0] << ": " << r.describe());
        CHECK(fs::exists(file));
        CHECK(read_file(file) == before);
        for (std::string const& name : files_in(dir.path())) CHECK(name.find(".broken-") == std::string::npos);
    }
}

TEST_CASE_METHOD(sqlite_file, "a row whose key is longer than a key can be is never truncated: clear and verify --remove "
                              "leave it and do not count it removed",
                 "[compile-cache][sqlite]") {
    fill(2);
    // 65 bytes: its first 64 would be a key, the row's is not one.
    sql(file, "INSERT INTO entries(key, used, value) VALUES(zeroblob(65), 0, x'00')");
    process_result const verified = tool({"verify", file, "--remove", "--json"});
    INFO(verified.describe());
    // 2 entries and their 2 identity records (counted apart); the long row is neither.
    CHECK(json_query(verified.out, "(d['checked'], d['identity_records'], d['removed'], len(d['bad']))") ==
          "(2, 2, 0, 0)");
    process_result const cleared = tool({"clear", file});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.rfind("removed 2 entries (", 0) == 0); // (and their identity records, no entries)
    CHECK(cleared.out.find("left alone 1 row whose key is not a compile_cache key") != std::string::npos);
    CHECK(sql(file, "SELECT length(key) FROM entries") == "65\n");
}

TEST_CASE_METHOD(sqlite_file, "clear and verify --remove on a SQLite file with a damaged index refuse (exit 3) and never "
                              "empty or repair it",
                 "[compile-cache][sqlite]") {
    std::vector<std::string> const keys = fill(3);
    damage_key_index(file);
    std::string const before = read_file(file);
    for (std::vector<std::string> const& command :
         {std::vector<std::string>{"verify", file, "--remove"}, {"clear", file}}) {
        process_result const r = tool(command);
        INFO(command[0] << ": " << r.describe());
        CHECK(r.exited(3));
        CHECK(r.err.find("damaged") != std::string::npos);
        CHECK(fs::exists(file));
        CHECK(read_file(file) == before);
        for (std::string const& name : files_in(dir.path())) CHECK(name.find(".broken-") == std::string::npos);
    }
}

namespace {
/// Makes the index on use times disagree with its table in a way SQLite's quick check
/// does not see (its declared column changed under it): a delete then finds damage.
void damage_use_index_unseen(std::string const& file) {
    process_spec spec;
    spec.argv = {python3(), "-c",
                 "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\n"
                 "db.execute('PRAGMA writable_schema=ON')\n"
                 "db.execute(\"UPDATE sqlite_master SET sql='CREATE INDEX entries_by_use ON entries(id)' "
                 "WHERE name='entries_by_use'\")\ndb.commit()\n",
                 file};
    spec.env = tool_environment();
    process_result const r = run_process(spec);
    INFO(r.describe());
    REQUIRE(r.exited(0));
    REQUIRE(sql(file, "PRAGMA quick_check") == "ok\n");
}
} // namespace

TEST_CASE_METHOD(sqlite_file, "clear on a SQLite file with damage the quick check misses fails on it (exit 3) and never "
                              "empties or repairs the file",
                 "[compile-cache][sqlite]") {
    fill(3);
    damage_use_index_unseen(file);
    std::string const rows = sql(file, "SELECT count(*) FROM entries");
    process_result const r = tool({"clear", file});
    INFO(r.describe());
    CHECK(r.exited(3));
    CHECK(r.err.find("could not remove") != std::string::npos);
    CHECK(fs::exists(file));
    for (std::string const& name : files_in(dir.path())) CHECK(name.find(".broken-") == std::string::npos);
    CHECK(sql(file, "SELECT count(*) FROM entries") == rows);
}

namespace {
char const* const chain_program = "kernel square(x) { return x * x; }\n"
                                  "kernel helper(x) { return square(x) * 2.0; }\n"
                                  "kernel main(x) { return helper(x) + 5.0; }\n";
} // namespace

TEST_CASE_METHOD(sqlite_file, "compile-cache copy: a directory into one SQLite file and back, byte for byte, and tinyk "
                              "loads every kernel from the copy (the CI recipe)",
                 "[compile-cache][sqlite]") {
    scenario s;
    s.write_program(chain_program);
    REQUIRE(s.run({"main", "3"}).compiled() == names{"square", "helper", "main"});
    fs::path const cache_dir = s.cache_dir();
    std::map<std::string, std::string> const original = entry_files(cache_dir);
    REQUIRE(original.size() == 3);            // 3 entries,
    REQUIRE(pack_files(cache_dir).size() == 1); // and 3 identity records in a pack

    process_result const out = tool({"copy", cache_dir.string(), "sqlite:" + file});
    REQUIRE_EXIT(out, 0);
    CHECK(out.out.rfind("copied 3 entries and 3 identity records (", 0) == 0);
    CHECK(out.out.find(") from " + cache_dir.string() + " to " + file + "; 0 already there, 0 skipped as bad, 0 not checked\n") !=
          std::string::npos);
    CHECK(count_lines(out.out, "") == "1"); // one summary line
    process_result const verified = tool({"verify", file});
    REQUIRE_EXIT(verified, 0);
    CHECK(verified.out.find("checked 3 entries (CRC-32C): 3 sound, 0 bad; 3 identity records: 3 sound, 0 bad") !=
          std::string::npos);
    // Again: nothing is written twice.
    process_result const again = tool({"copy", cache_dir.string(), file, "--json"});
    REQUIRE_EXIT(again, 0);
    CHECK(json_query(again.out, "(d['copied'], d['copied_identity_records'], d['already_there'])") == "(0, 0, 6)");

    // The next job: an empty directory, filled from the one file.
    REQUIRE_EXIT(tool({"clear", cache_dir.string()}), 0);
    REQUIRE(entry_files(cache_dir).empty());
    process_result const back = tool({"copy", "sqlite:" + file, cache_dir.string()});
    REQUIRE_EXIT(back, 0);
    CHECK(back.out.rfind("copied 3 entries and 3 identity records (", 0) == 0);
    CHECK(entry_files(cache_dir) == original); // byte for byte
    CHECK(pack_files(cache_dir).size() == 1);  // the records written in one pack (a new name)
    process_result const records_back = tool({"verify", cache_dir.string()});
    REQUIRE_EXIT(records_back, 0);
    CHECK(records_back.out.find("3 identity records: 3 sound, 0 bad") != std::string::npos);
    tinyk_result const warm = s.run({"main", "3"});
    REQUIRE_EXIT(warm, 0);
    CHECK(warm.out == "23\n");
    CHECK(warm.loaded() == names{"square", "helper", "main"});
    CHECK(warm.compiled().empty());
    // And into a directory that is not there yet.
    fs::path const fresh = cache_dir.parent_path() / "fresh" / "cache";
    REQUIRE_EXIT(tool({"copy", file, fresh.string()}), 0);
    CHECK(entry_files(fresh) == original);
}

#if TINYK_TAKES_CACHE_FILE
TEST_CASE_METHOD(sqlite_file, "compile-cache copy into a SQLite file, then a fresh tinyk with TINYK_CACHE_FILE alone loads "
                              "all of chain40 from it, and read-only writes nothing to it",
                 "[compile-cache][sqlite]") {
    scenario s;
    s.write_program(read_file(TINYK_CHAIN40));
    tinyk_result const cold = s.run({"main", "1"});
    REQUIRE_EXIT(cold, 0);
    REQUIRE(cold.compiled().size() == 40);
    REQUIRE_EXIT(tool({"copy", s.cache_dir().string(), "sqlite:" + file}), 0);
    auto entries_in_file = [&] { return json_query(tool({"stats", file, "--json"}).out, "d['entries']"); };
    REQUIRE(entries_in_file() == "40");

    // tinyk run -v --stats on chain40 with the file (and no TINYK_CACHE_DIR), plus `env`.
    auto run_on_file = [&](std::vector<std::string> const& env) {
        tinyk_run r;
        r.args = {"run", "-v", "--stats", s.program().string(), "--call", "main", "1"};
        r.home = s.home().string();
        r.cwd = s.root().string();
        r.extra_env = {"TINYK_CACHE_FILE=" + file};
        if (!s.backend().empty()) r.extra_env.push_back("TINYK_BACKEND=" + s.backend());
        r.extra_env.insert(r.extra_env.end(), env.begin(), env.end());
        return r();
    };
    std::string const copied = read_file(file);
    tinyk_result const warm = run_on_file({"TINYK_CACHE_FILE_MODE=read-only"});
    REQUIRE_EXIT(warm, 0);
    CHECK(warm.out == cold.out);
    CHECK(warm.loaded().size() == 40);
    CHECK(warm.compiled().empty());

    // main changed: compiled again; read-only, its store fails and the file stays as copied.
    std::string text = read_file(TINYK_CHAIN40);
    std::string const main_line = "var s = k39(x) * 0.5 + 6;";
    REQUIRE(text.find(main_line) != std::string::npos);
    text.replace(text.find(main_line), main_line.size(), "var s = k39(x) * 0.5 + 7;");
    s.write_program(text);
    tinyk_result const changed = run_on_file({"TINYK_CACHE_FILE_MODE=read-only"});
    REQUIRE_EXIT(changed, 0);
    CHECK(changed.compiled() == names{"main"});
    CHECK(changed.loaded().size() == 39);
    CHECK(changed.stats().find(" stores=0 store-failures=1 ") != std::string::npos);
    CHECK(read_file(file) == copied);
    CHECK(!fs::exists(file + "-wal"));
    CHECK(entries_in_file() == "40");
    // Read-write (the default): the store goes into the file.
    tinyk_result const stored = run_on_file({});
    REQUIRE_EXIT(stored, 0);
    CHECK(stored.compiled() == names{"main"});
    CHECK(stored.stats().find(" stores=1 store-failures=0 ") != std::string::npos);
    CHECK(entries_in_file() == "41");

    // TINYK_CACHE_DIR as well: one line, and no cache (nothing loaded, nothing written).
    tinyk_result const both = run_on_file({"TINYK_CACHE_DIR=" + s.cache_dir().string()});
    REQUIRE_EXIT(both, 0);
    CHECK(both.out == stored.out);
    CHECK(both.loaded().empty());
    CHECK(count_lines(both.err, "compile_cache: TINYK_CACHE_FILE and TINYK_CACHE_DIR are both set: set one") == "1");
    CHECK(entries_in_file() == "41");

    // tinyk --help names the file's settings.
    tinyk_run help;
    help.args = {"--help"};
    help.home = s.home().string();
    tinyk_result const h = help();
    REQUIRE_EXIT(h, 0);
    CHECK(h.out.find("\n  TINYK_CACHE_FILE ") != std::string::npos);
    CHECK(h.out.find("\n  TINYK_CACHE_FILE_MODE ") != std::string::npos);
}
#endif

TEST_CASE_METHOD(sqlite_file, "compile-cache copy skips a tampered entry and counts it (exit 1), and copies only what "
                              "--name and --since select",
                 "[compile-cache][sqlite]") {
    std::vector<std::string> const keys = fill(3);
    fill_cache({"--corrupt", "sqlite:" + file, keys[1]});
    temp_dir out_root{"compile-cache-copy"};
    fs::path const out = out_root.path() / "cache";
    process_result const r = tool({"copy", file, out.string()});
    REQUIRE_EXIT(r, 1);
    CHECK(r.out.find("skipped: " + keys[1] + ": corrupt") != std::string::npos);
    CHECK(r.out.find("copied 2 entries and 3 identity records (") != std::string::npos);
    CHECK(r.out.find("1 skipped as bad") != std::string::npos);
    auto const copied = entry_files(out);
    CHECK(copied.size() == 2);
    CHECK(pack_files(out).size() == 1); // the 3 records
    CHECK(copied.count(keys[1].substr(0, 2) + "/" + keys[1]) == 0);
    CHECK(copied.count(keys[0].substr(0, 2) + "/" + keys[0]) == 1);

    // --name: kernel_2's entry and record only.
    fs::path const named = out_root.path() / "named";
    process_result const n = tool({"copy", file, named.string(), "--name", "*_2", "--json"});
    REQUIRE_EXIT(n, 1); // (the tampered entry is still bad)
    CHECK(json_query(n.out, "(d['copied'], d['copied_identity_records'], d['filtered_out'], d['skipped_bad'])") ==
          "(1, 1, 3, 1)");
    CHECK(entry_files(named).count(keys[2].substr(0, 2) + "/" + keys[2]) == 1);

    // --since: an entry last used two days ago is left out of --since 1d.
    fs::path const old_entry = out / keys[0].substr(0, 2) / keys[0];
    fs::last_write_time(old_entry, fs::file_time_type::clock::now() - std::chrono::hours(48));
    fs::path const recent = out_root.path() / "recent";
    process_result const since = tool({"copy", out.string(), "sqlite:" + recent.string(), "--since", "1d", "--json"});
    REQUIRE_EXIT(since, 0);
    CHECK(json_query(since.out, "(d['copied'], d['filtered_out'])") == "(1, 1)");
    REQUIRE_EXIT(tool({"copy", file, out.string(), "--since", "soon"}), 2);
}
