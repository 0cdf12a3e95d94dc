// compile_cache: the envelope every stored value travels in. It is checked, and its
// lengths bounded, before a single byte reaches a deserializer: Boost trusts its
// input, and a small corrupt archive can make it allocate gigabytes.
//
// Layout (integers little-endian):
//   magic        8  "CCENTRY\n"
//   version      2  envelope_version
//   flags        2  0 (reserved for keyed digests)
//   key size     1, key bytes
//   metadata     4  length, then: name, origin file, serializer format id (each u32 length +
//                   bytes), origin line (i64), creation time (i64 ns since the epoch),
//                   compile time (u64 ns)
//   payload      8  length, then the serializer's bytes
//   digest      32  SHA-256 over everything before it
// The digest is always the last 32 bytes and is checked first, so that any damaged
// byte, even in the version field, reads as corrupt.
#pragma once

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace compile_cache {

inline constexpr std::uint16_t envelope_version = 1;

/// What an entry says about itself, besides its key.
struct entry_metadata {
    std::string name;
    std::string origin_file;
    std::string format_id;
    std::int64_t origin_line = 0;
    std::int64_t created_ns = 0;
    std::uint64_t compile_ns = 0;
};

enum class envelope_status {
    ok,
    corrupt,         ///< damaged, truncated, or not an entry at all
    foreign_version, ///< a sound entry in another envelope version or serializer format
    key_mismatch,    ///< a sound entry, but for another key than the one asked for
    too_large,       ///< the payload is longer than the configured maximum
};

struct opened_envelope {
    envelope_status status = envelope_status::corrupt;
    entry_metadata metadata;
    std::string_view payload; ///< points into the bytes given to open_envelope
};

namespace detail {
inline constexpr char envelope_magic[8] = {'C', 'C', 'E', 'N', 'T', 'R', 'Y', '\n'};
inline constexpr std::size_t envelope_digest_size = 32;
inline constexpr std::size_t envelope_max_metadata = 1u << 20;

inline void append_string32(std::string& out, std::string_view s) {
    append_le<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
    out.append(s.data(), s.size());
}

/// A bounds-checked cursor: every read says whether it fit.
class envelope_reader {
public:
    envelope_reader(unsigned char const* p, std::size_t n) : p_(p), left_(n) {}

    template <class UInt>
    bool read(UInt& v) {
        if (left_ < sizeof(UInt)) return false;
        v = read_le<UInt>(p_);
        advance(sizeof(UInt));
        return true;
    }
    bool read_bytes(std::size_t n, std::string_view& out) {
        if (left_ < n) return false;
        out = std::string_view(reinterpret_cast<char const*>(p_), n);
        advance(n);
        return true;
    }
    bool read_string32(std::string& out) {
        std::uint32_t n;
        std::string_view v;
        if (!read(n) || !read_bytes(n, v)) return false;
        out.assign(v.data(), v.size());
        return true;
    }
    std::size_t left() const noexcept { return left_; }

private:
    void advance(std::size_t n) {
        p_ += n;
        left_ -= n;
    }
    unsigned char const* p_;
    std::size_t left_;
};
} // namespace detail

/// Starts an entry in `out` (which is cleared): everything up to the payload. The
/// serializer then appends the payload, and seal_envelope() finishes the entry.
/// Returns the position of the payload length field.
inline std::size_t begin_envelope(std::string& out, key const& k, entry_metadata const& m) {
    out.clear();
    out.append(detail::envelope_magic, sizeof detail::envelope_magic);
    detail::append_le<std::uint16_t>(out, envelope_version);
    detail::append_le<std::uint16_t>(out, 0);
    out.push_back(static_cast<char>(k.size()));
    out.append(reinterpret_cast<char const*>(k.data()), k.size());
    std::string meta;
    detail::append_string32(meta, m.name);
    detail::append_string32(meta, m.origin_file);
    detail::append_string32(meta, m.format_id);
    detail::append_le<std::uint64_t>(meta, static_cast<std::uint64_t>(m.origin_line));
    detail::append_le<std::uint64_t>(meta, static_cast<std::uint64_t>(m.created_ns));
    detail::append_le<std::uint64_t>(meta, m.compile_ns);
    detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(meta.size()));
    out += meta;
    std::size_t length_at = out.size();
    detail::append_le<std::uint64_t>(out, 0); // patched by seal_envelope
    return length_at;
}

