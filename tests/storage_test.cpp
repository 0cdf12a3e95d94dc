// The Storage models: what every model promises, then directory_storage against real
// file-system situations (symlinks, FIFOs, read-only folders, a vanished directory,
// a file size limit) and the thread safety of memory_storage.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/scratch_storage.hpp"

#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/memory_storage.hpp>
#include <compile_cache/storage/null_storage.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace {

using compile_cache::directory_options;
using compile_cache::directory_storage;
using compile_cache::key;
using compile_cache::memory_storage;
using compile_cache::null_storage;
using compile_cache::read_status;
using compile_cache_test::read_file;
using compile_cache_test::temp_dir;
using compile_cache_test::scratch_storage;
using compile_cache_test::write_file;
namespace fs = std::filesystem;

/// A key whose first byte (the fan-out folder) is `first`, made distinct by `n`.
key make_key(unsigned char first, std::uint32_t n = 0, std::size_t size = 32) {
    std::array<unsigned char, key::max_size> b{};
    b[0] = first;
    for (std::size_t i = 0; i < 4; ++i) b[1 + i] = static_cast<unsigned char>(n >> (8 * i));
    for (std::size_t i = 5; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i * 37u + first);
    return key(b.data(), size);
}

/// Every byte value, NUL included, several times over.
std::string binary_bytes(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 256) & 0xff);
    return s;
}

std::set<std::string> names_in(fs::path const& dir) {
    std::set<std::string> names;
    for (auto const& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
}

bool is_lower_hex(std::string const& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
}

using compile_cache_test::mode_of;
using compile_cache_test::running_as_root;
using compile_cache_test::umask_guard;

// One object per model under test; directory_storage gets a fresh directory that
// does not exist yet, so that its first write has to create it.
template <class S>
struct fixture {
    S storage;
};
template <>
struct fixture<directory_storage> {
    temp_dir dir;
    directory_storage storage{(dir.path() / "cache").string()};
};

} // namespace

TEMPLATE_TEST_CASE("a storage returns what was written under a key", "[storage]", memory_storage,
                   directory_storage, null_storage) {
    fixture<TestType> fx;
    TestType& s = fx.storage;
    std::string out = "stale";
    key const k = make_key(0xab, 1);

    static_assert(noexcept(s.read(k, out, 1)));
    static_assert(noexcept(s.write(k, std::string_view())));
    static_assert(noexcept(s.remove(k)));

    if constexpr (std::is_same_v<TestType, null_storage>) {
        // Documented: keeps nothing, refuses nothing.
        CHECK(s.write(k, "bytes") == std::error_code());
        auto const r = s.read(k, out, 1 << 20);
        CHECK(r.status == read_status::absent);
        CHECK(!r.error);
        CHECK(out.empty());
        CHECK(s.remove(k) == std::error_code());
        CHECK(s.remove(make_key(0x01)) == std::error_code());
    } else {
        SECTION("nothing is found before a write") {
            auto const r = s.read(k, out, 1 << 20);
            CHECK(r.status == read_status::absent);
            CHECK(!r.error);
            CHECK(out.empty());
        }
        SECTION("binary bytes come back exactly") {
            std::string const bytes = binary_bytes(70000);
            REQUIRE(!s.write(k, bytes));
            auto const r = s.read(k, out, bytes.size());
            REQUIRE(r.status == read_status::found);
            CHECK(!r.error);
            CHECK(out == bytes);
        }
        SECTION("an empty value is an entry, not an absence") {
            REQUIRE(!s.write(k, std::string_view()));
            CHECK(s.read(k, out, 0).status == read_status::found);
            CHECK(out.empty());
        }
        SECTION("a large value") {
            std::string const bytes = binary_bytes(4u << 20);
            REQUIRE(!s.write(k, bytes));
            REQUIRE(s.read(k, out, bytes.size()).status == read_status::found);
            CHECK(out == bytes);
        }
        SECTION("a second write replaces the whole entry") {
            REQUIRE(!s.write(k, std::string(100000, 'L')));
            REQUIRE(!s.write(k, "short"));
            REQUIRE(s.read(k, out, 1 << 20).status == read_status::found);
            CHECK(out == "short");
        }
        SECTION("max_size is an inclusive bound; over it nothing is read") {
            REQUIRE(!s.write(k, std::string(1000, 'x')));
            CHECK(s.read(k, out, 1000).status == read_status::found);
            out = "stale";
            auto const r = s.read(k, out, 999);
            CHECK(r.status == read_status::too_large);
            CHECK(!r.error);
            CHECK(out.empty());
        }
        SECTION("remove makes a key absent; removing an absent key is fine") {
            REQUIRE(!s.write(k, "bytes"));
            CHECK(!s.remove(k));
            CHECK(s.read(k, out, 100).status == read_status::absent);
            CHECK(!s.remove(k));
            CHECK(!s.remove(make_key(0x77, 5)));
        }
        SECTION("keys are kept apart, including keys that are prefixes of others") {
            key const short_key = make_key(0xab, 1, 16); // the first 16 bytes of k
            key const other = make_key(0xab, 2);
            key const tiny = make_key(0xab, 0, 1);
            REQUIRE(!s.write(k, "k"));
            REQUIRE(!s.write(short_key, "short"));
            REQUIRE(!s.write(other, "other"));
            REQUIRE(!s.write(tiny, "tiny"));
            CHECK((s.read(k, out, 100).status == read_status::found && out == "k"));
            CHECK((s.read(short_key, out, 100).status == read_status::found && out == "short"));
            CHECK((s.read(other, out, 100).status == read_status::found && out == "other"));
            CHECK((s.read(tiny, out, 100).status == read_status::found && out == "tiny"));
            CHECK(!s.remove(other));
            CHECK((s.read(k, out, 100).status == read_status::found && out == "k"));
        }
    }
}

