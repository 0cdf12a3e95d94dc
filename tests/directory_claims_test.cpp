// directory_storage's cleanup of claim files (single flight, storage/directory/
// directory_claims.hpp): a claim left by a claimant killed with SIGKILL (a fresh process,
// tests/helpers/single_flight_helper.cpp), by a process that is gone, by another machine
// past its bound, or left empty, goes with prune() and clear(); a live claim stays; and a
// waiter judges a claim by the same rules, with its own bound.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>


// The durability tests below note which directories are fsynced: this program's own
// fsync (the library's calls bind to it) notes the path of the descriptor while
// dc_noting_fsyncs is set, then makes the real system call.
namespace {
std::atomic<bool> dc_noting_fsyncs{false};
std::mutex dc_fsynced_mutex;
std::vector<std::string> dc_fsynced; // in order
} // namespace

extern "C" int fsync(int fd) {
    if (dc_noting_fsyncs.load()) {
        char link[64];
        std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        char target[4096];
        ssize_t const n = ::readlink(link, target, sizeof target - 1);
        std::lock_guard<std::mutex> const lock(dc_fsynced_mutex);
        dc_fsynced.emplace_back(n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string("?"));
    }
    return static_cast<int>(::syscall(SYS_fsync, fd));
}

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using compile_cache_test::child_process;
using compile_cache_test::dead_pid;
using compile_cache_test::drop_locks_on;
using compile_cache_test::read_file;
using compile_cache_test::set_times_ago;
using compile_cache_test::temp_dir;
using compile_cache_test::write_file;

/// The claim files under `dir`, sorted.
std::vector<std::string> dc_claims_under(fs::path const& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".claim") out.push_back(it->path().string());
    std::sort(out.begin(), out.end());
    return out;
}

cc::key dc_key(std::string const& name) { return cc::key_builder<cc::sha256>().add("ir", name).finish().value(); }

/// A claim file's text as a process of this machine writes it, for pid `pid`.
std::string dc_this_machine_claim(pid_t pid) {
    std::string const mine = cc::detail::claim_owner();
    return "pid=" + std::to_string(pid) + " boot=" + cc::detail::claim_field(mine, "boot") +
           " start=1 host=" + cc::detail::claim_field(mine, "host") + "\n";
}

/// Plants `text` as the claim of `name`'s key: a claim this process takes, its text
/// replaced and its lock dropped (its owner gone, or on another machine: no live claimant
/// here holds it open).
void dc_plant_claim(cc::directory_storage& s, char const* name, std::string const& text) {
    REQUIRE(s.try_claim(dc_key(name), {}).state == cc::claim_state::claimed);
    std::string const path = s.entry_path(dc_key(name)) + ".claim";
    write_file(path, text);
    REQUIRE(drop_locks_on(path));
}

/// Now, as a claim's `created_ns=` records it.
long long dc_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// The owner text of a process of this machine that names no pid (it cannot be asked).
std::string dc_owner_without_pid() {
    std::string const mine = cc::detail::claim_owner();
    return "boot=" + cc::detail::claim_field(mine, "boot") + " host=" + cc::detail::claim_field(mine, "host");
}

/// The claims of one directory: one of each kind a cleanup judges, the paths in `stays`
/// and `goes`.
struct dc_claims {
    std::vector<std::string> stays, goes;
};

