// Control for run.sh: a complete Hasher must compile, so a failure of the others is
// the check firing, not a broken command line.
// expect: success
#include <compile_cache/hasher/concept.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <array>
#include <cstddef>

struct complete_hasher {
    using result_type = std::array<unsigned char, 16>;
    static constexpr int block_size = 64;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<complete_hasher>::value);
static_assert(compile_cache::check_hasher<compile_cache::sha256>::value);
