// Authenticated entries (envelope.hpp, flags bit 0): with a secret, a cache writes an
// HMAC-SHA256 (RFC 2104) over the entry as its last 32 bytes and loads only entries
// whose HMAC verifies under its secret. Unkeyed entries, entries made with another
// secret, damaged, truncated, flag-flipped and forged entries are misses with reason
// `unauthenticated`, and none of them reaches the deserializer. The accepted mode
// comes from the reader's configuration, never from the entry.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/stored_entry.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>
#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/hmac.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
namespace fs = std::filesystem;
using namespace compile_cache_test;        // temp_dir, files, stored_entry (support/)
using namespace compile_cache_test::model; // compiled_kernel, small_kernel

std::string const secret_a = "0123456789abcdef0123456789abcdef";
std::string const secret_b = "0123456789abcdef0123456789abcdeF"; // one bit away from secret_a

cc::cache_options with_secret(std::string const& secret) {
    cc::cache_options o;
    o.secret = secret;
    return o;
}

/// A directory cache keyed with secret_a, and the sound keyed entry it wrote.
struct keyed_entry : compile_cache_test::stored_entry {
    keyed_entry() : stored_entry(with_secret(secret_a)) {}
};

std::string body_of(std::string const& entry, std::size_t check_size) {
    return entry.substr(0, entry.size() - check_size);
}

std::size_t count_lines(std::string const& s) {
    std::size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

} // namespace

TEST_CASE("a keyed entry ends with the HMAC-SHA256 of everything before it, and its flags say keyed",
          "[envelope][keyed]") {
    keyed_entry s;
    REQUIRE(s.sound.size() > 32);
    CHECK(s.sound[10] == 1); // flags, little-endian: bit 0, keyed
    CHECK(s.sound[11] == 0);
    std::string const body = body_of(s.sound, 32);
    cc::hmac<cc::sha256> mac(secret_a.data(), secret_a.size());
    mac.update(body.data(), body.size());
    auto const tag = mac.result();
    CHECK(s.sound.compare(body.size(), 32, reinterpret_cast<char const*>(tag.data()), 32) == 0);

    // The same artifact unkeyed: flags 0 and a 4-byte CRC-32C, so 28 bytes shorter.
    temp_dir other;
    cc::default_cache unkeyed(cc::directory_storage((other.path() / "cache").string()));
    REQUIRE(unkeyed.store(s.k, small_kernel(), axpy_info));
    std::string const plain = read_file(unkeyed.storage().entry_path(s.k.value()));
    CHECK(plain.size() + 28 == s.sound.size());
    CHECK(plain[10] == 0);
    CHECK(s.cache.authenticated());
    CHECK(!unkeyed.authenticated());
}

TEST_CASE("a cache with a secret loads what it stored, over a directory and in memory", "[envelope][keyed]") {
    keyed_entry s;
    kernels_deserialized = 0;
    std::optional<compiled_kernel> loaded = s.cache.load<compiled_kernel>(s.k, axpy_info);
    REQUIRE(loaded);
    CHECK(loaded->bytecode == small_kernel().bytecode);
    CHECK(loaded->constants == small_kernel().constants);
    CHECK(kernels_deserialized == 1);

    // Another cache object, another process's worth of state, the same secret.
    cc::default_cache again(cc::directory_storage(s.root.string()), with_secret(secret_a));
    CHECK(again.load<compiled_kernel>(s.k, axpy_info));
    CHECK(again.stats().hits == 1);

    cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::memory_storage> memory(cc::memory_storage{},
                                                                                          with_secret(secret_a));
    auto first = memory.get_or_compile<compiled_kernel>(s.k, axpy_info, [] { return small_kernel(); });
    CHECK(first.outcome == cc::outcome::compiled);
    auto second = memory.get_or_compile<compiled_kernel>(s.k, axpy_info, [] { return small_kernel(); });
    CHECK(second.outcome == cc::outcome::loaded);
    CHECK(second.value.bytecode == small_kernel().bytecode);
}

