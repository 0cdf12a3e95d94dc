// compile_cache: what the cache did, counted. Every failure is a counted reason,
// never an exception in the host.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/fork_generation.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace compile_cache {

enum class miss_reason : std::size_t {
    absent,               ///< no entry under the key
    corrupt,              ///< the envelope's digest, magic or lengths are wrong
    foreign_version,      ///< another envelope version or format (serializer, artifact type)
    key_mismatch,         ///< a sound entry for another key
    too_large,            ///< larger than the configured maximum entry size
    read_error,           ///< the storage could not read it
    unresolved_reference, ///< it refers to an object that is not live (a kernel that is gone)
    deserialize_error,    ///< the deserializer rejected the payload
    /// The entry is not authenticated as the cache's mode requires: with a secret, its
    /// HMAC does not verify (written without the secret or with another one, damaged,
    /// or forged); without one, the entry is keyed. See docs/security.md.
    unauthenticated,
    /// A signed entry from a tier's remote whose signer is not among the trusted keys
    /// (PREFIX_TRUSTED_KEYS_FILE): a key taken out of the list, or never in it.
    untrusted_signer,
    /// A sound entry in a form this cache cannot read: compressed, read by a cache built
    /// without compression (no Compression policy: compression.hpp). The entry is left
    /// for the readers that can.
    unsupported,
};
inline constexpr std::size_t miss_reason_count = 11;

enum class store_failure : std::size_t {
    serialize_error,      ///< the serializer threw
    unresolved_reference, ///< the artifact refers to an object with no reference (a kernel without a key)
    too_large,            ///< larger than the configured maximum entry size
    write_error,          ///< the storage could not write it (disk full, read-only, permission)
};
inline constexpr std::size_t store_failure_count = 4;

inline char const* to_string(miss_reason r) noexcept {
    static char const* const names[miss_reason_count] = {
        "absent", "corrupt", "foreign-version", "key-mismatch", "too-large",
        "read-error", "unresolved-reference", "deserialize-error", "unauthenticated", "untrusted-signer",
        "unsupported"};
    return names[static_cast<std::size_t>(r)];
}

inline char const* to_string(store_failure f) noexcept {
    static char const* const names[store_failure_count] = {"serialize-error", "unresolved-reference",
                                                           "too-large", "write-error"};
    return names[static_cast<std::size_t>(f)];
}

namespace detail {
/// The whole-number counters besides the per-reason misses and store failures, in the
/// order statistics_snapshot::counters() lists them. A new counter: an enumerator
/// here, a field in statistics_snapshot and a row in counter_table.
enum class counter : std::size_t {
    hits,
    stores,
    bypasses,
    bytes_read,
    bytes_written,
    load_ns,
    compile_ns,
    store_ns,
    hit_read_ns,
    hit_verify_ns,
    hit_deserialize_ns,
    hit_relocate_ns,
    hit_compile_ns,
    verified,
    unsound,
    nondeterministic,
    verify_failed,
    stores_skipped_cheap,
    records_ignored,
    waited,
    wait_ns,
    took_over,
    wait_timeouts,
    count_
};
inline constexpr std::size_t counter_count = static_cast<std::size_t>(counter::count_);
} // namespace detail

