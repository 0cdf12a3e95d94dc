// One sound entry in a directory cache, for the tests that damage, replace or forge
// it: the cache, the entry's key, path and bytes, and what a load of it must show.
#pragma once

#include "catch2_compat.hpp"
#include "support/model.hpp"
#include "support/posix.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/default_cache.hpp>

#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace compile_cache_test {

/// A key made without the toolchain component, so that caches with different
/// serializers or secrets agree on it (make_key_builder would tell them apart).
inline compile_cache::key_result plain_key(std::string const& ir) {
    return compile_cache::key_builder<>().add("ir", ir).finish();
}

inline compile_cache::entry_info const axpy_info{"axpy", "blas.dsl", 7};

/// Loads `k` through `c` and says whether that was exactly one miss, by `reason`, with
/// nothing deserialized.
inline bool misses_with(compile_cache::default_cache& c, compile_cache::key_result const& k,
                        compile_cache::miss_reason reason) {
    compile_cache::statistics_snapshot const before = c.stats();
    int const deserialized = model::kernels_deserialized;
    std::optional<model::compiled_kernel> loaded = c.load<model::compiled_kernel>(k, axpy_info);
    compile_cache::statistics_snapshot const after = c.stats();
    return !loaded && after.miss_count(reason) == before.miss_count(reason) + 1 &&
           after.total_misses() == before.total_misses() + 1 && after.hits == before.hits &&
           model::kernels_deserialized == deserialized;
}

/// A directory cache made with `options`, with one sound entry (small_kernel()) in it,
/// and the entry's bytes.
struct stored_entry {
    temp_dir dir;
    std::filesystem::path root = dir.path() / "cache";
    compile_cache::default_cache cache;
    compile_cache::key_result k = plain_key("axpy(a,x,y) = a*x+y");
    std::filesystem::path path = cache.storage().entry_path(k.value());
    std::string sound;

    explicit stored_entry(compile_cache::cache_options const& options = {})
        : cache(compile_cache::directory_storage(root.string()), options) {
        REQUIRE(cache.store(k, model::small_kernel(), axpy_info));
        sound = read_file(path);
    }

    bool misses_with(compile_cache::miss_reason reason) { return compile_cache_test::misses_with(cache, k, reason); }

    /// Writes `body` sealed with a valid unkeyed check value (as a later release, or a
    /// writer without the secret, would seal it) and says whether a load of it was
    /// exactly one miss by `reason`.
    bool misses_when_resealed(std::string body, compile_cache::miss_reason reason) {
        compile_cache::detail::append_envelope_check(body);
        write_file(path, body);
        return misses_with(reason);
    }

    /// Writes the entry with each byte in turn XORed with each of `masks`; the offsets
    /// at which a load was not exactly one miss by `reason`. Leaves the file damaged.
    std::vector<std::size_t> flips_not_missed(std::initializer_list<unsigned> masks, compile_cache::miss_reason reason) {
        std::vector<std::size_t> accepted;
        for (std::size_t i = 0; i < sound.size(); ++i)
            for (unsigned mask : masks) {
                std::string damaged = sound;
                damaged[i] = static_cast<char>(static_cast<unsigned char>(damaged[i]) ^ mask);
                write_file(path, damaged);
                if (!misses_with(reason)) accepted.push_back(i);
            }
        return accepted;
    }

    /// Writes the entry cut to each length in turn; the lengths at which a load was not
    /// exactly one miss by `reason`. Leaves the file truncated.
    std::vector<std::size_t> truncations_not_missed(compile_cache::miss_reason reason) {
        std::vector<std::size_t> accepted;
        for (std::size_t n = 0; n < sound.size(); ++n) {
            write_file(path, sound.substr(0, n));
            if (!misses_with(reason)) accepted.push_back(n);
        }
        return accepted;
    }
};

} // namespace compile_cache_test