TEST_CASE("an unkeyed entry is refused by a cache with a secret, then replaced by a keyed one",
          "[envelope][keyed]") {
    temp_dir dir;
    std::string const root = (dir.path() / "cache").string();
    cc::default_cache unkeyed(cc::directory_storage{root});
    cc::default_cache keyed(cc::directory_storage{root}, with_secret(secret_a));
    cc::key_result const k = plain_key("axpy");
    REQUIRE(unkeyed.store(k, small_kernel(), axpy_info));
    REQUIRE(unkeyed.load<compiled_kernel>(k, axpy_info));

    CHECK(misses_with(keyed, k, cc::miss_reason::unauthenticated));

    // get_or_compile says why, compiles, and stores a keyed entry over the unkeyed one.
    auto r = keyed.get_or_compile<compiled_kernel>(k, axpy_info, [] { return small_kernel(); });
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(r.reason == "unauthenticated");
    CHECK(keyed.load<compiled_kernel>(k, axpy_info));
    // which the unkeyed cache now cannot check, and refuses.
    CHECK(misses_with(unkeyed, k, cc::miss_reason::unauthenticated));
}

TEST_CASE("an entry made with another secret is refused", "[envelope][keyed]") {
    keyed_entry s;
    cc::default_cache b(cc::directory_storage(s.root.string()), with_secret(secret_b));
    CHECK(misses_with(b, s.k, cc::miss_reason::unauthenticated));
    // A secret that is a prefix, or an extension, of the right one is another secret.
    cc::default_cache shorter(cc::directory_storage(s.root.string()), with_secret(secret_a.substr(0, 31)));
    // (Not with a zero byte appended: HMAC pads keys with zero bytes, see hmac_test.cpp.)
    cc::default_cache longer(cc::directory_storage(s.root.string()), with_secret(secret_a + 'x'));
    CHECK(misses_with(shorter, s.k, cc::miss_reason::unauthenticated));
    CHECK(misses_with(longer, s.k, cc::miss_reason::unauthenticated));
    CHECK(s.cache.load<compiled_kernel>(s.k, axpy_info)); // the writer still reads it
}

TEST_CASE("every byte of a keyed entry flipped in turn is a miss with reason unauthenticated",
          "[envelope][keyed]") {
    keyed_entry s;
    CHECK(s.flips_not_missed({0x01u, 0xffu}, cc::miss_reason::unauthenticated).empty());
    write_file(s.path, s.sound);
    CHECK(s.cache.load<compiled_kernel>(s.k, axpy_info));
}

TEST_CASE("a keyed entry truncated at every length, or lengthened, is a miss", "[envelope][keyed]") {
    keyed_entry s;
    CHECK(s.truncations_not_missed(cc::miss_reason::unauthenticated).empty());
    write_file(s.path, s.sound + '\0');
    CHECK(s.misses_with(cc::miss_reason::unauthenticated));
    // The 28 bytes the unkeyed form does not have, dropped: the tag's first 4 bytes
    // are now where an unkeyed reader looks for a CRC.
    write_file(s.path, s.sound.substr(0, s.sound.size() - 28));
    CHECK(s.misses_with(cc::miss_reason::unauthenticated));
}

TEST_CASE("flipping a keyed entry's flags does not downgrade it to the unkeyed check", "[envelope][keyed]") {
    keyed_entry s;
    std::string const body = body_of(s.sound, 32);

    SECTION("flags cleared, HMAC kept") {
        std::string flipped = s.sound;
        flipped[10] = 0;
        write_file(s.path, flipped);
        CHECK(s.misses_with(cc::miss_reason::unauthenticated));
    }
    SECTION("flags cleared and the HMAC replaced by a valid CRC-32C: a sound unkeyed entry") {
        std::string downgraded = body;
        downgraded[10] = 0;
        cc::detail::append_envelope_check(downgraded);
        REQUIRE(cc::open_envelope(downgraded, s.k.value(), cc::default_cache::format_id(), 1 << 20).status ==
                cc::envelope_status::ok); // an unkeyed reader would take it
        write_file(s.path, downgraded);
        CHECK(s.misses_with(cc::miss_reason::unauthenticated));
    }
    SECTION("flags kept and the HMAC replaced by a CRC-32C") {
        CHECK(s.misses_when_resealed(body, cc::miss_reason::unauthenticated));
    }
}

