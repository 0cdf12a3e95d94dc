// directory_storage's size limit: the ledger, least-recently-used eviction (in one
// step for a small cache, in bounded steps for a large one), the use-time refresh on
// a hit, prune() and clear(), stale temp files, and the PREFIX_MAX_SIZE setting.
#include "catch2_compat.hpp"
#include "support/storage_model.hpp"
#include "support/posix.hpp"

#include <compile_cache/storage/directory/directory_storage.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <system_error>
#include <string>
#include <vector>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using cc::directory_options;
using cc::directory_storage;
using cc::key;
using cc::read_status;
using compile_cache_test::read_file;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;
using storage_test::payload_of;

key key_n(std::uint32_t n) { return storage_test::key_of(n).value(); }

std::int64_t now_s() { return static_cast<std::int64_t>(::time(nullptr)); }

void set_mtime(fs::path const& p, std::int64_t seconds) {
    struct timespec times[2];
    times[0].tv_sec = static_cast<time_t>(seconds);
    times[0].tv_nsec = 0;
    times[1] = times[0];
    REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

struct timespec mtime_of(fs::path const& p) {
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    return st.st_mtim;
}

bool same_time(struct timespec a, struct timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

/// Entries under `root` (all-hex names in two-hex-digit folders): name -> size.
struct disk_usage {
    std::uint64_t entries = 0, bytes = 0, blocks_bytes = 0, temps = 0;
    std::set<std::string> names;
};
disk_usage usage_of(fs::path const& root) {
    disk_usage u;
    if (!fs::exists(root)) return u;
    for (auto const& folder : fs::directory_iterator(root)) {
        if (!folder.is_directory()) continue;
        for (auto const& e : fs::directory_iterator(folder.path())) {
            std::string const name = e.path().filename().string();
            struct stat st {};
            if (::lstat(e.path().c_str(), &st) != 0) continue;
            if (name.rfind(".tmp-", 0) == 0) {
                ++u.temps;
                continue;
            }
            ++u.entries;
            u.bytes += static_cast<std::uint64_t>(st.st_size);
            u.blocks_bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
            u.names.insert(name);
        }
    }
    return u;
}

/// A name the library gives a store's temp file: `.tmp-` and 32 lower-case hex digits.
std::string temp_name(char digit) { return ".tmp-" + std::string(32, digit); }

/// Names that start as the library's temp files do but that it cannot have made: a
/// user's files, which no cleanup may remove.
std::vector<std::string> const& users_temp_like_names() {
    static std::vector<std::string> const names = {
        ".tmp-mywork", ".tmp-", ".tmp-" + std::string(31, 'a'), ".tmp-" + std::string(33, 'a'),
        ".tmp-" + std::string(32, 'A'), ".tmp-" + std::string(31, 'a') + "g"};
    return names;
}

/// True when `dir` is writable and has room for 100,000 small files (a container's
/// /dev/shm is often 64 MB).
bool roomy(char const* dir) {
    struct statvfs st {};
    if (::access(dir, W_OK) != 0 || ::statvfs(dir, &st) != 0) return false;
    return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize >= (std::uint64_t{1} << 30) && st.f_favail >= 200000;
}

/// For the tests that make thousands of files: a directory in memory (tmpfs at
/// /dev/shm) when there is a roomy one, so that they take seconds, not minutes, on a
/// slow or busy disk; what they check does not depend on the file system.
class bulk_dir {
public:
    bulk_dir() {
        char const* const tmp = std::getenv("TMPDIR");
        std::string pattern = roomy("/dev/shm") ? "/dev/shm" : (tmp && *tmp ? tmp : "/tmp");
        pattern += "/compile_cache-bulk-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
        path_ = pattern;
    }
    bulk_dir(bulk_dir const&) = delete;
    bulk_dir& operator=(bulk_dir const&) = delete;
    ~bulk_dir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    fs::path const& path() const noexcept { return path_; }

private:
    fs::path path_;
};

directory_options limited(std::uint64_t max_size) {
    directory_options o;
    o.max_size = max_size;
    return o;
}

/// Entries 0..count-1 (payload_of(i, 0, size)) stored under `root` with no size limit,
/// entry i last used at `t0 + i` seconds.
void store_aged(fs::path const& root, std::uint32_t count, std::size_t size, std::int64_t t0) {
    directory_storage unlimited(root.string(), limited(0));
    for (std::uint32_t i = 0; i < count; ++i) {
        REQUIRE(!unlimited.write(key_n(i), payload_of(i, 0, size)));
        set_mtime(unlimited.entry_path(key_n(i)), t0 + i);
    }
}

} // namespace

TEST_CASE("parse_byte_size: bytes, or K, M, G in powers of 1024", "[storage][eviction]") {
    using cc::parse_byte_size;
    CHECK(parse_byte_size("0") == 0u);
    CHECK(parse_byte_size("1048576") == 1048576u);
    CHECK(parse_byte_size("48K") == 48u * 1024);
    CHECK(parse_byte_size("48k") == 48u * 1024);
    CHECK(parse_byte_size("500M") == 500ull << 20);
    CHECK(parse_byte_size("2G") == 2ull << 30);
    CHECK(parse_byte_size("2GiB") == 2ull << 30);
    CHECK(parse_byte_size("64MB") == 64ull << 20);
    CHECK(parse_byte_size(" 3K ") == 3072u);
    for (char const* bad : {"", "K", "-1", "1.5G", "12Q", "1T", "10 M", "0x10", "1GG", "18446744073709551616",
                            "17179869184G"})
        CHECK_FALSE(parse_byte_size(bad).has_value());
}

TEST_CASE("directory_options from the environment, a bad value is one diagnostic and the default",
          "[storage][eviction]") {
    std::vector<std::string> lines;
    auto report = [&](std::string const& line) { lines.push_back(line); };

    compile_cache_test::scoped_settings env("CCSTORETEST", {"_DIR", "_LOG", "_MAX_SIZE", "_DURABILITY", "_SHARED"});
    directory_options o = cc::directory_options_from_env("CCSTORETEST", report);
    CHECK(o.max_size == (1ull << 30));
    CHECK(o.sync == cc::durability::none);
    CHECK(o.access == cc::sharing::owner_only);
    CHECK(lines.empty());

    env.set("_MAX_SIZE", "48K");
    env.set("_DURABILITY", "Full");
    env.set("_SHARED", "1");
    o = cc::directory_options_from_env("CCSTORETEST", report);
    CHECK(o.max_size == 48u * 1024);
    CHECK(o.sync == cc::durability::full);
    CHECK(o.access == cc::sharing::group);
    CHECK(o.file_mode == 0660u);
    CHECK(lines.empty());

    env.set("_MAX_SIZE", "lots");
    env.set("_DURABILITY", "none");
    ::unsetenv("CCSTORETEST_SHARED");
    o = cc::directory_options_from_env("CCSTORETEST", report);
    CHECK(o.max_size == (1ull << 30));
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("CCSTORETEST_MAX_SIZE=\"lots\"") != std::string::npos);
    CHECK(lines[0].find("1G") != std::string::npos);

    SECTION("through basic_cache::from_env, with no logger: one line on stderr") {
        temp_dir dir;
        env.set("_DIR", dir.path().c_str());
        ::unsetenv("CCSTORETEST_LOG");
        env.set("_MAX_SIZE", "12Q");
        compile_cache_test::captured_stderr captured(dir.path() / "stderr.txt");
        auto c = storage_test::cache::from_env("CCSTORETEST");
        std::string const text = captured.text();
        CHECK(std::count(text.begin(), text.end(), '\n') == 1);
        CHECK(text.find("CCSTORETEST_MAX_SIZE=\"12Q\" is not a size") != std::string::npos);
        CHECK(c.enabled());
        CHECK(c.storage().options().max_size == (1ull << 30));

        env.set("_MAX_SIZE", "2M");
        auto c2 = storage_test::cache::from_env("CCSTORETEST");
        CHECK(c2.storage().options().max_size == (2u << 20));
    }
}

