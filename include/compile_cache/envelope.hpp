// compile_cache: the envelope every stored value travels in, and the one place that
// knows its layout. An entry is checked, and its lengths bounded, before any byte of it
// reaches a deserializer: Boost trusts its input. docs/design.md ("Entries") says why
// the check is a CRC-32C or an HMAC and what the earlier versions were.
//
// Layout, envelope version 3 (integers little-endian):
//   magic        8  "CCENTRY\n"
//   version      2  envelope_version
//   flags        2  0: unkeyed (CRC-32C); 1: keyed (HMAC-SHA256); any other value is refused
//   key size     1, key bytes
//   metadata     4  length, then: name, origin file, serializer format id (each u32 length +
//                   bytes), origin line (i64), creation time (i64 ns since the epoch),
//                   compile time (u64 ns), then the key's named components: a u32 count,
//                   and for each its name (u32 length + bytes) and digest (u8 length + bytes)
//   payload      8  length, then the serializer's bytes
//   check        4  CRC-32C over everything before it; or, keyed,
//               32  HMAC-SHA256 under the secret over everything before it
// The check value is checked first, in the reader's mode (envelope_auth): any damaged
// byte reads as corrupt (keyed: unauthenticated), a sound entry of another version as
// foreign_version.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/detail/endian.hpp>
#include <compile_cache/hasher/hmac.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/statistics.hpp>

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

/// The miss a load counts for an entry that opened with `s`; nullopt for ok.
inline std::optional<miss_reason> miss_reason_of(envelope_status s) noexcept {
    switch (s) {
    case envelope_status::ok: return std::nullopt;
    case envelope_status::corrupt: return miss_reason::corrupt;
    case envelope_status::foreign_version: return miss_reason::foreign_version;
    case envelope_status::key_mismatch: return miss_reason::key_mismatch;
    case envelope_status::too_large: return miss_reason::too_large;
    case envelope_status::unauthenticated: return miss_reason::unauthenticated;
    }
    return miss_reason::corrupt;
}

/// Whether the bytes stored under a key are bad where they lie (damaged, or a sound
/// entry of another key), so that the storage may drop them. A foreign, too large or
/// unauthenticated entry may be another reader's good one, and is left alone.
inline bool is_damaged_entry(envelope_status s) noexcept {
    return s == envelope_status::corrupt || s == envelope_status::key_mismatch;
}

struct opened_envelope {
    envelope_status status = envelope_status::corrupt;
    entry_metadata metadata;  ///< set when every field was read (ok, too_large, key_mismatch, another format)
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
    explicit envelope_reader(std::string_view bytes)
        : envelope_reader(reinterpret_cast<unsigned char const*>(bytes.data()), bytes.size()) {}

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
    /// A u32 length and that many bytes, seen in place.
    bool read_string32(std::string_view& out) {
        std::uint32_t n;
        return read(n) && read_bytes(n, out);
    }
    /// A u32 length and that many bytes, copied.
    bool read_string32(std::string& out) {
        std::string_view v;
        if (!read_string32(v)) return false;
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

/// Writes everything before the payload into `out` (cleared first), the payload length
/// as 0. Returns where that length is, and how long the metadata came out.
struct envelope_header {
    std::size_t length_at = 0;
    std::size_t metadata_size = 0;
};
inline envelope_header write_envelope_header(std::string& out, key const& k, entry_metadata const& m,
                                             envelope_auth const& auth) {
    out.clear();
    out.append(envelope_magic, sizeof envelope_magic);
    append_le<std::uint16_t>(out, envelope_version);
    append_le<std::uint16_t>(out, auth.flags());
    out.push_back(static_cast<char>(k.size()));
    out.append(reinterpret_cast<char const*>(k.data()), k.size());
    std::string meta;
    append_string32(meta, m.name);
    append_string32(meta, m.origin_file);
    append_string32(meta, m.format_id);
    append_le<std::uint64_t>(meta, static_cast<std::uint64_t>(m.origin_line));
    append_le<std::uint64_t>(meta, static_cast<std::uint64_t>(m.created_ns));
    append_le<std::uint64_t>(meta, m.compile_ns);
    append_le<std::uint32_t>(meta, static_cast<std::uint32_t>(m.components.size()));
    for (component_digest const& c : m.components) {
        append_string32(meta, c.name);
        meta.push_back(static_cast<char>(c.digest.size()));
        meta.append(reinterpret_cast<char const*>(c.digest.data()), c.digest.size());
    }
    append_le<std::uint32_t>(out, static_cast<std::uint32_t>(meta.size()));
    out += meta;
    envelope_header h{out.size(), meta.size()};
    append_le<std::uint64_t>(out, 0); // patched by seal_envelope_at
    return h;
}

/// Writes the length of the payload that follows the length field at `length_at`,
/// then appends the check value of `auth`'s mode.
inline void seal_envelope_at(std::string& out, std::size_t length_at, envelope_auth const& auth) {
    std::uint64_t length = static_cast<std::uint64_t>(out.size() - length_at - 8);
    for (std::size_t i = 0; i < 8; ++i, length >>= 8) out[length_at + i] = static_cast<char>(length & 0xffu);
    auth.append_check(out);
}
} // namespace detail

/// Writes one entry into a string: the constructor writes everything before the
/// payload, the caller appends the payload to out(), and seal() writes the payload's
/// length and the check value. The payload is never copied.
class envelope_writer {
public:
    /// Starts an entry for `k` in `out` (cleared first), checked in `auth`'s mode.
    /// `out` and `auth` must outlive the writer.
    envelope_writer(std::string& out, key const& k, entry_metadata const& m, envelope_auth const& auth)
        : out_(out), auth_(&auth), header_(detail::write_envelope_header(out, k, m, auth)) {}

