// directory_storage's deferred writes, through which a cache writes its identity
// records (issue 27, part 3): a store creates one file, the record follows in a batch
// (at the cache's flush or destruction, or when the batch is full or old), this
// process reads it at once, other processes once written; and PREFIX_RECORD_IDENTITIES.
// A cache holds the records it stored, decoded, and writes them in its batch merged with
// the directory's (processes storing one kernel in turn keep each other's entries).
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"
#include "support/storage_model.hpp"

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/storage/directory/directory_layout.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using cc::directory_storage;
using cc::key;
using cc::read_status;
using compile_cache_test::temp_dir;

key key_n(std::uint32_t n) { return storage_test::key_of(n).value(); }

/// Entry and record files under `root` (names in two-hex-digit folders, temp files aside).
std::size_t files_under(fs::path const& root) {
    std::size_t n = 0;
    if (!fs::exists(root)) return 0;
    for (auto const& folder : fs::directory_iterator(root)) {
        if (!folder.is_directory() || folder.path().filename().string().size() != 2) continue;
        for (auto const& e : fs::directory_iterator(folder.path()))
            if (e.path().filename().string().rfind(".tmp-", 0) != 0) ++n;
    }
    return n;
}

storage_test::artifact compile_of(std::uint32_t id) { return storage_test::make_artifact(id, 0, 100); }

/// The packs of identity records under `root` (entries whose names end 1e).
std::vector<fs::path> packs_under(fs::path const& root) {
    std::vector<fs::path> packs;
    if (!fs::exists(root)) return packs;
    for (auto const& folder : fs::directory_iterator(root)) {
        if (!folder.is_directory() || folder.path().filename().string().size() != 2) continue;
        for (auto const& e : fs::directory_iterator(folder.path()))
            if (cc::directory_layout::is_pack_name(e.path().filename().string())) packs.push_back(e.path());
    }
    return packs;
}

/// The packs' markers under `root` (DIR/.cc-records).
std::size_t markers_under(fs::path const& root) {
    fs::path const folder = root / std::string(cc::directory_layout::packs_folder_name);
    if (!fs::exists(folder)) return 0;
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

} // namespace

TEST_CASE("a deferred write is read at once in this process and written in a batch", "[storage][records]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    std::string out;
    {
        directory_storage s(root.string());
        REQUIRE(!s.write_deferred(key_n(1), "record one"));
        CHECK(!fs::exists(s.entry_path(key_n(1)))); // not written yet...
        REQUIRE(s.read(key_n(1), out, 100).status == read_status::found); // ...read all the same
        CHECK(out == "record one");
        directory_storage copy = s;
        REQUIRE(copy.read(key_n(1), out, 100).status == read_status::found); // copies share the batch
        CHECK(copy.read(key_n(1), out, 5).status == read_status::too_large);
        CHECK(out.empty());
        directory_storage other(root.string()); // as another process would see it
        CHECK(other.read(key_n(1), out, 100).status == read_status::absent);

        REQUIRE(!s.write_deferred(key_n(1), "record one, again")); // the latest bytes of a key are kept
        REQUIRE(!s.write_deferred(key_n(2), "record two"));
        REQUIRE(!s.flush_deferred());
        REQUIRE(other.read(key_n(1), out, 100).status == read_status::found);
        CHECK(out == "record one, again");
        REQUIRE(other.read(key_n(2), out, 100).status == read_status::found);

        // A write or a remove of a held key supersedes it.
        REQUIRE(!s.write_deferred(key_n(3), "held"));
        REQUIRE(!s.write(key_n(3), "written"));
        REQUIRE(!s.write_deferred(key_n(4), "held"));
        REQUIRE(!s.remove(key_n(4)));
        REQUIRE(!s.write_deferred(key_n(5), "made when the last copy goes"));
    }
    directory_storage after(root.string());
    REQUIRE(after.read(key_n(3), out, 100).status == read_status::found);
    CHECK(out == "written");
    CHECK(after.read(key_n(4), out, 100).status == read_status::absent);
    REQUIRE(after.read(key_n(5), out, 100).status == read_status::found);
    CHECK(out == "made when the last copy goes");
}

TEST_CASE("deferred writes are made when the batch is full", "[storage][records]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_storage s(root.string());
    std::size_t const bound = cc::detail::directory_storage_impl::deferred_writes::max_keys;
    for (std::uint32_t i = 0; i + 1 < bound; ++i) REQUIRE(!s.write_deferred(key_n(i), "r"));
    CHECK(files_under(root) == 0);
    REQUIRE(!s.write_deferred(key_n(static_cast<std::uint32_t>(bound)), "r"));
    CHECK(files_under(root) == bound);
}