TEST_CASE("a 1 MiB limit over 300 entries of 8 KiB keeps the most recently used, all loadable",
          "[storage][eviction]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    std::uint64_t const limit = 1u << 20;
    directory_storage s(root.string(), limited(limit));
    std::int64_t const t0 = now_s() - 100000;
    std::string out;
    // A store's cleanup is a step of bounded work (store_cleanup_budget), made by the
    // store that takes the cache over its limit and then by one store in a batch: a
    // survey of the 256 folders and ~130 entries fits in one step here, so the cache is
    // over its limit by a store's entry or two at most. So the limit is kept within a
    // bounded overshoot, never more.
    auto const& budget = cc::detail::directory_storage_impl::store_cleanup_budget;
    std::uint64_t const survey_stores = (256 + 160) / budget.names + 1;
    std::uint64_t const overshoot = (survey_stores + 1) * 8192;
    std::uint64_t peak = 0;

    for (std::uint32_t i = 0; i < 300; ++i) {
        REQUIRE(!s.write(key_n(i), payload_of(i, 0, 8192)));
        set_mtime(s.entry_path(key_n(i)), t0 + i); // the order of use: i, oldest first
        if (i == 100) {
            // A hit on an old entry makes it the most recently used.
            REQUIRE(s.read(key_n(3), out, 1 << 20).status == read_status::found);
            CHECK(mtime_of(s.entry_path(key_n(3))).tv_sec >= now_s() - 5);
        }
        disk_usage const u = usage_of(root);
        INFO("after store " << i << ": " << u.entries << " entries, " << u.bytes << " bytes");
        REQUIRE(u.bytes <= limit + overshoot);
        REQUIRE(u.blocks_bytes <= limit + overshoot);
        REQUIRE(u.temps == 0);
        peak = std::max(peak, u.bytes);
        // Not after every store: accounted_size() writes the object's ledger batch,
        // and the limit must hold with the batch unwritten too.
        if (i % 37 == 0) REQUIRE(s.accounted_size() == u.entries * 8192);
    }
    CHECK(peak >= limit - limit / 10); // the cache did reach its limit: the bound above was tested

    std::vector<std::uint32_t> kept;
    for (std::uint32_t i = 0; i < 300; ++i)
        if (fs::exists(s.entry_path(key_n(i)))) kept.push_back(i);
    INFO("kept " << kept.size());
    // 128 entries fill 1 MiB; a cleanup goes under 90% of it.
    CHECK(kept.size() >= 100);
    CHECK(kept.size() * 8192 <= limit + overshoot);
    REQUIRE(std::find(kept.begin(), kept.end(), 3u) != kept.end());
    // The others are the last ones stored: oldest-use first went first, to within the
    // stores made during one sweep over the folders (an entry stored in a folder the
    // sweep has passed is not among the use times the next sweep's cutoff is found
    // from, so it may outlive a slightly newer one): a pass is (256 folders + ~130
    // entries) / 32 names a store, 13 stores; two passes of slack.
    std::uint32_t const slack = 2 * static_cast<std::uint32_t>(survey_stores);
    for (auto i : kept) {
        INFO("kept " << i);
        if (i != 3) CHECK(i + kept.size() + slack >= 300);
    }
    for (std::uint32_t i = 300 - 90; i < 300; ++i) CHECK(fs::exists(s.entry_path(key_n(i))));
    for (auto i : kept) {
        REQUIRE(s.read(key_n(i), out, 1 << 20).status == read_status::found);
        CHECK(out == payload_of(i, 0, 8192));
    }
    CHECK(s.counters().evicted == 300 - kept.size());
    CHECK(s.counters().evicted_bytes == (300 - kept.size()) * 8192);
}

