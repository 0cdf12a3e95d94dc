// directory_storage's mapped reads (issue 27, part 1): entries of at least map_min_size
// bytes are mapped and loaded from the mapping; a file truncated for real between the
// map and the read is a read-error miss, never a crash; so is one written in place while
// it is deserialized, and a cache with a secret never maps; a file renamed over while
// mapped still loads whole; a thread that blocks SIGBUS reads; a SIGBUS elsewhere still
// ends the process, or stays ignored when sent to a host that ignored it; a host's own
// SIGBUS handler turns mapping off.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/storage_model.hpp"

#include <compile_cache/storage/directory/directory_storage.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using cc::directory_storage;
using cc::read_status;
using compile_cache_test::temp_dir;
namespace impl = cc::detail::directory_storage_impl;

constexpr std::size_t large = 300 * 1024; // over the default map_min_size, not a page multiple
cc::entry_info const info{"big", "big.dsl", 1};

/// Entries of `large` bytes mapped (the default threshold is 1 MiB: larger files than a
/// test needs).
cc::directory_options mapping() {
    cc::directory_options o;
    o.map_min_size = 64 * 1024;
    return o;
}

/// Sets the test hook for one scope.
struct after_map_hook {
    explicit after_map_hook(void (*hook)(char const*)) { impl::after_map_for_testing = hook; }
    ~after_map_hook() { impl::after_map_for_testing = nullptr; }
};

void truncate_to_nothing(char const* path) { REQUIRE(::truncate(path, 0) == 0); }
void truncate_to_a_page(char const* path) { REQUIRE(::truncate(path, 4096) == 0); }

std::uint64_t sum_of(std::string_view bytes) {
    std::uint64_t sum = 0;
    for (char c : bytes) sum += static_cast<unsigned char>(c);
    return sum;
}

} // namespace

TEST_CASE("a large entry is mapped and loads whole, a small one is read", "[storage][mapped]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string(), mapping());
    cc::key const big = storage_test::key_of(1).value(), small = storage_test::key_of(2).value();
    std::string const big_bytes = storage_test::payload_of(1, 0, large), small_bytes(1000, 'x');
    REQUIRE(!s.write(big, big_bytes));
    REQUIRE(!s.write(small, small_bytes));

    std::string buffer;
    cc::entry_view view;
    REQUIRE(s.read_view(big, buffer, std::size_t{1} << 20, view).status == read_status::found);
    CHECK(view.mapped());
    CHECK(view.intact());
    CHECK(view.bytes() == big_bytes);
    REQUIRE(s.read_view(small, buffer, std::size_t{1} << 20, view).status == read_status::found);
    CHECK(!view.mapped());
    CHECK(view.bytes() == small_bytes);
    CHECK(s.read_view(big, buffer, 1000, view).status == read_status::too_large);
    CHECK(view.bytes().empty());

    cc::directory_options never;
    never.map_min_size = 0;
    directory_storage unmapped((dir.path() / "cache").string(), never);
    REQUIRE(unmapped.read_view(big, buffer, std::size_t{1} << 20, view).status == read_status::found);
    CHECK(!view.mapped());
    CHECK(view.bytes() == big_bytes);

    storage_test::cache c{directory_storage((dir.path() / "cache2").string(), mapping())};
    cc::key_result const k = storage_test::key_of(3);
    REQUIRE(c.store(k, storage_test::make_artifact(3, 0, large), info));
    std::optional<storage_test::artifact> const loaded = c.load<storage_test::artifact>(k, info);
    REQUIRE(loaded);
    CHECK(storage_test::is_right(*loaded, 3, large));
}

TEST_CASE("an entry truncated between the map and the read is a miss, not a crash", "[storage][mapped]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    cc::key const k = storage_test::key_of(1).value();
    std::string const bytes = storage_test::payload_of(1, 0, large);
    directory_storage s(root.string(), mapping());
    REQUIRE(!s.write(k, bytes));

    SECTION("the storage's view: zeros from the fault on, and not intact") {
        std::string buffer;
        cc::entry_view view;
        {
            after_map_hook const hook(truncate_to_a_page);
            REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
        }
        REQUIRE(view.mapped());
        CHECK(fs::file_size(s.entry_path(k)) == 4096); // truncated for real
        std::string_view const seen = view.bytes();
        REQUIRE(seen.size() == bytes.size());
        CHECK(seen.substr(0, 4096) == std::string_view(bytes).substr(0, 4096)); // still the file's
        CHECK(sum_of(seen.substr(4096)) == 0); // every page past the end faulted: zeros
        CHECK(!view.intact());
        view.reset();
        REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
        CHECK(view.bytes().size() == 4096); // what is there now, read (under the threshold)
    }
    SECTION("through a cache: a read-error miss, the file left alone") {
        storage_test::cache c{directory_storage(root.string(), mapping())};
        cc::key_result const ck = storage_test::key_of(2);
        REQUIRE(c.store(ck, storage_test::make_artifact(2, 0, large), info));
        std::string const path = c.storage().entry_path(ck.value());
        {
            after_map_hook const hook(truncate_to_nothing);
            CHECK(!c.load<storage_test::artifact>(ck, info));
        }
        CHECK(c.stats().miss_count(cc::miss_reason::read_error) == 1);
        CHECK(c.stats().miss_count(cc::miss_reason::corrupt) == 0);
        CHECK(fs::exists(path)); // not reported as corrupt: it was not read as it is
        CHECK(fs::file_size(path) == 0);
        {
            after_map_hook const hook(truncate_to_a_page);
            REQUIRE(c.store(ck, storage_test::make_artifact(2, 0, large), info));
            CHECK(!c.load<storage_test::artifact>(ck, info));
        }
        CHECK(c.stats().miss_count(cc::miss_reason::read_error) == 2);
        REQUIRE(c.store(ck, storage_test::make_artifact(2, 0, large), info));
        std::optional<storage_test::artifact> const again = c.load<storage_test::artifact>(ck, info);
        REQUIRE(again);
        CHECK(storage_test::is_right(*again, 2, large));
    }
}