TEST_CASE("through a cache, a store creates one file, the identity record follows and explains the next miss",
          "[storage][records][explain]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::entry_info const info{"main", "prog.dsl", 1};
    {
        storage_test::cache c{directory_storage(root.string())};
        auto const r = c.get_or_compile<storage_test::artifact>(storage_test::key_of(1), info,
                                                                [] { return compile_of(1); });
        CHECK(r.outcome == cc::outcome::compiled);
        CHECK(files_under(root) == 1); // the entry; its record is held
        // This process explains a miss with the record at once.
        auto const again = c.get_or_compile<storage_test::artifact>(storage_test::key_of(2), info,
                                                                    [] { return compile_of(2); });
        CHECK(again.explanation.what == cc::miss_explanation::kind::changed);
        CHECK(files_under(root) == 2);
    } // destroyed: the record is written
    CHECK(files_under(root) == 3);
    // Another cache (another process) finds the record: the record of the latest store.
    storage_test::cache later{directory_storage(root.string())};
    auto const r = later.get_or_compile<storage_test::artifact>(storage_test::key_of(3), info,
                                                                [] { return compile_of(3); });
    CHECK(r.explanation.what == cc::miss_explanation::kind::changed);
}

TEST_CASE("PREFIX_RECORD_IDENTITIES=0 turns identity records off, a bad value is one line and the default",
          "[storage][records][settings]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    compile_cache_test::scoped_settings env("CCRECTEST", {"_DIR", "_LOG", "_RECORD_IDENTITIES"});
    env.set("_DIR", root.c_str());
    cc::entry_info const info{"main", "prog.dsl", 1};
    auto stores_leave = [&](std::uint32_t id) {
        std::size_t const before = files_under(root);
        {
            auto c = storage_test::cache::from_env("CCRECTEST");
            REQUIRE(c.enabled());
            c.get_or_compile<storage_test::artifact>(storage_test::key_of(id), info, [id] { return compile_of(id); });
        }
        return files_under(root) - before;
    };
    {
        auto c = storage_test::cache::from_env("CCRECTEST");
        CHECK(c.options().record_identities);
    }
    env.set("_RECORD_IDENTITIES", "0");
    {
        auto c = storage_test::cache::from_env("CCRECTEST");
        CHECK(!c.options().record_identities);
    }
    CHECK(stores_leave(1) == 1); // the entry alone
    env.set("_RECORD_IDENTITIES", "1");
    CHECK(stores_leave(2) == 2); // the entry and the kernel's record

    env.set("_RECORD_IDENTITIES", "sometimes");
    compile_cache_test::captured_stderr captured(dir.path() / "stderr.txt");
    auto c = storage_test::cache::from_env("CCRECTEST");
    std::string const text = captured.text();
    CHECK(c.options().record_identities);
    CHECK(text.find("CCRECTEST_RECORD_IDENTITIES=\"sometimes\"") != std::string::npos);
}

TEST_CASE("directory_storage: clear() drops what it holds back, which never comes back after it") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string());
    REQUIRE_FALSE(s.write_deferred(key_n(1), "a record held back"));
    std::string out;
    REQUIRE(s.read(key_n(1), out, 1 << 20).status == read_status::found); // this process sees it at once
    (void)s.clear();
    CHECK_FALSE(s.flush_deferred());
    CHECK(s.read(key_n(1), out, 1 << 20).status == read_status::absent);
    directory_storage other((dir.path() / "cache").string());
    CHECK(other.read(key_n(1), out, 1 << 20).status == read_status::absent);
}

namespace {

/// The keys of the record of `main` from record-steps (storage_worker's kernel) as the
/// directory has it, newest first, as key ids (0 for a key no id has).
std::vector<std::uint32_t> recorded_ids(fs::path const& root) {
    storage_test::cache fresh{directory_storage(root.string())};
    std::vector<std::uint32_t> ids;
    auto const r = fresh.read_identity_record(cc::kernel_identity({}, "main", "record-steps"));
    if (!r) return ids;
    for (cc::recorded_entry const& e : r->history) {
        std::uint32_t id = 0;
        for (std::uint32_t n = 1; n < 16 && id == 0; ++n)
            if (e.entry_key == storage_test::key_of(n).value()) id = n;
        ids.push_back(id);
    }
    return ids;
}

} // namespace

