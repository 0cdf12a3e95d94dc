// sqlite_storage: one SQLite file as a cache's storage. It passes the conformance kit;
// evicts the least recently used entries over its limit; copies a file that is not a
// database (or is damaged) aside and empties it in place, with one line, under other
// processes' open connections; reads a read-only file; leaves
// another program's database alone; reads its settings from the environment; and
// holds under 8 processes at once and writers killed in the middle of a write.
#include "catch2_compat.hpp"
#include "support/conformance.hpp"
#include "support/process.hpp"
#include "support/posix.hpp"

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <sqlite3.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace cct = compile_cache::testing;
namespace fs = std::filesystem;
using compile_cache_test::read_file;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;
using cct::detail::conformance_key;
using cct::detail::conformance_value;
using cct::detail::is_conformance_value;

using sqlite_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::sqlite_storage>;

struct kernel_artifact {
    std::string code;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & code;
    }
};

using compile_cache_test::failure_lines;

/// Runs SQL on the file with SQLite itself (what another program would see).
std::string sql_text(std::string const& path, char const* sql) {
    sqlite3* db = nullptr;
    std::string result;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
        sqlite3_exec(
            db, sql,
            [](void* out, int n, char** values, char**) {
                for (int i = 0; i < n; ++i) *static_cast<std::string*>(out) += values[i] ? values[i] : "NULL";
                return 0;
            },
            &result, nullptr);
    }
    sqlite3_close(db);
    return result;
}

std::vector<fs::path> copies_aside(fs::path const& dir) {
    std::vector<fs::path> found;
    for (auto const& e : fs::directory_iterator(dir))
        if (e.path().filename().string().find(".broken-") != std::string::npos) found.push_back(e.path());
    return found;
}

/// Overwrites the root page of index `index` in the (checkpointed) file at `path` with
/// garbage: the rows stay intact, a lookup through that index finds damage.
void damage_index(std::string const& path, char const* index) {
    sql_text(path, "PRAGMA wal_checkpoint(TRUNCATE)");
    std::string const page_size = sql_text(path, "PRAGMA page_size");
    std::string const root =
        sql_text(path, (std::string("SELECT rootpage FROM sqlite_master WHERE name = '") + index + "'").c_str());
    REQUIRE(!root.empty());
    std::size_t const size = std::stoul(page_size), at = (std::stoul(root) - 1) * size;
    std::string bytes = read_file(path);
    REQUIRE(bytes.size() >= at + size);
    for (std::size_t i = at; i < at + size; ++i) bytes[i] = static_cast<char>(0x5a ^ (i & 0xff));
    write_file(path, bytes);
}

/// 200 entries of 3,000 bytes under the keys (4, 0..199): a file of 150 pages or so.
void fill_two_hundred(std::string const& file) {
    cc::sqlite_storage s(file);
    for (std::uint32_t i = 0; i < 200; ++i) REQUIRE(!s.write(conformance_key(4, i), std::string(3000, 'x')));
}

/// Overwrites pages 2 to 21 of the file behind its storages' backs, its header kept.
void overwrite_pages(std::string const& file) {
    std::string bytes = read_file(file);
    REQUIRE(bytes.size() > 4096 * 21);
    for (std::size_t i = 4096; i < 4096 * 21; ++i) bytes[i] = static_cast<char>(0xa5);
    write_file(file, bytes);
}

/// Reads fill_two_hundred's entries through `s` until one is an error (the damage
/// found: the file is then repaired); whether one was. Found ones are checked.
bool read_until_error(cc::sqlite_storage& s) {
    std::string out;
    for (std::uint32_t i = 0; i < 200; ++i) {
        cc::read_result const r = s.read(conformance_key(4, i), out, 1 << 20);
        if (r.status == cc::read_status::error) return true;
        if (r.status == cc::read_status::found) CHECK(out == std::string(3000, 'x'));
    }
    return false;
}

/// 40 entries of the conformance kit's values under the keys (20, 0..39).
void fill_forty(std::string const& file) {
    cc::sqlite_storage s(file);
    REQUIRE(s.usable());
    for (std::uint32_t i = 0; i < 40; ++i) REQUIRE(!s.write(conformance_key(20, i), conformance_value(20, i)));
}

/// How many of fill_forty's entries `s` reads back whole.
unsigned forty_found(cc::sqlite_storage& s) {
    unsigned found = 0;
    std::string out;
    for (std::uint32_t i = 0; i < 40; ++i)
        if (s.read(conformance_key(20, i), out, 1 << 20).status == cc::read_status::found &&
            out == conformance_value(20, i))
            ++found;
    return found;
}

using compile_cache_test::env_var;

} // namespace

TEST_CASE("sqlite_storage passes the conformance kit, writers in 4 processes included", "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    cct::storage_conformance_options options;
    options.processes = 4;
    options.writes_per_process = 100;
    auto const failures = cct::check_storage_conformance([file] { return cc::sqlite_storage(file); }, options);
    INFO(failure_lines(failures));
    CHECK(failures.empty());
}

TEST_CASE("sqlite_storage is one WAL-mode file", "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    cc::sqlite_storage s(file);
    REQUIRE(s.usable());
    REQUIRE(!s.write(conformance_key(1, 1), "bytes"));
    CHECK(sql_text(file, "PRAGMA journal_mode") == "wal");
    CHECK(sql_text(file, "SELECT count(*) FROM entries") == "1");
}

