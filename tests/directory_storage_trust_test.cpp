// What directory_storage trusts: never a symlink (at an entry path, at a temp path, or
// in place of a folder it just made), in private mode only entries this user owns that
// no one else may write, in shared mode group-writable entries but not world-writable
// ones, with the group's modes on its counters' files too; reads bounded before a byte
// is read; and the durability settings.
#include "catch2_compat.hpp"
#include "support/storage_model.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"
#include "support/scratch_storage.hpp"

#include <compile_cache/storage/directory/directory_storage.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using cc::directory_errc;
using cc::directory_options;
using cc::directory_storage;
using cc::read_status;
using compile_cache_test::read_file;
using compile_cache_test::temp_dir;
using compile_cache_test::scratch_storage;
using compile_cache_test::write_file;
using storage_test::artifact;
using storage_test::key_of;
using storage_test::make_artifact;

constexpr uid_t nobody = 65534;
constexpr gid_t nogroup = 65534;

using compile_cache_test::mode_of;
using compile_cache_test::running_as_root;
using compile_cache_test::umask_guard;

/// A cache over `storage` whose diagnostics are kept.
struct logged_cache {
    std::vector<std::string> lines;
    storage_test::cache cache;
    explicit logged_cache(directory_storage storage) : cache(std::move(storage)) {
        cache.set_logger([this](std::string_view line) { lines.emplace_back(line); });
    }
};

} // namespace

TEST_CASE("a symlink at an entry path is a counted miss and is replaced, never followed", "[storage][trust]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    logged_cache lc{directory_storage(root.string())};
    auto const k = key_of(1);
    fs::path const entry = lc.cache.storage().entry_path(k.value());
    fs::path const victim = dir.path() / "victim";
    write_file(victim, "precious");
    fs::create_directories(entry.parent_path());
    fs::create_symlink(victim, entry);

    auto r = lc.cache.get_or_compile<artifact>(k, {"k1", "trust", 1}, [] { return make_artifact(1, 0, 100); });
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(storage_test::is_right(r.value, 1, 100));
    CHECK(lc.cache.stats().miss_count(cc::miss_reason::read_error) == 1);
    CHECK(read_file(victim) == "precious");
    CHECK(fs::is_regular_file(fs::symlink_status(entry))); // the store replaced the link itself
    r = lc.cache.get_or_compile<artifact>(k, {"k1", "trust", 1}, [] { return make_artifact(1, 1, 100); });
    CHECK(r.outcome == cc::outcome::loaded);
    CHECK(r.value.variant == 0);
}

TEST_CASE_METHOD(scratch_storage, "a fan-out folder swapped for a symlink: remove and prune delete nothing outside the cache",
          "[storage][trust]") {
    auto const k = key_of(7);
    REQUIRE(!s.write(k.value(), "entry bytes"));
    fs::path const entry = s.entry_path(k.value());
    fs::path const folder = entry.parent_path();

    // Elsewhere: a folder holding a file under the entry's very name (a victim's
    // content-addressed store, say). The cache's folder becomes a symlink to it.
    fs::path const elsewhere = dir.path() / "elsewhere";
    fs::create_directories(elsewhere);
    write_file(elsewhere / entry.filename(), "precious");
    fs::remove_all(folder);
    fs::create_symlink(elsewhere, folder);

    s.remove(k.value()); // the folder is not followed: for the cache there is no such entry
    CHECK(read_file(elsewhere / entry.filename()) == "precious");
    cc::directory_options tiny;
    tiny.max_size = 1;
    directory_storage pruning(root.string(), tiny);
    pruning.prune();
    pruning.clear();
    CHECK(read_file(elsewhere / entry.filename()) == "precious");
}

