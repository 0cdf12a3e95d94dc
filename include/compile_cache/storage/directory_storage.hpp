// compile_cache: a Storage in a directory of the local file system, one file per
// entry, written atomically (exclusive temp file in the target folder, then rename),
// with a size limit kept by least-recently-used eviction. POSIX only.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/env.hpp>
#include <compile_cache/detail/posix_io.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/concept.hpp>
#include <compile_cache/storage/detail/directory_cleanup.hpp>
#include <compile_cache/storage/detail/directory_counters.hpp>
#include <compile_cache/storage/detail/directory_files.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace compile_cache {

/// How hard a store works to survive a crash of the machine (not of the process: a
/// killed process never leaves a partial entry, whatever the setting).
enum class durability {
    none, ///< rename only: after a power loss an entry may be empty or lost (it is then a miss)
    file, ///< fsync the temp file before the rename: an entry that exists is whole
    full, ///< also fsync the folder after the rename: a store that returned is on disk
};

/// Who may write the cache directory, and so whose entries are trusted.
enum class sharing {
    owner_only, ///< private (default): entries must be owned by this user and writable by no one else
    group,      ///< shared by a group: group-writable entries of any owner; world-writable ones are not trusted
};

inline char const* to_string(durability d) noexcept {
    switch (d) {
    case durability::none: return "none";
    case durability::file: return "file";
    case durability::full: return "full";
    }
    return "?";
}

/// Why directory_storage refused to read an entry it found.
enum class directory_errc {
    foreign_owner = 1,     ///< owned by another user (private mode)
    unsafe_permissions = 2, ///< writable by group or others (private mode), by others (shared mode)
};

namespace detail {
class directory_error_category final : public std::error_category {
public:
    char const* name() const noexcept override { return "compile_cache.directory_storage"; }
    std::string message(int code) const override {
        switch (static_cast<directory_errc>(code)) {
        case directory_errc::foreign_owner: return "untrusted entry: owned by another user";
        case directory_errc::unsafe_permissions: return "untrusted entry: writable by other users";
        }
        return "unknown directory_storage error";
    }
};
} // namespace detail

inline std::error_category const& directory_category() noexcept {
    static detail::directory_error_category const category;
    return category;
}
inline std::error_code make_error_code(directory_errc e) noexcept { return {static_cast<int>(e), directory_category()}; }

} // namespace compile_cache

template <>
struct std::is_error_code_enum<compile_cache::directory_errc> : std::true_type {};

namespace compile_cache {

/// How `directory_storage` creates what it creates, how large it may grow, how
/// durable a store is, and whom it trusts. Aggregate: `directory_options{0600, 0700}`
/// still works; set the rest by name.
struct directory_options {
    unsigned file_mode = 0600;      ///< entries (and their temp files)
    unsigned directory_mode = 0700; ///< the cache directory, its parents and fan-out folders
    /// The size limit in bytes (entries count in whole 4 KiB blocks); 0 = no limit.
    /// A store that takes the cache over it evicts least recently used entries until
    /// the cache is under 90% of it.
    std::uint64_t max_size = std::uint64_t{1} << 30;
    compile_cache::durability sync = durability::none;
    compile_cache::sharing access = sharing::owner_only;
    /// -1: the modes above go to the system calls as they are, and the process's umask
    /// applies. 0 or more: every file and folder created is set to exactly
    /// `mode & ~umask` (fchmod/chmod), whatever the process's umask.
    int umask = -1;