/// A copy of the counters at one moment.
struct statistics_snapshot {
    std::uint64_t hits = 0;
    std::array<std::uint64_t, miss_reason_count> misses{};
    std::uint64_t stores = 0;
    std::array<std::uint64_t, store_failure_count> store_failures{};
    std::uint64_t bypasses = 0;
    std::map<std::string, std::uint64_t> bypass_reasons;
    std::uint64_t bytes_read = 0;
    std::uint64_t bytes_written = 0;
    std::uint64_t load_ns = 0;    ///< time in load(), hits and misses
    std::uint64_t compile_ns = 0; ///< time in the host's compile function under get_or_compile
    std::uint64_t store_ns = 0;   ///< time in store()
    // Where hits spent their time (included in load_ns).
    std::uint64_t hit_read_ns = 0;        ///< fetching bytes from storage
    std::uint64_t hit_verify_ns = 0;      ///< checking envelopes
    std::uint64_t hit_deserialize_ns = 0; ///< deserializing and relinking references
    std::uint64_t hit_relocate_ns = 0;    ///< shifting source positions
    /// The compile times the loaded entries recorded, summed: what the hits saved,
    /// before the time loading them (load_ns) is taken off.
    std::uint64_t hit_compile_ns = 0;
    // Verify mode (cache_options::verify_fraction): hits checked against a fresh compile.
    std::uint64_t verified = 0;         ///< the fresh compile's bytes equal the loaded artifact's
    std::uint64_t unsound = 0;          ///< they differ, and two fresh compiles agree: the key misses an input
    std::uint64_t nondeterministic = 0; ///< two fresh compiles differ: bytes cannot judge this kernel
    /// A verify compile threw: the hit's value was used, nothing was judged.
    std::uint64_t verify_failed = 0;
    /// Kernels not stored because they compiled faster than cache_options::min_compile_time.
    std::uint64_t stores_skipped_cheap = 0;
    /// Identity records not read because they are over identity_record_max_size or hold
    /// more components than identity_record_max_components: misses left unexplained.
    std::uint64_t records_ignored = 0;
    // Single flight (single_flight.hpp): misses that found another process's claim.
    std::uint64_t waited = 0;        ///< waited for another process's compile (loaded, or compiled after)
    std::uint64_t wait_ns = 0;       ///< the time those waits took, summed
    std::uint64_t took_over = 0;     ///< claims taken over from a dead owner
    std::uint64_t wait_timeouts = 0; ///< waits that reached their bound: compiled here
    /// The Storage's own counters (tiered_storage: `remote.hits`, ...), in its order;
    /// empty for a storage that keeps none.
    std::vector<std::pair<std::string, std::uint64_t>> storage_counters;

    std::uint64_t miss_count(miss_reason r) const noexcept { return misses[static_cast<std::size_t>(r)]; }
    std::uint64_t failure_count(store_failure f) const noexcept {
        return store_failures[static_cast<std::size_t>(f)];
    }
    std::uint64_t total_misses() const noexcept {
        std::uint64_t n = 0;
        for (auto m : misses) n += m;
        return n;
    }
    std::uint64_t total_store_failures() const noexcept {
        std::uint64_t n = 0;
        for (auto f : store_failures) n += f;
        return n;
    }

    /// Every counter by name, zero or not, in a fixed order: `hits`, `misses.<reason>`
    /// (to_string of each miss_reason), `stores`, `store-failures.<failure>`,
    /// `bypasses`, `bytes-read`, `bytes-written`, `load-ns`, `compile-ns`, `store-ns`,
    /// `hit-read-ns`, `hit-verify-ns`, `hit-deserialize-ns`, `hit-relocate-ns`,
    /// `hit-compile-ns`, `verified`, `unsound`, `nondeterministic`, `verify-failed`,
    /// `store-skipped.cheap`, `records-ignored`, `waited`, `wait-ns`, `took-over`,
    /// `wait-timeout`. These
    /// are the names a cache directory keeps its cumulative counters under (the
    /// breakdown of bypasses by reason is not kept: reasons are the host's own text).
    /// Then the storage_counters.
    COMPILE_CACHE_DECL std::vector<std::pair<std::string, std::uint64_t>> counters() const;

    /// The compile time the hits saved: the compile times their entries recorded, less
    /// the time spent loading (hits and misses); 0 when loading cost more.
    std::uint64_t saved_ns() const noexcept { return hit_compile_ns > load_ns ? hit_compile_ns - load_ns : 0; }

