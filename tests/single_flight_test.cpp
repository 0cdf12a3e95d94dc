// Single flight (single_flight.hpp, storage/claim.hpp): a directory's claims as a storage
// answers them, and in fresh processes (tests/helpers/single_flight_helper.cpp): a claimant
// killed or stopped mid-compile, kernels that wait on each other across processes, and a
// read-only directory, where no claim is taken. tinyk's chain40 on 8 processes at once is
// in examples/tinyk/tests/tinyk_single_flight_test.cpp.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/single_flight.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <boost/serialization/string.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using compile_cache_test::child_process;
using compile_cache_test::dead_pid;
using compile_cache_test::drop_locks_on;
using compile_cache_test::read_file;
using compile_cache_test::run_in_child;
using compile_cache_test::set_times_ago;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;

cc::key sf_key_named(std::string const& name) {
    return cc::key_builder<cc::sha256>().add("ir", name).finish().value();
}

/// The claim files under `dir`.
std::vector<std::string> sf_claims_under(fs::path const& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".claim") out.push_back(it->path().string());
    return out;
}

/// `name=N` of a helper's line, -1 when absent.
long long sf_field(std::string const& line, std::string const& name) {
    std::size_t const at = line.find(name + "=");
    if (at == std::string::npos) return -1;
    return std::atoll(line.c_str() + at + name.size() + 1);
}
std::string sf_text_field(std::string const& line, std::string const& name) {
    std::size_t const at = line.find(name + "=");
    if (at == std::string::npos) return {};
    std::size_t const from = at + name.size() + 1;
    return line.substr(from, line.find(' ', from) - from);
}

/// The inode of the file at `path` (0 when there is none).
ino_t sf_inode(std::string const& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

/// What happened to the names in one folder while it was watched (inotify): the names
/// created, deleted, renamed away and renamed in, in order.
class sf_folder_watch {
public:
    explicit sf_folder_watch(std::string const& folder) {
        fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        REQUIRE(fd_ >= 0);
        REQUIRE(::inotify_add_watch(fd_, folder.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) >= 0);
    }
    sf_folder_watch(sf_folder_watch const&) = delete;
    sf_folder_watch& operator=(sf_folder_watch const&) = delete;
    ~sf_folder_watch() { ::close(fd_); }

    std::vector<std::string> created, deleted, moved_from, moved_to;

    /// Reads what was reported so far.
    void collect() {
        alignas(inotify_event) char buf[8192];
        for (;;) {
            ssize_t const n = ::read(fd_, buf, sizeof buf);
            if (n <= 0) return;
            for (ssize_t at = 0; at < n;) {
                auto const* e = reinterpret_cast<inotify_event const*>(buf + at);
                std::string const name = e->len > 0 ? std::string(e->name) : std::string();
                if (e->mask & IN_CREATE) created.push_back(name);
                if (e->mask & IN_DELETE) deleted.push_back(name);
                if (e->mask & IN_MOVED_FROM) moved_from.push_back(name);
                if (e->mask & IN_MOVED_TO) moved_to.push_back(name);
                at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
            }
        }
    }

private:
    int fd_ = -1;
};

/// A claim file's text naming another machine's process, made now.
std::string sf_other_machine_claim(long long age_ms = 0) {
    long long const now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    return "pid=1 boot=another-machine start=1 host=h created_ns=" + std::to_string(now_ns - age_ms * 1000000) +
           " expiry_ms=60000\n";
}

/// A directory storage over a new temp dir, a key ("k"), and the paths of its entry and
/// its claim: what most cases below start from.
struct sf_one_key {
    temp_dir dir;
    std::string const path = (dir.path() / "cache").string();
    cc::directory_storage s{path};
    cc::key const k = sf_key_named("k");
    std::string const entry = s.entry_path(k), claim = entry + ".claim";
};

/// Entry bytes longer than any claim's text.
std::string sf_entry_bytes(char fill) { return std::string(1000, fill) + "\x01\x02 end"; }

} // namespace

