// compile_cache: the envelope every stored value travels in, and the one place that
// knows its layout. An entry is checked, and its lengths bounded, before any byte of it
// reaches a deserializer: Boost trusts its input. docs/design.md ("Entries") says why
// the check is a CRC-32C or an HMAC and what the earlier versions were.
//
// Layout, envelope versions 3, 4 and 5 (integers little-endian; the same fields):
//   magic        8  "CCENTRY\n"
//   version      2  3 for an entry whose flags a version-3 reader knew (a CRC-32C or an
//                   HMAC, uncompressed: what readers of earlier releases still read);
//                   4 for one that uses anything else (a signature, or compression), so
//                   that those readers see a sound entry of another version, a clean miss;
//                   5 for a local copy of a signed entry (flag 0x0200), which readers of
//                   earlier releases, unable to ask whether its signer is still trusted,
//                   must miss
//   flags        2  low byte, the check value: 0 unkeyed (CRC-32C), 1 keyed (HMAC-SHA256),
//                   2 signed (Ed25519, version 4 only); bit 0x0100 (versions 4 and 5): the
//                   payload is compressed with zstd (see payload); bit 0x0200 (version 5
//                   only, with 0 or 1): a local copy of a signed entry, whose signer's key
//                   id follows the payload; any other value is refused
//   key size     1, key bytes
//   metadata     4  length, then: name, origin file, serializer format id (each u32 length +
//                   bytes), origin line (i64), creation time (i64 ns since the epoch),
//                   compile time (u64 ns), then the key's named components: a u32 count,
//                   and for each its name (u32 length + bytes) and digest (u8 length + bytes)
//   payload      8  length, then the serializer's bytes; compressed (flag 0x0100): the
//                   size they have once decompressed (u64), then one zstd frame of them
//   signer       8  flag 0x0200 only: the key id of the signed entry this is a copy of
//   check        4  CRC-32C over everything before it; or, keyed,
//               32  HMAC-SHA256 under the secret over everything before it; or, signed,
//               72  the signer's key id (8), then its Ed25519 signature (64) of everything
//                   before the signature (the key id included)
// The check value is checked first, in the reader's mode (envelope_auth): any damaged
// byte reads as corrupt (keyed: unauthenticated), a sound entry of another version as
// foreign_version, a version-3 entry with flags only version 4 has as corrupt. A
// compressed entry is opened here and decompressed by the cache (compression.hpp),
// bounded by the size it declares, itself bounded by the cache's.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/detail/endian.hpp>
#include <compile_cache/hasher/hmac.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>

#include <vector>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace compile_cache {

/// The version an entry that is signed or compressed is written as. This release reads
/// it, envelope_version_plain and envelope_version_signer_copy; any other is
/// foreign_version.
inline constexpr std::uint16_t envelope_version = 4;
/// The version of a plain entry (a CRC-32C or an HMAC, uncompressed), still written as
/// earlier releases wrote it, so that their readers on a shared remote keep reading it.
inline constexpr std::uint16_t envelope_version_plain = 3;
/// The version of a local copy of a signed entry (resealed by reseal_envelope), which
/// names its signer: readers of earlier releases, which cannot tell whether that signer
/// is still trusted, see another version, a clean miss.
inline constexpr std::uint16_t envelope_version_signer_copy = 5;

/// What an entry says about itself, besides its key.
struct entry_metadata {
    std::string name;
    std::string origin_file;
    /// What the payload is: the serializer's format and the artifact type, as
    /// basic_cache::entry_format_id<Artifact>() gives them; a cache loads only an entry
    /// whose format_id is its own for the type asked.
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
    foreign_version, ///< a sound entry in another envelope version or format (serializer, artifact type)
    key_mismatch,    ///< a sound entry, but for another key than the one asked for
    too_large,       ///< the payload is longer than the configured maximum
    /// The reader's mode and the entry's disagree, or the HMAC does not verify: a keyed
    /// reader got an entry without a valid HMAC under its secret (unkeyed, made with
    /// another secret, damaged, truncated or forged: indistinguishable, and not told
    /// apart), or an unkeyed reader got an entry whose header says keyed.
    unauthenticated,
    /// A signed entry whose signer's key id is none of the reader's trusted keys (a key
    /// no longer listed, or never): a miss, whatever the bytes are.
    untrusted_signer,
    /// A sound entry in a form this reader cannot read: compressed, read by a cache with
    /// no Compression policy (or by open_envelope, which does not decompress). Left
    /// alone: another reader may use it.
    unsupported,
};

