// compile_cache: the definitions of key/builder.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

void distinct_component_names(std::vector<component_digest>& components) {
    std::unordered_map<std::string, std::size_t> seen; // name as given -> how many so far
    seen.reserve(components.size());
    bool repeated = false;
    for (component_digest const& c : components) repeated = ++seen[c.name] > 1 || repeated;
    if (!repeated) return;
    std::unordered_set<std::string> taken; // every name in the result so far, and every name as given
    taken.reserve(2 * components.size());
    for (component_digest const& c : components) taken.insert(c.name);
    std::unordered_map<std::string, std::size_t> next; // name as given -> the next suffix to try
    for (auto& counted : seen) counted.second = 0;
    for (component_digest& c : components) {
        if (++seen[c.name] == 1) continue;
        std::size_t& k = next[c.name];
        if (k < seen[c.name]) k = seen[c.name];
        std::string made;
        do
            made = c.name + "#" + std::to_string(k++);
        while (!taken.insert(made).second);
        c.name = std::move(made);
    }
}

key_result key_result::keyed(key k, std::vector<component_digest> components) {
    key_result r;
    r.key_ = k;
    r.components_ = std::move(components);
    return r;
}

key_result key_result::bypass(std::string reason, std::vector<component_digest> components) {
    key_result r;
    r.reason_ = reason.empty() ? std::string("unkeyable") : std::move(reason);
    r.components_ = std::move(components);
    return r;
}

std::vector<std::string> key_result::differing_components(key_result const& other) const {
    // Names are distinct already in a key_builder's results; made so for any other.
    std::vector<component_digest> mine = components_, theirs = other.components_;
    distinct_component_names(mine);
    distinct_component_names(theirs);
    std::unordered_map<std::string_view, component_digest const*> mine_by_name, theirs_by_name;
    for (component_digest const& c : mine) mine_by_name.emplace(c.name, &c);
    for (component_digest const& c : theirs) theirs_by_name.emplace(c.name, &c);
    std::vector<std::string> out;
    for (component_digest const& c : mine) {
        auto const match = theirs_by_name.find(c.name);
        if (match == theirs_by_name.end() || !(match->second->digest == c.digest)) out.push_back(c.name);
    }
    for (component_digest const& c : theirs)
        if (mine_by_name.find(c.name) == mine_by_name.end()) out.push_back(c.name);
    if (out.empty() && !(mine == theirs)) {
        for (std::size_t i = 0; i < mine.size(); ++i)
            if (!(mine[i] == theirs[i])) out.push_back(mine[i].name);
    }
    return out;
}

} // namespace compile_cache
#endif
