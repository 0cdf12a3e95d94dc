// A host program whose cache compresses (zstd_compression), made by from_env as a host
// makes it, for the compression tests that need a fresh process (built only where
// libzstd is found, linked to compile_cache::zstd):
//
//   zstd_host PREFIX COUNT
//       stores ids 0..COUNT-1 (storage_model.hpp's artifact and key_of; each payload
//       4 KiB of text-like bytes, which compress) through
//       basic_cache<..., directory_storage, zstd_compression>::from_env(PREFIX); prints
//       "stored=N level=L" (L: the level its options say, "default" when unset) and
//       exits 0 when every store was made. The cache's own lines go to stderr.
#include "support/storage_model.hpp"

#include <compile_cache/compression/zstd.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace storage_test;

/// 4 KiB of words and numbers that depend on `id`: text a compressor shrinks.
std::string text_of(std::uint32_t id) {
    static char const* const words[] = {"load ", "store ", "add r1, r2 ", "mul ", "call @kernel_", "ret\n"};
    std::string s;
    std::uint32_t x = id * 2654435761u + 7;
    while (s.size() < 4096) {
        x = x * 1103515245u + 12345u;
        s += words[(x >> 16) % 6];
        s += std::to_string((x >> 8) % 64);
    }
    s.resize(4096);
    return s;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: zstd_host PREFIX COUNT\n");
        return 2;
    }
    using zstd_cache =
        cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::directory_storage, cc::zstd_compression>;
    auto const count = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
    std::uint32_t stored = 0;
    std::string level = "default";
    {
        zstd_cache c = zstd_cache::from_env(argv[1]);
        if (!c.enabled()) {
            std::printf("disabled\n");
            return 1;
        }
        if (c.options().compression_level) level = std::to_string(*c.options().compression_level);
        for (std::uint32_t id = 0; id < count; ++id)
            if (c.store(key_of(id), artifact{id, 0, text_of(id)})) ++stored;
    }
    std::printf("stored=%u level=%s\n", stored, level.c_str());
    return stored == count ? 0 : 1;
}