TEST_CASE("a forged entry is refused: the attacker rewrites the payload and recomputes the check value",
          "[envelope][keyed]") {
    keyed_entry s;
    // The attacker can write the directory and knows the format, not the secret. They
    // make the artifact they want (other bytecode) under the victim's key, as an
    // unkeyed cache would, and as a keyed one with a secret of their own.
    compiled_kernel evil = small_kernel();
    evil.bytecode = {0xde, 0xad, 0xbe, 0xef};
    temp_dir forge_dir;
    for (std::string const& forger_secret : {std::string(), std::string("attacker's own secret")}) {
        INFO("forged with secret \"" << forger_secret << "\"");
        cc::default_cache forger(cc::directory_storage((forge_dir.path() / "cache").string()),
                                 with_secret(forger_secret));
        REQUIRE(forger.store(s.k, evil, axpy_info));
        std::string const forged = read_file(forger.storage().entry_path(s.k.value()));
        write_file(s.path, forged);
        CHECK(s.misses_with(cc::miss_reason::unauthenticated));
    }
    // And byte surgery on the real entry: the payload's last byte changed, a CRC-32C
    // computed over the new bytes in place of the tag's first four, the rest kept.
    std::string surgery = body_of(s.sound, 32);
    surgery[surgery.size() - 1] = static_cast<char>(surgery.back() ^ 0x40);
    std::uint32_t const crc = cc::crc32c(surgery.data(), surgery.size());
    std::string tail = s.sound.substr(s.sound.size() - 32);
    for (int i = 0; i < 4; ++i) tail[static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xff);
    write_file(s.path, surgery + tail);
    CHECK(s.misses_with(cc::miss_reason::unauthenticated));

    write_file(s.path, s.sound);
    std::optional<compiled_kernel> loaded = s.cache.load<compiled_kernel>(s.k, axpy_info);
    REQUIRE(loaded);
    CHECK(loaded->bytecode == small_kernel().bytecode);
}

TEST_CASE("a keyed envelope opens only in the keyed mode, and every later check still applies",
          "[envelope][keyed]") {
    cc::key const k(cc::sha256_digest("k", 1));
    cc::entry_metadata meta;
    meta.name = "axpy";
    meta.format_id = "test-format 1";
    meta.origin_line = 7;
    cc::envelope_auth const keyed(secret_a), other(secret_b), unkeyed;
    CHECK(keyed.keyed());
    CHECK(!unkeyed.keyed());
    CHECK(!cc::envelope_auth(std::string()).keyed()); // an empty secret is no secret
    CHECK(keyed.check_size() == 32);
    CHECK(unkeyed.check_size() == 4);

    std::string entry;
    std::size_t const at = cc::begin_envelope(entry, k, meta, keyed);
    std::string const payload("payload \0 bytes", 15);
    entry += payload;
    cc::seal_envelope(entry, at, keyed);

    cc::opened_envelope const e = cc::open_envelope(entry, k, "test-format 1", 1 << 20, keyed);
    REQUIRE(e.status == cc::envelope_status::ok);
    CHECK(e.payload == payload);
    CHECK(e.metadata.name == "axpy");
    CHECK(e.metadata.origin_line == 7);

    CHECK(cc::open_envelope(entry, k, "test-format 1", 1 << 20, other).status ==
          cc::envelope_status::unauthenticated);
    CHECK(cc::open_envelope(entry, k, "test-format 1", 1 << 20, unkeyed).status ==
          cc::envelope_status::unauthenticated);
    CHECK(cc::open_envelope(entry, k, "test-format 1", 1 << 20).status == cc::envelope_status::unauthenticated);
    CHECK(cc::open_envelope(entry, k, "test-format 2", 1 << 20, keyed).status ==
          cc::envelope_status::foreign_version);
    CHECK(cc::open_envelope(entry, cc::key(cc::sha256_digest("j", 1)), "test-format 1", 1 << 20, keyed).status ==
          cc::envelope_status::key_mismatch);
    CHECK(cc::open_envelope(entry, k, "test-format 1", payload.size() - 1, keyed).status ==
          cc::envelope_status::too_large);

    // Under a valid HMAC, flags other than "keyed" (written by a secret holder) are corrupt.
    for (std::uint16_t flags : {std::uint16_t{0}, std::uint16_t{3}, std::uint16_t{0x8001}}) {
        std::string odd = body_of(entry, 32);
        odd[10] = static_cast<char>(flags & 0xff);
        odd[11] = static_cast<char>(flags >> 8);
        keyed.append_check(odd);
        CHECK(cc::open_envelope(odd, k, "test-format 1", 1 << 20, keyed).status == cc::envelope_status::corrupt);
    }
    // An unkeyed entry, and nothing at all, in the keyed mode.
    std::string plain;
    std::size_t const at2 = cc::begin_envelope(plain, k, meta);
    plain += payload;
    cc::seal_envelope(plain, at2);
    CHECK(cc::open_envelope(plain, k, "test-format 1", 1 << 20).status == cc::envelope_status::ok);
    CHECK(cc::open_envelope(plain, k, "test-format 1", 1 << 20, keyed).status ==
          cc::envelope_status::unauthenticated);
    CHECK(cc::open_envelope({}, k, "test-format 1", 1 << 20, keyed).status == cc::envelope_status::unauthenticated);
    CHECK(cc::open_envelope({}, k, "test-format 1", 1 << 20).status == cc::envelope_status::corrupt);
}

