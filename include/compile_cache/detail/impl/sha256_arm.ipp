// compile_cache: the definitions of detail/sha256_arm.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL && COMPILE_CACHE_HAS_SHA256_ARM
#include <arm_neon.h>

#if defined(__ARM_FEATURE_SHA2)
#define COMPILE_CACHE_SHA2_TARGET
#define COMPILE_CACHE_SHA2_INLINE __attribute__((always_inline)) inline
#else
#define COMPILE_CACHE_SHA2_TARGET __attribute__((target("+crypto")))
#define COMPILE_CACHE_SHA2_INLINE __attribute__((target("+crypto"), always_inline)) inline
#endif

namespace compile_cache {
namespace detail {

bool sha256_arm_supported() noexcept {
#if defined(__ARM_FEATURE_SHA2)
    return true;
#else
    return arm_cpu_has(arm_hwcap_sha2);
#endif
}

/// Four rounds with W[t..t+3].
COMPILE_CACHE_SHA2_INLINE void sha256_arm_four_rounds(uint32x4_t& abcd, uint32x4_t& efgh, uint32x4_t w,
                                                      std::size_t t) noexcept {
    uint32x4_t const wk = vaddq_u32(w, vld1q_u32(sha256_round_constants + t));
    uint32x4_t const abcd_before = abcd;
    abcd = vsha256hq_u32(abcd, efgh, wk);
    efgh = vsha256h2q_u32(efgh, abcd_before, wk);
}

/// W[t..t+3] from the sixteen words before it (w0 = W[t-16..t-13] ... w3 = W[t-4..t-1]).
COMPILE_CACHE_SHA2_INLINE uint32x4_t sha256_arm_schedule(uint32x4_t w0, uint32x4_t w1, uint32x4_t w2,
                                                         uint32x4_t w3) noexcept {
    return vsha256su1q_u32(vsha256su0q_u32(w0, w1), w2, w3);
}

COMPILE_CACHE_SHA2_INLINE uint32x4_t sha256_arm_load_be(unsigned char const* p) noexcept {
    return vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p)));
}

COMPILE_CACHE_SHA2_TARGET void sha256_compress_arm(std::uint32_t state[8], unsigned char const* blocks,
                                                   std::size_t nblocks) noexcept {
    uint32x4_t abcd = vld1q_u32(state);
    uint32x4_t efgh = vld1q_u32(state + 4);
    for (; nblocks != 0; --nblocks, blocks += 64) {
        uint32x4_t const abcd_before = abcd, efgh_before = efgh;
        uint32x4_t w0 = sha256_arm_load_be(blocks);
        uint32x4_t w1 = sha256_arm_load_be(blocks + 16);
        uint32x4_t w2 = sha256_arm_load_be(blocks + 32);
        uint32x4_t w3 = sha256_arm_load_be(blocks + 48);

        sha256_arm_four_rounds(abcd, efgh, w0, 0);
        sha256_arm_four_rounds(abcd, efgh, w1, 4);
        sha256_arm_four_rounds(abcd, efgh, w2, 8);
        sha256_arm_four_rounds(abcd, efgh, w3, 12);
        for (std::size_t r = 16; r < 64; r += 16) {
            w0 = sha256_arm_schedule(w0, w1, w2, w3);
            sha256_arm_four_rounds(abcd, efgh, w0, r);
            w1 = sha256_arm_schedule(w1, w2, w3, w0);
            sha256_arm_four_rounds(abcd, efgh, w1, r + 4);
            w2 = sha256_arm_schedule(w2, w3, w0, w1);
            sha256_arm_four_rounds(abcd, efgh, w2, r + 8);
            w3 = sha256_arm_schedule(w3, w0, w1, w2);
            sha256_arm_four_rounds(abcd, efgh, w3, r + 12);
        }

        abcd = vaddq_u32(abcd, abcd_before);
        efgh = vaddq_u32(efgh, efgh_before);
    }
    vst1q_u32(state, abcd);
    vst1q_u32(state + 4, efgh);
}

} // namespace detail
} // namespace compile_cache

#undef COMPILE_CACHE_SHA2_TARGET
#undef COMPILE_CACHE_SHA2_INLINE

#endif