/// The number of payload bytes appended since begin_envelope.
inline std::size_t envelope_payload_size(std::string const& out, std::size_t length_at) {
    return out.size() - length_at - 8;
}

/// Writes the payload length and appends the digest.
inline void seal_envelope(std::string& out, std::size_t length_at) {
    std::string length;
    detail::append_le<std::uint64_t>(length, static_cast<std::uint64_t>(envelope_payload_size(out, length_at)));
    out.replace(length_at, 8, length);
    auto digest = sha256_digest(out.data(), out.size());
    out.append(reinterpret_cast<char const*>(digest.data()), digest.size());
}

/// Checks an entry read back for `expected`: digest, then version, bounds, key and the
/// serializer's format. Only with status ok does the payload reach a deserializer.
inline opened_envelope open_envelope(std::string_view bytes, key const& expected, std::string_view format_id,
                                     std::size_t max_payload) {
    opened_envelope r;
    constexpr std::size_t min_size = sizeof detail::envelope_magic + 2 + 2 + 1 + 4 + 8 + detail::envelope_digest_size;
    if (bytes.size() < min_size) return r;
    auto const* p = reinterpret_cast<unsigned char const*>(bytes.data());
    std::size_t body = bytes.size() - detail::envelope_digest_size;
    auto digest = sha256_digest(p, body);
    if (std::memcmp(digest.data(), p + body, digest.size()) != 0) return r;
    if (std::memcmp(p, detail::envelope_magic, sizeof detail::envelope_magic) != 0) return r;

    detail::envelope_reader in(p + sizeof detail::envelope_magic, body - sizeof detail::envelope_magic);
    std::uint16_t version = 0, flags = 0;
    in.read(version);
    in.read(flags);
    if (version != envelope_version) {
        r.status = envelope_status::foreign_version;
        return r;
    }
    std::uint8_t key_size = 0;
    std::string_view key_bytes, meta_bytes;
    std::uint32_t meta_size = 0;
    if (flags != 0 || !in.read(key_size) || key_size == 0 || key_size > key::max_size ||
        !in.read_bytes(key_size, key_bytes) || !in.read(meta_size) || meta_size > detail::envelope_max_metadata ||
        !in.read_bytes(meta_size, meta_bytes))
        return r;

    detail::envelope_reader meta(reinterpret_cast<unsigned char const*>(meta_bytes.data()), meta_bytes.size());
    std::uint64_t line = 0, created = 0;
    if (!meta.read_string32(r.metadata.name) || !meta.read_string32(r.metadata.origin_file) ||
        !meta.read_string32(r.metadata.format_id) || !meta.read(line) || !meta.read(created) ||
        !meta.read(r.metadata.compile_ns) || meta.left() != 0)
        return r;
    r.metadata.origin_line = static_cast<std::int64_t>(line);
    r.metadata.created_ns = static_cast<std::int64_t>(created);

    std::uint64_t payload_size = 0;
    if (!in.read(payload_size) || payload_size != in.left()) return r;
    if (payload_size > max_payload) {
        r.status = envelope_status::too_large;
        return r;
    }
    if (key(key_bytes.data(), key_bytes.size()) != expected) {
        r.status = envelope_status::key_mismatch;
        return r;
    }
    if (r.metadata.format_id != format_id) {
        r.status = envelope_status::foreign_version;
        return r;
    }
    in.read_bytes(static_cast<std::size_t>(payload_size), r.payload);
    r.status = envelope_status::ok;
    return r;
}

} // namespace compile_cache