TEST_CASE("max_entry_size bounds a keyed entry with its 32-byte tag", "[envelope][keyed]") {
    keyed_entry s;
    cc::cache_options exact = with_secret(secret_a);
    exact.max_entry_size = s.sound.size();
    temp_dir other;
    cc::default_cache fits(cc::directory_storage((other.path() / "a").string()), exact);
    CHECK(fits.store(s.k, small_kernel(), axpy_info));
    CHECK(fits.load<compiled_kernel>(s.k, axpy_info));
    exact.max_entry_size = s.sound.size() - 1;
    cc::default_cache too_small(cc::directory_storage((other.path() / "b").string()), exact);
    CHECK(!too_small.store(s.k, small_kernel(), axpy_info));
    CHECK(too_small.stats().failure_count(cc::store_failure::too_large) == 1);
}

TEST_CASE("PREFIX_SECRET_FILE: its content is the secret", "[envelope][keyed][env]") {
    temp_dir dir;
    compile_cache_test::scoped_settings env("CCKEYTEST", {"_DIR", "_SECRET_FILE", "_LOG"});
    fs::path const secret_file = dir.path() / "secret";
    compile_cache_test::write_private_file(secret_file, secret_a + "\n");
    env.set("_DIR", (dir.path() / "cache").string());
    env.set("_SECRET_FILE", secret_file.string());

    cc::default_cache c = cc::default_cache::from_env("CCKEYTEST");
    REQUIRE(c.enabled());
    CHECK(c.authenticated());
    CHECK(c.options().secret == secret_a + "\n"); // every byte, the newline included
    cc::key_result const k = plain_key("axpy");
    REQUIRE(c.store(k, small_kernel(), axpy_info));

    // The same secret given programmatically reads it; the secret without the newline does not.
    cc::default_cache same(cc::directory_storage((dir.path() / "cache").string()), with_secret(secret_a + "\n"));
    CHECK(same.load<compiled_kernel>(k, axpy_info));
    cc::default_cache without_newline(cc::directory_storage((dir.path() / "cache").string()), with_secret(secret_a));
    CHECK(misses_with(without_newline, k, cc::miss_reason::unauthenticated));

    // Unset or empty: unkeyed.
    env.set("_SECRET_FILE", "");
    cc::default_cache plain = cc::default_cache::from_env("CCKEYTEST");
    CHECK(plain.enabled());
    CHECK(!plain.authenticated());
    CHECK(misses_with(plain, k, cc::miss_reason::unauthenticated));

    bool listed = false;
    for (auto const& s : cc::default_cache::environment_settings("CCKEYTEST"))
        listed = listed || s.name == "CCKEYTEST_SECRET_FILE";
    CHECK(listed);
}

TEST_CASE("PREFIX_SECRET_FILE may be a pipe, as <(command) gives: read until its writer closes it",
          "[envelope][keyed][env]") {
    temp_dir dir;
    compile_cache_test::scoped_settings env("CCKEYTEST", {"_DIR", "_SECRET_FILE", "_LOG"});
    fs::path const fifo = dir.path() / "secret.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    env.set("_DIR", (dir.path() / "cache").string());
    env.set("_SECRET_FILE", fifo.string());
    // The writer has the pipe open first (as a shell's process substitution does) and
    // delivers the secret a little later, in two writes, then closes it.
    int const writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(writer >= 0);
    std::thread deliver([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK(::write(writer, secret_a.data(), 10) == 10);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        CHECK(::write(writer, secret_a.data() + 10, secret_a.size() - 10) == static_cast<ssize_t>(secret_a.size() - 10));
        ::close(writer);
    });
    cc::default_cache c = cc::default_cache::from_env("CCKEYTEST");
    deliver.join();
    CHECK(c.enabled());
    CHECK(c.authenticated());
    CHECK(c.options().secret == secret_a);
}

