// compile_cache: SHA-256 block compression with the ARMv8 SHA-2 instructions
// (FEAT_SHA256: SHA256H, SHA256H2, SHA256SU0, SHA256SU1), AArch64 only.
//
// The state lives in two vectors, ABCD and EFGH. SHA256H/SHA256H2 do four rounds from
// W[t..t+3] + K[t..t+3] (one gives the new ABCD, the other the new EFGH, both from the
// old pair); SHA256SU0/SHA256SU1 compute four message-schedule words at a time
// (Arm Architecture Reference Manual, the SHA256* instruction descriptions).
//
// How it is compiled:
// - GCC: a per-function target attribute; its arm_neon.h declares the intrinsics
//   whatever the command line says, so no -march flag is needed. The attribute is
//   "+crypto", not "+sha2": GCC 12's arm_neon.h wraps the SHA-2 intrinsics in
//   `#pragma GCC target("+nothing+crypto")`, and a caller must have every feature of
//   the always-inline callee (with "+sha2" GCC 12 refuses to inline them; checked
//   with aarch64-linux-gnu-g++ 12.2). "+crypto" (AES and SHA-2) also satisfies later
//   GCCs that wrap them in "+sha2"; only SHA-2 instructions are emitted, and the
//   run-time check is for HWCAP_SHA2 alone.
// - Clang: its arm_neon.h declares them only when __ARM_FEATURE_SHA2 is defined
//   (clang 14 at least), i.e. when the program is built with e.g.
//   -march=armv8-a+crypto or -march=armv8.2-a+sha2; otherwise this path is not
//   compiled and the portable code is used.
// Either way it is called only after sha256_arm_supported() said yes.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/cpu_dispatch.hpp>
#include <compile_cache/detail/sha256_portable.hpp>

#include <cstddef>
#include <cstdint>

#if defined(__aarch64__) && (defined(__ARM_FEATURE_SHA2) || (defined(__GNUC__) && !defined(__clang__)))
#define COMPILE_CACHE_HAS_SHA256_ARM 1
#else
#define COMPILE_CACHE_HAS_SHA256_ARM 0
#endif

#if COMPILE_CACHE_HAS_SHA256_ARM
namespace compile_cache {
namespace detail {

/// True when the CPU has the SHA-256 instructions: always when the program was built
/// for a target that has them; on Linux, HWCAP_SHA2 in the auxiliary vector; no
/// elsewhere (e.g. Apple platforms built without the feature: the portable code).
COMPILE_CACHE_DECL bool sha256_arm_supported() noexcept;

/// Same contract as sha256_compress_portable.
#if defined(__ARM_FEATURE_SHA2)
COMPILE_CACHE_DECL void sha256_compress_arm(std::uint32_t state[8], unsigned char const* blocks,
                                            std::size_t nblocks) noexcept;
#else
__attribute__((target("+crypto"))) COMPILE_CACHE_DECL void
sha256_compress_arm(std::uint32_t state[8], unsigned char const* blocks, std::size_t nblocks) noexcept;
#endif

} // namespace detail
} // namespace compile_cache
#endif // COMPILE_CACHE_HAS_SHA256_ARM

#include <compile_cache/detail/impl/sha256_arm.ipp>
