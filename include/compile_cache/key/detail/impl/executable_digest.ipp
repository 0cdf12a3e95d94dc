// compile_cache: the definitions of key/detail/executable_digest.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <cstdio>

namespace compile_cache::detail {

std::string file_sha256_id(char const* path) noexcept {
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

std::string const& main_program_file_id() noexcept {
    // Never destroyed: a cache of static storage duration builds keys at exit too.
    static std::string const& id = *new std::string(file_sha256_id("/proc/self/exe"));
    return id;
}

} // namespace compile_cache::detail
#endif
