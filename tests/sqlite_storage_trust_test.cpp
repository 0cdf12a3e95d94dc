// What sqlite_storage trusts: never a file or folder others may write, and never a repair through a symlink.
#include "catch2_compat.hpp"
#include "support/posix.hpp"

#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <sqlite3.h>
#include <sys/stat.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using cc::testing::detail::conformance_key;
using compile_cache_test::read_file;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;

} // namespace

TEST_CASE("a symlink at the sqlite file's path to a file that is not a database: that file is never emptied",
          "[sqlite][trust]") {
    temp_dir dir;
    fs::path const victim = dir.path() / "notes.txt";
    std::string const precious(10000, 'p');
    write_file(victim, precious);
    fs::path const link = dir.path() / "cache.db"; // (planted where a host's cache file goes)
    fs::create_symlink(victim, link);
    std::vector<std::string> logged;
    cc::sqlite_options options;
    options.logger = [&](std::string_view line) { logged.emplace_back(line); };
    {
        cc::sqlite_storage s(link.string(), options);
        CHECK(!s.usable());
        std::string out;
        CHECK(s.read(conformance_key(1, 1), out, 1 << 20).status != cc::read_status::found);
        CHECK(s.write(conformance_key(1, 1), "value"));
    }
    bool const kept = read_file(victim) == precious;
    CHECK(kept);
    CHECK(fs::is_symlink(fs::symlink_status(link)));
    REQUIRE(logged.size() == 1);
    CHECK(logged[0].find("symlink") != std::string::npos);
}

TEST_CASE("a sqlite file that other users may write is not trusted: none of its entries is served",
          "[sqlite][trust]") {
    temp_dir dir;
    std::string const file = (dir.path() / "cache.db").string();
    {
        cc::sqlite_storage s(file);
        REQUIRE(s.usable());
        REQUIRE(!s.write(conformance_key(2, 1), "planted by anyone"));
    }
    for (unsigned mode : {0666u, 0646u, 0602u}) {
        INFO("mode " << std::oct << mode);
        REQUIRE(::chmod(file.c_str(), mode) == 0);
        for (bool read_only : {false, true}) {
            INFO("read_only " << read_only);
            cc::sqlite_options options;
            options.read_only = read_only;
            cc::sqlite_storage s(file, options);
            std::string out;
            CHECK(s.read(conformance_key(2, 1), out, 1 << 20).status != cc::read_status::found);
            CHECK(out.empty());
            CHECK(!s.usable());
            CHECK(s.why_unusable().find("writable by other users") != std::string::npos);
        }
    }
    for (unsigned mode : {0644u, 0600u, 0664u}) {
        INFO("mode " << std::oct << mode);
        REQUIRE(::chmod(file.c_str(), mode) == 0);
        cc::sqlite_storage s(file);
        std::string out;
        CHECK(s.read(conformance_key(2, 1), out, 1 << 20).status == cc::read_status::found);
    }
}

TEST_CASE("a sqlite file in a folder other users may write is not trusted: a -wal planted beside it is never read",
          "[sqlite][trust]") {
    temp_dir dir;
    fs::path const shared = dir.path() / "shared", theirs = dir.path() / "theirs";
    fs::create_directory(shared);
    fs::create_directory(theirs);
    std::string const file = (shared / "cache.db").string(), copy = (theirs / "cache.db").string();
    auto const k = conformance_key(3, 1);
    {
        cc::sqlite_storage s(file);
        REQUIRE(!s.write(k, "sound"));
    }
    REQUIRE(!fs::exists(file + "-wal")); // (the last connection's close folds it into the file)
    // Another user copies the file (it may read it), writes a row of its own into the copy's
    // WAL, and puts that WAL beside the file, which no process has open.
    fs::copy_file(file, copy);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(copy.c_str(), &db) == SQLITE_OK);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0", nullptr, nullptr, nullptr);
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO entries(key, used, value) VALUES(?1, 1, 'planted')", -1,
                               &st, nullptr) == SQLITE_OK);
    sqlite3_bind_blob(st, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
    CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_finalize(st);
    for (unsigned mode : {01777u, 0777u, 0703u}) {
        INFO("folder mode " << std::oct << mode);
        REQUIRE(::chmod(shared.c_str(), mode) == 0);
        fs::copy_file(copy + "-wal", file + "-wal", fs::copy_options::overwrite_existing);
        cc::sqlite_storage s(file);
        std::string out;
        CHECK(s.read(k, out, 1 << 20).status != cc::read_status::found);
        CHECK(out != "planted");
        CHECK(!s.usable());
        CHECK(s.why_unusable().find("folder is writable by other users") != std::string::npos);
    }
    sqlite3_close(db);
    REQUIRE(::chmod(shared.c_str(), 0755) == 0);
    fs::remove(file + "-wal");
    cc::sqlite_storage s(file);
    std::string out;
    CHECK(s.read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "sound");
}