TEST_CASE("a store does a bounded amount of eviction work, the rest is left to the next stores or prune()",
          "[storage][eviction]") {
    bulk_dir dir;
    fs::path const root = dir.path() / "cache";
    constexpr std::uint32_t n = 3000;
    std::int64_t const t0 = now_s() - 100000;
    {
        directory_storage unlimited(root.string(), limited(0));
        for (std::uint32_t i = 0; i < n; ++i) {
            REQUIRE(!unlimited.write(key_n(i), payload_of(i, 0, 100)));
            set_mtime(unlimited.entry_path(key_n(i)), t0 + i);
        }
        REQUIRE(!unlimited.prune().error); // the ledger exact
    }
    // Half the room the cache takes: a store used to survey and evict all 1,650
    // entries over 90% of it at once. Now the store that takes it over, then one store
    // per ledger batch (here every 24th: a batch ends at 1/64 of the limit), does one
    // step of at most budget.unlinks evictions; the others none.
    std::uint64_t const limit = n / 2 * 4096ull;
    directory_storage s(root.string(), limited(limit));
    auto const& budget = cc::detail::directory_storage_impl::store_cleanup_budget;
    std::uint64_t evicted_before = 0, most = 0, stores = 0;
    for (; stores < 60; ++stores) {
        REQUIRE(!s.write(key_n(n + static_cast<std::uint32_t>(stores)), "new"));
        std::uint64_t const evicted = s.counters().evicted;
        INFO("store " << stores << " evicted " << evicted - evicted_before);
        REQUIRE(evicted - evicted_before <= budget.unlinks);
        most = std::max(most, evicted - evicted_before);
        evicted_before = evicted;
    }
    CHECK(most == budget.unlinks);                     // stores do evict...
    CHECK(s.counters().cleanup_steps >= 2);            // ...one in a batch...
    CHECK(s.counters().cleanup_steps <= stores / 20);  // ...not every store...
    CHECK(usage_of(root).entries * 4096 > limit);      // ...and the rest waits
    // prune() does the rest at once, oldest first.
    cc::cleanup_result const r = s.prune();
    CHECK(!r.error);
    disk_usage const u = usage_of(root);
    CHECK(u.entries * 4096 <= limit - limit / 10);
    CHECK(r.entries == u.entries);
    CHECK(s.accounted_size() == u.entries * 4096);
    std::string out;
    for (std::uint32_t j = 0; j < stores; ++j) CHECK(s.read(key_n(n + j), out, 100).status == read_status::found);
    CHECK(s.read(key_n(0), out, 1000).status == read_status::absent);
    CHECK(s.read(key_n(n - 1), out, 1000).status == read_status::found);
}

TEST_CASE("a hit refreshes the use time at most once an hour", "[storage][eviction]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string());
    key const k = key_n(1);
    REQUIRE(!s.write(k, "value"));
    fs::path const p = s.entry_path(k);
    std::string out;

    struct timespec const fresh = mtime_of(p);
    REQUIRE(s.read(k, out, 100).status == read_status::found);
    CHECK(same_time(mtime_of(p), fresh)); // a fresh hit changes nothing

    set_mtime(p, now_s() - 50);
    struct timespec const recent = mtime_of(p);
    REQUIRE(s.read(k, out, 100).status == read_status::found);
    CHECK(same_time(mtime_of(p), recent));

    set_mtime(p, now_s() - 3500);
    struct timespec const within_the_hour = mtime_of(p);
    REQUIRE(s.read(k, out, 100).status == read_status::found);
    CHECK(same_time(mtime_of(p), within_the_hour));

    set_mtime(p, now_s() - 3700);
    REQUIRE(s.read(k, out, 100).status == read_status::found);
    CHECK(mtime_of(p).tv_sec >= now_s() - 5);
    CHECK(out == "value");
}

