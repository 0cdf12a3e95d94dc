// compile_cache: the definitions of statistics.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

std::vector<std::pair<std::string, std::uint64_t>> statistics_snapshot::counters() const {
    std::vector<std::pair<std::string, std::uint64_t>> c;
    c.reserve(detail::counter_count + miss_reason_count + store_failure_count + storage_counters.size());
    for (std::size_t i = 0; i < detail::counter_count; ++i) {
        c.emplace_back(detail::counter_table[i].name, this->*detail::counter_table[i].field);
        if (i == static_cast<std::size_t>(detail::counter::hits))
            for (std::size_t r = 0; r < miss_reason_count; ++r)
                c.emplace_back(std::string("misses.") + to_string(static_cast<miss_reason>(r)), misses[r]);
        if (i == static_cast<std::size_t>(detail::counter::stores))
            for (std::size_t f = 0; f < store_failure_count; ++f)
                c.emplace_back(std::string("store-failures.") + to_string(static_cast<store_failure>(f)),
                               store_failures[f]);
    }
    c.insert(c.end(), storage_counters.begin(), storage_counters.end());
    return c;
}

std::string statistics_snapshot::summary() const {
    std::string s = "hits=" + std::to_string(hits) + " misses=" + std::to_string(total_misses());
    s += nonzero_counts<miss_reason>(misses);
    s += " stores=" + std::to_string(stores);
    s += " store-failures=" + std::to_string(total_store_failures());
    s += nonzero_counts<store_failure>(store_failures);
    s += " bypasses=" + std::to_string(bypasses);
    std::string reasons;
    for (auto const& [why, n] : bypass_reasons)
        reasons += std::string(reasons.empty() ? "" : "; ") + why + "=" + std::to_string(n);
    if (!reasons.empty()) s += " (" + reasons + ")";
    s += " bytes-read=" + std::to_string(bytes_read) + " bytes-written=" + std::to_string(bytes_written);
    if (hits)
        s += " hit-ms=(read " + format_ms(hit_read_ns) + " verify " + format_ms(hit_verify_ns) + " deserialize " +
             format_ms(hit_deserialize_ns) + " relocate " + format_ms(hit_relocate_ns) + ")";
    if (verified + unsound + nondeterministic != 0)
        s += " verify=(verified " + std::to_string(verified) + " unsound " + std::to_string(unsound) +
             " nondeterministic " + std::to_string(nondeterministic) + ")";
    if (verify_failed != 0) s += " verify-failed=" + std::to_string(verify_failed);
    if (records_ignored != 0) s += " records-ignored=" + std::to_string(records_ignored);
    if (stores_skipped_cheap != 0) s += " store-skipped-cheap=" + std::to_string(stores_skipped_cheap);
    if (waited + took_over + wait_timeouts != 0)
        s += " waited=" + std::to_string(waited) + " wait-ms=" + format_ms(wait_ns) +
             " took-over=" + std::to_string(took_over) + " wait-timeout=" + std::to_string(wait_timeouts);
    if (hits) s += " saved-ms=" + format_ms(saved_ns());
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

std::string statistics_snapshot::format_ms(std::uint64_t ns) {
    std::uint64_t us = ns / 1000;
    std::string frac = std::to_string(us % 1000);
    return std::to_string(us / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

void statistics::bypassed(std::string const& reason) noexcept {
    add(detail::counter::bypasses);
    try {
        std::unique_lock<std::timed_mutex> lock(bypass_mutex_, bypass_wait);
        if (lock.owns_lock()) ++bypass_reasons_[reason];
    } catch (...) {
        // The count above stands; only the breakdown by reason is lost.
    }
}

statistics_snapshot statistics::snapshot() const {
    statistics_snapshot s;
    for (std::size_t i = 0; i < detail::counter_count; ++i)
        s.*detail::counter_table[i].field = counts_[i].load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < miss_reason_count; ++i) s.misses[i] = misses_[i].load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < store_failure_count; ++i)
        s.store_failures[i] = store_failures_[i].load(std::memory_order_relaxed);
    std::unique_lock<std::timed_mutex> lock(bypass_mutex_, bypass_wait);
    if (lock.owns_lock()) s.bypass_reasons = bypass_reasons_;
    return s;
}

void statistics::rebase() const noexcept {
    unsigned const g = detail::fork_generation();
    if (rebasing_.exchange(g, std::memory_order_acq_rel) == g) return; // another thread takes them
    for (std::size_t i = 0; i < counts_.size(); ++i)
        base_counts_[i].store(counts_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    for (std::size_t i = 0; i < misses_.size(); ++i)
        base_misses_[i].store(misses_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    for (std::size_t i = 0; i < store_failures_.size(); ++i)
        base_store_failures_[i].store(store_failures_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    generation_.store(g, std::memory_order_release);
}

bool statistics::counted_here(statistics_snapshot& s) const {
    if (forked()) rebase();
    for (int tries = 0; forked(); ++tries) { // (another thread is taking them: a moment)
        if (tries == 1000) return false;
        std::this_thread::yield();
    }
    auto const since = [](std::atomic<std::uint64_t> const& now, std::atomic<std::uint64_t> const& base) {
        std::uint64_t const n = now.load(std::memory_order_relaxed), b = base.load(std::memory_order_relaxed);
        return n > b ? n - b : 0;
    };
    for (std::size_t i = 0; i < detail::counter_count; ++i)
        s.*detail::counter_table[i].field = since(counts_[i], base_counts_[i]);
    for (std::size_t i = 0; i < miss_reason_count; ++i) s.misses[i] = since(misses_[i], base_misses_[i]);
    for (std::size_t i = 0; i < store_failure_count; ++i)
        s.store_failures[i] = since(store_failures_[i], base_store_failures_[i]);
    return true;
}

} // namespace compile_cache

#endif