TEST_CASE_METHOD(scratch_storage, "directory_storage lays entries out as DIR/ab/<hex of the key>",
          "[storage][directory_storage]") {
    CHECK(s.directory() == root.string());

    unsigned char const bytes[] = {0xAB, 0xCD, 0xEF, 0x01, 0x9A};
    key const k(bytes, sizeof bytes);
    CHECK(s.entry_path(k) == (root / "ab" / "abcdef019a").string());
    CHECK(directory_storage(root.string() + "//").entry_path(k) == s.entry_path(k));
    CHECK(directory_storage(root.string() + "/").directory() == root.string());

    REQUIRE(!s.write(k, "payload"));
    CHECK(fs::is_regular_file(fs::symlink_status(s.entry_path(k))));
    CHECK(read_file(s.entry_path(k)) == "payload");

    // One folder per first byte, each holding exactly the entries of that byte.
    std::vector<key> keys = {make_key(0x00), make_key(0x0f), make_key(0xff), make_key(0xff, 1),
                             make_key(0x7e, 0, 1)};
    for (auto const& x : keys) REQUIRE(!s.write(x, x.hex()));
    // ...and the size ledger beside them.
    CHECK(names_in(root) == std::set<std::string>{".cc-stats", "00", "0f", "7e", "ab", "ff"});
    CHECK(names_in(root / "ff") == std::set<std::string>{keys[2].hex(), keys[3].hex()});
    CHECK(names_in(root / "7e") == std::set<std::string>{"7e"});
    for (auto const& x : keys) CHECK(read_file(s.entry_path(x)) == x.hex());
}

TEST_CASE_METHOD(scratch_storage, "directory_storage leaves no temp file behind a successful write",
          "[storage][directory_storage]") {

    std::set<std::string> expected;
    for (std::uint32_t i = 0; i < 200; ++i) {
        key const k = make_key(static_cast<unsigned char>(i % 5), i);
        for (int round = 0; round < 3; ++round)
            REQUIRE(!s.write(k, binary_bytes(i * 10 + static_cast<std::size_t>(round))));
        expected.insert(k.hex());
    }

    std::set<std::string> found;
    for (auto const& folder : fs::directory_iterator(root)) {
        std::string const name = folder.path().filename().string();
        if (name == ".cc-stats") continue; // the size ledger
        CHECK(folder.is_directory());
        CHECK((name.size() == 2 && is_lower_hex(name)));
        for (auto const& entry : fs::directory_iterator(folder.path())) {
            std::string const file = entry.path().filename().string();
            INFO(file);
            CHECK(is_lower_hex(file));
            CHECK(file.compare(0, 2, name) == 0);
            CHECK(entry.is_regular_file());
            found.insert(file);
        }
    }
    CHECK(found == expected);
}

