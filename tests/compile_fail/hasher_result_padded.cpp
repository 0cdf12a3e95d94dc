// expect: compile_cache: the Hasher's result_type is not a digest
// A struct with padding: the padding's bytes are indeterminate, so equal digests could
// give different keys. Refused, as floating point and bool are.
#include <compile_cache/hasher/concept.hpp>

#include <cstddef>
#include <cstdint>

struct padded {
    std::uint8_t tag;
    std::uint64_t value;
};

struct padded_result {
    using result_type = padded;
    void update(void const*, std::size_t) {}
    result_type result() { return {}; }
};

static_assert(compile_cache::check_hasher<padded_result>::value);
