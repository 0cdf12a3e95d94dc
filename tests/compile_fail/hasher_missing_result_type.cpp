// expect: compile_cache: the Hasher has no result_type member type
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>

struct no_result_type {
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    std::array<unsigned char, 32> result() { return {}; }
};

static_assert(compile_cache::check_hasher<no_result_type>::value);
