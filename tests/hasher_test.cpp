// Specification of the Hasher policy: compile_cache::sha256 and the check_hasher concept.
#include "catch2_compat.hpp"
#include "support/cpu_backends.hpp"

#include <compile_cache/hasher/concept.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

template <class Digest>
std::string to_hex(Digest const& d) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < d.size(); ++i) {
        auto const b = static_cast<unsigned char>(d.data()[i]);
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

std::string sha256_hex(std::string const& message) {
    return to_hex(compile_cache::sha256_digest(message.data(), message.size()));
}

/// The deterministic byte pattern of the length tests: byte i is (i * 7 + 3) mod 251.
std::vector<unsigned char> pattern(std::size_t n) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 7 + 3) % 251);
    return v;
}

using backend_scope = compile_cache_test::backend_scope<compile_cache::sha256_backend>;
using compile_cache_test::contains;
using compile_cache_test::cpuinfo_words;
std::vector<compile_cache::sha256_backend> available_backends() {
    return compile_cache_test::available_backends<compile_cache::sha256_backend>();
}

/// A hasher as a user would write one, with the HashAlgorithm members and nothing from
/// this library: FNV-1a, 64 bits, its result as 8 little-endian bytes. block_size is an
/// int, as in Boost.Hash2.
class user_style_hasher {
public:
    using result_type = std::array<unsigned char, 8>;
    static constexpr int block_size = 8;

    user_style_hasher() = default;
    explicit user_style_hasher(std::uint64_t seed) {
        if (seed != 0) {
            unsigned char b[8];
            for (unsigned i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(seed >> (8 * i));
            update(b, 8);
            result();
        }
    }

    void update(void const* p, std::size_t n) {
        auto const* in = static_cast<unsigned char const*>(p);
        for (std::size_t i = 0; i < n; ++i) {
            state_ ^= in[i];
            state_ *= 0x100000001b3ull;
        }
    }

    result_type result() {
        result_type r;
        for (unsigned i = 0; i < 8; ++i) r[i] = static_cast<unsigned char>(state_ >> (8 * i));
        unsigned char const advance = 0xff; // like Boost.Hash2, result() advances the state
        update(&advance, 1);
        return r;
    }

private:
    std::uint64_t state_ = 0xcbf29ce484222325ull;
};

// Compile-time part of the specification.
static_assert(compile_cache::check_hasher<compile_cache::sha256>::value);
static_assert(compile_cache::check_hasher<user_style_hasher>::value);
static_assert(compile_cache::detail::is_hasher_v<compile_cache::sha256>);
static_assert(compile_cache::detail::is_hasher<user_style_hasher>::value);
static_assert(std::is_same_v<compile_cache::sha256::result_type, std::array<unsigned char, 32>>);
static_assert(compile_cache::sha256::block_size == 64);

struct integer_result { // Boost.Hash2's fnv1a_64 shape: an integer is a key, little-endian
    using result_type = std::uint64_t;
    static constexpr int block_size = 8;
    void update(void const*, std::size_t) {}
    result_type result() { return 0; }
};
struct oversized_result {
    using result_type = std::array<unsigned char, 65>;
    static constexpr int block_size = 8;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};
struct runtime_sized_result {
    using result_type = std::vector<unsigned char>;
    static constexpr int block_size = 8;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};
struct typed_update { // update takes unsigned char const*, as many C hashes do
    using result_type = std::array<unsigned char, 8>;
    void update(unsigned char const*, std::size_t) {}
    result_type result() { return {}; }
};
struct floating_result { // two zeros: not a digest
    using result_type = double;
    void update(void const*, std::size_t) {}
    result_type result() { return 0; }
};
static_assert(!compile_cache::detail::is_hasher_v<int>);
static_assert(compile_cache::detail::is_hasher_v<integer_result>);
static_assert(!compile_cache::detail::is_hasher_v<oversized_result>);
static_assert(!compile_cache::detail::is_hasher_v<runtime_sized_result>);
static_assert(compile_cache::detail::is_hasher_v<typed_update>);
static_assert(!compile_cache::detail::is_hasher_v<floating_result>);

} // namespace