TEST_CASE("over its size limit, sqlite_storage evicts the least recently used entries", "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    cc::sqlite_options options;
    options.max_size = 60000;
    cc::sqlite_storage s(file, options);
    std::string const value(10000, 'v');
    for (std::uint32_t i = 0; i < 5; ++i) REQUIRE(!s.write(conformance_key(2, i), value));
    // Make their use times old (as if written 2 hours and more ago), oldest first.
    sql_text(file, "UPDATE entries SET used = strftime('%s','now') - 7200 - 100 + id");
    std::string out;
    // A read of an entry older than an hour refreshes its use time: 0 is now the newest.
    REQUIRE(s.read(conformance_key(2, 0), out, 1 << 20).status == cc::read_status::found);
    REQUIRE(!s.write(conformance_key(2, 5), value));
    REQUIRE(!s.write(conformance_key(2, 6), value)); // 70000 > 60000: down to 54000
    auto found = [&](std::uint32_t i) { return s.read(conformance_key(2, i), out, 1 << 20).status == cc::read_status::found; };
    CHECK(found(0));  // used recently
    CHECK(!found(1)); // the least recently used two
    CHECK(!found(2));
    CHECK(found(3));
    CHECK(found(4));
    CHECK(found(5));
    CHECK(found(6));
    CHECK(std::stoll(sql_text(file, "SELECT total(length(value)) FROM entries")) <= 60000);
}

TEST_CASE("a file that is not a database is copied aside and emptied in place, with one line", "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    SECTION("not a database at all") { write_file(file, std::string(10000, 'x')); }
    SECTION("a database whose pages were overwritten") {
        {
            cc::sqlite_storage s(file);
            for (std::uint32_t i = 0; i < 20; ++i) REQUIRE(!s.write(conformance_key(3, i), conformance_value(1, i)));
        }
        sql_text(file, "PRAGMA wal_checkpoint(TRUNCATE)");
        std::string bytes = read_file(file);
        REQUIRE(bytes.size() > 4096);
        for (std::size_t i = 100; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0xa5 ^ (i & 0xff));
        write_file(file, bytes);
    }
    std::vector<std::string> logged;
    cc::sqlite_options options;
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    cc::sqlite_storage s(file, options);
    CHECK(s.usable());
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("copied aside to " + file + ".broken-") != std::string::npos);
    CHECK(copies_aside(dir.path()).size() == 1);
    std::string out;
    REQUIRE(!s.write(conformance_key(3, 99), "fresh"));
    CHECK(s.read(conformance_key(3, 99), out, 100).status == cc::read_status::found);
    CHECK(out == "fresh");
    CHECK(logged.size() == 1);
    CHECK(sql_text(file, "PRAGMA auto_vacuum") == "2"); // (incremental: freed pages go back to the disk)
}

TEST_CASE("a file damaged while a storage has it open: the failing read is an error, then the file is copied "
          "aside and emptied and the storage goes on",
          "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    std::vector<std::string> logged;
    cc::sqlite_options options;
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    fill_two_hundred(file);
    cc::sqlite_storage s(file, options); // open and sound...
    REQUIRE(s.usable());
    REQUIRE(logged.empty());
    overwrite_pages(file); // ...then its pages are overwritten behind its back
    // The repair closes the connection (finalizing every statement) while a read is
    // in its middle: the read is an error, never a crash or stale bytes.
    REQUIRE(read_until_error(s));
    std::string out;
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("copied aside to " + file + ".broken-") != std::string::npos);
    CHECK(copies_aside(dir.path()).size() == 1);
    REQUIRE(!s.write(conformance_key(4, 999), "fresh"));
    CHECK(s.read(conformance_key(4, 999), out, 100).status == cc::read_status::found);
    CHECK(out == "fresh");
}