TEST_CASE("PREFIX_SECRET_FILE that cannot be used disables the cache, with one diagnostic",
          "[envelope][keyed][env]") {
    temp_dir dir;
    compile_cache_test::scoped_settings env("CCKEYTEST", {"_DIR", "_SECRET_FILE", "_LOG"});
    env.set("_DIR", (dir.path() / "cache").string());
    fs::path const empty = dir.path() / "empty";
    compile_cache_test::write_private_file(empty, "");
    fs::path const huge = dir.path() / "huge";
    compile_cache_test::write_private_file(huge, std::string((64 << 10) + 1, 's'));
    fs::path const unreadable = dir.path() / "unreadable";
    write_file(unreadable, secret_a);
    ::chmod(unreadable.c_str(), 0);
    bool const root_reads_anything = ::access(unreadable.c_str(), R_OK) == 0;
    // Anyone on the machine could have written it (as ssh refuses such a key).
    fs::path const world_writable = dir.path() / "world-writable";
    write_file(world_writable, secret_a);
    REQUIRE(::chmod(world_writable.c_str(), 0602) == 0);
    // Any user could read the secret and forge entries with it; the group may read it (shared mode).
    fs::path const world_readable = dir.path() / "world-readable";
    write_file(world_readable, secret_a);
    REQUIRE(::chmod(world_readable.c_str(), 0644) == 0);

    struct bad_file {
        fs::path path;
        char const* expect; // in the diagnostic
    };
    std::vector<bad_file> bad = {{dir.path() / "missing", "cannot open it"},
                                 {empty, "is empty"},
                                 {huge, "larger than 64 KiB"},
                                 {dir.path(), "cannot read it"}, // a directory
                                 {world_writable, "any user can write it"},
                                 {world_readable, "its mode 0644 lets any user read it, and with the secret forge "
                                                  "entries (chmod o= it; 0600, or 0640 for the group"}};
    if (!root_reads_anything) bad.push_back({unreadable, "cannot open it"});
    // A FIFO no program writes to reads as empty at once; one whose writer never
    // delivers (held open here, nothing written) costs secret_pipe_timeout, not forever.
    fs::path const unwritten = dir.path() / "unwritten.fifo";
    REQUIRE(::mkfifo(unwritten.c_str(), 0600) == 0);
    bad.push_back({unwritten, "is empty"});
    fs::path const silent = dir.path() / "silent.fifo";
    REQUIRE(::mkfifo(silent.c_str(), 0600) == 0);
    int const silent_writer = ::open(silent.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(silent_writer >= 0);
    bad.push_back({silent, "did not deliver it and close within 1 s"});

    for (bool with_log : {false, true}) {
        if (with_log) env.set("_LOG", "1");
        for (auto const& b : bad) {
            INFO(b.path << (with_log ? " with CCKEYTEST_LOG=1" : ""));
            env.set("_SECRET_FILE", b.path.string());
            compile_cache_test::captured_stderr capture(dir.path() / "stderr.txt");
            cc::default_cache c = cc::default_cache::from_env("CCKEYTEST");
            cc::key_result const k = plain_key("axpy");
            auto r = c.get_or_compile<compiled_kernel>(k, axpy_info, [] { return small_kernel(); });
            std::string const err = capture.text();
            CHECK(!c.enabled());
            CHECK(!c.authenticated());
            CHECK(r.outcome == cc::outcome::compiled);
            CHECK(r.reason == "disabled");
            CHECK(count_lines(err) == 1);
            CHECK(err.find("CCKEYTEST_SECRET_FILE") != std::string::npos);
            CHECK(err.find(b.expect) != std::string::npos);
            CHECK(err.find("disabled") != std::string::npos);
            CHECK(!fs::exists(dir.path() / "cache")); // a disabled cache touches no file
        }
    }
    ::chmod(unreadable.c_str(), 0600);
    ::close(silent_writer);
}

TEST_CASE("the miss reason unauthenticated has a name", "[envelope][keyed]") {
    CHECK(std::string(cc::to_string(cc::miss_reason::unauthenticated)) == "unauthenticated");
    cc::statistics st;
    st.miss(cc::miss_reason::unauthenticated, 10, 1);
    CHECK(st.snapshot().summary().find("unauthenticated=1") != std::string::npos);
}
