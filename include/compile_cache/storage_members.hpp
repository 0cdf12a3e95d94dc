// compile_cache: the calls basic_cache makes to a Storage's optional members (the ones
// storage/concept.hpp detects): each does nothing for a Storage without the member, and
// none lets what the member throws reach the host.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/bounded_mutex.hpp>
#include <compile_cache/detail/fork_generation.hpp>
#include <compile_cache/detail/log.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/concept.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace compile_cache::detail {

/// Whether `s` can be used: its `bool usable() const`, false when that throws; true for a
/// Storage without one.
template <class S>
bool storage_usable(S const& s) noexcept {
    if constexpr (has_usable<S>::value) {
        try {
            return static_cast<bool>(s.usable());
        } catch (...) {
            return false;
        }
    }
    return true;
}

/// Whether a cache over `s` runs: storage_usable(s); when it does not, one line says so
/// through `logger`, or on stderr when there is none.
template <class S>
bool usable_or_said(S const& s, line_logger const& logger) noexcept {
    if (storage_usable(s)) return true;
    log_or_stderr(logger, "the storage reports it cannot be used; the cache is disabled");
    return false;
}

/// Tells `s` (its `corrupt(key const&)`) that the entry it keeps under `k` failed the
/// envelope check, so that it can remove or repair it. Best effort.
template <class S>
void tell_storage_corrupt(S& s, key const& k) noexcept {
    if constexpr (has_corrupt<S>::value) {
        try {
            s.corrupt(k);
        } catch (...) {
        }
    }
}

/// Gives `s` the cache's logger (its `set_logger`).
template <class S>
void pass_logger_to_storage(S& s, line_logger const& logger) {
    if constexpr (has_set_logger<S>::value) s.set_logger(logger);
}

/// The counters `s` keeps of its own (its `storage_counters()`: tiered_storage's
/// `remote.*`); none when it has no such member or it throws (they are for display).
template <class S>
std::vector<std::pair<std::string, std::uint64_t>> storage_counters_of(S const& s) noexcept {
    if constexpr (has_storage_counters<S>::value) {
        try {
            return s.storage_counters();
        } catch (...) {
        }
    }
    return {};
}

/// Which entry a failure line is about: `key <the first 6 bytes in hex>`, and where a
/// Storage with `entry_path(key)` (directory_storage) keeps it.
template <class S>
std::string failure_subject(S const& s, key const& k) {
    std::string subject = "key " + k.hex().substr(0, 12);
    if constexpr (has_entry_path<S>::value) {
        std::string path = s.entry_path(k);
        if (!path.empty()) subject += " at " + path;
    }
    return subject;
}

/// What one cache has added to the cumulative counters its Storage keeps (its
/// `record_counters`), so that each flush adds only what was counted since.
class counters_flushed {
public:
    /// Adds `counts(made_here)` (what this process counted, statistics::counted_here, as
    /// statistics_snapshot::counters() lists them; with the Storage's own counters only
    /// when `made_here`: in the process that made the cache) less what this process
    /// added before to `s`'s counters. A forked child adds its own counts, never its
    /// copy of its parent's. Best effort: a failure (or empty counts) is ignored, and the
    /// next flush adds the same counts again.
    template <class S, class Counts>
    void flush(S& s, Counts const& counts) noexcept {
        if constexpr (has_record_counters<S>::value) {
            try {
                // (Within a bound: a child forked while another thread flushed has it held for ever.)
                std::unique_lock<std::timed_mutex> const lock = mutex_.lock();
                if (!lock.owns_lock()) return;
                unsigned const generation = fork_generation();
                if (generation != generation_) { // a forked child: nothing of its own added yet
                    flushed_.clear();
                    generation_ = generation;
                }
                std::vector<std::pair<std::string, std::uint64_t>> now = counts(generation == made_in_), delta = now;
                if (now.empty()) return;
                for (std::size_t i = 0; i < delta.size() && i < flushed_.size(); ++i)
                    delta[i].second -= flushed_[i].second;
                if (!s.record_counters(delta)) flushed_ = std::move(now);
            } catch (...) {
            }
        }
    }

private:
    bounded_mutex mutex_;
    unsigned const made_in_ = fork_generation(); ///< the process that made the cache (its fork generation)
    unsigned generation_ = made_in_;             ///< the process flushed_ is for
    std::vector<std::pair<std::string, std::uint64_t>> flushed_; ///< the counters last added
};

} // namespace compile_cache::detail
