// compile_cache: the portable SHA-256 block compression (FIPS 180-4, section 6.2.2).
//
// Kept apart from the sha256 class so that a hardware compression function
// (x86 SHA-NI, ARMv8 SHA2) with the same signature can be chosen at run time and
// this one stays the fallback and the reference the others are tested against.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/endian.hpp>

#include <cstddef>
#include <cstdint>

namespace compile_cache {
namespace detail {

/// The initial hash value H(0) (FIPS 180-4, 5.3.3).
inline constexpr std::uint32_t sha256_initial_state[8] = {
    0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
    0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};

/// The round constants K (FIPS 180-4, 4.2.2).
inline constexpr std::uint32_t sha256_round_constants[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

inline std::uint32_t sha256_rotr(std::uint32_t x, unsigned n) noexcept {
    return (x >> n) | (x << (32u - n)); // n is always in 1..31 here
}

// The six logical functions of FIPS 180-4, 4.1.2.
inline std::uint32_t sha256_ch(std::uint32_t x, std::uint32_t y, std::uint32_t z) noexcept {
    return z ^ (x & (y ^ z));
}
inline std::uint32_t sha256_maj(std::uint32_t x, std::uint32_t y, std::uint32_t z) noexcept {
    return (x & y) | (z & (x | y));
}
inline std::uint32_t sha256_big_sigma0(std::uint32_t x) noexcept {
    return sha256_rotr(x, 2) ^ sha256_rotr(x, 13) ^ sha256_rotr(x, 22);
}
inline std::uint32_t sha256_big_sigma1(std::uint32_t x) noexcept {
    return sha256_rotr(x, 6) ^ sha256_rotr(x, 11) ^ sha256_rotr(x, 25);
}
inline std::uint32_t sha256_small_sigma0(std::uint32_t x) noexcept {
    return sha256_rotr(x, 7) ^ sha256_rotr(x, 18) ^ (x >> 3);
}
inline std::uint32_t sha256_small_sigma1(std::uint32_t x) noexcept {
    return sha256_rotr(x, 17) ^ sha256_rotr(x, 19) ^ (x >> 10);
}

/// One round. Instead of shifting the eight working variables down by one after
/// every round, the caller rotates the names it passes: only d and h change.
inline void sha256_round(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t& d,
                         std::uint32_t e, std::uint32_t f, std::uint32_t g, std::uint32_t& h,
                         std::uint32_t k_plus_w) noexcept {
    std::uint32_t const t1 = h + sha256_big_sigma1(e) + sha256_ch(e, f, g) + k_plus_w;
    std::uint32_t const t2 = sha256_big_sigma0(a) + sha256_maj(a, b, c);
    d += t1;
    h = t1 + t2;
}

/// Sixteen rounds starting at round `first` (0, 16, 32 or 48), over the 16 message
/// schedule words in w[] (w[r] is W[first + r]).
inline void sha256_sixteen_rounds(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c,
                                  std::uint32_t& d, std::uint32_t& e, std::uint32_t& f,
                                  std::uint32_t& g, std::uint32_t& h, std::uint32_t const* w,
                                  std::size_t first) noexcept {
    std::uint32_t const* k = sha256_round_constants + first;
    sha256_round(a, b, c, d, e, f, g, h, k[0] + w[0]);
    sha256_round(h, a, b, c, d, e, f, g, k[1] + w[1]);
    sha256_round(g, h, a, b, c, d, e, f, k[2] + w[2]);
    sha256_round(f, g, h, a, b, c, d, e, k[3] + w[3]);
    sha256_round(e, f, g, h, a, b, c, d, k[4] + w[4]);
    sha256_round(d, e, f, g, h, a, b, c, k[5] + w[5]);
    sha256_round(c, d, e, f, g, h, a, b, k[6] + w[6]);
    sha256_round(b, c, d, e, f, g, h, a, k[7] + w[7]);
    sha256_round(a, b, c, d, e, f, g, h, k[8] + w[8]);
    sha256_round(h, a, b, c, d, e, f, g, k[9] + w[9]);
    sha256_round(g, h, a, b, c, d, e, f, k[10] + w[10]);
    sha256_round(f, g, h, a, b, c, d, e, k[11] + w[11]);
    sha256_round(e, f, g, h, a, b, c, d, k[12] + w[12]);
    sha256_round(d, e, f, g, h, a, b, c, k[13] + w[13]);
    sha256_round(c, d, e, f, g, h, a, b, k[14] + w[14]);
    sha256_round(b, c, d, e, f, g, h, a, k[15] + w[15]);
}

/// Replaces W[t-16 .. t-1], held in w[0..15], by W[t .. t+15] (FIPS 180-4, 6.2.2 step 1):
/// W[t] = sigma1(W[t-2]) + W[t-7] + sigma0(W[t-15]) + W[t-16], computed in place.
inline void sha256_expand(std::uint32_t* w) noexcept {
    for (std::size_t r = 0; r < 16; ++r)
        w[r] += sha256_small_sigma1(w[(r + 14) & 15]) + w[(r + 9) & 15] +
                sha256_small_sigma0(w[(r + 1) & 15]);
}

/// Compresses `nblocks` consecutive 64-byte blocks starting at `blocks` into `state`
/// (the eight words H0..H7). No alignment is required of `blocks`.
COMPILE_CACHE_DECL void sha256_compress_portable(std::uint32_t state[8], unsigned char const* blocks,
                                                 std::size_t nblocks) noexcept;

} // namespace detail
} // namespace compile_cache

#include <compile_cache/detail/impl/sha256_portable.ipp>