TEST_CASE("single flight: a directory claim is created exclusively, held while its owner lives, and released",
          "[single-flight]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    cc::key const k = sf_key_named("k");
    cc::claim_answer const first = s.try_claim(k, {});
    REQUIRE(first.state == cc::claim_state::claimed);
    CHECK_FALSE(first.took_over);
    REQUIRE(sf_claims_under(dir.path()).size() == 1);
    std::string const text = read_file(s.entry_path(k) + ".claim");
    CHECK(cc::detail::claim_field(text, "pid") == std::to_string(::getpid()));
    CHECK_FALSE(cc::detail::claim_field(text, "boot").empty());
    CHECK_FALSE(cc::detail::claim_field(text, "start").empty());

    cc::claim_answer const second = s.try_claim(k, {}); // its owner (this process) lives
    CHECK(second.state == cc::claim_state::held);
    CHECK(second.holder.find(std::to_string(::getpid())) != std::string::npos);

    s.release_claim(k);
    CHECK(sf_claims_under(dir.path()).empty());
    CHECK(s.try_claim(k, {cc::claim_scope::remote, std::chrono::milliseconds(1000)}).state ==
          cc::claim_state::none); // a directory is no remote
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a directory's pause between polls ends when the entry arrives or the claim goes, "
                 "else at its timeout",
                 "[single-flight]") {
    using std::chrono::milliseconds;
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed); // (its folder made, the claim in it)
    auto folder_of = [&](cc::key const& key) { return fs::path(s.entry_path(key)).parent_path(); };
    // How long wait_for_change(k, timeout) took while another thread did `change` 100 ms in.
    auto pause_while = [&](std::chrono::nanoseconds timeout, std::function<void()> const& change) {
        auto const start = std::chrono::steady_clock::now();
        std::thread other([&] {
            std::this_thread::sleep_for(milliseconds(100));
            change();
        });
        s.wait_for_change(k, timeout);
        auto const took = std::chrono::steady_clock::now() - start;
        other.join();
        return took;
    };
    SECTION("the entry stored by another storage over the directory: woken, not at the timeout") {
        auto const took = pause_while(std::chrono::seconds(60), [&] { (void)cc::directory_storage(path).write(k, "e"); });
        CHECK(took >= milliseconds(100));
        CHECK(took < std::chrono::seconds(30));
    }
    SECTION("the entry stored through the claim (the claim file renamed onto it): woken") {
        s.release_claim(k);
        ino_t claim_inode = 0;
        auto const took = pause_while(std::chrono::seconds(60), [&] {
            cc::directory_storage claimant(path);
            if (claimant.try_claim(k, {}).state != cc::claim_state::claimed) return;
            claim_inode = sf_inode(s.entry_path(k) + ".claim");
            (void)claimant.write(k, sf_entry_bytes('w'));
            claimant.release_claim(k);
        });
        CHECK(took >= milliseconds(100));
        CHECK(took < std::chrono::seconds(30));
        CHECK(claim_inode != 0);
        CHECK(sf_inode(s.entry_path(k)) == claim_inode);
        REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed); // (for the release below)
    }
    SECTION("the claim released: woken") {
        auto const took = pause_while(std::chrono::seconds(60), [&] { s.release_claim(k); });
        CHECK(took >= milliseconds(100));
        CHECK(took < std::chrono::seconds(30));
    }
    SECTION("another key's entry stored in the same folder: the pause goes on to its timeout") {
        cc::key other = k;
        for (int i = 0; folder_of(other) != folder_of(k) || other == k; ++i) other = sf_key_named(std::to_string(i));
        auto const took =
            pause_while(milliseconds(400), [&] { (void)cc::directory_storage(path).write(other, "another"); });
        CHECK(took >= milliseconds(400));
        CHECK(took < std::chrono::seconds(30));
        std::string out;
        CHECK(s.read(other, out, 100).status == cc::read_status::found);
    }
    SECTION("nothing changes, or the folder cannot be watched: the timeout, no shorter") {
        auto const start = std::chrono::steady_clock::now();
        s.wait_for_change(k, milliseconds(200));
        CHECK(std::chrono::steady_clock::now() - start >= milliseconds(200));
        cc::key elsewhere = k;
        for (int i = 0; folder_of(elsewhere) == folder_of(k); ++i) elsewhere = sf_key_named("e" + std::to_string(i));
        REQUIRE_FALSE(fs::exists(folder_of(elsewhere)));
        auto const again = std::chrono::steady_clock::now();
        s.wait_for_change(elsewhere, milliseconds(200));
        CHECK(std::chrono::steady_clock::now() - again >= milliseconds(200));
    }
    s.release_claim(k);
}

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a store of a key this thread claimed renames the claim file onto the entry: no file "
                 "created, no claim left, nothing for the release to remove",
                 "[single-flight]") {
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    std::string const folder = fs::path(entry).parent_path().string();
    ino_t const claim_inode = sf_inode(claim);
    REQUIRE(claim_inode != 0);
    std::string const bytes = sf_entry_bytes('a');
    {
        sf_folder_watch watch(folder);
        REQUIRE_FALSE(s.write(k, bytes));
        watch.collect();
        CHECK(watch.created.empty()); // no temp file
        CHECK(watch.deleted.empty());
        CHECK(watch.moved_from == std::vector<std::string>{fs::path(claim).filename().string()});
        CHECK(watch.moved_to == std::vector<std::string>{fs::path(entry).filename().string()});
    }
    CHECK(sf_inode(entry) == claim_inode); // the claim file is the entry
    CHECK(sf_claims_under(dir.path()).empty());
    std::string out;
    REQUIRE(cc::directory_storage(path).read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == bytes);
    CHECK(s.accounted_size() == 4096); // counted as any store is
    // Another process claims the key after the rename: the release leaves its claim.
    write_file(claim, sf_other_machine_claim());
    s.release_claim(k);
    CHECK(sf_claims_under(dir.path()).size() == 1);
    fs::remove(claim);

    // Bytes shorter than the claim's text: stored the usual way (a temp file), the claim
    // kept until its release.
    cc::key const k2 = sf_key_named("short");
    REQUIRE(s.try_claim(k2, {}).state == cc::claim_state::claimed);
    std::string const entry2 = s.entry_path(k2), claim2 = entry2 + ".claim";
    {
        sf_folder_watch watch(fs::path(entry2).parent_path().string());
        REQUIRE_FALSE(s.write(k2, "short"));
        watch.collect();
        REQUIRE(watch.created.size() == 1);
        CHECK(watch.created[0].rfind(".tmp-", 0) == 0);
    }
    CHECK(sf_inode(claim2) != 0);
    CHECK(sf_inode(entry2) != sf_inode(claim2));
    s.release_claim(k2);
    CHECK(sf_claims_under(dir.path()).empty());
    REQUIRE(s.read(k2, out, 100).status == cc::read_status::found);
    CHECK(out == "short");
}

