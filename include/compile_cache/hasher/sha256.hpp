// compile_cache: SHA-256 (FIPS 180-4) as a Hasher, with the members of Boost.Hash2's
// HashAlgorithm concept, so the two are interchangeable.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/detail/cpu_dispatch.hpp>
#include <compile_cache/detail/sha256_arm.hpp>
#include <compile_cache/detail/sha256_portable.hpp>
#include <compile_cache/detail/sha256_x86.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace compile_cache {

/// The block compression functions sha256 can use. Which one runs is chosen once per
/// process, on first use: the hardware one the CPU has, unless the environment
/// variable COMPILE_CACHE_SHA256 is `portable`; set_sha256_implementation() overrides
/// the choice (tests run every vector on every available path that way). All give
/// the same digests; only the speed differs.
enum class sha256_backend : unsigned char {
    portable,   ///< FIPS 180-4 in plain C++ (detail/sha256_portable.hpp); always available
    x86_sha_ni, ///< x86 SHA extensions (SHA256RNDS2, SHA256MSG1/2) with SSE4.1
    arm_sha2,   ///< ARMv8 SHA-2 instructions (SHA256H/H2, SHA256SU0/SU1), AArch64
};

COMPILE_CACHE_DECL char const* to_string(sha256_backend b) noexcept;

namespace detail {

using sha256_compress_fn = void (*)(std::uint32_t*, unsigned char const*, std::size_t) noexcept;

struct sha256_implementations {
    using backend = sha256_backend;
    using function = sha256_compress_fn;
    static constexpr char const* variable = "COMPILE_CACHE_SHA256";
    static constexpr cpu_implementation<backend, function> compiled[] = {
#if COMPILE_CACHE_HAS_SHA256_X86
        {sha256_backend::x86_sha_ni, &sha256_compress_x86, &sha256_x86_supported},
#endif
#if COMPILE_CACHE_HAS_SHA256_ARM
        {sha256_backend::arm_sha2, &sha256_compress_arm, &sha256_arm_supported},
#endif
        {sha256_backend::portable, &sha256_compress_portable, &always_runs},
    };
};

/// The compression function in use, chosen on first use (see cpu_dispatch).
using sha256_dispatch = cpu_dispatch<sha256_implementations>;

/// The compression function of `b`, or null when this build does not contain it.
inline sha256_compress_fn sha256_compress_of(sha256_backend b) noexcept { return sha256_dispatch::function_of(b); }

/// The automatic choice, given the value of COMPILE_CACHE_SHA256 (null when unset).
inline sha256_backend sha256_choose_backend(char const* env_value, bool* not_understood = nullptr) noexcept {
    return sha256_dispatch::choose(env_value, not_understood);
}

} // namespace detail

/// The compression function sha256 uses in this process (making the automatic
/// choice now if nothing has hashed yet).
inline sha256_backend sha256_implementation() noexcept { return detail::sha256_dispatch::current(); }

/// Whether `b` is compiled into this program and runs on this CPU.
inline bool sha256_implementation_available(sha256_backend b) noexcept {
    return detail::sha256_dispatch::runs_here(b);
}

/// Makes every sha256 in the process use `b` from now on (objects mid-stream
/// included: all backends share the state format). False, and nothing changed, when
/// `b` is not available here. Meant for tests and benchmarks; a program that wants
/// the portable code can also set COMPILE_CACHE_SHA256=portable in its environment.
inline bool set_sha256_implementation(sha256_backend b) noexcept { return detail::sha256_dispatch::set(b); }

/// SHA-256, C++17, no dependency: the x86 SHA extensions or the ARMv8 SHA-2
/// instructions when the CPU has them, portable code otherwise (see sha256_backend).
///
/// Usage: `sha256 h; h.update(p, n); ...; auto digest = h.result();` or the one-shot
/// `sha256_digest(p, n)`.
///
/// result() follows Boost.Hash2, not the usual "finalize and reset": it appends the
/// FIPS 180-4 padding to the stream *as message bytes* and returns the digest of what
/// was fed so far. The object stays usable: later update() calls continue the stream
/// after that padding, and calling result() again returns a different (deterministic)
/// value. So the first result() of a fresh object is the standard SHA-256 digest;
/// to hash a second message, use a new object.
class sha256 {
public:
    using result_type = std::array<unsigned char, 32>;
    static constexpr std::size_t block_size = 64;