TEST_CASE("a large cache over its limit is cleaned over several stores, oldest first",
          "[storage][eviction]") {
    bulk_dir dir;
    fs::path const root = dir.path() / "cache";
    constexpr std::uint32_t n = 6000;
    std::int64_t const t0 = now_s() - 100000;
    {
        directory_storage unlimited(root.string(), limited(0));
        for (std::uint32_t i = 0; i < n; ++i) {
            REQUIRE(!unlimited.write(key_n(i), payload_of(i, 0, 100)));
            set_mtime(unlimited.entry_path(key_n(i)), t0 + i);
        }
        REQUIRE(unlimited.accounted_size() == n * 4096ull);
    }
    std::uint64_t const limit = 5600 * 4096ull;
    directory_storage s(root.string(), limited(limit));
    // One store cannot clean 6000 entries within its budget: the cleanup takes
    // several steps (one per batch of stores: a survey, then a sweep evicting two
    // entries per store of the batch, one more than each adds), and the cache comes
    // under 90% of the limit within a bounded number of stores.
    auto const& budget = cc::detail::directory_storage_impl::store_cleanup_budget;
    std::uint32_t const survey = static_cast<std::uint32_t>((n + 256) / budget.names + 1);
    // A step per batch of stores (ledger_batch_stores, or fewer: 1/64 of the limit).
    std::uint32_t const bound =
        4 * cc::detail::directory_storage_impl::ledger_batch_stores + 4 * (survey + (n - 5600 + survey));
    std::uint32_t stores = 0;
    while (s.accounted_size() > limit && stores < bound) {
        REQUIRE(!s.write(key_n(n + stores), "new"));
        ++stores;
    }
    INFO("stores " << stores << " (bound " << bound << "), cleanup steps " << s.counters().cleanup_steps);
    CHECK(stores > survey);
    CHECK(stores < bound);
    CHECK(s.counters().cleanup_steps >= 2);
    disk_usage const u = usage_of(root);
    CHECK(u.entries * 4096 <= limit);
    CHECK(s.accounted_size() == u.entries * 4096);

    // The oldest went (a sweep unlinks what was used at or before a cutoff the survey
    // found), the newer old ones and every new one stayed.
    // The cache is under its limit once the sweep has passed part of the folders: the
    // oldest in those went (some of the 100 oldest, at least), none of the newer half.
    std::string out;
    std::uint32_t oldest_gone = 0;
    for (std::uint32_t i = 0; i < 100; ++i) oldest_gone += s.read(key_n(i), out, 1000).status == read_status::absent;
    CHECK(oldest_gone > 0);
    for (std::uint32_t i = n - 3000; i < n; ++i) {
        INFO("entry " << i);
        REQUIRE(s.read(key_n(i), out, 1000).status == read_status::found);
        REQUIRE(out == payload_of(i, 0, 100));
    }
    for (std::uint32_t j = 0; j < stores; ++j) CHECK(s.read(key_n(n + j), out, 100).status == read_status::found);
}

TEST_CASE("the ledger follows stores, replacements and removals, and heals", "[storage][eviction]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_storage s(root.string());
    CHECK(s.accounted_size() == 0);
    for (std::uint32_t i = 0; i < 20; ++i) REQUIRE(!s.write(key_n(i), "small"));
    CHECK(s.accounted_size() == 20 * 4096);
    REQUIRE(!s.write(key_n(0), std::string(10000, 'x'))); // replaces 1 block by 3
    CHECK(s.accounted_size() == 22 * 4096);
    REQUIRE(!s.remove(key_n(1)));
    CHECK(s.accounted_size() == 21 * 4096);
    REQUIRE(!s.remove(key_n(1))); // absent: nothing changes
    CHECK(s.accounted_size() == 21 * 4096);
    REQUIRE(!s.write(key_n(30), std::string_view())); // an empty entry still takes a block
    CHECK(s.accounted_size() == 22 * 4096);

    SECTION("garbage in the ledger is a fresh ledger; prune() makes it exact") {
        write_file(root / ".cc-stats", std::string(5000, '\xff'));
        CHECK(s.accounted_size() == 0);
        auto const r = s.prune();
        CHECK(!r.error);
        CHECK(r.entries == 20);
        CHECK(r.bytes == 22 * 4096);
        CHECK(s.accounted_size() == 22 * 4096);
    }
    SECTION("a lost ledger: each folder is recounted at its next store") {
        fs::remove(root / ".cc-stats");
        key const k = key_n(0);
        REQUIRE(!s.write(k, std::string(10000, 'y'))); // recounts k's folder
        std::uint64_t expected = 0;
        std::string const folder = k.hex().substr(0, 2);
        for (auto const& e : fs::directory_iterator(root / folder))
            expected += cc::detail::directory_storage_impl::accounted_size(fs::file_size(e.path()));
        CHECK(s.accounted_size() == expected);
    }
    SECTION("a symlink planted at the ledger is not followed") {
        fs::path const victim = dir.path() / "victim";
        write_file(victim, "keep");
        fs::remove(root / ".cc-stats");
        fs::create_symlink(victim, root / ".cc-stats");
        REQUIRE(!s.write(key_n(40), "still stores"));
        CHECK(read_file(victim) == "keep");
        std::string out;
        CHECK(s.read(key_n(40), out, 100).status == read_status::found);
    }
}

TEST_CASE("a ledger far above what the disk holds does not make stores evict below the limit's target",
          "[storage][eviction]") {
    // Processes killed between their evictions and the ledger's update leave it above
    // what is there until the folders' hourly recount; the stores meanwhile evict only
    // what brings the entries they see under the target.
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_options o;
    o.max_size = 1 << 20;
    directory_storage s(root.string(), o);
    std::string const payload(40 * 1024, 'e');
    std::int64_t const t0 = now_s() - 1000;
    auto const store = [&](std::uint32_t i) { // use times one second apart, i's order
        REQUIRE(!s.write(key_n(i), payload));
        if (fs::exists(s.entry_path(key_n(i)))) set_mtime(s.entry_path(key_n(i)), t0 + i);
    };
    std::uint32_t next = 0;
    for (; next < 40; ++next) store(next); // over the limit: eviction has run
    REQUIRE(usage_of(root).bytes <= o.max_size);
    {
        namespace impl = cc::detail::directory_storage_impl;
        int const fd = impl::open_ledger((root / ".cc-stats").string(), 0600, -1);
        REQUIRE(fd >= 0);
        impl::ledger_slots slots;
        REQUIRE(impl::read_ledger(fd, slots));
        slots[0].bytes += std::uint64_t{64} << 20; // 64 MiB that are not there,
        slots[0].counted_at = now_s();             // in a folder counted just now
        REQUIRE(impl::write_ledger(fd, slots));
        ::close(fd);
    }
    for (std::uint32_t const end = next + 10; next < end; ++next) store(next);
    disk_usage const u = usage_of(root);
    INFO(u.entries << " entries, " << u.bytes << " bytes on disk");
    CHECK(u.bytes <= o.max_size);
    CHECK(u.bytes + 2 * payload.size() >= o.max_size - o.max_size / 10); // at most two under the target
}

