// compile-cache: a cache directory as the tool sees it — whether it is one, the
// entries in it (one listing pass), and what each entry holds (one read, checked by
// the library's inspect_envelope). Reading never changes an entry: no use time is
// refreshed, so looking at a cache does not change what it evicts next.
//
// The names are the library's own (storage/detail/directory_files.hpp), so that the
// tool counts, and deletes, exactly what directory_storage would.
#pragma once

#include "output.hpp"

#include <compile_cache/envelope.hpp>
#include <compile_cache/storage/directory_storage.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_tool {

namespace impl = compile_cache::detail::directory_storage_impl;

/// One entry file: `DIR/ab/<name>`, where name is the key's lower-case hex.
struct entry_file {
    std::string name;
    std::uint64_t size = 0;
    std::int64_t use_ns = 0; ///< its mtime, which the library sets at a store and at a hit

    std::string relative_path() const { return name.substr(0, 2) + "/" + name; }
};

/// Everything a listing of the directory found.
struct directory_scan {
    std::vector<entry_file> entries;
    std::uint64_t temp_files = 0;  ///< `.tmp-*` in fan-out folders: stores in progress, or left by killed ones
    std::uint64_t other_files = 0; ///< anything else in fan-out folders; never touched
    bool has_ledger = false;       ///< `.cc-stats`
    bool has_counters = false;     ///< `.cc-counters/`
    bool empty = true;             ///< nothing at all in the directory
    /// Why this cannot be a compile_cache directory, when something in it says so.
    std::string contradiction;
    /// A listing that failed (a folder that cannot be read): the scan is incomplete.
    std::string error;
};

enum class directory_kind { cache, missing, not_directory, foreign, unreadable };

/// The rule, also in the tool's --help. A directory is taken for a compile_cache
/// directory when nothing in it contradicts the layout and it is empty, or holds the
/// ledger `.cc-stats` or the counters folder `.cc-counters`, or at least one entry.
/// Contradictions: a `.cc-stats` that is not a regular file starting with the
/// ledger's magic (or empty), a `.cc-counters` that is not a folder, and, in a
/// two-hex-digit folder, a file named by lower-case hex that is not an entry of that
/// folder (a git object store looks like that). Other files (a README, notes) are
/// allowed: they are neither counted nor ever deleted.
inline std::string rule_text() {
    return "DIR counts as a compile_cache directory when nothing in it contradicts the layout and it\n"
           "is empty, or has the ledger file .cc-stats or the counters folder .cc-counters, or holds\n"
           "at least one entry (DIR/ab/<the key's lower-case hex, starting with ab>). Contradictions:\n"
           "a .cc-stats that is not a compile_cache ledger, a .cc-counters that is not a folder, and\n"
           "a hex-named file in a two-hex-digit folder that is not an entry of it (other leading\n"
           "digits, or an odd length: a git object store looks like that). Anything else (a README,\n"
           "notes) is allowed, and never deleted. clear, prune and verify --remove delete only where\n"
           "there is also the ledger or the counters (or no entry at all): files named like entries\n"
           "alone may be another tool's content-addressed store.\n";
}

/// Whether the ledger at `path` (an lstat-ed regular file of `size` bytes) looks like one.
inline bool looks_like_ledger(std::string const& path, std::uint64_t size) {
    if (size == 0) return true; // created, not yet written (a store was interrupted)
    int const fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    impl::file_descriptor const guard{fd};
    char magic[sizeof impl::ledger_magic] = {};
    ssize_t const got = ::pread(fd, magic, sizeof magic, 0);
    return got == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic, impl::ledger_magic, sizeof magic) == 0;
}

