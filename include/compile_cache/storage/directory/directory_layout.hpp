// compile_cache: the layout of a directory_storage directory, for programs that look
// at one from outside (the compile-cache tool): which names are entries, temp files,
// the size ledger and the counters; walking a fan-out folder; reading an entry without
// touching its use time; what an entry counts for against the size limit. The storage
// itself uses the same rules, so what a reader counts or deletes is what it would.
//
//   DIR/.cc-stats          the size ledger (a regular file; empty, or starting with its magic)
//   DIR/.cc-counters/      the counters hosts record (directory_storage::recorded_counters)
//   DIR/ab/<hex key>       an entry: the key's lower-case hex, in the folder of its first two digits
//   DIR/ab/.tmp-<hex>      a store in progress, or left by a killed one
//   DIR/ab/<hex key>.claim a miss's claim (single flight): a compile in progress, or left by a killed one
//   DIR/ab/<hex pack key>  an entry that is a pack of identity records (is_pack_name; read_pack_slots)
//   DIR/.cc-records/       the packs' markers, by which hosts find them (detail/record_packs.hpp)
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/posix_io.hpp>
#include <compile_cache/storage/directory/detail/directory_counters.hpp>
#include <compile_cache/storage/directory/detail/directory_files.hpp>
#include <compile_cache/storage/directory/detail/record_packs.hpp>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache::directory_layout {

/// The size ledger's file name, at the top of the directory.
inline constexpr std::string_view ledger_file_name = detail::directory_storage_impl::ledger_name;
/// The folder of the counters hosts record, at the top of the directory.
inline constexpr std::string_view counters_folder_name = detail::directory_storage_impl::counters_folder;
/// The two recorded counters that are gauges, not sums: the size limit of the latest
/// host to record, and when it recorded (seconds since the epoch).
inline constexpr std::string_view gauge_max_size = detail::directory_storage_impl::gauge_max_size;
inline constexpr std::string_view gauge_updated_s = detail::directory_storage_impl::gauge_updated_s;
inline bool is_gauge(std::string_view counter) noexcept { return detail::directory_storage_impl::is_gauge(counter); }

/// Lower-case hexadecimal digits only (and at least one).
inline bool is_lower_hex(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s)
        if (!detail::directory_storage_impl::is_lower_hex_digit(c)) return false;
    return true;
}

/// A fan-out folder: exactly two lower-case hex digits.
inline bool is_folder_name(std::string_view name) noexcept {
    return detail::directory_storage_impl::is_folder_name(name);
}

/// An entry of fan-out folder `folder`: a key's lower-case hex (2 to 128 digits, an
/// even number) starting with the folder's two digits.
inline bool is_entry_name(std::string_view name, std::string_view folder) noexcept {
    return detail::directory_storage_impl::is_entry_name(name, folder);
}

/// A temp file of a store (`.tmp-...`), in a fan-out folder.
inline bool is_temp_name(std::string_view name) noexcept { return detail::directory_storage_impl::is_temp_name(name); }

/// A claim file of single flight (`<hex key>.claim`), in fan-out folder `folder`: the
/// storage's cleanups remove those whose owner is gone (directory_claims.hpp).
inline bool is_claim_name(std::string_view name, std::string_view folder) noexcept {
    return detail::directory_storage_impl::is_claim_name(name, folder);
}

/// The folder of the packs' markers, at the top of the directory.
inline constexpr std::string_view packs_folder_name = detail::directory_storage_impl::packs_folder;

/// An entry's name that is a pack of identity records, the records of many kernels in one
/// file (a key of 33 bytes whose last is 0x1e): listed as its records, not as an entry.
inline bool is_pack_name(std::string_view name) noexcept { return detail::directory_storage_impl::is_pack_name(name); }

/// One record a pack holds: its key, when that version of it was written, and where its bytes
/// (a sealed envelope, as a record file holds) are in the pack.
using pack_slot = detail::directory_storage_impl::pack_slot;

