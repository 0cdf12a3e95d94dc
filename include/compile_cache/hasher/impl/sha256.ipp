// compile_cache: the definitions of hasher/sha256.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

char const* to_string(sha256_backend b) noexcept {
    switch (b) {
    case sha256_backend::portable: return "portable";
    case sha256_backend::x86_sha_ni: return "x86-sha-ni";
    case sha256_backend::arm_sha2: return "arm-sha2";
    }
    return "?";
}

} // namespace compile_cache
#endif
