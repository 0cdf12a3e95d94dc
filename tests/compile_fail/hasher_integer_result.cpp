// Control for run.sh: hashes Boost.Hash2 and C libraries ship are Hashers as they are,
// an integer result (fnv1a_64's shape), a struct result without padding
// (XXH128_hash_t's shape), no block_size, update on std::uint8_t or std::byte.
// expect: success
#include <compile_cache/cache.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <cstddef>
#include <cstdint>

struct integer_result { // the shape of Boost.Hash2's fnv1a_64
    using result_type = std::uint64_t;
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return 0; }
};

struct two_words {
    std::uint64_t low64;
    std::uint64_t high64;
};
struct struct_result { // the shape of XXH3-128: a struct result, no block_size, uint8_t bytes
    using result_type = two_words;
    void update(std::uint8_t const*, std::size_t) {}
    result_type result() { return {}; }
};

struct byte_update {
    using result_type = std::uint32_t;
    void update(std::byte const*, std::size_t) {}
    result_type result() { return 0; }
};

static_assert(compile_cache::check_hasher<integer_result>::value);
static_assert(compile_cache::check_hasher<struct_result>::value);
static_assert(compile_cache::check_hasher<byte_update>::value);
static_assert(sizeof(compile_cache::basic_cache<integer_result, compile_cache::boost_binary, compile_cache::registry,
                                                compile_cache::directory_storage>) > 0);
static_assert(sizeof(compile_cache::key_builder<struct_result>) > 0);
#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
static_assert(compile_cache::Hasher<integer_result> && compile_cache::Hasher<struct_result>);
#endif

int main() {
    compile_cache::key_builder<struct_result> kb;
    return kb.add("ir", 1).finish().ok() ? 0 : 1;
}
