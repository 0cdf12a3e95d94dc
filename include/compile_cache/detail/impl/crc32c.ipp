// compile_cache: the definitions of detail/crc32c.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#if COMPILE_CACHE_HAS_CRC32C_X86
#include <cpuid.h>
#include <nmmintrin.h> // CRC32 (SSE4.2)
#include <wmmintrin.h> // PCLMULQDQ; not <immintrin.h>, which costs ten times more to include
#endif
#if COMPILE_CACHE_HAS_CRC32C_ARM
#include <arm_acle.h>
#endif

namespace compile_cache {

char const* to_string(crc32c_backend b) noexcept {
    switch (b) {
    case crc32c_backend::portable: return "portable";
    case crc32c_backend::x86_sse42: return "x86-sse4.2";
    case crc32c_backend::arm_crc: return "arm-crc";
    }
    return "?";
}

namespace detail {

/// Tables for slicing-by-8: table[0][b] is the register after feeding byte b to a
/// zero register; table[k][b] the same followed by k zero bytes. Here, beside their one
/// user, so that separate compilation computes them once, not in every translation unit.
struct crc32c_tables_type {
    std::uint32_t table[8][256];
};

constexpr crc32c_tables_type crc32c_make_tables() noexcept {
    crc32c_tables_type t{};
    for (std::uint32_t b = 0; b < 256; ++b) {
        std::uint32_t r = b;
        for (int i = 0; i < 8; ++i) r = (r & 1u) ? (r >> 1) ^ crc32c_polynomial : r >> 1;
        t.table[0][b] = r;
    }
    for (int k = 1; k < 8; ++k)
        for (std::uint32_t b = 0; b < 256; ++b)
            t.table[k][b] = (t.table[k - 1][b] >> 8) ^ t.table[0][t.table[k - 1][b] & 0xffu];
    return t;
}

inline constexpr crc32c_tables_type crc32c_tables = crc32c_make_tables();

std::uint32_t crc32c_update_portable(std::uint32_t crc, unsigned char const* p, std::size_t n) noexcept {
    auto const& t = crc32c_tables.table;
    for (; n >= 8; n -= 8, p += 8) {
        std::uint64_t const v = read_le<std::uint64_t>(p) ^ crc;
        // As a tree, so that the look-ups' results combine in three steps, not seven.
        crc = ((t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff]) ^ (t[5][(v >> 16) & 0xff] ^ t[4][(v >> 24) & 0xff])) ^
              ((t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff]) ^ (t[1][(v >> 48) & 0xff] ^ t[0][v >> 56]));
    }
    for (; n != 0; --n, ++p) crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xffu];
    return crc;
}

#if COMPILE_CACHE_HAS_CRC32C_X86

bool crc32c_x86_supported() noexcept {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ecx & (1u << 20)) != 0 && (ecx & (1u << 1)) != 0;
}

/// The multiplier that moves a register over n bytes with one carry-less product:
/// the CRC32 instruction on the 64-bit product of a register R and K multiplies by
/// x^33 (x^32 from the instruction, x^1 because a 32x32-bit product has 63 bits but
/// fills a 64-bit reflected word), so K = x^(8n - 33) gives R * x^(8n) mod P.
constexpr std::uint32_t crc32c_shift_constant(std::uint64_t n) noexcept { return crc32c_x_power(8 * n - 33); }

__attribute__((target("sse4.2,pclmul"), always_inline)) inline std::uint32_t
crc32c_x86_shift(std::uint32_t crc, std::uint32_t k) noexcept {
    __m128i const product = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(crc)),
                                                 _mm_cvtsi32_si128(static_cast<int>(k)), 0x00);
    return static_cast<std::uint32_t>(_mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(product))));
}

/// Three streams of `lane` bytes each, while at least 3 * lane bytes are left.
template <std::size_t lane>
__attribute__((target("sse4.2,pclmul"), always_inline)) inline std::uint32_t
crc32c_x86_three_way(std::uint32_t crc, unsigned char const*& p, std::size_t& n) noexcept {
    constexpr std::uint32_t k1 = crc32c_shift_constant(lane);     // over one lane
    constexpr std::uint32_t k2 = crc32c_shift_constant(2 * lane); // over two
    for (; n >= 3 * lane; n -= 3 * lane, p += 3 * lane) {
        std::uint64_t a = crc, b = 0, c = 0;
        for (std::size_t i = 0; i < lane; i += 8) {
            a = _mm_crc32_u64(a, read_le<std::uint64_t>(p + i));
            b = _mm_crc32_u64(b, read_le<std::uint64_t>(p + lane + i));
            c = _mm_crc32_u64(c, read_le<std::uint64_t>(p + 2 * lane + i));
        }
        crc = crc32c_x86_shift(static_cast<std::uint32_t>(a), k2) ^
              crc32c_x86_shift(static_cast<std::uint32_t>(b), k1) ^ static_cast<std::uint32_t>(c);
    }
    return crc;
}

__attribute__((target("sse4.2,pclmul"))) std::uint32_t crc32c_update_x86(std::uint32_t crc, unsigned char const* p,
                                                                        std::size_t n) noexcept {
    crc = crc32c_x86_three_way<4096>(crc, p, n); // joins cost ~20 cycles: keep lanes long
    crc = crc32c_x86_three_way<256>(crc, p, n);
    std::uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        c = _mm_crc32_u64(c, read_le<std::uint64_t>(p));
    }
    crc = static_cast<std::uint32_t>(c);
    for (; n != 0; --n, ++p) crc = _mm_crc32_u8(crc, *p);
    return crc;
}

#endif // COMPILE_CACHE_HAS_CRC32C_X86

#if COMPILE_CACHE_HAS_CRC32C_ARM

#if defined(__ARM_FEATURE_CRC32)
#define COMPILE_CACHE_CRC_TARGET
#else
#define COMPILE_CACHE_CRC_TARGET __attribute__((target("+crc")))
#endif

bool crc32c_arm_supported() noexcept {
#if defined(__ARM_FEATURE_CRC32)
    return true;
#else
    return arm_cpu_has(arm_hwcap_crc32);
#endif
}

COMPILE_CACHE_CRC_TARGET std::uint32_t crc32c_update_arm(std::uint32_t crc, unsigned char const* p,
                                                         std::size_t n) noexcept {
    for (; n >= 8; n -= 8, p += 8) {
        crc = __crc32cd(crc, read_le<std::uint64_t>(p));
    }
    for (; n != 0; --n, ++p) crc = __crc32cb(crc, *p);
    return crc;
}

#undef COMPILE_CACHE_CRC_TARGET

#endif // COMPILE_CACHE_HAS_CRC32C_ARM

} // namespace detail
} // namespace compile_cache
#endif