TEST_CASE("stores reach the ledger in batches, the last copy of the storage writes the rest",
          "[storage][eviction][ledger]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    {
        directory_storage first(root.string());
        for (std::uint32_t i = 0; i < 64; ++i) REQUIRE(!first.write(key_n(i), "x"));
        REQUIRE(!first.prune().error); // every folder counted: no store recounts one for an hour
    }
    directory_storage observer(root.string()); // reads the ledger as another process would
    CHECK(observer.accounted_size() == 64 * 4096);
    {
        directory_storage s(root.string());
        REQUIRE(!s.write(key_n(100), "x")); // the first store of an object reads the ledger, writing it
        directory_storage copy = s;           // copies share the batch
        for (std::uint32_t i = 101; i < 110; ++i) REQUIRE(!copy.write(key_n(i), "x"));
        std::uint64_t const seen = observer.accounted_size();
        INFO("the ledger said " << seen / 4096 << " entries with 74 stored");
        CHECK(seen >= 65 * 4096);
        CHECK(seen < 74 * 4096); // the batch is not written yet...
        CHECK(s.accounted_size() == 74 * 4096); // ...but its own object counts it (and writes it)
        CHECK(observer.accounted_size() == 74 * 4096);
        REQUIRE(!s.write(key_n(110), std::string(5000, 'x')));
        REQUIRE(!s.remove(key_n(100)));
    } // destroyed: the batch is written
    CHECK(observer.accounted_size() == 75 * 4096);
}

TEST_CASE("a store recounts one folder that fell due, not every folder of its batch that fell due together",
          "[storage][eviction][ledger]") {
    // A prune counts every folder at one moment, so an hour later they all fall due at
    // once: the store that writes the batch then must not list every folder the batch
    // touched (most of the cache), only one; the others are recounted by the stores into
    // them, one folder each, as before.
    namespace impl = cc::detail::directory_storage_impl;
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    {
        directory_storage first(root.string());
        for (std::uint32_t i = 0; i < 512; ++i) REQUIRE(!first.write(key_n(i), "x"));
        REQUIRE(!first.prune().error); // every folder counted now
    }
    directory_storage s(root.string());
    REQUIRE(!s.write(key_n(1000), "x")); // the first store of an object reads the ledger, writing it
    std::set<unsigned> touched;
    for (std::uint32_t i = 1001; i < 1101; ++i) { // a batch, not written yet
        REQUIRE(!s.write(key_n(i), "x"));
        touched.insert(key_n(i).data()[0]);
    }
    auto const ledger_slots = [&] {
        impl::ledger_slots slots;
        int const fd = impl::open_ledger((root / ".cc-stats").string(), 0600, -1);
        REQUIRE(fd >= 0);
        REQUIRE(impl::read_ledger(fd, slots));
        ::close(fd);
        return slots;
    };
    auto const recounted = [&](impl::ledger_slots const& slots) {
        unsigned n = 0;
        for (auto const& slot : slots) n += slot.counted_at >= now_s() - 600 ? 1 : 0;
        return n;
    };
    { // the hour passes for every folder at once
        impl::ledger_slots slots = ledger_slots();
        for (auto& slot : slots) slot.counted_at = now_s() - 2 * 3600;
        int const fd = impl::open_ledger((root / ".cc-stats").string(), 0600, -1);
        REQUIRE(fd >= 0);
        REQUIRE(impl::write_ledger(fd, slots));
        ::close(fd);
    }
    CHECK(s.accounted_size() == 613 * 4096); // writes the batch, with its recount
    INFO(touched.size() << " folders in the batch");
    REQUIRE(touched.size() >= 32);
    CHECK(recounted(ledger_slots()) == 1);
    // A store into a folder still due recounts that one.
    std::uint32_t i = 2000;
    while (recounted(ledger_slots()) == 1 && i < 2100) REQUIRE(!s.write(key_n(i++), "x"));
    CHECK(recounted(ledger_slots()) == 2);
    CHECK(s.accounted_size() == (613 + i - 2000) * 4096);
}

TEST_CASE("a store that may take the cache over its limit writes its batch and cleans at once",
          "[storage][eviction][ledger]") {
    bulk_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 990, 100, now_s() - 10000);
    REQUIRE(!directory_storage(root.string(), limited(0)).prune().error);
    // Room for 1,000 entries: 10 more stores fit, the 11th goes over. The batch
    // rules alone (64 changes, 1/64 of the limit: 15 entries, a second) would leave
    // it unwritten; the store's own estimate (last total read + its batch) does not:
    // that store starts a cleanup at once (one bounded step), and the stores after it
    // go on with it until the oldest are gone.
    directory_storage s(root.string(), limited(1000 * 4096));
    for (std::uint32_t i = 990; i < 1000; ++i) REQUIRE(!s.write(key_n(i), payload_of(i, 0, 100)));
    CHECK(usage_of(root).entries == 1000);
    CHECK(s.counters().cleanup_steps == 0);
    REQUIRE(!s.write(key_n(1000), payload_of(1000, 0, 100)));
    CHECK(s.counters().cleanup_steps == 1);
    std::uint32_t next = 1001;
    while (fs::exists(s.entry_path(key_n(0))) && next < 1400) {
        REQUIRE(!s.write(key_n(next), payload_of(next, 0, 100)));
        ++next;
    }
    disk_usage const u = usage_of(root);
    INFO("stores after the first over the limit: " << next - 1001);
    CHECK(u.entries <= 1000 + 50); // near the limit...
    CHECK(!fs::exists(s.entry_path(key_n(0)))); // ...the oldest gone, the newest kept
    for (std::uint32_t i = 700; i < next; ++i) CHECK(fs::exists(s.entry_path(key_n(i))));
    CHECK(s.accounted_size() == u.entries * 4096);
}