dc_claims dc_plant(cc::directory_storage& s) {
    dc_claims c;
    auto path_of = [&](char const* name) { return s.entry_path(dc_key(name)) + ".claim"; };
    // Each other owner's claim is planted over one this process took, and its lock dropped
    // (that owner gone, or on another machine: no live claimant here holds it open).
    // This process's own claim (taken as a miss takes it): alive, it stays.
    REQUIRE(s.try_claim(dc_key("live"), {}).state == cc::claim_state::claimed);
    c.stays.push_back(path_of("live"));
    // The same, unlocked (as on a file system without locks): its text names this live
    // process, so it stays too.
    REQUIRE(s.try_claim(dc_key("live-unlocked"), {}).state == cc::claim_state::claimed);
    REQUIRE(drop_locks_on(path_of("live-unlocked")));
    c.stays.push_back(path_of("live-unlocked"));
    // A process of this machine that is gone.
    dc_plant_claim(s, "gone", dc_this_machine_claim(dead_pid()));
    c.goes.push_back(path_of("gone"));
    // Another machine's, within its bound (expiry_ms=600000, a minute old): it stays...
    long long const now_ns = dc_now_ns();
    dc_plant_claim(s, "far-fresh",
                   "pid=9 boot=another-boot start=1 host=machine-b created_ns=" +
                   std::to_string(now_ns - 60'000'000'000LL) + " expiry_ms=600000\n");
    c.stays.push_back(path_of("far-fresh"));
    // ...past it (2 min old, a bound of 1 min), it goes.
    dc_plant_claim(s, "far-old",
                   "pid=9 boot=another-boot start=1 host=machine-b created_ns=" +
                   std::to_string(now_ns - 120'000'000'000LL) + " expiry_ms=60000\n");
    c.goes.push_back(path_of("far-old"));
    // One that records no bound: an hour (by its file's time).
    dc_plant_claim(s, "far-unbounded", "pid=9 boot=another-boot start=1 host=machine-b\n");
    set_times_ago(path_of("far-unbounded"), 2 * 3600);
    c.goes.push_back(path_of("far-unbounded"));
    // Empty for over a second (its writer died before writing).
    dc_plant_claim(s, "empty", "");
    set_times_ago(path_of("empty"), 5);
    c.goes.push_back(path_of("empty"));
    std::sort(c.stays.begin(), c.stays.end());
    return c;
}

/// In a forked child: gives up root for user and group nobody (nothing to do for another
/// user), so that permission bits hold for it as for any user.
bool dc_drop_root() {
    if (::geteuid() != 0) return true;
    return ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0 && ::geteuid() == 65534;
}

} // namespace

#ifdef COMPILE_CACHE_HELPER_single_flight_helper
TEST_CASE("directory claims: a claimant killed with SIGKILL leaves its claim file, and prune removes it and counts "
          "it (fresh process)",
          "[single-flight][directory][processes]") {
    temp_dir dir;
    fs::path const cache = dir.path() / "cache";
    child_process holder({COMPILE_CACHE_HELPER_single_flight_helper, "hold", cache.string(), "30000", "killed"});
    REQUIRE(holder.wait_for_line(10000));
    REQUIRE(holder.output() == "compiling\n");
    REQUIRE(dc_claims_under(cache).size() == 1); // it holds the claim of "killed"
    holder.kill(SIGKILL);
    REQUIRE(holder.wait() == 128 + SIGKILL);
    REQUIRE(dc_claims_under(cache).size() == 1); // left behind: nobody asks for that kernel again

    cc::directory_storage s(cache.string());
    cc::cleanup_result const r = s.prune();
    CHECK_FALSE(r.error);
    CHECK(r.not_removed == 0);
    CHECK(r.claim_files_removed == 1);
    CHECK(r.temp_files_removed == 0);
    CHECK(dc_claims_under(cache).empty());
    CHECK(s.counters().claim_files_removed == 1);
    // Nothing left to remove: a second prune removes none.
    CHECK(s.prune().claim_files_removed == 0);
}
#endif

TEST_CASE("directory claims: prune and clear remove the claims of processes that are gone, past their bound or "
          "left empty, and leave live ones",
          "[single-flight][directory]") {
    for (bool const clearing : {false, true}) {
        INFO((clearing ? "clear" : "prune"));
        temp_dir dir;
        cc::directory_storage s((dir.path() / "cache").string());
        REQUIRE_FALSE(s.write(dc_key("an entry"), "its bytes"));
        dc_claims const c = dc_plant(s);
        // A listing touches none.
        std::vector<cc::stored_entry> listed;
        REQUIRE_FALSE(s.list(listed));
        CHECK(listed.size() == 1);
        CHECK(dc_claims_under(dir.path()).size() == c.stays.size() + c.goes.size());

        cc::cleanup_result const r = clearing ? s.clear() : s.prune();
        CHECK_FALSE(r.error);
        CHECK(r.not_removed == 0);
        CHECK(r.claim_files_removed == c.goes.size());
        CHECK(dc_claims_under(dir.path()) == c.stays);
        CHECK(r.removed == (clearing ? 1u : 0u)); // (the entry: clear removes it, prune keeps it)
        // The live claim is still this process's, and its release removes it.
        s.release_claim(dc_key("live"));
        CHECK(dc_claims_under(dir.path()).size() == c.stays.size() - 1);
    }
}

TEST_CASE("directory claims: a claim records its bound, after which a cleanup removes it when its owner cannot be "
          "asked",
          "[single-flight][directory]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    cc::key const k = dc_key("bounded");
    REQUIRE(s.try_claim(k, {cc::claim_scope::local, std::chrono::milliseconds(1500)}).state ==
            cc::claim_state::claimed);
    std::string const text = read_file(s.entry_path(k) + ".claim");
    REQUIRE(cc::detail::claim_field(text, "expiry_ms") == "1500");
    // The same claim as another machine's process wrote it (its owner cannot be asked):
    // within its bound it stays, created more than its bound ago it goes.
    auto other_machines = [&](std::string const& created_ns) {
        return "pid=9 boot=another-boot start=1 host=machine-b created_ns=" + created_ns +
               " expiry_ms=" + cc::detail::claim_field(text, "expiry_ms") + "\n";
    };
    write_file(s.entry_path(k) + ".claim", other_machines(cc::detail::claim_field(text, "created_ns")));
    REQUIRE(drop_locks_on(s.entry_path(k) + ".claim")); // (no claimant here holds it open)
    CHECK(s.prune().claim_files_removed == 0);
    long long const created = std::stoll(cc::detail::claim_field(text, "created_ns"));
    write_file(s.entry_path(k) + ".claim", other_machines(std::to_string(created - 2'000'000'000LL)));
    CHECK(s.prune().claim_files_removed == 1);
    CHECK(dc_claims_under(dir.path()).empty());
}

TEST_CASE("directory claims: one of this machine that names no pid is judged by its age, one that cannot be read is "
          "left within its bound and a directory with a claim's name always, without an error",
          "[single-flight][directory]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    auto path_of = [&](char const* name) { return s.entry_path(dc_key(name)) + ".claim"; };
    std::string const no_pid = dc_owner_without_pid();
    long long const now_ns = dc_now_ns();
    dc_plant_claim(s, "no-pid-old",
                   no_pid + " created_ns=" + std::to_string(now_ns - 120'000'000'000LL) + " expiry_ms=60000\n");
    dc_plant_claim(s, "no-pid-fresh", no_pid + " created_ns=" + std::to_string(now_ns) + " expiry_ms=60000\n");
    // A symbolic link with a claim's name (never made by a claim, never followed).
    REQUIRE(s.try_claim(dc_key("link"), {}).state == cc::claim_state::claimed);
    REQUIRE(::unlink(path_of("link").c_str()) == 0);
    REQUIRE(::symlink("/nonexistent", path_of("link").c_str()) == 0);
    // A directory with a claim's name, two hours old: never a claim (it opens, its read
    // fails), so never judged, never an error.
    fs::create_directories(path_of("dir"));
    set_times_ago(path_of("dir"), 7200);

    cc::cleanup_result const r = s.prune();
    CHECK_FALSE(r.error);
    CHECK(r.not_removed == 0);
    CHECK(r.claim_files_removed == 1);
    std::vector<std::string> stays{path_of("dir"), path_of("link"), path_of("no-pid-fresh")};
    std::sort(stays.begin(), stays.end());
    CHECK(dc_claims_under(dir.path()) == stays);
}

TEST_CASE("directory claims: a waiter judges a claim as a cleanup does, but by its own bound: one of this machine "
          "that names no pid or cannot be read is taken over past it, an empty one only after 1 s",
          "[single-flight][directory]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    auto path_of = [&](char const* name) { return s.entry_path(dc_key(name)) + ".claim"; };
    auto const waiting = [](long long ms) {
        return cc::claim_request{cc::claim_scope::local, std::chrono::milliseconds(ms)};
    };
    std::string const no_pid = dc_owner_without_pid();
    long long const now_ns = dc_now_ns();
    // Of this machine, naming no pid (its owner cannot be asked), 2 minutes old, recording a
    // bound of 10: a cleanup keeps it; a waiter whose bound is 1 minute takes it over (it
    // used to wait on it for ever, each miss its whole bound), one whose bound is 10 waits.
    dc_plant_claim(s, "no-pid",
                   no_pid + " created_ns=" + std::to_string(now_ns - 120'000'000'000LL) + " expiry_ms=600000\n");
    CHECK(s.prune().claim_files_removed == 0);
    CHECK(s.try_claim(dc_key("no-pid"), waiting(600000)).state == cc::claim_state::held);
    cc::claim_answer const past = s.try_claim(dc_key("no-pid"), waiting(60000));
    CHECK(past.state == cc::claim_state::claimed);
    CHECK(past.took_over);
    CHECK(cc::detail::claim_field(read_file(path_of("no-pid")), "pid") == std::to_string(::getpid()));
    s.release_claim(dc_key("no-pid"));

    // Empty (its writer between the create and the write): alive for 1 s by its file's time,
    // whatever the waiter's bound (a waiter whose bound, 5 ms, had passed took it over).
    dc_plant_claim(s, "empty", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cc::claim_answer const young = s.try_claim(dc_key("empty"), waiting(5));
    CHECK(young.state == cc::claim_state::held);
    CHECK_FALSE(young.took_over);
    CHECK(read_file(path_of("empty")).empty());
    set_times_ago(path_of("empty"), 5); // (its writer died before writing)
    cc::claim_answer const old = s.try_claim(dc_key("empty"), waiting(60000));
    CHECK(old.state == cc::claim_state::claimed);
    CHECK(old.took_over);
    s.release_claim(dc_key("empty"));

    // One that cannot be read (here a symbolic link with a claim's name; another user's, or
    // a read failing here, is as unknown: neither its lock nor its owner can be asked) is
    // judged by its file's age as an owner that cannot be asked: a waiter waits while it is
    // within the waiter's bound and takes it over past it; a cleanup's bound is an hour (a
    // waiter used to do the same, a cleanup to leave it for ever).
    REQUIRE(s.try_claim(dc_key("link"), {}).state == cc::claim_state::claimed);
    REQUIRE(::unlink(path_of("link").c_str()) == 0);
    REQUIRE(::symlink("/nonexistent", path_of("link").c_str()) == 0);
    set_times_ago(path_of("link"), 120);
    cc::claim_answer const within = s.try_claim(dc_key("link"), waiting(600000));
    CHECK(within.state == cc::claim_state::held);
    CHECK_FALSE(within.took_over);
    struct ::stat st {};
    CHECK((::lstat(path_of("link").c_str(), &st) == 0 && S_ISLNK(st.st_mode)));
    CHECK(s.prune().claim_files_removed == 0);
    cc::claim_answer const beyond = s.try_claim(dc_key("link"), waiting(60000));
    CHECK(beyond.state == cc::claim_state::claimed);
    CHECK(beyond.took_over);
    CHECK((::lstat(path_of("link").c_str(), &st) == 0 && S_ISREG(st.st_mode))); // this process's claim now
    s.release_claim(dc_key("link"));
    REQUIRE(::symlink("/nonexistent", path_of("link").c_str()) == 0);
    set_times_ago(path_of("link"), 7200);
    CHECK(s.prune().claim_files_removed == 1); // past a cleanup's hour
    CHECK(dc_claims_under(dir.path()).empty());
}

TEST_CASE("directory claims: a live claimant's claim that a waiter cannot read is judged by its age: waited for "
          "within the waiter's bound, taken over past it (another process)",
          "[single-flight][directory][processes]") {
    temp_dir dir;
    fs::path const cache = dir.path() / "cache";
    cc::directory_storage s(cache.string());
    cc::key const k = dc_key("unreadable");
    std::string const claim = s.entry_path(k) + ".claim";
    // This process claims (alive, the file held open and locked), then its claim file is
    // made unreadable to others and two minutes old by its file's time.
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    std::string const folder = fs::path(claim).parent_path().string();
    // (The waiter may search the directories and write the folder: what it removes is
    // up to its judgement alone.)
    for (fs::path const& d : {dir.path(), cache}) REQUIRE(::chmod(d.c_str(), 0755) == 0);
    REQUIRE(::chmod(folder.c_str(), 0777) == 0);
    REQUIRE(::chmod(claim.c_str(), 0) == 0);
    set_times_ago(claim, 120);
    // Waiters in another process (as another user when this one is root): they cannot open
    // the claim, so neither its lock nor its owner can be asked. One whose bound is 10
    // minutes waits; one whose bound is 1 minute takes it over (a second compile of the
    // kernel, never a wrong result), as it would another machine's claim.
    std::string const got = compile_cache_test::run_in_child([&]() -> std::string {
        if (!dc_drop_root()) return "cannot drop root";
        cc::directory_storage waiter(cache.string());
        std::string out;
        for (long long ms : {600000LL, 60000LL}) {
            cc::claim_answer const a = waiter.try_claim(k, {cc::claim_scope::local, std::chrono::milliseconds(ms)});
            if (a.state == cc::claim_state::claimed) waiter.release_claim(k);
            out += "state=" + std::to_string(static_cast<int>(a.state)) + " took-over=" + std::to_string(a.took_over) +
                   ";";
        }
        return out;
    });
    CHECK(got == "state=" + std::to_string(static_cast<int>(cc::claim_state::held)) + " took-over=0;state=" +
                     std::to_string(static_cast<int>(cc::claim_state::claimed)) + " took-over=1;");
    struct ::stat after {};
    CHECK(::lstat(claim.c_str(), &after) != 0); // taken over, then released by the waiter
    s.release_claim(k); // (its file is gone: nothing else is removed)
    CHECK(dc_claims_under(cache).empty());
}

namespace {

/// Notes the fsyncs made from now on (dc_fsynced) until dc_fsyncs_noted().
void dc_note_fsyncs() {
    std::lock_guard<std::mutex> const lock(dc_fsynced_mutex);
    dc_fsynced.clear();
    dc_noting_fsyncs = true;
}

std::vector<std::string> dc_fsyncs_noted() {
    dc_noting_fsyncs = false;
    std::lock_guard<std::mutex> const lock(dc_fsynced_mutex);
    std::vector<std::string> out;
    out.swap(dc_fsynced);
    return out;
}

bool dc_fsynced_path(std::vector<std::string> const& paths, fs::path const& p) {
    std::string const want = fs::canonical(p).string();
    return std::find(paths.begin(), paths.end(), want) != paths.end();
}

std::string dc_listed(std::vector<std::string> const& paths) {
    std::string all;
    for (auto const& p : paths) all += p + "; ";
    return all;
}

cc::directory_options dc_full_durability() {
    cc::directory_options o;
    o.sync = cc::durability::full;
    return o;
}

} // namespace

// durability::full promises that a store that returned is on disk, which takes the cache
// directory's fsync when the entry's fan-out folder is new (its name is in the cache
// directory). A miss claims its key first, and try_claim makes the folder: the store
// that followed found it there and never synced the cache directory.
TEST_CASE("directory claims: durability full, a store without a claim into a new folder syncs the cache "
          "directory",
          "[directory][claims][durability]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::directory_storage s(root.string(), dc_full_durability());
    cc::key const k = dc_key("durability-plain");
    dc_note_fsyncs();
    REQUIRE_FALSE(s.write(k, std::string(4096, 'e')));
    std::vector<std::string> const paths = dc_fsyncs_noted();
    INFO("fsynced: " << dc_listed(paths));
    CHECK(dc_fsynced_path(paths, fs::path(s.entry_path(k)).parent_path())); // the new fan-out folder
    CHECK(dc_fsynced_path(paths, root)); // the cache directory, which holds the new folder's name
}

TEST_CASE("directory claims: durability full, a claim that made the folder, then the store through it: the "
          "cache directory is synced before the store returns",
          "[directory][claims][durability]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::directory_storage s(root.string(), dc_full_durability());
    cc::key const k = dc_key("durability-claimed");
    fs::path const entry = s.entry_path(k);
    REQUIRE_FALSE(fs::exists(entry.parent_path()));
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed); // the folder is made here
    REQUIRE(fs::is_directory(entry.parent_path()));
    dc_note_fsyncs();
    REQUIRE_FALSE(s.write(k, std::string(4096, 'e'))); // through the claim (longer than its owner text)
    std::vector<std::string> const paths = dc_fsyncs_noted();
    s.release_claim(k);
    REQUIRE(fs::exists(entry));
    INFO("fsynced by the store: " << dc_listed(paths));
    CHECK(dc_fsynced_path(paths, entry.parent_path()));
    CHECK(dc_fsynced_path(paths, root));
}

TEST_CASE("directory claims: durability full, another thread's claim made the folder, the store the usual "
          "way: the cache directory is synced",
          "[directory][claims][durability]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::directory_storage s(root.string(), dc_full_durability());
    cc::key const k = dc_key("durability-claimed-elsewhere");
    fs::path const entry = s.entry_path(k);
    // A host that claims in one thread and stores in another: no claim of this thread's to
    // store through, so the store goes the usual way and finds the folder there.
    bool claimed = false;
    std::thread([&] { claimed = s.try_claim(k, {}).state == cc::claim_state::claimed; }).join();
    REQUIRE(claimed);
    REQUIRE(fs::is_directory(entry.parent_path()));
    dc_note_fsyncs();
    REQUIRE_FALSE(s.write(k, std::string(4096, 'e')));
    std::vector<std::string> const paths = dc_fsyncs_noted();
    s.release_claim(k);
    INFO("fsynced by the store: " << dc_listed(paths));
    CHECK(dc_fsynced_path(paths, entry.parent_path()));
    CHECK(dc_fsynced_path(paths, root));
}

TEST_CASE("directory claims: durability full, a claim that made the folder syncs the cache directory itself",
          "[directory][claims][durability]") {
    // (Another process may be the one to store into it: a waiter that takes the claim over.)
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::directory_storage s(root.string(), dc_full_durability());
    cc::key const k = dc_key("durability-claim-alone");
    REQUIRE_FALSE(s.write(dc_key("durability-first"), "x")); // the cache directory made
    REQUIRE_FALSE(fs::exists(fs::path(s.entry_path(k)).parent_path()));
    dc_note_fsyncs();
    REQUIRE(s.try_claim(k, {}).state == cc::claim_state::claimed);
    std::vector<std::string> const paths = dc_fsyncs_noted();
    s.release_claim(k);
    INFO("fsynced by the claim: " << dc_listed(paths));
    CHECK(dc_fsynced_path(paths, root));
}

TEST_CASE("directory claims: a claim dated ahead of this clock by more than its bound is dead, not alive for ever",
          "[single-flight][directory]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    auto path_of = [&](char const* name) { return s.entry_path(dc_key(name)) + ".claim"; };
    std::string const far = "pid=9 boot=another-boot start=1 host=machine-b";
    long long const now_ns = dc_now_ns();
    // Another machine's claim, its clock an hour ahead (or ours set back), a bound of a
    // minute: a waiter with a bound of a minute takes it over, as it would an hour-old one
    // (it waited its whole bound on every miss of the kernel until this clock caught up).
    dc_plant_claim(s, "ahead", far + " created_ns=" + std::to_string(now_ns + 3'600'000'000'000LL) +
                                   " expiry_ms=60000\n");
    cc::claim_answer const a = s.try_claim(dc_key("ahead"), {cc::claim_scope::local, std::chrono::seconds(60)});
    CHECK(a.state == cc::claim_state::claimed);
    CHECK(a.took_over);
    s.release_claim(dc_key("ahead"));
    // Cleanups alike: one whose time does not fit a number (read as the largest), one a
    // minute ahead within its bound of ten (it stays), and one recording no time whose
    // file is dated two hours ahead (past the hour of one recording no bound).
    dc_plant_claim(s, "huge", far + " created_ns=99999999999999999999 expiry_ms=60000\n");
    dc_plant_claim(s, "near", far + " created_ns=" + std::to_string(now_ns + 60'000'000'000LL) +
                                  " expiry_ms=600000\n");
    dc_plant_claim(s, "no-time", far + "\n");
    set_times_ago(path_of("no-time"), -7200);
    cc::cleanup_result const r = s.prune();
    CHECK_FALSE(r.error);
    CHECK(r.claim_files_removed == 2);
    CHECK(dc_claims_under(dir.path()) == std::vector<std::string>{path_of("near")});
}

// Run only by the test below, in the program image that its child exec'd: takes over the
// claim that child left (its pid and start time are this image's own).
TEST_CASE("directory claims: exec probe, run by the test after it", "[.dc-exec-probe]") {
    char const* const cache = std::getenv("DC_EXEC_PROBE_CACHE");
    REQUIRE(cache != nullptr);
    cc::directory_storage s(cache);
    cc::claim_answer const a = s.try_claim(dc_key("exec"), {cc::claim_scope::local, std::chrono::seconds(60)});
    CHECK(a.state == cc::claim_state::claimed);
    CHECK(a.took_over);
}

TEST_CASE("directory claims: a claim this process took before it exec'd a new program is dead for that program",
          "[single-flight][directory]") {
    temp_dir dir;
    std::string const cache = (dir.path() / "cache").string();
    // A fresh process claims, then execs this test program (same pid, same start time;
    // the claim file's descriptor closed, its lock gone), which claims the same key.
    pid_t const child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        cc::directory_storage s(cache);
        if (s.try_claim(dc_key("exec"), {}).state != cc::claim_state::claimed) ::_exit(90);
        ::setenv("DC_EXEC_PROBE_CACHE", cache.c_str(), 1);
        ::execl("/proc/self/exe", "/proc/self/exe", "[dc-exec-probe]", "--out", "/dev/null",
                static_cast<char*>(nullptr));
        ::_exit(91);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0); // (the probe's failures, as Catch2 counts them)
}

TEST_CASE("directory claims: a directory with a claim's name is no claim for a waiter: it claims none and never "
          "waits on it",
          "[single-flight][directory]") {
    temp_dir dir;
    cc::directory_storage s((dir.path() / "cache").string());
    std::string const path = s.entry_path(dc_key("dir")) + ".claim";
    fs::create_directories(path); // (it never goes: a cleanup leaves it, as the test above says)
    cc::claim_answer const a = s.try_claim(dc_key("dir"), {cc::claim_scope::local, std::chrono::seconds(60)});
    CHECK(a.state == cc::claim_state::none);
    CHECK_FALSE(a.took_over);
    CHECK(fs::is_directory(path));
}

TEST_CASE("directory claims: a store that failed midway through its claim file leaves no tail in a later store's "
          "entry",
          "[storage][claims]") {
    // The first store of the claimed key writes into the claim file and stops at a file
    // size limit (as on a full disk): part of its bytes stay in the claim file. A second
    // store of the key under the same claim, with fewer bytes, must give an entry of
    // exactly those bytes, not those bytes followed by the first store's tail.
    temp_dir dir;
    std::string const out = compile_cache_test::run_in_child([&] {
        std::signal(SIGXFSZ, SIG_IGN);
        cc::directory_storage s((dir.path() / "cache").string());
        cc::key const k = dc_key("tail");
        if (s.try_claim(k, {}).state != cc::claim_state::claimed) return std::string("not claimed");
        struct rlimit saved {};
        ::getrlimit(RLIMIT_FSIZE, &saved);
        struct rlimit limit = saved;
        limit.rlim_cur = 4096;
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return std::string("skip: setrlimit");
        std::error_code const first = s.write(k, std::string(10000, 'a'));
        ::setrlimit(RLIMIT_FSIZE, &saved);
        // What a store cut short by a full disk leaves (the limit is now asked before any
        // write, so this one left nothing): bytes in the claim file.
        {
            std::ofstream claim(s.entry_path(k) + ".claim", std::ios::binary | std::ios::app);
            claim << std::string(4096, 'a');
            if (!claim) return std::string("skip: the claim file could not be written");
        }
        std::string const second_bytes(1000, 'b');
        std::error_code const second = s.write(k, second_bytes);
        std::string read;
        cc::read_result const r = s.read(k, read, 1 << 20);
        s.release_claim(k);
        return std::string(first ? "first failed" : "first stored") + (second ? ", second failed" : ", second stored") +
               (r.status == cc::read_status::found && read == second_bytes ? ", entry exact"
                                                                             : ", entry of " +
                                                                                   std::to_string(read.size()) +
                                                                                   " bytes") +
               (dc_claims_under(dir.path()).empty() ? "" : ", a claim left");
    });
    if (out.rfind("skip:", 0) == 0) {
        WARN("the file size limit could not be set (" << out << "); not run");
        return;
    }
    CHECK(out == "first failed, second stored, entry exact");
}