// Expected values: FIPS 180-2 Appendix B (B.1 "abc", B.2 the 448-bit message, B.3 one
// million 'a'), the same "abc" and 448-bit examples in NIST CSRC "SHA256.pdf"
// (Cryptographic Standards and Guidelines, Examples with Intermediate Values), the empty
// message and the 896-bit message (the SHA-384/512 example message of FIPS 180-2
// Appendix C/D) from the NIST SHA-2 example values. All five were also checked with
// coreutils sha256sum 9.1, e.g. `printf abc | sha256sum`.
TEST_CASE("sha256 gives the NIST example digests", "[hasher][sha256]") {
    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        CHECK(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                         "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu") ==
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");

        char const* const million_a = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
        std::string const a(1000000, 'a');
        CHECK(sha256_hex(a) == million_a);
        compile_cache::sha256 h; // the same message fed in 1000 pieces
        for (int i = 0; i < 1000; ++i) h.update(a.data(), 1000);
        CHECK(to_hex(h.result()) == million_a);
    }
}

// Expected values produced once with coreutils 9.1, for each N:
//   perl -e 'print map { chr(($_ * 7 + 3) % 251) } 0 .. $ARGV[0] - 1' N | sha256sum
// The lengths sit on both sides of the padding boundaries (55/56: the length field
// still fits / no longer fits in the last block; 63/64/65 and 119/120: one block more).
TEST_CASE("sha256 matches the reference at the padding boundaries", "[hasher][sha256]") {
    struct expected_digest {
        std::size_t length;
        char const* hex;
    };
    expected_digest const cases[] = {
        {0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {1, "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5"},
        {55, "1deace58c745f3ecadde68a5923f494c3703fa73f0306483ccb898a5826e8d70"},
        {56, "06dbe23685750e4d3881ded95047abaf93fa8f9c5d3501dc57c717a72ff1398e"},
        {63, "47fb38b12335c9298d09280515c0666489a189d1554bb0ac1a0740806ce9d8b6"},
        {64, "dfa798724b1a8014994f363e5da7474ed26ce3757fb29e07aa47ad5a9352d37b"},
        {65, "dd2eab5a5507d7717c63ce953d9ac61752c21e664425ad1227054722a0d97f69"},
        {119, "c6e0f435df5d7d265baacca31e0602c00aa22fa6d3819aed664649294c743756"},
        {120, "17eb8960823a644bde3065620bb9d45931fe8993fd8eb692a17aff0fd725db6a"},
        {1000, "a9425c416f534025a4e2422bd14adba4ec3d4a68d10c3329be8df612964d2b6e"},
    };
    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        for (auto const& c : cases) {
            INFO("length " << c.length);
            auto const message = pattern(c.length);
            CHECK(to_hex(compile_cache::sha256_digest(message.data(), message.size())) == c.hex);
            compile_cache::sha256 byte_by_byte;
            for (unsigned char b : message) byte_by_byte.update(&b, 1);
            CHECK(to_hex(byte_by_byte.result()) == c.hex);
        }
    }
}

TEST_CASE("sha256 gives the one-shot digest however the message is split", "[hasher][sha256]") {
    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        auto const message = pattern(200);
        auto const whole = compile_cache::sha256_digest(message.data(), message.size());

        for (std::size_t cut = 0; cut <= message.size(); ++cut) {
            INFO("cut at " << cut);
            compile_cache::sha256 h;
            h.update(message.data(), cut);
            h.update(message.data() + cut, message.size() - cut);
            CHECK(h.result() == whole);
        }
        for (std::size_t first = 0; first <= message.size(); first += 7) {
            for (std::size_t second = first; second <= message.size(); second += 13) {
                INFO("cuts at " << first << " and " << second);
                compile_cache::sha256 h;
                h.update(message.data(), first);
                h.update(message.data() + first, second - first);
                h.update(message.data() + second, message.size() - second);
                CHECK(h.result() == whole);
            }
        }
        compile_cache::sha256 with_empty_updates;
        with_empty_updates.update(nullptr, 0);
        with_empty_updates.update(message.data(), message.size());
        with_empty_updates.update(nullptr, 0);
        CHECK(with_empty_updates.result() == whole);
    }
}