TEST_CASE("stale temp files are swept by cleanup, fresh ones and foreign files stay", "[storage][eviction]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_storage s(root.string());
    for (std::uint32_t i = 0; i < 50; ++i) REQUIRE(!s.write(key_n(i), payload_of(i, 0, 200)));
    key const k = key_n(7);
    fs::path const folder = fs::path(s.entry_path(k)).parent_path();
    // The library's temp names are `.tmp-` and 32 lower-case hex digits; a user's
    // file that merely starts with `.tmp-` is not one, however old.
    std::string const stale = temp_name('5'), young = temp_name('f'), as_dir = temp_name('d');
    write_file(folder / stale, "left by a killed writer");
    set_mtime(folder / stale, now_s() - 2 * 3600);
    write_file(folder / young, "a writer at work");
    set_mtime(folder / young, now_s() - 60);
    fs::create_directory(folder / as_dir);
    set_mtime(folder / as_dir, now_s() - 2 * 3600);
    write_file(folder / "notes.txt", "not ours");
    set_mtime(folder / "notes.txt", now_s() - 2 * 3600);
    write_file(root / "README", "not ours");
    for (std::string const& name : users_temp_like_names()) {
        write_file(folder / name, "a user's work");
        set_mtime(folder / name, now_s() - 2 * 3600);
    }

    SECTION("prune()") {
        auto const r = s.prune();
        CHECK(!r.error);
        CHECK(r.temp_files_removed == 1);
        CHECK(r.entries == 50);
        CHECK(r.removed == 0);
    }
    SECTION("the hourly recount of a folder at a store") {
        fs::remove(root / ".cc-stats"); // every folder is now due for a recount
        // A new storage object (a new process) reads the ledger at its first store.
        directory_storage fresh(root.string());
        REQUIRE(!fresh.write(k, "rewritten"));
        CHECK(fresh.counters().temp_files_removed == 1);
    }
    CHECK(!fs::exists(folder / stale));
    CHECK(fs::exists(folder / young));
    CHECK(fs::is_directory(folder / as_dir));
    CHECK(fs::exists(folder / "notes.txt"));
    CHECK(fs::exists(root / "README"));
    for (std::string const& name : users_temp_like_names()) {
        INFO(name);
        CHECK(fs::exists(folder / name));
    }
    std::string out;
    for (std::uint32_t i = 0; i < 50; ++i) CHECK(s.read(key_n(i), out, 1000).status == read_status::found);
}

TEST_CASE("prune() evicts the least recently used until under 90% of the limit", "[storage][eviction]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 100, 5000, now_s() - 10000); // 2 blocks each
    {
        directory_storage unlimited(root.string(), limited(0));
        auto const r = unlimited.prune(); // no limit: counts only
        CHECK(r.removed == 0);
        CHECK(r.entries == 100);
    }
    directory_storage s(root.string(), limited(100 * 8192 / 2)); // room for 50
    auto const r = s.prune();
    CHECK(!r.error);
    CHECK(r.removed == 55); // down to 45 entries: 90% of the room for 50
    CHECK(r.entries == 45);
    CHECK(r.bytes == 45 * 8192);
    CHECK(s.accounted_size() == 45 * 8192);
    std::string out;
    for (std::uint32_t i = 0; i < 100; ++i)
        CHECK((s.read(key_n(i), out, 10000).status == read_status::found) == (i >= 55));
    CHECK(s.prune().removed == 0); // under the limit now
}