    /// One line: `hits=3 misses=2 (absent=1 corrupt=1) stores=2 ...`; reasons with a
    /// zero count are left out, and so are the verify and skipped-store counts when
    /// they are all 0.
    COMPILE_CACHE_DECL std::string summary() const;

private:
    /// ` (name=n name=n)` for the reasons counted at least once; empty when none was.
    template <class Reason, std::size_t N>
    static std::string nonzero_counts(std::array<std::uint64_t, N> const& counts) {
        std::string out;
        for (std::size_t i = 0; i < N; ++i)
            if (counts[i] != 0)
                out += std::string(out.empty() ? "" : " ") + to_string(static_cast<Reason>(i)) + "=" +
                       std::to_string(counts[i]);
        return out.empty() ? out : " (" + out + ")";
    }

    COMPILE_CACHE_DECL static std::string format_ms(std::uint64_t ns);
};

namespace detail {
struct counter_row {
    char const* name; ///< in statistics_snapshot::counters() and the cache directory's counters file
    std::uint64_t statistics_snapshot::*field;
};
inline constexpr counter_row counter_table[] = {
    {"hits", &statistics_snapshot::hits},
    {"stores", &statistics_snapshot::stores},
    {"bypasses", &statistics_snapshot::bypasses},
    {"bytes-read", &statistics_snapshot::bytes_read},
    {"bytes-written", &statistics_snapshot::bytes_written},
    {"load-ns", &statistics_snapshot::load_ns},
    {"compile-ns", &statistics_snapshot::compile_ns},
    {"store-ns", &statistics_snapshot::store_ns},
    {"hit-read-ns", &statistics_snapshot::hit_read_ns},
    {"hit-verify-ns", &statistics_snapshot::hit_verify_ns},
    {"hit-deserialize-ns", &statistics_snapshot::hit_deserialize_ns},
    {"hit-relocate-ns", &statistics_snapshot::hit_relocate_ns},
    {"hit-compile-ns", &statistics_snapshot::hit_compile_ns},
    {"verified", &statistics_snapshot::verified},
    {"unsound", &statistics_snapshot::unsound},
    {"nondeterministic", &statistics_snapshot::nondeterministic},
    {"verify-failed", &statistics_snapshot::verify_failed},
    {"store-skipped.cheap", &statistics_snapshot::stores_skipped_cheap},
    {"records-ignored", &statistics_snapshot::records_ignored},
    {"waited", &statistics_snapshot::waited},
    {"wait-ns", &statistics_snapshot::wait_ns},
    {"took-over", &statistics_snapshot::took_over},
    {"wait-timeout", &statistics_snapshot::wait_timeouts},
};
static_assert(std::size(counter_table) == counter_count, "compile_cache: one counter_table row per counter");
} // namespace detail

/// The live counters: lock-free for everything on the hit path.
class statistics {
public:
    /// The time of one hit, phase by phase.
    struct hit_phases {
        std::uint64_t read_ns = 0;        ///< fetching the bytes from storage
        std::uint64_t verify_ns = 0;      ///< checking the envelope
        std::uint64_t deserialize_ns = 0; ///< deserializing and relinking references
        std::uint64_t relocate_ns = 0;    ///< shifting source positions
    };

