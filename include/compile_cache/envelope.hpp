// compile_cache: the envelope every stored value travels in. It is checked, and its
// lengths bounded, before a single byte reaches a deserializer: Boost trusts its
// input, and a small corrupt archive can make it allocate gigabytes.
//
// Layout, envelope version 3 (integers little-endian):
//   magic        8  "CCENTRY\n"
//   version      2  envelope_version
//   flags        2  how the entry is checked: 0 = unkeyed CRC-32C; bit 0 set = keyed,
//                   HMAC-SHA256 under the cache's secret (32-byte check value); other
//                   bits must be 0
//   key size     1, key bytes
//   metadata     4  length, then: name, origin file, serializer format id (each u32 length +
//                   bytes), origin line (i64), creation time (i64 ns since the epoch),
//                   compile time (u64 ns), then the key's named components: a u32
//                   count, and for each its name (u32 length + bytes) and digest
//                   (u8 length + bytes), so that a tool can say what an entry was
//                   keyed on (version 2 had no components)
//   payload      8  length, then the serializer's bytes
//   check        4  CRC-32C (detail/crc32c.hpp) over everything before it; or, keyed,
//               32  HMAC-SHA256 (hasher/hmac.hpp, RFC 2104) under the secret over
//                   everything before it
// The check value is always the last bytes of the entry and is checked first, so that
// any damaged byte, even in the version or flags field, reads as corrupt (keyed:
// unauthenticated).
//
// Why CRC-32C and not SHA-256 (an early, never released layout ended with a SHA-256
// digest): the unkeyed
// check is there to catch accidents — a torn or truncated write, a flipped bit on
// disk, a file overwritten by something else — and both catch those: CRC-32C detects
// every burst of up to 32 bits and every odd number of flipped bits, and misses other
// random damage with probability 2^-32 (SHA-256: 2^-256, a difference that matters
// only against an adversary). Neither resists deliberate tampering: whoever can write
// an entry can recompute an unkeyed digest as easily as a CRC, so an unkeyed SHA-256
// bought no security, only cost. And the cost was large: over a 4 KiB entry, SHA-256
// (with the SHA extensions) took about as long as reading the file, and without them
// several times longer; CRC-32C with the SSE4.2 instruction is about 15 times faster
// (docs/benchmarks.md has the figures). Protection against tampering is a keyed MAC:
// the HMAC-SHA256 mode of flags bit 0. Which mode a reader accepts comes from the
// reader's own configuration (envelope_auth: a cache with a secret refuses unkeyed
// entries), never from the entry's flags, or flipping the flags would downgrade a
// keyed entry to a CRC anyone can forge. A keyed reader checks the HMAC first and only
// then looks at any field; the flags, now authenticated, must say keyed. An unkeyed
// reader never accepts a keyed entry (it cannot check it). docs/security.md says what
// each mode protects against and what it does not.
//
// An entry of another envelope version whose check value is sound reads as
// foreign_version, not corrupt (versions 2 and 3 share the check value's place).
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/detail/endian.hpp>
#include <compile_cache/hasher/hmac.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>

#include <vector>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace compile_cache {

inline constexpr std::uint16_t envelope_version = 3;

/// What an entry says about itself, besides its key.
struct entry_metadata {
    std::string name;
    std::string origin_file;
    std::string format_id;
    std::int64_t origin_line = 0;
    std::int64_t created_ns = 0;
    std::uint64_t compile_ns = 0;
    /// The key's named components and their digests, as key_builder made them
    /// (key_result::components()); empty for a key made otherwise.
    std::vector<component_digest> components;
};

enum class envelope_status {
    ok,
    corrupt,         ///< damaged, truncated, or not an entry at all
    foreign_version, ///< a sound entry in another envelope version or serializer format
    key_mismatch,    ///< a sound entry, but for another key than the one asked for
    too_large,       ///< the payload is longer than the configured maximum
    /// The reader's mode and the entry's disagree, or the HMAC does not verify: a keyed
    /// reader got an entry without a valid HMAC under its secret (unkeyed, made with
    /// another secret, damaged, truncated or forged: indistinguishable, and not told
    /// apart), or an unkeyed reader got an entry whose header says keyed.
    unauthenticated,
};