TEST_CASE_METHOD(scratch_storage, "directory_storage replaces an entry by rename, never in place",
          "[storage][directory_storage]") {
    key const k = make_key(0x42);
    std::string const old_bytes = binary_bytes(100000);
    REQUIRE(!s.write(k, old_bytes));

    struct stat before {};
    REQUIRE(::stat(s.entry_path(k).c_str(), &before) == 0);
    // A reader that opened the old entry keeps seeing all of it.
    std::ifstream reader(s.entry_path(k), std::ios::binary);
    REQUIRE(reader);

    REQUIRE(!s.write(k, "short"));
    struct stat after {};
    REQUIRE(::stat(s.entry_path(k).c_str(), &after) == 0);
    CHECK(after.st_ino != before.st_ino);
    CHECK(after.st_size == 5);
    CHECK(fs::file_size(s.entry_path(k)) == 5);

    std::string out;
    REQUIRE(s.read(k, out, 1 << 20).status == read_status::found);
    CHECK(out == "short");
    std::string const seen((std::istreambuf_iterator<char>(reader)), std::istreambuf_iterator<char>());
    CHECK(seen == old_bytes);
}

TEST_CASE_METHOD(scratch_storage, "directory_storage refuses an entry over max_size without reading it",
          "[storage][directory_storage]") {
    key const k = make_key(0x10);
    REQUIRE(!s.write(k, std::string(100000, 'z')));

    std::string out;
    out.shrink_to_fit();
    auto const r = s.read(k, out, 99999);
    CHECK(r.status == read_status::too_large);
    CHECK(!r.error);
    CHECK(out.empty());
    CHECK(out.capacity() < 100000); // no buffer was ever sized for the entry

    REQUIRE(s.read(k, out, 100000).status == read_status::found);
    CHECK(out.size() == 100000);
}

TEST_CASE_METHOD(scratch_storage, "directory_storage does not follow a symlink planted at an entry path",
          "[storage][directory_storage]") {
    key const k = make_key(0xab, 7);
    fs::path const entry = s.entry_path(k);
    fs::path const target = dir.path() / "precious";
    write_file(target, "precious content");
    fs::create_directories(entry.parent_path());
    fs::create_symlink(target, entry);

    std::string out = "stale";
    auto const r = s.read(k, out, 1 << 20);
    CHECK(r.status == read_status::error);
    CHECK(r.error == std::errc::too_many_symbolic_link_levels);
    CHECK(out.empty());
    CHECK(read_file(target) == "precious content");

    // A write replaces the link itself with a regular file; the target is untouched.
    REQUIRE(!s.write(k, "new entry"));
    CHECK(fs::is_regular_file(fs::symlink_status(entry)));
    CHECK(read_file(entry) == "new entry");
    CHECK(read_file(target) == "precious content");
    REQUIRE(s.read(k, out, 1 << 20).status == read_status::found);
    CHECK(out == "new entry");

    // A dangling link: writing must not create its target.
    key const k2 = make_key(0xab, 8);
    fs::path const missing = dir.path() / "would-be-created";
    fs::create_symlink(missing, s.entry_path(k2));
    CHECK(s.read(k2, out, 1 << 20).status == read_status::error);
    REQUIRE(!s.write(k2, "second"));
    CHECK(!fs::exists(fs::symlink_status(missing)));
    CHECK(fs::is_regular_file(fs::symlink_status(s.entry_path(k2))));
}

TEST_CASE_METHOD(scratch_storage, "directory_storage rejects what is not a regular file at an entry path",
          "[storage][directory_storage]") {
    key const k = make_key(0x3c);
    fs::path const entry = s.entry_path(k);
    fs::create_directories(entry.parent_path());
    std::string out = "stale";

    SECTION("a FIFO: the read neither blocks nor succeeds") {
        REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);
        auto const r = s.read(k, out, 1 << 20);
        CHECK(r.status == read_status::error);
        CHECK(r.error);
        CHECK(out.empty());
    }
    SECTION("a directory: read fails, write fails and removes its temp file") {
        fs::create_directory(entry);
        write_file(entry / "inside", "x"); // non-empty, so rename cannot replace it
        auto const r = s.read(k, out, 1 << 20);
        CHECK(r.status == read_status::error);
        CHECK(r.error == std::errc::is_a_directory);

        std::error_code const ec = s.write(k, "bytes");
        CHECK(ec);
        CHECK(names_in(entry.parent_path()) == std::set<std::string>{k.hex()});
        CHECK(names_in(entry) == std::set<std::string>{"inside"});
    }
}

