// Hashers of the shapes the library accepts beyond byte arrays, written here so that
// tests can compose them: an integer result (FNV-1a 64, as Boost.Hash2's fnv1a_64) and
// a struct result without block_size, fed through std::uint8_t pointers (as XXH3-128).
#pragma once

#include <cstddef>
#include <cstdint>

namespace compile_cache_test {

/// FNV-1a, 64 bits: an integer result, the shape of Boost.Hash2's fnv1a_64.
struct fnv1a_64 {
    using result_type = std::uint64_t;
    static constexpr int block_size = 1;
    std::uint64_t state = 0xcbf29ce484222325ull;

    void update(void const* p, std::size_t n) noexcept {
        auto const* bytes = static_cast<unsigned char const*>(p);
        for (std::size_t i = 0; i < n; ++i) state = (state ^ bytes[i]) * 0x100000001b3ull;
    }
    result_type result() { return state; }
};

/// Two FNV-1a lanes with different starting points: a struct result without padding
/// (the shape of XXH128_hash_t), no block_size, and update on std::uint8_t bytes.
struct two_lanes {
    std::uint64_t low64;
    std::uint64_t high64;
};
struct fnv1a_two_lanes {
    using result_type = two_lanes;
    std::uint64_t low = 0xcbf29ce484222325ull;
    std::uint64_t high = 0x84222325cbf29ce4ull;

    void update(std::uint8_t const* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            low = (low ^ p[i]) * 0x100000001b3ull;
            high = (high ^ static_cast<std::uint8_t>(p[i] + 1)) * 0x100000001b3ull;
        }
    }
    result_type result() { return {low, high}; }
};

} // namespace compile_cache_test
