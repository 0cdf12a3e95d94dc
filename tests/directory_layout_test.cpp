// storage/directory_layout.hpp: what a program looking at a cache directory from
// outside (the compile-cache tool) is told about it agrees with what directory_storage
// writes there.
#include "catch2_compat.hpp"
#include "support/posix.hpp"

#include <compile_cache/storage/directory/directory_layout.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace layout = compile_cache::directory_layout;
using compile_cache_test::temp_dir;

cc::key test_key(unsigned char first) {
    unsigned char bytes[32] = {};
    bytes[0] = first;
    for (unsigned i = 1; i < sizeof bytes; ++i) bytes[i] = static_cast<unsigned char>(i * 7);
    return cc::key(bytes, sizeof bytes);
}

/// A cache directory with one entry in it, written by directory_storage.
struct directory_with_entry {
    temp_dir dir;
    std::string root = dir.path().string();
    cc::directory_storage storage{root};
    cc::key k;
    std::string bytes;

    directory_with_entry(unsigned char first, std::string entry_bytes)
        : k(test_key(first)), bytes(std::move(entry_bytes)) {
        REQUIRE(!storage.write(k, bytes));
    }
    std::string entry_path() const { return root + "/" + layout::entry_relative_path(k.hex()); }
};

std::vector<layout::folder_item> walked(std::string const& dir, std::string const& folder, std::error_code& ec,
                                        std::vector<std::string>& names) {
    std::vector<layout::folder_item> items;
    int const fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    ec = layout::walk_folder(fd, folder, [&](layout::folder_item const& item) {
        items.push_back(item);
        names.emplace_back(item.name); // the view lives only as long as the call
    });
    ::close(fd);
    return items;
}

std::int64_t mtime_ns(std::string const& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

} // namespace

TEST_CASE("the layout names what directory_storage writes: the entry in its folder, the ledger, the counters",
          "[directory_layout]") {
    directory_with_entry d(0xab, std::string(5000, 'x'));
    std::string const& root = d.root;
    std::string const& bytes = d.bytes;
    REQUIRE(!d.storage.record_counters({{"hits", 1}}));

    std::string const hex = d.k.hex();
    CHECK(layout::entry_relative_path(hex) == "ab/" + hex);
    CHECK(layout::is_folder_name("ab"));
    CHECK(layout::is_entry_name(hex, "ab"));
    CHECK_FALSE(layout::is_entry_name(hex, "cd"));
    CHECK(layout::accounted_size(bytes.size()) == 8192);

    std::error_code ec;
    std::vector<std::string> names;
    std::vector<layout::folder_item> const items = walked(root, "ab", ec, names);
    CHECK(!ec);
    REQUIRE(items.size() == 1);
    CHECK(names.front() == hex);
    CHECK(items.front().kind == layout::folder_item::kind_type::entry);
    CHECK(items.front().size == bytes.size());
    CHECK(items.front().use_ns == mtime_ns(d.entry_path()));

    std::string const ledger = root + "/" + std::string(layout::ledger_file_name);
    struct stat st {};
    REQUIRE(::lstat(ledger.c_str(), &st) == 0);
    CHECK(layout::looks_like_ledger(ledger, static_cast<std::uint64_t>(st.st_size)));
    CHECK(::lstat((root + "/" + std::string(layout::counters_folder_name)).c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    // The counters read back have the gauges besides the sums.
    auto const recorded = d.storage.recorded_counters();
    CHECK(recorded.count(std::string(layout::gauge_updated_s)) == 1);
    CHECK(layout::is_gauge(layout::gauge_max_size));
    CHECK_FALSE(layout::is_gauge("hits"));
}

TEST_CASE("walking a folder tells entries from temp files and from other files, and follows no symlink",
          "[directory_layout]") {
    directory_with_entry d(0x12, "entry");
    std::string const& root = d.root;
    std::string const temp = ".tmp-0123456789abcdef0123456789abcdef"; // what a store names its temp file
    compile_cache_test::write_file(d.dir.path() / "12" / temp, "half a store");
    compile_cache_test::write_file(d.dir.path() / "12" / ".tmp-mywork", "a user's file, not a temp file of the cache");
    compile_cache_test::write_file(d.dir.path() / "12" / "README", "notes");
    std::string const other_entry_name = d.k.hex().substr(0, 62) + "ff";
    REQUIRE(::symlink("/etc/passwd", (root + "/12/" + other_entry_name).c_str()) == 0);

    std::error_code ec;
    std::vector<std::string> names;
    std::vector<layout::folder_item> const items = walked(root, "12", ec, names);
    CHECK(!ec);
    REQUIRE(items.size() == 5);
    for (std::size_t i = 0; i < items.size(); ++i) {
        INFO(names[i]);
        if (names[i] == d.k.hex())
            CHECK(items[i].kind == layout::folder_item::kind_type::entry);
        else if (names[i] == temp)
            CHECK(items[i].kind == layout::folder_item::kind_type::temp);
        else
            CHECK(items[i].kind == layout::folder_item::kind_type::other); // README, .tmp-mywork, and the symlink
    }
    std::vector<std::string> none;
    walked(root, "34", ec, none);
    CHECK(ec == std::errc::no_such_file_or_directory);
}

TEST_CASE("reading an entry file leaves its use time alone, and refuses a symlink and a file over the bound",
          "[directory_layout]") {
    directory_with_entry d(0x5e, "the stored bytes");
    std::string const path = d.entry_path();
    struct timespec const old_times[2] = {{1000000000, 0}, {1000000000, 0}};
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), old_times, AT_SYMLINK_NOFOLLOW) == 0);

    std::string bytes, why;
    CHECK(layout::read_entry_file(path, 1 << 20, bytes, why) == layout::entry_file_status::ok);
    CHECK(bytes == "the stored bytes");
    CHECK(mtime_ns(path) == std::int64_t{1000000000} * 1000000000);

    CHECK(layout::read_entry_file(path, 4, bytes, why) == layout::entry_file_status::too_large);
    CHECK(bytes.empty());

    std::string const link = d.root + "/5e/link";
    REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
    CHECK(layout::read_entry_file(link, 1 << 20, bytes, why) == layout::entry_file_status::failed);
    CHECK(!why.empty());
}