TEST_CASE("a kernel missed again in one process is explained from the record its cache holds, written at the flush",
          "[storage][records][explain]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::entry_info const info{"main", "record-steps", 1};
    storage_test::cache c{directory_storage(root.string())};
    auto get = [&](std::uint32_t id) {
        return c.get_or_compile<storage_test::artifact>(storage_test::key_of(id), info, [id] { return compile_of(id); });
    };
    CHECK(get(1).explanation.what == cc::miss_explanation::kind::new_kernel);
    auto const second = get(2);
    CHECK(second.explanation.what == cc::miss_explanation::kind::changed);
    CHECK(second.explanation.changed == std::vector<std::string>{"storage-test-id"});
    // The record is the cache's until its flush: in no file, not in the storage.
    CHECK(files_under(root) == 2);
    CHECK(recorded_ids(root).empty());
    auto const held = c.read_identity_record(cc::kernel_identity({}, "main", "record-steps"));
    REQUIRE(held);
    REQUIRE(held->history.size() == 2);
    CHECK(held->history.front().entry_key == storage_test::key_of(2).value());
    // Entry 1 removed: the held record knows it was stored, so its miss is an eviction.
    REQUIRE(!c.storage().remove(storage_test::key_of(1).value()));
    CHECK(get(1).explanation.what == cc::miss_explanation::kind::evicted);
    c.flush_statistics();
    CHECK(files_under(root) == 3);
    CHECK(recorded_ids(root) == std::vector<std::uint32_t>{1, 2});
    // After the flush the next miss reads the record back from the directory.
    CHECK(get(3).explanation.changed == std::vector<std::string>{"storage-test-id"});
    c.flush_statistics();
    CHECK(recorded_ids(root) == std::vector<std::uint32_t>{3, 1, 2});
}

TEST_CASE("a held record written at the flush gets its newest entry's time, so that eviction does not take it "
          "for newer than the entries of its run",
          "[storage][records]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    storage_test::cache c{directory_storage(root.string())};
    c.store(storage_test::key_of(1), compile_of(1), {"main", "times", 1});
    fs::path const entry = c.storage().entry_path(storage_test::key_of(1).value());
    auto const entry_time = fs::last_write_time(entry);
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // (the flush well after the entry)
    c.flush_statistics();
    std::vector<fs::path> const packs = packs_under(root);
    REQUIRE(packs.size() == 1); // the record's pack
    // The entry's time, as the pack's: the file system's clock ticks coarsely (a few ms
    // behind the fine clock the entry's time was read from), so within a tick of it.
    auto const after = std::chrono::duration_cast<std::chrono::milliseconds>(fs::last_write_time(packs[0]) - entry_time);
    INFO("the record's pack's file time minus its entry's, ms: " << after.count());
    CHECK(after < std::chrono::milliseconds(100));
}

namespace {

/// The modification time of `path` (the entry's last use, what eviction goes by), in
/// nanoseconds since the epoch; 0 when it cannot be read.
std::int64_t file_time_ns(std::string const& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::int64_t wall_clock_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace

TEST_CASE("directory_storage::write_made_at writes as write() does, its file given the time it is given (now for 0 "
          "or less)",
          "[storage][records]") {
    static_assert(cc::detail::has_write_made_at<directory_storage>::value);
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string());
    std::string out;
    // Half an hour ago (a hit refreshes a use time over an hour old), to the nanosecond.
    std::int64_t const made_ns = (wall_clock_ns() / 1000000000 - 1800) * 1000000000 + 123456789;
    REQUIRE(!s.write_made_at(key_n(1), "made earlier", made_ns));
    std::int64_t const given = file_time_ns(s.entry_path(key_n(1)));
    INFO("the file's time minus the one given, ns: " << given - made_ns);
    CHECK(given - made_ns > -1000000000); // (to the nanosecond where the file system keeps them)
    CHECK(given - made_ns <= 0);
    REQUIRE(s.read(key_n(1), out, 100).status == read_status::found);
    CHECK(out == "made earlier");
    std::vector<cc::stored_entry> listed;
    REQUIRE(!s.list(listed));
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].last_use_s == made_ns / 1000000000); // what the tool and eviction see

    // 0, or less: now, as write() leaves it.
    for (std::int64_t const none : {std::int64_t{0}, std::int64_t{-5}}) {
        std::int64_t const before = wall_clock_ns();
        REQUIRE(!s.write_made_at(key_n(2), "made now", none));
        std::int64_t const after = wall_clock_ns();
        std::int64_t const t = file_time_ns(s.entry_path(key_n(2)));
        INFO("given " << none << ": the file's time is " << (t - before) / 1000000 << " ms after the call began, "
                      << (after - t) / 1000000 << " ms before it ended");
        // (The file system's clock ticks coarsely, a few ms behind the fine one.)
        CHECK(t > before - 100000000);
        CHECK(t <= after);
    }

    // It fails as write() does: a disabled storage, an empty key.
    CHECK(directory_storage().write_made_at(key_n(3), "x", made_ns) == std::errc::invalid_argument);
    CHECK(s.write_made_at(key(), "x", made_ns) == std::errc::invalid_argument);
}

TEST_CASE("a cache holds the records of 256 kernels at most: the store that reaches it writes them",
          "[storage][records]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    storage_test::cache c{directory_storage(root.string())};
    for (std::uint32_t id = 1; id <= 255; ++id)
        c.store(storage_test::key_of(id), compile_of(id), {"k" + std::to_string(id), "many", 1});
    CHECK(files_under(root) == 255); // the entries; their records held
    c.store(storage_test::key_of(256), compile_of(256), {"k256", "many", 1});
    CHECK(files_under(root) == 256 + 1); // the entries and one pack of their records
    CHECK(packs_under(root).size() == 1);
}

