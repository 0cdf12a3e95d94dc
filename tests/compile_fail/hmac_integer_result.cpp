// expect: compile_cache: hmac<H> needs H's result_type to be bytes
// An integer result is a Hasher's (keys take its little-endian bytes), but HMAC pads
// and feeds the inner digest as bytes: hmac<H> says so instead of failing inside.
#include <compile_cache/hasher/hmac.hpp>

#include <cstddef>
#include <cstdint>

struct integer_hasher {
    using result_type = std::uint64_t;
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return 0; }
};

static_assert(compile_cache::check_hasher<integer_hasher>::value);
static_assert(sizeof(compile_cache::hmac<integer_hasher>) > 0);
