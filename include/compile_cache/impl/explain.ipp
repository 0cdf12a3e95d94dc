// compile_cache: the definitions of explain.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <cstring>
#include <unordered_map>

namespace compile_cache {

std::string miss_explanation::text() const {
    switch (what) {
    case kind::none: return {};
    case kind::new_kernel:
        if (!identity.empty()) return "new (no earlier entry for the identity \"" + printable(identity) + "\")";
        if (!name.empty() || !origin_file.empty())
            return "new (no earlier entry named " + printable(name) + " from " + printable(origin_file) + ")";
        return "new";
    case kind::evicted: return "evicted or removed (an entry under this very key was stored before)";
    case kind::changed: break;
    }
    std::string s;
    append_list(s, "changed ", changed);
    append_list(s, "appeared ", appeared);
    append_list(s, "disappeared ", disappeared);
    if (s.empty()) s = "the key changed, its named components did not";
    append_list(s, "unchanged ", unchanged);
    return s;
}

std::string miss_explanation::brief() const {
    switch (what) {
    case kind::none: return {};
    case kind::new_kernel: return "new";
    case kind::evicted: return "evicted";
    case kind::changed: break;
    }
    std::string s;
    auto add = [&s](std::vector<std::string> const& names, char const* verb) {
        if (names.empty()) return;
        if (!s.empty()) s += "; ";
        s += join(names) + " " + verb;
    };
    add(changed, "changed");
    add(appeared, "appeared");
    add(disappeared, "disappeared");
    return s.empty() ? std::string("key changed") : s;
}

std::string miss_explanation::join(std::vector<std::string> const& names) {
    std::string s;
    for (auto const& n : names) s += (s.empty() ? "" : ", ") + printable(n);
    return s;
}

void miss_explanation::append_list(std::string& s, char const* label, std::vector<std::string> const& names) {
    if (names.empty()) return;
    s += (s.empty() ? "" : "; ") + std::string(label) + join(names);
}

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

bool read_entry_header(std::string_view entry, key& stored_key, std::string& name, std::string& origin_file,
                       std::string& format_id) {
    auto const* p = reinterpret_cast<unsigned char const*>(entry.data());
    if (entry.size() < envelope_min_header || std::memcmp(p, envelope_magic, sizeof envelope_magic) != 0)
        return false;
    envelope_reader in(p + sizeof envelope_magic, entry.size() - sizeof envelope_magic);
    std::uint16_t version = 0, flags = 0;
    std::uint32_t meta_size = 0;
    std::string_view meta_bytes;
    if (!in.read(version) || version != envelope_version || !in.read(flags) || !read_key8(in, stored_key) ||
        !in.read(meta_size) || meta_size > envelope_max_metadata || !in.read_bytes(meta_size, meta_bytes))
        return false;
    envelope_fields f;
    if (!parse_metadata(meta_bytes, f)) return false;
    name = std::string(f.name);
    origin_file = std::string(f.origin_file);
    format_id = std::string(f.format_id);
    return true;
}

std::optional<key> record_key_of_entry(std::string_view checked_entry) {
    key stored;
    std::string name, origin_file, format_id;
    if (!read_entry_header(checked_entry, stored, name, origin_file, format_id)) return std::nullopt;
    return identity_record_key(kernel_identity({}, name, origin_file));
}

bool looks_like_record(std::string_view bytes, key const& record_key) {
    key stored;
    std::string name, origin_file, format_id;
    return read_entry_header(bytes, stored, name, origin_file, format_id) && stored == record_key &&
           format_id == identity_record_format;
}
} // namespace detail

std::string encode_identity_record(identity_record const& r) {
    std::string out;
    detail::append_string32(out, r.identity);
    detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(r.history.size()));
    for (recorded_entry const& e : r.history) {
        detail::append_key8(out, e.entry_key);
        detail::append_le<std::uint64_t>(out, static_cast<std::uint64_t>(e.created_ns));
        detail::append_le<std::uint64_t>(out, e.compile_ns);
        detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(e.components.size()));
        for (component_digest const& c : e.components) {
            detail::append_string32(out, c.name);
            detail::append_key8(out, c.digest);
        }
    }
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

miss_explanation compare_components(std::vector<component_digest> const& before,
                                    std::vector<component_digest> const& now) {
    std::vector<component_digest> old_list = before, new_list = now;
    distinct_component_names(old_list);
    distinct_component_names(new_list);
    std::unordered_map<std::string_view, component_digest const*> old_by_name, new_by_name;
    old_by_name.reserve(old_list.size());
    new_by_name.reserve(new_list.size());
    for (component_digest const& c : old_list) old_by_name.emplace(c.name, &c);
    for (component_digest const& c : new_list) new_by_name.emplace(c.name, &c);
    auto is_toolchain_part = [](std::string const& name) { return name.rfind("toolchain: ", 0) == 0; };
    miss_explanation m;
    m.what = miss_explanation::kind::changed;
    bool toolchain_changed = false, toolchain_parts = false;
    for (component_digest const& c : new_list) {
        auto const old = old_by_name.find(c.name);
        bool const part = is_toolchain_part(c.name);
        toolchain_parts = toolchain_parts || part;
        if (old == old_by_name.end()) {
            m.appeared.push_back(c.name);
            toolchain_changed = toolchain_changed || part;
        } else if (!(old->second->digest == c.digest)) {
            m.changed.push_back(c.name);
            toolchain_changed = toolchain_changed || part;
        } else if (!part) {
            m.unchanged.push_back(c.name);
        }
    }
    for (component_digest const& c : old_list)
        if (new_by_name.find(c.name) == new_by_name.end()) {
            m.disappeared.push_back(c.name);
            toolchain_changed = toolchain_changed || is_toolchain_part(c.name);
        }
    if (toolchain_parts && !toolchain_changed) m.unchanged.insert(m.unchanged.begin(), "toolchain");
    return m;
}

miss_explanation explain_absent(identity_record const* record, key const& now_key,
                                std::vector<component_digest> const& now, std::string_view identity,
                                std::string_view name, std::string_view origin_file) {
    miss_explanation m;
    if (!record || record->history.empty()) {
        m.what = miss_explanation::kind::new_kernel;
        m.identity = std::string(identity);
        m.name = std::string(name);
        m.origin_file = std::string(origin_file);
        return m;
    }
    for (recorded_entry const& e : record->history)
        if (e.entry_key == now_key) {
            m.what = miss_explanation::kind::evicted;
            return m;
        }
    return compare_components(record->history.front().components, now);
}

} // namespace compile_cache

#endif