namespace {
/// Where the hook below stores and uses entries: the cache of the test that sets it.
fs::path used_during_prune_root;

/// Between prune()'s survey and its eviction: entry 0 stored again (a new file) and
/// entry 1 used (its use time set to now, as a hit's refresh does), by another object.
void store_and_use_during_prune() {
    directory_storage other(used_during_prune_root.string(), limited(0));
    CHECK(!other.write(key_n(0), payload_of(0, 1, 5000)));
    CHECK(::utimensat(AT_FDCWD, other.entry_path(key_n(1)).c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0);
}
} // namespace

TEST_CASE("prune() keeps an entry stored or used after its survey and evicts the next oldest",
          "[storage][eviction]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 100, 5000, now_s() - 10000); // 2 blocks each
    directory_storage s(root.string(), limited(100 * 8192 / 2)); // room for 50
    used_during_prune_root = root;
    cc::detail::directory_storage_impl::before_named_eviction_for_testing = store_and_use_during_prune;
    auto const r = s.prune();
    cc::detail::directory_storage_impl::before_named_eviction_for_testing = nullptr;
    CHECK(!r.error);
    CHECK(r.removed == 55); // still down to 45 entries
    CHECK(r.entries == 45);
    std::string out;
    REQUIRE(s.read(key_n(0), out, 10000).status == read_status::found);
    CHECK(out == payload_of(0, 1, 5000)); // the store made after the survey
    for (std::uint32_t i = 1; i < 100; ++i) // 2..56 evicted in their place
        CHECK((s.read(key_n(i), out, 10000).status == read_status::found) == (i == 1 || i >= 57));
}

TEST_CASE("prune() evicts an entry dated days ahead first, not the newer entries", "[storage][eviction]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 100, 5000, now_s() - 10000); // 2 blocks each
    directory_storage s(root.string(), limited(100 * 8192 / 2)); // room for 50
    // Entry 50 last used ten days from now (a machine's clock ahead, a copied file).
    set_mtime(s.entry_path(key_n(50)), now_s() + 10 * 86400);
    auto const r = s.prune();
    CHECK(!r.error);
    CHECK(r.removed == 55);
    CHECK(r.entries == 45);
    std::string out;
    CHECK(s.read(key_n(50), out, 10000).status == read_status::absent); // ranked the oldest
    for (std::uint32_t i = 55; i < 100; ++i) {
        INFO("entry " << i);
        REQUIRE(s.read(key_n(i), out, 10000).status == read_status::found);
        CHECK(out == payload_of(i, 0, 5000));
    }
}

TEST_CASE("stores over the limit evict an entry dated days ahead, not the newer entries",
          "[storage][eviction]") {
    bulk_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 990, 100, now_s() - 10000);
    set_mtime(directory_storage(root.string(), limited(0)).entry_path(key_n(500)), now_s() + 10 * 86400);
    REQUIRE(!directory_storage(root.string(), limited(0)).prune().error);
    directory_storage s(root.string(), limited(1000 * 4096));
    std::uint32_t next = 990;
    while (fs::exists(s.entry_path(key_n(500))) && next < 1400) {
        REQUIRE(!s.write(key_n(next), payload_of(next, 0, 100)));
        ++next;
    }
    INFO("stores: " << next - 990 << ", cleanup steps " << s.counters().cleanup_steps);
    CHECK(!fs::exists(s.entry_path(key_n(500))));
    for (std::uint32_t i = 700; i < next; ++i) {
        if (i == 500) continue;
        INFO("entry " << i);
        CHECK(fs::exists(s.entry_path(key_n(i))));
    }
    std::string out;
    REQUIRE(s.read(key_n(next - 1), out, 1000).status == read_status::found);
    CHECK(out == payload_of(next - 1, 0, 100));
}

TEST_CASE("stores over the limit evict entries dated days ahead oldest first, only as many as needed",
          "[storage][eviction]") {
    // 600 of 990 entries dated ten days ahead (a machine's clock ahead, or this one's
    // behind), each a second apart: they go first, in their own order, and only as many
    // as bring the cache under its target, not all of them at once.
    bulk_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 990, 100, now_s() - 10000);
    {
        directory_storage plain(root.string(), limited(0));
        for (std::uint32_t i = 0; i < 600; ++i) set_mtime(plain.entry_path(key_n(i)), now_s() + 10 * 86400 + i);
        REQUIRE(!plain.prune().error);
    }
    directory_storage s(root.string(), limited(1000 * 4096));
    std::uint32_t next = 990;
    while (fs::exists(s.entry_path(key_n(0))) && next < 1400) {
        REQUIRE(!s.write(key_n(next), payload_of(next, 0, 100)));
        ++next;
    }
    for (std::uint32_t i = 0; i < 256; ++i, ++next) REQUIRE(!s.write(key_n(next), payload_of(next, 0, 100)));
    std::uint32_t future_left = 0;
    for (std::uint32_t i = 0; i < 600; ++i) future_left += fs::exists(s.entry_path(key_n(i))) ? 1 : 0;
    INFO("stores: " << next - 990 << ", cleanup steps " << s.counters().cleanup_steps << ", future entries left "
                    << future_left);
    CHECK(!fs::exists(s.entry_path(key_n(0)))); // the oldest of them went first
    // The target (90% of the limit: 900 entries) needs next - 900 of them gone: at most
    // 64 more went.
    CHECK(future_left + 64 >= 600 - (next - 900));
    CHECK(fs::exists(s.entry_path(key_n(599)))); // the newest of them stayed
    CHECK(usage_of(root).entries >= 800);
}

TEST_CASE("a hit on an entry dated days ahead sets its use time to now", "[storage][eviction]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string());
    REQUIRE(!s.write(key_n(1), "value"));
    set_mtime(s.entry_path(key_n(1)), now_s() + 10 * 86400);
    std::string out;
    REQUIRE(s.read(key_n(1), out, 100).status == read_status::found);
    CHECK(out == "value");
    CHECK(mtime_of(s.entry_path(key_n(1))).tv_sec <= now_s());
}

namespace {
/// Where the hook below removes an entry: the cache of the test that sets it.
fs::path removed_during_prune_root;

/// Between prune()'s survey and its eviction: entry 0, the oldest, removed by another
/// storage object (as another process would), which takes it off the ledger.
void remove_during_prune() {
    directory_storage other(removed_during_prune_root.string(), limited(0));
    CHECK(!other.remove(key_n(0)));
}
} // namespace

TEST_CASE("prune() does not count an entry another process removed first as evicted",
          "[storage][eviction][ledger]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 100, 5000, now_s() - 10000); // 2 blocks each
    directory_storage s(root.string(), limited(100 * 8192 / 2)); // room for 50
    REQUIRE(s.accounted_size() == 100 * 8192);
    removed_during_prune_root = root;
    cc::detail::directory_storage_impl::before_named_eviction_for_testing = remove_during_prune;
    auto const r = s.prune();
    cc::detail::directory_storage_impl::before_named_eviction_for_testing = nullptr;
    CHECK(!r.error);
    CHECK(r.removed == 54); // 1..54: entry 0 was gone when its turn came
    CHECK(r.removed_bytes == 54 * 8192);
    CHECK(r.entries == 45);
    CHECK(r.bytes == 45 * 8192);
    CHECK(usage_of(root).entries == 45);
    CHECK(s.accounted_size() == 45 * 8192); // the ledger as the disk: the removal taken off once
}