TEST_CASE("a forked child explains from the records its parent's cache holds and never writes them",
          "[storage][records][explain]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::entry_info const info{"main", "record-steps", 1};
    storage_test::cache c{directory_storage(root.string())};
    c.get_or_compile<storage_test::artifact>(storage_test::key_of(1), info, [] { return compile_of(1); });
    std::string const child = compile_cache_test::run_in_child([&] {
        auto const r =
            c.get_or_compile<storage_test::artifact>(storage_test::key_of(2), info, [] { return compile_of(2); });
        c.flush_statistics(); // writes the child's own record (entry 2), not its parent's
        return r.explanation.brief() + " | " + std::to_string(recorded_ids(root).size());
    });
    CHECK(child == "storage-test-id changed | 1");
    CHECK(recorded_ids(root) == std::vector<std::uint32_t>{2});
    c.flush_statistics(); // the parent's: merged with the child's
    CHECK(recorded_ids(root) == std::vector<std::uint32_t>{2, 1});
}

#ifdef COMPILE_CACHE_HELPER_storage_worker
TEST_CASE("two processes storing one kernel in turn: each miss is explained, and neither loses the other's entries",
          "[storage][records][explain][processes]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    fs::path const go = dir.path() / "go";
    std::string const worker = COMPILE_CACHE_HELPER_storage_worker;
    // A stores 1 and writes its record, then stores 4 (held) and waits.
    fs::path const held = dir.path() / "held";
    compile_cache_test::child_process a({worker, "record-steps", root.string(), "1", "flush", "4",
                                         "touch=" + held.string(), "wait=" + go.string(), "3"});
    for (int i = 0; i < 10000 && !fs::exists(held); ++i) ::usleep(1000);
    REQUIRE(fs::exists(held));
    // B, meanwhile, misses 2: explained from A's written record; its record is written
    // when it ends, while A still holds its own.
    auto const run = [&](std::vector<std::string> argv) {
        compile_cache_test::process_spec spec;
        spec.argv = std::move(argv);
        return compile_cache_test::run_process(spec);
    };
    auto const b = run({worker, "record-steps", root.string(), "2"});
    INFO(b.describe());
    REQUIRE(b.exited(0));
    CHECK(b.out == "2: storage-test-id changed\n");
    compile_cache_test::write_file(go, "");
    CHECK(a.wait() == 0);
    CHECK(a.output() == "1: new\n4: storage-test-id changed\n3: storage-test-id changed\n");
    // A's record, written last, has B's entry too (merged at A's write), newest first.
    CHECK(recorded_ids(root) == std::vector<std::uint32_t>{3, 2, 4, 1});
    // So B's entry, once removed, misses in a third process as evicted, not changed.
    REQUIRE(!directory_storage(root.string()).remove(storage_test::key_of(2).value()));
    auto const c = run({worker, "record-steps", root.string(), "2", "5"});
    INFO(c.describe());
    CHECK(c.out == "2: evicted\n5: storage-test-id changed\n");
}
#endif

// ---- identity records in packs (detail/record_packs.hpp) ---------------------------

namespace {

/// The identity record of kernel `k<id>` from `packs` (storage_worker record-kernels),
/// as a fresh cache over `root` reads it (a fresh index of the packs).
std::optional<cc::identity_record> packed_record_of(fs::path const& root, std::uint32_t id) {
    storage_test::cache fresh{directory_storage(root.string())};
    return fresh.read_identity_record(cc::kernel_identity({}, "k" + std::to_string(id), "packs"));
}

/// Stores kernel `k<id>` from `packs` under key_of(key_id) through `c`.
cc::miss_explanation store_kernel(storage_test::cache& c, std::uint32_t id, std::uint32_t key_id) {
    return c
        .get_or_compile<storage_test::artifact>(storage_test::key_of(key_id), {"k" + std::to_string(id), "packs", 1},
                                                [key_id] { return compile_of(key_id); })
        .explanation;
}

} // namespace

