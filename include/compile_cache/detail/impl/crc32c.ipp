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
    case crc32c_backend::x86_avx512: return "x86-avx512-vpclmulqdq";
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

bool crc32c_avx512_supported() noexcept {
    if (!crc32c_x86_supported()) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & (1u << 27)) == 0) return false; // OSXSAVE
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    if ((ebx & (1u << 16)) == 0 || (ecx & (1u << 10)) == 0) return false; // AVX512F, VPCLMULQDQ
    unsigned xcr0_low = 0, xcr0_high = 0;
    __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0)); // <immintrin.h>'s _xgetbv, without it
    return (xcr0_low & 0xe6u) == 0xe6u; // SSE, AVX, opmask, upper ZMM0-15, ZMM16-31 state
}

// 64 bytes in a vector register, through the compilers' vector extension and builtins:
// their intrinsics need <immintrin.h> (see above).
using crc32c_v8di = long long __attribute__((vector_size(64)));

#define COMPILE_CACHE_CRC_AVX512 __attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"), always_inline)) inline
#if defined(__clang__)
#define COMPILE_CACHE_CLMUL512(a, b, imm) __builtin_ia32_pclmulqdq512((a), (b), (imm))
#else
#define COMPILE_CACHE_CLMUL512(a, b, imm) __builtin_ia32_vpclmulqdq_v8di((a), (b), (imm))
#endif