/// The id a signed entry carries for the key that signed it (signing/ed25519.hpp makes
/// it: the first 8 bytes of the SHA-256 of the public key). It names a key; only the
/// signature proves anything.
using entry_signer_id = std::array<unsigned char, 8>;

/// What checking an entry's signature found.
enum class signature_verdict {
    ok,               ///< a trusted key's signature of exactly these bytes
    untrusted_signer, ///< no trusted key has that id
    bad_signature,    ///< a trusted key's id, but not its signature of these bytes
};

/// Signs entries and checks their signatures: the part of signed entries that needs a
/// cryptographic library, kept out of this header. compile_cache/signing/signed_entries.hpp
/// provides one (Ed25519, libsodium); cache_options::signatures takes it. Thread-safe:
/// its members are const and may be called from any thread at once.
class entry_signatures {
public:
    static constexpr std::size_t signature_size = 64;
    virtual ~entry_signatures() = default;
    /// Whether it holds a secret key (a writer); sign() may be called only then.
    virtual bool can_sign() const noexcept = 0;
    /// The id of the signing key; meaningful only when can_sign().
    virtual entry_signer_id signer_id() const noexcept = 0;
    /// Writes the signature of `message[0, size)` into `signature` (signature_size bytes).
    virtual void sign(unsigned char const* message, std::size_t size, unsigned char* signature) const = 0;
    /// Whether `signature` is the trusted key `id`'s signature of `message[0, size)`.
    virtual signature_verdict verify(entry_signer_id const& id, unsigned char const* message, std::size_t size,
                                     unsigned char const* signature) const noexcept = 0;
    /// Whether a key of id `id` is trusted.
    virtual bool trusts(entry_signer_id const& id) const noexcept = 0;
};

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
    /// Whether its header says it is signed (flags 2), whether or not the signature checked;
    /// then signer_id is the key id it carries.
    bool signed_entry = false;
    entry_signer_id signer_id{};
    /// Whether it is a local copy of a signed entry (envelope flag 0x0200): then signer_id
    /// is the key id of its signer, which a cache must still trust to use it.
    bool signer_copy = false;
    /// Whether the payload is compressed (envelope flag 0x0100); `payload` is then the
    /// compressed frame, and `uncompressed_size` the size it declares once decompressed.
    bool compressed = false;
    std::uint64_t uncompressed_size = 0; ///< the payload's size once decompressed (its size when not compressed)
};

