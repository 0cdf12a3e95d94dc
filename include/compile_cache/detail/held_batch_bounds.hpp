// compile_cache: the bounds of a batch of writes a process holds before it makes them,
// one set for directory_storage's deferred writes and the identity records a cache holds
// over it, so that the two batches are bounded alike.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace compile_cache::detail {

/// The steady clock in nanoseconds, on which a held batch's age is measured (and the
/// other intervals of the held batches: how often a directory looks at its record packs).
inline std::int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// A held batch is written by the write that brings it to max_keys keys or max_bytes
/// bytes, or that finds its oldest write max_age_ns old: which also bounds the memory
/// it takes. No setting changes them.
struct held_batch_bounds {
    static constexpr std::size_t max_keys = 256;
    static constexpr std::size_t max_bytes = std::size_t{4} << 20;
    static constexpr std::int64_t max_age_ns = std::int64_t{10} * 1000000000;

    /// Whether a batch of `keys` keys and `bytes` bytes, whose oldest write was held
    /// `age_ns` ago, is due to be written.
    static constexpr bool due(std::size_t keys, std::size_t bytes, std::int64_t age_ns) noexcept {
        return keys >= max_keys || bytes >= max_bytes || age_ns >= max_age_ns;
    }
};

} // namespace compile_cache::detail
