// expect: compile_cache: the Hasher's block_size is not an integral constant
// block_size is optional, but one that is there must be a constant: here it is a
// data member of each object.
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>

struct block_size_member {
    using result_type = std::array<unsigned char, 32>;
    std::size_t block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<block_size_member>::value);