TEST_CASE("a store made by another storage after the damaged file was repaired is kept",
          "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fill_two_hundred(file);
    cc::sqlite_options quiet;
    quiet.logger = [](std::string_view) {};
    cc::sqlite_storage finder(file, quiet); // (as another process's, both open and sound)
    cc::sqlite_storage other(file, quiet);
    REQUIRE(finder.usable());
    REQUIRE(other.usable());
    overwrite_pages(file);
    REQUIRE(read_until_error(finder));
    std::string out;
    REQUIRE(copies_aside(dir.path()).size() == 1); // the finder copied it aside and emptied it
    REQUIRE(!other.write(conformance_key(4, 1000), "stored after the move"));
    cc::sqlite_storage next_host(file);
    REQUIRE(next_host.read(conformance_key(4, 1000), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "stored after the move");
}

namespace {
/// How many of this process's descriptors are open on `path`.
int descriptors_on(fs::path const& path) {
    int n = 0;
    for (auto const& fd : fs::directory_iterator("/proc/self/fd")) {
        std::error_code e;
        if (fs::read_symlink(fd.path(), e) == path) ++n;
    }
    return n;
}
} // namespace

TEST_CASE("a damage found while another repair holds the file's repair lock: once that repair is done, the store "
          "made after it is not emptied by a second repair",
          "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fs::path const lock_file = file + ".repair";
    fill_two_hundred(file);
    cc::sqlite_options quiet;
    quiet.logger = [](std::string_view) {};
    quiet.busy_timeout = std::chrono::seconds(20);
    cc::sqlite_storage first(file, quiet); // (as two processes', both open and sound)
    cc::sqlite_storage second(file, quiet);
    REQUIRE(first.usable());
    REQUIRE(second.usable());
    overwrite_pages(file);
    // Another repair is under way: it holds the lock while `second` finds the damage...
    auto elsewhere = std::make_unique<cc::detail::sqlite_impl::repair_lock>();
    REQUIRE(elsewhere->take(file, 0644, std::chrono::milliseconds(0)).empty());
    bool second_found_error = false;
    std::thread finder([&] { second_found_error = read_until_error(second); });
    auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (descriptors_on(lock_file) < 2 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    bool const second_waits = descriptors_on(lock_file) == 2; // (its own and `elsewhere`'s)
    // ...and makes it: the file copied aside and emptied, the repair counted; then a store.
    std::string why;
    auto const outcome = cc::detail::sqlite_impl::repair_file(file, file + ".broken-elsewhere", 0644,
                                                              std::chrono::seconds(20), why);
    CHECK(elsewhere->counted());
    std::error_code const stored = first.write(conformance_key(4, 1000), "stored after the repair");
    elsewhere.reset(); // (the lock released)
    finder.join();
    REQUIRE(second_waits);
    REQUIRE(outcome == cc::detail::sqlite_impl::repair_outcome::done);
    CHECK(why.empty());
    REQUIRE_FALSE(stored);
    CHECK(second_found_error);
    // `second` saw the repair counted since it opened the file: it made none of its own.
    CHECK(copies_aside(dir.path()).size() == 1);
    std::string out;
    CHECK(second.read(conformance_key(4, 1000), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "stored after the repair");
    cc::sqlite_storage next_host(file);
    REQUIRE(next_host.read(conformance_key(4, 1000), out, 1 << 20).status == cc::read_status::found);
    CHECK(read_file(lock_file) == "1\n");
}

TEST_CASE("a read-only sqlite file is opened immutable and read, writes fail as write errors", "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    cc::key_result k;
    {
        sqlite_cache cache{cc::sqlite_storage(file)};
        k = cache.make_key_builder("sqlite test").add("ir", "prebuilt").finish();
        REQUIRE(cache.store(k, kernel_artifact{"prebuilt code"}));
    }
    sql_text(file, "PRAGMA wal_checkpoint(TRUNCATE)");
    std::string const before = read_file(file);
    cc::sqlite_options options;
    options.read_only = true;
    bool const by_permissions = ::geteuid() != 0 && GENERATE(false, true);
    if (by_permissions) {
        options.read_only = false;
        ::chmod(file.c_str(), 0444);
        ::chmod(dir.path().c_str(), 0555);
    }
    {
        sqlite_cache cache{cc::sqlite_storage(file, options)};
        REQUIRE(cache.enabled());
        CHECK(cache.storage().read_only());
        auto const loaded = cache.load<kernel_artifact>(k);
        REQUIRE(loaded);
        CHECK(loaded->code == "prebuilt code");
        auto const other = cache.make_key_builder("sqlite test").add("ir", "new").finish();
        CHECK(!cache.store(other, kernel_artifact{"new"}));
        CHECK(cache.stats().failure_count(cc::store_failure::write_error) == 1);
    }
    ::chmod(dir.path().c_str(), 0755);
    CHECK(read_file(file) == before);
}

TEST_CASE("another program's SQLite database is left alone, and the cache is disabled with one line", "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "theirs.db").string();
    sql_text(file, "");
    {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
        sqlite3_exec(db, "CREATE TABLE accounts(id INTEGER, balance INTEGER); INSERT INTO accounts VALUES(1, 100)",
                     nullptr, nullptr, nullptr);
        sqlite3_close(db);
    }
    std::string const before = read_file(file);
    std::vector<std::string> logged;
    cc::cache_options options;
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    cc::sqlite_storage storage(file);
    CHECK(!storage.usable());
    CHECK(storage.why_unusable() == "it is another program's SQLite database");
    sqlite_cache cache(std::move(storage), options);
    CHECK(!cache.enabled());
    CHECK(logged.size() == 1);
    CHECK(read_file(file) == before);
    CHECK(copies_aside(dir.path()).empty());
}

TEST_CASE("a reader of a damaged file it cannot write (another user, mode 0444) never moves, repairs or replaces it",
          "[sqlite]") {
    temp_dir dir;
    // A folder the reader may write (so that a rename would succeed), a file it may not.
    fs::path const folder = dir.path() / "shared";
    fs::create_directory(folder);
    std::string const file = (folder / "cache.db").string();
    fill_forty(file);
    damage_index(file, "sqlite_autoindex_entries_1"); // the key's index: every lookup by key
    ::chmod(file.c_str(), 0444);
    if (compile_cache_test::running_as_root()) {
        fs::permissions(dir.path(), fs::perms(0711));
        REQUIRE(::chown(folder.c_str(), 65534, 65534) == 0);
    }
    std::string const before = read_file(file);
    std::string const out = compile_cache_test::run_in_child([&] {
        if (compile_cache_test::running_as_root() &&
            (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
            return std::string("cannot become nobody");
        std::vector<std::string> logged;
        cc::sqlite_options options;
        options.logger = [&](std::string_view line) { logged.emplace_back(line); };
        cc::sqlite_storage s(file, options);
        std::string result = "usable=" + std::to_string(s.usable()) + " read_only=" + std::to_string(s.read_only());
        unsigned errors = 0;
        std::string value;
        for (std::uint32_t i = 0; i < 40; ++i)
            if (s.read(conformance_key(20, i), value, 1 << 20).status == cc::read_status::error) ++errors;
        result += " errors=" + std::to_string(errors);
        result += " write_failed=" + std::to_string(static_cast<bool>(s.write(conformance_key(20, 99), "new")));
        for (auto const& line : logged) result += " | " + line;
        return result;
    });
    INFO(out);
    CHECK(out.find("usable=1 read_only=1") == 0);
    CHECK(out.find("write_failed=1") != std::string::npos);
    CHECK(fs::exists(file));
    CHECK(read_file(file) == before);
    CHECK(copies_aside(folder).empty());
    ::chmod(file.c_str(), 0644);
}

TEST_CASE("another program's database with a table named entries is refused before anything is written",
          "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "theirs.db").string();
    {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
        REQUIRE(sqlite3_exec(db,
                             "CREATE TABLE entries(name TEXT, amount INTEGER); "
                             "INSERT INTO entries VALUES('rent', 900)",
                             nullptr, nullptr, nullptr) == SQLITE_OK);
        sqlite3_close(db);
    }
    std::string const before = read_file(file);
    cc::sqlite_storage storage(file);
    CHECK(!storage.usable());
    CHECK(storage.why_unusable() == "it is another program's SQLite database");
    CHECK(read_file(file) == before); // not switched to WAL, no table, no index, no id
    CHECK(!fs::exists(file + "-wal"));
    CHECK(copies_aside(dir.path()).empty());
}

#if defined(COMPILE_CACHE_HELPER_sqlite_worker)
TEST_CASE("a writer stopped in its transaction when a host opens the file: the host still reads every entry, and "
          "a failing open says the real error",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    SECTION("the table is there: opened without the write lock, reads served, writes are errors") {
        fill_forty(file);
        compile_cache_test::child_process holder(
            std::vector<std::string>{COMPILE_CACHE_HELPER_sqlite_worker, "hold-lock", file, "0"});
        REQUIRE(holder.wait_for_line());
        REQUIRE(holder.output() == "locked\n");
        cc::sqlite_options options;
        options.busy_timeout = std::chrono::milliseconds(100);
        cc::sqlite_storage s(file, options);
        INFO(s.why_unusable());
        REQUIRE(s.usable());
        CHECK(forty_found(s) == 40);
        CHECK(s.write(conformance_key(20, 99), "new") == std::errc::resource_unavailable_try_again);
    }
    SECTION("no table yet: the open fails and says the database is locked") {
        {
            sqlite3* db = nullptr;
            REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
            sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
            sqlite3_close(db);
        }
        compile_cache_test::child_process holder(
            std::vector<std::string>{COMPILE_CACHE_HELPER_sqlite_worker, "hold-lock", file, "0"});
        REQUIRE(holder.wait_for_line());
        cc::sqlite_options options;
        options.busy_timeout = std::chrono::milliseconds(100);
        cc::sqlite_storage s(file, options);
        CHECK(!s.usable());
        CHECK(s.why_unusable() == "cannot make its table: database is locked");
    }
}
TEST_CASE("a damaged file whose write lock another process holds is copied aside, then emptied once the lock "
          "is free, without a second copy",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fill_two_hundred(file);
    std::vector<std::string> logged;
    cc::sqlite_options options;
    options.busy_timeout = std::chrono::milliseconds(100);
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    cc::sqlite_storage s(file, options);
    REQUIRE(s.usable());
    auto holder = std::make_unique<compile_cache_test::child_process>(
        std::vector<std::string>{COMPILE_CACHE_HELPER_sqlite_worker, "hold-lock", file, "0"});
    REQUIRE(holder->wait_for_line());
    REQUIRE(holder->output() == "locked\n");
    overwrite_pages(file);
    REQUIRE(read_until_error(s));
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("; copied aside to " + file + ".broken-") != std::string::npos);
    CHECK(logged[0].find(", but it cannot be emptied (database is locked): left as it is") != std::string::npos);
    REQUIRE(copies_aside(dir.path()).size() == 1);
    holder.reset(); // (killed: its lock goes)
    REQUIRE(read_until_error(s));
    REQUIRE(logged.size() == 2);
    CHECK(logged[1].find("copied aside to " + copies_aside(dir.path())[0].string() + " and emptied in place") !=
          std::string::npos);
    CHECK(copies_aside(dir.path()).size() == 1);
    std::string out;
    REQUIRE(!s.write(conformance_key(4, 999), "fresh"));
    CHECK(s.read(conformance_key(4, 999), out, 100).status == cc::read_status::found);
}

TEST_CASE("a damaged file another process has open is emptied in place: the file keeps its inode and mode, and "
          "that process's next store is kept",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fill_two_hundred(file);
    REQUIRE(::chmod(file.c_str(), 0660) == 0); // (a file shared by a group, as an admin set it)
    compile_cache_test::child_process holder(
        std::vector<std::string>{COMPILE_CACHE_HELPER_sqlite_worker, "hold-open", file, "7"});
    REQUIRE(holder.wait_for_line());
    REQUIRE(holder.output() == "open\n");
    struct stat before {};
    REQUIRE(::stat(file.c_str(), &before) == 0);
    std::string const wal = file + "-wal";
    REQUIRE(fs::exists(wal)); // the holder's connection uses it
    overwrite_pages(file);
    std::vector<std::string> logged;
    cc::sqlite_options options;
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    cc::sqlite_storage finder(file, options);
    REQUIRE(read_until_error(finder));
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("copied aside to " + file + ".broken-") != std::string::npos);
    CHECK(logged[0].find("emptied in place") != std::string::npos);
    std::vector<fs::path> const copies = copies_aside(dir.path());
    REQUIRE(copies.size() == 1);
    CHECK(fs::file_size(copies[0]) == static_cast<std::uintmax_t>(before.st_size));
    struct stat after {};
    REQUIRE(::stat(file.c_str(), &after) == 0);
    CHECK(after.st_ino == before.st_ino); // not renamed away and made anew
    CHECK((after.st_mode & 07777) == 0660);
    CHECK(after.st_uid == before.st_uid);
    CHECK(after.st_gid == before.st_gid);
    CHECK(fs::exists(wal)); // the side files other connections use are left in place
    holder.kill(SIGUSR1);
    CHECK(holder.wait() == 0);
    CHECK(holder.output() == "open\nstored\n");
    cc::sqlite_storage next_host(file);
    std::string out;
    REQUIRE(next_host.read(conformance_key(21, 1007), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "after");
    CHECK(next_host.read(conformance_key(4, 0), out, 1 << 20).status == cc::read_status::absent); // emptied
    CHECK(logged.size() == 1);
}

TEST_CASE("a forked child's stores are kept, made before and after its parent's storage closes",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    int to_parent[2], to_child[2];
    REQUIRE(::pipe(to_parent) == 0);
    REQUIRE(::pipe(to_child) == 0);
    pid_t pid = -1;
    {
        cc::sqlite_storage s(file);
        REQUIRE(s.usable());
        REQUIRE(!s.write(conformance_key(30, 0), conformance_value(30, 0)));
        pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) { // a pre-forked worker using the storage it inherited
            ::alarm(20);
            auto store = [&](std::uint32_t i) {
                std::string out;
                return !s.write(conformance_key(30, i), conformance_value(30, i)) &&
                       s.read(conformance_key(30, i), out, 1 << 20).status == cc::read_status::found &&
                       out == conformance_value(30, i);
            };
            bool ok = store(1); // while the parent's storage is open
            char c = 0;
            ok = ::write(to_parent[1], "1", 1) == 1 && ok;
            ok = ::read(to_child[0], &c, 1) == 1 && ok; // the parent's storage closed
            ok = store(2) && ok;
            ok = store(3) && ok;
            ::_exit(ok ? 0 : 1); // (no destructor runs, as in most workers' ends)
        }
        char c = 0;
        REQUIRE(::read(to_parent[0], &c, 1) == 1);
    } // the parent's connection closes: its last, so SQLite checkpoints and may remove the WAL
    REQUIRE(::write(to_child[1], "2", 1) == 1);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) ::close(fd);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    cc::sqlite_storage again(file); // the next host
    std::string out;
    for (std::uint32_t i = 0; i <= 3; ++i) {
        INFO(i);
        CHECK(again.read(conformance_key(30, i), out, 1 << 20).status == cc::read_status::found);
    }
}

TEST_CASE("a file size limit (ulimit -f): a store past it fails, the host is never ended by SIGXFSZ",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    pid_t const pid = ::fork();
    if (pid == 0) { // (a process of its own: the limit and the signal's default action are its)
        ::alarm(20);
        ::signal(SIGXFSZ, SIG_DFL);
        rlimit r{};
        ::getrlimit(RLIMIT_FSIZE, &r);
        r.rlim_cur = 64 * 1024;
        if (::setrlimit(RLIMIT_FSIZE, &r) != 0) ::_exit(2);
        cc::sqlite_storage s(file);
        bool ok = s.usable() && !s.write(conformance_key(33, 0), "small"); // within the limit
        ok = ok && static_cast<bool>(s.write(conformance_key(33, 1), std::string(200 * 1024, 'x'))); // past it
        std::string out;
        ok = ok && s.read(conformance_key(33, 0), out, 1 << 20).status == cc::read_status::found && out == "small";
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO((WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) : "exited"));
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a child forked while the storages' fork list was held uses none of them, made before or in it",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    cc::sqlite_storage open_one(file), closed_one(file);
    REQUIRE(!open_one.write(conformance_key(32, 0), conformance_value(32, 0)));
    REQUIRE(!closed_one.write(conformance_key(32, 1), conformance_value(32, 1)));
    pid_t pid = ::fork(); // (a fork closes both connections)
    if (pid == 0) ::_exit(0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(!open_one.write(conformance_key(32, 2), conformance_value(32, 2))); // open again; closed_one's is not
    // Held, as by a thread making or destroying a storage when the fork comes: the fork's
    // prepare closes no connection, and the child cannot tell which are the parent's.
    auto& list = cc::detail::sqlite_impl::the_fork_registry();
    REQUIRE(list.lock(std::chrono::steady_clock::now() + std::chrono::seconds(1)));
    pid = ::fork();
    if (pid == 0) {
        ::alarm(20);
        bool ok = static_cast<bool>(closed_one.write(conformance_key(32, 3), "child")) &&
                  static_cast<bool>(open_one.write(conformance_key(32, 4), "child"));
        cc::sqlite_storage made_here(file);
        ok = ok && static_cast<bool>(made_here.write(conformance_key(32, 5), "child"));
        ::_exit(ok ? 0 : 1);
    }
    list.unlock();
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    std::string out;
    CHECK(!closed_one.write(conformance_key(32, 6), conformance_value(32, 6))); // the parent's work on
    for (std::uint32_t i : {0u, 1u, 2u, 6u}) {
        INFO(i);
        CHECK(open_one.read(conformance_key(32, i), out, 1 << 20).status == cc::read_status::found);
    }
    CHECK(open_one.read(conformance_key(32, 3), out, 1 << 20).status == cc::read_status::absent);
}

TEST_CASE("a child forked while another thread waited on the file's lock in a store answers within a bound",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fill_forty(file);
    compile_cache_test::child_process holder(
        std::vector<std::string>{COMPILE_CACHE_HELPER_sqlite_worker, "hold-lock", file, "0"});
    REQUIRE(holder.wait_for_line());
    cc::sqlite_options options;
    options.busy_timeout = std::chrono::milliseconds(3000);
    cc::sqlite_storage s(file, options);
    REQUIRE(s.usable());
    // The store takes the storage's mutex at once and holds it while it waits for the
    // lock, 3 s; the fork comes 0.5 s in (the fork's own wait for the mutex, 250 ms,
    // then fails).
    std::thread storing([&] { (void)s.write(conformance_key(20, 99), "new"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    pid_t const pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::alarm(20); // a child waiting for ever is killed: the parent sees the signal
        // The parent's connection, still open, is not this process's to use, nor to open
        // the file beside: the storage fails at once here.
        std::string out;
        cc::read_result const r = s.read(conformance_key(20, 3), out, 1 << 20);
        ::_exit(r.status == cc::read_status::error ? 0 : 1);
    }
    storing.join();
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a child forked while another storage of the file waited on its lock: what it stores is kept or fails",
          "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fill_forty(file);
    int to_parent[2], to_child[2], results[2];
    REQUIRE(::pipe(to_parent) == 0);
    REQUIRE(::pipe(to_child) == 0);
    REQUIRE(::pipe(results) == 0);
    pid_t pid = -1;
    {
        compile_cache_test::child_process holder(
            std::vector<std::string>{COMPILE_CACHE_HELPER_sqlite_worker, "hold-lock", file, "0"});
        REQUIRE(holder.wait_for_line());
        cc::sqlite_options options;
        options.busy_timeout = std::chrono::milliseconds(3000);
        cc::sqlite_storage waiting(file, options), other(file, options);
        REQUIRE(other.usable());
        // A store through `waiting` holds its mutex while it waits for the lock; the fork
        // comes 0.5 s in, and takes `other`'s mutex, not `waiting`'s.
        std::thread storing([&] { (void)waiting.write(conformance_key(20, 99), "new"); });
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::alarm(20);
            // A store reported done is one the next process must find: 'k' kept, 'f' failed.
            auto store = [&](cc::sqlite_storage& through, std::uint32_t i) {
                char const answer = through.write(conformance_key(31, i), conformance_value(31, i)) ? 'f' : 'k';
                return ::write(results[1], &answer, 1) == 1;
            };
            char c = 0;
            bool ok = ::read(to_child[0], &c, 1) == 1; // the holder gone, the store done
            ok = store(other, 1) && ok;
            cc::sqlite_storage made_here(file, options); // (as a worker's own cache would)
            ok = store(made_here, 2) && ok;
            ok = ::write(to_parent[1], "1", 1) == 1 && ok;
            ok = ::read(to_child[0], &c, 1) == 1 && ok; // the parent's storages closed
            ok = store(other, 3) && ok;
            ok = store(made_here, 4) && ok;
            ::_exit(ok ? 0 : 1);
        }
        holder.kill();
        (void)holder.wait();
        storing.join();
        REQUIRE(::write(to_child[1], "1", 1) == 1);
        char c = 0;
        REQUIRE(::read(to_parent[0], &c, 1) == 1);
    } // the parent's connections close: its last, so SQLite may checkpoint and remove the WAL
    REQUIRE(::write(to_child[1], "2", 1) == 1);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    char answers[4] = {};
    CHECK(::read(results[0], answers, 4) == 4);
    for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1], results[0], results[1]}) ::close(fd);
    cc::sqlite_storage again(file); // the next host
    std::string out;
    for (std::uint32_t i = 1; i <= 4; ++i) {
        INFO("store " << i << ": " << answers[i - 1]);
        if (answers[i - 1] == 'k')
            CHECK(again.read(conformance_key(31, i), out, 1 << 20).status == cc::read_status::found);
    }
}

#endif

#if defined(COMPILE_CACHE_HELPER_sqlite_alloc_faults)
TEST_CASE("an allocation that fails while a sqlite_storage opens its file: no exception escapes, and a read "
          "after a failed reopen opens it again",
          "[sqlite]") {
    temp_dir dir;
    compile_cache_test::process_spec spec;
    spec.argv = {COMPILE_CACHE_HELPER_sqlite_alloc_faults, dir.str()};
    spec.env = compile_cache_test::this_environment();
    compile_cache_test::process_result const r = compile_cache_test::run_process(spec);
    INFO(r.describe() << "\n" << r.out << r.err);
    CHECK(r.exited(0));
    CHECK(r.out.rfind("escaped=0 ", 0) == 0);
}
#endif

TEST_CASE("a full disk when a host opens the file: the host still reads every entry", "[sqlite]") {
    temp_dir dir;
    fs::path const mnt = dir.path() / "mnt";
    fs::create_directory(mnt);
    std::string const out = compile_cache_test::run_in_child([&]() -> std::string {
        if (::unshare(CLONE_NEWNS) != 0 || ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            ::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=4m,mode=0700") != 0)
            return std::string("skip: ") + std::strerror(errno);
        std::string const file = (mnt / "cache.db").string();
        {
            cc::sqlite_storage s(file);
            for (std::uint32_t i = 0; i < 40; ++i)
                if (s.write(conformance_key(20, i), conformance_value(20, i))) return "cannot fill";
        }
        // Another connection keeps the WAL and its index file in place, as a running
        // host does; then the disk fills up.
        sqlite3* other = nullptr;
        sqlite3_open(file.c_str(), &other);
        sqlite3_exec(other, "SELECT count(*) FROM entries", nullptr, nullptr, nullptr);
        std::string const filler = (mnt / "filler").string();
        int const fd = ::open(filler.c_str(), O_WRONLY | O_CREAT, 0600);
        std::string const block(4096, 'f');
        while (::write(fd, block.data(), block.size()) > 0) {
        }
        ::close(fd);
        cc::sqlite_storage s(file);
        std::string result = "usable=" + std::to_string(s.usable()) + " found=" + std::to_string(forty_found(s)) +
                             " why=" + s.why_unusable();
        sqlite3_close(other);
        return result;
    });
    if (out.rfind("skip:", 0) == 0) {
        WARN("a tmpfs could not be mounted (" << out << "); the full-disk case is not run");
        return;
    }
    CHECK(out == "usable=1 found=40 why=");
}

TEST_CASE("a symlink planted where a damaged file's copy goes is never followed: the file is left as it is",
          "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fill_two_hundred(file);
    cc::sqlite_storage opened(file); // (open and sound, then damaged behind its back)
    REQUIRE(opened.usable());
    overwrite_pages(file);
    // In a folder others may write, the copy's name is predictable: FILE.broken-<time>-<pid>.
    // Symlinks there to a file of the host's user: one that is there, and one not yet made.
    std::string const victim = (dir.path() / "victim").string();
    std::string const not_yet = (dir.path() / "not-yet").string();
    write_file(victim, "precious");
    auto const now = static_cast<long long>(std::time(nullptr));
    bool const to_a_file_there = GENERATE(true, false);
    for (long long t = now; t < now + 30; ++t)
        REQUIRE(::symlink((to_a_file_there ? victim : not_yet).c_str(),
                          (file + ".broken-" + std::to_string(t) + "-" + std::to_string(::getpid())).c_str()) == 0);
    std::vector<std::string> logged;
    cc::sqlite_options options;
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    cc::sqlite_storage s(file, options);
    REQUIRE(read_until_error(s));
    CHECK(read_file(victim) == "precious");
    CHECK(!fs::exists(not_yet));
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("it cannot be copied aside to " + file + ".broken-") != std::string::npos);
    CHECK(logged[0].find("File exists): left as it is") != std::string::npos);
}

TEST_CASE("a repair that fails one way, then another, says each once: the lock held, then the copy refused",
          "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    fill_two_hundred(file);
    cc::sqlite_storage opened(file); // (open and sound, then damaged behind its back)
    REQUIRE(opened.usable());
    overwrite_pages(file);
    std::vector<std::string> logged;
    cc::sqlite_options options;
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    options.busy_timeout = std::chrono::milliseconds(10);
    // Another repair holds the file's repair lock: the damage is left, and said so once.
    auto elsewhere = std::make_unique<cc::detail::sqlite_impl::repair_lock>();
    REQUIRE(elsewhere->take(file, 0644, std::chrono::milliseconds(0)).empty());
    cc::sqlite_storage s(file, options);
    REQUIRE(read_until_error(s));
    REQUIRE(read_until_error(s));
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("it is damaged, and its repair lock cannot be taken (" + file +
                         ".repair: held by another repair): left as it is for now") != std::string::npos);
    // That repair ends without repairing; now the copy cannot be made (a symlink planted at
    // each name it may take): a failure of another kind, which is said too, once.
    elsewhere.reset();
    auto const now = static_cast<long long>(std::time(nullptr));
    std::string const not_yet = (dir.path() / "not-yet").string();
    for (long long t = now; t < now + 30; ++t)
        REQUIRE(::symlink(not_yet.c_str(),
                          (file + ".broken-" + std::to_string(t) + "-" + std::to_string(::getpid())).c_str()) == 0);
    REQUIRE(read_until_error(s));
    REQUIRE(read_until_error(s));
    INFO(logged.back());
    REQUIRE(logged.size() == 2);
    CHECK(logged[1].find("it is damaged, and it cannot be copied aside to " + file + ".broken-") != std::string::npos);
    CHECK(logged[1].find("File exists): left as it is") != std::string::npos);
    CHECK(!fs::exists(not_yet));
    // The lock held again (two processes at the same damage alternate so): said already.
    elsewhere = std::make_unique<cc::detail::sqlite_impl::repair_lock>();
    REQUIRE(elsewhere->take(file, 0644, std::chrono::milliseconds(0)).empty());
    REQUIRE(read_until_error(s));
    REQUIRE(read_until_error(s));
    CHECK(logged.size() == 2);
}

