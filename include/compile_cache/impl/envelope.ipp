// compile_cache: the definitions of envelope.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace compile_cache {

envelope_auth::envelope_auth(std::string_view secret) {
    if (!secret.empty()) mac_.emplace(secret.data(), secret.size());
}

void envelope_auth::append_check(std::string& out) const {
    if (is_signed()) {
        if (!signatures_->can_sign()) throw std::logic_error("signed entries without a signing key cannot be written");
        entry_signer_id const id = signatures_->signer_id();
        out.append(reinterpret_cast<char const*>(id.data()), id.size());
        std::size_t const signed_size = out.size();
        out.resize(signed_size + entry_signatures::signature_size);
        signatures_->sign(reinterpret_cast<unsigned char const*>(out.data()), signed_size,
                          reinterpret_cast<unsigned char*>(&out[signed_size]));
        return;
    }
    if (!keyed()) return detail::append_envelope_check(out);
    auto const tag = tag_of(reinterpret_cast<unsigned char const*>(out.data()), out.size());
    out.append(reinterpret_cast<char const*>(tag.data()), tag.size());
}

bool envelope_auth::check_matches(unsigned char const* p, std::size_t n) const noexcept {
    if (is_signed()) {
        std::size_t const signed_size = n - entry_signatures::signature_size; // the key id included
        entry_signer_id id{};
        std::memcpy(id.data(), p + n - detail::envelope_signed_check_size, id.size());
        return signatures_->verify(id, p, signed_size, p + signed_size) == signature_verdict::ok;
    }
    if (!keyed()) return detail::envelope_check_matches(p, n);
    std::size_t const body = n - detail::envelope_keyed_check_size;
    auto const tag = tag_of(p, body);
    return detail::constant_time_equal(tag.data(), p + body, tag.size());
}

hmac<sha256>::result_type envelope_auth::tag_of(unsigned char const* p, std::size_t n) const noexcept {
    hmac<sha256> mac = *mac_; // the keyed state, copied: the secret is not hashed again
    mac.update(p, n);
    return mac.result();
}

