// compile_cache: what the cache did, counted. Every failure is a counted reason,
// never an exception in the host.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace compile_cache {

enum class miss_reason : std::size_t {
    absent,               ///< no entry under the key
    corrupt,              ///< the envelope's digest, magic or lengths are wrong
    foreign_version,      ///< another envelope version or serializer format
    key_mismatch,         ///< a sound entry for another key
    too_large,            ///< larger than the configured maximum entry size
    read_error,           ///< the storage could not read it
    unresolved_reference, ///< it refers to an object that is not live (a kernel that is gone)
    deserialize_error,    ///< the deserializer rejected the payload
    /// The entry is not authenticated as the cache's mode requires: with a secret, its
    /// HMAC does not verify (written without the secret or with another one, damaged,
    /// or forged); without one, the entry is keyed. See docs/security.md.
    unauthenticated,
};
inline constexpr std::size_t miss_reason_count = 9;

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
        "read-error", "unresolved-reference", "deserialize-error", "unauthenticated"};
    return names[static_cast<std::size_t>(r)];
}

inline char const* to_string(store_failure f) noexcept {
    static char const* const names[store_failure_count] = {"serialize-error", "unresolved-reference",
                                                           "too-large", "write-error"};
    return names[static_cast<std::size_t>(f)];
}

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
    /// `hit-read-ns`, `hit-verify-ns`, `hit-deserialize-ns`, `hit-relocate-ns`. These
    /// are the names a cache directory keeps its cumulative counters under (the
    /// breakdown of bypasses by reason is not kept: reasons are the host's own text).
    /// Then the storage_counters.
    std::vector<std::pair<std::string, std::uint64_t>> counters() const {
        std::vector<std::pair<std::string, std::uint64_t>> c;
        c.reserve(16 + miss_reason_count + store_failure_count);
        c.emplace_back("hits", hits);
        for (std::size_t i = 0; i < miss_reason_count; ++i)
            c.emplace_back(std::string("misses.") + to_string(static_cast<miss_reason>(i)), misses[i]);
        c.emplace_back("stores", stores);
        for (std::size_t i = 0; i < store_failure_count; ++i)
            c.emplace_back(std::string("store-failures.") + to_string(static_cast<store_failure>(i)), store_failures[i]);
        c.emplace_back("bypasses", bypasses);
        c.emplace_back("bytes-read", bytes_read);
        c.emplace_back("bytes-written", bytes_written);
        c.emplace_back("load-ns", load_ns);
        c.emplace_back("compile-ns", compile_ns);
        c.emplace_back("store-ns", store_ns);
        c.emplace_back("hit-read-ns", hit_read_ns);
        c.emplace_back("hit-verify-ns", hit_verify_ns);
        c.emplace_back("hit-deserialize-ns", hit_deserialize_ns);
        c.emplace_back("hit-relocate-ns", hit_relocate_ns);
        c.insert(c.end(), storage_counters.begin(), storage_counters.end());
        return c;
    }

    /// One line: `hits=3 misses=2 (absent=1 corrupt=1) stores=2 ...`; reasons with a
    /// zero count are left out.
    std::string summary() const {
        std::string s = "hits=" + std::to_string(hits) + " misses=" + std::to_string(total_misses());
        std::string reasons;
        for (std::size_t i = 0; i < miss_reason_count; ++i)
            if (misses[i])
                reasons += std::string(reasons.empty() ? "" : " ") + to_string(static_cast<miss_reason>(i)) + "=" +
                           std::to_string(misses[i]);
        if (!reasons.empty()) s += " (" + reasons + ")";
        s += " stores=" + std::to_string(stores);
        s += " store-failures=" + std::to_string(total_store_failures());
        reasons.clear();
        for (std::size_t i = 0; i < store_failure_count; ++i)
            if (store_failures[i])
                reasons += std::string(reasons.empty() ? "" : " ") + to_string(static_cast<store_failure>(i)) + "=" +
                           std::to_string(store_failures[i]);
        if (!reasons.empty()) s += " (" + reasons + ")";
        s += " bypasses=" + std::to_string(bypasses);
        reasons.clear();
        for (auto const& [why, n] : bypass_reasons)
            reasons += std::string(reasons.empty() ? "" : "; ") + why + "=" + std::to_string(n);
        if (!reasons.empty()) s += " (" + reasons + ")";
        s += " bytes-read=" + std::to_string(bytes_read) + " bytes-written=" + std::to_string(bytes_written);
        if (hits)
            s += " hit-ms=(read " + format_ms(hit_read_ns) + " verify " + format_ms(hit_verify_ns) + " deserialize " +
                 format_ms(hit_deserialize_ns) + " relocate " + format_ms(hit_relocate_ns) + ")";
        s += " load-ms=" + format_ms(load_ns) + " compile-ms=" + format_ms(compile_ns) + " store-ms=" + format_ms(store_ns);
        // The storage's own: `remote.hits=3 ... remote.read-ms=1.250`; zero errors left out.
        for (auto const& [name, n] : storage_counters) {
            if (n == 0 && name.find(".errors.") != std::string::npos) continue;
            if (name.size() > 3 && name.compare(name.size() - 3, 3, "-ns") == 0)
                s += " " + name.substr(0, name.size() - 3) + "-ms=" + format_ms(n);
            else
                s += " " + name + "=" + std::to_string(n);
        }
        return s;
    }

