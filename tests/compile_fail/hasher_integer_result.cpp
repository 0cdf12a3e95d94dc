// expect: compile_cache: the Hasher's result_type is not a contiguous byte container
#include <compile_cache/hasher/concept.hpp>

#include <cstddef>
#include <cstdint>

struct integer_result { // the shape of Boost.Hash2's fnv1a_64
    using result_type = std::uint64_t;
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return 0; }
};

static_assert(compile_cache::check_hasher<integer_result>::value);