TEST_CASE("a batch's identity records are one pack: listed as records, read by another process, none per kernel",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    {
        storage_test::cache c{directory_storage(root.string())};
        for (std::uint32_t id = 1; id <= 40; ++id)
            CHECK(store_kernel(c, id, id).what == cc::miss_explanation::kind::new_kernel);
    } // destroyed: its records are written
    // 40 entries and one pack, found through its marker.
    CHECK(files_under(root) == 41);
    REQUIRE(packs_under(root).size() == 1);
    CHECK(markers_under(root) == 1);
    for (std::uint32_t id = 1; id <= 40; ++id) {
        std::optional<cc::identity_record> const r = packed_record_of(root, id);
        REQUIRE(r);
        REQUIRE(r->history.size() == 1);
        CHECK(r->history.front().entry_key == storage_test::key_of(id).value());
    }
    // list() names the records, not the pack.
    std::vector<cc::stored_entry> listed;
    REQUIRE(!directory_storage(root.string()).list(listed));
    std::size_t records = 0, packs = 0;
    for (cc::stored_entry const& e : listed) {
        records += cc::is_identity_record_key(e.k) ? 1 : 0;
        packs += cc::detail::directory_storage_impl::is_pack_key(e.k) ? 1 : 0;
    }
    CHECK(listed.size() == 80);
    CHECK(records == 40);
    CHECK(packs == 0);
    // Another process's misses are explained from the pack; its records go in a second pack.
    {
        storage_test::cache c{directory_storage(root.string())};
        for (std::uint32_t id = 1; id <= 40; ++id)
            CHECK(store_kernel(c, id, 100 + id).what == cc::miss_explanation::kind::changed);
    }
    CHECK(packs_under(root).size() == 2);
    std::optional<cc::identity_record> const r = packed_record_of(root, 7);
    REQUIRE(r);
    REQUIRE(r->history.size() == 2); // the newest version, in the second pack
    CHECK(r->history.front().entry_key == storage_test::key_of(107).value());
}

TEST_CASE("a record file of an earlier release is not read, and a removed record is gone for this process",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    key const rk = cc::identity_record_key("an identity");
    directory_storage s(root.string());
    // As an earlier release wrote a record: a file under the record's key.
    std::string const path = s.entry_path(rk);
    fs::create_directories(fs::path(path).parent_path());
    compile_cache_test::write_file(path, "a record of an earlier release");
    std::string out;
    CHECK(directory_storage(root.string()).read(rk, out, 1 << 20).status == read_status::absent);
    // Written now, it goes in a pack, read by another storage object (another index).
    REQUIRE(!s.write(rk, "a record"));
    REQUIRE(!s.flush_deferred());
    directory_storage other(root.string());
    REQUIRE(other.read(rk, out, 1 << 20).status == read_status::found);
    CHECK(out == "a record");
    CHECK(other.read(rk, out, 3).status == read_status::too_large);
    // Removed: absent for the object that removed it (and the old file is gone); written
    // again, it is back.
    REQUIRE(!other.remove(rk));
    CHECK(!fs::exists(path));
    CHECK(other.read(rk, out, 1 << 20).status == read_status::absent);
    REQUIRE(!other.write(rk, "a record, again"));
    REQUIRE(!other.flush_deferred());
    REQUIRE(other.read(rk, out, 1 << 20).status == read_status::found);
    CHECK(out == "a record, again");
}

TEST_CASE("a pack whose index is damaged is not read: its records are absent, the other packs' are read",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    {
        storage_test::cache c{directory_storage(root.string())};
        store_kernel(c, 1, 1);
        c.flush_statistics();
        store_kernel(c, 2, 2);
    }
    std::vector<fs::path> packs = packs_under(root);
    REQUIRE(packs.size() == 2);
    // The pack holding k1's record: flip a byte of its slot (the index's CRC then fails).
    std::sort(packs.begin(), packs.end(), [](fs::path const& a, fs::path const& b) {
        return a.filename() < b.filename(); // (named by the time it was written)
    });
    std::string bytes = compile_cache_test::read_file(packs[0]);
    REQUIRE(bytes.size() > 60);
    bytes[20] = static_cast<char>(bytes[20] ^ 0x40);
    compile_cache_test::write_file(packs[0], bytes);
    std::vector<cc::directory_layout::pack_slot> slots;
    std::string why;
    CHECK(!cc::directory_layout::read_pack_slots(packs[0].string(), slots, why));
    CHECK(why.find("not a sound pack") != std::string::npos);
    CHECK(!packed_record_of(root, 1));
    REQUIRE(packed_record_of(root, 2));
    // Its kernel's next miss is new (not explained), and the store records it again.
    storage_test::cache c{directory_storage(root.string())};
    CHECK(store_kernel(c, 1, 11).what == cc::miss_explanation::kind::new_kernel);
    CHECK(store_kernel(c, 2, 12).what == cc::miss_explanation::kind::changed);
    c.flush_statistics();
    REQUIRE(packed_record_of(root, 1));
}

