// compile_cache: the definitions of secret_file.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <unistd.h>

namespace compile_cache {

std::string read_secret_file(std::string const& path, std::string& secret) {
    secret.clear();
    int const fd = detail::retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); });
    if (fd < 0) return std::string("cannot open it: ") + std::strerror(errno);
    detail::file_descriptor const guard{fd};
    // Anyone on the machine could have put their secret there (ssh refuses such a key).
    struct stat st {};
    if (::fstat(fd, &st) == 0 && (st.st_mode & S_IWOTH) != 0)
        return "any user can write it, so it may not be the secret (chmod o-w it; 0600 or 0400 is usual)";
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

#endif // COMPILE_CACHE_INCLUDE_IMPL
