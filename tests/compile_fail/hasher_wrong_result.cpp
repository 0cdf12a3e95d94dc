// expect: compile_cache: the Hasher has no result member returning its result_type
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>

struct digest_member { // result is named digest, and returns void anyway
    using result_type = std::array<unsigned char, 32>;
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    void digest(unsigned char*) {}
};

static_assert(compile_cache::check_hasher<digest_member>::value);