TEST_CASE("small packs are merged: a reader whose pack was merged away finds the record in the new one",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_storage reader(root.string());
    std::string out;
    {
        storage_test::cache c{directory_storage(root.string())};
        store_kernel(c, 1, 1);
        c.flush_statistics();
        // The reader indexes the first pack.
        REQUIRE(reader.read(cc::identity_record_key(cc::kernel_identity({}, "k1", "packs")), out, 1 << 20).status ==
                read_status::found);
        for (std::uint32_t id = 2; id <= 40; ++id) {
            store_kernel(c, id, id);
            c.flush_statistics(); // a pack of one record each
        }
    }
    std::size_t const packs = packs_under(root).size();
    INFO("packs left of 40 written: " << packs);
    CHECK(packs <= cc::detail::directory_storage_impl::packs_merged_above + 1);
    CHECK(packs < 40);
    CHECK(markers_under(root) >= packs);
    // The first pack was merged into a newer one: the reader looks again and finds it.
    REQUIRE(reader.read(cc::identity_record_key(cc::kernel_identity({}, "k1", "packs")), out, 1 << 20).status ==
            read_status::found);
    for (std::uint32_t id = 1; id <= 40; ++id) {
        INFO("kernel k" << id);
        CHECK(packed_record_of(root, id));
    }
    // A fresh look unlinks the markers of packs that are gone.
    CHECK(markers_under(root) == packs);
}

namespace {

/// Writes through `s` a pack whose name starts with `time`, holding a record (at version 5,
/// its bytes "record of <kernel>") per kernel, and its marker under `root`: as another
/// process's batch or merge leaves one.
key put_pack(directory_storage& s, fs::path const& root, std::uint64_t time, std::vector<std::string> const& kernels) {
    namespace impl = cc::detail::directory_storage_impl;
    unsigned char bytes[cc::detail::record_key_size] = {};
    cc::detail::store_be<std::uint64_t>(bytes, time);
    bytes[cc::detail::record_key_size - 1] = cc::detail::pack_key_marker;
    key const name(bytes, cc::detail::record_key_size);
    std::vector<std::string> texts;
    for (std::string const& k : kernels) texts.push_back("record of " + k);
    std::vector<impl::packed_record> records;
    for (std::size_t i = 0; i < kernels.size(); ++i)
        records.push_back({cc::identity_record_key(kernels[i]), 5, texts[i]});
    CHECK(!s.write(name, impl::encode_pack(records)));
    fs::create_directories(root / std::string(cc::directory_layout::packs_folder_name));
    fs::create_symlink(s.entry_path(name), root / std::string(cc::directory_layout::packs_folder_name) / name.hex());
    return name;
}

/// What process B does while process A's merge has chosen its packs and not read them yet
/// (after_pack_merge_planned_for_testing): it indexes the packs written since its last look,
/// fifteen new ones of one record each among them, then writes a record, merging the
/// sixteen smallest packs it knows (those fifteen and X) into its pack.
struct merge_meanwhile {
    static inline directory_storage* b = nullptr;
    static inline fs::path const* root = nullptr;
    static void run() {
        cc::detail::directory_storage_impl::after_pack_merge_planned_for_testing = nullptr;
        for (std::uint64_t i = 0; i < 15; ++i) put_pack(*b, *root, 3000 + i, {"g" + std::to_string(i)});
        b->look_at_records_now();
        CHECK(!b->write(cc::identity_record_key("b's"), "b's record"));
        CHECK(!b->flush_deferred());
    }
};

} // namespace

TEST_CASE("processes merging two copies of a record at once keep it: a copy at the newest version is kept",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_storage writer(root.string());
    // Pack X holds the record; fifteen packs hold three others each. Process B indexes them.
    key const x = put_pack(writer, root, 1000, {"r"});
    for (std::uint64_t i = 0; i < 15; ++i) {
        std::string const f = "f" + std::to_string(i);
        put_pack(writer, root, 1100 + i, {f + "a", f + "b", f + "c"});
    }
    directory_storage b(root.string());
    b.look_at_records_now();
    // Pack Y, newer, holds a copy of it, as a merge of X that has not removed X yet leaves.
    key const y = put_pack(writer, root, 2000, {"r", "y"});
    // Process A indexes the seventeen packs and merges X, Y and fourteen others. Once it has
    // chosen them, B merges X (whose record it knows in Y too) and its own fifteen new packs.
    directory_storage a(root.string());
    REQUIRE(!a.write(cc::identity_record_key("a's"), "a's record"));
    merge_meanwhile::b = &b;
    merge_meanwhile::root = &root;
    cc::detail::directory_storage_impl::after_pack_merge_planned_for_testing = merge_meanwhile::run;
    REQUIRE(!a.flush_deferred());
    cc::detail::directory_storage_impl::after_pack_merge_planned_for_testing = nullptr;
    // Both merges ran: X and Y are gone. The record is in one of the new packs.
    CHECK(!fs::exists(writer.entry_path(x)));
    CHECK(!fs::exists(writer.entry_path(y)));
    std::string out;
    directory_storage reader(root.string());
    REQUIRE(reader.read(cc::identity_record_key("r"), out, 1 << 20).status == read_status::found);
    CHECK(out == "record of r");
    std::vector<std::string> others{"y", "a's", "b's"};
    for (std::uint64_t i = 0; i < 15; ++i) {
        others.push_back("g" + std::to_string(i));
        for (char const* part : {"a", "b", "c"}) others.push_back("f" + std::to_string(i) + part);
    }
    for (std::string const& k : others) {
        INFO("record " << k);
        CHECK(reader.read(cc::identity_record_key(k), out, 1 << 20).status == read_status::found);
    }
}

