// What sqlite_storage trusts: never a file others may write, and never a repair through a symlink.
#include "catch2_compat.hpp"
#include "support/posix.hpp"

#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

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
