// expect: compile_cache: the Hasher's result_type is larger than 64 bytes
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>

struct result_too_large {
    using result_type = std::array<unsigned char, 128>;
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<result_too_large>::value);
