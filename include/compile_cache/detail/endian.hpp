// compile_cache: little-endian fixed-width integers, whatever the host's byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace compile_cache::detail {

template <class UInt>
inline void append_le(std::string& out, UInt v) {
    char bytes[sizeof(UInt)];
    for (std::size_t i = 0; i < sizeof(UInt); ++i) {
        bytes[i] = static_cast<char>(static_cast<unsigned char>(v & 0xffu));
        v = static_cast<UInt>(v >> 7 >> 1); // two shifts: no UB when UInt is one byte
    }
    out.append(bytes, sizeof(UInt));
}

template <class UInt>
inline UInt read_le(unsigned char const* p) noexcept {
    UInt v = 0;
    for (std::size_t i = sizeof(UInt); i-- > 0;) v = static_cast<UInt>((v << 7 << 1) | p[i]);
    return v;
}

} // namespace compile_cache::detail
