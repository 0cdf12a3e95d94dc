// compile_cache: SHA-256 block compression with the x86 SHA extensions (SHA-NI).
//
// Compiled with a per-function target attribute, so the including program needs no
// -msha: the function is only ever called after sha256_x86_supported() said yes
// (see hasher/sha256.hpp, which chooses once per process).
//
// The structure follows Intel's description of the extensions ("Intel SHA
// Extensions", 2013): the eight working variables live in two registers laid out as
// ABEF and CDGH, SHA256RNDS2 does two rounds from the low two dwords of its third
// operand (W[t] + K[t]), SHA256MSG1/SHA256MSG2 plus one PALIGNR/PADDD compute four
// message-schedule words at a time.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/sha256_portable.hpp>

#include <cstddef>
#include <cstdint>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define COMPILE_CACHE_HAS_SHA256_X86 1
#else
#define COMPILE_CACHE_HAS_SHA256_X86 0
#endif

#if COMPILE_CACHE_HAS_SHA256_X86
namespace compile_cache {
namespace detail {

/// True when the CPU has the SHA extensions (CPUID.(EAX=7,ECX=0):EBX bit 29) and
/// SSE4.1 (CPUID.1:ECX bit 19, which the byte shuffles and blends below need; every
/// CPU with SHA-NI has it, but it is checked rather than assumed).
COMPILE_CACHE_DECL bool sha256_x86_supported() noexcept;

/// Same contract as sha256_compress_portable: `nblocks` 64-byte blocks at `blocks`
/// (any alignment) into state[0..7] = H0..H7.
__attribute__((target("sha,sse4.1"))) COMPILE_CACHE_DECL void
sha256_compress_x86(std::uint32_t state[8], unsigned char const* blocks, std::size_t nblocks) noexcept;

} // namespace detail
} // namespace compile_cache
#endif // COMPILE_CACHE_HAS_SHA256_X86

#include <compile_cache/detail/impl/sha256_x86.ipp>
