// compile_cache: the definitions of storage/directory/directory_layout.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <cstring>

namespace compile_cache::directory_layout {

std::string entry_relative_path(std::string_view hex) {
    std::string path;
    detail::directory_storage_impl::append_entry_relative_path(path, hex);
    return path;
}

bool looks_like_ledger(std::string const& path, std::uint64_t size) {
    namespace impl = detail::directory_storage_impl;
    if (size == 0) return true;
    int const fd = detail::open_no_follow(AT_FDCWD, path.c_str());
    if (fd < 0) return false;
    impl::file_descriptor const guard{fd};
    char magic[sizeof impl::ledger_magic] = {};
    ssize_t const got = detail::retry_on_eintr([&] { return ::pread(fd, magic, sizeof magic, 0); });
    return got == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic, impl::ledger_magic, sizeof magic) == 0;
}

entry_file_status read_entry_file(std::string const& path, std::uint64_t max_size, std::string& bytes,
                                  std::string& why) {
    bytes.clear();
    int const fd = detail::open_no_follow(AT_FDCWD, path.c_str());
    if (fd < 0) {
        why = std::string("cannot open it: ") + std::strerror(errno);
        return entry_file_status::failed;
    }
    detail::directory_storage_impl::file_descriptor const guard{fd};
    struct stat st {};
    switch (detail::read_regular_file(fd, bytes, max_size, st)) {
    case detail::file_read_status::read: return entry_file_status::ok;
    case detail::file_read_status::too_large:
        why = "larger than the bound on an entry";
        return entry_file_status::too_large;
    case detail::file_read_status::not_regular: why = "not a regular file"; return entry_file_status::failed;
    case detail::file_read_status::error: break;
    }
    why = std::string("cannot read it: ") + std::strerror(errno);
    return entry_file_status::failed;
}

bool read_pack_slots(std::string const& path, std::vector<pack_slot>& slots, std::string& why) {
    slots.clear();
    int const fd = detail::open_no_follow(AT_FDCWD, path.c_str());
    if (fd < 0) {
        why = std::string("cannot open it: ") + std::strerror(errno);
        return false;
    }
    detail::directory_storage_impl::file_descriptor const guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        why = "not a regular file";
        return false;
    }
    if (!detail::directory_storage_impl::read_pack_index(fd, static_cast<std::uint64_t>(st.st_size), slots)) {
        why = "not a sound pack of identity records (its header, index or bounds)";
        return false;
    }
    return true;
}

} // namespace compile_cache::directory_layout

#endif // COMPILE_CACHE_INCLUDE_IMPL
