// compile_cache: CRC-32C (Castagnoli), the envelope's unkeyed integrity check.
//
// The CRC with generator 0x1EDC6F41 (0x82F63B78 bit-reflected), initial value and
// final XOR 0xFFFFFFFF, reflected input and output: the CRC of iSCSI (RFC 3720,
// B.4), ext4 and SSE4.2's CRC32 instruction. Check value: crc32c("123456789") =
// 0xE3069283.
//
// It detects accidents, not tampering; what exactly, and why it is enough for the
// unkeyed envelope: docs/design.md ("Entries").
//
// Three implementations, chosen once per process like sha256's:
// - x86-64 with SSE4.2 and PCLMULQDQ: the CRC32 instruction on three independent
//   streams at once (it has a latency of three cycles and a throughput of one), the
//   three partial CRCs joined with one carry-less multiplication each;
// - AArch64 with the CRC32 extension (CRC32CX), one stream;
// - portable: slicing-by-8 tables (eight table look-ups per 8 bytes).
#pragma once

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/detail/cpu_dispatch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COMPILE_CACHE_HAS_CRC32C_X86 1
#include <cpuid.h>
#include <nmmintrin.h> // CRC32 (SSE4.2)
#include <wmmintrin.h> // PCLMULQDQ; not <immintrin.h>, which costs ten times more to include
#else
#define COMPILE_CACHE_HAS_CRC32C_X86 0
#endif

#if defined(__aarch64__) && (defined(__ARM_FEATURE_CRC32) || (defined(__GNUC__) && !defined(__clang__)))
#define COMPILE_CACHE_HAS_CRC32C_ARM 1
#include <arm_acle.h>
#else
#define COMPILE_CACHE_HAS_CRC32C_ARM 0
#endif

namespace compile_cache {

enum class crc32c_backend : unsigned char {
    portable, ///< slicing-by-8 tables; always available
    x86_sse42, ///< the SSE4.2 CRC32 instruction, three streams joined with PCLMULQDQ
    arm_crc,   ///< the ARMv8 CRC32 extension's CRC32C instructions
};

inline char const* to_string(crc32c_backend b) noexcept {
    switch (b) {
    case crc32c_backend::portable: return "portable";
    case crc32c_backend::x86_sse42: return "x86-sse4.2";
    case crc32c_backend::arm_crc: return "arm-crc";
    }
    return "?";
}

namespace detail {

/// The generator, bit-reflected: bit 31 is the coefficient of x^0.
inline constexpr std::uint32_t crc32c_polynomial = 0x82f63b78u;

// In the functions below a CRC *register* is the raw remainder: the public crc32c()
// inverts it on the way in and out. In the reflected representation bit 31 holds
// the coefficient of x^0 and bit 0 that of x^31; feeding bytes B to register R gives
// R * x^(8|B|) + B * x^32 mod P.

/// a * b mod P for two polynomials of degree < 32 in the reflected representation.
constexpr std::uint32_t crc32c_multiply(std::uint32_t a, std::uint32_t b) noexcept {
    std::uint32_t product = 0;
    for (std::uint32_t bit = 1u << 31; bit != 0; bit >>= 1) { // a's coefficients of x^0, x^1, ...
        if (a & bit) product ^= b;
        b = (b & 1u) ? (b >> 1) ^ crc32c_polynomial : b >> 1; // b *= x
    }
    return product;
}

/// x^n mod P, by squaring.
constexpr std::uint32_t crc32c_x_power(std::uint64_t n) noexcept {
    std::uint32_t result = 1u << 31; // x^0
    std::uint32_t square = 1u << 30; // x^1
    for (; n != 0; n >>= 1) {
        if (n & 1u) result = crc32c_multiply(result, square);
        square = crc32c_multiply(square, square);
    }
    return result;
}

/// Tables for slicing-by-8: table[0][b] is the register after feeding byte b to a
/// zero register; table[k][b] the same followed by k zero bytes.
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

/// Feeds n bytes at p to a CRC register; portable.
inline std::uint32_t crc32c_update_portable(std::uint32_t crc, unsigned char const* p, std::size_t n) noexcept {
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

/// SSE4.2 (CPUID.1:ECX bit 20) for the CRC32 instruction and PCLMULQDQ (bit 1) to
/// join the streams.
inline bool crc32c_x86_supported() noexcept {
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

__attribute__((target("sse4.2,pclmul"))) inline std::uint32_t crc32c_update_x86(std::uint32_t crc,
                                                                                unsigned char const* p,
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

/// Always when built for a target with the extension; on Linux, HWCAP_CRC32.
inline bool crc32c_arm_supported() noexcept {
#if defined(__ARM_FEATURE_CRC32)
    return true;
#else
    return arm_cpu_has(arm_hwcap_crc32);
#endif
}

COMPILE_CACHE_CRC_TARGET inline std::uint32_t crc32c_update_arm(std::uint32_t crc, unsigned char const* p,
                                                                std::size_t n) noexcept {
    for (; n >= 8; n -= 8, p += 8) {
        crc = __crc32cd(crc, read_le<std::uint64_t>(p));
    }
    for (; n != 0; --n, ++p) crc = __crc32cb(crc, *p);
    return crc;
}

#undef COMPILE_CACHE_CRC_TARGET

#endif // COMPILE_CACHE_HAS_CRC32C_ARM

using crc32c_update_fn = std::uint32_t (*)(std::uint32_t, unsigned char const*, std::size_t) noexcept;

struct crc32c_implementations {
    using backend = crc32c_backend;
    using function = crc32c_update_fn;
    static constexpr char const* variable = "COMPILE_CACHE_CRC32C";
    static constexpr cpu_implementation<backend, function> compiled[] = {
#if COMPILE_CACHE_HAS_CRC32C_X86
        {crc32c_backend::x86_sse42, &crc32c_update_x86, &crc32c_x86_supported},
#endif
#if COMPILE_CACHE_HAS_CRC32C_ARM
        {crc32c_backend::arm_crc, &crc32c_update_arm, &crc32c_arm_supported},
#endif
        {crc32c_backend::portable, &crc32c_update_portable, &always_runs},
    };
};

/// The update function in use, chosen on first use (see cpu_dispatch).
using crc32c_dispatch = cpu_dispatch<crc32c_implementations>;

/// The automatic choice given COMPILE_CACHE_CRC32C (null when unset).
inline crc32c_backend crc32c_choose_backend(char const* env_value, bool* not_understood = nullptr) noexcept {
    return crc32c_dispatch::choose(env_value, not_understood);
}

} // namespace detail

/// CRC-32C of n bytes at p. To continue a CRC over more bytes, pass the previous
/// result: crc32c(b, nb, crc32c(a, na)) == crc32c of a followed by b.
inline std::uint32_t crc32c(void const* p, std::size_t n, std::uint32_t previous = 0) noexcept {
    if (n == 0) return previous;
    return ~detail::crc32c_dispatch::call(~previous, static_cast<unsigned char const*>(p), n);
}

inline crc32c_backend crc32c_implementation() noexcept { return detail::crc32c_dispatch::current(); }

inline bool crc32c_implementation_available(crc32c_backend b) noexcept { return detail::crc32c_dispatch::runs_here(b); }

/// Makes crc32c use `b` from now on; false, and nothing changed, when it is not
/// available here. For tests and benchmarks (or COMPILE_CACHE_CRC32C=portable).
inline bool set_crc32c_implementation(crc32c_backend b) noexcept { return detail::crc32c_dispatch::set(b); }

} // namespace compile_cache
