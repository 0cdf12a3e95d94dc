// compile_cache: the definitions of key/builder.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

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
    std::vector<std::string> out;
    for (std::size_t i = 0; i < components_.size(); ++i) {
        component_digest const* match = nth_named(other.components_, components_[i].name,
                                                  rank_of_name(components_, i));
        if (!match || !(match->digest == components_[i].digest)) out.push_back(components_[i].name);
    }
    for (std::size_t i = 0; i < other.components_.size(); ++i) {
        if (!nth_named(components_, other.components_[i].name, rank_of_name(other.components_, i)))
            out.push_back(other.components_[i].name);
    }
    if (out.empty() && !(components_ == other.components_)) {
        for (std::size_t i = 0; i < components_.size(); ++i)
            if (!(components_[i] == other.components_[i])) out.push_back(components_[i].name);
    }
    return out;
}

std::size_t key_result::rank_of_name(std::vector<component_digest> const& components, std::size_t i) {
    std::size_t n = 0;
    for (std::size_t j = 0; j < i; ++j) n += components[j].name == components[i].name ? 1 : 0;
    return n;
}

component_digest const* key_result::nth_named(std::vector<component_digest> const& components,
                                          std::string const& name, std::size_t n) {
    for (auto const& c : components)
        if (c.name == name && n-- == 0) return &c;
    return nullptr;
}

} // namespace compile_cache
#endif
