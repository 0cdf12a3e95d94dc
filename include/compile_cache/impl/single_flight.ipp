// compile_cache: the definitions of single_flight.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

void single_flight_from_env(settings_reader const& env, single_flight_options& options) {
    options.scope = env.choice<claim_scope>("_SINGLE_FLIGHT",
                                            {{"both", claim_scope::both},
                                             {"local", claim_scope::local},
                                             {"remote", claim_scope::remote},
                                             {"0", claim_scope::none},
                                             {"off", claim_scope::none},
                                             {"1", claim_scope::both},
                                             {"on", claim_scope::both}},
                                            claim_scope::both, "a single-flight scope");
    std::string const wait = env.value("_WAIT_MAX");
    if (!wait.empty()) {
        if (std::optional<std::uint64_t> const ms = parse_whole_number(trim_blanks(wait), 9))
            options.wait_max = std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(*ms));
        else
            env.report_value("_WAIT_MAX", wait, "is not a number of milliseconds; using the default, 30000");
    }
}

} // namespace compile_cache::detail

#endif
