#include "cache_glue.hpp"

#include <memory>

namespace tinyk::glue {

void cache::register_shared_objects() {
    if (!c_.enabled()) return;
    cc::registry& reg = c_.resolver();
    reg.add_shared(core_dialects().name(), &core_dialects());
    reg.add_singleton(stable_name(f64_type()), f64_type());
    reg.add_singleton(stable_name(void_type()), void_type());
}

void cache::bind(kernel& k, key_result const& kr) {
    if (c_.enabled() && kr.ok()) c_.resolver().bind(&k, kr.value());
}

result cache::get_or_compile(kernel& k, key_result const& kr, std::string const& origin_file,
                             std::function<artifact()> const& compile) {
    cc::entry_info info{k.name, origin_file, k.first_line};
    cc::cached<artifact> r = c_.get_or_compile<artifact>(kr, info, compile, &k);
    k.code = std::make_shared<artifact>(std::move(r.value));
    return {r.outcome, std::move(r.reason)};
}

std::string cache::stats_summary() const {
    if (!c_.enabled()) return "cache disabled (set TINYK_CACHE_DIR)";
    return c_.stats().summary();
}

} // namespace tinyk::glue