/// Reads the slots of the pack at `path`, without following a symlink and without
/// touching its use time; false when it cannot be read or is not a sound pack (`why`
/// says why in one phrase). A key may be in several packs: the slot made last is its
/// newest version, the one a host reads.
COMPILE_CACHE_DECL bool read_pack_slots(std::string const& path, std::vector<pack_slot>& slots, std::string& why);

/// `ab/<hex>`: where the entry of the key whose hex is `hex` lives, relative to the
/// directory. `hex` has at least two digits.
COMPILE_CACHE_DECL std::string entry_relative_path(std::string_view hex);

/// What an entry of `size` bytes counts for against the size limit (whole 4 KiB
/// blocks, at least one); the storage counts its stores the same way.
inline std::uint64_t accounted_size(std::uint64_t size) noexcept {
    return detail::directory_storage_impl::accounted_size(size);
}

/// Whether the regular file at `path` (`size` bytes, as lstat said) can be the size
/// ledger: empty (created, not yet written), or starting with the ledger's magic.
COMPILE_CACHE_DECL bool looks_like_ledger(std::string const& path, std::uint64_t size);

/// One name in a fan-out folder, as folder walking reports it.
struct folder_item {
    enum class kind_type {
        entry, ///< a regular file named as an entry of the folder
        temp,  ///< a store's temp file (`.tmp-...`)
        other, ///< anything else: not the cache's, or an entry's name on a symlink or folder
    };
    kind_type kind = kind_type::other;
    std::string_view name;
    std::uint64_t size = 0;  ///< for an entry: its size in bytes
    std::int64_t use_ns = 0; ///< for an entry: its last use (its mtime, set at a store and at a hit), ns since the epoch
};

/// Calls `visit(folder_item const&)` for each name in fan-out folder `folder` of the
/// directory open at `directory_fd` (`.` and `..` excepted), without following a
/// symlink and without touching any entry. Returns the error that stopped the
/// listing (opening or reading the folder), or none; the names visited before it
/// stay visited.
template <class Visit>
std::error_code walk_folder(int directory_fd, std::string const& folder, Visit&& visit) {
    int const fd = ::openat(directory_fd, folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return {errno, std::generic_category()};
    DIR* const d = ::fdopendir(fd);
    if (d == nullptr) {
        int const e = errno;
        ::close(fd);
        return {e, std::generic_category()};
    }
    // (closed however the walk ends, a throwing `visit` included)
    std::unique_ptr<DIR, int (*)(DIR*)> const guard(d, ::closedir);
    errno = 0;
    while (dirent* e = ::readdir(d)) {
        folder_item item;
        item.name = e->d_name;
        if (item.name == "." || item.name == "..") continue;
        if (is_entry_name(item.name, folder)) {
            struct stat st {};
            if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
                item.kind = folder_item::kind_type::entry;
                item.size = static_cast<std::uint64_t>(st.st_size);
                item.use_ns = detail::directory_storage_impl::mtime_ns(st);
            }
        } else if (is_temp_name(item.name)) {
            item.kind = folder_item::kind_type::temp;
        }
        visit(static_cast<folder_item const&>(item));
        errno = 0;
    }
    return errno != 0 ? std::error_code(errno, std::generic_category()) : std::error_code();
}

/// How reading an entry ended.
enum class entry_file_status {
    ok,        ///< `bytes` holds the file (shorter than its size, if it shrank meanwhile)
    failed,    ///< it could not be opened or read, or is not a regular file
    too_large, ///< it is over `max_size`, and was not read
};

/// Reads the whole entry file at `path` into `bytes`, without following a symlink,
/// without blocking on a FIFO and without touching its use time (the storage's own
/// read refreshes it; this one leaves eviction's order alone). On failure, `why` says
/// why in one phrase.
COMPILE_CACHE_DECL entry_file_status read_entry_file(std::string const& path, std::uint64_t max_size,
                                                     std::string& bytes, std::string& why);

} // namespace compile_cache::directory_layout

#include <compile_cache/storage/directory/impl/directory_layout.ipp>