TEST_CASE("shared mode: a fan-out folder swapped for a symlink: a store and a claim write nothing outside the cache",
          "[storage][trust]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string(), directory_options::shared());
    auto const k = key_of(8);
    REQUIRE(!s.write(k.value(), "entry bytes"));
    fs::path const entry = s.entry_path(k.value());
    fs::path const folder = entry.parent_path();
    // Elsewhere: a folder holding a file under the entry's very name. The cache's folder
    // becomes a symlink to it (another member of a shared directory's group may do that).
    fs::path const elsewhere = dir.path() / "elsewhere";
    fs::create_directories(elsewhere);
    write_file(elsewhere / entry.filename(), "precious");
    fs::remove_all(folder);
    fs::create_symlink(elsewhere, folder);

    std::error_code const ec = s.write(k.value(), "new entry bytes");
    INFO(ec.message());
    CHECK((ec == std::errc::not_a_directory || ec == std::errc::too_many_symbolic_link_levels)); // a write error
    CHECK(s.try_claim(k.value(), {}).state != cc::claim_state::claimed);
    CHECK(read_file(elsewhere / entry.filename()) == "precious");
    std::vector<std::string> there;
    for (auto const& e : fs::directory_iterator(elsewhere)) there.push_back(e.path().filename().string());
    CHECK(there == std::vector<std::string>{entry.filename().string()}); // no temp file, no claim file
}

TEST_CASE_METHOD(scratch_storage, "a symlink planted at a temp path is not followed", "[storage][trust]") {
    cc::key const k = key_of(2).value();
    fs::path const folder = fs::path(s.entry_path(k)).parent_path();
    fs::create_directories(folder);
    fs::path const victim = dir.path() / "victim";
    write_file(victim, "precious");
    fs::create_symlink(victim, folder / ".tmp-planted");
    fs::path const missing = dir.path() / "would-be-created";
    fs::create_symlink(missing, folder / ".tmp-dangling");

    namespace impl = cc::detail::directory_storage_impl;
    SECTION("the exclusive create refuses both links") {
        errno = 0;
        CHECK(impl::open_exclusive((folder / ".tmp-planted").string(), 0600) == -1);
        CHECK(errno == EEXIST);
        CHECK(impl::open_exclusive((folder / ".tmp-dangling").string(), 0600) == -1);
        CHECK(errno == EEXIST);
    }
    SECTION("a store that meets one takes another name") {
        impl::next_temp_suffix_for_testing = "planted";
        REQUIRE(!s.write(k, "entry"));
        CHECK(impl::next_temp_suffix_for_testing == nullptr);
        impl::next_temp_suffix_for_testing = "dangling";
        REQUIRE(!s.write(k, "entry 2"));
        std::string out;
        REQUIRE(s.read(k, out, 100).status == read_status::found);
        CHECK(out == "entry 2");
    }
    CHECK(read_file(victim) == "precious");
    CHECK(!fs::exists(fs::symlink_status(missing)));
    CHECK(fs::is_symlink(folder / ".tmp-planted"));
    CHECK(fs::is_symlink(folder / ".tmp-dangling"));
}

TEST_CASE("private mode: an entry writable by others is not trusted", "[storage][trust]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    logged_cache lc{directory_storage(root.string())};
    auto& s = lc.cache.storage();
    auto const k = key_of(3);
    REQUIRE(lc.cache.store(k, make_artifact(3, 0, 500), {"k3", "trust", 1}));
    fs::path const entry = s.entry_path(k.value());
    std::string out;

    for (unsigned mode : {0666u, 0646u, 0620u, 0660u}) {
        INFO("mode " << std::oct << mode);
        fs::permissions(entry, fs::perms(mode));
        auto const r = s.read(k.value(), out, 1 << 20);
        CHECK(r.status == read_status::error);
        CHECK(r.error == directory_errc::unsafe_permissions);
        CHECK(out.empty());
    }
    for (unsigned mode : {0600u, 0644u, 0400u}) {
        INFO("mode " << std::oct << mode);
        fs::permissions(entry, fs::perms(mode));
        CHECK(s.read(k.value(), out, 1 << 20).status == read_status::found);
    }

    // Through the cache: a counted miss, the value compiled, the entry replaced.
    fs::permissions(entry, fs::perms(0666));
    auto r = lc.cache.get_or_compile<artifact>(k, {"k3", "trust", 1}, [] { return make_artifact(3, 1, 500); });
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(lc.cache.stats().miss_count(cc::miss_reason::read_error) == 1);
    REQUIRE(lc.lines.size() == 1);
    CHECK(lc.lines[0].find("writable by other users") != std::string::npos);
    CHECK(mode_of(entry) == 0600u);
    r = lc.cache.get_or_compile<artifact>(k, {"k3", "trust", 1}, [] { return make_artifact(3, 2, 500); });
    CHECK(r.outcome == cc::outcome::loaded);
    CHECK(r.value.variant == 1);
}