TEST_CASE("single flight: a claim stored and released from another thread goes the usual way and is removed, a "
          "thread keeps at most 64 claim files open",
          "[single-flight]") {
    temp_dir dir;
    std::string const path = (dir.path() / "cache").string();
    cc::directory_storage s(path);
    auto open_files = [] {
        std::size_t n = 0;
        for (auto const& e : fs::directory_iterator("/proc/self/fd")) (void)e, ++n;
        return n;
    };
    SECTION("another thread") {
        cc::key const k = sf_key_named("k");
        REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
        std::string const claim = s.entry_path(k) + ".claim";
        ino_t const ours = sf_inode(claim);
        std::string const bytes = sf_entry_bytes('t');
        std::error_code ec;
        std::thread([&] {
            ec = s.write(k, bytes); // (this thread holds no claim: a temp file, renamed)
            CHECK(sf_inode(claim) == ours); // the claim stays until released
            s.release_claim(k);     // (no record here: removed as its text is ours)
        }).join();
        REQUIRE_FALSE(ec);
        std::string out;
        REQUIRE(s.read(k, out, 1 << 20).status == cc::read_status::found);
        CHECK(out == bytes);
        CHECK(sf_inode(s.entry_path(k)) != ours);
        CHECK(sf_claims_under(dir.path()).empty());
    }
    SECTION("65 claims in one thread") {
        // (in a thread of its own: no claim file of an earlier test held in it)
        std::thread([&] {
            // (a store first: what the storage itself keeps open, its ledger, is counted before)
            CHECK_FALSE(s.write(sf_key_named("warm"), sf_entry_bytes('w')));
            std::size_t const before = open_files();
            std::vector<cc::key> keys;
            for (int i = 0; i < 65; ++i) {
                keys.push_back(sf_key_named("many-" + std::to_string(i)));
                CHECK(s.try_claim(keys.back(), {}).state == cc::claim_state::claimed);
            }
            CHECK(open_files() == before + 64); // the first claim's file closed at the 65th
            for (std::size_t i = 0; i < keys.size(); ++i) {
                std::string const claim = s.entry_path(keys[i]) + ".claim";
                ino_t const claim_inode = sf_inode(claim);
                CHECK_FALSE(s.write(keys[i], sf_entry_bytes('m')));
                // The first went the usual way (its file no longer held), the others through their claim.
                CHECK((sf_inode(s.entry_path(keys[i])) == claim_inode) == (i != 0));
                s.release_claim(keys[i]);
            }
            CHECK(sf_claims_under(dir.path()).empty());
            CHECK(open_files() == before);
        }).join();
    }
}

TEST_CASE("single flight: a claimed miss of a cache stores its entry with no temp file, and the entry loads",
          "[single-flight]") {
    temp_dir dir;
    std::string const path = (dir.path() / "cache").string();
    cc::default_cache cache{cc::directory_storage(path)};
    cc::key_result const k = cache.make_key_builder("t").add("ir", "claimed").finish();
    std::string const entry = cc::directory_storage(path).entry_path(k.value());
    fs::create_directories(fs::path(entry).parent_path()); // (to watch it from the start)
    std::string const value(3000, 'v');
    sf_folder_watch watch(fs::path(entry).parent_path().string());
    auto const r = cache.get_or_compile<std::string>(k, {"claimed", "f", 1}, [&] { return value; });
    CHECK(r.outcome == cc::outcome::compiled);
    watch.collect();
    std::string const entry_name = fs::path(entry).filename().string();
    CHECK(watch.created == std::vector<std::string>{entry_name + ".claim"}); // the claim: the only file created
    CHECK(watch.deleted.empty());
    CHECK(watch.moved_to == std::vector<std::string>{entry_name});
    CHECK(sf_claims_under(dir.path()).empty());
    cc::default_cache other{cc::directory_storage(path)};
    auto const again = other.get_or_compile<std::string>(k, {"claimed", "f", 1}, [] { return std::string("no"); });
    CHECK(again.outcome == cc::outcome::loaded);
    CHECK(again.value == value);
}

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a claim being turned into its entry is judged alive by waiters and cleanups, never "
                 "taken over",
                 "[single-flight]") {
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    // Judged by its bytes and its file's time alone: its lock dropped, as on a file system
    // without locks (a locked claim is alive whatever it holds: the case below).
    REQUIRE(drop_locks_on(claim));
    std::string const owner = read_file(claim);
    std::string const bytes = sf_entry_bytes('\xee');
    // What a waiter may read while the store writes: the entry's first bytes over part of
    // the owner text, then all of it.
    for (std::size_t written : {std::size_t{8}, owner.size() / 2, owner.size() - 1, bytes.size()}) {
        INFO("written " << written);
        int const fd = ::open(claim.c_str(), O_WRONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        REQUIRE(::pwrite(fd, bytes.data(), written, 0) == static_cast<ssize_t>(written));
        ::close(fd);
        // A waiter whose own bound (5 ms) has passed since the claim was made: what keeps
        // it alive is the write's recent file time, not a bound for what cannot be asked.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        cc::directory_storage waiter(path);
        cc::claim_answer const a = waiter.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(5)});
        CHECK(a.state == cc::claim_state::held);
        CHECK_FALSE(a.took_over);
        CHECK(waiter.prune().claim_files_removed == 0);
        CHECK(sf_inode(claim) != 0);
    }
    s.release_claim(k);
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a claim whose owner died while writing its entry into it is dead a second after that "
                 "write",
                 "[single-flight]") {
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    // The owner's store wrote the entry's bytes into its claim, then the owner died before
    // the rename (here: the text no longer names it, and the write was 2 s ago).
    std::string const bytes = sf_entry_bytes('\xee');
    int const fd = ::open(claim.c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
    timespec const two_seconds_ago[2] = {{::time(nullptr) - 2, 0}, {::time(nullptr) - 2, 0}};
    REQUIRE(::futimens(fd, two_seconds_ago) == 0);
    ::close(fd);
    REQUIRE(drop_locks_on(claim)); // (as the kernel drops a dead owner's)
    cc::directory_storage other(path);
    SECTION("a waiter takes it over at once, though its request's expiry is 30 s") {
        cc::claim_answer const a = other.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(30000)});
        CHECK(a.state == cc::claim_state::claimed);
        CHECK(a.took_over);
        CHECK(sf_claims_under(dir.path()).size() == 1); // the new claim, where the dead one was
        other.release_claim(k);
    }
    SECTION("a cleanup removes it") {
        CHECK(other.prune().claim_files_removed == 1);
        s.release_claim(k);
    }
    CHECK(sf_claims_under(dir.path()).empty());
}