/// Lists fan-out folder `folder` (an open descriptor, taken over) into `scan`.
inline void scan_folder(int folder_fd, std::string const& folder, directory_scan& scan) {
    DIR* d = ::fdopendir(folder_fd);
    if (d == nullptr) {
        ::close(folder_fd);
        scan.error = folder + ": " + std::strerror(errno);
        return;
    }
    errno = 0;
    while (dirent* e = ::readdir(d)) {
        std::string_view const name = e->d_name;
        if (name == "." || name == "..") continue;
        if (impl::is_entry_name(name, folder)) {
            struct stat st {};
            if (::fstatat(folder_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
                entry_file f;
                f.name = std::string(name);
                f.size = static_cast<std::uint64_t>(st.st_size);
                f.use_ns = impl::mtime_ns(st);
                scan.entries.push_back(std::move(f));
            } else {
                ++scan.other_files; // a symlink or folder at an entry's name: the library refuses it too
            }
        } else if (impl::is_temp_name(name)) {
            ++scan.temp_files;
        } else {
            bool all_hex = name.size() >= 2;
            for (char c : name) all_hex = all_hex && impl::is_lower_hex_digit(c);
            if (all_hex && scan.contradiction.empty())
                scan.contradiction = folder + "/" + std::string(name) +
                                     " is named by hex digits but is not an entry of folder " + folder;
            ++scan.other_files;
        }
        errno = 0;
    }
    if (errno != 0 && scan.error.empty()) scan.error = folder + ": " + std::strerror(errno);
    ::closedir(d);
}

/// One pass over the directory: the top level, then each fan-out folder.
/// `progress` gets (folders done, 256, entries so far).
template <class Progress>
directory_kind scan_directory(std::string const& dir, directory_scan& scan, std::string& message, Progress&& progress) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        int const e = errno;
        message = e == ENOENT ? "no such directory" : std::strerror(e);
        return e == ENOENT ? directory_kind::missing : directory_kind::unreadable;
    }
    if (!S_ISDIR(st.st_mode)) {
        message = "not a directory";
        return directory_kind::not_directory;
    }
    int const root = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        message = std::string("cannot open it: ") + std::strerror(errno);
        return directory_kind::unreadable;
    }
    DIR* top = ::fdopendir(root);
    if (top == nullptr) {
        ::close(root);
        message = std::string("cannot list it: ") + std::strerror(errno);
        return directory_kind::unreadable;
    }
    std::vector<std::string> folders;
    errno = 0;
    while (dirent* e = ::readdir(top)) {
        std::string_view const name = e->d_name;
        if (name == "." || name == "..") continue;
        scan.empty = false;
        struct stat nst {};
        bool const known = ::fstatat(root, e->d_name, &nst, AT_SYMLINK_NOFOLLOW) == 0;
        if (name == impl::ledger_name) {
            scan.has_ledger = true;
            if (!known || !S_ISREG(nst.st_mode) ||
                !looks_like_ledger(dir + "/" + impl::ledger_name, static_cast<std::uint64_t>(nst.st_size)))
                scan.contradiction = std::string(impl::ledger_name) + " is not a compile_cache ledger";
        } else if (name == impl::counters_folder) {
            scan.has_counters = true;
            if (!known || !S_ISDIR(nst.st_mode))
                scan.contradiction = std::string(impl::counters_folder) + " is not a folder";
        } else if (impl::is_folder_name(name) && known && S_ISDIR(nst.st_mode)) {
            folders.emplace_back(name);
        }
        errno = 0;
    }
    int const list_errno = errno;
    if (list_errno != 0) {
        ::closedir(top);
        message = std::string("cannot list it: ") + std::strerror(list_errno);
        return directory_kind::unreadable;
    }
    std::uint64_t done = 0;
    for (std::string const& folder : folders) {
        int const fd = ::openat(root, folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            if (scan.error.empty()) scan.error = folder + ": " + std::strerror(errno);
        } else {
            scan_folder(fd, folder, scan);
        }
        progress(++done, folders.size(), scan.entries.size());
    }
    ::closedir(top);

    if (!scan.contradiction.empty()) {
        message = "not a compile_cache directory: " + scan.contradiction;
        return directory_kind::foreign;
    }
    if (!scan.empty && !scan.has_ledger && !scan.has_counters && scan.entries.empty()) {
        message = "not a compile_cache directory: it has no ledger (.cc-stats), no counters (.cc-counters) "
                  "and no entries (ab/<hex key>)";
        return directory_kind::foreign;
    }
    return directory_kind::cache;
}

/// The largest file read as an entry: the library's default bound on an entry
/// (cache_options::max_entry_size). A larger file is judged without being read.
inline constexpr std::uint64_t max_entry_read = std::uint64_t{64} << 20;