namespace {
directory_storage* replacing_storage = nullptr;
void replace_entry(char const*) {
    // A store of the key meanwhile renames a new file over the entry: the mapping keeps
    // the old file, whole.
    impl::after_map_for_testing = nullptr;
    REQUIRE(!replacing_storage->write(storage_test::key_of(1).value(), std::string(large, 'n')));
}
} // namespace

TEST_CASE("an entry replaced while mapped still reads whole, as it was", "[storage][mapped]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string(), mapping());
    cc::key const k = storage_test::key_of(1).value();
    std::string const bytes = storage_test::payload_of(1, 0, large);
    REQUIRE(!s.write(k, bytes));
    replacing_storage = &s;
    std::string buffer;
    cc::entry_view view;
    {
        after_map_hook const hook(replace_entry);
        REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
    }
    replacing_storage = nullptr;
    CHECK(view.mapped());
    CHECK(view.bytes() == bytes);
    CHECK(view.intact());
    std::string now;
    REQUIRE(s.read(k, now, std::size_t{1} << 20).status == read_status::found);
    CHECK(now == std::string(large, 'n'));
}

TEST_CASE("a SIGBUS outside a mapping still ends the process, and a host's own handler turns mapping off",
          "[storage][mapped]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string(), mapping());
    cc::key const k = storage_test::key_of(1).value();
    REQUIRE(!s.write(k, std::string(large, 'm')));
    std::string buffer;
    cc::entry_view view;
    REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
    REQUIRE(view.mapped()); // the guard is installed now
    view.reset();

    pid_t const child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::raise(SIGBUS); // not a fault in a mapping: the default action, as without the guard
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    // Ended by the previous action: the default one kills it with SIGBUS (a sanitizer's
    // reports and exits with an error); it never went on to exit(0).
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer (abort_on_error=1, as scripts/test.sh runs it) its report of
    // the signal ends the child with SIGABRT.
    if (WIFSIGNALED(status)) CHECK((WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT));
#else
    if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGBUS);
#endif

    struct sigaction host {}, saved {};
    host.sa_handler = [](int) {};
    sigemptyset(&host.sa_mask);
    REQUIRE(::sigaction(SIGBUS, &host, &saved) == 0);
    REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
    CHECK(!view.mapped()); // ours no longer runs: read instead
    CHECK(view.bytes() == std::string(large, 'm'));
    REQUIRE(::sigaction(SIGBUS, &saved, nullptr) == 0);
    REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
    CHECK(view.mapped());
}

TEST_CASE("a SIGBUS sent to a host that ignored SIGBUS before the first mapping is still ignored",
          "[storage][mapped]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string(), mapping());
    cc::key const k = storage_test::key_of(2).value();
    REQUIRE(!s.write(k, std::string(large, 'i')));
    std::string buffer;
    cc::entry_view view;
    REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
    REQUIRE(view.mapped()); // the guard is installed now
    view.reset();

    pid_t const child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // As in a host that set SIGBUS to SIG_IGN before its first mapped hit (the guard
        // is installed once per process: set here what it found then).
        struct sigaction& previous = impl::previous_sigbus_action();
        previous = {};
        previous.sa_handler = SIG_IGN;
        ::raise(SIGBUS); // sent, not a fault: ignored, as without the guard
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    INFO("ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

namespace {
/// Writes `bytes` over the file at `path` from `offset`, in place (the same inode).
void write_in_place(std::string const& path, off_t offset, std::string const& bytes) {
    int const fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), offset) == static_cast<ssize_t>(bytes.size()));
    REQUIRE(::close(fd) == 0);
}