TEST_CASE("private mode: an entry owned by another user is not trusted", "[storage][trust]") {
    if (!running_as_root()) {
        WARN("not root: cannot give a file to another user; the other-owner case is not run");
        return;
    }
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    logged_cache lc{directory_storage(root.string())};
    auto const k = key_of(4);
    REQUIRE(lc.cache.store(k, make_artifact(4, 0, 500), {"k4", "trust", 1}));
    fs::path const entry = lc.cache.storage().entry_path(k.value());
    REQUIRE(::chown(entry.c_str(), nobody, nogroup) == 0);
    REQUIRE(mode_of(entry) == 0600u);

    std::string out;
    auto const rr = lc.cache.storage().read(k.value(), out, 1 << 20);
    CHECK(rr.status == read_status::error);
    CHECK(rr.error == directory_errc::foreign_owner);
    auto const r = lc.cache.get_or_compile<artifact>(k, {"k4", "trust", 1}, [] { return make_artifact(4, 1, 500); });
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(lc.cache.stats().miss_count(cc::miss_reason::read_error) == 1);
    struct stat st {};
    REQUIRE(::lstat(entry.c_str(), &st) == 0);
    CHECK(st.st_uid == ::geteuid()); // replaced by this user's entry
}

TEST_CASE("shared mode: group-writable modes whatever the umask, world-writable entries not trusted",
          "[storage][trust]") {
    umask_guard const um(022); // a usual umask, which would strip the group's write bit
    temp_dir dir;
    fs::path const root = dir.path() / "shared" / "cache";
    directory_options const o = directory_options::shared();
    CHECK(o.file_mode == 0660u);
    CHECK(o.directory_mode == 02770u);
    CHECK(o.umask == 007);
    CHECK(o.access == cc::sharing::group);
    directory_storage s(root.string(), o);
    cc::key const k = key_of(5).value();
    REQUIRE(!s.write(k, "shared entry"));
    fs::path const entry = s.entry_path(k);
    CHECK(mode_of(entry) == 0660u);
    CHECK(mode_of(entry.parent_path()) == 02770u);
    CHECK(mode_of(root) == 02770u);
    CHECK(mode_of(root / ".cc-stats") == 0660u);

    std::string out;
    CHECK(s.read(k, out, 100).status == read_status::found); // group-writable is fine here
    fs::permissions(entry, fs::perms(0666));
    auto const r = s.read(k, out, 100);
    CHECK(r.status == read_status::error);
    CHECK(r.error == directory_errc::unsafe_permissions);

    SECTION("a umask of the host's choosing") {
        directory_storage narrow((dir.path() / "narrow").string(), directory_options::shared(027));
        REQUIRE(!narrow.write(k, "x"));
        CHECK(mode_of(narrow.entry_path(k)) == 0640u);
        CHECK(mode_of(fs::path(narrow.entry_path(k)).parent_path()) == 02750u);
    }
    SECTION("another member's entry is trusted; the group is inherited from the directory") {
        if (!running_as_root()) {
            WARN("not root: cannot give files to another user or group; not run");
            return;
        }
        fs::permissions(entry, fs::perms(0660));
        REQUIRE(::chown(entry.c_str(), nobody, nogroup) == 0);
        CHECK(s.read(k, out, 100).status == read_status::found);
        CHECK(out == "shared entry");

        fs::path const group_root = dir.path() / "group";
        fs::create_directory(group_root);
        REQUIRE(::chown(group_root.c_str(), 0, nogroup) == 0);
        REQUIRE(::chmod(group_root.c_str(), 02770) == 0);
        directory_storage g(group_root.string(), o);
        REQUIRE(!g.write(k, "y"));
        struct stat st {};
        REQUIRE(::lstat(g.entry_path(k).c_str(), &st) == 0);
        CHECK(st.st_gid == nogroup);
    }
}

