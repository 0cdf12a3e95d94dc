// expect: compile_cache: the Hasher has no usable update member; expected `void update(void const* data, std::size_t n)`
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>

struct typed_update { // takes unsigned char const*, so update(void const*, n) does not compile
    using result_type = std::array<unsigned char, 32>;
    static constexpr int block_size = 64;
    void update(unsigned char const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<typed_update>::value);
