// expect: compile_cache: the Hasher has no block_size static constant
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>

struct no_block_size {
    using result_type = std::array<unsigned char, 32>;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<no_block_size>::value);
