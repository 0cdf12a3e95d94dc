// compile_cache: the definitions of key/key.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

std::string key::hex() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s(size_ * 2, '0');
    for (std::size_t i = 0; i < size_; ++i) {
        s[2 * i] = digits[bytes_[i] >> 4];
        s[2 * i + 1] = digits[bytes_[i] & 15];
    }
    return s;
}

std::optional<key> key::from_hex(std::string_view s) {
    if (s.empty() || s.size() % 2 != 0 || s.size() / 2 > max_size) return std::nullopt;
    key k;
    k.size_ = static_cast<std::uint8_t>(s.size() / 2);
    for (std::size_t i = 0; i < k.size_; ++i) {
        int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        k.bytes_[i] = static_cast<unsigned char>(hi * 16 + lo);
    }
    return k;
}

} // namespace compile_cache
#endif
