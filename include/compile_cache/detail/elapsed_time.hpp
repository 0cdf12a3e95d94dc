// compile_cache: durations on the steady clock in nanoseconds, as the statistics count them.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <chrono>
#include <cstdint>

namespace compile_cache::detail {

/// The nanoseconds from `from` to `to` (the steady clock: never negative when `to` is later).
inline std::uint64_t ns_between(std::chrono::steady_clock::time_point from,
                                std::chrono::steady_clock::time_point to) noexcept {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

/// The nanoseconds since `since`.
inline std::uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) noexcept {
    return ns_between(since, std::chrono::steady_clock::now());
}

} // namespace compile_cache::detail
