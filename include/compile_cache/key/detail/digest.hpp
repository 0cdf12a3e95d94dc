// compile_cache: the key a Hasher's result gives (hasher/concept.hpp says what a
// result may be; this turns one into the bytes of a key).
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/endian.hpp>

#include <compile_cache/hasher/concept.hpp>
#include <compile_cache/key/key.hpp>

#include <cstring>
#include <type_traits>

namespace compile_cache {

static_assert(key::max_size == detail::max_digest_size,
              "compile_cache: a key holds exactly the longest digest a Hasher may give");

namespace detail {

/// The key a result gives: a byte result's bytes; an integer's little-endian bytes; a
/// trivially copyable result's object bytes.
template <class R>
key key_of_digest(R const& r) noexcept {
    constexpr digest_kind kind = digest_kind_of<R>();
    static_assert(kind != digest_kind::none, "compile_cache: not a digest type");
    if constexpr (kind == digest_kind::bytes) {
        return key(r.data(), r.size());
    } else if constexpr (kind == digest_kind::integer) {
        unsigned char bytes[sizeof(R)];
        store_le(bytes, static_cast<std::make_unsigned_t<R>>(r));
        return key(bytes, sizeof bytes);
    } else {
        unsigned char bytes[sizeof(R)];
        std::memcpy(bytes, &r, sizeof(R));
        return key(bytes, sizeof bytes);
    }
}

/// The key of everything fed to h: calls h.result() once.
template <class H>
key hasher_key(H& h) {
    return key_of_digest(h.result());
}

} // namespace detail

} // namespace compile_cache