struct opened_envelope {
    envelope_status status = envelope_status::corrupt;
    entry_metadata metadata;
    std::string_view payload; ///< points into the bytes given to open_envelope
    key stored_key;           ///< the key the entry says it is for (set from `ok` on, and for key_mismatch)
    std::uint16_t version = 0; ///< the envelope version the entry says (0 when not even that is readable)
    bool keyed = false;        ///< whether it is checked by an HMAC (true) or a CRC-32C
};

namespace detail {
inline constexpr char envelope_magic[8] = {'C', 'C', 'E', 'N', 'T', 'R', 'Y', '\n'};
inline constexpr std::size_t envelope_max_metadata = 1u << 20;

/// The flags of an unkeyed entry: its check value is a CRC-32C.
inline constexpr std::uint16_t envelope_flags_crc32c = 0;
/// The check value is an HMAC-SHA256 under the cache's secret (32 bytes).
inline constexpr std::uint16_t envelope_flag_keyed = 1;
/// The size of the check value at the end of a keyed entry.
inline constexpr std::size_t envelope_keyed_check_size = 32;

/// The size of the check value at the end of an unkeyed entry.
inline constexpr std::size_t envelope_check_size = 4;

/// Appends the check value of `out` (everything in it so far) to `out`.
inline void append_envelope_check(std::string& out) {
    append_le<std::uint32_t>(out, crc32c(out.data(), out.size()));
}

/// Whether the last envelope_check_size bytes of `p[0, n)` are the check value of
/// the bytes before them. n must be at least envelope_check_size.
inline bool envelope_check_matches(unsigned char const* p, std::size_t n) noexcept {
    std::size_t const body = n - envelope_check_size;
    return crc32c(p, body) == read_le<std::uint32_t>(p + body);
}

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
/// The fields before the payload when every variable-length one is empty: magic,
/// version, flags, key size, metadata length, payload length.
inline constexpr std::size_t envelope_min_header = sizeof envelope_magic + 2 + 2 + 1 + 4 + 8;
/// Where the metadata starts in an entry for `k`: after magic, version, flags, the key
/// (size and bytes) and the metadata's length.
inline std::size_t envelope_metadata_offset(key const& k) noexcept { return sizeof envelope_magic + 2 + 2 + 1 + k.size() + 4; }
} // namespace detail

/// How entries are checked, written and read: unkeyed (a CRC-32C, against accidents)
/// or keyed (an HMAC-SHA256 under a secret, against tampering by anyone without the
/// secret). A reader's mode is its own configuration; an entry's flags never choose
/// it. Copyable; the keyed form absorbs the secret once, so each entry costs the
/// HMAC of its bytes and no more.
class envelope_auth {
public:
    /// Unkeyed: CRC-32C check values.
    envelope_auth() noexcept = default;

    /// Keyed with the bytes of `secret`: HMAC-SHA256 check values. An empty secret is
    /// the unkeyed mode (there is nothing to authenticate with).
    explicit envelope_auth(std::string_view secret) {
        if (!secret.empty()) mac_.emplace(secret.data(), secret.size());
    }

    bool keyed() const noexcept { return mac_.has_value(); }

    /// The flags an entry written in this mode carries, and the only ones accepted.
    std::uint16_t flags() const noexcept {
        return keyed() ? detail::envelope_flag_keyed : detail::envelope_flags_crc32c;
    }

    /// The size of the check value at the end of an entry: 4 unkeyed, 32 keyed.
    std::size_t check_size() const noexcept {
        return keyed() ? detail::envelope_keyed_check_size : detail::envelope_check_size;
    }

    /// Appends the check value of `out` (everything in it so far) to `out`.
    void append_check(std::string& out) const {
        if (!keyed()) return detail::append_envelope_check(out);
        auto const tag = tag_of(reinterpret_cast<unsigned char const*>(out.data()), out.size());
        out.append(reinterpret_cast<char const*>(tag.data()), tag.size());
    }

