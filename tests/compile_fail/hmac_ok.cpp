// Control for run.sh: hmac over a byte-result Hasher compiles and is itself a Hasher.
// expect: success
#include <compile_cache/hasher/hmac.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <array>
#include <cstddef>

struct byte_hasher {
    using result_type = std::array<unsigned char, 16>;
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<compile_cache::hmac<byte_hasher>>::value);
static_assert(compile_cache::check_hasher<compile_cache::hmac<compile_cache::sha256>>::value);