TEST_CASE("sha256 seeded constructors follow Boost.Hash2", "[hasher][sha256]") {
    using compile_cache::sha256;
    std::string const m = "message";
    auto digest_after = [&](sha256 h) {
        h.update(m.data(), m.size());
        return h.result();
    };

    SECTION("seed 0 is the default constructor") {
        CHECK(digest_after(sha256(std::uint64_t{0})) == digest_after(sha256()));
        CHECK(digest_after(sha256(std::uint64_t{0})) == compile_cache::sha256_digest(m.data(), m.size()));
    }
    SECTION("a nonzero seed feeds its 8 little-endian bytes, then result()") {
        std::uint64_t const seed = 0x0123456789abcdefull;
        unsigned char const le[8] = {0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01};
        sha256 by_hand;
        by_hand.update(le, 8);
        by_hand.result();
        CHECK(digest_after(sha256(seed)) == digest_after(by_hand));
        CHECK(digest_after(sha256(seed)) != digest_after(sha256()));
        CHECK(digest_after(sha256(seed)) != digest_after(sha256(seed + 1)));
        CHECK(digest_after(sha256(std::uint64_t{1})) != digest_after(sha256()));
    }
    SECTION("a byte-string seed is update(p, n) then result(); n == 0 is the default") {
        std::string const s = "seed bytes";
        sha256 by_hand;
        by_hand.update(s.data(), s.size());
        by_hand.result();
        CHECK(digest_after(sha256(s.data(), s.size())) == digest_after(by_hand));
        CHECK(digest_after(sha256(s.data(), s.size())) != digest_after(sha256()));
        CHECK(digest_after(sha256(s.data(), 0)) == digest_after(sha256()));
        CHECK(digest_after(sha256(nullptr, 0)) == digest_after(sha256()));
        // So the (p, n) constructor is not a one-shot digest: that is sha256_digest.
        sha256 seeded(s.data(), s.size());
        CHECK(seeded.result() != compile_cache::sha256_digest(s.data(), s.size()));
    }
}

TEST_CASE("sha256 result() pads into the stream and the object stays usable", "[hasher][sha256]") {
    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        using compile_cache::sha256;
        sha256 h;
        h.update("abc", 3);
        auto const first = h.result();
        auto const second = h.result();
        auto const third = h.result();
        CHECK(to_hex(first) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        CHECK(first != second);
        CHECK(second != third);

        sha256 again; // deterministic: the same calls give the same sequence
        again.update("abc", 3);
        CHECK(again.result() == first);
        CHECK(again.result() == second);
        CHECK(again.result() == third);

        // The padding of "abc" (0x80, 52 zero bytes, the bit length 24 as 8 big-endian bytes)
        // became message bytes: continuing after result() is hashing "abc" + padding + more.
        std::vector<unsigned char> stream = {'a', 'b', 'c', 0x80};
        stream.resize(63, 0);
        stream.push_back(24);
        REQUIRE(stream.size() == 64);
        stream.push_back('x');
        sha256 continued;
        continued.update("abc", 3);
        continued.result();
        continued.update("x", 1);
        CHECK(continued.result() == compile_cache::sha256_digest(stream.data(), stream.size()));
    }
}

// Which implementation runs, and how it is forced: cpu_dispatch_test.cpp.
TEST_CASE("sha256 finds the CPU's SHA extensions where the kernel reports them, and names its block functions",
          "[hasher][sha256]") {
    using compile_cache::sha256_backend;
    namespace d = compile_cache::detail;
    auto const available = available_backends();
    CHECK(d::sha256_compress_of(sha256_backend::portable) == &d::sha256_compress_portable);

    SECTION("the CPU's extensions are found where the kernel reports them") {
#if COMPILE_CACHE_HAS_SHA256_X86
        auto const flags = cpuinfo_words("flags");
        if (!flags.empty())
            CHECK(compile_cache::sha256_implementation_available(sha256_backend::x86_sha_ni) ==
                  (contains(flags, "sha_ni") && contains(flags, "sse4_1")));
#endif
#if COMPILE_CACHE_HAS_SHA256_ARM && defined(__linux__) && !defined(__ARM_FEATURE_SHA2)
        auto const features = cpuinfo_words("Features");
        if (!features.empty())
            CHECK(compile_cache::sha256_implementation_available(sha256_backend::arm_sha2) ==
                  contains(features, "sha2"));
#endif
        SUCCEED("available here: " << available.size() << " backend(s)");
    }
    SECTION("the names") {
        CHECK(std::string(compile_cache::to_string(sha256_backend::portable)) == "portable");
        CHECK(std::string(compile_cache::to_string(sha256_backend::x86_sha_ni)) == "x86-sha-ni");
        CHECK(std::string(compile_cache::to_string(sha256_backend::arm_sha2)) == "arm-sha2");
    }
}

