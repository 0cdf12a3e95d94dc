#include "cache_glue.hpp"

#include <cstdio>
#include <cstring>
#include <memory>

namespace tinyk::glue {

namespace {
void put(std::string& m, std::string_view s) {
    m += std::to_string(s.size());
    m += ':';
    m += s;
}
} // namespace

void key_builder::add(std::string_view name, std::string_view value) {
    put(message_, name);
    put(message_, value);
}

void key_builder::add(std::string_view name, std::map<std::string, double> const& values) {
    put(message_, name);
    for (auto const& [k, v] : values) {
        put(message_, k);
        char buf[40];
        std::snprintf(buf, sizeof buf, "%a", v);
        put(message_, buf);
    }
}

void key_builder::add(std::string_view name, std::vector<key> const& keys) {
    put(message_, name);
    for (auto const& k : keys) put(message_, k);
}

key_result key_builder::finish() const {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : message_) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return {buf, reason_};
}

cache cache::from_env() { return {}; }

result cache::get_or_compile(kernel& k, key_result const& kr, std::string const&,
                             std::function<artifact()> const& compile) {
    k.code = std::make_shared<artifact>(compile());
    if (!kr.ok()) return {outcome::bypassed, kr.bypass_reason()};
    return {outcome::compiled, {}};
}

} // namespace tinyk::glue
