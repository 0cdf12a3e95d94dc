// compile_cache: the POSIX pieces of directory_storage — exclusive temp files,
// `mkdir -p`, full writes, descriptor guards, the names the storage owns, and the
// size ledger (`DIR/.cc-stats`). Not part of the public interface.
#pragma once

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

namespace compile_cache::detail::directory_storage_impl {

inline std::error_code errno_code(int e) noexcept { return {e, std::generic_category()}; }

/// Wall-clock time without a system call on Linux (vDSO).
inline std::int64_t now_ns() noexcept {
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
inline std::int64_t now_s() noexcept { return now_ns() / 1000000000; }

inline std::int64_t mtime_ns(struct stat const& st) noexcept {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// What an entry of `size` bytes counts for against the size limit: whole 4 KiB
/// blocks, at least one, which is what it occupies on the usual file systems. The
/// same rule is used when a store adds an entry and when a scan counts it, so that
/// the two agree whatever the file system does.
inline std::uint64_t accounted_size(std::uint64_t size) noexcept {
    constexpr std::uint64_t block = 4096;
    if (size == 0) return block;
    return (size + block - 1) / block * block;
}

// ---- names -----------------------------------------------------------------

inline bool is_lower_hex_digit(char c) noexcept { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/// A fan-out folder: exactly two lower-case hex digits.
inline bool is_folder_name(std::string_view n) noexcept {
    return n.size() == 2 && is_lower_hex_digit(n[0]) && is_lower_hex_digit(n[1]);
}

/// An entry in fan-out folder `folder`: a key's lower-case hex (1 to 64 bytes, so 2
/// to 128 digits) that starts with the folder's two digits.
inline bool is_entry_name(std::string_view n, std::string_view folder) noexcept {
    if (n.size() < 2 || n.size() > 128 || n.size() % 2 != 0) return false;
    for (char c : n)
        if (!is_lower_hex_digit(c)) return false;
    return n.compare(0, 2, folder) == 0;
}

inline constexpr std::string_view temp_prefix = ".tmp-";
inline bool is_temp_name(std::string_view n) noexcept { return n.compare(0, temp_prefix.size(), temp_prefix) == 0; }

inline char const* folder_name(unsigned index) noexcept {
    static constexpr char names[256][3] = {
#define CC_F(h) {h, '0', 0}, {h, '1', 0}, {h, '2', 0}, {h, '3', 0}, {h, '4', 0}, {h, '5', 0}, {h, '6', 0}, \
                {h, '7', 0}, {h, '8', 0}, {h, '9', 0}, {h, 'a', 0}, {h, 'b', 0}, {h, 'c', 0}, {h, 'd', 0}, \
                {h, 'e', 0}, {h, 'f', 0}
        CC_F('0'), CC_F('1'), CC_F('2'), CC_F('3'), CC_F('4'), CC_F('5'), CC_F('6'), CC_F('7'),
        CC_F('8'), CC_F('9'), CC_F('a'), CC_F('b'), CC_F('c'), CC_F('d'), CC_F('e'), CC_F('f'),
#undef CC_F
    };
    return names[index & 0xff];
}

// ---- files -----------------------------------------------------------------

/// Creates `path` exclusively: an existing name, a symlink included (dangling or
/// not), makes it fail with EEXIST; nothing is ever followed or truncated.
inline int open_exclusive(std::string const& path, unsigned mode) noexcept {
    int fd;
    do {
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/// `mkdir -p` for `path`; an existing entry on the way is fine (if it is not a
/// directory, the open that follows says so). `path` is cut in place at its slashes
/// while working and restored before returning. When `exact_umask` is 0 or more, each
/// folder created is chmod-ed to `mode & ~exact_umask` (the process umask would
/// otherwise strip group bits). Returns 0 or an errno value; sets `created` when it
/// made at least one folder.
inline int make_directories(std::string& path, unsigned mode, int exact_umask, bool& created) noexcept {
    auto const m = static_cast<mode_t>(mode);
    auto try_mkdir = [&](std::size_t end) -> int { // mkdir of path[0, end)
        char const saved = path[end];
        path[end] = '\0';
        int const r = ::mkdir(path.c_str(), m);
        int const e = errno;
        if (r == 0) {
            created = true;
            if (exact_umask >= 0) ::chmod(path.c_str(), static_cast<mode_t>(mode & ~static_cast<unsigned>(exact_umask)));
        }
        path[end] = saved;
        return (r == 0 || e == EEXIST) ? 0 : e;
    };
    std::size_t const n = path.size();
    if (n == 0) return ENOENT;
    // Walk up until a mkdir stops failing with ENOENT: that ancestor now exists...
    std::size_t end = n;
    int e;
    for (;;) {
        e = try_mkdir(end);
        if (e != ENOENT) break;
        std::size_t slash = path.rfind('/', end - 1);
        while (slash != std::string::npos && slash > 0 && path[slash - 1] == '/') --slash;
        if (slash == std::string::npos || slash == 0) return e;
        end = slash;
    }
    if (e != 0) return e;
    // ...then walk back down creating each component below it.
    while (end < n) {
        std::size_t next = end;
        while (next < n && path[next] == '/') ++next;
        next = path.find('/', next);
        if (next == std::string::npos) next = n;
        if ((e = try_mkdir(next)) != 0) return e;
        end = next;
    }
    return 0;
}

/// Writes all of `bytes`, through partial writes and interruptions. Returns 0 or errno.
inline int write_all(int fd, char const* p, std::size_t left) noexcept {
    while (left > 0) {
        ssize_t const r = ::write(fd, p, left);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) return EIO; // a regular file never does this; do not spin
        p += r;
        left -= static_cast<std::size_t>(r);
    }
    return 0;
}

inline int fsync_fd(int fd) noexcept {
    int r;
    do {
        r = ::fsync(fd);
    } while (r != 0 && errno == EINTR);
    return r == 0 ? 0 : errno;
}

/// fsync of a directory, so that a rename or a creation in it survives a crash.
inline int fsync_directory(char const* path) noexcept {
    int const fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int const e = fsync_fd(fd);
    ::close(fd);
    return e;
}

/// Closes the descriptor and, unless committed, unlinks the temp file.
struct temp_file {
    int fd;
    char const* path;
    bool committed = false;

    temp_file(int descriptor, char const* file_path) noexcept : fd(descriptor), path(file_path) {}
    temp_file(temp_file const&) = delete;
    temp_file& operator=(temp_file const&) = delete;

    int close() noexcept {
        int const r = ::close(fd);
        fd = -1;
        return r == 0 ? 0 : errno;
    }
    ~temp_file() {
        if (fd >= 0) ::close(fd);
        if (!committed) ::unlink(path);
    }
};

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

/// flock, retried through interruptions. Returns 0 or errno (EWOULDBLOCK when
/// `nonblocking` and someone else holds it).
inline int lock_fd(int fd, bool nonblocking) noexcept {
    int r;
    do {
        r = ::flock(fd, LOCK_EX | (nonblocking ? LOCK_NB : 0));
    } while (r != 0 && errno == EINTR);
    return r == 0 ? 0 : errno;
}

/// The cache directory itself, opened for *at() calls and as the cleanup lock. The
/// lock (flock on the directory) is released when the descriptor is closed, so a
/// killed cleaner never leaves it held.
inline int open_root(std::string const& directory) noexcept {
    int fd;
    do {
        fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

// ---- the ledger --------------------------------------------------------------

/// `DIR/.cc-stats`: for each of the 256 fan-out folders, the bytes its entries count
/// for and when the folder was last counted by a scan. Stores add to their folder's
/// figure under an exclusive flock; a scan of a folder sets it. Little-endian, fixed
/// size; anything else found there is treated as a fresh ledger (every folder
/// uncounted), which the next scans fill in.
struct ledger_slot {
    std::uint64_t bytes = 0;
    std::int64_t counted_at = 0; ///< seconds since the epoch; 0 = never counted
};

inline constexpr char ledger_name[] = ".cc-stats";
inline constexpr char ledger_magic[8] = {'C', 'C', 'S', 'T', 'A', 'T', 'S', '1'};
inline constexpr std::size_t ledger_header = 16;
inline constexpr std::size_t ledger_bytes = ledger_header + 256 * 16;
/// A folder figure above this is garbage (a torn or foreign file), not a size.
inline constexpr std::uint64_t ledger_sane_limit = std::uint64_t{1} << 50;

inline void put_u64(unsigned char* p, std::uint64_t v) noexcept {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint64_t get_u64(unsigned char const* p) noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
}

/// One locked session with the ledger: open (creating it), lock, read; change slots;
/// write back; the lock goes with the descriptor.
class ledger {
public:
    std::array<ledger_slot, 256> slots{};

    /// Opens (creating it) and locks the ledger at `path` and reads it. False when it
    /// cannot be used (read-only directory, ...): the caller then does no accounting.
    /// O_NONBLOCK: a FIFO planted there must not block; it is refused below.
    bool open(std::string const& path, unsigned file_mode, int exact_umask) noexcept {
        int fd;
        do {
            fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
                        static_cast<mode_t>(file_mode));
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) return false;
        fd_.fd = fd;
        if (lock_fd(fd, false) != 0) return false;
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
        if (exact_umask >= 0 && (st.st_mode & 07777) != (file_mode & ~static_cast<unsigned>(exact_umask) & 07777))
            ::fchmod(fd, static_cast<mode_t>(file_mode & ~static_cast<unsigned>(exact_umask)));
        unsigned char buf[ledger_bytes];
        ssize_t got;
        do {
            got = ::pread(fd, buf, sizeof buf, 0);
        } while (got < 0 && errno == EINTR);
        fresh_ = true;
        if (got == static_cast<ssize_t>(sizeof buf) && std::memcmp(buf, ledger_magic, 8) == 0) {
            fresh_ = false;
            for (std::size_t i = 0; i < 256; ++i) {
                unsigned char const* p = buf + ledger_header + 16 * i;
                slots[i].bytes = get_u64(p);
                slots[i].counted_at = static_cast<std::int64_t>(get_u64(p + 8));
                if (slots[i].bytes > ledger_sane_limit) fresh_ = true;
            }
            if (fresh_) slots = {};
        }
        return true;
    }

    /// Writes one slot back (the whole file when it was fresh).
    void save(unsigned index) noexcept {
        if (fresh_) return save_all();
        unsigned char buf[16];
        put_u64(buf, slots[index].bytes);
        put_u64(buf + 8, static_cast<std::uint64_t>(slots[index].counted_at));
        pwrite_all(buf, sizeof buf, ledger_header + 16 * index);
    }

    void save_all() noexcept {
        unsigned char buf[ledger_bytes] = {};
        std::memcpy(buf, ledger_magic, 8);
        for (std::size_t i = 0; i < 256; ++i) {
            put_u64(buf + ledger_header + 16 * i, slots[i].bytes);
            put_u64(buf + ledger_header + 16 * i + 8, static_cast<std::uint64_t>(slots[i].counted_at));
        }
        if (pwrite_all(buf, sizeof buf, 0)) fresh_ = false;
    }

    std::uint64_t total() const noexcept {
        std::uint64_t t = 0;
        for (auto const& s : slots) t += s.bytes;
        return t;
    }

private:
    bool pwrite_all(unsigned char const* p, std::size_t n, std::size_t offset) noexcept {
        while (n > 0) {
            ssize_t const r = ::pwrite(fd_.fd, p, n, static_cast<off_t>(offset));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
            p += r;
            n -= static_cast<std::size_t>(r);
            offset += static_cast<std::size_t>(r);
        }
        return true;
    }

    file_descriptor fd_;
    bool fresh_ = true;
};

} // namespace compile_cache::detail::directory_storage_impl
