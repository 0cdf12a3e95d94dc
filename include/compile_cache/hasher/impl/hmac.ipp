// compile_cache: the definitions of hasher/hmac.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

bool constant_time_equal(void const* a, void const* b, std::size_t n) noexcept {
    auto const* x = static_cast<unsigned char const*>(a);
    auto const* y = static_cast<unsigned char const*>(b);
    unsigned char diff = 0;
    for (std::size_t i = 0; i < n; ++i) diff = static_cast<unsigned char>(diff | (x[i] ^ y[i]));
    return diff == 0;
}

} // namespace compile_cache::detail
#endif