    sha256() noexcept = default;

    /// Seeded: a nonzero seed feeds its 8 little-endian bytes and then calls result(),
    /// as Boost.Hash2 does; seed 0 is the same as the default constructor.
    explicit sha256(std::uint64_t seed) noexcept {
        if (seed != 0) {
            unsigned char bytes[8];
            detail::store_le(bytes, seed);
            update(bytes, 8);
            result();
        }
    }

    /// Seeded with a byte string: if n != 0, update(p, n) then result(); n == 0 is the
    /// same as the default constructor. Not a one-shot digest: see sha256_digest.
    sha256(void const* p, std::size_t n) noexcept {
        if (n != 0) {
            update(p, n);
            result();
        }
    }

    /// Appends n bytes at p to the message. p may be null when n is 0.
    void update(void const* p, std::size_t n) noexcept {
        if (n == 0) return;
        auto const* in = static_cast<unsigned char const*>(p);
        total_ += n;

        if (buffered_ != 0) {
            std::size_t const take = n < block_size - buffered_ ? n : block_size - buffered_;
            std::memcpy(buffer_ + buffered_, in, take);
            buffered_ += take;
            in += take;
            n -= take;
            if (buffered_ < block_size) return;
            compress(buffer_, 1);
            buffered_ = 0;
        }

        if (n >= block_size) {
            std::size_t const blocks = n / block_size;
            compress(in, blocks);
            in += blocks * block_size;
            n -= blocks * block_size;
        }

        if (n != 0) {
            std::memcpy(buffer_, in, n);
            buffered_ = n;
        }
    }

    /// Pads the stream (0x80, zeros, the 64-bit big-endian bit length) and returns the
    /// digest. The padding becomes part of the stream; see the class comment.
    result_type result() noexcept {
        std::uint64_t const bits = total_ * 8; // the length modulo 2^64, as FIPS 180-4 says
        unsigned char padding[block_size + 8] = {0x80};
        std::size_t const zeros_and_marker =
            buffered_ < 56 ? 56 - buffered_ : block_size + 56 - buffered_;
        detail::store_be(padding + zeros_and_marker, bits);
        update(padding, zeros_and_marker + 8);
        // buffered_ is 0 here: the padding completed a block.

        result_type digest;
        for (std::size_t i = 0; i < 8; ++i) detail::store_be(digest.data() + 4 * i, state_[i]);
        return digest;
    }

private:
    // The one place a block compression function is called: the one chosen once per
    // process (see sha256_backend).
    void compress(unsigned char const* blocks, std::size_t nblocks) noexcept {
        detail::sha256_dispatch::call(state_, blocks, nblocks);
    }

    std::uint32_t state_[8] = {
        detail::sha256_initial_state[0], detail::sha256_initial_state[1],
        detail::sha256_initial_state[2], detail::sha256_initial_state[3],
        detail::sha256_initial_state[4], detail::sha256_initial_state[5],
        detail::sha256_initial_state[6], detail::sha256_initial_state[7],
    };
    unsigned char buffer_[block_size] = {};
    std::size_t buffered_ = 0;  ///< bytes in buffer_, always < block_size between calls
    std::uint64_t total_ = 0;   ///< bytes fed so far, padding included
};

/// One-shot SHA-256 of n bytes at p: the standard digest.
inline sha256::result_type sha256_digest(void const* p, std::size_t n) noexcept {
    sha256 h;
    h.update(p, n);
    return h.result();
}

} // namespace compile_cache

#include <compile_cache/hasher/impl/sha256.ipp>