namespace {

/// In a fresh child process with its own storage over `cache`: a claim of `k` (expiry
/// 5 ms) and a prune, as "state=N took-over=0|1 removed=N".
std::string sf_claim_and_prune_elsewhere(std::string const& cache, cc::key const& k) {
    return run_in_child([&]() -> std::string {
        cc::directory_storage c(cache);
        cc::claim_answer const a = c.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(5)});
        if (a.state == cc::claim_state::claimed) c.release_claim(k);
        return "state=" + std::to_string(static_cast<int>(a.state)) + " took-over=" + std::to_string(a.took_over) +
               " removed=" + std::to_string(c.prune().claim_files_removed);
    });
}

} // namespace

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a claim its claimant holds open is alive to every other process, whatever its text "
                 "and age say: never taken over, never removed by a cleanup",
                 "[single-flight][processes]") {
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    REQUIRE(compile_cache_test::file_is_locked(claim));
    ino_t const ours = sf_inode(claim);
    std::string const mine = cc::detail::claim_owner();
    std::string const here = " boot=" + cc::detail::claim_field(mine, "boot") + " start=1 host=" +
                             cc::detail::claim_field(mine, "host") + "\n";
    // Texts that, on a claim nobody holds open, are each judged dead (the cases above).
    struct looks_dead {
        char const* what;
        std::string text;
    };
    for (looks_dead const& c :
         {looks_dead{"a pid that is gone", "pid=" + std::to_string(dead_pid()) + here},
          looks_dead{"its own pid with a start time not its own (as an emulator misreports one)",
                     "pid=" + std::to_string(::getpid()) + here},
          looks_dead{"another machine's, past its bound", sf_other_machine_claim(120000)},
          looks_dead{"empty for 2 s", ""}, looks_dead{"its entry being written into it 2 s ago", sf_entry_bytes('w')}}) {
        INFO(c.what);
        write_file(claim, c.text);
        set_times_ago(claim, 2);
        REQUIRE(sf_inode(claim) == ours);
        std::string const other = sf_claim_and_prune_elsewhere(path, k);
        INFO(other);
        CHECK(sf_field(other, "state") == static_cast<int>(cc::claim_state::held));
        CHECK(sf_field(other, "took-over") == 0);
        CHECK(sf_field(other, "removed") == 0);
        CHECK(sf_inode(claim) == ours);
    }
    // Once its claimant lets go of it (here: the lock dropped, as at its death), the last
    // of them is judged by its text and age again: dead.
    REQUIRE(drop_locks_on(claim));
    std::string const after = sf_claim_and_prune_elsewhere(path, k);
    INFO(after);
    CHECK(sf_field(after, "took-over") == 1);
    s.release_claim(k); // (no longer its file: left)
    CHECK(sf_claims_under(dir.path()).empty());
}

namespace {
std::string sf_stalled_answer, sf_stalled_cache;
/// The claimant's store stalled between writing its entry into its claim and the rename,
/// past the second a claim being written is given when nobody holds it open (its file's
/// time set 2 s back): another process tries to claim the key and prunes meanwhile.
void sf_stall_then_ask_another_process(char const* claim) {
    set_times_ago(claim, 2);
    sf_stalled_answer = sf_claim_and_prune_elsewhere(sf_stalled_cache, sf_key_named("k"));
}
} // namespace

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a claimant stalled between writing its entry into its claim and the rename is not "
                 "taken over, and the entry is the file it wrote",
                 "[single-flight][processes]") {
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    ino_t const ours = sf_inode(claim);
    std::string const bytes = sf_entry_bytes('s');
    sf_stalled_answer.clear();
    sf_stalled_cache = path;
    cc::detail::directory_storage_impl::before_claim_rename_for_testing = &sf_stall_then_ask_another_process;
    std::error_code const ec = s.write(k, bytes);
    cc::detail::directory_storage_impl::before_claim_rename_for_testing = nullptr;
    REQUIRE_FALSE(ec);
    INFO(sf_stalled_answer);
    CHECK(sf_field(sf_stalled_answer, "state") == static_cast<int>(cc::claim_state::held));
    CHECK(sf_field(sf_stalled_answer, "took-over") == 0);
    CHECK(sf_field(sf_stalled_answer, "removed") == 0);
    CHECK(sf_inode(entry) == ours); // written through its claim, no other file renamed there
    std::string out;
    REQUIRE(s.read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == bytes);
    s.release_claim(k);
    CHECK(sf_claims_under(dir.path()).empty());
}

