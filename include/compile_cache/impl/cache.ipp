// compile_cache: the definitions of cache.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <random>

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
    record_identities_from_env(env, options.record_identities);
}

bool random_draw_below(double fraction) noexcept {
    // A seed from std::random_device, which may throw where there is no entropy source:
    // then the time and the process id alone (verify mode needs a spread, not a secret).
    auto const make_seed = []() noexcept {
        auto value = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                     (static_cast<std::uint64_t>(::getpid()) << 32);
        try {
            value ^= std::random_device{}();
        } catch (...) {
        }
        return value;
    };
    thread_local std::mt19937_64 random{make_seed()};
    // A forked child reseeds, so that forked workers do not all verify the same hits.
    thread_local ::pid_t seeded_in = ::getpid();
    if (::pid_t const now = ::getpid(); now != seeded_in) {
        random.seed(make_seed());
        seeded_in = now;
    }
    return std::uniform_real_distribution<double>(0.0, 1.0)(random) < fraction;
}

} // namespace compile_cache::detail

#endif