private:
    static std::string format_ms(std::uint64_t ns) {
        std::uint64_t us = ns / 1000;
        std::string frac = std::to_string(us % 1000);
        return std::to_string(us / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
    }
};

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

    void hit(std::uint64_t bytes, hit_phases const& t) noexcept {
        hits_.fetch_add(1, std::memory_order_relaxed);
        bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
        load_ns_.fetch_add(t.read_ns + t.verify_ns + t.deserialize_ns + t.relocate_ns, std::memory_order_relaxed);
        hit_read_ns_.fetch_add(t.read_ns, std::memory_order_relaxed);
        hit_verify_ns_.fetch_add(t.verify_ns, std::memory_order_relaxed);
        hit_deserialize_ns_.fetch_add(t.deserialize_ns, std::memory_order_relaxed);
        hit_relocate_ns_.fetch_add(t.relocate_ns, std::memory_order_relaxed);
    }
    void miss(miss_reason r, std::uint64_t bytes, std::uint64_t ns) noexcept {
        misses_[static_cast<std::size_t>(r)].fetch_add(1, std::memory_order_relaxed);
        bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
        load_ns_.fetch_add(ns, std::memory_order_relaxed);
    }
    void stored(std::uint64_t bytes, std::uint64_t ns) noexcept {
        stores_.fetch_add(1, std::memory_order_relaxed);
        bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
        store_ns_.fetch_add(ns, std::memory_order_relaxed);
    }
    void store_failed(store_failure f, std::uint64_t ns) noexcept {
        store_failures_[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
        store_ns_.fetch_add(ns, std::memory_order_relaxed);
    }
    void compiled(std::uint64_t ns) noexcept { compile_ns_.fetch_add(ns, std::memory_order_relaxed); }
    void bypassed(std::string const& reason) noexcept {
        bypasses_.fetch_add(1, std::memory_order_relaxed);
        try {
            std::lock_guard<std::mutex> lock(bypass_mutex_);
            ++bypass_reasons_[reason];
        } catch (...) {
            // The count above stands; only the breakdown by reason is lost.
        }
    }

    statistics_snapshot snapshot() const {
        statistics_snapshot s;
        s.hits = hits_.load(std::memory_order_relaxed);
        for (std::size_t i = 0; i < miss_reason_count; ++i) s.misses[i] = misses_[i].load(std::memory_order_relaxed);
        s.stores = stores_.load(std::memory_order_relaxed);
        for (std::size_t i = 0; i < store_failure_count; ++i)
            s.store_failures[i] = store_failures_[i].load(std::memory_order_relaxed);
        s.bypasses = bypasses_.load(std::memory_order_relaxed);
        {
            std::lock_guard<std::mutex> lock(bypass_mutex_);
            s.bypass_reasons = bypass_reasons_;
        }
        s.bytes_read = bytes_read_.load(std::memory_order_relaxed);
        s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
        s.load_ns = load_ns_.load(std::memory_order_relaxed);
        s.compile_ns = compile_ns_.load(std::memory_order_relaxed);
        s.store_ns = store_ns_.load(std::memory_order_relaxed);
        s.hit_read_ns = hit_read_ns_.load(std::memory_order_relaxed);
        s.hit_verify_ns = hit_verify_ns_.load(std::memory_order_relaxed);
        s.hit_deserialize_ns = hit_deserialize_ns_.load(std::memory_order_relaxed);
        s.hit_relocate_ns = hit_relocate_ns_.load(std::memory_order_relaxed);
        return s;
    }

private:
    std::atomic<std::uint64_t> hits_{0};
    std::array<std::atomic<std::uint64_t>, miss_reason_count> misses_{};
    std::atomic<std::uint64_t> stores_{0};
    std::array<std::atomic<std::uint64_t>, store_failure_count> store_failures_{};
    std::atomic<std::uint64_t> bypasses_{0};
    mutable std::mutex bypass_mutex_;
    std::map<std::string, std::uint64_t> bypass_reasons_;
    std::atomic<std::uint64_t> bytes_read_{0};
    std::atomic<std::uint64_t> bytes_written_{0};
    std::atomic<std::uint64_t> load_ns_{0};
    std::atomic<std::uint64_t> compile_ns_{0};
    std::atomic<std::uint64_t> store_ns_{0};
    std::atomic<std::uint64_t> hit_read_ns_{0};
    std::atomic<std::uint64_t> hit_verify_ns_{0};
    std::atomic<std::uint64_t> hit_deserialize_ns_{0};
    std::atomic<std::uint64_t> hit_relocate_ns_{0};
};

} // namespace compile_cache