TEST_CASE("a damaged file that cannot be copied aside (a full disk) is left as it is, with one line", "[sqlite]") {
    temp_dir dir;
    fs::path const mnt = dir.path() / "mnt";
    fs::create_directory(mnt);
    std::string const out = compile_cache_test::run_in_child([&]() -> std::string {
        if (::unshare(CLONE_NEWNS) != 0 || ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            ::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m,mode=0700") != 0)
            return std::string("skip: ") + std::strerror(errno);
        std::string const file = (mnt / "cache.db").string();
        fill_two_hundred(file);
        sql_text(file, "PRAGMA wal_checkpoint(TRUNCATE)");
        // Another connection keeps the WAL and its index file in place, as a running host
        // does; the disk fills up, then pages 2 to 21 are overwritten in place (no new block).
        sqlite3* other = nullptr;
        sqlite3_open(file.c_str(), &other);
        sqlite3_exec(other, "SELECT count(*) FROM entries", nullptr, nullptr, nullptr);
        std::string const filler = (mnt / "filler").string();
        int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT, 0600);
        std::string const block(4096, 'f');
        while (::write(fd, block.data(), block.size()) > 0) {
        }
        ::close(fd);
        fd = ::open(file.c_str(), O_WRONLY);
        std::string const garbage(4096 * 20, static_cast<char>(0xa5));
        bool const damaged = fd >= 0 && ::pwrite(fd, garbage.data(), garbage.size(), 4096) ==
                                            static_cast<ssize_t>(garbage.size());
        if (fd >= 0) ::close(fd);
        if (!damaged) return "cannot damage it";
        std::string const damaged_bytes = read_file(file);
        std::vector<std::string> logged;
        cc::sqlite_options options;
        options.logger = [&](std::string_view line) { logged.emplace_back(line); };
        cc::sqlite_storage s(file, options);
        bool const error = read_until_error(s);
        std::string result = "error=" + std::to_string(error) + " lines=" + std::to_string(logged.size()) +
                             " same=" + std::to_string(read_file(file) == damaged_bytes) +
                             " copies=" + std::to_string(copies_aside(mnt).size());
        if (!logged.empty()) result += " line=" + logged[0];
        sqlite3_close(other);
        return result;
    });
    if (out.rfind("skip:", 0) == 0) {
        WARN("a tmpfs could not be mounted (" << out << "); the full-disk case is not run");
        return;
    }
    INFO(out);
    CHECK(out.rfind("error=1 lines=1 same=1 copies=0 line=", 0) == 0);
    CHECK(out.find("it is damaged, and it cannot be copied aside to ") != std::string::npos);
    CHECK(out.find("No space left on device): left as it is") != std::string::npos);
}

