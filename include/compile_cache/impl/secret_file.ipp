// compile_cache: the definitions of secret_file.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <unistd.h>

namespace compile_cache {

namespace detail {

/// Why a file of status `st` is refused under `rule` (read_secret_file), or empty.
COMPILE_CACHE_DECL std::string secret_file_refusal(struct stat const& st, secret_file_rule rule) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    switch (rule) {
    case secret_file_rule::trusted_keys:
        // Whoever may change the file may add their own key to those this host trusts.
        if (st.st_uid != ::geteuid() && st.st_uid != 0)
            return "it is owned by user id " + std::to_string(st.st_uid) +
                   ", neither this user nor root, who could add their own key to it (chown it to this user or root)";
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
            return std::string("its mode ") + mode +
                   " lets other users write it, who could add their own key to it (chmod go-w it; 0644 is usual)";
        return {};
    case secret_file_rule::signing_key:
        if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
            return std::string("its mode ") + mode +
                   " opens it to other users, and a signing key must be its owner's alone (chmod go= it; 0600 or "
                   "0400 is usual)";
        return {};
    case secret_file_rule::hmac_secret:
        if ((st.st_mode & S_IROTH) != 0)
            return std::string("its mode ") + mode +
                   " lets any user read it, and with the secret forge entries (chmod o= it; 0600, or 0640 for the "
                   "group that shares the cache)";
        break;
    case secret_file_rule::not_world_writable: break;
    }
    // Anyone on the machine could have put their secret there (ssh refuses such a key).
    if ((st.st_mode & S_IWOTH) != 0)
        return "any user can write it, so it may not be the secret (chmod o-w it; 0600 or 0400 is usual)";
    return {};
}

} // namespace detail

std::string read_secret_file(std::string const& path, std::string& secret, secret_file_rule rule) {
    secret.clear();
    int const fd = detail::retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); });
    if (fd < 0) return std::string("cannot open it: ") + std::strerror(errno);
    detail::file_descriptor const guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return std::string("cannot read it: ") + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) { // (a directory: "cannot read it: Is a directory" below)
        std::string refused = detail::secret_file_refusal(st, rule);
        if (!refused.empty()) return refused;
    }
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

std::string read_secret_file(std::string const& path, std::string& secret) {
    return read_secret_file(path, secret, secret_file_rule::not_world_writable);
}

} // namespace compile_cache

#endif // COMPILE_CACHE_INCLUDE_IMPL