namespace {
/// Replaces the claim judged dead, between the two reads, with a new claimant's file as it
/// is between its create and its lock: empty and unlocked, as the dead one read.
void sf_new_claimant_between_reads(int folder_fd, char const* name) {
    REQUIRE(::unlinkat(folder_fd, name, 0) == 0);
    int const fd = ::openat(folder_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    ::close(fd);
}
} // namespace

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a new claimant's file that reads as the dead claim it replaced (empty, not yet "
                 "locked) is not removed by a take-over or a cleanup",
                 "[single-flight]") {
    // A dead claim: left empty 2 s ago (its writer died between the create and the write).
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    REQUIRE(drop_locks_on(claim));
    write_file(claim, "");
    set_times_ago(claim, 2);
    cc::detail::directory_storage_impl::between_claim_reads_for_testing = &sf_new_claimant_between_reads;
    cc::directory_storage other(path);
    SECTION("a waiter's take-over") {
        cc::claim_answer const a = other.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(30000)});
        cc::detail::directory_storage_impl::between_claim_reads_for_testing = nullptr;
        CHECK(a.state == cc::claim_state::held); // the new claimant's: a second old
        CHECK_FALSE(a.took_over);
    }
    SECTION("a cleanup") {
        cc::cleanup_result const r = other.prune();
        cc::detail::directory_storage_impl::between_claim_reads_for_testing = nullptr;
        CHECK_FALSE(r.error);
        CHECK(r.claim_files_removed == 0);
    }
    CHECK(sf_inode(claim) != 0); // the new claimant's file is still there
    CHECK(read_file(claim).empty());
    ::unlink(claim.c_str());
    s.release_claim(k);
}

namespace {
std::string sf_replaced_claim_path;
void sf_replace_claim(char const* claim) {
    sf_replaced_claim_path = claim;
    ::unlink(claim);
    write_file(claim, sf_other_machine_claim());
}
} // namespace

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a claim taken over by another process before its owner stores: the owner stores the "
                 "usual way and leaves the new claim, never a wrong or lost entry",
                 "[single-flight][processes]") {
    std::string out;
    SECTION("taken over before the store looked (a fresh process judged it expired)") {
        REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
        // Ours made to look like another machine's claim past its bound (the same file).
        ino_t const ours = sf_inode(claim);
        write_file(claim, sf_other_machine_claim(60000));
        REQUIRE(sf_inode(claim) == ours);
        REQUIRE(drop_locks_on(claim)); // (as on a file system without locks: its text decides)
        std::string const child = run_in_child([&]() -> std::string {
            cc::directory_storage c(path);
            cc::claim_answer const a = c.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(5)});
            return "state=" + std::to_string(static_cast<int>(a.state)) + " took-over=" + std::to_string(a.took_over) +
                   " pid=" + std::to_string(::getpid()); // (exits holding it, as if still compiling)
        });
        INFO(child);
        REQUIRE(sf_field(child, "state") == static_cast<int>(cc::claim_state::claimed));
        REQUIRE(sf_field(child, "took-over") == 1);
        ino_t const theirs = sf_inode(claim);
        REQUIRE(theirs != 0);
        std::string const bytes = sf_entry_bytes('b');
        REQUIRE_FALSE(s.write(k, bytes));
        CHECK(sf_inode(claim) == theirs); // their claim stays where it was
        CHECK(cc::detail::claim_field(read_file(claim), "pid") == std::to_string(sf_field(child, "pid")));
        REQUIRE(s.read(k, out, 1 << 20).status == cc::read_status::found);
        CHECK(out == bytes);
        s.release_claim(k); // not ours any more: left to its owner
        CHECK(sf_inode(claim) == theirs);
    }
    SECTION("taken over between the check and the rename: the other's claim renamed onto the entry is replaced") {
        REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
        std::string const bytes = sf_entry_bytes('c');
        cc::detail::directory_storage_impl::before_claim_rename_for_testing = &sf_replace_claim;
        std::error_code const ec = s.write(k, bytes);
        cc::detail::directory_storage_impl::before_claim_rename_for_testing = nullptr;
        REQUIRE_FALSE(ec);
        CHECK(sf_replaced_claim_path == claim);
        REQUIRE(s.read(k, out, 1 << 20).status == cc::read_status::found);
        CHECK(out == bytes); // the entry is ours, whole
        s.release_claim(k);
        CHECK(sf_claims_under(dir.path()).empty()); // (theirs went with the rename: one more compile there)
    }
    SECTION("a forked child never writes through its parent's claim") {
        REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
        ino_t const ours = sf_inode(claim);
        std::string const child = run_in_child([&]() -> std::string {
            std::error_code const ec = s.write(k, sf_entry_bytes('d'));
            return "ok=" + std::to_string(!ec) + " claim-kept=" + std::to_string(sf_inode(claim) == ours) +
                   " entry-is-claim=" + std::to_string(sf_inode(entry) == ours);
        });
        INFO(child);
        CHECK(sf_field(child, "ok") == 1);
        CHECK(sf_field(child, "claim-kept") == 1);
        CHECK(sf_field(child, "entry-is-claim") == 0);
        std::string const bytes = sf_entry_bytes('e');
        REQUIRE_FALSE(s.write(k, bytes)); // the parent's own store goes through its claim
        CHECK(sf_inode(entry) == ours);
        REQUIRE(s.read(k, out, 1 << 20).status == cc::read_status::found);
        CHECK(out == bytes);
        s.release_claim(k);
        CHECK(sf_claims_under(dir.path()).empty());
    }
    SECTION("a forked child's release never removes its parent's claim, which the parent still compiles under") {
        REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
        ino_t const ours = sf_inode(claim);
        // What a child forked in the middle of a get_or_compile does as it leaves it: stores,
        // then releases the claim it inherited (its claim_guard).
        std::string const child = run_in_child([&]() -> std::string {
            std::error_code const ec = s.write(k, sf_entry_bytes('f'));
            s.release_claim(k);
            return "ok=" + std::to_string(!ec) + " claim-kept=" + std::to_string(sf_inode(claim) == ours);
        });
        INFO(child);
        CHECK(sf_field(child, "ok") == 1);
        CHECK(sf_field(child, "claim-kept") == 1);
        CHECK(sf_inode(claim) == ours); // waiters still wait for the parent, which still holds it
        std::string const bytes = sf_entry_bytes('g');
        REQUIRE_FALSE(s.write(k, bytes)); // and the parent's store still goes through it
        CHECK(sf_inode(entry) == ours);
        s.release_claim(k);
        CHECK(sf_claims_under(dir.path()).empty());
    }
}

