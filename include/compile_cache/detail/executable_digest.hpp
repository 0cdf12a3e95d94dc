// compile_cache: the running program identified by the SHA-256 of its executable
// file, for when it has no build-id to identify it (detail/build_id.hpp).
#pragma once

#include <compile_cache/hasher/sha256.hpp>

#include <cstdio>
#include <string>

namespace compile_cache::detail {

/// "exe-sha256:" and the lower-case hex SHA-256 of the file at `path`; empty when it
/// cannot be read to its end. Never throws.
inline std::string file_sha256_id(char const* path) noexcept {
    try {
        std::FILE* f = std::fopen(path, "rb");
        if (f == nullptr) return {};
        sha256 h;
        static thread_local unsigned char buffer[1 << 16];
        std::size_t n;
        while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) h.update(buffer, n);
        bool const complete = std::feof(f) != 0 && std::ferror(f) == 0;
        std::fclose(f);
        if (!complete) return {};
        static constexpr char digits[] = "0123456789abcdef";
        std::string out = "exe-sha256:";
        for (unsigned char b : h.result()) {
            out.push_back(digits[b >> 4]);
            out.push_back(digits[b & 15]);
        }
        return out;
    } catch (...) {
        return {};
    }
}

/// The running program's executable, hashed once per process: /proc/self/exe where
/// there is a /proc (Linux, and other systems that mount one); empty elsewhere.
inline std::string const& main_program_file_id() noexcept {
    static std::string const id = file_sha256_id("/proc/self/exe");
    return id;
}

} // namespace compile_cache::detail