TEST_CASE("every sha256 block function computes what the portable one does", "[hasher][sha256]") {
    using compile_cache::sha256_backend;
    namespace d = compile_cache::detail;
    std::mt19937 random(20240607);
    std::vector<unsigned char> data(64 * 40 + 3);
    for (auto& byte : data) byte = static_cast<unsigned char>(random());

    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        d::sha256_compress_fn const f = d::sha256_compress_of(backend);
        REQUIRE(f != nullptr);
        for (std::size_t offset = 0; offset < 4; ++offset) {     // misaligned input too
            for (std::size_t blocks : {0u, 1u, 2u, 3u, 17u, 40u}) { // several blocks per call
                INFO("offset " << offset << ", blocks " << blocks);
                std::uint32_t expected[8], got[8];
                for (std::size_t i = 0; i < 8; ++i)
                    expected[i] = got[i] = static_cast<std::uint32_t>(random()); // any starting state
                d::sha256_compress_portable(expected, data.data() + offset, blocks);
                f(got, data.data() + offset, blocks);
                CHECK(std::vector<std::uint32_t>(got, got + 8) == std::vector<std::uint32_t>(expected, expected + 8));
            }
        }
    }

    SECTION("a stream may change backend midway: they share the state") {
        auto const available = available_backends();
        auto const whole = [&] {
            backend_scope scope(sha256_backend::portable);
            return compile_cache::sha256_digest(data.data(), data.size());
        }();
        for (auto first : available)
            for (auto second : available) {
                INFO(compile_cache::to_string(first) << " then " << compile_cache::to_string(second));
                compile_cache::sha256 h;
                {
                    backend_scope scope(first);
                    h.update(data.data(), 1000);
                }
                backend_scope scope(second);
                h.update(data.data() + 1000, data.size() - 1000);
                CHECK(h.result() == whole);
            }
    }
}

TEMPLATE_TEST_CASE("every Hasher model conforms", "[hasher]", compile_cache::sha256, user_style_hasher) {
    using H = TestType;
    STATIC_REQUIRE(compile_cache::check_hasher<H>::value);
    STATIC_REQUIRE(compile_cache::detail::is_hasher_v<H>);

    auto digest = [](void const* p, std::size_t n) {
        H h;
        h.update(p, n);
        return h.result();
    };
    auto const message = pattern(200);
    auto const whole = digest(message.data(), message.size());

    SECTION("deterministic") {
        CHECK(digest(message.data(), message.size()) == whole);
        CHECK(digest(nullptr, 0) == digest(nullptr, 0));
        CHECK(H().result() == digest(nullptr, 0));
    }
    SECTION("a split update gives the same result as one update") {
        for (std::size_t cut = 0; cut <= message.size(); ++cut) {
            INFO("cut at " << cut);
            H h;
            h.update(message.data(), cut);
            h.update(message.data() + cut, message.size() - cut);
            CHECK(h.result() == whole);
        }
    }
    SECTION("different inputs give different results") {
        std::vector<std::string> const inputs = {"",   "a",  "b",  "ab", "ba", std::string(1, '\0'),
                                                 std::string(2, '\0'), "abc", "abd", "message"};
        std::vector<typename H::result_type> results;
        for (auto const& s : inputs) results.push_back(digest(s.data(), s.size()));
        for (std::size_t i = 0; i < results.size(); ++i)
            for (std::size_t j = i + 1; j < results.size(); ++j) {
                INFO("inputs " << i << " and " << j);
                CHECK(results[i] != results[j]);
            }
        CHECK(digest(message.data(), message.size() - 1) != whole);
    }
    SECTION("a copy taken mid-stream continues independently") {
        H h;
        h.update(message.data(), 77);
        H copy = h;
        h.update(message.data() + 77, message.size() - 77);
        auto const original_result = h.result();
        CHECK(original_result == whole);

        H other = copy; // a second copy, fed something else
        other.update("different", 9);
        CHECK(other.result() != whole);

        copy.update(message.data() + 77, message.size() - 77);
        CHECK(copy.result() == whole);
    }
}
