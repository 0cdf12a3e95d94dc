// compile_cache: the definitions of identity_record.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <algorithm>
#include <cstring>

namespace compile_cache {

std::string kernel_identity(std::string_view given, std::string_view name, std::string_view origin_file) {
    if (!given.empty()) return std::string(given);
    std::string s(name);
    s += '\n';
    s.append(origin_file.data(), origin_file.size());
    return s;
}

key identity_record_key(std::string_view identity) {
    sha256 h;
    static constexpr char domain[] = "compile_cache.identity-record\0";
    h.update(domain, sizeof domain - 1);
    h.update(identity.data(), identity.size());
    auto const d = h.result();
    unsigned char bytes[identity_record_key_size];
    std::memcpy(bytes, d.data(), identity_record_key_size - 1);
    bytes[identity_record_key_size - 1] = identity_record_marker;
    return key(bytes, identity_record_key_size);
}

std::string encode_identity_record(identity_record const& r) {
    std::string out;
    out.reserve(detail::encoded_identity_record_size(r));
    detail::append_identity_record(out, r);
    return out;
}

std::optional<identity_record> decode_identity_record(std::string_view payload) {
    bool over_bound = false;
    return decode_identity_record(payload, over_bound);
}

std::optional<identity_record> decode_identity_record(std::string_view payload, bool& over_bound) {
    over_bound = false;
    detail::envelope_reader r(reinterpret_cast<unsigned char const*>(payload.data()), payload.size());
    identity_record out;
    std::uint32_t count;
    if (!r.read_string32(out.identity) || !r.read(count) || count > identity_record_history) return std::nullopt;
    for (std::uint32_t i = 0; i < count; ++i) {
        recorded_entry e;
        std::uint64_t created;
        std::uint32_t components;
        if (!detail::read_key8(r, e.entry_key) || !r.read(created) || !r.read(e.compile_ns) || !r.read(components))
            return std::nullopt;
        e.created_ns = static_cast<std::int64_t>(created);
        if (components > identity_record_max_components) {
            over_bound = true;
            return std::nullopt;
        }
        if (components > r.left() / 5) return std::nullopt; // each takes at least 5 bytes
        e.components.reserve(components);
        for (std::uint32_t j = 0; j < components; ++j) {
            component_digest c;
            if (!r.read_string32(c.name) || !detail::read_key8(r, c.digest)) return std::nullopt;
            e.components.push_back(std::move(c));
        }
        out.history.push_back(std::move(e));
    }
    if (r.left() != 0) return std::nullopt;
    return out;
}

namespace detail {
void append_key8(std::string& out, key const& k) {
    out.push_back(static_cast<char>(k.size()));
    out.append(reinterpret_cast<char const*>(k.data()), k.size());
}
bool read_key8(envelope_reader& r, key& k) {
    std::uint8_t n;
    std::string_view bytes;
    if (!r.read(n) || n == 0 || n > key::max_size || !r.read_bytes(n, bytes)) return false;
    k = key(bytes.data(), bytes.size());
    return true;
}

std::optional<key> record_key_of_entry(std::string_view checked_entry) {
    envelope_fields f;
    if (!read_unchecked_header(checked_entry, f)) return std::nullopt;
    return identity_record_key(kernel_identity({}, f.name, f.origin_file));
}

bool looks_like_record(std::string_view bytes, key const& record_key) {
    envelope_fields f;
    return read_unchecked_header(bytes, f) && f.key_bytes.size() == record_key.size() &&
           std::memcmp(f.key_bytes.data(), record_key.data(), record_key.size()) == 0 &&
           f.format_id == identity_record_format;
}

std::optional<identity_record> identity_record_in(envelope_fields const& checked, std::string_view identity,
                                                  bool& over_bound) {
    over_bound = checked.status == envelope_status::too_large;
    if (checked.status != envelope_status::ok || checked.compressed) return std::nullopt; // records are never compressed
    std::optional<identity_record> r = decode_identity_record(checked.payload, over_bound);
    if (!r || r->identity != identity) return std::nullopt;
    return r;
}

std::string sealed_identity_record(std::string identity, recorded_entry newest, identity_record const* previous,
                                   entry_metadata const& kernel, envelope_auth const& auth) {
    identity_record r;
    r.history.push_back(std::move(newest));
    if (previous)
        for (recorded_entry const& e : previous->history)
            if (r.history.size() < identity_record_history && !(e.entry_key == r.history.front().entry_key))
                r.history.push_back(e);
    r.identity = std::move(identity);
    return sealed_identity_record(r, kernel, auth);
}

std::string sealed_identity_record(identity_record const& r, entry_metadata const& kernel, envelope_auth const& auth) {
    return sealed_identity_record(identity_record_key(r.identity), r, kernel, auth);
}

void append_identity_record(std::string& out, identity_record const& r) {
    append_string32(out, r.identity);
    append_le<std::uint32_t>(out, static_cast<std::uint32_t>(r.history.size()));
    for (recorded_entry const& e : r.history) {
        append_key8(out, e.entry_key);
        append_le<std::uint64_t>(out, static_cast<std::uint64_t>(e.created_ns));
        append_le<std::uint64_t>(out, e.compile_ns);
        append_le<std::uint32_t>(out, static_cast<std::uint32_t>(e.components.size()));
        for (component_digest const& c : e.components) {
            append_string32(out, c.name);
            append_key8(out, c.digest);
        }
    }
}

std::string sealed_identity_record(key const& rk, identity_record const& r, entry_metadata const& kernel,
                                   envelope_auth const& auth) {
    entry_metadata m;
    m.name = kernel.name;
    m.origin_file = kernel.origin_file;
    m.origin_line = kernel.origin_line;
    m.format_id = std::string(identity_record_format);
    m.created_ns = kernel.created_ns;
    std::string entry;
    envelope_writer envelope(entry, rk, m, auth);
    envelope.out().reserve(envelope.out().size() + encoded_identity_record_size(r) + auth.check_size());
    append_identity_record(envelope.out(), r);
    envelope.seal();
    if (entry.size() > identity_record_max_size) {
        entry.clear();
        // The newest entries that fit: a record left as it was would no longer hold the
        // kernel's latest key, and would explain its misses against older ones.
        if (r.history.size() > 1) {
            identity_record newer{r.identity, {r.history.begin(), r.history.end() - 1}};
            return sealed_identity_record(rk, newer, kernel, auth);
        }
    }
    return entry;
}

void put_first(identity_record& r, recorded_entry newest) {
    auto& h = r.history;
    for (auto it = h.begin(); it != h.end(); ++it)
        if (it->entry_key == newest.entry_key) {
            h.erase(it);
            break;
        }
    if (h.size() >= identity_record_history) h.resize(identity_record_history - 1);
    h.insert(h.begin(), std::move(newest));
}

void merge_identity_records(identity_record& ours, identity_record const& theirs) {
    std::vector<recorded_entry> all = std::move(ours.history);
    for (recorded_entry const& e : theirs.history) {
        bool known = false;
        for (recorded_entry const& o : all) known = known || o.entry_key == e.entry_key;
        if (!known) all.push_back(e);
    }
    std::stable_sort(all.begin(), all.end(),
                     [](recorded_entry const& a, recorded_entry const& b) { return a.created_ns > b.created_ns; });
    if (all.size() > identity_record_history) all.resize(identity_record_history);
    ours.history = std::move(all);
}

std::size_t encoded_identity_record_size(identity_record const& r) noexcept {
    std::size_t n = 4 + r.identity.size() + 4;
    for (recorded_entry const& e : r.history) {
        n += 1 + e.entry_key.size() + 8 + 8 + 4;
        for (component_digest const& c : e.components) n += 4 + c.name.size() + 1 + c.digest.size();
    }
    return n;
}
} // namespace detail

} // namespace compile_cache

#endif
