// Helpers shared by the benchmarks: deterministic data, scratch directories, a
// sanity check of the hash backends before anything is measured.
#pragma once

#include <compile_cache/hasher/sha256.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace bench {

inline std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed) {
    std::mt19937_64 random(seed);
    std::vector<unsigned char> v(n);
    for (auto& b : v) b = static_cast<unsigned char>(random());
    return v;
}

inline std::string random_string(std::size_t n, unsigned seed) {
    auto const v = random_bytes(n, seed);
    return std::string(v.begin(), v.end());
}

/// A fresh directory under $COMPILE_CACHE_BENCH_DIR (scripts/bench.sh points it
/// into the build tree: a real disk, as a cache would use), else $TMPDIR or /tmp;
/// removed with everything in it at the end, unless COMPILE_CACHE_BENCH_KEEP=1:
/// scripts/bench.sh removes them all after the last benchmark instead, because ext4
/// makes every file creation slower for a while after a mass deletion (the
/// allocator skips recently deleted inodes), which would tax the next process.
class scratch_dir {
public:
    explicit scratch_dir(char const* tag) {
        char const* base = std::getenv("COMPILE_CACHE_BENCH_DIR");
        if (base == nullptr || *base == '\0') base = std::getenv("TMPDIR");
        if (base == nullptr || *base == '\0') base = "/tmp";
        std::filesystem::create_directories(base);
        std::string templ = std::string(base) + "/cc-bench-" + tag + "-XXXXXX";
        if (::mkdtemp(templ.data()) == nullptr) {
            std::perror("mkdtemp");
            std::exit(2);
        }
        path_ = templ;
    }
    scratch_dir(scratch_dir const&) = delete;
    scratch_dir& operator=(scratch_dir const&) = delete;
    ~scratch_dir() {
        char const* keep = std::getenv("COMPILE_CACHE_BENCH_KEEP");
        if (keep != nullptr && std::string(keep) == "1") return;
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string const& path() const noexcept { return path_; }

private:
    std::string path_;
};

/// Every available SHA-256 backend gives the standard digest of "abc".
inline bool check_sha256_backends() {
    using compile_cache::sha256_backend;
    auto const before = compile_cache::sha256_implementation();
    static constexpr unsigned char abc[32] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
        0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    bool ok = true;
    for (auto b : {sha256_backend::portable, sha256_backend::x86_sha_ni, sha256_backend::arm_sha2}) {
        if (!compile_cache::set_sha256_implementation(b)) continue;
        auto const d = compile_cache::sha256_digest("abc", 3);
        if (!std::equal(d.begin(), d.end(), abc)) {
            std::fprintf(stderr, "sha256 backend %s gives a wrong digest\n", compile_cache::to_string(b));
            ok = false;
        }
    }
    compile_cache::set_sha256_implementation(before);
    return ok;
}

} // namespace bench