TEST_CASE("directory_storage reports a failed write and leaves no temp file",
          "[storage][directory_storage]") {
    temp_dir dir;
    fs::path const root = dir.path() / "cache";
    key const k = make_key(0xab, 3);
    std::string out;

    SECTION("a regular file where the fan-out folder should be (ENOTDIR)") {
        fs::create_directory(root);
        write_file(root / "ab", "not a folder");
        directory_storage s(root.string());
        CHECK(s.write(k, "bytes") == std::errc::not_a_directory);
        CHECK(names_in(root) == std::set<std::string>{"ab"});
        CHECK(read_file(root / "ab") == "not a folder");
        CHECK(s.read(k, out, 100).status == read_status::absent);
        CHECK(!s.remove(k));
    }
    SECTION("a regular file where the cache directory should be") {
        write_file(root, "not a folder");
        directory_storage s(root.string());
        CHECK(s.write(k, "bytes") == std::errc::not_a_directory);
        CHECK(read_file(root) == "not a folder");
    }
    SECTION("a file size limit hit in the middle of the write (EFBIG)") {
        directory_storage s(root.string());
        REQUIRE(!s.write(k, "old"));

        struct rlimit saved {};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
        struct rlimit limited = saved;
        limited.rlim_cur = 4096;
        auto const old_handler = std::signal(SIGXFSZ, SIG_IGN);
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
        std::error_code const ec = s.write(k, std::string(65536, 'n'));
        ::setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, old_handler);

        CHECK(ec == std::errc::file_too_large);
        CHECK(names_in(root / "ab") == std::set<std::string>{k.hex()});
        REQUIRE(s.read(k, out, 100).status == read_status::found);
        CHECK(out == "old");
    }
    SECTION("read-only directories (EACCES; not enforced for root)") {
        if (running_as_root()) {
            WARN("running as root: permission bits are not enforced, read-only case not run");
        } else {
            fs::create_directory(root);
            fs::permissions(root, fs::perms(0500));
            directory_storage s(root.string());
            CHECK(s.write(k, "bytes") == std::errc::permission_denied);
            CHECK(names_in(root).empty());

            // A read-only fan-out folder under a writable root.
            fs::permissions(root, fs::perms(0700));
            fs::create_directory(root / "ab");
            fs::permissions(root / "ab", fs::perms(0500));
            CHECK(s.write(k, "bytes") == std::errc::permission_denied);
            CHECK(names_in(root / "ab").empty());
            CHECK(s.read(k, out, 100).status == read_status::absent);
        }
    }
}

TEST_CASE("directory_storage recreates its directory after it was removed",
          "[storage][directory_storage]") {
    temp_dir dir;
    fs::path const root = dir.path() / "a" / "b" / "cache"; // mkdir -p on first write
    directory_storage s(root.string());
    key const k1 = make_key(0x01), k2 = make_key(0x02);
    std::string out;

    REQUIRE(!s.write(k1, "one"));
    CHECK(fs::is_directory(root / "01"));

    fs::remove_all(dir.path() / "a");
    CHECK(s.read(k1, out, 100).status == read_status::absent);
    CHECK(!s.remove(k1));

    REQUIRE(!s.write(k2, "two"));
    REQUIRE(s.read(k2, out, 100).status == read_status::found);
    CHECK(out == "two");
    CHECK(s.read(k1, out, 100).status == read_status::absent);
}

TEST_CASE("directory_storage creates files and folders with the configured modes",
          "[storage][directory_storage]") {
    umask_guard const um(022);
    temp_dir dir;
    key const k = make_key(0x5e);

    SECTION("defaults: files 0600, folders 0700, parents included") {
        fs::path const root = dir.path() / "x" / "cache";
        directory_storage s(root.string());
        REQUIRE(!s.write(k, "bytes"));
        CHECK(mode_of(s.entry_path(k)) == 0600u);
        CHECK(mode_of(root / "5e") == 0700u);
        CHECK(mode_of(root) == 0700u);
        CHECK(mode_of(dir.path() / "x") == 0700u);
        REQUIRE(!s.write(k, "rewritten")); // a replacement keeps the mode
        CHECK(mode_of(s.entry_path(k)) == 0600u);
    }
    SECTION("options, with the umask applied") {
        fs::path const root = dir.path() / "shared";
        directory_storage s(root.string(), directory_options{0664, 0775});
        REQUIRE(!s.write(k, "bytes"));
        CHECK(mode_of(s.entry_path(k)) == 0644u);
        CHECK(mode_of(root / "5e") == 0755u);
        CHECK(mode_of(root) == 0755u);
    }
}

