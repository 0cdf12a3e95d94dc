// compile_cache: the definitions of explain.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
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

namespace detail {
/// compare_components once both lists' names are distinct: `find(list, name)` is the
/// component of `list` named `name`, or null.
template <class Find>
miss_explanation compare_component_lists(std::vector<component_digest> const& old_list,
                                         std::vector<component_digest> const& new_list, Find const& find) {
    auto is_toolchain_part = [](std::string const& name) { return name.rfind("toolchain: ", 0) == 0; };
    miss_explanation m;
    m.what = miss_explanation::kind::changed;
    bool toolchain_changed = false, toolchain_parts = false;
    for (component_digest const& c : new_list) {
        component_digest const* const old = find(old_list, c.name);
        bool const part = is_toolchain_part(c.name);
        toolchain_parts = toolchain_parts || part;
        if (!old) {
            m.appeared.push_back(c.name);
            toolchain_changed = toolchain_changed || part;
        } else if (!(old->digest == c.digest)) {
            m.changed.push_back(c.name);
            toolchain_changed = toolchain_changed || part;
        } else if (!part) {
            m.unchanged.push_back(c.name);
        }
    }
    for (component_digest const& c : old_list)
        if (!find(new_list, c.name)) {
            m.disappeared.push_back(c.name);
            toolchain_changed = toolchain_changed || is_toolchain_part(c.name);
        }
    if (toolchain_parts && !toolchain_changed) m.unchanged.insert(m.unchanged.begin(), "toolchain");
    return m;
}

/// Whether the names of `list` (of few_components at most) are distinct.
inline bool few_distinct_names(std::vector<component_digest> const& list) noexcept {
    for (std::size_t i = 0; i < list.size(); ++i)
        for (std::size_t j = i + 1; j < list.size(); ++j)
            if (list[i].name == list[j].name) return false;
    return true;
}
inline constexpr std::size_t few_components = 32;
} // namespace detail

miss_explanation compare_components(std::vector<component_digest> const& before,
                                    std::vector<component_digest> const& now) {
    // Few components, each name once (every key a host builds, and every record the
    // cache writes for it): compared in place, with neither copies nor maps. The same
    // lists as below: distinct_component_names leaves distinct names as they are.
    if (before.size() <= detail::few_components && now.size() <= detail::few_components &&
        detail::few_distinct_names(before) && detail::few_distinct_names(now)) {
        auto find = [](std::vector<component_digest> const& list, std::string const& name) {
            for (component_digest const& c : list)
                if (c.name == name) return &c;
            return static_cast<component_digest const*>(nullptr);
        };
        return detail::compare_component_lists(before, now, find);
    }
    std::vector<component_digest> old_list = before, new_list = now;
    distinct_component_names(old_list);
    distinct_component_names(new_list);
    std::unordered_map<std::string_view, component_digest const*> old_by_name, new_by_name;
    old_by_name.reserve(old_list.size());
    new_by_name.reserve(new_list.size());
    for (component_digest const& c : old_list) old_by_name.emplace(c.name, &c);
    for (component_digest const& c : new_list) new_by_name.emplace(c.name, &c);
    auto find = [&](std::vector<component_digest> const& list, std::string const& name) {
        auto const& by_name = &list == &old_list ? old_by_name : new_by_name;
        auto const it = by_name.find(name);
        return it == by_name.end() ? static_cast<component_digest const*>(nullptr) : it->second;
    };
    return detail::compare_component_lists(old_list, new_list, find);
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
    // The entry nearest to the key that missed (the toolchain's parts count as one), the
    // newest among equals: a kernel stored in variants (-O0 and -O2) is compared with its
    // own variant, not with whichever was last.
    auto apart_from = [](miss_explanation const& c) {
        std::size_t n = 0;
        bool toolchain = false;
        for (auto const* list : {&c.changed, &c.appeared, &c.disappeared})
            for (std::string const& component : *list) {
                bool const part = component.rfind("toolchain: ", 0) == 0;
                n += part ? 0 : 1;
                toolchain = toolchain || part;
            }
        return n + (toolchain ? 1 : 0);
    };
    std::size_t best_apart = 0;
    for (recorded_entry const& e : record->history) {
        miss_explanation c = compare_components(e.components, now);
        std::size_t const apart = apart_from(c);
        if (m.what == miss_explanation::kind::none || apart < best_apart) {
            m = std::move(c);
            best_apart = apart;
        }
        if (best_apart == 0) break;
    }
    return m;
}

namespace detail {
std::string absent_miss_line(std::string_view name, miss_explanation const& m, std::atomic<bool>& new_kernel_logged) {
    // A renamed or moved kernel is new too, and its line says what was looked for.
    if (m.what == miss_explanation::kind::changed || m.what == miss_explanation::kind::evicted)
        return "miss " + printable(name) + " (absent): " + m.text();
    if (m.what == miss_explanation::kind::new_kernel && !new_kernel_logged.exchange(true))
        return "miss " + printable(name) + " (absent): " + m.text() + "; later new kernels are not logged";
    return {};
}

std::string record_ignored_line(std::string_view name) {
    return "miss " + printable(name) + " (absent): not explained: its identity record is over " +
           std::to_string(identity_record_max_size >> 10) + " KiB or " +
           std::to_string(identity_record_max_components) +
           " components an entry, and is ignored (counted records-ignored)";
}
} // namespace detail

} // namespace compile_cache

#endif