namespace detail {
inline constexpr char envelope_magic[8] = {'C', 'C', 'E', 'N', 'T', 'R', 'Y', '\n'};
inline constexpr std::size_t envelope_max_metadata = 1u << 20;

/// The flags of an unkeyed entry: its check value is a CRC-32C.
inline constexpr std::uint16_t envelope_flags_crc32c = 0;
/// The check value is an HMAC-SHA256 under the cache's secret (32 bytes).
inline constexpr std::uint16_t envelope_flag_keyed = 1;
/// Flag bit: the payload is compressed with zstd. The payload field then holds the
/// size of the payload once decompressed (u64), then one zstd frame.
inline constexpr std::uint16_t envelope_flag_zstd = 0x0100;
/// The flag bits that name the check value (the authenticator); the others are features.
inline constexpr std::uint16_t envelope_flags_authenticator = 0x00ff;
/// Where the flags are in an entry: after the magic and the version.
inline constexpr std::size_t envelope_flags_at = sizeof envelope_magic + 2;
/// The bytes before a compressed payload's frame: its size once decompressed.
inline constexpr std::size_t envelope_compressed_prefix = 8;
/// The size of the check value at the end of a keyed entry.
inline constexpr std::size_t envelope_keyed_check_size = 32;

/// The check value is the signer's key id and an Ed25519 signature (entry_signatures).
inline constexpr std::uint16_t envelope_flag_signed = 2;
/// Flag bit: a local copy of a signed entry, checked by the local mode; the signer's key
/// id (8 bytes) follows the payload, covered by the check value.
inline constexpr std::uint16_t envelope_flag_signer_copy = 0x0200;
/// The size of the signer's key id after a copy's payload.
inline constexpr std::size_t envelope_signer_copy_size = sizeof(entry_signer_id);
/// The size of the check value at the end of a signed entry: key id, then signature.
inline constexpr std::size_t envelope_signed_check_size = 8 + entry_signatures::signature_size;

/// The size of the check value at the end of an unkeyed entry.
inline constexpr std::size_t envelope_check_size = 4;

/// The version an entry with `flags` is written as: envelope_version_plain when a
/// version-3 reader knew every flag (a CRC-32C or an HMAC, nothing else),
/// envelope_version_signer_copy for a signer's copy, else envelope_version.
constexpr std::uint16_t envelope_version_for(std::uint16_t flags) noexcept {
    if ((flags & envelope_flag_signer_copy) != 0) return envelope_version_signer_copy;
    return flags == envelope_flags_crc32c || flags == envelope_flag_keyed ? envelope_version_plain : envelope_version;
}

/// Whether an entry of `version` may carry `flags`: version 3 only a CRC-32C or an
/// HMAC (nothing else was ever written or read as 3), version 4 any known authenticator
/// with or without compression, version 5 a signer's copy checked by a CRC-32C or an
/// HMAC, with or without compression. False for any other version.
constexpr bool envelope_flags_known(std::uint16_t version, std::uint16_t flags) noexcept {
    std::uint16_t const authenticator = flags & envelope_flags_authenticator;
    if (version == envelope_version_plain) return envelope_version_for(flags) == envelope_version_plain;
    if (version == envelope_version_signer_copy)
        return authenticator <= envelope_flag_keyed && (flags & envelope_flag_signer_copy) != 0 &&
               (flags & ~(envelope_flags_authenticator | envelope_flag_zstd | envelope_flag_signer_copy)) == 0;
    if (version != envelope_version) return false;
    return authenticator <= envelope_flag_signed && (flags & ~(envelope_flags_authenticator | envelope_flag_zstd)) == 0;
}

/// Whether this release reads entries of `version` (3, 4 and 5).
constexpr bool envelope_version_known(std::uint16_t version) noexcept {
    return version == envelope_version_plain || version == envelope_version || version == envelope_version_signer_copy;
}

/// Whether `bytes` begin as an entry of a version this release reads (magic, version,
/// flags, key) whose key names another key than `k`. A look at the header alone, nothing
/// checked: an answer that an HTTP storage can tell is not the one it asked for.
inline bool entry_names_other_key(std::string_view bytes, key const& k) noexcept {
    std::size_t const key_at = sizeof envelope_magic + 2 + 2 + 1; // (after the key's size)
    if (bytes.size() < key_at || bytes.compare(0, sizeof envelope_magic, envelope_magic, sizeof envelope_magic) != 0)
        return false;
    auto const* p = reinterpret_cast<unsigned char const*>(bytes.data());
    if (!envelope_version_known(read_le<std::uint16_t>(p + sizeof envelope_magic))) return false;
    std::size_t const size = p[key_at - 1];
    if (bytes.size() - key_at < size) return false;
    return size != k.size() || std::memcmp(p + key_at, k.data(), size) != 0;
}

/// Writes `flags` into the entry started in `out`, and the version they need
/// (envelope_version_for): the one place the two are set together.
COMPILE_CACHE_DECL void set_envelope_flags(std::string& out, std::uint16_t flags) noexcept;

/// The flags of the entry started in `out` (unchecked).
COMPILE_CACHE_DECL std::uint16_t envelope_flags_of(std::string const& out) noexcept;

/// Appends the check value of `out` (everything in it so far) to `out`.
COMPILE_CACHE_DECL void append_envelope_check(std::string& out);

/// Whether the last envelope_check_size bytes of `p[0, n)` are the check value of
/// the bytes before them. n must be at least envelope_check_size.
COMPILE_CACHE_DECL bool envelope_check_matches(unsigned char const* p, std::size_t n) noexcept;

COMPILE_CACHE_DECL void append_string32(std::string& out, std::string_view s);

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
    COMPILE_CACHE_DECL explicit envelope_auth(std::string_view secret);