TEST_CASE("shared mode: the counters' lock files are the group's whatever the umask, so every member records",
          "[storage][trust][counters]") {
    umask_guard const um(022); // a usual umask, which would strip the group's write bit
    temp_dir dir;
    fs::path const root = dir.path() / "group";
    fs::create_directory(root);
    if (running_as_root()) { // a directory of group nogroup, as an administrator sets one up
        fs::permissions(dir.path(), fs::perms(0711));
        REQUIRE(::chown(root.c_str(), 0, nogroup) == 0);
        REQUIRE(::chmod(root.c_str(), 02770) == 0);
    }
    directory_storage s(root.string(), directory_options::shared());
    REQUIRE(!s.record_counters({{"hits", 1}}));
    fs::path const counters = root / ".cc-counters";
    std::string lock_name;
    for (auto const& e : fs::directory_iterator(counters)) {
        std::string const name = e.path().filename().string();
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0) lock_name = name;
    }
    REQUIRE(!lock_name.empty());
    CHECK(mode_of(counters / lock_name) == 0660u);
    CHECK(mode_of(counters / lock_name.substr(0, lock_name.size() - 5)) == 0660u);
    if (!running_as_root()) {
        WARN("not root: cannot record as another member of the group; not run");
        return;
    }
    // Another member (user nobody, group nogroup) whose process falls on the same shard
    // (pid % 16) records too, through the lock file this user made.
    unsigned const shard = static_cast<unsigned>(std::stoul(lock_name.substr(0, 1), nullptr, 16));
    std::string out = "skip";
    for (int tries = 0; tries < 256 && out == "skip"; ++tries)
        out = compile_cache_test::run_in_child([&] {
            if (static_cast<unsigned>(::getpid()) % 16 != shard) return std::string("skip");
            if (::setgroups(0, nullptr) != 0 || ::setgid(nogroup) != 0 || ::setuid(nobody) != 0)
                return std::string("cannot drop root");
            std::error_code const ec = directory_storage(root.string(), directory_options::shared())
                                           .record_counters({{"hits", 1}});
            return ec ? "record_counters: " + ec.message() : std::string("recorded");
        });
    REQUIRE(out != "skip");
    CHECK(out == "recorded");
    CHECK(s.recorded_counters()["hits"] == 2);
}

namespace {
/// The folder that after_mkdir_for_testing swaps for a symlink to this one.
fs::path swap_target;
/// Moves a fan-out folder just made aside and puts a symlink to swap_target in its place,
/// as another member of the group may between the mkdir and the setting of its mode.
void swap_folder_for_symlink(char const* path) {
    fs::path const folder(path);
    if (folder.filename().string().size() != 2) return; // the cache directory itself
    std::error_code ec;
    fs::rename(folder, folder.string() + "-moved", ec);
    if (!ec) fs::create_directory_symlink(swap_target, folder, ec);
}
} // namespace

TEST_CASE("shared mode: a folder swapped for a symlink after its mkdir never passes its mode to what the link names",
          "[storage][trust]") {
    umask_guard const um(022);
    temp_dir dir;
    swap_target = dir.path() / "private";
    fs::create_directory(swap_target);
    fs::permissions(swap_target, fs::perms(0700));
    directory_storage s((dir.path() / "cache").string(), directory_options::shared());
    cc::key const k = key_of(12).value();
    cc::detail::directory_storage_impl::after_mkdir_for_testing = &swap_folder_for_symlink;
    SECTION("the folder a store makes") { (void)s.write(k, "x"); }
    SECTION("the folder a claim makes") { (void)s.try_claim(k, {}); }
    cc::detail::directory_storage_impl::after_mkdir_for_testing = nullptr;
    REQUIRE(fs::is_symlink(fs::path(s.entry_path(k)).parent_path())); // the swap was made
    CHECK(mode_of(swap_target) == 0700u);
}

