// compile_cache: the definitions of cache.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

void cache_settings_from_env(settings_reader const& env, cache_options& options) {
    std::string const verify = env.value("_VERIFY");
    if (!verify.empty() && !is_off(verify)) {
        std::optional<double> const v = is_on(verify) ? std::optional<double>(1.0) : parse_fraction(verify);
        if (v)
            options.verify_fraction = *v;
        else
            env.report_value("_VERIFY", verify,
                             "is not understood (1 to verify every hit, a fraction such as 0.01 for that share of "
                             "hits, 0 for none); hits are not verified");
    }
    std::string const min_time = env.value("_MIN_COMPILE_TIME");
    if (!min_time.empty()) {
        if (std::optional<std::uint64_t> const ms = parse_whole_number(min_time, 9))
            options.min_compile_time = std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(*ms));
        else
            env.report_value("_MIN_COMPILE_TIME", min_time,
                             "is not a number of milliseconds; every compiled kernel is stored");
    }
}

} // namespace compile_cache::detail

#endif