TEST_CASE("sqlite settings come from PREFIX_FILE, PREFIX_MAX_SIZE and PREFIX_BUSY_TIMEOUT", "[sqlite]") {
    temp_dir dir;
    std::string const file = (dir.path() / "env.db").string();
    auto const settings = sqlite_cache::environment_settings("CCSQLTEST");
    std::vector<std::string> names;
    for (auto const& s : settings) names.push_back(s.name);
    CHECK(std::find(names.begin(), names.end(), "CCSQLTEST_FILE") != names.end());
    CHECK(std::find(names.begin(), names.end(), "CCSQLTEST_MAX_SIZE") != names.end());
    CHECK(std::find(names.begin(), names.end(), "CCSQLTEST_BUSY_TIMEOUT") != names.end());
    CHECK(std::find(names.begin(), names.end(), "CCSQLTEST_DIR") == names.end());

    SECTION("unset or off: no cache, no file") {
        env_var off("CCSQLTEST_FILE", "off");
        CHECK(!sqlite_cache::from_env("CCSQLTEST").enabled());
        CHECK(!fs::exists(file));
    }
    SECTION("a file: enabled, and bad values are one line each") {
        env_var f("CCSQLTEST_FILE", file.c_str());
        env_var size("CCSQLTEST_MAX_SIZE", "banana");
        env_var busy("CCSQLTEST_BUSY_TIMEOUT", "forever");
        compile_cache_test::captured_stderr err(dir.path() / "stderr");
        auto cache = sqlite_cache::from_env("CCSQLTEST");
        std::string const printed = err.text();
        CHECK(cache.enabled());
        CHECK(fs::exists(file));
        CHECK(printed.find("CCSQLTEST_MAX_SIZE=\"banana\" is not a size") != std::string::npos);
        CHECK(printed.find("CCSQLTEST_BUSY_TIMEOUT=\"forever\" is not a duration") != std::string::npos);
        CHECK(std::count(printed.begin(), printed.end(), '\n') == 2);
    }
    SECTION("a file that cannot be made: one line, no cache") {
        env_var f("CCSQLTEST_FILE", (dir.path() / "missing" / "env.db").c_str());
        compile_cache_test::captured_stderr err(dir.path() / "stderr");
        auto cache = sqlite_cache::from_env("CCSQLTEST");
        std::string const printed = err.text();
        CHECK(!cache.enabled());
        CHECK(printed.rfind("compile_cache: CCSQLTEST_FILE=\"", 0) == 0);
        CHECK(printed.find("cannot be used") != std::string::npos);
        CHECK(std::count(printed.begin(), printed.end(), '\n') == 1);
    }
}

