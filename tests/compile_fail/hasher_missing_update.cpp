// expect: compile_cache: the Hasher has no usable update member; expected `void update(void const* data, std::size_t n)`
#include <compile_cache/hasher/concept.hpp>

#include <array>
#include <cstddef>
#include <string_view>

struct view_update { // takes a string_view: not a pointer and a length
    using result_type = std::array<unsigned char, 32>;
    static constexpr int block_size = 64;
    void update(std::string_view) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<view_update>::value);
