// compile_cache: reading a secret from a file, the way PREFIX_SECRET_FILE (the key
// that authenticates entries) and a Redis password file are read, for hosts and tools
// that take a secret file of their own.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

namespace compile_cache {

/// A secret file larger than this is refused: it is not a secret but the wrong file.
inline constexpr std::size_t max_secret_file_size = std::size_t{64} << 10;

/// Reads the whole secret file at `path` into `secret`. On failure returns why (one
/// phrase) and leaves `secret` empty; an empty file is a failure too.
inline std::string read_secret_file(std::string const& path, std::string& secret) {
    secret.clear();
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return std::string("cannot open it: ") + std::strerror(errno);
    char buffer[4096];
    bool too_large = false;
    while (!too_large) {
        std::size_t const n = std::fread(buffer, 1, sizeof buffer, f);
        secret.append(buffer, n);
        too_large = secret.size() > max_secret_file_size;
        if (n < sizeof buffer) break;
    }
    int const read_errno = std::ferror(f) ? errno : 0;
    bool const failed = std::ferror(f) != 0;
    std::fclose(f);
    std::string why;
    if (failed)
        why = std::string("cannot read it: ") + std::strerror(read_errno != 0 ? read_errno : EIO);
    else if (too_large)
        why = "it is larger than 64 KiB, so it is not a secret (the wrong file?)";
    else if (secret.empty())
        why = "it is empty";
    if (!why.empty()) {
        std::fill(secret.begin(), secret.end(), '\0');
        secret.clear();
    }
    return why;
}
} // namespace compile_cache