COMPILE_CACHE_CRC_AVX512 crc32c_v8di crc32c_avx512_load(unsigned char const* p) noexcept {
    crc32c_v8di v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

/// The multipliers with which crc32c_avx512_fold moves a 128-bit lane `distance` bytes
/// forward. A lane's first 8 bytes hold the coefficients of x^127..x^64 (reflected), its
/// last 8 those of x^63..x^0; a carry-less product of 64 bits by a 32-bit K, read as a
/// reflected 128-bit lane, is their product times x^33, so K = x^(e - 33) multiplies by
/// x^e: x^(8 distance + 64) for the first half, x^(8 distance) for the second.
template <std::size_t distance>
COMPILE_CACHE_CRC_AVX512 crc32c_v8di crc32c_avx512_multipliers() noexcept {
    constexpr long long high = crc32c_x_power(8 * distance + 64 - 33), low = crc32c_x_power(8 * distance - 33);
    return crc32c_v8di{high, low, high, low, high, low, high, low};
}

/// Moves each 128-bit lane of `a` forward by the distance of multipliers `k` and adds `data`.
COMPILE_CACHE_CRC_AVX512 crc32c_v8di crc32c_avx512_fold(crc32c_v8di a, crc32c_v8di k, crc32c_v8di data) noexcept {
    return COMPILE_CACHE_CLMUL512(a, k, 0x00) ^ COMPILE_CACHE_CLMUL512(a, k, 0x11) ^ data;
}

/// 256 message bytes at p, with a register `r` joined to them (added to their first 32 bits: R * x^(8n)),
/// folded into the four accumulators, which move forward by the distance of multipliers `k`.
COMPILE_CACHE_CRC_AVX512 void crc32c_avx512_fold_256(crc32c_v8di (&a)[4], crc32c_v8di k, unsigned char const* p,
                                                   std::uint32_t r) noexcept {
    crc32c_v8di const joined{static_cast<long long>(r), 0, 0, 0, 0, 0, 0, 0};
    a[0] = crc32c_avx512_fold(a[0], k, crc32c_avx512_load(p) ^ joined);
    a[1] = crc32c_avx512_fold(a[1], k, crc32c_avx512_load(p + 64));
    a[2] = crc32c_avx512_fold(a[2], k, crc32c_avx512_load(p + 128));
    a[3] = crc32c_avx512_fold(a[3], k, crc32c_avx512_load(p + 192));
}

/// Feeds `step` bytes of each of two streams, at s and s + lane, to the registers x and y.
template <std::size_t step, std::size_t lane>
__attribute__((target("sse4.2"), always_inline)) inline void crc32c_x86_streams(std::uint64_t& x, std::uint64_t& y,
                                                                               unsigned char const* s) noexcept {
    for (std::size_t j = 0; j < step; j += 8) {
        x = _mm_crc32_u64(x, read_le<std::uint64_t>(s + j));
        y = _mm_crc32_u64(y, read_le<std::uint64_t>(s + lane + j));
    }
}

/// crc32c_update_avx512 with the CRC32 instruction at work beside the vectors: from 256 + `block` bytes on, the
/// message is read in blocks of `chunks` 256-byte chunks, which the vectors fold, then two streams of
/// `chunks * step` bytes, which the CRC32 instruction reads `step` bytes of each while the vectors fold a chunk.
template <std::size_t chunks, std::size_t step>
COMPILE_CACHE_CRC_AVX512 std::uint32_t crc32c_avx512_update(std::uint32_t crc, unsigned char const* p,
                                                            std::size_t n) noexcept {
    static_assert(chunks >= 1 && step % 8 == 0 && step != 0, "whole 64-bit words in each stream");
    constexpr std::size_t lane = chunks * step, block = chunks * 256 + 2 * lane;
    if (n < 256) return crc32c_update_x86(crc, p, n); // no chunk to fold
    // The register joins the message: R * x^(8n) is R added to its first 32 bits.
    crc32c_v8di a[4] = {
        crc32c_avx512_load(p) ^ crc32c_v8di{static_cast<long long>(crc), 0, 0, 0, 0, 0, 0, 0},
        crc32c_avx512_load(p + 64), crc32c_avx512_load(p + 128), crc32c_avx512_load(p + 192)};
    p += 256;
    n -= 256;
    crc32c_v8di const next = crc32c_avx512_multipliers<256>();
    crc32c_v8di over = next;   // the multipliers of the next fold: over the last block's streams too
    std::uint32_t streams = 0; // the register at p of the last block's streams, the vectors' chunks as zeros
    if (n >= block) {
        // By linearity, the message's register is that of its chunks (the streams read as zeros) plus that of its
        // streams (the chunks as zeros): the vectors fold over each block's streams as if they were zeros, and the
        // streams' register joins the next chunk, or the reduction.
        constexpr std::uint32_t k = crc32c_shift_constant(lane);
        crc32c_v8di const over_streams = crc32c_avx512_multipliers<256 + 2 * lane>();
        do {
            unsigned char const* const s = p + chunks * 256;
            std::uint64_t x = 0, y = 0;
            crc32c_avx512_fold_256(a, over, p, streams);
            crc32c_x86_streams<step, lane>(x, y, s);
            for (std::size_t i = 1; i < chunks; ++i) {
                crc32c_avx512_fold_256(a, next, p + 256 * i, 0);
                crc32c_x86_streams<step, lane>(x, y, s + step * i);
            }
            streams = crc32c_x86_shift(static_cast<std::uint32_t>(x), k) ^ static_cast<std::uint32_t>(y);
            over = over_streams;
            p += block;
            n -= block;
        } while (n >= block);
        if (n < 256) { // no chunk left to fold over the streams: fold over them alone
            crc32c_v8di const m = crc32c_avx512_multipliers<2 * lane>();
            for (auto& v : a) v = crc32c_avx512_fold(v, m, crc32c_v8di{});
        }
    }
    if (n >= 256) {
        crc32c_avx512_fold_256(a, over, p, streams);
        streams = 0;
        p += 256;
        n -= 256;
    }
    for (; n >= 256; p += 256, n -= 256) crc32c_avx512_fold_256(a, next, p, 0);
    // The accumulators, laid end to end, are 256 bytes congruent to all the message read so far; the first three
    // moved forward onto the last make 64 bytes congruent to them: their CRC from a zero register is its register.
    crc32c_v8di const zero{};
    crc32c_v8di const last = a[3] ^ crc32c_avx512_fold(a[0], crc32c_avx512_multipliers<192>(), zero) ^
                             crc32c_avx512_fold(a[1], crc32c_avx512_multipliers<128>(), zero) ^
                             crc32c_avx512_fold(a[2], crc32c_avx512_multipliers<64>(), zero);
    unsigned char folded[64];
    std::memcpy(folded, &last, sizeof folded);
    std::uint64_t c = 0;
    for (std::size_t i = 0; i < sizeof folded; i += 8) c = _mm_crc32_u64(c, read_le<std::uint64_t>(folded + i));
    return crc32c_update_x86(static_cast<std::uint32_t>(c) ^ streams, p, n);
}

__attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"))) std::uint32_t
crc32c_update_avx512(std::uint32_t crc, unsigned char const* p, std::size_t n) noexcept {
    return crc32c_avx512_update<crc32c_avx512_chunks, crc32c_avx512_step>(crc, p, n);
}

#undef COMPILE_CACHE_CLMUL512
#undef COMPILE_CACHE_CRC_AVX512

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