#ifdef COMPILE_CACHE_HELPER_storage_worker
TEST_CASE("two processes writing small packs at once, merging them, leave every kernel's record",
          "[storage][records][packs][processes]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    fs::path const go = dir.path() / "go";
    std::string const worker = COMPILE_CACHE_HELPER_storage_worker;
    compile_cache_test::child_process a({worker, "record-kernels", root.string(), "1", "150", "3", go.string()});
    compile_cache_test::child_process b({worker, "record-kernels", root.string(), "1001", "150", "3", go.string()});
    compile_cache_test::write_file(go, "");
    CHECK(a.wait() == 0);
    CHECK(b.wait() == 0);
    CHECK(a.output() == "stored=150\n");
    CHECK(b.output() == "stored=150\n");
    std::size_t const packs = packs_under(root).size();
    INFO("packs left of 100 written: " << packs);
    CHECK(packs < 50);
    for (std::uint32_t first : {1u, 1001u})
        for (std::uint32_t id = first; id < first + 150; ++id) {
            INFO("kernel k" << id);
            std::optional<cc::identity_record> const r = packed_record_of(root, id);
            REQUIRE(r);
            CHECK(r->history.front().entry_key == storage_test::key_of(id).value());
        }
    CHECK(files_under(root) == 300 + packs);
}
#endif

TEST_CASE("a process's index of record packs holds 2^18 records at most, the newest packs' first",
          "[storage][records][packs]") {
    namespace impl = cc::detail::directory_storage_impl;
    impl::record_pack_index ix;
    std::size_t const per_pack = impl::pack_max_records;
    std::size_t const packs = impl::pack_index_max_records / per_pack + 2;
    auto record_key = [](std::uint32_t n) {
        unsigned char bytes[cc::detail::record_key_size] = {};
        cc::detail::store_le<std::uint64_t>(bytes, 0x9e3779b97f4a7c15ull * (n + 1)); // (distinct fingerprints)
        bytes[cc::detail::record_key_size - 1] = cc::detail::record_key_marker;
        return key(bytes, cc::detail::record_key_size);
    };
    for (std::size_t p = 0; p < packs; ++p) {
        unsigned char name[cc::detail::record_key_size] = {};
        cc::detail::store_be<std::uint64_t>(name, 1000 + p); // written in this order
        name[cc::detail::record_key_size - 1] = cc::detail::pack_key_marker;
        std::vector<impl::pack_slot> slots;
        for (std::size_t i = 0; i < per_pack; ++i)
            slots.push_back({record_key(static_cast<std::uint32_t>(p * per_pack + i)), 1, 64u, 10u});
        ix.add(key(name, cc::detail::record_key_size), slots);
        ix.bound();
    }
    CHECK(ix.records <= impl::pack_index_max_records);
    CHECK(ix.records == (packs - 2) * per_pack);
    CHECK(ix.left_out.size() == 2);
    // The two oldest packs are left out; the newest is indexed.
    CHECK(!ix.find(impl::record_pack_index::fingerprint(record_key(0))));
    CHECK(!ix.find(impl::record_pack_index::fingerprint(record_key(static_cast<std::uint32_t>(2 * per_pack - 1)))));
    CHECK(ix.find(impl::record_pack_index::fingerprint(record_key(static_cast<std::uint32_t>(2 * per_pack)))));
    CHECK(ix.find(impl::record_pack_index::fingerprint(record_key(static_cast<std::uint32_t>(packs * per_pack - 1)))));
    // Every record indexed is answered, after the packs dropped and the lookups' filter made
    // again on the way; none of the dropped packs' records is.
    std::size_t found = 0, wrongly = 0;
    for (std::size_t n = 0; n < packs * per_pack; ++n) {
        bool const answered = ix.find(impl::record_pack_index::fingerprint(record_key(static_cast<std::uint32_t>(n))))
                                  .has_value();
        if (n >= 2 * per_pack)
            found += answered ? 1 : 0;
        else
            wrongly += answered ? 1 : 0;
    }
    CHECK(found == (packs - 2) * per_pack);
    CHECK(wrongly == 0);
}

