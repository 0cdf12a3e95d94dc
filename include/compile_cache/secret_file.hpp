// compile_cache: reading a secret from a file, the way PREFIX_SECRET_FILE (the key
// that authenticates entries) and a Redis password file are read, for hosts and tools
// that take a secret file of their own.
#pragma once

#include <compile_cache/detail/posix_io.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace compile_cache {

/// A secret file larger than this is refused: it is not a secret but the wrong file.
inline constexpr std::size_t max_secret_file_size = std::size_t{64} << 10;

/// How long a pipe or FIFO named as a secret file (`<(command)`) may take to deliver
/// the secret and close: reading it never blocks longer.
inline constexpr std::chrono::milliseconds secret_pipe_timeout{1000};

/// Reads the whole secret file at `path` into `secret`. On failure returns why (one
/// phrase) and leaves `secret` empty; an empty file is a failure too. A pipe or FIFO
/// is read until its writer closes it, within secret_pipe_timeout (a FIFO that no
/// program has open for writing reads as empty).
inline std::string read_secret_file(std::string const& path, std::string& secret) {
    secret.clear();
    int const fd = detail::retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); });
    if (fd < 0) return std::string("cannot open it: ") + std::strerror(errno);
    detail::file_descriptor const guard{fd};
    auto const deadline = std::chrono::steady_clock::now() + secret_pipe_timeout;
    std::string why;
    char buffer[4096];
    for (;;) {
        ssize_t const n = detail::retry_on_eintr([&] { return ::read(fd, buffer, sizeof buffer); });
        if (n > 0) {
            secret.append(buffer, static_cast<std::size_t>(n));
            if (secret.size() > max_secret_file_size) {
                why = "it is larger than 64 KiB, so it is not a secret (the wrong file?)";
                break;
            }
            continue;
        }
        if (n == 0) break;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            why = std::string("cannot read it: ") + std::strerror(errno);
            break;
        }
        // A pipe whose writer has not written or closed yet: wait for it, boundedly.
        auto const left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            why = "its writer did not deliver it and close within 1 s (a pipe or FIFO)";
            break;
        }
        pollfd p{fd, POLLIN, 0};
        detail::retry_on_eintr([&] { return ::poll(&p, 1, static_cast<int>(left)); });
    }
    if (why.empty() && secret.empty()) why = "it is empty";
    if (!why.empty()) {
        std::fill(secret.begin(), secret.end(), '\0');
        secret.clear();
    }
    return why;
}

} // namespace compile_cache