    /// Whether the last check_size() bytes of `p[0, n)` are the check value of the
    /// bytes before them. n must be at least check_size().
    bool check_matches(unsigned char const* p, std::size_t n) const noexcept {
        if (!keyed()) return detail::envelope_check_matches(p, n);
        std::size_t const body = n - detail::envelope_keyed_check_size;
        auto const tag = tag_of(p, body);
        return detail::constant_time_equal(tag.data(), p + body, tag.size());
    }

private:
    hmac<sha256>::result_type tag_of(unsigned char const* p, std::size_t n) const noexcept {
        hmac<sha256> mac = *mac_; // the keyed state, copied: the secret is not hashed again
        mac.update(p, n);
        return mac.result();
    }

    std::optional<hmac<sha256>> mac_;
};

namespace detail {
/// Why an entry whose check value does not match is refused, for the statistics only:
/// nothing here is trusted, and every outcome is a miss.
inline envelope_status unchecked_entry_status(unsigned char const* p, std::size_t n,
                                              envelope_auth const& auth) noexcept {
    // With a secret, damage, another secret, no HMAC at all and a forgery look the same.
    if (auth.keyed()) return envelope_status::unauthenticated;
    // Unkeyed: an entry whose header says keyed (it may be; this reader cannot check).
    if (n >= envelope_min_header + envelope_keyed_check_size &&
        std::memcmp(p, envelope_magic, sizeof envelope_magic) == 0 &&
        read_le<std::uint16_t>(p + sizeof envelope_magic) == envelope_version &&
        read_le<std::uint16_t>(p + sizeof envelope_magic + 2) == envelope_flag_keyed)
        return envelope_status::unauthenticated;
    return envelope_status::corrupt;
}
} // namespace detail

