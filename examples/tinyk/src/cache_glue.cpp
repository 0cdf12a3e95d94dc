#include "cache_glue.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace tinyk::glue {

cache cache::from_env() {
    cc::settings_reader const env(env_prefix);
    if (env.is_off("_FILE")) return cache(directory_cache_type::from_env(env_prefix));
#if TINYK_WITH_SQLITE
    if (!env.is_off("_DIR")) {
        env.report(env.name("_FILE") + " and " + env.name("_DIR") +
                   " are both set: set one (a SQLite file, or a directory); the cache is disabled");
        return cache(directory_cache_type());
    }
    return cache(file_cache_type::from_env(env_prefix));
#else
    env.report(env.name("_FILE") + " is set, but this tinyk was built without SQLite (use " + env.name("_DIR") +
               "); the cache is disabled");
    return cache(directory_cache_type());
#endif
}

std::vector<cc::environment_setting> cache::environment_settings() {
    std::vector<cc::environment_setting> s = directory_cache_type::environment_settings(env_prefix);
#if TINYK_WITH_SQLITE
    // The file's own settings after TINYK_CACHE_DIR (those the directory shares, such as
    // _MAX_SIZE, once).
    auto at = s.empty() ? s.end() : s.begin() + 1;
    for (cc::environment_setting& f : cc::sqlite_storage::environment_settings(env_prefix)) {
        bool const listed =
            std::any_of(s.begin(), s.end(), [&](cc::environment_setting const& e) { return e.name == f.name; });
        if (listed) continue;
        if (f.name == std::string(env_prefix) + "_FILE")
            f.description = "a SQLite file instead of the directory (not with " + std::string(env_prefix) +
                            "_DIR); unset, empty, 0, off, false or no: not used";
        at = s.insert(at, std::move(f)) + 1;
    }
#endif
    return s;
}

bool cache::enabled() const {
    return std::visit([](auto const& c) { return c.enabled(); }, c_);
}

key_builder cache::make_key_builder() const {
    return std::visit([this](auto const& c) { return c.make_key_builder(toolchain_); }, c_);
}

void cache::register_shared_objects() {
    std::visit(
        [](auto& c) {
            if (!c.enabled()) return;
            cc::registry& reg = c.resolver();
            reg.add_shared(core_dialects().name(), &core_dialects());
            reg.add_singleton(stable_name(f64_type()), f64_type());
            reg.add_singleton(stable_name(void_type()), void_type());
        },
        c_);
}

void cache::bind(kernel& k, key_result const& kr) {
    std::visit(
        [&](auto& c) {
            if (c.enabled() && kr.ok()) c.resolver().bind(&k, kr.value());
        },
        c_);
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
    std::visit([&](auto& c) { c.prefetch(wanted, infos); }, c_);
}

result cache::get_or_compile(kernel& k, key_result const& kr, std::string const& origin_file,
                             std::function<artifact()> const& compile) {
    cc::entry_info info{k.name, origin_file, k.first_line};
    cc::cached<artifact> r =
        std::visit([&](auto& c) { return c.template get_or_compile<artifact>(kr, info, compile, &k); }, c_);
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
    std::string s = std::visit(
        [](auto& c) {
#if TINYK_WITH_REDIS || TINYK_WITH_HTTP
            (void)c.storage().wait_for_uploads(std::chrono::seconds(10)); // so that they are counted
#endif
            return c.enabled() ? c.stats().summary()
                               : std::string("cache disabled (set TINYK_CACHE_DIR or TINYK_CACHE_FILE)");
        },
        c_);
    return s + " key-ms=" + milliseconds(t.key_ns) + " front-ms=" + milliseconds(t.front_ns);
}

} // namespace tinyk::glue
