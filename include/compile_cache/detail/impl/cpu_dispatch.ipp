// compile_cache: the definitions of detail/cpu_dispatch.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#if defined(__aarch64__) && COMPILE_CACHE_LINUX_CALLS
#include <sys/auxv.h>
#endif

namespace compile_cache::detail {

bool arm_cpu_has(unsigned long hwcap_bit) noexcept {
#if defined(__aarch64__) && COMPILE_CACHE_LINUX_CALLS
    return (getauxval(AT_HWCAP) & hwcap_bit) != 0;
#else
    (void)hwcap_bit;
    return false;
#endif
}

} // namespace compile_cache::detail
#endif