/// Sets the file's modification time `seconds` back, as an entry last used then has it
/// (a hit refreshes it once it is an hour old); that time, in seconds since the epoch.
std::int64_t used_seconds_ago(std::string const& path, std::int64_t seconds) {
    struct timespec times[2];
    REQUIRE(::clock_gettime(CLOCK_REALTIME, &times[0]) == 0);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
    return times[0].tv_sec;
}

/// An artifact whose load first calls `while_loading` (when set): what the cache does
/// between the entry's check and its deserialization.
void (*while_loading)() = nullptr;
struct hooked_artifact {
    std::string payload;
    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        if constexpr (Archive::is_loading::value) {
            if (while_loading != nullptr) while_loading();
        }
        ar & payload;
    }
};
std::string hooked_path;
void overwrite_payload_in_place() {
    write_in_place(hooked_path, static_cast<off_t>(fs::file_size(hooked_path) - 200), std::string(16, 'Z'));
}
} // namespace

TEST_CASE("a mapped entry written in place is no longer intact, and a cache loading it misses", "[storage][mapped]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    std::string const original = storage_test::payload_of(4, 0, large);

    SECTION("the storage's view: the write shows in the mapping, and intact() says so") {
        directory_storage s(root.string(), mapping());
        cc::key const k = storage_test::key_of(1).value();
        REQUIRE(!s.write(k, original));
        (void)used_seconds_ago(s.entry_path(k), 60);
        std::string buffer;
        cc::entry_view view;
        REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
        REQUIRE(view.mapped());
        CHECK(view.intact());
        write_in_place(s.entry_path(k), 1000, std::string(16, 'Z'));
        CHECK(view.bytes().substr(1000, 16) == std::string(16, 'Z')); // a private mapping shows it
        CHECK(!view.intact());
    }
    SECTION("an entry unused for over an hour: its use time refreshed before the mapping, not taken for a write") {
        directory_storage s(root.string(), mapping());
        cc::key const k = storage_test::key_of(5).value();
        REQUIRE(!s.write(k, original));
        std::int64_t const last_used = used_seconds_ago(s.entry_path(k), 2 * 3600);
        std::string buffer;
        cc::entry_view view;
        REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
        REQUIRE(view.mapped());
        CHECK(view.intact());
        CHECK(view.bytes() == original);
        struct stat st {};
        REQUIRE(::stat(s.entry_path(k).c_str(), &st) == 0);
        CHECK(st.st_mtime > last_used + 3600); // refreshed
    }
    SECTION("through a cache, written between the check and the deserialization: a read-error miss") {
        storage_test::cache c{directory_storage(root.string(), mapping())};
        cc::key_result const k = storage_test::key_of(2);
        REQUIRE(c.store(k, hooked_artifact{original}, info));
        hooked_path = c.storage().entry_path(k.value());
        (void)used_seconds_ago(hooked_path, 60);
        while_loading = overwrite_payload_in_place;
        std::optional<hooked_artifact> const loaded = c.load<hooked_artifact>(k, info);
        while_loading = nullptr;
        CHECK(!loaded);
        CHECK(c.stats().miss_count(cc::miss_reason::read_error) == 1);
        CHECK(c.stats().hits == 0);
    }
    SECTION("through a cache with a secret: read, not mapped, so the write after the check changes nothing") {
        cc::cache_options keyed;
        keyed.secret = "a secret of the cache's writers";
        storage_test::cache c{directory_storage(root.string(), mapping()), keyed};
        cc::key_result const k = storage_test::key_of(3);
        REQUIRE(c.store(k, hooked_artifact{original}, info));
        hooked_path = c.storage().entry_path(k.value());
        while_loading = overwrite_payload_in_place;
        std::optional<hooked_artifact> const loaded = c.load<hooked_artifact>(k, info);
        while_loading = nullptr;
        REQUIRE(loaded);
        CHECK(loaded->payload == original); // the bytes the HMAC covered, not the file's now
    }
}

TEST_CASE("a thread that blocks SIGBUS reads a large entry instead of mapping it, and lives", "[storage][mapped]") {
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string(), mapping());
    cc::key const k = storage_test::key_of(1).value();
    std::string const bytes = storage_test::payload_of(1, 0, large);
    REQUIRE(!s.write(k, bytes));
    {
        std::string buffer;
        cc::entry_view view;
        REQUIRE(s.read_view(k, buffer, std::size_t{1} << 20, view).status == read_status::found);
        REQUIRE(view.mapped()); // mapped where SIGBUS is not blocked
    }
    pid_t const child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // A fault while SIGBUS is blocked would end this process (the kernel's default
        // action): had the entry been mapped, the truncation would kill it.
        sigset_t all;
        sigfillset(&all);
        ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
        impl::after_map_for_testing = truncate_to_a_page;
        std::string buffer;
        cc::entry_view view;
        read_status const st = s.read_view(k, buffer, std::size_t{1} << 20, view).status;
        ::_exit(st == read_status::found && view.bytes() == bytes && !view.mapped() ? 0 : 1); // (bytes first: they fault if mapped)
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
