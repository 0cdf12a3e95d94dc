// compile_cache: single flight, the cache's side of claims: a miss claims its key in the
// storage before it compiles (the optional Storage members try_claim and release_claim,
// storage/claim.hpp), and a miss that finds another process's live claim waits for that
// process's entry, polling at short intervals, for at most a bound, then compiles itself.
// basic_cache::get_or_compile calls claim_or_wait; docs/design.md has the protocol.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/log.hpp>
#include <compile_cache/detail/per_thread.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/printable.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/statistics.hpp>
#include <compile_cache/storage/claim.hpp>
#include <compile_cache/storage/concept.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace compile_cache {

/// How a cache's misses claim their keys (cache_options::single_flight).
struct single_flight_options {
    /// Which claims a miss takes (PREFIX_SINGLE_FLIGHT: `0`, `local`, `remote` or `both`,
    /// the default): with a tier, the local claim covers the processes of one machine, the
    /// remote one the fleet. A storage without claims takes none whatever this says.
    claim_scope scope = claim_scope::both;
    /// The longest a miss waits for another process's compile (PREFIX_WAIT_MAX, in
    /// milliseconds); the wait of a kernel with a recorded compile time is shorter: four
    /// times that time, at least a second (claim_wait_bound). Also how long a claim
    /// stands when its owner cannot be asked (a remote claim's expiry).
    std::chrono::milliseconds wait_max{30000};
};

/// Whether basic_cache::prefetch also takes, ahead, the remote claims of the keys the
/// remote lacks (when single flight's scope has `remote`): `take` (the default) for a
/// host that compiles what it prefetches right after; `none` only reads ahead.
enum class prefetch_claims : unsigned char { take, none };

namespace detail {

/// Reads PREFIX_SINGLE_FLIGHT and PREFIX_WAIT_MAX into `options`; a value that does not
/// parse is one line through `env`, and the default stays.
COMPILE_CACHE_DECL void single_flight_from_env(settings_reader const& env, single_flight_options& options);

/// How long a miss waits for another process's claim of a kernel whose last recorded
/// compile took `last_compile_ns` (0: none recorded): 4 times that, at least 1 s, at most
/// `wait_max` (and `wait_max` when there is no record).
inline std::chrono::nanoseconds claim_wait_bound(std::chrono::milliseconds wait_max,
                                                 std::uint64_t last_compile_ns) noexcept {
    std::chrono::nanoseconds const cap = wait_max;
    if (last_compile_ns == 0) return cap;
    std::chrono::nanoseconds const floor = std::min<std::chrono::nanoseconds>(std::chrono::seconds(1), cap);
    std::uint64_t const four = last_compile_ns > UINT64_MAX / 4 ? UINT64_MAX / 4 : last_compile_ns * 4;
    std::chrono::nanoseconds const wanted(static_cast<std::chrono::nanoseconds::rep>(
        std::min<std::uint64_t>(four, static_cast<std::uint64_t>(cap.count()))));
    return std::clamp(wanted, floor, cap);
}

/// The keys this thread holds claims of: a nested get_or_compile of one of them (a
/// kernel that reaches itself while compiling) compiles without waiting on itself.
/// nullptr at exit, once the thread's objects are gone (per_thread): no claim is then
/// taken (claim_or_wait).
struct claims_of_this_thread_tag;
inline std::vector<key>* claims_of_this_thread() noexcept {
    return per_thread<std::vector<key>, claims_of_this_thread_tag>();
}

/// A claim this cache took: released (the storage's release_claim) when it goes, on
/// every path out of get_or_compile: success, failure, a store that failed, an exception.
template <class Storage>
class claim_guard {
public:
    explicit claim_guard(Storage& s) noexcept : storage_(s) {}
    claim_guard(claim_guard const&) = delete;
    claim_guard& operator=(claim_guard const&) = delete;
    ~claim_guard() { release(); }