/// Reads the whole entry at `path` without following a symlink and without touching
/// its use time. False, with `why`, when it cannot; `too_large` says it was not read
/// because it is over max_entry_read.
inline bool read_entry(std::string const& path, std::string& bytes, std::string& why, bool* too_large = nullptr) {
    bytes.clear();
    int fd;
    do {
        fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        why = std::string("cannot open it: ") + std::strerror(errno);
        return false;
    }
    impl::file_descriptor const guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
        why = "not a regular file";
        return false;
    }
    if (static_cast<std::uint64_t>(st.st_size) > max_entry_read) {
        why = "larger than 64 MiB (the default bound on an entry), so not read: a host with a larger "
              "max_entry_size may have written it";
        if (too_large) *too_large = true;
        return false;
    }
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < bytes.size()) {
        ssize_t const r = ::read(fd, &bytes[got], bytes.size() - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            why = std::string("cannot read it: ") + std::strerror(errno);
            return false;
        }
        if (r == 0) break; // shorter than it was a moment ago: check what is there
        got += static_cast<std::size_t>(r);
    }
    bytes.resize(got);
    return true;
}

/// What checking one entry concluded.
enum class verdict {
    sound,     ///< the check value (CRC-32C or HMAC) verifies and the key is the file's name
    bad,       ///< damaged, truncated, unreadable, for another key, or not authenticated under the secret
    unchecked, ///< cannot be judged here: keyed without a secret given, or another envelope version
};

struct checked_entry {
    verdict result = verdict::bad;
    std::string problem; ///< for bad and unchecked: why, one phrase
    compile_cache::opened_envelope envelope; ///< its payload view is cleared: only sizes are kept
    std::uint64_t file_size = 0;
    std::uint64_t payload_size = 0;
    std::uint64_t check_size = 0;
};

inline char const* to_string(verdict v) noexcept {
    switch (v) {
    case verdict::sound: return "sound";
    case verdict::bad: return "bad";
    case verdict::unchecked: return "unchecked";
    }
    return "?";
}

/// Checks the bytes stored under the key whose hex is `name`, in `auth`'s mode.
inline checked_entry check_bytes(std::string const& bytes, std::string const& name,
                                 compile_cache::envelope_auth const& auth) {
    using compile_cache::envelope_status;
    checked_entry c;
    c.file_size = bytes.size();
    c.envelope = compile_cache::inspect_envelope(bytes, auth);
    c.payload_size = c.envelope.payload.size();
    c.envelope.payload = {};
    c.check_size = auth.check_size();
    switch (c.envelope.status) {
    case envelope_status::ok:
        if (c.envelope.stored_key.hex() == name) {
            c.result = verdict::sound;
        } else {
            c.problem = "holds the entry of another key (" + c.envelope.stored_key.hex() + ")";
        }
        break;
    case envelope_status::unauthenticated:
        if (auth.keyed()) {
            c.problem = "unauthenticated: its HMAC does not verify under the given secret "
                        "(unkeyed, another secret, damaged or forged)";
        } else {
            c.result = verdict::unchecked;
            c.problem = "keyed (HMAC-SHA256): give --secret-file to check it";
        }
        break;
    case envelope_status::foreign_version:
        c.result = verdict::unchecked;
        c.problem = "envelope version " + std::to_string(c.envelope.version) + ", which this tool (version " +
                    std::to_string(compile_cache::envelope_version) + ") does not read";
        break;
    case envelope_status::corrupt:
        c.problem = "corrupt: its check value does not match its bytes, or its fields are out of bounds "
                    "(damaged, truncated, or not an entry)";
        break;
    default:
        c.problem = "not readable as an entry";
        break;
    }
    return c;
}

/// Reads and checks the entry `name` of `dir` in `auth`'s mode.
inline checked_entry check_entry(std::string const& dir, std::string const& name,
                                 compile_cache::envelope_auth const& auth) {
    checked_entry c;
    std::string bytes, why;
    bool too_large = false;
    if (!read_entry(dir + "/" + name.substr(0, 2) + "/" + name, bytes, why, &too_large)) {
        c.problem = why;
        if (too_large) c.result = verdict::unchecked;
        return c;
    }
    return check_bytes(bytes, name, auth);
}

} // namespace compile_cache_tool
