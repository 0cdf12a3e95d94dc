// Specification of CRC-32C (detail/crc32c.hpp), the envelope's unkeyed check: every
// implementation this machine runs, against published check values and a bit-at-a-time
// reference written here from the definition.
#include "catch2_compat.hpp"
#include "support/cpu_backends.hpp"

#include <compile_cache/detail/crc32c.hpp>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using compile_cache::crc32c;
using compile_cache::crc32c_backend;

using backend_scope = compile_cache_test::backend_scope<crc32c_backend>;
using compile_cache_test::contains;
using compile_cache_test::cpuinfo_words;
std::vector<crc32c_backend> available_backends() { return compile_cache_test::available_backends<crc32c_backend>(); }

/// The definition, one bit at a time: reflected, generator 0x82F63B78, initial value
/// and final XOR 0xFFFFFFFF.
std::uint32_t reference_crc32c(unsigned char const* p, std::size_t n) {
    std::uint32_t crc = 0xffffffffu;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82f63b78u : 0u);
    }
    return ~crc;
}

std::uint32_t crc_of(std::string const& s) { return crc32c(s.data(), s.size()); }

std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 random(seed);
    std::vector<unsigned char> v(n);
    for (auto& b : v) b = static_cast<unsigned char>(random());
    return v;
}

} // namespace

// The check value of the CRC catalogues ("123456789" -> 0xE3069283) and the four
// 32-byte examples of RFC 3720 (iSCSI), appendix B.4, read as little-endian words.
TEST_CASE("crc32c gives the published check values", "[crc32c]") {
    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        CHECK(crc_of("123456789") == 0xe3069283u);
        CHECK(crc_of(std::string(32, '\0')) == 0x8a9136aau);
        CHECK(crc_of(std::string(32, '\xff')) == 0x62a8ab43u);
        std::string ascending, descending;
        for (int i = 0; i < 32; ++i) {
            ascending += static_cast<char>(i);
            descending += static_cast<char>(31 - i);
        }
        CHECK(crc_of(ascending) == 0x46dd794eu);
        CHECK(crc_of(descending) == 0x113fdb5cu);
        CHECK(crc_of("") == 0u);
        CHECK(crc32c(nullptr, 0) == 0u);
        CHECK(crc32c(nullptr, 0, 0x12345678u) == 0x12345678u);
    }
}

TEST_CASE("crc32c matches the bit-at-a-time definition at every length and alignment", "[crc32c]") {
    // Long enough for every path of the hardware code: the three-stream blocks of
    // 3 x 4096 and 3 x 256 bytes, the 8-byte words and the bytes left over; the AVX-512
    // code's first 256 bytes, its 256-byte folds, its reduction, and its tail.
    auto const data = random_bytes(3 * 4096 * 2 + 3 * 256 + 64, 7);
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 1100; ++n) lengths.push_back(n);
    for (std::size_t base : {3u * 256, 3u * 4096, 2u * 3 * 4096, 3u * 4096 + 3 * 256})
        for (std::size_t d = 0; d < 20; ++d) {
            lengths.push_back(base + d);
            lengths.push_back(base - d);
        }
    lengths.push_back(data.size() - 7);

    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        std::size_t mismatches = 0;
        for (std::size_t n : lengths)
            for (std::size_t offset = 0; offset < 8; offset += (n > 1100 ? 7 : 1)) {
                if (crc32c(data.data() + offset, n) != reference_crc32c(data.data() + offset, n)) {
                    ++mismatches;
                    FAIL_CHECK("length " << n << ", offset " << offset);
                }
            }
        CHECK(mismatches == 0);
    }
}

TEST_CASE("crc32c continues over split input", "[crc32c]") {
    auto const data = random_bytes(20000, 11);
    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        auto const small_whole = crc32c(data.data(), 200);
        for (std::size_t cut = 0; cut <= 200; ++cut) {
            INFO("cut at " << cut);
            CHECK(crc32c(data.data() + cut, 200 - cut, crc32c(data.data(), cut)) == small_whole);
        }
        auto const whole = crc32c(data.data(), data.size());
        for (std::size_t cut : {1u, 7u, 768u, 769u, 4095u, 12288u, 12289u, 19999u}) {
            INFO("cut at " << cut);
            CHECK(crc32c(data.data() + cut, data.size() - cut, crc32c(data.data(), cut)) == whole);
        }
        std::uint32_t pieces = 0; // in uneven pieces
        for (std::size_t at = 0, step = 1; at < data.size(); at += step, step = step * 3 + 1)
            pieces = crc32c(data.data() + at, std::min(step, data.size() - at), pieces);
        CHECK(pieces == whole);
    }
}

