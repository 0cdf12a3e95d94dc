#include "cache_glue.hpp"

#include <chrono>

#include <memory>
#include <string>

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

void cache::prefetch(std::vector<std::unique_ptr<kernel>> const& kernels, std::vector<key_result> const& keys,
                     std::string const& origin_file) {
    std::vector<key_result> wanted;
    std::vector<cc::entry_info> infos;
    for (auto const& k : kernels) {
        auto const index = static_cast<std::size_t>(k->index);
        if (index >= keys.size()) continue;
        wanted.push_back(keys[index]);
        infos.push_back({k->name, origin_file, k->first_line});
    }
    c_.prefetch(wanted, infos);
}

result cache::get_or_compile(kernel& k, key_result const& kr, std::string const& origin_file,
                             std::function<artifact()> const& compile) {
    cc::entry_info info{k.name, origin_file, k.first_line};
    cc::cached<artifact> r = c_.get_or_compile<artifact>(kr, info, compile, &k);
    k.code = std::make_shared<artifact>(std::move(r.value));
    return {r.outcome, std::move(r.reason), r.explanation.brief()};
}

namespace {
std::string milliseconds(std::uint64_t ns) { // as the library's summary writes them: 1.234
    std::string us = std::to_string(ns / 1000 % 1000);
    return std::to_string(ns / 1000000) + "." + std::string(3 - us.size(), '0') + us;
}
} // namespace

std::string cache::stats_summary(driver_times const& t) {
#if TINYK_WITH_REDIS || TINYK_WITH_HTTP
    (void)c_.storage().wait_for_uploads(std::chrono::seconds(10)); // so that they are counted
#endif
    std::string s = c_.enabled() ? c_.stats().summary() : std::string("cache disabled (set TINYK_CACHE_DIR)");
    return s + " key-ms=" + milliseconds(t.key_ns) + " front-ms=" + milliseconds(t.front_ns);
}

} // namespace tinyk::glue
