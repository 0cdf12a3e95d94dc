// compile_cache: the POSIX reading the library does in more than one place: a call
// retried through interruptions, a file's modification time, and a bounded read of a
// whole file.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace compile_cache::detail {

/// Calls `call()` again while it fails with EINTR (a negative result and errno EINTR);
/// returns its first other result. Bounded: a signal does not arrive forever.
template <class Call>
auto retry_on_eintr(Call&& call) noexcept(noexcept(call())) -> decltype(call()) {
    for (;;) {
        auto const r = call();
        if (!(r < 0 && errno == EINTR)) return r;
    }
}

/// A stat's modification time, in nanoseconds since the epoch.
inline std::int64_t mtime_ns(struct stat const& st) noexcept {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// Opens `path` (relative to `dir_fd`; AT_FDCWD for the working directory) to read it:
/// without following a final symlink (ELOOP) and without blocking on a FIFO planted
/// there (O_NONBLOCK has no effect on a regular file). A descriptor, or -1 and errno.
inline int open_no_follow(int dir_fd, char const* path) noexcept {
    return retry_on_eintr([&] { return ::openat(dir_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK); });
}

/// Reads up to n bytes into p, through partial reads and interruptions: the number read
/// (fewer at the end of the file), or -1 and errno.
COMPILE_CACHE_DECL ssize_t read_up_to(int fd, char* p, std::size_t n) noexcept;

/// Reads exactly n bytes at `offset` into p, through partial reads and interruptions:
/// false (errno set; EIO when the file ends first) when it cannot.
COMPILE_CACHE_DECL bool read_exactly_at(int fd, char* p, std::size_t n, std::uint64_t offset) noexcept;

/// Owns a file descriptor: closed when it goes out of scope.
struct file_descriptor {
    int fd = -1;
    file_descriptor() noexcept = default;
    explicit file_descriptor(int descriptor) noexcept : fd(descriptor) {}
    file_descriptor(file_descriptor const&) = delete;
    file_descriptor& operator=(file_descriptor const&) = delete;
    ~file_descriptor() {
        if (fd >= 0) ::close(fd);
    }
    explicit operator bool() const noexcept { return fd >= 0; }
};

enum class file_read_status {
    read,        ///< `out` holds the file (shorter than its size if it shrank meanwhile)
    not_regular, ///< a directory, FIFO, device...: nothing read
    too_large,   ///< over the bound: nothing read
    error,       ///< fstat or read failed (errno set)
};

/// fstat of the file open at `fd` into `st`, and whether it is a regular file of at
/// most `max` bytes (`read`: it may be read).
COMPILE_CACHE_DECL file_read_status stat_regular_file(int fd, std::uint64_t max, struct stat& st) noexcept;

/// Reads the `size` bytes stat_regular_file allowed into `out` (fewer if the file
/// shrank meanwhile). `out`'s old bytes are overwritten, not cleared first, so that
/// reusing a buffer skips zero-filling it. False (errno set, `out` empty) on an error.
COMPILE_CACHE_DECL bool read_file_bytes(int fd, std::string& out, std::size_t size);

/// The whole regular file open at `fd`, at most `max` bytes, into `out` (empty unless
/// `read`); `st` is its fstat, for the caller's own use.
COMPILE_CACHE_DECL file_read_status read_regular_file(int fd, std::string& out, std::uint64_t max, struct stat& st);

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/posix_io.ipp>