    /// Signed: entries carry a signature by `signatures`' key (written only when it
    /// can_sign()), and only entries signed by one of its trusted keys are accepted. Null:
    /// the unkeyed mode.
    static envelope_auth signed_by(std::shared_ptr<entry_signatures const> signatures) {
        envelope_auth a;
        a.signatures_ = std::move(signatures);
        return a;
    }

    bool keyed() const noexcept { return mac_.has_value(); }
    /// Whether entries are checked by signature (signed_by).
    bool is_signed() const noexcept { return signatures_ != nullptr; }
    /// The signatures of the signed mode; null otherwise.
    entry_signatures const* signatures() const noexcept { return signatures_.get(); }

    /// The flags an entry written in this mode carries, and the only ones accepted.
    std::uint16_t flags() const noexcept {
        return is_signed() ? detail::envelope_flag_signed
               : keyed()   ? detail::envelope_flag_keyed
                           : detail::envelope_flags_crc32c;
    }

    /// The size of the check value at the end of an entry: 4 unkeyed, 32 keyed, 72 signed.
    std::size_t check_size() const noexcept {
        return is_signed() ? detail::envelope_signed_check_size
               : keyed()   ? detail::envelope_keyed_check_size
                           : detail::envelope_check_size;
    }

    /// Appends the check value of `out` (everything in it so far) to `out`. Signed mode
    /// without a signing key throws std::logic_error (nothing is appended).
    COMPILE_CACHE_DECL void append_check(std::string& out) const;

    /// Whether the last check_size() bytes of `p[0, n)` are the check value of the
    /// bytes before them. n must be at least check_size().
    COMPILE_CACHE_DECL bool check_matches(unsigned char const* p, std::size_t n) const noexcept;

private:
    COMPILE_CACHE_DECL hmac<sha256>::result_type tag_of(unsigned char const* p, std::size_t n) const noexcept;

    std::optional<hmac<sha256>> mac_;
    std::shared_ptr<entry_signatures const> signatures_;
};

namespace detail {
/// Why an entry whose check value does not match is refused, for the statistics only:
/// nothing here is trusted, and every outcome is a miss.
COMPILE_CACHE_DECL envelope_status unchecked_entry_status(unsigned char const* p, std::size_t n,
                                                          envelope_auth const& auth) noexcept;

/// Writes everything before the payload into `out` (cleared first), the payload length
/// as 0. Returns where that length is, and how long the metadata came out.
struct envelope_header {
    std::size_t length_at = 0;
    std::size_t metadata_size = 0;
};
COMPILE_CACHE_DECL envelope_header write_envelope_header(std::string& out, key const& k, entry_metadata const& m,
                                                         envelope_auth const& auth);

/// The metadata a store seals into the entry of the kernel `name` (from `origin_file` at
/// `origin_line`): its `format_id` (basic_cache::entry_format_id), the system clock's
/// time now, the time it took to compile (`compile_ns`, 0 when negative) and its key's
/// `components`.
COMPILE_CACHE_DECL entry_metadata entry_metadata_now(std::string_view name, std::string_view origin_file,
                                                     std::int64_t origin_line, std::string_view format_id,
                                                     std::int64_t compile_ns,
                                                     std::vector<component_digest> const& components);

/// Writes the length of the payload that follows the length field at `length_at`,
/// then appends the check value of `auth`'s mode.
COMPILE_CACHE_DECL void seal_envelope_at(std::string& out, std::size_t length_at, envelope_auth const& auth);
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

    /// The same with an `auth` the writer keeps (a temporary): only `out` must outlive it.
    envelope_writer(std::string& out, key const& k, entry_metadata const& m, envelope_auth&& auth)
        : envelope_writer(kept_auth_tag(), out, k, m, std::make_shared<envelope_auth const>(std::move(auth))) {}

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