    void hit(std::uint64_t bytes, hit_phases const& t, std::uint64_t recorded_compile_ns = 0) noexcept {
        add(detail::counter::hits);
        add(detail::counter::hit_compile_ns, recorded_compile_ns);
        add(detail::counter::bytes_read, bytes);
        add(detail::counter::load_ns, t.read_ns + t.verify_ns + t.deserialize_ns + t.relocate_ns);
        add(detail::counter::hit_read_ns, t.read_ns);
        add(detail::counter::hit_verify_ns, t.verify_ns);
        add(detail::counter::hit_deserialize_ns, t.deserialize_ns);
        add(detail::counter::hit_relocate_ns, t.relocate_ns);
    }
    void miss(miss_reason r, std::uint64_t bytes, std::uint64_t ns) noexcept {
        if (forked()) rebase();
        misses_[static_cast<std::size_t>(r)].fetch_add(1, std::memory_order_relaxed);
        add(detail::counter::bytes_read, bytes);
        add(detail::counter::load_ns, ns);
    }
    void stored(std::uint64_t bytes, std::uint64_t ns) noexcept {
        add(detail::counter::stores);
        add(detail::counter::bytes_written, bytes);
        add(detail::counter::store_ns, ns);
    }
    void store_failed(store_failure f, std::uint64_t ns) noexcept {
        if (forked()) rebase();
        store_failures_[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
        add(detail::counter::store_ns, ns);
    }
    void verified() noexcept { add(detail::counter::verified); }
    void unsound() noexcept { add(detail::counter::unsound); }
    void nondeterministic() noexcept { add(detail::counter::nondeterministic); }
    void verify_failed() noexcept { add(detail::counter::verify_failed); }
    void record_ignored() noexcept { add(detail::counter::records_ignored); }
    void store_skipped_cheap() noexcept { add(detail::counter::stores_skipped_cheap); }
    void waited(std::uint64_t ns) noexcept {
        add(detail::counter::waited);
        add(detail::counter::wait_ns, ns);
    }
    void took_over() noexcept { add(detail::counter::took_over); }
    void wait_timeout() noexcept { add(detail::counter::wait_timeouts); }
    void compiled(std::uint64_t ns) noexcept { add(detail::counter::compile_ns, ns); }
    COMPILE_CACHE_DECL void bypassed(std::string const& reason) noexcept;

    COMPILE_CACHE_DECL statistics_snapshot snapshot() const;

    /// What this process counted: snapshot()'s counts less those at the fork that made
    /// it (a forked child's copy of its parent's counts is the parent's), without the
    /// bypasses' breakdown by reason. False when another thread of a forked child is
    /// still taking the counts at the fork, which it does at the child's first count.
    COMPILE_CACHE_DECL bool counted_here(statistics_snapshot& s) const;

private:
    // Whether this process descends by fork from the one base_ is for: its first count
    // (or counted_here) takes the counts at the fork first (rebase).
    bool forked() const noexcept {
        return detail::fork_generation() != generation_.load(std::memory_order_acquire);
    }
    COMPILE_CACHE_DECL void rebase() const noexcept;

    void add(detail::counter c, std::uint64_t n = 1) noexcept {
        if (forked()) rebase();
        counts_[static_cast<std::size_t>(c)].fetch_add(n, std::memory_order_relaxed);
    }

    std::array<std::atomic<std::uint64_t>, detail::counter_count> counts_{};
    std::array<std::atomic<std::uint64_t>, miss_reason_count> misses_{};
    std::array<std::atomic<std::uint64_t>, store_failure_count> store_failures_{};
    /// Taken within bypass_wait: a child forked while another thread held it has it held
    /// for ever (then the breakdown by reason is not counted, or not in a snapshot).
    // The counts when this process's fork generation began: zeros in the process that
    // made the statistics, a child's parent's counts at the fork (taken by its first
    // count; another thread's count at that moment may be taken in them: lost, never
    // recorded twice). `generation_` says which generation they are for, set after them.
    mutable std::array<std::atomic<std::uint64_t>, detail::counter_count> base_counts_{};
    mutable std::array<std::atomic<std::uint64_t>, miss_reason_count> base_misses_{};
    mutable std::array<std::atomic<std::uint64_t>, store_failure_count> base_store_failures_{};
    mutable std::atomic<unsigned> generation_{detail::fork_generation()};
    mutable std::atomic<unsigned> rebasing_{generation_.load()}; ///< the generation a thread takes them for
    mutable std::timed_mutex bypass_mutex_;
    static constexpr std::chrono::milliseconds bypass_wait{250};
    std::map<std::string, std::uint64_t> bypass_reasons_;
};

} // namespace compile_cache

#include <compile_cache/impl/statistics.ipp>
