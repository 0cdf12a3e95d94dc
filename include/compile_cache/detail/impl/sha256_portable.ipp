// compile_cache: the definitions of detail/sha256_portable.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

void sha256_compress_portable(std::uint32_t state[8], unsigned char const* blocks, std::size_t nblocks) noexcept {
    std::uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    std::uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (; nblocks != 0; --nblocks, blocks += 64) {
        std::uint32_t w[16];
        for (std::size_t i = 0; i < 16; ++i) w[i] = read_be<std::uint32_t>(blocks + 4 * i);

        sha256_sixteen_rounds(a, b, c, d, e, f, g, h, w, 0);
        sha256_expand(w);
        sha256_sixteen_rounds(a, b, c, d, e, f, g, h, w, 16);
        sha256_expand(w);
        sha256_sixteen_rounds(a, b, c, d, e, f, g, h, w, 32);
        sha256_expand(w);
        sha256_sixteen_rounds(a, b, c, d, e, f, g, h, w, 48);

        a = state[0] += a;
        b = state[1] += b;
        c = state[2] += c;
        d = state[3] += d;
        e = state[4] += e;
        f = state[5] += f;
        g = state[6] += g;
        h = state[7] += h;
    }
}

} // namespace compile_cache::detail
#endif
