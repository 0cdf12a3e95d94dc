// compile_cache: a Storage in a directory of the local file system, one file per
// entry, written atomically (exclusive temp file in the target folder, then rename).
// POSIX only.
#pragma once

#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/concept.hpp>

#include <boost/uuid/entropy_error.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace compile_cache {

/// How `directory_storage` creates what it creates. Both modes are passed to the
/// system calls as they are, so the process's umask still applies.
struct directory_options {
    unsigned file_mode = 0600;      ///< entries (and their temp files)
    unsigned directory_mode = 0700; ///< the cache directory, its parents and fan-out folders
};

namespace detail::directory_storage_impl {

inline std::error_code errno_code(int e) noexcept { return {e, std::generic_category()}; }

/// One random UUID per temp file; one generator per thread, so no locking.
inline boost::uuids::uuid random_uuid() {
    thread_local boost::uuids::random_generator generator;
    return generator();
}

inline int open_exclusive(std::string const& path, unsigned mode) noexcept {
    int fd;
    do {
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    static_cast<mode_t>(mode));
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/// `mkdir -p` for `path`; an existing entry on the way is fine (if it is not a
/// directory, the open that follows says so). `path` is cut in place at its slashes
/// while working and restored before returning. Returns 0 or an errno value.
inline int make_directories(std::string& path, unsigned mode) noexcept {
    auto const m = static_cast<mode_t>(mode);
    auto try_mkdir = [&](std::size_t end) -> int { // mkdir of path[0, end)
        char const saved = path[end];
        path[end] = '\0';
        int const r = ::mkdir(path.c_str(), m);
        int const e = errno;
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
inline int write_all(int fd, std::string_view bytes) noexcept {
    char const* p = bytes.data();
    std::size_t left = bytes.size();
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
    int fd;
    explicit file_descriptor(int descriptor) noexcept : fd(descriptor) {}
    file_descriptor(file_descriptor const&) = delete;
    file_descriptor& operator=(file_descriptor const&) = delete;
    ~file_descriptor() { ::close(fd); }
};

} // namespace detail::directory_storage_impl

/// Entries as files under a directory: `DIR/ab/abcdef...`, where the file name is
/// the key's full lower-case hex and `ab` its first two digits (256 fan-out folders,
/// so that no folder grows huge). Temp files are `.tmp-<uuid>` in the same folder and
/// never match an entry name.
///
/// - `write` creates the folders on first use, writes a fresh temp file created
///   exclusively (never following a symlink), closes it, and renames it over the
///   entry: a reader sees the old entry or the new one, never a part. On failure the
///   temp file is removed and the error returned.
/// - `read` opens the entry without following a symlink, takes the size from the open
///   file, and refuses anything that is not a regular file (`error`) or is larger
///   than `max_size` (`too_large`, nothing read). A missing entry or fan-out folder is
///   `absent`. `out` holds the bytes when `found` and is left empty otherwise.
/// - `remove` unlinks the entry; an absent entry is not an error.
///
/// A default-constructed storage, or one with an empty directory, is disabled: reads
/// are `absent`, writes fail with `invalid_argument`, removes succeed. So do reads,
/// writes and removes with an empty key. No member that does I/O throws.
class directory_storage {
public:
    directory_storage() noexcept = default;

    explicit directory_storage(std::string directory, directory_options options = {}) noexcept
        : directory_(std::move(directory)), options_(options) {
        while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
    }

    /// The cache directory, as given (less trailing slashes); empty when disabled.
    std::string const& directory() const noexcept { return directory_; }
    directory_options const& options() const noexcept { return options_; }

    /// Where the entry for `k` lives (whether or not it exists); empty when the
    /// storage is disabled or the key is empty.
    std::string entry_path(key const& k) const {
        std::string path;
        if (directory_.empty() || k.empty()) return path;
        std::string const hex = k.hex();
        path.reserve(directory_.size() + 4 + hex.size());
        path += directory_;
        if (path.back() != '/') path += '/';
        path.append(hex, 0, 2);
        path += '/';
        path += hex;
        return path;
    }

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        namespace impl = detail::directory_storage_impl;
        out.clear();
        if (directory_.empty() || k.empty()) return {read_status::absent, {}};
        try {
            std::string const path = entry_path(k);
            int fd;
            do {
                // O_NONBLOCK: a FIFO planted at the path must not block the open; it
                // is rejected below as not a regular file. No effect on regular files.
                fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            } while (fd < 0 && errno == EINTR);
            if (fd < 0) {
                int const e = errno;
                if (e == ENOENT || e == ENOTDIR) return {read_status::absent, {}};
                return {read_status::error, impl::errno_code(e)};
            }
            impl::file_descriptor const guard{fd};

            struct stat st;
            if (::fstat(fd, &st) != 0) return {read_status::error, impl::errno_code(errno)};
            if (S_ISDIR(st.st_mode)) return {read_status::error, impl::errno_code(EISDIR)};
            if (!S_ISREG(st.st_mode)) return {read_status::error, impl::errno_code(EINVAL)};
            if (st.st_size < 0) return {read_status::error, impl::errno_code(EIO)};
            if (static_cast<std::uintmax_t>(st.st_size) > max_size)
                return {read_status::too_large, {}};

            auto const size = static_cast<std::size_t>(st.st_size);
            out.resize(size);
            std::size_t got = 0;
            while (got < size) {
                ssize_t const r = ::read(fd, &out[got], size - got);
                if (r < 0) {
                    if (errno == EINTR) continue;
                    int const e = errno;
                    out.clear();
                    return {read_status::error, impl::errno_code(e)};
                }
                if (r == 0) break; // shorter than fstat said: keep what is there
                got += static_cast<std::size_t>(r);
            }
            out.resize(got);
            return {read_status::found, {}};
        } catch (std::bad_alloc const&) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
        } catch (...) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::io_error)};
        }
    }

    std::error_code write(key const& k, std::string_view bytes) noexcept {
        namespace impl = detail::directory_storage_impl;
        if (directory_.empty() || k.empty())
            return std::make_error_code(std::errc::invalid_argument);
        try {
            std::string const entry = entry_path(k);
            std::string folder = entry.substr(0, entry.rfind('/'));
            std::string const temp = folder + "/.tmp-" + boost::uuids::to_string(impl::random_uuid());

            int fd = impl::open_exclusive(temp, options_.file_mode);
            if (fd < 0 && errno == ENOENT) { // first store in this folder
                if (int const e = impl::make_directories(folder, options_.directory_mode))
                    return impl::errno_code(e);
                fd = impl::open_exclusive(temp, options_.file_mode);
            }
            if (fd < 0) return impl::errno_code(errno);

            impl::temp_file file{fd, temp.c_str()};
            if (int const e = impl::write_all(fd, bytes)) return impl::errno_code(e);
            if (int const e = file.close()) return impl::errno_code(e);
            if (::rename(temp.c_str(), entry.c_str()) != 0) return impl::errno_code(errno);
            file.committed = true;
            return {};
        } catch (std::bad_alloc const&) {
            return std::make_error_code(std::errc::not_enough_memory);
        } catch (boost::uuids::entropy_error const& e) {
            auto const code = static_cast<int>(e.errcode());
            return code != 0 ? impl::errno_code(code) : std::make_error_code(std::errc::io_error);
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }

    std::error_code remove(key const& k) noexcept {
        if (directory_.empty() || k.empty()) return {};
        try {
            std::string const path = entry_path(k);
            if (::unlink(path.c_str()) == 0) return {};
            int const e = errno;
            if (e == ENOENT || e == ENOTDIR) return {};
            return detail::directory_storage_impl::errno_code(e);
        } catch (std::bad_alloc const&) {
            return std::make_error_code(std::errc::not_enough_memory);
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }

private:
    std::string directory_;
    directory_options options_{};
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::directory_storage>::value);
