// The storage tests' model, shared with their helper programs (tests/helpers/storage_*.cpp):
// an artifact that carries its key's expected content, so that any process can
// check what it loaded, and the cache type they all use.
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/string.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace storage_test {

namespace cc = compile_cache;

/// A compiled "kernel": its id, which variant wrote it, and a payload that is a
/// function of both, so a load can be checked byte for byte.
struct artifact {
    std::uint32_t id = 0;
    std::uint32_t variant = 0;
    std::string payload;

    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & id & variant & payload;
    }
};

/// Bytes that depend on (id, variant) at every position.
inline std::string payload_of(std::uint32_t id, std::uint32_t variant, std::size_t size) {
    std::string s(size, '\0');
    std::uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1) ^ (0xc2b2ae3d27d4eb4full * (variant + 1));
    for (std::size_t i = 0; i < size; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s[i] = static_cast<char>(x);
    }
    return s;
}

/// The payload size of `id` within [min_size, max_size).
inline std::size_t size_of(std::uint32_t id, std::size_t min_size, std::size_t max_size) {
    if (max_size <= min_size) return min_size;
    return min_size + (static_cast<std::size_t>(id) * 2654435761u) % (max_size - min_size);
}

inline artifact make_artifact(std::uint32_t id, std::uint32_t variant, std::size_t size) {
    return artifact{id, variant, payload_of(id, variant, size)};
}

/// True when `a` is exactly what (id, some variant) compiles to, at the size given.
inline bool is_right(artifact const& a, std::uint32_t id, std::size_t size) {
    return a.id == id && a.payload.size() == size && a.payload == payload_of(id, a.variant, size);
}

using cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage>;

/// The key of `id`, independent of the program that computes it (no toolchain
/// component), so that the test and its helpers agree on it.
inline cc::key_result key_of(std::uint32_t id) {
    return cc::key_builder<cc::sha256>().add("storage-test-id", id).finish();
}

} // namespace storage_test