namespace {
/// The entry the hook below removed, by name; empty until it has.
std::string removed_before_unlink;

/// Just before a store's sweep unlinks its first entry: that entry removed by another
/// storage object (as another process would), which takes it off the ledger.
void remove_before_unlink(int, char const* name) {
    if (!removed_before_unlink.empty()) return;
    removed_before_unlink = name;
    auto const k = key::from_hex(name); // (no REQUIRE: this runs inside the store, which throws nothing out)
    CHECK(k);
    if (k) CHECK(!directory_storage(used_during_prune_root.string(), limited(0)).remove(*k));
}
} // namespace

TEST_CASE("a store's sweep does not count an entry removed first elsewhere as evicted",
          "[storage][eviction][ledger]") {
    bulk_dir dir;
    fs::path const root = dir.path() / "cache";
    store_aged(root, 990, 100, now_s() - 10000);
    REQUIRE(!directory_storage(root.string(), limited(0)).prune().error);
    directory_storage s(root.string(), limited(1000 * 4096));
    used_during_prune_root = root;
    removed_before_unlink.clear();
    cc::detail::directory_storage_impl::before_evicting_unlink_for_testing = remove_before_unlink;
    std::uint32_t next = 990;
    while (fs::exists(s.entry_path(key_n(0))) && next < 1400) {
        REQUIRE(!s.write(key_n(next), payload_of(next, 0, 100)));
        ++next;
    }
    cc::detail::directory_storage_impl::before_evicting_unlink_for_testing = nullptr;
    REQUIRE(!removed_before_unlink.empty());
    disk_usage const u = usage_of(root);
    INFO("stores: " << next - 990 << ", evicted " << s.counters().evicted);
    CHECK(s.counters().evicted == 990 + (next - 990) - u.entries - 1); // all but the one removed first
    CHECK(s.accounted_size() == u.entries * 4096); // the ledger as the disk: the removal taken off once
}

TEST_CASE("clear() removes the library's entries and temp files and nothing else", "[storage][eviction]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_storage s(root.string());
    for (std::uint32_t i = 0; i < 40; ++i) REQUIRE(!s.write(key_n(i), "entry"));
    fs::path const folder = fs::path(s.entry_path(key_n(0))).parent_path();
    std::string const f = folder.filename().string();
    write_file(folder / temp_name('0'), "temp");
    for (std::string const& name : users_temp_like_names()) write_file(folder / name, "a user's work");
    write_file(folder / "notes.txt", "keep");
    write_file(folder / (f + "ABCD"), "upper case: not an entry name");
    write_file(folder / (f + "abc"), "odd length: not an entry name");
    write_file(folder / "0123", "another folder's prefix: not an entry of this one");
    fs::create_directory(folder / (f + "cdef")); // a directory with an entry name
    write_file(root / "README", "keep");
    fs::create_directory(root / "zz");
    write_file(root / "zz" / "00", "not a fan-out folder");
    fs::create_directory(root / "0g");
    write_file(root / "0g" / "0g00", "not a fan-out folder");

    auto const r = s.clear();
    CHECK(!r.error);
    CHECK(r.removed == 40);
    CHECK(r.temp_files_removed == 1);
    CHECK(s.accounted_size() == 0);
    std::string out;
    for (std::uint32_t i = 0; i < 40; ++i) CHECK(s.read(key_n(i), out, 100).status == read_status::absent);
    CHECK(usage_of(root).temps == users_temp_like_names().size());
    for (std::string const& name : users_temp_like_names()) {
        INFO(name);
        CHECK(fs::exists(folder / name));
    }
    for (fs::path const& p : {folder / "notes.txt", folder / (f + "ABCD"), folder / (f + "abc"), folder / "0123",
                              folder / (f + "cdef"), root / "README", root / "zz" / "00", root / "0g" / "0g00"})
        CHECK(fs::exists(p));
    CHECK(fs::is_directory(folder)); // folders stay
    REQUIRE(!s.write(key_n(1), "again"));
    CHECK(s.accounted_size() == 4096);
}

TEST_CASE("100,000 small entries stay correct", "[storage][eviction][scale]") {
    bulk_dir dir;
    fs::path const root = dir.path() / "cache";
    directory_storage s(root.string());
    constexpr std::uint32_t n = 100000;
    auto size_of = [](std::uint32_t i) { return static_cast<std::size_t>(16 + i % 48); };
    std::vector<key> keys;
    keys.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) keys.push_back(key_n(i));
    for (std::uint32_t i = 0; i < n; ++i) {
        std::error_code const ec = s.write(keys[i], payload_of(i, 0, size_of(i)));
        if (ec) FAIL("store " << i << ": " << ec.message());
    }
    CHECK(s.accounted_size() == std::uint64_t{n} * 4096);
    std::string out;
    std::uint32_t wrong = 0;
    for (std::uint32_t i = 0; i < n; ++i)
        if (s.read(keys[i], out, 1000).status != read_status::found || out != payload_of(i, 0, size_of(i))) ++wrong;
    CHECK(wrong == 0);
    auto const r = s.prune();
    CHECK(r.entries == n);
    CHECK(r.removed == 0);
    CHECK(r.temp_files_removed == 0);
    CHECK(s.counters().evicted == 0);
}