TEST_CASE("a disabled directory_storage stores nothing", "[storage][directory_storage]") {
    directory_storage const disabled[] = {directory_storage(), directory_storage("")};
    for (auto s : disabled) {
        std::string out = "stale";
        key const k = make_key(0x01);
        CHECK(s.directory().empty());
        CHECK(s.entry_path(k).empty());
        CHECK(s.read(k, out, 100).status == read_status::absent);
        CHECK(out.empty());
        CHECK(s.write(k, "bytes") == std::errc::invalid_argument);
        CHECK(!s.remove(k));
    }
    temp_dir dir;
    directory_storage s((dir.path() / "cache").string());
    CHECK(s.write(key(), "bytes") == std::errc::invalid_argument);
    CHECK(!fs::exists(dir.path() / "cache"));
}

TEST_CASE_METHOD(scratch_storage, "directory_storage: concurrent writers to one key never expose a partial entry",
          "[storage][directory_storage]") {
    key const k = make_key(0x99);
    constexpr int writers = 4, rounds = 100;
    auto value_of = [](int w) { return std::string(static_cast<std::size_t>(20000 * (w + 1)), static_cast<char>('a' + w)); };

    std::atomic<bool> done{false};
    std::atomic<int> write_errors{0}, torn{0}, found{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w)
        threads.emplace_back([&, w] {
            directory_storage mine(root.string()); // one object per thread, one shared dir
            std::string const v = value_of(w);
            for (int i = 0; i < rounds; ++i)
                if (mine.write(k, v)) ++write_errors;
        });
    std::thread reader([&] {
        std::string out;
        while (!done.load()) {
            auto const r = s.read(k, out, 1 << 20);
            if (r.status == read_status::found) {
                ++found;
                if (out.empty() || out.size() % 20000 != 0 ||
                    out != std::string(out.size(), out[0]) ||
                    out.size() != static_cast<std::size_t>(20000 * (out[0] - 'a' + 1)))
                    ++torn;
            } else if (r.status != read_status::absent) {
                ++torn;
            }
        }
    });
    for (auto& t : threads) t.join();
    done = true;
    reader.join();

    CHECK(write_errors == 0);
    CHECK(torn == 0);
    CHECK(found > 0);
    CHECK(names_in(root / "99") == std::set<std::string>{k.hex()});
}

TEST_CASE("memory_storage loses no write from 8 threads", "[storage][memory_storage]") {
    memory_storage s;
    constexpr std::uint32_t threads_n = 8, keys_n = 1000;
    auto value_of = [](std::uint32_t t, std::uint32_t i) {
        return std::to_string(t) + ":" + std::to_string(i);
    };

    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < threads_n; ++t)
        threads.emplace_back([&, t] {
            std::string out;
            for (std::uint32_t i = 0; i < keys_n; ++i) {
                key const k = make_key(static_cast<unsigned char>(t), i);
                if (s.write(k, value_of(t, i))) ++failures;
                if (s.read(k, out, 100).status != read_status::found || out != value_of(t, i))
                    ++failures;
                // Someone else's key: absent or complete, nothing in between.
                std::uint32_t const u = (t + 1) % threads_n;
                auto const r = s.read(make_key(static_cast<unsigned char>(u), i), out, 100);
                if (r.status == read_status::found ? out != value_of(u, i)
                                                   : r.status != read_status::absent)
                    ++failures;
            }
        });
    for (auto& t : threads) t.join();

    CHECK(failures == 0);
    CHECK(s.size() == threads_n * keys_n);
    std::string out;
    int missing = 0;
    for (std::uint32_t t = 0; t < threads_n; ++t)
        for (std::uint32_t i = 0; i < keys_n; ++i)
            if (s.read(make_key(static_cast<unsigned char>(t), i), out, 100).status !=
                    read_status::found ||
                out != value_of(t, i))
                ++missing;
    CHECK(missing == 0);
}