TEST_CASE("the process umask still applies when no umask is set", "[storage][trust]") {
    umask_guard const um(077);
    temp_dir dir;
    directory_options o;
    o.file_mode = 0644;
    directory_storage s((dir.path() / "cache").string(), o);
    cc::key const k = key_of(6).value();
    REQUIRE(!s.write(k, "x"));
    CHECK(mode_of(s.entry_path(k)) == 0600u);
}

TEST_CASE("an entry larger than the bound is refused without being read", "[storage][trust]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    logged_cache lc{directory_storage(root.string())};
    auto const k = key_of(7);
    fs::path const entry = lc.cache.storage().entry_path(k.value());
    fs::create_directories(entry.parent_path());
    {
        int const fd = ::open(entry.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, off_t{1} << 30) == 0); // 1 GiB, sparse
        ::close(fd);
    }
    std::string out;
    auto const r = lc.cache.storage().read(k.value(), out, std::size_t{64} << 20);
    CHECK(r.status == read_status::too_large);
    CHECK(out.empty());
    CHECK(out.capacity() < (std::size_t{1} << 20)); // nothing was allocated for it

    auto const got = lc.cache.get_or_compile<artifact>(k, {"k7", "trust", 1}, [] { return make_artifact(7, 0, 10); });
    CHECK(got.outcome == cc::outcome::compiled);
    auto const st = lc.cache.stats();
    CHECK(st.miss_count(cc::miss_reason::too_large) == 1);
    CHECK(st.bytes_read == 0);
    CHECK(fs::file_size(entry) < 1000); // replaced by the compiled entry
}

TEST_CASE("every durability setting stores and loads", "[storage][trust]") {
    for (auto sync : {cc::durability::none, cc::durability::file, cc::durability::full}) {
        INFO(cc::to_string(sync));
        temp_dir dir;
        directory_options o;
        o.sync = sync;
        storage_test::cache c(directory_storage((dir.path() / "a" / "cache").string(), o));
        for (std::uint32_t i = 0; i < 5; ++i) REQUIRE(c.store(key_of(i), make_artifact(i, 0, 3000), {"d", "trust", 1}));
        for (std::uint32_t i = 0; i < 5; ++i) {
            auto const a = c.load<artifact>(key_of(i), {"d", "trust", 1});
            REQUIRE(a);
            CHECK(storage_test::is_right(*a, i, 3000));
        }
        CHECK(c.stats().total_store_failures() == 0);
    }
}

TEST_CASE("shared mode: a folder this user cannot list keeps its figure in the ledger through a prune",
          "[storage][trust][eviction]") {
    if (!running_as_root()) {
        WARN("not root: cannot prune as another member of the group; not run");
        return;
    }
    temp_dir dir;
    fs::path const root = dir.path() / "group";
    fs::create_directory(root);
    fs::permissions(dir.path(), fs::perms(0711));
    REQUIRE(::chown(root.c_str(), 0, nogroup) == 0);
    REQUIRE(::chmod(root.c_str(), 02770) == 0);
    directory_storage s(root.string(), directory_options::shared());
    for (std::uint32_t i = 0; i < 40; ++i) REQUIRE(!s.write(key_of(i).value(), std::string(5000, 'x')));
    REQUIRE(!s.prune().error);
    std::uint64_t const total = s.accounted_size();
    REQUIRE(total == 40 * 8192);
    // One folder made this user's alone (0700): user nobody of group nogroup cannot list it.
    fs::path const folder = fs::path(s.entry_path(key_of(0).value())).parent_path();
    REQUIRE(::chmod(folder.c_str(), 0700) == 0);
    std::string const out = compile_cache_test::run_in_child([&] {
        if (::setgroups(0, nullptr) != 0 || ::setgid(nogroup) != 0 || ::setuid(nobody) != 0)
            return std::string("cannot drop root");
        auto const r = directory_storage(root.string(), directory_options::shared()).prune();
        if (r.error) return "prune: " + r.error.message();
        return r.not_removed == 0 ? std::string("listed every folder") : std::string("pruned");
    });
    REQUIRE(::chmod(folder.c_str(), 02770) == 0);
    CHECK(out == "pruned");
    CHECK(s.accounted_size() == total); // not less by what the folder it could not list holds
}
