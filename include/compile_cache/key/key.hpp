// compile_cache: the key of an entry, a digest of up to 64 bytes.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace compile_cache {

/// A key: the digest a Hasher produced for a canonical message. Small, regular and
/// cheap to copy; holds digests of 1 to 64 bytes so any Hasher's result fits.
class key {
public:
    static constexpr std::size_t max_size = 64;

    key() noexcept = default;

    /// The key of `n` bytes. More than max_size bytes are not a key: the result is the
    /// empty key (which every storage refuses), never a truncated one that could name
    /// another entry. Where the bytes come from storage, use from_bytes.
    key(void const* bytes, std::size_t n) noexcept : size_(static_cast<std::uint8_t>(n <= max_size ? n : 0)) {
        if (size_ != 0) std::memcpy(bytes_.data(), bytes, size_);
    }

    /// The key of `n` bytes read from storage (a SQLite row's key column, ...); nullopt
    /// when they cannot be a key: none, or more than max_size.
    static std::optional<key> from_bytes(void const* bytes, std::size_t n) noexcept {
        if (n == 0 || n > max_size || bytes == nullptr) return std::nullopt;
        return key(bytes, n);
    }

    /// From any contiguous digest type such as `std::array<unsigned char, 32>`.
    template <class Digest, class = decltype(std::declval<Digest const&>().data()),
              class = decltype(std::declval<Digest const&>().size())>
    explicit key(Digest const& d) noexcept : key(d.data(), d.size()) {}

    unsigned char const* data() const noexcept { return bytes_.data(); }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }

    /// Lower-case hexadecimal, two digits per byte.
    COMPILE_CACHE_DECL std::string hex() const;

    /// Parses what hex() wrote; nullopt for anything else (odd length, bad digit, too long).
    COMPILE_CACHE_DECL static std::optional<key> from_hex(std::string_view s);

    friend bool operator==(key const& a, key const& b) noexcept {
        return a.size_ == b.size_ && std::memcmp(a.bytes_.data(), b.bytes_.data(), a.size_) == 0;
    }
    friend bool operator!=(key const& a, key const& b) noexcept { return !(a == b); }
    friend bool operator<(key const& a, key const& b) noexcept {
        return std::lexicographical_compare(a.bytes_.begin(), a.bytes_.begin() + a.size_,
                                            b.bytes_.begin(), b.bytes_.begin() + b.size_);
    }

private:
    static int hex_digit(char c) noexcept {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    std::array<unsigned char, max_size> bytes_{};
    std::uint8_t size_ = 0;
};

/// One named component of a key and the digest of its canonical message (key_builder
/// keeps them so that a miss can be explained, and entries record them).
struct component_digest {
    std::string name;
    key digest;

    friend bool operator==(component_digest const& a, component_digest const& b) {
        return a.name == b.name && a.digest == b.digest;
    }
};

} // namespace compile_cache

template <>
struct std::hash<compile_cache::key> {
    std::size_t operator()(compile_cache::key const& k) const noexcept {
        // The bytes are already a cryptographic digest: any eight of them are uniform.
        std::size_t h = 0;
        std::memcpy(&h, k.data(), std::min(sizeof h, k.size()));
        return h;
    }
};

#include <compile_cache/key/impl/key.ipp>
