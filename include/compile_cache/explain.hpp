// compile_cache: why a kernel missed. Each store also records, under the kernel's
// identity, the keys stored for it (newest first, a few) with their named components;
// an `absent` miss reads that record and compares the component lists: which
// components changed, appeared or disappeared since the kernel was last stored.
//
// The record is an ordinary entry: an envelope (so it is checked like any other, and
// authenticated under the cache's secret) stored through the same Storage under a key
// derived from the identity, with its own format id. Any Storage keeps it without a
// member of its own. Its key is 33 bytes, the last one identity_record_marker, a size no
// Hasher's digest has, so that a tool can tell records from kernels by name alone.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compile_cache {

/// Why a get_or_compile missed, component by component (for an `absent` miss only).
struct miss_explanation {
    enum class kind {
        none,        ///< no explanation: not an absent miss, or nothing could be read
        new_kernel,  ///< no entry was ever recorded for this kernel's identity
        evicted,     ///< an entry under this very key was recorded: it was evicted or removed
        changed,     ///< the kernel was stored before under another key: see the lists
    };
    kind what = kind::none;
    std::vector<std::string> changed;     ///< components with another digest
    std::vector<std::string> appeared;    ///< components the previous key did not have
    std::vector<std::string> disappeared; ///< components of the previous key that are gone
    std::vector<std::string> unchanged;   ///< the others (an unchanged toolchain as one name)

    explicit operator bool() const noexcept { return what != kind::none; }

    /// For a log line: `changed callee:helper, ir; unchanged toolchain, options`, `new`,
    /// `evicted or removed`; empty for kind::none.
    std::string text() const {
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

    /// Short, for a host's one-line report: `callee:helper, ir changed`, `new`, `evicted`.
    std::string brief() const {
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

    static std::string join(std::vector<std::string> const& names) {
        std::string s;
        for (auto const& n : names) s += (s.empty() ? "" : ", ") + n;
        return s;
    }

private:
    static void append_list(std::string& s, char const* label, std::vector<std::string> const& names) {
        if (names.empty()) return;
        s += (s.empty() ? "" : "; ") + std::string(label) + join(names);
    }
};

/// One entry stored for a kernel, as its identity record keeps it.
struct recorded_entry {
    key entry_key;
    std::int64_t created_ns = 0;
    std::uint64_t compile_ns = 0;
    /// The key's components, the toolchain as its parts (`toolchain: compiler`, ...),
    /// digests cut to identity_record_digest_size bytes.
    std::vector<component_digest> components;
};

/// What is recorded under a kernel's identity: its latest entries, newest first.
struct identity_record {
    std::string identity;
    std::vector<recorded_entry> history;
};

/// How many entries a record keeps.
inline constexpr std::size_t identity_record_history = 8;
/// A record keeps the first bytes of each component's digest only: enough to tell
/// whether it changed (a change goes unseen with probability 2^-64), and a record of 8
/// entries of 15 components stays under 4 KiB.
inline constexpr std::size_t identity_record_digest_size = 8;
/// The format id of a record's envelope (a kernel's entry carries its serializer's).
inline constexpr std::string_view identity_record_format = "compile_cache.identity-record 1";
/// The last byte of a record's 33-byte key.
inline constexpr unsigned char identity_record_marker = 0x1d;
inline constexpr std::size_t identity_record_key_size = 33;
/// A record is small; one over this bound is not read.
inline constexpr std::size_t identity_record_max_size = std::size_t{256} << 10;

/// The identity of a kernel: the host's own string, or its name and origin file.
inline std::string kernel_identity(std::string_view given, std::string_view name, std::string_view origin_file) {
    if (!given.empty()) return std::string(given);
    std::string s(name);
    s += '\n';
    s.append(origin_file.data(), origin_file.size());
    return s;
}

/// The key a kernel identity's record is stored under.
inline key identity_record_key(std::string_view identity) {
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

/// Whether `k` is the key of an identity record rather than of a kernel.
inline bool is_identity_record_key(key const& k) noexcept {
    return k.size() == identity_record_key_size && k.data()[identity_record_key_size - 1] == identity_record_marker;
}

/// The same, for a key's hex (an entry's file name).
inline bool is_identity_record_name(std::string_view hex) noexcept {
    return hex.size() == 2 * identity_record_key_size && hex.substr(hex.size() - 2) == "1d";
}

namespace detail {
inline void append_key8(std::string& out, key const& k) {
    out.push_back(static_cast<char>(k.size()));
    out.append(reinterpret_cast<char const*>(k.data()), k.size());
}
inline bool read_key8(envelope_reader& r, key& k) {
    std::uint8_t n;
    std::string_view bytes;
    if (!r.read(n) || n == 0 || n > key::max_size || !r.read_bytes(n, bytes)) return false;
    k = key(bytes.data(), bytes.size());
    return true;
}
} // namespace detail

/// The payload of a record's envelope.
inline std::string encode_identity_record(identity_record const& r) {
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

/// Parses what encode_identity_record wrote, within bounds; nullopt for anything else.
inline std::optional<identity_record> decode_identity_record(std::string_view payload) {
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

/// The component lists of two keys of one kernel compared: which names of `now`
/// changed or appeared since `before`, and which of `before` disappeared. The n-th
/// component of a name is matched with the n-th of that name. Toolchain parts (names
/// starting `toolchain: `) that are all unchanged are named `toolchain` once.
inline miss_explanation compare_components(std::vector<component_digest> const& before,
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

/// The explanation of an `absent` miss of the key `now_key` (components `now`), from
/// the record of the kernel's identity (null when there is none).
inline miss_explanation explain_absent(identity_record const* record, key const& now_key,
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
