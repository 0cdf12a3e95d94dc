// compile_cache: SHA-256 (FIPS 180-4) as a Hasher, with the members of Boost.Hash2's
// HashAlgorithm concept, so the two are interchangeable.
#pragma once

#include <compile_cache/detail/sha256_portable.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace compile_cache {

/// SHA-256, portable C++17, no dependency.
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
            for (unsigned i = 0; i < 8; ++i)
                bytes[i] = static_cast<unsigned char>(seed >> (8 * i));
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
        for (unsigned i = 0; i < 8; ++i)
            padding[zeros_and_marker + i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
        update(padding, zeros_and_marker + 8);
        // buffered_ is 0 here: the padding completed a block.

        result_type digest;
        for (std::size_t i = 0; i < 8; ++i) detail::sha256_store_be32(digest.data() + 4 * i, state_[i]);
        return digest;
    }

private:
    // The one place a block compression function is chosen; a run-time choice of a
    // hardware implementation with the same signature goes here.
    void compress(unsigned char const* blocks, std::size_t nblocks) noexcept {
        detail::sha256_compress_portable(state_, blocks, nblocks);
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