TEST_CASE_METHOD(sf_one_key,
                 "single flight: a claim's descriptor that the host closed and reused for another file is never "
                 "written into",
                 "[single-flight]") {
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    // The descriptor the storage holds on the claim, found and closed as a careless host
    // might, then its number given to another file (dup2: a lower number may be free too).
    int held = -1;
    for (auto const& fd : fs::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        if (fs::read_symlink(fd.path(), ec) == fs::path(claim)) held = std::stoi(fd.path().filename().string());
    }
    REQUIRE(held >= 0);
    ::close(held);
    std::string const other = (dir.path() / "host-file").string();
    write_file(other, "the host's own file");
    int const opened = ::open(other.c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(opened >= 0);
    int const reused = opened == held ? held : ::dup2(opened, held);
    if (opened != held) ::close(opened);
    REQUIRE(reused == held);
    std::string const bytes = sf_entry_bytes('h');
    REQUIRE_FALSE(s.write(k, bytes));
    ::close(reused);
    CHECK(read_file(other) == "the host's own file");
    std::string out;
    REQUIRE(s.read(k, out, 1 << 20).status == cc::read_status::found);
    CHECK(out == bytes);
    s.release_claim(k);
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE("single flight: an entry stored between this process's miss and its claim is loaded, not compiled again",
          "[single-flight]") {
    temp_dir dir;
    std::string const path = (dir.path() / "cache").string();
    cc::key const k = sf_key_named("k");
    {
        cc::directory_storage s(path);
        cc::claim_answer const none_yet = s.try_claim(k, {});
        REQUIRE(none_yet.state == cc::claim_state::claimed);
        CHECK_FALSE(none_yet.entry_seen);
        s.release_claim(k);
    }
    // A storage whose first read answers absent: the miss came before another process
    // stored the entry and released its claim.
    struct late_storage : cc::directory_storage {
        using cc::directory_storage::directory_storage;
        std::shared_ptr<int> reads = std::make_shared<int>(0);
        cc::read_result read(cc::key const& key, std::string& out, std::size_t max_size) {
            if ((*reads)++ == 0) return cc::read_result{cc::read_status::absent};
            return cc::directory_storage::read(key, out, max_size);
        }
        cc::read_result read_view(cc::key const& key, std::string& out, std::size_t max_size, view_type& view) {
            if ((*reads)++ == 0) return cc::read_result{cc::read_status::absent};
            return cc::directory_storage::read_view(key, out, max_size, view);
        }
    };
    using late_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, late_storage>;
    auto const kr = cc::key_builder<cc::sha256>().add("ir", std::string("k")).finish();
    {
        cc::default_cache writer = cc::default_cache(cc::directory_storage(path));
        REQUIRE(writer.store(kr, std::string("stored by another process")));
    }
    late_cache cache{late_storage(path)};
    int compiles = 0;
    auto const got = cache.get_or_compile<std::string>(kr, cc::entry_info{}, [&] {
        ++compiles;
        return std::string("compiled again");
    });
    CHECK(got.value == "stored by another process");
    CHECK(compiles == 0);
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE("single flight: a claim whose owner is gone is taken over at once, another machine's when it expired",
          "[single-flight]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    cc::key const k = sf_key_named("k");
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    std::string const boot = cc::detail::claim_field(cc::detail::claim_owner(), "boot");
    std::string const path = s.entry_path(k) + ".claim";
    // A process of this machine (its boot id and host name) that is gone.
    std::string const host = cc::detail::claim_field(cc::detail::claim_owner(), "host");
    write_file(path, "pid=" + std::to_string(dead_pid()) + " boot=" + boot + " start=1 host=" + host + "\n");
    REQUIRE(drop_locks_on(path)); // (as the kernel drops a dead owner's)
    cc::claim_answer const a = s.try_claim(k, {});
    CHECK(a.state == cc::claim_state::claimed);
    CHECK(a.took_over);
    CHECK(cc::detail::claim_field(read_file(path), "pid") == std::to_string(::getpid()));
    // Another machine's claim (another boot id) stands until its expiry.
    write_file(path, "pid=1 boot=another-machine start=1 host=h created_ns=" +
                         std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count()) +
                         "\n");
    REQUIRE(drop_locks_on(path)); // (no claimant here holds it open)
    CHECK(s.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(60000)}).state == cc::claim_state::held);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cc::claim_answer const expired = s.try_claim(k, {cc::claim_scope::both, std::chrono::milliseconds(5)});
    CHECK(expired.state == cc::claim_state::claimed);
    CHECK(expired.took_over);
    s.release_claim(k);
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE("single flight: the wait bound is four times the recorded compile time, within 1 s and PREFIX_WAIT_MAX",
          "[single-flight]") {
    using namespace std::chrono;
    CHECK(cc::detail::claim_wait_bound(milliseconds(30000), 0) == milliseconds(30000));
    CHECK(cc::detail::claim_wait_bound(milliseconds(30000), 2'000'000'000) == milliseconds(8000));
    CHECK(cc::detail::claim_wait_bound(milliseconds(30000), 1'000'000) == milliseconds(1000));
    CHECK(cc::detail::claim_wait_bound(milliseconds(30000), 60'000'000'000) == milliseconds(30000));
    CHECK(cc::detail::claim_wait_bound(milliseconds(200), 1'000'000) == milliseconds(200));
    ::setenv("SFT_SINGLE_FLIGHT", "local", 1);
    ::setenv("SFT_WAIT_MAX", "1500", 1);
    cc::single_flight_options o;
    cc::detail::single_flight_from_env(cc::settings_reader("SFT"), o);
    CHECK(o.scope == cc::claim_scope::local);
    CHECK(o.wait_max == milliseconds(1500));
    ::setenv("SFT_SINGLE_FLIGHT", "0", 1);
    cc::detail::single_flight_from_env(cc::settings_reader("SFT"), o);
    CHECK(o.scope == cc::claim_scope::none);
    ::unsetenv("SFT_SINGLE_FLIGHT");
    ::unsetenv("SFT_WAIT_MAX");
}

TEST_CASE("single flight: off (PREFIX_SINGLE_FLIGHT=0) takes no claim, and a compile that throws releases it",
          "[single-flight]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    cc::cache_options o;
    o.single_flight.scope = cc::claim_scope::none;
    cc::default_cache off(cc::directory_storage((dir.path() / "cache").string()), o);
    cc::key_result const k = off.make_key_builder("t").add("ir", "x").finish();
    // A claim held by this process (another thread's, say) is not waited on when off.
    REQUIRE(s.try_claim(k.value(), {}).state == cc::claim_state::claimed);
    auto r = off.get_or_compile<std::string>(k, {"x", "f", 1}, [] { return std::string("x"); });
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(off.stats().waited == 0);
    s.release_claim(k.value());

    cc::default_cache on(cc::directory_storage((dir.path() / "cache").string()));
    cc::key_result const k2 = on.make_key_builder("t").add("ir", "y").finish();
    bool threw = false;
    try {
        (void)on.get_or_compile<std::string>(k2, {"y", "f", 1}, []() -> std::string { throw std::runtime_error("no"); });
    } catch (std::runtime_error const&) {
        threw = true;
    }
    CHECK(threw);
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE("single flight: a read-only directory takes no claim and compiles as before", "[single-flight][processes]") {
    temp_dir dir;
    fs::path const mnt = dir.path() / "mnt";
    fs::create_directory(mnt);
    std::string const out = run_in_child([&]() -> std::string {
        if (::unshare(CLONE_NEWNS) != 0) return "skip: unshare";
        if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return "skip: make-private";
        if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=4m,mode=0700") != 0) return "skip: mount";
        fs::create_directory(mnt / "cache");
        if (::mount(nullptr, mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0) return "skip: remount";
        cc::directory_storage s((mnt / "cache").string());
        cc::claim_answer const a = s.try_claim(sf_key_named("k"), {});
        cc::default_cache c{cc::directory_storage((mnt / "cache").string())};
        cc::key_result const k = c.make_key_builder("t").add("ir", "x").finish();
        auto r = c.get_or_compile<std::string>(k, {"x", "f", 1}, [] { return std::string("x"); });
        return "state=" + std::to_string(static_cast<int>(a.state)) + " outcome=" + cc::to_string(r.outcome) +
               " value=" + r.value + " waited=" + std::to_string(c.stats().waited) +
               " files=" + std::to_string(std::distance(fs::recursive_directory_iterator(mnt / "cache"),
                                                        fs::recursive_directory_iterator()));
    });
    if (out.rfind("skip:", 0) == 0) {
        WARN("no read-only mount here (" << out << "); not run");
        return;
    }
    INFO(out);
    CHECK(sf_field(out, "state") == static_cast<int>(cc::claim_state::none));
    CHECK(sf_text_field(out, "outcome") == "compiled");
    CHECK(sf_text_field(out, "value") == "x");
    CHECK(sf_field(out, "waited") == 0);
    CHECK(sf_field(out, "files") == 0);
}

#ifdef COMPILE_CACHE_HELPER_single_flight_helper
namespace {
std::string const sf_helper = COMPILE_CACHE_HELPER_single_flight_helper;

/// Starts a holder of `name`'s claim and returns once it is compiling (holding the claim).
std::unique_ptr<child_process> sf_start_holder(fs::path const& cache, std::string const& name) {
    auto holder = std::make_unique<child_process>(
        std::vector<std::string>{sf_helper, "hold", cache.string(), "30000", name});
    REQUIRE(holder->wait_for_line(10000));
    REQUIRE(holder->output() == "compiling\n");
    return holder;
}

struct sf_waiter_lines {
    std::vector<std::string> lines;
    long long sum(std::string const& name) const {
        long long n = 0;
        for (auto const& l : lines) n += sf_field(l, name);
        return n;
    }
};

/// Runs `n` getters of `name` at once; each must finish with the right value.
sf_waiter_lines sf_run_getters(fs::path const& cache, std::string const& name, std::string const& wait_max, int n,
                         std::function<void()> const& meanwhile) {
    std::vector<std::unique_ptr<child_process>> getters;
    for (int i = 0; i < n; ++i)
        getters.push_back(std::make_unique<child_process>(
            std::vector<std::string>{sf_helper, "get", cache.string(), wait_max, name}));
    meanwhile();
    sf_waiter_lines out;
    for (auto& g : getters) {
        // Bounded: each getter ends within its wait bound plus a compile; a hung one
        // is killed by the child_process at the end of the test, failing the check.
        bool const line = g->wait_for_line(15000);
        CHECK(line);
        out.lines.push_back(g->output());
        INFO(g->output());
        CHECK(sf_text_field(g->output(), "value") == "value-of-" + name);
    }
    for (auto& g : getters) CHECK(g->wait() == 0);
    return out;
}
} // namespace

TEST_CASE("single flight: a claimant killed mid-compile is taken over at once, the waiters finish right",
          "[single-flight][processes]") {
    temp_dir dir;
    fs::path const cache = dir.path() / "cache";
    auto holder = sf_start_holder(cache, "killed");
    sf_waiter_lines const w = sf_run_getters(cache, "killed", "30000", 3, [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300)); // (the getters wait on the claim)
        holder->kill(SIGKILL);
    });
    INFO(w.lines[0] << w.lines[1] << w.lines[2]);
    CHECK(w.sum("took-over") >= 1);   // within its bound of 30 s, or the getters' 15 s would have run out
    CHECK(w.sum("wait-timeout") == 0);
    CHECK(w.sum("compiles") <= 2);    // one took over and compiled; the others loaded its entry
    CHECK(holder->wait() == 128 + SIGKILL);
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE("single flight: a claimant stopped mid-compile holds its claim, the waiters compile after the bound",
          "[single-flight][processes]") {
    temp_dir dir;
    fs::path const cache = dir.path() / "cache";
    auto holder = sf_start_holder(cache, "stopped");
    holder->kill(SIGSTOP);
    sf_waiter_lines const w = sf_run_getters(cache, "stopped", "400", 3, [] {});
    INFO(w.lines[0] << w.lines[1] << w.lines[2]);
    CHECK(w.sum("waited") >= 1);
    CHECK(w.sum("wait-timeout") >= 1); // the stopped claimant's claim stood: nothing hung
    CHECK(w.sum("took-over") == 0);
    holder->kill(SIGKILL);
    CHECK(holder->wait() == 128 + SIGKILL);
}

TEST_CASE("single flight: two processes whose kernels call each other (each waiting on the other's claim) "
          "finish within the bound, right",
          "[single-flight][processes]") {
    temp_dir dir;
    fs::path const cache = dir.path() / "cache";
    child_process a({sf_helper, "recurse", cache.string(), "500", "even", "odd"});
    child_process b({sf_helper, "recurse", cache.string(), "500", "odd", "even"});
    REQUIRE(a.wait_for_line(15000));
    REQUIRE(b.wait_for_line(15000));
    INFO(a.output() << b.output());
    CHECK(sf_text_field(a.output(), "value") == "even<odd>");
    CHECK(sf_text_field(a.output(), "inner") == "odd<even>");
    CHECK(sf_text_field(b.output(), "value") == "odd<even>");
    CHECK(sf_text_field(b.output(), "inner") == "even<odd>");
    CHECK(sf_field(a.output(), "wait-timeout") + sf_field(b.output(), "wait-timeout") >= 1);
    CHECK(a.wait() == 0);
    CHECK(b.wait() == 0);
    CHECK(sf_claims_under(dir.path()).empty());
}

TEST_CASE("single flight: a host object destroyed at exit that compiles through a cache of static storage duration "
          "stores its entry and leaves no claim (fresh process)",
          "[single-flight][processes]") {
    temp_dir dir;
    fs::path const cache = dir.path() / "cache";
    // The helper claims, stores and releases "first" in main (its thread's list of claim
    // files is made), then, after that list is destroyed at exit, "late" the same way.
    child_process host({sf_helper, "at-exit", cache.string(), "1000", "first", "late"});
    int const code = host.wait();
    INFO(host.output());
    CHECK(code == 0);
    CHECK(sf_text_field(host.output(), "outcome") == "compiled");
    CHECK(host.output().find("at-exit outcome=compiled value=value-of-late\n") != std::string::npos);
    CHECK(sf_claims_under(dir.path()).empty());
    // The entry stored at exit loads in a fresh process.
    child_process reader({sf_helper, "get", cache.string(), "1000", "late"});
    CHECK(reader.wait() == 0);
    INFO(reader.output());
    CHECK(sf_text_field(reader.output(), "outcome") == "loaded");
    CHECK(sf_text_field(reader.output(), "value") == "value-of-late");
}
#endif
