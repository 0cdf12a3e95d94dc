// compile_cache: HMAC (RFC 2104) over any Hasher, with the members of Boost.Hash2's
// HashAlgorithm concept, so that hmac<sha256> is itself a Hasher. The envelope uses
// hmac<sha256> (HMAC-SHA256) to authenticate entries when the cache has a secret.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/endian.hpp>

#include <compile_cache/hasher/concept.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace compile_cache {

namespace detail {
/// H's result is bytes with a compile-time size (`std::array<unsigned char, N>`), which
/// hmac<H> copies into its pad and feeds to the outer hash; not an integer or a struct.
template <class H, bool = is_hasher_v<H>>
struct has_byte_digest : std::false_type {};
template <class H>
struct has_byte_digest<H, true>
    : std::bool_constant<digest_kind_of<typename H::result_type>() == digest_kind::bytes> {};
} // namespace detail

/// HMAC(K, m) = H((K0 ^ opad) || H((K0 ^ ipad) || m)), RFC 2104, where K0 is the key
/// padded with zeros to the hash's block size, or H(K) so padded when the key is
/// longer than a block.
///
/// Usage: `hmac<sha256> mac(secret.data(), secret.size()); mac.update(p, n); auto tag =
/// mac.result();`. The key is absorbed once, in the constructor: copying a keyed object
/// and feeding the copy is the cheap way to authenticate many messages under one key
/// (two compressions per message fewer than keying each time).
///
/// result() follows the Hasher it wraps: the first result() of an object is the
/// standard HMAC of what was fed; the object stays usable and a second result() gives a
/// different, deterministic value (see sha256's class comment). To authenticate a second
/// message, use a fresh copy of the keyed object.
///
/// Requirements on Hasher: a Hasher (hasher/concept.hpp) that is copyable, whose result
/// is bytes (not an integer), whose first result() of a fresh object is its standard
/// digest, and whose digest is no longer than its block size (true of every hash HMAC
/// is defined for).
template <class Hasher>
class hmac {
    static_assert(detail::is_hasher_v<Hasher>, "compile_cache: hmac<H> needs H to be a Hasher (hasher/concept.hpp)");
    static_assert(!detail::is_hasher_v<Hasher> || detail::has_byte_digest<Hasher>::value,
                  "compile_cache: hmac<H> needs H's result_type to be bytes, as std::array<unsigned char, N>");
    static_assert(std::is_copy_constructible_v<Hasher>, "compile_cache: hmac<H> needs a copyable H");

public:
    using hash_type = Hasher;
    using result_type = typename Hasher::result_type;
    static constexpr std::size_t block_size = static_cast<std::size_t>(Hasher::block_size);

    static_assert(block_size > 0, "compile_cache: hmac<H> needs H::block_size > 0");
    static_assert(detail::static_byte_size<result_type>::value <= block_size,
                  "compile_cache: hmac<H> needs H's digest to be no longer than its block");

    /// HMAC with an empty key (valid, though of no use for authentication).
    hmac() { set_key(nullptr, 0); }

    /// HMAC keyed with the n bytes at p (p may be null when n is 0). Any length: a key
    /// longer than block_size is hashed first, as RFC 2104 says. RFC 2104 recommends
    /// a key at least as long as the digest.
    hmac(void const* key, std::size_t n) { set_key(key, n); }

    /// HMAC keyed with the 8 little-endian bytes of `seed`, or with the empty key when
    /// seed is 0: the seeded constructor of the HashAlgorithm concept.
    explicit hmac(std::uint64_t seed) {
        unsigned char bytes[8];
        detail::store_le(bytes, seed);
        set_key(bytes, seed == 0 ? 0 : 8);
    }

    /// Appends n bytes at p to the message. p may be null when n is 0.
    void update(void const* p, std::size_t n) { inner_.update(p, n); }

    /// The HMAC of the message fed so far (see the class comment for repeated calls).
    result_type result() {
        result_type const inner = inner_.result();
        Hasher outer = outer_; // the keyed outer state stays as it was, for the next call
        outer.update(inner.data(), inner.size());
        return outer.result();
    }

private:
    void set_key(void const* key, std::size_t n) {
        unsigned char k0[block_size] = {};
        if (n > block_size) {
            Hasher h;
            h.update(key, n);
            result_type const digest = h.result();
            std::memcpy(k0, digest.data(), digest.size());
        } else if (n != 0) {
            std::memcpy(k0, key, n);
        }
        unsigned char pad[block_size];
        for (std::size_t i = 0; i < block_size; ++i) pad[i] = static_cast<unsigned char>(k0[i] ^ 0x36u);
        inner_.update(pad, block_size);
        for (std::size_t i = 0; i < block_size; ++i) pad[i] = static_cast<unsigned char>(k0[i] ^ 0x5cu);
        outer_.update(pad, block_size);
        // Not a confidentiality measure (the keyed hash states stay in the object), only
        // no more copies of the key on the stack than needed.
        wipe(k0, sizeof k0);
        wipe(pad, sizeof pad);
    }

    static void wipe(unsigned char* p, std::size_t n) noexcept {
        volatile unsigned char* v = p;
        for (std::size_t i = 0; i < n; ++i) v[i] = 0;
    }

    Hasher inner_{};
    Hasher outer_{};
};

namespace detail {
/// Whether the n bytes at a and b are equal, in a time that depends on n only: for
/// comparing a computed tag with a stored one.
COMPILE_CACHE_DECL bool constant_time_equal(void const* a, void const* b, std::size_t n) noexcept;
} // namespace detail

} // namespace compile_cache

#include <compile_cache/hasher/impl/hmac.ipp>