namespace detail {

void append_envelope_check(std::string& out) {
    append_le<std::uint32_t>(out, crc32c(out.data(), out.size()));
}

bool envelope_check_matches(unsigned char const* p, std::size_t n) noexcept {
    std::size_t const body = n - envelope_check_size;
    return crc32c(p, body) == read_le<std::uint32_t>(p + body);
}

void set_envelope_flags(std::string& out, std::uint16_t flags) noexcept {
    std::uint16_t const version = envelope_version_for(flags);
    out[sizeof envelope_magic] = static_cast<char>(version & 0xffu);
    out[sizeof envelope_magic + 1] = static_cast<char>(version >> 8);
    out[envelope_flags_at] = static_cast<char>(flags & 0xffu);
    out[envelope_flags_at + 1] = static_cast<char>(flags >> 8);
}

std::uint16_t envelope_flags_of(std::string const& out) noexcept {
    return read_le<std::uint16_t>(reinterpret_cast<unsigned char const*>(out.data()) + envelope_flags_at);
}

void append_string32(std::string& out, std::string_view s) {
    append_le<std::uint32_t>(out, static_cast<std::uint32_t>(s.size()));
    out.append(s.data(), s.size());
}

/// The flags of what looks like an entry of a version this release reads, when that
/// version may carry them (0xffff when not).
inline std::uint16_t header_flags(unsigned char const* p, std::size_t n) noexcept {
    if (n < envelope_min_header || std::memcmp(p, envelope_magic, sizeof envelope_magic) != 0) return 0xffffu;
    std::uint16_t const flags = read_le<std::uint16_t>(p + envelope_flags_at);
    return envelope_flags_known(read_le<std::uint16_t>(p + sizeof envelope_magic), flags) ? flags : 0xffffu;
}

/// Whether `p[0, n)` says it is signed and is long enough to carry a key id and a
/// signature; then `id` is the key id it carries (unchecked).
inline bool signed_header(unsigned char const* p, std::size_t n, entry_signer_id& id) noexcept {
    if (n < envelope_min_header + envelope_signed_check_size ||
        (header_flags(p, n) & envelope_flags_authenticator) != envelope_flag_signed)
        return false;
    std::memcpy(id.data(), p + n - envelope_signed_check_size, id.size());
    return true;
}

envelope_status unchecked_entry_status(unsigned char const* p, std::size_t n, envelope_auth const& auth) noexcept {
    entry_signer_id id{};
    bool const says_signed = signed_header(p, n, id);
    // Signed mode: a key id no trusted key has is told apart (rotation); any other
    // failure is a bad signature, damage or another mode's entry, not told apart.
    if (auth.is_signed())
        return says_signed && !auth.signatures()->trusts(id) ? envelope_status::untrusted_signer
                                                              : envelope_status::unauthenticated;
    // With a secret, damage, another secret, no HMAC at all and a forgery look the same.
    if (auth.keyed()) return envelope_status::unauthenticated;
    // Unkeyed: an entry whose header says keyed or signed (it may be; this reader cannot check).
    if (says_signed) return envelope_status::unauthenticated;
    if (n >= envelope_min_header + envelope_keyed_check_size &&
        (header_flags(p, n) & envelope_flags_authenticator) == envelope_flag_keyed)
        return envelope_status::unauthenticated;
    return envelope_status::corrupt;
}

entry_metadata entry_metadata_now(std::string_view name, std::string_view origin_file, std::int64_t origin_line,
                                  std::string_view format_id, std::int64_t compile_ns,
                                  std::vector<component_digest> const& components) {
    entry_metadata meta;
    meta.name = std::string(name);
    meta.origin_file = std::string(origin_file);
    meta.origin_line = origin_line;
    meta.format_id = std::string(format_id);
    meta.created_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    meta.compile_ns = static_cast<std::uint64_t>(compile_ns < 0 ? 0 : compile_ns);
    meta.components = components;
    return meta;
}

envelope_header write_envelope_header(std::string& out, key const& k, entry_metadata const& m,
                                      envelope_auth const& auth) {
    out.clear();
    out.append(envelope_magic, sizeof envelope_magic);
    append_le<std::uint16_t>(out, envelope_version_for(auth.flags()));
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

void seal_envelope_at(std::string& out, std::size_t length_at, envelope_auth const& auth) {
    std::uint64_t length = static_cast<std::uint64_t>(out.size() - length_at - 8);
    for (std::size_t i = 0; i < 8; ++i, length >>= 8) out[length_at + i] = static_cast<char>(length & 0xffu);
    auth.append_check(out);
}

bool parse_metadata(std::string_view meta_bytes, envelope_fields& r) {
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

bool read_envelope_header(envelope_reader& in, std::uint16_t& flags, envelope_fields& r) {
    r.version = 0;
    if (!in.read(r.version) || !in.read(flags) || !envelope_version_known(r.version)) return false;
    std::uint8_t key_size = 0;
    std::string_view meta_bytes;
    std::uint32_t meta_size = 0;
    return in.read(key_size) && key_size != 0 && key_size <= key::max_size && in.read_bytes(key_size, r.key_bytes) &&
           in.read(meta_size) && meta_size <= envelope_max_metadata && in.read_bytes(meta_size, meta_bytes) &&
           parse_metadata(meta_bytes, r);
}

bool read_unchecked_header(std::string_view entry, envelope_fields& r) {
    auto const* p = reinterpret_cast<unsigned char const*>(entry.data());
    if (entry.size() < envelope_min_header || std::memcmp(p, envelope_magic, sizeof envelope_magic) != 0)
        return false;
    envelope_reader in(p + sizeof envelope_magic, entry.size() - sizeof envelope_magic);
    std::uint16_t flags = 0;
    return read_envelope_header(in, flags, r);
}

envelope_fields parse_envelope(std::string_view bytes, std::size_t max_payload, envelope_auth const& auth) {
    envelope_fields r;
    std::size_t const check_size = auth.check_size();
    auto const* p = reinterpret_cast<unsigned char const*>(bytes.data());
    if (bytes.size() >= sizeof envelope_magic + 2 && std::memcmp(p, envelope_magic, sizeof envelope_magic) == 0)
        r.version = read_le<std::uint16_t>(p + sizeof envelope_magic);
    r.signed_entry = signed_header(p, bytes.size(), r.signer_id);
    if (bytes.size() < envelope_min_header + check_size || !auth.check_matches(p, bytes.size())) {
        r.status = unchecked_entry_status(p, bytes.size(), auth);
        return r;
    }
    std::size_t const body = bytes.size() - check_size;
    if (std::memcmp(p, envelope_magic, sizeof envelope_magic) != 0) return r;

    envelope_reader in(p + sizeof envelope_magic, body - sizeof envelope_magic);
    std::uint16_t flags = 0;
    bool const header_read = read_envelope_header(in, flags, r);
    if (!envelope_version_known(r.version)) {
        r.status = envelope_status::foreign_version;
        return r;
    }
    // The authenticator must be the reader's, and the flags ones the version may carry
    // (version 3: a CRC-32C or an HMAC alone); any other is refused (corrupt), as every
    // flags value but the reader's own always was.
    if ((flags & envelope_flags_authenticator) != auth.flags() || !envelope_flags_known(r.version, flags)) return r;
    r.keyed = auth.keyed();
    if (!header_read) return r;

    // A signer's copy: its signer's key id after the payload.
    std::size_t const signer = (flags & envelope_flag_signer_copy) != 0 ? envelope_signer_copy_size : 0;
    std::uint64_t payload_size = 0;
    if (!in.read(payload_size) || in.left() < signer || payload_size != in.left() - signer) return r;
    if (signer != 0) {
        std::memcpy(r.signer_id.data(), p + body - signer, signer);
        r.signer_copy = true;
    }
    r.complete = true;
    if (payload_size > max_payload) {
        r.status = envelope_status::too_large;
        return r;
    }
    in.read_bytes(static_cast<std::size_t>(payload_size), r.payload);
    r.uncompressed_size = payload_size;
    if ((flags & envelope_flag_zstd) != 0) {
        envelope_reader frame(r.payload);
        r.payload = {};
        if (!frame.read(r.uncompressed_size)) return r; // corrupt: no room for the declared size
        frame.read_bytes(frame.left(), r.payload);
        r.compressed = true;
        // The declared size is bounded as an uncompressed payload is: never more is made.
        if (r.uncompressed_size > max_payload) {
            r.status = envelope_status::too_large;
            r.payload = {};
            return r;
        }
    }
    r.status = envelope_status::ok;
    return r;
}

std::string entry_format_id(std::string_view serializer_format, std::string_view artifact_type) {
    std::string id(serializer_format);
    id += entry_artifact_field;
    id += artifact_type;
    return id;
}

std::string_view entry_artifact_type(std::string_view format_id) noexcept {
    std::size_t const at = format_id.find(entry_artifact_field);
    return at == std::string_view::npos ? std::string_view() : format_id.substr(at + entry_artifact_field.size());
}

bool format_matches(std::string_view stored, std::string_view expected) noexcept {
    if (stored == expected) return true;
    // `expected` names no type: `stored` is it, then the field and any type.
    return expected.find(entry_artifact_field) == std::string_view::npos &&
           stored.find(entry_artifact_field) == expected.size() && stored.substr(0, expected.size()) == expected;
}

envelope_fields check_envelope(std::string_view bytes, key const& expected, std::string_view format_id,
                               std::size_t max_payload, envelope_auth const& auth) {
    envelope_fields r = parse_envelope(bytes, max_payload, auth);
    if (r.status != envelope_status::ok) return r;
    if (r.key_bytes.size() != expected.size() ||
        std::memcmp(r.key_bytes.data(), expected.data(), expected.size()) != 0) {
        r.status = envelope_status::key_mismatch;
        r.payload = {};
    } else if (!format_matches(r.format_id, format_id)) {
        r.status = envelope_status::foreign_version;
        r.payload = {};
    }
    return r;
}

opened_envelope to_opened_envelope(envelope_fields const& f) {
    opened_envelope r;
    r.status = f.status;
    r.payload = f.payload;
    r.version = f.version;
    r.keyed = f.keyed;
    r.signed_entry = f.signed_entry;
    r.signer_id = f.signer_id;
    r.signer_copy = f.signer_copy;
    r.compressed = f.compressed;
    r.uncompressed_size = f.uncompressed_size;
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

bool reseal_envelope(std::string_view entry, envelope_auth const& from, envelope_auth const& to, std::string& out) {
    out.clear();
    std::size_t const old_check = from.check_size();
    if (entry.size() < detail::envelope_min_header + old_check) return false;
    if (to.is_signed() && !to.signatures()->can_sign()) return false;
    auto const* const p = reinterpret_cast<unsigned char const*>(entry.data());
    std::uint16_t flags = detail::read_le<std::uint16_t>(p + detail::envelope_flags_at);
    // Up to the payload's end, and the signer's key id: a signed entry's, in its check
    // value, or a signer's copy's, after its payload.
    std::size_t body = entry.size() - old_check;
    char const* signer = nullptr;
    if ((flags & detail::envelope_flag_signer_copy) != 0) {
        if (body < detail::envelope_min_header + detail::envelope_signer_copy_size) return false;
        body -= detail::envelope_signer_copy_size;
        signer = entry.data() + body;
    } else if (from.is_signed()) {
        signer = entry.data() + entry.size() - detail::envelope_signed_check_size;
    }
    flags &= static_cast<std::uint16_t>(~(detail::envelope_flags_authenticator | detail::envelope_flag_signer_copy));
    // Kept in a mode that does not sign, it names its signer; signed again, it is this writer's.
    bool const copy = signer != nullptr && !to.is_signed();
    if (copy) flags |= detail::envelope_flag_signer_copy;
    out.reserve(body + detail::envelope_signer_copy_size + to.check_size());
    out.assign(entry.data(), body);
    if (copy) out.append(signer, detail::envelope_signer_copy_size);
    // The new authenticator; compression stays as the entry has it, and the version is the
    // one the new flags need (set_envelope_flags).
    detail::set_envelope_flags(out, static_cast<std::uint16_t>(flags | to.flags()));
    to.append_check(out);
    return true;
}

} // namespace compile_cache
#endif
