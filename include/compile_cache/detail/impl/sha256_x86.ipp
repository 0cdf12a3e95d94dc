// compile_cache: the definitions of detail/sha256_x86.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL && COMPILE_CACHE_HAS_SHA256_X86
#include <cpuid.h>
// SSE2 to SSE4.1 only: <immintrin.h>, the one header that declares _mm_sha256*, costs
// every including translation unit about 0.28 s of g++'s time, this one 0.02 s
// (docs/benchmarks.md, "Header cost"). The SHA instructions are reached through the
// compiler builtins those declarations call (the same names in GCC and Clang).
#include <smmintrin.h>

// Every function that uses the intrinsics carries the target attribute; the helpers
// are force-inlined into the one that loops over the blocks.
#define COMPILE_CACHE_SHANI_TARGET __attribute__((target("sha,sse4.1")))
#define COMPILE_CACHE_SHANI_INLINE __attribute__((target("sha,sse4.1"), always_inline)) inline

namespace compile_cache {
namespace detail {

bool sha256_x86_supported() noexcept {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    bool const ssse3 = (ecx & (1u << 9)) != 0;
    bool const sse41 = (ecx & (1u << 19)) != 0;
    if (!ssse3 || !sse41) return false;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ebx & (1u << 29)) != 0;
}

COMPILE_CACHE_SHANI_INLINE __m128i sha256_x86_rnds2(__m128i cdgh, __m128i abef, __m128i wk) noexcept {
    return reinterpret_cast<__m128i>(__builtin_ia32_sha256rnds2(reinterpret_cast<__v4si>(cdgh),
                                                                reinterpret_cast<__v4si>(abef),
                                                                reinterpret_cast<__v4si>(wk)));
}
COMPILE_CACHE_SHANI_INLINE __m128i sha256_x86_msg1(__m128i a, __m128i b) noexcept {
    return reinterpret_cast<__m128i>(
        __builtin_ia32_sha256msg1(reinterpret_cast<__v4si>(a), reinterpret_cast<__v4si>(b)));
}
COMPILE_CACHE_SHANI_INLINE __m128i sha256_x86_msg2(__m128i a, __m128i b) noexcept {
    return reinterpret_cast<__m128i>(
        __builtin_ia32_sha256msg2(reinterpret_cast<__v4si>(a), reinterpret_cast<__v4si>(b)));
}

/// Four rounds: W[t..t+3] + K[t..t+3], two rounds from the low half, two from the high.
COMPILE_CACHE_SHANI_INLINE void sha256_x86_four_rounds(__m128i& abef, __m128i& cdgh, __m128i w,
                                                       std::size_t t) noexcept {
    __m128i wk = _mm_add_epi32(w, _mm_loadu_si128(reinterpret_cast<__m128i const*>(sha256_round_constants + t)));
    cdgh = sha256_x86_rnds2(cdgh, abef, wk); // cdgh now holds the new ABEF
    wk = _mm_shuffle_epi32(wk, 0x0e);        // the high two words down
    abef = sha256_x86_rnds2(abef, cdgh, wk); // and back
}

/// W[t..t+3] from w0 = W[t-16..t-13], w1 = W[t-12..t-9], w2 = W[t-8..t-5], w3 = W[t-4..t-1]:
/// MSG1 gives W[t-16+i] + sigma0(W[t-15+i]); PALIGNR picks W[t-7..t-4] to add; MSG2 adds
/// sigma1(W[t-2+i]), including those of the two words it has just made.
COMPILE_CACHE_SHANI_INLINE __m128i sha256_x86_schedule(__m128i w0, __m128i w1, __m128i w2, __m128i w3) noexcept {
    __m128i const partial = _mm_add_epi32(sha256_x86_msg1(w0, w1), _mm_alignr_epi8(w3, w2, 4));
    return sha256_x86_msg2(partial, w3);
}

COMPILE_CACHE_SHANI_TARGET void sha256_compress_x86(std::uint32_t state[8], unsigned char const* blocks,
                                                    std::size_t nblocks) noexcept {
    // Big-endian words: reverse the bytes of each dword.
    __m128i const byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);

    // H0..H3 = A B C D and H4..H7 = E F G H (lowest lane first) into ABEF / CDGH
    // (A in the highest lane).
    __m128i t = _mm_loadu_si128(reinterpret_cast<__m128i const*>(state));        // D C B A
    __m128i cdgh = _mm_loadu_si128(reinterpret_cast<__m128i const*>(state + 4)); // H G F E
    t = _mm_shuffle_epi32(t, 0xb1);                                              // C D A B
    cdgh = _mm_shuffle_epi32(cdgh, 0x1b);                                        // E F G H
    __m128i abef = _mm_alignr_epi8(t, cdgh, 8);                                  // A B E F
    cdgh = _mm_blend_epi16(cdgh, t, 0xf0);                                       // C D G H

    for (; nblocks != 0; --nblocks, blocks += 64) {
        __m128i const abef_before = abef, cdgh_before = cdgh;
        auto const* in = reinterpret_cast<__m128i const*>(blocks);
        __m128i w0 = _mm_shuffle_epi8(_mm_loadu_si128(in + 0), byte_swap);
        __m128i w1 = _mm_shuffle_epi8(_mm_loadu_si128(in + 1), byte_swap);
        __m128i w2 = _mm_shuffle_epi8(_mm_loadu_si128(in + 2), byte_swap);
        __m128i w3 = _mm_shuffle_epi8(_mm_loadu_si128(in + 3), byte_swap);

        sha256_x86_four_rounds(abef, cdgh, w0, 0);
        sha256_x86_four_rounds(abef, cdgh, w1, 4);
        sha256_x86_four_rounds(abef, cdgh, w2, 8);
        sha256_x86_four_rounds(abef, cdgh, w3, 12);
        // Rounds 16..63: each group's words are computed from the four groups before
        // it; the schedule does not depend on the state, so the CPU runs it ahead.
        for (std::size_t r = 16; r < 64; r += 16) {
            w0 = sha256_x86_schedule(w0, w1, w2, w3);
            sha256_x86_four_rounds(abef, cdgh, w0, r);
            w1 = sha256_x86_schedule(w1, w2, w3, w0);
            sha256_x86_four_rounds(abef, cdgh, w1, r + 4);
            w2 = sha256_x86_schedule(w2, w3, w0, w1);
            sha256_x86_four_rounds(abef, cdgh, w2, r + 8);
            w3 = sha256_x86_schedule(w3, w0, w1, w2);
            sha256_x86_four_rounds(abef, cdgh, w3, r + 12);
        }

        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }

    // Back to A B C D / E F G H.
    t = _mm_shuffle_epi32(abef, 0x1b);          // F E B A -> lanes A B E F, low first
    cdgh = _mm_shuffle_epi32(cdgh, 0xb1);       // lanes G H C D, low first
    abef = _mm_blend_epi16(t, cdgh, 0xf0);      // A B C D
    cdgh = _mm_alignr_epi8(cdgh, t, 8);         // E F G H
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state), abef);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), cdgh);
}

} // namespace detail
} // namespace compile_cache

#undef COMPILE_CACHE_SHANI_TARGET
#undef COMPILE_CACHE_SHANI_INLINE

#endif