// The AVX-512 code's blocks: the vectors fold each block's chunks and skip its CRC32
// streams as zeros, the streams' register joins the next chunk, or the final reduction
// when less than a chunk is left. Every length in windows around 256 + k blocks (k = 0..3)
// where the paths change, at aligned and misaligned starts, and splits at random points.
TEST_CASE("crc32c's interleaved blocks agree with the definition at every length and split", "[crc32c]") {
#if COMPILE_CACHE_HAS_CRC32C_X86
    std::size_t const block = compile_cache::detail::crc32c_avx512_block;
#else
    std::size_t const block = 5376;
#endif
    auto const data = random_bytes(256 + 3 * block + 1024 + 8, 13);
    std::vector<std::size_t> lengths;
    for (std::size_t k = 0; k <= 3; ++k) {
        std::size_t const base = 256 + k * block; // a block ends here
        for (std::size_t at : {base, base + 256, base + 512})
            for (std::size_t n = at - 12; n <= at + 12; ++n) lengths.push_back(n);
        for (std::size_t tail : {1u, 7u, 9u, 63u, 100u, 255u, 383u, 767u, 1000u}) lengths.push_back(base + tail);
    }
    std::vector<std::pair<std::size_t, std::size_t>> cases; // length, offset; with the definition's CRC
    std::vector<std::uint32_t> expected;
    for (std::size_t n : lengths)
        for (std::size_t offset : {0u, 1u, 3u, 8u}) {
            cases.emplace_back(n, offset);
            expected.push_back(reference_crc32c(data.data() + offset, n));
        }
    // Splits of the longest message: the first update's register continues in the second.
    std::size_t const whole_length = 256 + 3 * block + 777;
    std::uint32_t const whole = reference_crc32c(data.data(), whole_length);
    std::mt19937 random(17);
    std::vector<std::size_t> cuts = {1, 255, 256, 257, 511, 512, 256 + block, 256 + 2 * block - 1};
    for (int i = 0; i < 60; ++i) cuts.push_back(random() % (whole_length + 1));

    for (auto backend : available_backends()) {
        INFO("backend " << compile_cache::to_string(backend));
        backend_scope scope(backend);
        std::size_t mismatches = 0;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            auto const [n, offset] = cases[i];
            if (crc32c(data.data() + offset, n) != expected[i]) {
                ++mismatches;
                FAIL_CHECK("length " << n << ", offset " << offset);
            }
        }
        CHECK(mismatches == 0);
        CHECK(crc32c(data.data(), whole_length) == whole);
        for (std::size_t cut : cuts) {
            INFO("cut at " << cut);
            CHECK(crc32c(data.data() + cut, whole_length - cut, crc32c(data.data(), cut)) == whole);
        }
    }
}

TEST_CASE("crc32c sees every burst error of up to 32 bits", "[crc32c]") {
    auto const data = random_bytes(4096, 3);
    auto const sound = crc32c(data.data(), data.size());
    std::mt19937 random(5);
    for (int trial = 0; trial < 2000; ++trial) {
        // A burst: first and last bit flipped, any pattern between, within 32 bits.
        auto const draw = [&random] { return static_cast<std::uint32_t>(random()); };
        unsigned const length = 1 + draw() % 32;
        std::uint32_t const pattern =
            length == 1 ? 1u : (1u | (1u << (length - 1)) | (draw() & ((1u << (length - 1)) - 1)));
        std::size_t const start_bit = draw() % (data.size() * 8 - length);
        auto damaged = data;
        for (unsigned i = 0; i < length; ++i)
            if (pattern & (1u << i)) damaged[(start_bit + i) / 8] ^= static_cast<unsigned char>(1u << ((start_bit + i) % 8));
        INFO("burst of " << length << " bits at bit " << start_bit);
        CHECK(crc32c(damaged.data(), damaged.size()) != sound);
    }
}

// Which implementation runs, and how it is forced: cpu_dispatch_test.cpp.
TEST_CASE("crc32c finds the CPU's CRC instructions where the kernel reports them", "[crc32c]") {
#if COMPILE_CACHE_HAS_CRC32C_X86
    auto const flags = cpuinfo_words("flags");
    if (!flags.empty())
        CHECK(compile_cache::crc32c_implementation_available(crc32c_backend::x86_sse42) ==
              (contains(flags, "sse4_2") && contains(flags, "pclmulqdq")));
    if (!flags.empty()) // the kernel lists avx512f only where it saves the AVX-512 state
        CHECK(compile_cache::crc32c_implementation_available(crc32c_backend::x86_avx512) ==
              (contains(flags, "sse4_2") && contains(flags, "pclmulqdq") && contains(flags, "avx512f") &&
               contains(flags, "vpclmulqdq")));
#endif
#if COMPILE_CACHE_HAS_CRC32C_ARM && defined(__linux__) && !defined(__ARM_FEATURE_CRC32)
    auto const features = cpuinfo_words("Features");
    if (!features.empty())
        CHECK(compile_cache::crc32c_implementation_available(crc32c_backend::arm_crc) == contains(features, "crc32"));
#endif
    SUCCEED("available here: " << available_backends().size() << " implementation(s)");
}

TEST_CASE("the multiplier constants of the three-stream join are powers of x mod P", "[crc32c]") {
    namespace d = compile_cache::detail;
    // x^32 mod P is the generator without its top term; x^a * x^b == x^(a+b).
    CHECK(d::crc32c_x_power(0) == 0x80000000u);
    CHECK(d::crc32c_x_power(1) == 0x40000000u);
    CHECK(d::crc32c_x_power(31) == 0x00000001u);
    CHECK(d::crc32c_x_power(32) == d::crc32c_polynomial);
    CHECK(d::crc32c_multiply(d::crc32c_x_power(1000), d::crc32c_x_power(2345)) == d::crc32c_x_power(3345));
    // Feeding n zero bytes to a register multiplies it by x^(8n).
    unsigned char const zeros[64] = {};
    std::uint32_t const r = 0xdeadbeefu;
    CHECK(d::crc32c_update_portable(r, zeros, 64) == d::crc32c_multiply(r, d::crc32c_x_power(8 * 64)));
}
