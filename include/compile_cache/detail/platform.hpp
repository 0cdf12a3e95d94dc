// compile_cache: what the library was compiled for: the platform name the key's
// toolchain component carries, and whether the Linux-only calls may be used.
#pragma once

/// COMPILE_CACHE_LINUX_CALLS is 1 when the library may call what only Linux has
/// (renameat2, getrandom, getauxval, dl_iterate_phdr for the build-id), 0 otherwise.
/// Defining COMPILE_CACHE_NO_LINUX_EXTENSIONS (the CMake option of the same name)
/// makes a Linux build take the portable paths that other systems take.
#if defined(__linux__) && !defined(COMPILE_CACHE_NO_LINUX_EXTENSIONS)
#define COMPILE_CACHE_LINUX_CALLS 1
#else
#define COMPILE_CACHE_LINUX_CALLS 0
#endif

namespace compile_cache::detail {

/// "<cpu architecture>-<operating system>" of the compiled code, e.g. "x86_64-linux",
/// "aarch64-linux": machine code or an ABI-dependent entry written for one is not
/// loaded by another, since the toolchain component differs.
constexpr char const* compiled_platform() noexcept {
#if defined(__x86_64__) || defined(_M_X64)
#define COMPILE_CACHE_PLATFORM_CPU "x86_64"
#elif defined(__aarch64__) || defined(_M_ARM64)
#define COMPILE_CACHE_PLATFORM_CPU "aarch64"
#elif defined(__i386__) || defined(_M_IX86)
#define COMPILE_CACHE_PLATFORM_CPU "i386"
#elif defined(__arm__) || defined(_M_ARM)
#define COMPILE_CACHE_PLATFORM_CPU "arm"
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
#define COMPILE_CACHE_PLATFORM_CPU "ppc64le"
#elif defined(__powerpc64__)
#define COMPILE_CACHE_PLATFORM_CPU "ppc64"
#elif defined(__riscv) && defined(__riscv_xlen) && __riscv_xlen == 64
#define COMPILE_CACHE_PLATFORM_CPU "riscv64"
#elif defined(__s390x__)
#define COMPILE_CACHE_PLATFORM_CPU "s390x"
#else
#define COMPILE_CACHE_PLATFORM_CPU "unknown-cpu"
#endif
#if defined(__linux__)
#define COMPILE_CACHE_PLATFORM_OS "linux"
#elif defined(__APPLE__)
#define COMPILE_CACHE_PLATFORM_OS "darwin"
#elif defined(_WIN32)
#define COMPILE_CACHE_PLATFORM_OS "windows"
#elif defined(__FreeBSD__)
#define COMPILE_CACHE_PLATFORM_OS "freebsd"
#else
#define COMPILE_CACHE_PLATFORM_OS "unknown-os"
#endif
    return COMPILE_CACHE_PLATFORM_CPU "-" COMPILE_CACHE_PLATFORM_OS;
#undef COMPILE_CACHE_PLATFORM_CPU
#undef COMPILE_CACHE_PLATFORM_OS
}

} // namespace compile_cache::detail
