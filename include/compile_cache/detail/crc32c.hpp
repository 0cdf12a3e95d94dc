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
// Four implementations, chosen once per process like sha256's:
// - x86-64 with AVX-512 and VPCLMULQDQ: four 64-byte accumulators folded forward 256
//   bytes at a time with carry-less multiplications, finished with the CRC32
//   instruction (twice the speed of the next on a Zen 4: docs/benchmarks.md); on long
//   messages, two streams of the CRC32 instruction run beside the folds;
// - x86-64 with SSE4.2 and PCLMULQDQ: the CRC32 instruction on three independent
//   streams at once (it has a latency of three cycles and a throughput of one), the
//   three partial CRCs joined with one carry-less multiplication each;
// - AArch64 with the CRC32 extension (CRC32CX), one stream;
// - portable: slicing-by-8 tables (eight table look-ups per 8 bytes).
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/endian.hpp>
#include <compile_cache/detail/cpu_dispatch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COMPILE_CACHE_HAS_CRC32C_X86 1
#else
#define COMPILE_CACHE_HAS_CRC32C_X86 0
#endif

#if defined(__aarch64__) && (defined(__ARM_FEATURE_CRC32) || (defined(__GNUC__) && !defined(__clang__)))
#define COMPILE_CACHE_HAS_CRC32C_ARM 1
#else
#define COMPILE_CACHE_HAS_CRC32C_ARM 0
#endif

namespace compile_cache {

enum class crc32c_backend : unsigned char {
    portable, ///< slicing-by-8 tables; always available
    x86_sse42, ///< the SSE4.2 CRC32 instruction, three streams joined with PCLMULQDQ
    arm_crc,   ///< the ARMv8 CRC32 extension's CRC32C instructions
    x86_avx512, ///< AVX-512 VPCLMULQDQ folding 256 bytes at a time, then x86_sse42's code
};

COMPILE_CACHE_DECL char const* to_string(crc32c_backend b) noexcept;

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

/// Feeds n bytes at p to a CRC register; portable.
COMPILE_CACHE_DECL std::uint32_t crc32c_update_portable(std::uint32_t crc, unsigned char const* p,
                                                   std::size_t n) noexcept;

#if COMPILE_CACHE_HAS_CRC32C_X86

/// SSE4.2 (CPUID.1:ECX bit 20) for the CRC32 instruction and PCLMULQDQ (bit 1) to
/// join the streams.
COMPILE_CACHE_DECL bool crc32c_x86_supported() noexcept;

/// Feeds n bytes at p to a CRC register with the CRC32 instruction.
__attribute__((target("sse4.2,pclmul"))) COMPILE_CACHE_DECL std::uint32_t
crc32c_update_x86(std::uint32_t crc, unsigned char const* p, std::size_t n) noexcept;

/// crc32c_x86_supported(), AVX-512 Foundation and VPCLMULQDQ (CPUID.7.0:EBX bit 16,
/// ECX bit 10), and an operating system that saves the AVX-512 state (XCR0 bits 1, 2,
/// 5, 6 and 7).
COMPILE_CACHE_DECL bool crc32c_avx512_supported() noexcept;

/// Feeds n bytes at p to a CRC register: 256 bytes or more with AVX-512 VPCLMULQDQ, and from
/// 256 + crc32c_avx512_block bytes on with the CRC32 instruction beside it.
__attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"))) COMPILE_CACHE_DECL std::uint32_t
crc32c_update_avx512(std::uint32_t crc, unsigned char const* p, std::size_t n) noexcept;

/// crc32c_update_avx512's blocks: crc32c_avx512_chunks chunks of 256 bytes for the vectors, then
/// two streams for the CRC32 instruction, which reads crc32c_avx512_step bytes of each while the
/// vectors fold a chunk (the ratio of their speeds on a Zen 4, where they run on separate units).
inline constexpr std::size_t crc32c_avx512_chunks = 16, crc32c_avx512_step = 40;
inline constexpr std::size_t crc32c_avx512_block = crc32c_avx512_chunks * (256 + 2 * crc32c_avx512_step);

#endif // COMPILE_CACHE_HAS_CRC32C_X86

#if COMPILE_CACHE_HAS_CRC32C_ARM

/// Always when built for a target with the extension; on Linux, HWCAP_CRC32.
COMPILE_CACHE_DECL bool crc32c_arm_supported() noexcept;

/// Feeds n bytes at p to a CRC register with the CRC32C instructions.
#if defined(__ARM_FEATURE_CRC32)
COMPILE_CACHE_DECL std::uint32_t crc32c_update_arm(std::uint32_t crc, unsigned char const* p, std::size_t n) noexcept;
#else
__attribute__((target("+crc"))) COMPILE_CACHE_DECL std::uint32_t
crc32c_update_arm(std::uint32_t crc, unsigned char const* p, std::size_t n) noexcept;
#endif

#endif // COMPILE_CACHE_HAS_CRC32C_ARM

using crc32c_update_fn = std::uint32_t (*)(std::uint32_t, unsigned char const*, std::size_t) noexcept;

struct crc32c_implementations {
    using backend = crc32c_backend;
    using function = crc32c_update_fn;
    static constexpr char const* variable = "COMPILE_CACHE_CRC32C";
    static constexpr cpu_implementation<backend, function> compiled[] = {
#if COMPILE_CACHE_HAS_CRC32C_X86
        {crc32c_backend::x86_avx512, &crc32c_update_avx512, &crc32c_avx512_supported},
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

#include <compile_cache/detail/impl/crc32c.ipp>
