// compile_cache: verify mode (cache_options::verify_fraction, PREFIX_VERIFY): a share of
// the hits is also compiled, and the fresh artifact's bytes are compared with the loaded
// one's, so that a key that misses an input shows up as an unsound entry
// (docs/explain.md, "Keys that miss an input").
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/log.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/printable.hpp>
#include <compile_cache/statistics.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

namespace compile_cache::detail {

/// Whether a number drawn uniformly from [0, 1) by this thread's generator is below
/// `fraction`: verify mode's choice of the hits it checks. Each thread and each forked
/// process draws its own sequence.
COMPILE_CACHE_DECL bool random_draw_below(double fraction) noexcept;

/// Whether a hit is one of the share `fraction` (0: none, 1: every one) verify mode checks.
inline bool verify_this_hit(double fraction) noexcept {
    if (!(fraction > 0)) return false;
    if (fraction >= 1) return true;
    return random_draw_below(fraction);
}

/// The line verify mode gives for an unsound entry (through the logger, or on stderr).
COMPILE_CACHE_DECL std::string unsound_line(std::string const& name, key const& k);

/// The line verify mode logs for the first verify compile that threw.
COMPILE_CACHE_DECL std::string verify_failed_line(std::string const& name, std::string const& what);

/// Verify mode's judge of the hits of one cache, counting in its statistics.
class hit_verifier {
public:
    /// The hit of the kernel `name` under `k`, `loaded`, checked: the kernel is compiled
    /// too (`compile()`) and both artifacts serialized (`serialize(artifact, bytes)`, which
    /// may throw: then nothing is judged). A difference is judged by a second compile: two
    /// fresh compiles that differ make the kernel nondeterministic (bytes cannot judge it:
    /// the loaded artifact is kept); two that agree make the entry unsound (its key misses
    /// an input: the fresh artifact replaces the loaded one, and the host hears of it on
    /// stderr when it has no logger). A verify compile that throws judges nothing: the
    /// host would have had the loaded artifact without verify mode, so it keeps it
    /// (counted verify-failed, logged once); the exception never reaches the host.
    /// Returns the fresh artifact when the entry is unsound; nullopt when `loaded` stands.
    template <class Artifact, class Compile, class Serialize>
    std::optional<Artifact> judge(std::string const& name, key const& k, Artifact const& loaded, Compile& compile,
                                  Serialize const& serialize, statistics& stats, line_logger const& logger) {
        std::optional<Artifact> fresh = compile_once<Artifact>(name, compile, stats, logger);
        std::string loaded_bytes, fresh_bytes;
        if (!fresh || !serialized(serialize, loaded, loaded_bytes) || !serialized(serialize, *fresh, fresh_bytes))
            return std::nullopt;
        if (loaded_bytes == fresh_bytes) {
            stats.verified();
            return std::nullopt;
        }
        std::optional<Artifact> again = compile_once<Artifact>(name, compile, stats, logger);
        std::string again_bytes;
        if (!again || !serialized(serialize, *again, again_bytes)) return std::nullopt;
        if (again_bytes != fresh_bytes) {
            stats.nondeterministic();
            log_with(logger, [&] {
                return "verify " + printable(name) + ": nondeterministic: two fresh compiles differ, so the bytes of "
                                                     "its entry cannot be checked; the loaded kernel is used";
            });
            return std::nullopt;
        }
        stats.unsound();
        log_or_stderr(logger, unsound_line(name, k));
        return fresh;
    }

private:
    template <class Artifact, class Serialize>
    static bool serialized(Serialize const& serialize, Artifact const& a, std::string& out) noexcept {
        try {
            serialize(a, out);
            return true;
        } catch (...) {
            return false;
        }
    }

    // One compile, timed and counted; nullopt when it throws (counted verify-failed; the
    // first such throw of the cache is logged).
    template <class Artifact, class Compile>
    std::optional<Artifact> compile_once(std::string const& name, Compile& compile, statistics& stats,
                                         line_logger const& logger) noexcept {
        auto const start = std::chrono::steady_clock::now();
        std::string what;
        try {
            std::optional<Artifact> a(compile());
            stats.compiled(elapsed_since(start));
            return a;
        } catch (std::exception const& e) {
            try {
                what = e.what();
            } catch (...) {
            }
        } catch (...) {
            what = "an exception that is not a std::exception";
        }
        stats.compiled(elapsed_since(start));
        stats.verify_failed();
        if (!failed_logged_.exchange(true)) log_with(logger, [&] { return verify_failed_line(name, what); });
        return std::nullopt;
    }

    static std::uint64_t elapsed_since(std::chrono::steady_clock::time_point start) noexcept {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }

    std::atomic<bool> failed_logged_{false}; ///< a verify compile that threw was logged
};

} // namespace compile_cache::detail

#include <compile_cache/impl/verify.ipp>