    void hold(key const& k) noexcept {
        k_ = k;
        held_ = true;
        try {
            if (auto* mine = claims_of_this_thread()) mine->push_back(k);
        } catch (...) { // (out of memory: only a nested compile of k would wait on itself, to its bound)
        }
    }
    bool held() const noexcept { return held_; }
    void release() noexcept {
        if (!held_) return;
        held_ = false;
        if (auto* mine = claims_of_this_thread()) {
            auto const it = std::find(mine->rbegin(), mine->rend(), k_);
            if (it != mine->rend()) mine->erase(std::next(it).base());
        }
        if constexpr (has_claims<Storage>::value) {
            try {
                storage_.release_claim(k_);
            } catch (...) {
            }
        }
    }

private:
    Storage& storage_;
    key k_{};
    bool held_ = false;
};

/// Whether the storage has an entry under `k` now (a read that finds one; absent, an
/// error or an over-bound one: no). The bytes are read into `scratch`.
template <class Storage>
bool entry_present(Storage& s, key const& k, std::size_t max_size, std::string& scratch) noexcept {
    try {
        return s.read(k, scratch, max_size).status == read_status::found;
    } catch (...) {
        return false;
    }
}

inline double ms_of(std::chrono::nanoseconds d) noexcept { return static_cast<double>(d.count()) / 1e6; }

inline std::string ms_text(std::chrono::nanoseconds d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", ms_of(d));
    return buf;
}

/// The single-flight step of a miss of `k` (after the load missed, before the compile):
/// claims `k` (then `guard` holds it and nullopt says: compile), or, while another
/// process's live claim stands, waits for its entry: polls every 0.1 ms growing to 5 ms
/// (woken sooner when the storage sees the entry arrive or the claim go: wait_for_change_or_sleep),
/// each poll a read of the entry and a try_claim (which takes over a dead claim at once,
/// or claims a released one); an entry found is loaded by `load()` (the cache's whole
/// load: envelope check, deserialize) and returned. After `bound`, or when the entry
/// found does not load, or when no claim can be taken: nullopt, compile (unclaimed).
/// `absent`: the miss found no entry; after any other miss (a damaged entry, another
/// version's) the key is claimed but not waited for.
/// Counted (statistics: waited, wait-ns, took-over, wait-timeout) and logged.
template <class Artifact, class Storage, class Load>
std::optional<Artifact> claim_or_wait(Storage& storage, claim_guard<Storage>& guard, key const& k,
                                      single_flight_options const& options, std::uint64_t last_compile_ns,
                                      std::size_t max_entry_size, bool absent, statistics& stats,
                                      line_logger const& logger, std::string const& name, Load&& load) {
    if constexpr (!has_claims<Storage>::value) {
        (void)storage, (void)guard, (void)k, (void)options, (void)last_compile_ns, (void)max_entry_size,
            (void)absent, (void)stats, (void)logger, (void)name, (void)load;
        return std::nullopt;
    } else {
        if (options.scope == claim_scope::none) return std::nullopt;
        // At exit, once this thread's list is gone (per_thread), no claim is taken: one
        // taken then could not be told from a nested call's, nor a remote one released.
        auto const* mine = claims_of_this_thread();
        if (mine == nullptr) return std::nullopt;
        if (std::find(mine->begin(), mine->end(), k) != mine->end()) return std::nullopt; // recursion in this thread
        claim_request const request{options.scope, options.wait_max};
        std::chrono::nanoseconds const bound = claim_wait_bound(options.wait_max, last_compile_ns);
        auto const start = std::chrono::steady_clock::now();
        std::chrono::microseconds interval(100);
        std::string scratch;
        bool waiting = false;
        std::string holder;
        auto waited_for = [&] { return std::chrono::steady_clock::now() - start; };
        auto done_waiting = [&] {
            if (waiting) stats.waited(static_cast<std::uint64_t>(
                             std::chrono::duration_cast<std::chrono::nanoseconds>(waited_for()).count()));
        };
        for (;;) {
            claim_answer answer;
            try {
                answer = storage.try_claim(k, request);
            } catch (...) {
                answer = claim_answer{};
            }
            if (answer.took_over) {
                stats.took_over();
                log_with(logger, [&] {
                    return "took over the claim of " + printable(name) + " (key " + k.hex().substr(0, 12) +
                           "): its owner is gone";
                });
            }
            if (answer.state == claim_state::none) {
                done_waiting();
                return std::nullopt;
            }
            if (answer.state == claim_state::claimed) {
                guard.hold(k);
                // After a wait, the claimant may have stored the entry and released its
                // claim between our last read and this claim: read once more. After a
                // first miss that found no entry, only when the storage saw one as it
                // claimed (a read there would cost every lone miss a round trip with a
                // remote, and the window is narrow unless this process was preempted
                // within it); after any other miss the entry there is no news.
                if ((waiting || (absent && answer.entry_seen)) &&
                    entry_present(storage, k, max_entry_size, scratch)) {
                    std::optional<Artifact> loaded = load();
                    if (loaded) {
                        guard.release();
                        done_waiting();
                        return loaded;
                    }
                }
                done_waiting();
                return std::nullopt;
            }
            // Held by another process (or thread): wait for its entry, within the bound.
            // After a miss that found an entry (damaged, another version's...), the entry
            // there is no news: compile, as without claims.
            if (!absent) return std::nullopt;
            if (!waiting) {
                waiting = true;
                holder = answer.holder;
                log_with(logger, [&] {
                    return "waiting for " + printable(name) + " (key " + k.hex().substr(0, 12) + "), claimed by " +
                           (holder.empty() ? std::string("another process") : printable(holder)) + ", for at most " +
                           ms_text(bound);
                });
            }
            auto const elapsed = waited_for();
            if (elapsed >= bound) {
                stats.wait_timeout();
                done_waiting();
                log_with(logger, [&] {
                    return "gave up waiting for " + printable(name) + " after " +
                           ms_text(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed)) +
                           " (claimed by " + (holder.empty() ? std::string("another process") : printable(holder)) +
                           "): compiling it here";
                });
                return std::nullopt;
            }
            wait_for_change_or_sleep(&storage, k,
                                     std::min<std::chrono::nanoseconds>(
                                         interval, bound - std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed)));
            interval = std::min<std::chrono::microseconds>(interval * 5 / 4 + std::chrono::microseconds(1),
                                                           std::chrono::milliseconds(5));
            if (entry_present(storage, k, max_entry_size, scratch)) {
                std::optional<Artifact> loaded = load();
                done_waiting();
                if (loaded)
                    log_with(logger, [&] {
                        return "waited " + ms_text(std::chrono::duration_cast<std::chrono::nanoseconds>(waited_for())) +
                               " for " + printable(name) + ": loaded the entry its claimant stored";
                    });
                return loaded; // (an entry that does not load: compile)
            }
        }
    }
}

} // namespace detail

} // namespace compile_cache

#include <compile_cache/impl/single_flight.ipp>