    /// Marks the entry compressed with zstd (flag 0x0100) and writes the size the payload
    /// has once decompressed; the caller then appends the zstd frame as the payload.
    /// Call before any payload byte is appended.
    /// The entry becomes envelope version 4 (compression is unknown to version 3).
    void begin_compressed_payload(std::uint64_t uncompressed_size) {
        detail::set_envelope_flags(out_, detail::envelope_flags_of(out_) | detail::envelope_flag_zstd);
        detail::append_le<std::uint64_t>(out_, uncompressed_size);
    }

    /// Undoes begin_compressed_payload: cuts out() back to `payload_at` (its size before
    /// begin_compressed_payload) and clears the flag (and the version it needed), for a
    /// plain payload instead.
    void drop_compressed_payload(std::size_t payload_at) {
        out_.resize(payload_at);
        detail::set_envelope_flags(
            out_, static_cast<std::uint16_t>(detail::envelope_flags_of(out_) & ~detail::envelope_flag_zstd));
    }

private:
    struct kept_auth_tag {}; // (a tag: `{}` for the auth still picks the public constructors)
    envelope_writer(kept_auth_tag, std::string& out, key const& k, entry_metadata const& m,
                    std::shared_ptr<envelope_auth const> kept)
        : out_(out), kept_auth_(std::move(kept)), auth_(kept_auth_.get()),
          header_(detail::write_envelope_header(out, k, m, *auth_)) {}

    std::string& out_;
    std::shared_ptr<envelope_auth const> kept_auth_; ///< the auth given as a temporary (shared by copies)
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
    bool signed_entry = false;   ///< the header says signed (flags 2); signer_id is then the id it carries
    entry_signer_id signer_id{};
    bool signer_copy = false;    ///< a signer's copy (flag 0x0200, checked): signer_id is its signer's
    bool complete = false; ///< every field up to the payload was read and is in bounds
    bool compressed = false;             ///< flag 0x0100: `payload` is a zstd frame
    std::uint64_t uncompressed_size = 0; ///< compressed: the size the entry declares for its payload
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
COMPILE_CACHE_DECL bool parse_metadata(std::string_view meta_bytes, envelope_fields& r);

/// Reads an entry's header from `in`, placed just after the magic: the version into
/// `r.version` and the flags into `flags`; then, for a version this release reads (3 or
/// 4), the key and the metadata into `r`. False when the version is another (r.version
/// says so) or a field does not fit or is out of bounds. The one reader of the header's
/// layout.
COMPILE_CACHE_DECL bool read_envelope_header(envelope_reader& in, std::uint16_t& flags, envelope_fields& r);

/// The header of `entry` (key, metadata), read without its check value: `entry` must
/// have been checked already, or be checked by whoever uses what it says. False when
/// it is not an entry of a version this release reads or its header does not parse.
COMPILE_CACHE_DECL bool read_unchecked_header(std::string_view entry, envelope_fields& r);

/// Reads an entry whose check value is sound in `auth`'s mode: version, flags, bounds,
/// metadata and the payload's place; the key and format are left to the caller.
COMPILE_CACHE_DECL envelope_fields parse_envelope(std::string_view bytes, std::size_t max_payload,
                                                  envelope_auth const& auth);

/// What joins an entry's serializer format and its artifact type in its format.
inline constexpr std::string_view entry_artifact_field = ";artifact=";

/// The format of an entry of an artifact whose type is named `artifact_type`:
/// `serializer_format;artifact=artifact_type` (basic_cache::entry_format_id).
COMPILE_CACHE_DECL std::string entry_format_id(std::string_view serializer_format, std::string_view artifact_type);

/// The artifact type an entry's format names (what follows `;artifact=`); empty when it
/// names none (an earlier release's entry, or one a host wrote with its serializer's
/// format alone).
COMPILE_CACHE_DECL std::string_view entry_artifact_type(std::string_view format_id) noexcept;

/// Whether an entry written in `stored` may be opened as `expected`: the same format, or,
/// when `expected` names no artifact type (a serializer's format_id alone, as hosts that
/// open entries themselves pass it), that format with any artifact type.
COMPILE_CACHE_DECL bool format_matches(std::string_view stored, std::string_view expected) noexcept;

/// parse_envelope, then the key and the format (format_matches): what a load needs, with
/// nothing copied out of `bytes`.
COMPILE_CACHE_DECL envelope_fields check_envelope(std::string_view bytes, key const& expected,
                                                  std::string_view format_id, std::size_t max_payload,
                                                  envelope_auth const& auth);

/// The fields, copied into an opened_envelope (its metadata only when complete).
COMPILE_CACHE_DECL opened_envelope to_opened_envelope(envelope_fields const& f);

/// The signed-entries loader that compile_cache/signing/signed_entries.hpp registers
/// when a program includes it: basic_cache::from_env reads PREFIX_SIGNING_KEY_FILE and
/// PREFIX_TRUSTED_KEYS_FILE through it. Null in a program built without it.
struct signature_files {
    std::string signing_key_setting, signing_key_file;   ///< the setting's name and value (a path, or empty)
    std::string trusted_keys_setting, trusted_keys_file; ///< likewise
};
using entry_signatures_loader = std::shared_ptr<entry_signatures const> (*)(signature_files const& files,
                                                                            std::string& why);
inline entry_signatures_loader& registered_signatures_loader() noexcept {
    static entry_signatures_loader loader = nullptr;
    return loader;
}
} // namespace detail