TEST_CASE("a process's index of record packs answers a record's newest version, and an older one once that pack "
          "is gone",
          "[storage][records][packs]") {
    namespace impl = cc::detail::directory_storage_impl;
    impl::record_pack_index ix;
    key const rk = cc::identity_record_key("a kernel");
    auto pack_name = [](std::uint64_t time) {
        unsigned char bytes[cc::detail::record_key_size] = {};
        cc::detail::store_be<std::uint64_t>(bytes, time);
        bytes[cc::detail::record_key_size - 1] = cc::detail::pack_key_marker;
        return key(bytes, cc::detail::record_key_size);
    };
    key const older = pack_name(1), newer = pack_name(2);
    std::uint64_t const fp = impl::record_pack_index::fingerprint(rk);
    ix.add(newer, {{rk, 200, 64u, 20u}});
    ix.add(older, {{rk, 100, 64u, 10u}}); // indexed later, but an older version
    std::optional<impl::record_location> at = ix.find(fp);
    REQUIRE(at);
    CHECK(at->pack == newer);
    CHECK(at->length == 20u);
    ix.drop(newer); // evicted, say
    at = ix.find(fp);
    REQUIRE(at);
    CHECK(at->pack == older);
    CHECK(at->length == 10u);
    ix.drop(older);
    CHECK(!ix.find(fp));
    CHECK(ix.records == 0);
    CHECK(ix.newest_of.empty());
}

TEST_CASE("records are not written where no marker can be: the batch fails, no pack is left, and the packs there "
          "stay",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    key const first = cc::identity_record_key("first"), second = cc::identity_record_key("second");
    {
        directory_storage s(root.string());
        REQUIRE(!s.write(first, "the first record"));
        REQUIRE(!s.flush_deferred());
    }
    // The markers' folder replaced by a file: a pack written now would be one no reader finds.
    fs::path const markers = root / std::string(cc::directory_layout::packs_folder_name);
    fs::remove_all(markers);
    compile_cache_test::write_file(markers, "not a folder");
    std::vector<fs::path> const before = packs_under(root);
    REQUIRE(before.size() == 1);
    directory_storage s(root.string());
    REQUIRE(!s.write(second, "the second record")); // held
    CHECK(s.flush_deferred()); // the batch's failure is said
    CHECK(packs_under(root) == before);
    std::string out;
    CHECK(directory_storage(root.string()).read(second, out, 1 << 20).status == read_status::absent);
    // A record over the bound is refused at once, never packed with others.
    CHECK(s.write(first, std::string(cc::detail::record_max_size + 1, 'r')) == std::errc::value_too_large);
}

TEST_CASE("a record removed through one storage object is hidden from it alone, until a newer version, and its "
          "merges keep the others' records",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    key const rk = cc::identity_record_key("a kernel");
    std::string out;
    directory_storage remover(root.string());
    {
        directory_storage writer(root.string());
        REQUIRE(!writer.write(rk, "version one"));
        REQUIRE(!writer.flush_deferred());
    }
    REQUIRE(remover.read(rk, out, 1 << 20).status == read_status::found);
    REQUIRE(!remover.remove(rk));
    CHECK(remover.read(rk, out, 1 << 20).status == read_status::absent);
    CHECK(directory_storage(root.string()).read(rk, out, 1 << 20).status == read_status::found); // others: there
    {
        directory_storage writer(root.string()); // another process writes a newer version
        REQUIRE(!writer.write(rk, "version two"));
        REQUIRE(!writer.flush_deferred());
    }
    remover.look_at_records_now();
    REQUIRE(remover.read(rk, out, 1 << 20).status == read_status::found);
    CHECK(out == "version two");
    // Hidden again, then merged away by the remover's own writes: still every other reader's.
    REQUIRE(!remover.remove(rk));
    for (std::uint32_t i = 0; i < 30; ++i) {
        REQUIRE(!remover.write(cc::identity_record_key("other " + std::to_string(i)), "r"));
        REQUIRE(!remover.flush_deferred()); // a pack each: merges
    }
    CHECK(packs_under(root).size() < 30);
    REQUIRE(directory_storage(root.string()).read(rk, out, 1 << 20).status == read_status::found);
    CHECK(out == "version two");
}

TEST_CASE("a pack is at most a sixteenth of the size limit: a batch's records are split, and the newest survive "
          "a small limit",
          "[storage][records][packs]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::directory_options o;
    o.max_size = 256 << 10;
    directory_storage s(root.string(), o);
    for (std::uint32_t i = 0; i < 200; ++i)
        REQUIRE(!s.write(cc::identity_record_key("k" + std::to_string(i)), std::string(2000, 'r')));
    REQUIRE(!s.flush_deferred());
    for (fs::path const& p : packs_under(root)) CHECK(fs::file_size(p) <= (256u << 10) / 16 + 4096);
    std::string out;
    std::size_t found = 0;
    directory_storage reader(root.string());
    for (std::uint32_t i = 0; i < 200; ++i)
        found += reader.read(cc::identity_record_key("k" + std::to_string(i)), out, 1 << 20).status ==
                         read_status::found
                     ? 1
                     : 0;
    INFO("records left of 200 (2,000 bytes each) under a 256 KiB limit: " << found);
    CHECK(found > 50);
}
