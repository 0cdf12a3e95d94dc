// expect: compile_cache: the Hasher is not default constructible
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>

struct needs_an_argument {
    using result_type = std::array<unsigned char, 32>;
    static constexpr int block_size = 64;
    explicit needs_an_argument(int) {}
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<needs_an_argument>::value);