    /// Whether the metadata is within the bound every reader applies (1 MiB): an entry
    /// beyond it would be written and never read.
    bool metadata_fits() const noexcept { return header_.metadata_size <= detail::envelope_max_metadata; }

    /// Where the payload goes: append it here.
    std::string& out() noexcept { return out_; }

    /// The number of payload bytes appended so far.
    std::size_t payload_size() const noexcept { return out_.size() - header_.length_at - 8; }

    /// The size of the entry once sealed, with the payload appended so far.
    std::size_t sealed_size() const noexcept { return out_.size() + auth_->check_size(); }

    /// Finishes the entry: the payload's length, then the check value. Once.
    void seal() { detail::seal_envelope_at(out_, header_.length_at, *auth_); }

private:
    std::string& out_;
    envelope_auth const* auth_;
    detail::envelope_header header_;
};

/// Starts an entry in `out` (which is cleared): everything up to the payload. The
/// serializer then appends the payload, and seal_envelope() finishes the entry.
/// Returns the position of the payload length field. `auth` must be the one given to
/// seal_envelope. envelope_writer does the same, and tells whether the metadata fits.
inline std::size_t begin_envelope(std::string& out, key const& k, entry_metadata const& m,
                                  envelope_auth const& auth = envelope_auth()) {
    return detail::write_envelope_header(out, k, m, auth).length_at;
}

/// The number of payload bytes appended since begin_envelope.
inline std::size_t envelope_payload_size(std::string const& out, std::size_t length_at) {
    return out.size() - length_at - 8;
}

/// Writes the payload length and appends the check value of `auth`'s mode.
inline void seal_envelope(std::string& out, std::size_t length_at, envelope_auth const& auth = envelope_auth()) {
    detail::seal_envelope_at(out, length_at, auth);
}

namespace detail {
/// An entry's fields as views into its bytes: what a read finds, nothing copied.
struct envelope_fields {
    envelope_status status = envelope_status::corrupt;
    std::uint16_t version = 0;
    bool keyed = false;
    bool complete = false; ///< every field up to the payload was read and is in bounds
    std::string_view key_bytes;
    std::string_view name, origin_file, format_id;
    std::int64_t origin_line = 0;
    std::int64_t created_ns = 0;
    std::uint64_t compile_ns = 0;
    std::uint32_t component_count = 0;
    std::string_view components; ///< their encoding, already walked once by parse_envelope
    std::string_view payload;
};

/// Reads `count` components from `in`, giving each name and digest to `f`; false when
/// they do not fit.
template <class F>
bool read_components(envelope_reader& in, std::uint32_t count, F&& f) {
    for (std::uint32_t i = 0; i < count; ++i) {
        std::string_view name, digest;
        std::uint8_t digest_size = 0;
        if (!in.read_string32(name) || !in.read(digest_size) || digest_size > key::max_size ||
            !in.read_bytes(digest_size, digest))
            return false;
        f(name, digest);
    }
    return true;
}

/// Reads the metadata block into `r`'s fields; false when it is malformed.
inline bool parse_metadata(std::string_view meta_bytes, envelope_fields& r) {
    envelope_reader meta(meta_bytes);
    std::uint64_t line = 0, created = 0;
    if (!meta.read_string32(r.name) || !meta.read_string32(r.origin_file) || !meta.read_string32(r.format_id) ||
        !meta.read(line) || !meta.read(created) || !meta.read(r.compile_ns) || !meta.read(r.component_count))
        return false;
    std::size_t const components_size = meta.left();
    if (!read_components(meta, r.component_count, [](std::string_view, std::string_view) {}) || meta.left() != 0)
        return false;
    r.components = meta_bytes.substr(meta_bytes.size() - components_size);
    r.origin_line = static_cast<std::int64_t>(line);
    r.created_ns = static_cast<std::int64_t>(created);
    return true;
}

/// Reads an entry whose check value is sound in `auth`'s mode: version, flags, bounds,
/// metadata and the payload's place; the key and format are left to the caller.
inline envelope_fields parse_envelope(std::string_view bytes, std::size_t max_payload, envelope_auth const& auth) {
    envelope_fields r;
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
    std::string_view meta_bytes;
    std::uint32_t meta_size = 0;
    if (flags != auth.flags() || !in.read(key_size) || key_size == 0 || key_size > key::max_size ||
        !in.read_bytes(key_size, r.key_bytes) || !in.read(meta_size) || meta_size > envelope_max_metadata ||
        !in.read_bytes(meta_size, meta_bytes))
        return r;
    r.keyed = auth.keyed();
    if (!parse_metadata(meta_bytes, r)) return r;

    std::uint64_t payload_size = 0;
    if (!in.read(payload_size) || payload_size != in.left()) return r;
    r.complete = true;
    if (payload_size > max_payload) {
        r.status = envelope_status::too_large;
        return r;
    }
    in.read_bytes(static_cast<std::size_t>(payload_size), r.payload);
    r.status = envelope_status::ok;
    return r;
}

/// parse_envelope, then the key and the serializer's format: what a load needs, with
/// nothing copied out of `bytes`.
inline envelope_fields check_envelope(std::string_view bytes, key const& expected, std::string_view format_id,
                                      std::size_t max_payload, envelope_auth const& auth) {
    envelope_fields r = parse_envelope(bytes, max_payload, auth);
    if (r.status != envelope_status::ok) return r;
    if (r.key_bytes.size() != expected.size() ||
        std::memcmp(r.key_bytes.data(), expected.data(), expected.size()) != 0) {
        r.status = envelope_status::key_mismatch;
        r.payload = {};
    } else if (r.format_id != format_id) {
        r.status = envelope_status::foreign_version;
        r.payload = {};
    }
    return r;
}

/// The fields, copied into an opened_envelope (its metadata only when complete).
inline opened_envelope to_opened_envelope(envelope_fields const& f) {
    opened_envelope r;
    r.status = f.status;
    r.payload = f.payload;
    r.version = f.version;
    r.keyed = f.keyed;
    if (!f.complete) return r;
    r.stored_key = key(f.key_bytes.data(), f.key_bytes.size());
    entry_metadata& m = r.metadata;
    m.name.assign(f.name.data(), f.name.size());
    m.origin_file.assign(f.origin_file.data(), f.origin_file.size());
    m.format_id.assign(f.format_id.data(), f.format_id.size());
    m.origin_line = f.origin_line;
    m.created_ns = f.created_ns;
    m.compile_ns = f.compile_ns;
    m.components.reserve(f.component_count); // bounded: parse_envelope walked them all
    envelope_reader in(f.components);
    read_components(in, f.component_count, [&m](std::string_view name, std::string_view digest) {
        m.components.push_back({std::string(name), key(digest.data(), digest.size())});
    });
    return r;
}
} // namespace detail

/// Checks an entry read back for `expected`: check value (in `auth`'s mode, whatever
/// the entry's flags say), then version, flags, bounds, key and the serializer's
/// format. Only with status ok does the payload reach a deserializer.
inline opened_envelope open_envelope(std::string_view bytes, key const& expected, std::string_view format_id,
                                     std::size_t max_payload, envelope_auth const& auth = envelope_auth()) {
    return detail::to_opened_envelope(detail::check_envelope(bytes, expected, format_id, max_payload, auth));
}

/// Checks an entry without knowing what it should be, for tools that list or verify
/// a cache: the check value (in `auth`'s mode), version, flags and bounds, as
/// open_envelope does, but neither the key (`stored_key` says which it claims; compare
/// it with where the entry was found) nor the serializer format (in the metadata).
inline opened_envelope inspect_envelope(std::string_view bytes, envelope_auth const& auth = envelope_auth()) {
    return detail::to_opened_envelope(detail::parse_envelope(bytes, static_cast<std::size_t>(-1), auth));
}

} // namespace compile_cache