#if defined(COMPILE_CACHE_HELPER_sqlite_worker) && defined(COMPILE_CACHE_TEST_SQLITE_PROCESSES)
TEST_CASE("8 processes x 2000 operations on one sqlite file: no error, no torn value", "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "shared.db").string();
    std::vector<std::unique_ptr<compile_cache_test::child_process>> workers;
    for (int i = 0; i < 8; ++i)
        workers.push_back(std::make_unique<compile_cache_test::child_process>(
            std::vector<std::string>{COMPILE_CACHE_HELPER_sqlite_worker, "mixed", file, std::to_string(i), "2000"}));
    for (auto& w : workers) {
        int const code = w->wait();
        INFO(w->output());
        CHECK(code == 0);
        CHECK(w->output().rfind("ok ", 0) == 0);
        CHECK(w->output().find("errors=0 torn=0") != std::string::npos);
    }
    CHECK(sql_text(file, "PRAGMA integrity_check") == "ok");
}

TEST_CASE("writers killed in the middle of a write leave a sound sqlite file", "[sqlite][processes]") {
    temp_dir dir;
    std::string const file = (dir.path() / "killed.db").string();
    for (int round = 0; round < 3; ++round) {
        std::vector<std::unique_ptr<compile_cache_test::child_process>> writers;
        for (int i = 0; i < 4; ++i)
            writers.push_back(std::make_unique<compile_cache_test::child_process>(std::vector<std::string>{
                COMPILE_CACHE_HELPER_sqlite_worker, "forever", file, std::to_string(round * 4 + i)}));
        for (auto& w : writers) REQUIRE(w->wait_for_line());
        std::this_thread::sleep_for(std::chrono::milliseconds(100 + 50 * round));
        for (auto& w : writers) w->kill(SIGKILL);
        for (auto& w : writers) CHECK(w->wait() == 128 + SIGKILL);

        cc::sqlite_storage s(file);
        REQUIRE(s.usable());
        std::vector<cc::stored_entry> entries;
        REQUIRE(!s.list(entries));
        CHECK(!entries.empty());
        unsigned bad = 0;
        std::string out;
        for (auto const& e : entries)
            if (s.read(e.k, out, 1 << 20).status != cc::read_status::found || !is_conformance_value(out)) ++bad;
        CHECK(bad == 0);
        CHECK(sql_text(file, "PRAGMA integrity_check") == "ok");
        CHECK(copies_aside(dir.path()).empty());
        REQUIRE(!s.write(conformance_key(12, static_cast<std::uint32_t>(round)), conformance_value(99, 0)));
    }
}
#endif