    /// A directory shared by the members of a group: entries 0660, folders 02770
    /// (setgid, so that everything in it belongs to the directory's group), set
    /// exactly whatever the process's umask, and group-writable entries trusted.
    static directory_options shared(unsigned umask = 007) {
        directory_options o;
        o.file_mode = 0660;
        o.directory_mode = 02770;
        o.access = sharing::group;
        o.umask = static_cast<int>(umask & 0777u);
        return o;
    }
};

/// The directory_options the environment asks for (read by directory_storage::from_env):
/// - `PREFIX_MAX_SIZE`: the size limit (see parse_byte_size; `0` = no limit;
///   default 1G);
/// - `PREFIX_DURABILITY`: `none` (default), `file` or `full`;
/// - `PREFIX_SHARED`: on (`1`, `on`, `true`, `yes`, `group`) for directory_options::shared().
/// A value that does not parse is reported once through `env` (one line) and the
/// default is used.
inline directory_options directory_options_from_env(settings_reader const& env) {
    directory_options o;
    std::string const shared = env.value("_SHARED");
    if (!detail::is_off(shared)) {
        if (parse_switch(shared).value_or(false) || detail::lower(shared) == "group")
            o = directory_options::shared();
        else
            env.report_value("_SHARED", shared,
                             "is not understood (expected 1, on, true, yes or group to share the directory with "
                             "a group; 0, off, false or no for a private one); the directory stays private");
    }
    o.max_size = env.byte_size("_MAX_SIZE", o.max_size, "1G");
    o.sync = env.choice<durability>(
        "_DURABILITY", {{"none", durability::none}, {"file", durability::file}, {"full", durability::full}},
        durability::none, "a durability");
    return o;
}

/// The same, reporting through `report(std::string const&)`.
template <class Report>
directory_options directory_options_from_env(std::string const& prefix, Report&& report) {
    return directory_options_from_env(
        settings_reader(prefix, [&report](std::string_view line) { report(std::string(line)); }));
}

/// What prune() and clear() did.
struct cleanup_result {
    std::uint64_t entries = 0;   ///< entries left (prune)
    std::uint64_t bytes = 0;     ///< what they count for against the limit (prune)
    std::uint64_t removed = 0;   ///< entries evicted (prune) or removed (clear)
    std::uint64_t removed_bytes = 0;
    std::uint64_t temp_files_removed = 0;
    std::error_code error; ///< why the cleanup could not run (the directory cannot be opened); empty otherwise
};

/// Counts kept by a storage object (and its copies) since it was made.
struct directory_counters {
    std::uint64_t evicted = 0;       ///< entries evicted by cleanups this process ran
    std::uint64_t evicted_bytes = 0;
    std::uint64_t temp_files_removed = 0;
    std::uint64_t cleanup_steps = 0;
    /// Locks on the cache's files (ledger, directory, counters) given up on after a
    /// bounded wait, because another process held them (stopped or frozen?).
    std::uint64_t lock_timeouts = 0;
};

namespace detail::directory_storage_impl {

/// For tests: when set, the next temp file this thread creates is named
/// `.tmp-<this>` instead of a random name (once; then it is reset).
inline thread_local char const* next_temp_suffix_for_testing = nullptr;

/// The work one store may spend on cleanup: fan-out folders count 4, each name
/// looked at counts 1. A cache of a few thousand entries is cleaned in one step.
inline constexpr std::size_t cleanup_budget = 4096;

/// State shared by a storage object and its copies.
struct shared_state {
    shared_state(std::string const& ledger_path, unsigned file_mode, int exact_umask)
        : ledger(ledger_path, file_mode, exact_umask, &locks) {
        cleanup.events = &locks;
    }
    lock_events locks; ///< before ledger and cleanup, which point to it
    cleanup_state cleanup;
    ledger_batch ledger;
    std::atomic<std::uint64_t> lock_timeouts_recorded{0}; ///< how many of them the counters file has
    /// Set once renameat2(RENAME_NOREPLACE) is found unsupported here.
    std::atomic<bool> no_rename_noreplace{false};
};

/// The path of the entry a read opens, built in a buffer each thread reuses.
inline std::string& read_path_buffer() {
    thread_local std::string path;
    return path;
}

} // namespace detail::directory_storage_impl

/// Entries as files under a directory: `DIR/ab/abcdef...`, where the file name is
/// the key's full lower-case hex and `ab` its first two digits (256 fan-out folders,
/// so that no folder grows huge). Temp files are `.tmp-<uuid>` in the same folder and
/// never match an entry name (`.tmp-` and 32 random hex digits). `DIR/.cc-stats` holds
/// the size ledger.
///
/// - `write` creates the folders on first use, writes a fresh temp file created
///   exclusively (never following a symlink), syncs it as `durability` says, and
///   renames it over the entry: a reader sees the old entry or the new one, never a
///   part (a new key is one renameat2(RENAME_NOREPLACE); an existing one is lstat-ed
///   first, for what it counted for). On failure the temp file is removed and the
///   error returned. It then adds the entry to its folder's figure in the ledger (in
///   batches: ledger_batch), recounts that folder when its figure is over an hour old (sweeping temp
///   files older than an hour), and, when the cache may be over `max_size`, writes
///   its batch and, if the ledger says so, does one step of bounded cleanup (see
///   cleanup_state). Accounting and cleanup never fail a store. The last copy of a
///   storage object writes what is left of its batch when it is destroyed.
/// - `read` opens the entry without following a symlink, takes the size from the open
///   file, and refuses anything that is not a regular file (`error`), that it does not
///   trust (`error`, directory_errc: see `sharing`), or that is larger than
///   `max_size` (`too_large`, nothing read). A missing entry or fan-out folder is
///   `absent`. `out` holds the bytes when `found` and is left empty otherwise. A hit
///   on an entry last used over an hour ago sets its mtime (its use time) to now.
/// - `remove` unlinks the entry; an absent entry is not an error.
/// - `prune()` does a whole cleanup now; `clear()` removes every entry and temp file.
///
/// Thread-safe: one object may be used by many threads (and many processes may use
/// one directory). A default-constructed storage, or one with an empty directory, is
/// disabled: reads are `absent`, writes fail with `invalid_argument`, removes succeed.
/// So do reads, writes and removes with an empty key. No member that does I/O throws.
class directory_storage {
public:
    directory_storage() noexcept = default;

