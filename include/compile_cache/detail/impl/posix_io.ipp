// compile_cache: the definitions of detail/posix_io.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

ssize_t read_up_to(int fd, char* p, std::size_t n) noexcept {
    std::size_t got = 0;
    while (got < n) {
        ssize_t const r = retry_on_eintr([&] { return ::read(fd, p + got, n - got); });
        if (r < 0) return -1;
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
    }
    return static_cast<ssize_t>(got);
}

bool read_exactly_at(int fd, char* p, std::size_t n, std::uint64_t offset) noexcept {
    std::size_t got = 0;
    while (got < n) {
        ssize_t const r =
            retry_on_eintr([&] { return ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got)); });
        if (r < 0) return false;
        if (r == 0) {
            errno = EIO;
            return false;
        }
        got += static_cast<std::size_t>(r);
    }
    return true;
}

file_read_status stat_regular_file(int fd, std::uint64_t max, struct stat& st) noexcept {
    if (::fstat(fd, &st) != 0) return file_read_status::error;
    if (!S_ISREG(st.st_mode)) return file_read_status::not_regular;
    if (st.st_size < 0) {
        errno = EIO;
        return file_read_status::error;
    }
    return static_cast<std::uint64_t>(st.st_size) > max ? file_read_status::too_large : file_read_status::read;
}

bool read_file_bytes(int fd, std::string& out, std::size_t size) {
    out.resize(size);
    ssize_t const got = read_up_to(fd, &out[0], size);
    if (got < 0) {
        int const e = errno;
        out.clear();
        errno = e;
        return false;
    }
    out.resize(static_cast<std::size_t>(got));
    return true;
}

file_read_status read_regular_file(int fd, std::string& out, std::uint64_t max, struct stat& st) {
    file_read_status const status = stat_regular_file(fd, max, st);
    if (status == file_read_status::read && read_file_bytes(fd, out, static_cast<std::size_t>(st.st_size)))
        return status;
    out.clear();
    return status == file_read_status::read ? file_read_status::error : status;
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_INCLUDE_IMPL
