// compile_cache: the definitions of explain.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <cstring>

namespace compile_cache {

std::string miss_explanation::text() const {
    switch (what) {
    case kind::none: return {};
    case kind::new_kernel: return "new";
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
    for (auto const& n : names) s += (s.empty() ? "" : ", ") + n;
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
        if (components > r.left() / 5) return std::nullopt; // each takes at least 5 bytes
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
    auto nth_named = [](std::vector<component_digest> const& list, std::string const& name,
                        std::size_t n) -> component_digest const* {
        for (auto const& c : list)
            if (c.name == name && n-- == 0) return &c;
        return nullptr;
    };
    auto rank = [](std::vector<component_digest> const& list, std::size_t i) {
        std::size_t n = 0;
        for (std::size_t j = 0; j < i; ++j) n += list[j].name == list[i].name ? 1 : 0;
        return n;
    };
    auto is_toolchain_part = [](std::string const& name) { return name.rfind("toolchain: ", 0) == 0; };
    miss_explanation m;
    m.what = miss_explanation::kind::changed;
    bool toolchain_changed = false, toolchain_parts = false;
    for (std::size_t i = 0; i < now.size(); ++i) {
        component_digest const* old = nth_named(before, now[i].name, rank(now, i));
        bool const part = is_toolchain_part(now[i].name);
        toolchain_parts = toolchain_parts || part;
        if (!old) {
            m.appeared.push_back(now[i].name);
            toolchain_changed = toolchain_changed || part;
        } else if (!(old->digest == now[i].digest)) {
            m.changed.push_back(now[i].name);
            toolchain_changed = toolchain_changed || part;
        } else if (!part) {
            m.unchanged.push_back(now[i].name);
        }
    }
    for (std::size_t i = 0; i < before.size(); ++i)
        if (!nth_named(now, before[i].name, rank(before, i))) {
            m.disappeared.push_back(before[i].name);
            toolchain_changed = toolchain_changed || is_toolchain_part(before[i].name);
        }
    if (toolchain_parts && !toolchain_changed) m.unchanged.insert(m.unchanged.begin(), "toolchain");
    return m;
}

miss_explanation explain_absent(identity_record const* record, key const& now_key,
                                std::vector<component_digest> const& now) {
    miss_explanation m;
    if (!record || record->history.empty()) {
        m.what = miss_explanation::kind::new_kernel;
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