    explicit directory_storage(std::string directory, directory_options options = {})
        : directory_(std::move(directory)), options_(options), euid_(::geteuid()) {
        while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
        if (!directory_.empty()) {
            ledger_path_ = directory_ + (directory_.back() == '/' ? "" : "/") +
                           detail::directory_storage_impl::ledger_name;
            state_ = std::make_shared<detail::directory_storage_impl::shared_state>(ledger_path_, options_.file_mode,
                                                                                   options_.umask);
        }
    }

    /// The storage the environment asks for (see settings.hpp): `PREFIX_DIR` names the
    /// directory; unset, empty, `0`, `off`, `false` or `no` (any case): nullopt, not
    /// configured. `PREFIX_MAX_SIZE`, `PREFIX_DURABILITY` and `PREFIX_SHARED` give its
    /// options (directory_options_from_env). The directory is made now, as a first
    /// store would: a path that cannot be made a directory is one line, and nullopt.
    /// An on value (`1`, `on`, `true`, `yes`) is used as a relative path, with one line.
    static std::optional<directory_storage> from_env(settings_reader& env) {
        std::string dir = env.value("_DIR");
        if (detail::is_off(dir) || !env.confirm()) return std::nullopt;
        directory_options const options = directory_options_from_env(env);
        // A directory that cannot be made (a file on the way, no permission, a
        // read-only parent) would make every store fail: say so now, once, and run
        // without a cache. An existing read-only directory is fine: loads work.
        if (int const e = usable_directory(dir, options)) {
            env.report(env.name("_DIR") + "=\"" + dir + "\" cannot be used (" + std::generic_category().message(e) +
                       "); the cache is disabled");
            return std::nullopt;
        }
        // `1` or `on` is a path here, not a switch: the directory `on` is used, and said so.
        if (detail::is_on(dir))
            env.report_value("_DIR", dir,
                             "is a path, not a switch: the cache is the directory \"" + dir +
                                 "\" in the working directory");
        return directory_storage(std::move(dir), options);
    }

    /// The settings from_env reads, with one line each, for a host's --help.
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        std::string const p(prefix);
        return {
            {p + "_DIR", "the cache directory; unset, empty, 0, off, false or no disable the cache"},
            {p + "_MAX_SIZE", "size limit of the directory: bytes, or with K, M, G (powers of 1024); "
                              "default 1G; least recently used entries are evicted"},
            {p + "_DURABILITY", "none (default), file (fsync each entry) or full (also fsync its folder)"},
            {p + "_SHARED", "1 shares the directory with the group (group-writable entries trusted)"},
        };
    }

    /// 0 when `directory` is a directory or can be made one (it is made, with the
    /// options' mode, as a first store would); otherwise the errno value that says why not.
    static int usable_directory(std::string directory, directory_options const& options) {
        while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
        bool created = false;
        if (int const e = detail::directory_storage_impl::make_directories(directory, options.directory_mode,
                                                                           options.umask, created))
            return e;
        struct stat st;
        if (::stat(directory.c_str(), &st) != 0) return errno;
        return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    }