/// An entry `from` accepts (its caller checked it so: check_envelope with `from`),
/// sealed again in `to`'s mode into `out`: the same bytes up to the payload's end, the
/// flags and the check value of `to`. A signed entry sealed in a mode that does not sign
/// becomes a signer's copy (flag 0x0200): its signer's key id follows the payload, so
/// that a reader stops using it once it no longer trusts that key. A signer's copy sealed
/// again in a mode that signs drops it (it is then the new signer's entry); in another
/// mode it stays a signer's copy. False (out empty) when `entry` is too short to be one, or `to` cannot
/// seal (signed without a signing key). How a tier's remote entry verified by signature
/// is kept locally under the local check, and how a store's locally sealed entry is
/// signed for the remote.
COMPILE_CACHE_DECL bool reseal_envelope(std::string_view entry, envelope_auth const& from, envelope_auth const& to,
                                        std::string& out);

/// Checks an entry read back for `expected`: check value (in `auth`'s mode, whatever
/// the entry's flags say), then version, flags, bounds, key and the format: `format_id`
/// as basic_cache::entry_format_id<Artifact>() gives it, or the serializer's format_id
/// alone, which accepts an entry of any artifact type. Only with status ok does the
/// payload reach a deserializer. A compressed entry is `unsupported` here (its payload is
/// not the serializer's bytes): basic_cache with a Compression policy decompresses it.
/// A signer's copy (`signer_copy`) is ok whatever its signer: a caller that reads entries
/// itself asks its trusted keys about `signer_id`, as basic_cache does.
inline opened_envelope open_envelope(std::string_view bytes, key const& expected, std::string_view format_id,
                                     std::size_t max_payload, envelope_auth const& auth = envelope_auth()) {
    detail::envelope_fields f = detail::check_envelope(bytes, expected, format_id, max_payload, auth);
    if (f.status == envelope_status::ok && f.compressed) {
        f.status = envelope_status::unsupported;
        f.payload = {};
    }
    return detail::to_opened_envelope(f);
}

/// Checks an entry without knowing what it should be, for tools that list or verify
/// a cache: the check value (in `auth`'s mode), version, flags and bounds, as
/// open_envelope does, but neither the key (`stored_key` says which it claims; compare
/// it with where the entry was found) nor the serializer format (in the metadata).
/// For a compressed entry, `payload` is the stored frame and `compressed` is set.
inline opened_envelope inspect_envelope(std::string_view bytes, envelope_auth const& auth = envelope_auth()) {
    return detail::to_opened_envelope(detail::parse_envelope(bytes, static_cast<std::size_t>(-1), auth));
}

} // namespace compile_cache

#include <compile_cache/impl/envelope.ipp>