/// Starts an entry in `out` (which is cleared): everything up to the payload. The
/// serializer then appends the payload, and seal_envelope() finishes the entry.
/// Returns the position of the payload length field. `auth` must be the one given to
/// seal_envelope.
inline std::size_t begin_envelope(std::string& out, key const& k, entry_metadata const& m,
                                  envelope_auth const& auth = envelope_auth()) {
    out.clear();
    out.append(detail::envelope_magic, sizeof detail::envelope_magic);
    detail::append_le<std::uint16_t>(out, envelope_version);
    detail::append_le<std::uint16_t>(out, auth.flags());
    out.push_back(static_cast<char>(k.size()));
    out.append(reinterpret_cast<char const*>(k.data()), k.size());
    std::string meta;
    detail::append_string32(meta, m.name);
    detail::append_string32(meta, m.origin_file);
    detail::append_string32(meta, m.format_id);
    detail::append_le<std::uint64_t>(meta, static_cast<std::uint64_t>(m.origin_line));
    detail::append_le<std::uint64_t>(meta, static_cast<std::uint64_t>(m.created_ns));
    detail::append_le<std::uint64_t>(meta, m.compile_ns);
    detail::append_le<std::uint32_t>(meta, static_cast<std::uint32_t>(m.components.size()));
    for (component_digest const& c : m.components) {
        detail::append_string32(meta, c.name);
        meta.push_back(static_cast<char>(c.digest.size()));
        meta.append(reinterpret_cast<char const*>(c.digest.data()), c.digest.size());
    }
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

/// Writes the payload length and appends the check value of `auth`'s mode.
inline void seal_envelope(std::string& out, std::size_t length_at, envelope_auth const& auth = envelope_auth()) {
    std::uint64_t length = static_cast<std::uint64_t>(envelope_payload_size(out, length_at));
    for (std::size_t i = 0; i < 8; ++i, length >>= 8) out[length_at + i] = static_cast<char>(length & 0xffu);
    auth.append_check(out);
}

namespace detail {
/// Reads an entry whose check value is sound in `auth`'s mode: version, flags, bounds,
/// metadata and the payload's place; the key and format are left to the caller.
inline opened_envelope parse_envelope(std::string_view bytes, std::size_t max_payload, envelope_auth const& auth) {
    opened_envelope r;
    std::size_t const check_size = auth.check_size();
    auto const* p = reinterpret_cast<unsigned char const*>(bytes.data());
    if (bytes.size() >= sizeof envelope_magic + 2 && std::memcmp(p, envelope_magic, sizeof envelope_magic) == 0)
        r.version = read_le<std::uint16_t>(p + sizeof envelope_magic);
    if (bytes.size() < envelope_min_header + check_size || !auth.check_matches(p, bytes.size())) {
        r.status = unchecked_entry_status(p, bytes.size(), auth);
        return r;
    }
    std::size_t const body = bytes.size() - check_size;
    if (std::memcmp(p, envelope_magic, sizeof envelope_magic) != 0) return r;

    envelope_reader in(p + sizeof envelope_magic, body - sizeof envelope_magic);
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
    if (flags != auth.flags() || !in.read(key_size) || key_size == 0 || key_size > key::max_size ||
        !in.read_bytes(key_size, key_bytes) || !in.read(meta_size) || meta_size > envelope_max_metadata ||
        !in.read_bytes(meta_size, meta_bytes))
        return r;
    r.keyed = auth.keyed();

    envelope_reader meta(reinterpret_cast<unsigned char const*>(meta_bytes.data()), meta_bytes.size());
    std::uint64_t line = 0, created = 0;
    std::uint32_t components = 0;
    if (!meta.read_string32(r.metadata.name) || !meta.read_string32(r.metadata.origin_file) ||
        !meta.read_string32(r.metadata.format_id) || !meta.read(line) || !meta.read(created) ||
        !meta.read(r.metadata.compile_ns) || !meta.read(components) ||
        components > meta.left() / 5) // each takes at least 5 bytes: a bound before reserving
        return r;
    r.metadata.components.reserve(components);
    for (std::uint32_t i = 0; i < components; ++i) {
        component_digest c;
        std::uint8_t digest_size = 0;
        std::string_view digest;
        if (!meta.read_string32(c.name) || !meta.read(digest_size) || digest_size > key::max_size ||
            !meta.read_bytes(digest_size, digest))
            return r;
        c.digest = key(digest.data(), digest.size());
        r.metadata.components.push_back(std::move(c));
    }
    if (meta.left() != 0) return r;
    r.metadata.origin_line = static_cast<std::int64_t>(line);
    r.metadata.created_ns = static_cast<std::int64_t>(created);

    std::uint64_t payload_size = 0;
    if (!in.read(payload_size) || payload_size != in.left()) return r;
    r.stored_key = key(key_bytes.data(), key_bytes.size());
    if (payload_size > max_payload) {
        r.status = envelope_status::too_large;
        return r;
    }
    in.read_bytes(static_cast<std::size_t>(payload_size), r.payload);
    r.status = envelope_status::ok;
    return r;
}
} // namespace detail

/// Checks an entry read back for `expected`: check value (in `auth`'s mode, whatever
/// the entry's flags say), then version, flags, bounds, key and the serializer's
/// format. Only with status ok does the payload reach a deserializer.
inline opened_envelope open_envelope(std::string_view bytes, key const& expected, std::string_view format_id,
                                     std::size_t max_payload, envelope_auth const& auth = envelope_auth()) {
    opened_envelope r = detail::parse_envelope(bytes, max_payload, auth);
    if (r.status != envelope_status::ok) return r;
    if (r.stored_key != expected) {
        r.status = envelope_status::key_mismatch;
        r.payload = {};
    } else if (r.metadata.format_id != format_id) {
        r.status = envelope_status::foreign_version;
        r.payload = {};
    }
    return r;
}

/// Checks an entry without knowing what it should be, for tools that list or verify
/// a cache: the check value (in `auth`'s mode), version, flags and bounds, as
/// open_envelope does, but neither the key (`stored_key` says which it claims; compare
/// it with where the entry was found) nor the serializer format (in the metadata).
inline opened_envelope inspect_envelope(std::string_view bytes, envelope_auth const& auth = envelope_auth()) {
    return detail::parse_envelope(bytes, static_cast<std::size_t>(-1), auth);
}

} // namespace compile_cache