    /// The cache directory, as given (less trailing slashes); empty when disabled.
    std::string const& directory() const noexcept { return directory_; }
    directory_options const& options() const noexcept { return options_; }

    /// Where this storage (and its copies) says, once, that it gave up waiting for a
    /// lock another process holds; basic_cache passes its logger here.
    void set_logger(std::function<void(std::string_view)> logger) {
        if (state_) state_->locks.set_logger(std::move(logger));
    }

    /// Where the entry for `k` lives (whether or not it exists); empty when the
    /// storage is disabled or the key is empty.
    std::string entry_path(key const& k) const {
        std::string path;
        if (directory_.empty() || k.empty()) return path;
        detail::directory_storage_impl::append_entry_path(path, directory_, k);
        return path;
    }

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        namespace impl = detail::directory_storage_impl;
        // `out` is cleared on every path but a hit, where it is resized to the entry:
        // its old bytes spare that resize the zero-fill of what read() overwrites.
        if (directory_.empty() || k.empty()) {
            out.clear();
            return {read_status::absent, {}};
        }
        try {
            std::string& path = impl::read_path_buffer();
            path.clear();
            impl::append_entry_path(path, directory_, k);
            int const fd = detail::open_no_follow(AT_FDCWD, path.c_str());
            if (fd < 0) {
                int const e = errno;
                out.clear();
                if (e == ENOENT || e == ENOTDIR) return {read_status::absent, {}};
                return {read_status::error, impl::errno_code(e)};
            }
            impl::file_descriptor const guard{fd};

            struct stat st;
            auto refused = [&out](read_status status, std::error_code ec) -> read_result {
                out.clear();
                return {status, ec};
            };
            detail::file_read_status const status = detail::stat_regular_file(fd, max_size, st);
            if (status == detail::file_read_status::error) return refused(read_status::error, impl::errno_code(errno));
            if (status == detail::file_read_status::not_regular)
                return refused(read_status::error, impl::errno_code(S_ISDIR(st.st_mode) ? EISDIR : EINVAL));
            if (std::error_code const untrusted = trust(st)) return refused(read_status::error, untrusted);
            if (status == detail::file_read_status::too_large) return refused(read_status::too_large, {});
            if (!detail::read_file_bytes(fd, out, static_cast<std::size_t>(st.st_size)))
                return {read_status::error, impl::errno_code(errno)};
            // The use time, for eviction: refreshed at most once an hour per entry, so
            // a hit costs no system call beyond the open, fstat, read and close unless
            // the entry was last used over an hour ago. LRU order at an hour's
            // resolution is enough to pick what to evict; a finer clock made every
            // first hit after a minute dirty an inode (and, on ext4, a journal block).
            if (impl::now_s() - static_cast<std::int64_t>(st.st_mtime) >= refresh_after_s) ::futimens(fd, nullptr);
            return {read_status::found, {}};
        } catch (std::bad_alloc const&) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
        } catch (...) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::io_error)};
        }
    }

    /// Stores `bytes` under `k` atomically: a temp file in the entry's folder, filled,
    /// then renamed over the entry (see the class comment).
    std::error_code write(key const& k, std::string_view bytes) noexcept {
        namespace impl = detail::directory_storage_impl;
        if (directory_.empty() || k.empty()) return std::make_error_code(std::errc::invalid_argument);
        try {
            std::string const entry = entry_path(k);
            std::string const folder = entry.substr(0, entry.rfind('/'));
            std::string temp;
            bool created_folders = false;
            int fd = -1;
            if (std::error_code const ec = create_temp_file(entry, folder, temp, fd, created_folders)) return ec;
            impl::temp_file file{fd, temp.c_str()};
            if (std::error_code const ec = fill_temp_file(file, bytes)) return ec;
            std::uint64_t replaced_bytes = 0;
            if (std::error_code const ec = publish(temp, entry, replaced_bytes)) return ec;
            file.committed = true;
            if (std::error_code const ec = sync_directories(folder, created_folders)) return ec;
            after_change(k.data()[0], impl::accounted_size(bytes.size()), replaced_bytes, true);
            return {};
        } catch (std::bad_alloc const&) {
            return std::make_error_code(std::errc::not_enough_memory);
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }

    std::error_code remove(key const& k) noexcept {
        namespace impl = detail::directory_storage_impl;
        if (directory_.empty() || k.empty()) return {};
        try {
            // Through the fan-out folder opened without following a symlink: in a
            // directory others may write (shared mode), `ab` swapped for a symlink must
            // not make this unlink a file elsewhere.
            std::string const path = entry_path(k);
            std::size_t const slash = path.rfind('/');
            std::string const folder = path.substr(0, slash), name = path.substr(slash + 1);
            int const fd = detail::retry_on_eintr(
                [&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
            if (fd < 0) {
                int const e = errno;
                if (e == ENOENT || e == ENOTDIR) return {}; // no folder, or a file there: no entry
                return impl::errno_code(e);                 // ELOOP: the folder is a symlink
            }
            impl::file_descriptor const guard{fd};
            struct stat st {};
            bool const counted = ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
            if (::unlinkat(fd, name.c_str(), 0) == 0) {
                if (counted)
                    after_change(k.data()[0], 0, impl::accounted_size(static_cast<std::uint64_t>(st.st_size)), false);
                return {};
            }
            int const e = errno;
            if (e == ENOENT) return {};
            return impl::errno_code(e);
        } catch (std::bad_alloc const&) {
            return std::make_error_code(std::errc::not_enough_memory);
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }

    /// Adds a cache's counters (statistics_snapshot::counters(), as deltas since its
    /// last call) to the cumulative ones kept in `DIR/.cc-counters/`, and records this
    /// storage's size limit: see storage/detail/directory_counters.hpp. basic_cache
    /// calls it when it is destroyed or flushed, never on a hit or a store. Counters
    /// that are all zero write nothing.
    std::error_code record_counters(std::vector<std::pair<std::string, std::uint64_t>> const& delta) noexcept {
        if (directory_.empty()) return {};
        try {
            // This storage's own count, `lock-timeouts`, rides along.
            std::uint64_t const timeouts = state_->locks.timeouts();
            std::uint64_t const new_timeouts = timeouts - state_->lock_timeouts_recorded.load();
            bool any = new_timeouts != 0;
            for (auto const& counter : delta) any = any || counter.second != 0;
            if (!any) return {};
            auto all = delta;
            all.emplace_back("lock-timeouts", new_timeouts);
            int const e = detail::directory_storage_impl::add_counters(directory_, all, options_.max_size,
                                                                       options_.file_mode, options_.directory_mode,
                                                                       options_.umask, &state_->locks);
            if (e != 0) return detail::directory_storage_impl::errno_code(e);
            state_->lock_timeouts_recorded.store(timeouts);
            return {};
        } catch (...) {
            return std::make_error_code(std::errc::not_enough_memory);
        }
    }

    /// The counters every cache using this directory recorded, summed: `hits`,
    /// `misses.absent`, ..., `stores`, and the gauges `max-size` (the size limit of
    /// the latest writer) and `updated-s`. Empty when none were recorded (or on error).
    std::map<std::string, std::uint64_t> recorded_counters() const noexcept {
        if (directory_.empty()) return {};
        try {
            return detail::directory_storage_impl::read_counters(directory_);
        } catch (...) {
            return {};
        }
    }

    /// Every entry (key, size, last use: its mtime, refreshed at most hourly) without
    /// reading one or changing a use time: the optional Storage member `list`. Temp
    /// files, the ledger and other files are not entries; a missing directory or fan-out
    /// folder lists nothing.
    std::error_code list(std::vector<stored_entry>& out) const noexcept {
        namespace impl = detail::directory_storage_impl;
        if (directory_.empty()) return {};
        impl::file_descriptor root{impl::open_root(directory_)};
        if (!root) return errno == ENOENT ? std::error_code() : impl::errno_code(errno);
        bool out_of_memory = false;
        for (unsigned f = 0; f < 256 && !out_of_memory; ++f)
            impl::scan_folder(root.fd, f, impl::no_cutoff, impl::no_cutoff,
                              [&](std::int64_t mtime_ns, std::uint64_t, std::string_view name, std::uint64_t size) {
                                  try {
                                      if (auto k = key::from_hex(name))
                                          out.push_back({*k, size, mtime_ns / 1000000000});
                                  } catch (...) {
                                      out_of_memory = true;
                                  }
                              });
        return out_of_memory ? std::make_error_code(std::errc::not_enough_memory) : std::error_code();
    }

    /// A whole cleanup now, whatever the cache's size: recounts every folder
    /// (correcting the ledger), removes temp files older than an hour, and, when the
    /// cache is over `max_size`, evicts least recently used entries until it is under
    /// 90% of it. Waits for a cleanup step another thread or process is running.
    cleanup_result prune() noexcept {
        return run_cleanup([this](int root_fd, cleanup_result& r) {
            detail::directory_storage_impl::cleanup_totals const t =
                state_->cleanup.step(root_fd, ledger_path_, options_.file_mode, options_.umask, options_.max_size,
                                     std::numeric_limits<std::size_t>::max());
            r.entries = t.entries;
            r.bytes = t.bytes;
            r.removed = t.evicted;
            r.removed_bytes = t.evicted_bytes;
            r.temp_files_removed = t.temps_removed;
        });
    }

    /// Removes every entry and every temp file of this library — names made of a
    /// key's hex in two-hex-digit folders, and `.tmp-*` files there — and nothing else:
    /// other files, and the folders themselves, stay. A store running meanwhile in
    /// another process may fail (its temp file is gone): a counted failure there.
    cleanup_result clear() noexcept {
        return run_cleanup([this](int root_fd, cleanup_result& r) {
            namespace impl = detail::directory_storage_impl;
            std::vector<std::pair<unsigned, std::uint64_t>> counted;
            for (unsigned f = 0; f < 256; ++f) {
                impl::folder_scan const fs =
                    impl::scan_folder(root_fd, f, std::numeric_limits<std::int64_t>::max(),
                                      std::numeric_limits<std::int64_t>::max(), impl::no_entry_callback{});
                r.removed += fs.evicted;
                r.removed_bytes += fs.evicted_bytes;
                r.temp_files_removed += fs.temps_removed;
                counted.emplace_back(f, fs.bytes);
            }
            impl::set_folder_counts(ledger_path_, options_.file_mode, options_.umask, counted, impl::now_s(),
                                    &state_->locks);
        });
    }

    /// What the ledger says the entries count for (whole 4 KiB blocks each), after
    /// this object's unwritten changes are written to it (and the folders they touched
    /// recounted, when due): exact after prune() or clear() with no store running
    /// meanwhile, otherwise an estimate that the hourly recount of each folder keeps
    /// close. 0 when there is no ledger.
    std::uint64_t accounted_size() const noexcept {
        if (directory_.empty()) return 0;
        if (state_->ledger.has_changes()) {
            std::uint64_t total = 0;
            flush_ledger(detail::directory_storage_impl::now_s(), total);
        }
        if (::access(ledger_path_.c_str(), F_OK) != 0) return 0;
        detail::directory_storage_impl::ledger l;
        if (!l.open(ledger_path_, options_.file_mode, options_.umask, &state_->locks)) return 0;
        return l.total();
    }

    /// What cleanups run through this object (and its copies) did.
    directory_counters counters() const noexcept {
        directory_counters c;
        if (!state_) return c;
        c.evicted = state_->cleanup.evicted.load();
        c.evicted_bytes = state_->cleanup.evicted_bytes.load();
        c.temp_files_removed = state_->cleanup.temps_removed.load();
        c.cleanup_steps = state_->cleanup.steps.load();
        c.lock_timeouts = state_->locks.timeouts();
        return c;
    }

    /// A hit refreshes an entry's use time when it is at least this old (seconds).
    static constexpr std::int64_t refresh_after_s = 3600;

private:
    // ---- write(), step by step ----

    /// Creates a temp file with a fresh random name beside `entry` (`DIR/ab/.tmp-...`),
    /// exclusively: a name that exists already (a symlink planted at a guessed temp
    /// name, say) is never opened, another is tried. Creates the folders on the first
    /// store in `folder` (`created_folders`).
    std::error_code create_temp_file(std::string const& entry, std::string const& folder, std::string& temp,
                                     int& fd, bool& created_folders) {
        namespace impl = detail::directory_storage_impl;
        for (int attempt = 0; attempt < 4 && fd < 0; ++attempt) {
            temp.assign(entry, 0, folder.size() + 1);
            temp += impl::temp_prefix;
            if (char const* forced = impl::next_temp_suffix_for_testing) {
                impl::next_temp_suffix_for_testing = nullptr;
                temp += forced;
            } else {
                impl::append_temp_name(temp);
            }
            fd = impl::open_exclusive(temp, options_.file_mode);
            if (fd < 0 && errno == ENOENT && !created_folders) { // first store in this folder
                bool made = false;
                std::string path = folder;
                if (int const e = impl::make_directories(path, options_.directory_mode, options_.umask, made))
                    return impl::errno_code(e);
                created_folders = made;
                fd = impl::open_exclusive(temp, options_.file_mode);
            }
            if (fd < 0 && errno != EEXIST) return impl::errno_code(errno);
        }
        return fd < 0 ? impl::errno_code(EEXIST) : std::error_code();
    }

    /// Gives the temp file its mode, writes `bytes` to it, syncs it when asked, closes it.
    std::error_code fill_temp_file(detail::directory_storage_impl::temp_file& file, std::string_view bytes) const {
        namespace impl = detail::directory_storage_impl;
        if (options_.umask >= 0 &&
            ::fchmod(file.fd, static_cast<mode_t>(options_.file_mode & ~static_cast<unsigned>(options_.umask))) != 0)
            return impl::errno_code(errno);
        if (int const e = impl::write_all(file.fd, bytes.data(), bytes.size())) return impl::errno_code(e);
        if (options_.sync != durability::none)
            if (int const e = impl::fsync_fd(file.fd)) return impl::errno_code(e);
        if (int const e = file.close()) return impl::errno_code(e);
        return {};
    }

    /// Renames the temp file to the entry. A new key (the usual store) is one call that
    /// cannot replace anything, so the ledger needs no lstat; an existing entry is
    /// lstat-ed for what it counted for (`replaced_bytes`), then replaced.
    std::error_code publish(std::string const& temp, std::string const& entry, std::uint64_t& replaced_bytes) {
        namespace impl = detail::directory_storage_impl;
        int renamed = ENOSYS;
        if (!state_->no_rename_noreplace.load(std::memory_order_relaxed)) {
            renamed = impl::rename_no_replace(temp.c_str(), entry.c_str());
            if (renamed == ENOSYS || renamed == EINVAL) state_->no_rename_noreplace.store(true);
        }
        if (renamed == 0) return {};
        if (renamed != EEXIST && renamed != ENOSYS && renamed != EINVAL) return impl::errno_code(renamed);
        struct stat old {};
        if (::lstat(entry.c_str(), &old) == 0 && S_ISREG(old.st_mode))
            replaced_bytes = impl::accounted_size(static_cast<std::uint64_t>(old.st_size));
        if (::rename(temp.c_str(), entry.c_str()) != 0) return impl::errno_code(errno);
        return {};
    }

    /// With durability::full, syncs the folder (and the cache directory when the store
    /// created folders), so that the new entry survives a crash.
    std::error_code sync_directories(std::string const& folder, bool created_folders) const noexcept {
        namespace impl = detail::directory_storage_impl;
        if (options_.sync != durability::full) return {};
        if (int const e = impl::fsync_directory(folder.c_str())) return impl::errno_code(e);
        if (created_folders)
            if (int const e = impl::fsync_directory(directory_.c_str())) return impl::errno_code(e);
        return {};
    }

    /// What prune() and clear() share: this object's unwritten ledger changes written
    /// (before the figures are recounted or reset), the cache directory opened and its
    /// cleanup lock taken (waiting at most cleanup_lock_wait), then, under the
    /// process's cleanup mutex with any cleanup in progress dropped, `work(root_fd, r)`.
    /// A directory that is gone is nothing to do; other failures are `r.error`.
    template <class Work>
    cleanup_result run_cleanup(Work&& work) noexcept {
        namespace impl = detail::directory_storage_impl;
        cleanup_result r;
        if (directory_.empty()) return r;
        if (state_->ledger.has_changes()) state_->ledger.flush(impl::now_s());
        impl::file_descriptor const root{impl::open_root(directory_)};
        if (!root) {
            if (errno != ENOENT) r.error = impl::errno_code(errno);
            return r;
        }
        if (int const e = impl::lock_fd(root.fd, impl::cleanup_lock_wait)) {
            if (e == EWOULDBLOCK) state_->locks.gave_up(directory_, "so the cleanup did not run");
            r.error = impl::errno_code(e);
            return r;
        }
        try {
            std::lock_guard<std::mutex> const lock(state_->cleanup.mutex);
            state_->cleanup.reset();
            work(root.fd, r);
        } catch (...) { // bad_alloc
            r.error = std::make_error_code(std::errc::not_enough_memory);
        }
        return r;
    }

    std::error_code trust(struct stat const& st) const noexcept {
        if (options_.access == sharing::group)
            return (st.st_mode & S_IWOTH) ? make_error_code(directory_errc::unsafe_permissions) : std::error_code();
        if (st.st_uid != euid_) return make_error_code(directory_errc::foreign_owner);
        if (st.st_mode & (S_IWGRP | S_IWOTH)) return make_error_code(directory_errc::unsafe_permissions);
        return {};
    }

    /// Notes a change of `folder`'s figure in this object's ledger batch, and writes
    /// the batch when it says so; then, after a store (`may_clean`), when the ledger's
    /// total is over the limit, does one step of bounded cleanup.
    void after_change(unsigned folder, std::uint64_t added, std::uint64_t removed, bool may_clean) noexcept {
        namespace impl = detail::directory_storage_impl;
        std::int64_t const now = impl::now_ns();
        if (!state_->ledger.add(folder, added, removed, options_.max_size, now)) return;
        std::uint64_t total = 0;
        if (!flush_ledger(now / 1000000000, total)) return;
        if (!may_clean || options_.max_size == 0 || total <= options_.max_size) return;
        impl::file_descriptor root{impl::open_root(directory_)};
        if (!root) return;
        // One step of bounded work; skipped while another thread or process cleans.
        std::unique_lock<std::mutex> lock(state_->cleanup.mutex, std::try_to_lock);
        if (!lock.owns_lock() || impl::lock_fd(root.fd, std::chrono::milliseconds{0}) != 0) return;
        state_->cleanup.step(root.fd, ledger_path_, options_.file_mode, options_.umask, options_.max_size,
                             impl::cleanup_budget);
    }

    /// Writes this object's ledger batch, then recounts the folders it changed whose
    /// figures are over an hour old (sweeping their temp files older than an hour).
    /// False when the ledger cannot be used; otherwise `total` is its total.
    bool flush_ledger(std::int64_t now, std::uint64_t& total) const noexcept {
        namespace impl = detail::directory_storage_impl;
        impl::ledger_batch::flushed const f = state_->ledger.flush(now);
        if (!f.ok) return false;
        total = f.total;
        if (f.due.none()) return true;
        impl::file_descriptor root{impl::open_root(directory_)};
        if (!root) return true;
        try {
            std::vector<std::pair<unsigned, std::uint64_t>> counted;
            for (unsigned folder = 0; folder < 256; ++folder) {
                if (!f.due[folder]) continue;
                std::int64_t const temps_before = impl::now_ns() - impl::temp_stale_after_ns;
                impl::folder_scan const fs =
                    impl::scan_folder(root.fd, folder, temps_before, impl::no_cutoff, impl::no_entry_callback{});
                state_->cleanup.temps_removed += fs.temps_removed;
                counted.emplace_back(folder, fs.bytes);
            }
            std::int64_t const counted_at = impl::now_s();
            std::uint64_t const t = impl::set_folder_counts(ledger_path_, options_.file_mode, options_.umask, counted,
                                                            counted_at, &state_->locks);
            if (t == std::numeric_limits<std::uint64_t>::max()) return false;
            total = t;
            state_->ledger.counted(f.due, counted_at, total);
        } catch (...) {
        }
        return true;
    }

    std::string directory_;
    directory_options options_{};
    uid_t euid_ = 0;
    std::string ledger_path_;
    std::shared_ptr<detail::directory_storage_impl::shared_state> state_;
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::directory_storage>::value);
static_assert(compile_cache::detail::has_list<compile_cache::directory_storage>::value);
