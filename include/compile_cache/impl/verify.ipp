// compile_cache: the definitions of verify.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <random>

#include <unistd.h>

namespace compile_cache::detail {

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

std::string unsound_line(std::string const& name, key const& k) {
    return "verify " + printable(name) + ": UNSOUND: the entry under key " + k.hex() +
           " differs from a fresh compile, and two fresh compiles agree: the key misses an input the compile "
           "reads; the fresh kernel is used (docs/explain.md, \"Keys that miss an input\")";
}

std::string verify_failed_line(std::string const& name, std::string const& what) {
    return "verify " + printable(name) + ": verify-failed: the verify compile threw (" + printable(what) +
           "); the loaded kernel is used (later such throws are counted, not logged)";
}

} // namespace compile_cache::detail

#endif
