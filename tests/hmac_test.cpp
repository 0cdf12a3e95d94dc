// compile_cache::hmac<Hasher> (hasher/hmac.hpp): HMAC as RFC 2104 defines it, checked
// against the HMAC-SHA-256 results of RFC 4231 ("Identifiers and Test Vectors for
// HMAC-SHA-224, HMAC-SHA-256, HMAC-SHA-384, and HMAC-SHA-512", section 4, test cases
// 1 to 7), on every SHA-256 implementation this machine runs, fed whole and split.
#include "catch2_compat.hpp"
#include "support/cpu_backends.hpp"

#include <compile_cache/hasher/concept.hpp>
#include <compile_cache/hasher/hmac.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace cc = compile_cache;

template <class Digest>
std::string to_hex(Digest const& d, std::size_t n) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
        auto const b = static_cast<unsigned char>(d.data()[i]);
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

std::string repeat(unsigned char byte, std::size_t n) { return std::string(n, static_cast<char>(byte)); }

struct rfc4231_case {
    int number;
    std::string key;
    std::string data;
    std::string hmac_sha256;  ///< hex, as printed in RFC 4231 section 4
    std::size_t bytes = 32;   ///< test case 5 gives the output truncated to 128 bits
};

/// RFC 4231, section 4.2 to 4.8: the keys, the data and the HMAC-SHA-256 results.
std::vector<rfc4231_case> const& rfc4231_cases() {
    static std::vector<rfc4231_case> const cases = [] {
        std::string key4;
        for (int i = 1; i <= 25; ++i) key4 += static_cast<char>(i); // 0x01 .. 0x19
        return std::vector<rfc4231_case>{
            {1, repeat(0x0b, 20), "Hi There",
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
            // A key shorter than the output.
            {2, "Jefe", "what do ya want for nothing?",
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
            // Key and data with every byte the same, data of 50 bytes.
            {3, repeat(0xaa, 20), repeat(0xdd, 50),
             "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
            {4, key4, repeat(0xcd, 50), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
            // Truncation: the RFC gives the first 128 bits only.
            {5, repeat(0x0c, 20), "Test With Truncation", "a3b6167473100ee06e0c796c2955552b", 16},
            // A key of 131 bytes, longer than the 64-byte block: hashed first.
            {6, repeat(0xaa, 131), "Test Using Larger Than Block-Size Key - Hash Key First",
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
            // The same key with data longer than a block.
            {7, repeat(0xaa, 131),
             "This is a test using a larger than block-size key and a larger than block-size data. The key "
             "needs to be hashed before being used by the HMAC algorithm.",
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
        };
    }();
    return cases;
}

std::string hmac_hex(std::string const& key, std::string const& data, std::size_t bytes = 32) {
    cc::hmac<cc::sha256> mac(key.data(), key.size());
    mac.update(data.data(), data.size());
    return to_hex(mac.result(), bytes);
}

/// sha256 under another name, claiming a block of 128 bytes: HMAC over it pads the key
/// to 128 bytes. Shows that hmac<H> takes the block size from H.
struct sha256_wide_block {
    using result_type = cc::sha256::result_type;
    static constexpr int block_size = 128; // an int, as in Boost.Hash2
    void update(void const* p, std::size_t n) { h.update(p, n); }
    result_type result() { return h.result(); }
    cc::sha256 h;
};

/// RFC 2104's definition written out: H((K0 ^ opad) || H((K0 ^ ipad) || text)).
template <class H>
typename H::result_type hmac_by_definition(std::string const& key, std::string const& text) {
    constexpr auto B = static_cast<std::size_t>(H::block_size);
    std::string k0 = key;
    if (k0.size() > B) {
        H h;
        h.update(k0.data(), k0.size());
        auto const d = h.result();
        k0.assign(reinterpret_cast<char const*>(d.data()), d.size());
    }
    k0.resize(B, '\0');
    std::string ipad(B, '\0'), opad(B, '\0');
    for (std::size_t i = 0; i < B; ++i) {
        ipad[i] = static_cast<char>(static_cast<unsigned char>(k0[i]) ^ 0x36);
        opad[i] = static_cast<char>(static_cast<unsigned char>(k0[i]) ^ 0x5c);
    }
    H inner;
    inner.update(ipad.data(), ipad.size());
    inner.update(text.data(), text.size());
    auto const inner_digest = inner.result();
    H outer;
    outer.update(opad.data(), opad.size());
    outer.update(inner_digest.data(), inner_digest.size());
    return outer.result();
}

} // namespace

TEST_CASE("hmac<sha256> gives the HMAC-SHA-256 results of RFC 4231, test cases 1 to 7", "[hmac]") {
    compile_cache_test::on_every_backend<cc::sha256_backend>([](cc::sha256_backend) {
        for (auto const& c : rfc4231_cases()) {
            INFO("RFC 4231 test case " << c.number);
            CHECK(hmac_hex(c.key, c.data, c.bytes) == c.hmac_sha256);
        }
    });
}

TEST_CASE("hmac<sha256> gives the same result however the message is split across update calls", "[hmac]") {
    for (auto const& c : rfc4231_cases()) {
        INFO("RFC 4231 test case " << c.number);
        // At every split point, in two calls (with an empty call between), and one byte at a time.
        for (std::size_t split = 0; split <= c.data.size(); ++split) {
            cc::hmac<cc::sha256> mac(c.key.data(), c.key.size());
            mac.update(c.data.data(), split);
            mac.update(nullptr, 0);
            mac.update(c.data.data() + split, c.data.size() - split);
            if (to_hex(mac.result(), c.bytes) != c.hmac_sha256) FAIL("split at " << split);
        }
        cc::hmac<cc::sha256> bytewise(c.key.data(), c.key.size());
        for (char ch : c.data) bytewise.update(&ch, 1);
        CHECK(to_hex(bytewise.result(), c.bytes) == c.hmac_sha256);
    }
}

TEST_CASE("a keyed hmac object copied before use authenticates each message as a fresh one", "[hmac]") {
    // The envelope keys one object per cache and copies it per entry.
    auto const& c7 = rfc4231_cases().back();
    auto const& c6 = rfc4231_cases()[5];
    cc::hmac<cc::sha256> const keyed(c7.key.data(), c7.key.size());
    cc::hmac<cc::sha256> a = keyed;
    a.update(c7.data.data(), c7.data.size());
    CHECK(to_hex(a.result(), 32) == c7.hmac_sha256);
    cc::hmac<cc::sha256> b = keyed;
    b.update(c6.data.data(), c6.data.size());
    CHECK(to_hex(b.result(), 32) == c6.hmac_sha256);
}

TEST_CASE("hmac keys around the block size: shorter, equal, one longer, much longer", "[hmac]") {
    std::string const text = "compile_cache entry bytes";
    for (std::size_t n : {0u, 1u, 31u, 32u, 63u, 64u, 65u, 127u, 128u, 129u, 1000u}) {
        std::string key;
        for (std::size_t i = 0; i < n; ++i) key += static_cast<char>((i * 13 + 5) & 0xff);
        INFO("key of " << n << " bytes");
        cc::hmac<cc::sha256> mac(key.data(), key.size());
        mac.update(text.data(), text.size());
        CHECK(mac.result() == hmac_by_definition<cc::sha256>(key, text));

        // Generic over the block size: a 128-byte block pads (and hashes) keys differently.
        cc::hmac<sha256_wide_block> wide(key.data(), key.size());
        wide.update(text.data(), text.size());
        CHECK(wide.result() == hmac_by_definition<sha256_wide_block>(key, text));
    }
    // RFC 2104 pads a key shorter than a block with zero bytes: a key and the same key
    // with zero bytes appended (up to the block size) are the same key.
    CHECK(hmac_hex("Jefe", text) == hmac_hex(std::string("Jefe\0\0", 6), text));
    CHECK(hmac_hex("Jefe", text) != hmac_hex("Jefe ", text));
    // A 64-byte key is used as it is; a 65-byte key is replaced by its digest.
    std::string const k64(64, 'k'), k65(65, 'k');
    CHECK(hmac_hex(k64, text) != hmac_hex(k65, text));
    auto const d65 = cc::sha256_digest(k65.data(), k65.size());
    CHECK(hmac_hex(k65, text) == hmac_hex(std::string(reinterpret_cast<char const*>(d65.data()), 32), text));
}

TEST_CASE("hmac<H> is itself a Hasher, default and seeded constructors included", "[hmac]") {
    STATIC_REQUIRE(cc::check_hasher<cc::hmac<cc::sha256>>::value);
    STATIC_REQUIRE(cc::detail::is_hasher_v<cc::hmac<cc::sha256>>);
    STATIC_REQUIRE(cc::hmac<cc::sha256>::block_size == 64);
    STATIC_REQUIRE(cc::hmac<sha256_wide_block>::block_size == 128);

    std::string const text = "x";
    cc::hmac<cc::sha256> empty_key;
    empty_key.update(text.data(), text.size());
    CHECK(empty_key.result() == hmac_by_definition<cc::sha256>("", text));

    cc::hmac<cc::sha256> seed0(std::uint64_t{0});
    seed0.update(text.data(), text.size());
    CHECK(seed0.result() == hmac_by_definition<cc::sha256>("", text));

    cc::hmac<cc::sha256> seeded(std::uint64_t{0x0807060504030201});
    seeded.update(text.data(), text.size());
    CHECK(seeded.result() == hmac_by_definition<cc::sha256>("\x01\x02\x03\x04\x05\x06\x07\x08", text));
}

TEST_CASE("a second result() continues the stream deterministically", "[hmac]") {
    auto const& c1 = rfc4231_cases().front();
    cc::hmac<cc::sha256> a(c1.key.data(), c1.key.size()), b(c1.key.data(), c1.key.size());
    a.update(c1.data.data(), c1.data.size());
    b.update(c1.data.data(), c1.data.size());
    auto const first = a.result();
    CHECK(to_hex(first, 32) == c1.hmac_sha256);
    CHECK(b.result() == first);
    auto const second = a.result();
    CHECK(second != first);
    CHECK(b.result() == second);
}

TEST_CASE("constant_time_equal compares tags", "[hmac]") {
    std::array<unsigned char, 32> x{}, y{};
    CHECK(cc::detail::constant_time_equal(x.data(), y.data(), 32));
    for (std::size_t i = 0; i < 32; ++i) {
        y = x;
        y[i] = 0x80;
        CHECK(!cc::detail::constant_time_equal(x.data(), y.data(), 32));
    }
    CHECK(cc::detail::constant_time_equal(x.data(), y.data(), 0));
}
