// expect: compile_cache: the Hasher's result_type is larger than 64 bytes
// A struct result is accepted up to 64 bytes, as a byte array is.
#include <compile_cache/hasher/concept.hpp>

#include <cstddef>
#include <cstdint>

struct nine_words {
    std::uint64_t words[9];
};

struct struct_too_large {
    using result_type = nine_words;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<struct_too_large>::value);
