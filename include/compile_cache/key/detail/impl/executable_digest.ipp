// compile_cache: the definitions of key/detail/executable_digest.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <cerrno>

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

namespace compile_cache::detail {

std::string fd_sha256_id(int fd) noexcept {
    try {
        sha256 h;
        static thread_local unsigned char buffer[1 << 16];
        off_t at = 0;
        for (;;) {
            ssize_t const n = ::pread(fd, buffer, sizeof buffer, at);
            if (n == 0) break;
            if (n < 0) {
                if (errno == EINTR) continue;
                return {};
            }
            h.update(buffer, static_cast<std::size_t>(n));
            at += n;
        }
        static constexpr char digits[] = "0123456789abcdef";
        std::string out = "sha256:";
        for (unsigned char b : h.result()) {
            out.push_back(digits[b >> 4]);
            out.push_back(digits[b & 15]);
        }
        return out;
    } catch (...) {
        return {};
    }
}

std::string file_sha256_id(char const* path) noexcept {
    try {
        int const fd = ::open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return {};
        std::string const id = fd_sha256_id(fd);
        ::close(fd);
        return id.empty() ? id : "exe-" + id;
    } catch (...) {
        return {};
    }
}

std::string const& main_program_file_id() noexcept {
    // Never destroyed: a cache of static storage duration builds keys at exit too. Made
    // without a static's guard: a child forked while another thread reads the program
    // would wait for ever (made_once).
    static std::atomic<std::string const*> id{nullptr};
    try {
        return made_once(id, [] { return std::make_unique<std::string const>(file_sha256_id("/proc/self/exe")); });
    } catch (...) { // (std::bad_alloc: not known, this time)
        static std::string const unknown;
        return unknown;
    }
}

} // namespace compile_cache::detail
#endif
