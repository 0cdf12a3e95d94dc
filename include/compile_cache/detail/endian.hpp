// compile_cache: the one place fixed-width integers become bytes and back, in either
// byte order, whatever the host's (envelope, key message, ledger, CRC-32C, SHA-256).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace compile_cache::detail {

/// Writes the sizeof(UInt) bytes of v at p, least significant first.
template <class UInt>
inline void store_le(unsigned char* p, UInt v) noexcept {
    for (std::size_t i = 0; i < sizeof(UInt); ++i) {
        p[i] = static_cast<unsigned char>(v & 0xffu);
        v = static_cast<UInt>(v >> 7 >> 1); // two shifts: no UB when UInt is one byte
    }
}

/// Writes the sizeof(UInt) bytes of v at p, most significant first.
template <class UInt>
inline void store_be(unsigned char* p, UInt v) noexcept {
    for (std::size_t i = sizeof(UInt); i-- > 0;) {
        p[i] = static_cast<unsigned char>(v & 0xffu);
        v = static_cast<UInt>(v >> 7 >> 1);
    }
}

template <class UInt>
inline void append_le(std::string& out, UInt v) {
    unsigned char bytes[sizeof(UInt)];
    store_le(bytes, v);
    out.append(reinterpret_cast<char const*>(bytes), sizeof(UInt));
}

/// The integer whose bytes, least significant first, are at p (unaligned). One load on
/// a little-endian host, whose compilers all define __BYTE_ORDER__.
template <class UInt>
inline UInt read_le(unsigned char const* p) noexcept {
    UInt v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(&v, p, sizeof(UInt));
#else
    for (std::size_t i = sizeof(UInt); i-- > 0;) v = static_cast<UInt>((v << 7 << 1) | p[i]);
#endif
    return v;
}

/// The integer whose bytes, most significant first, are at p; compilers turn this into
/// one load and a byte swap.
template <class UInt>
inline UInt read_be(unsigned char const* p) noexcept {
    UInt v = 0;
    for (std::size_t i = 0; i < sizeof(UInt); ++i) v = static_cast<UInt>((v << 7 << 1) | p[i]);
    return v;
}

} // namespace compile_cache::detail
