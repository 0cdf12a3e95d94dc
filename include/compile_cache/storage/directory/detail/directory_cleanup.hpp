// compile_cache: directory_storage's cleanup — counting a fan-out folder, sweeping
// stale temp files, and evicting the least recently used entries in steps of bounded
// work. Not part of the public interface; see the Storage section of docs/design.md.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/storage/directory/detail/directory_files.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache::detail::directory_storage_impl {

inline constexpr std::int64_t temp_stale_after_ns = std::int64_t{3600} * 1000000000; ///< one hour
inline constexpr std::int64_t no_cutoff = std::numeric_limits<std::int64_t>::min();

/// What one look at one fan-out folder found and did.
struct folder_scan {
    std::uint64_t bytes = 0;   ///< accounted bytes of the entries left
    std::uint64_t entries = 0; ///< entries left
    std::uint64_t evicted = 0, evicted_bytes = 0;
    std::uint64_t temps_removed = 0;
    /// Files it meant to remove and could not (the unlink failed: permission, a
    /// read-only mount), and a folder that is there but could not be read; the first
    /// such error (an errno value) in `error`.
    std::uint64_t not_removed = 0;
    int error = 0;
    std::size_t visited = 0; ///< names looked at: the work done

    void failed(int e) noexcept {
        ++not_removed;
        if (error == 0) error = e;
    }
};

/// Looks at every name in fan-out folder `index`: entries (regular files with an
/// entry name) are counted, or unlinked when their use time (mtime) is at or before
/// `evict_up_to`; temp files last written before `temps_before` are unlinked;
/// anything else is left alone. `on_entry(mtime_ns, accounted_bytes, name, file_size)`
/// is called for each entry kept. A missing folder is an empty one.
template <class OnEntry>
folder_scan scan_folder(int root_fd, unsigned index, std::int64_t temps_before, std::int64_t evict_up_to,
                        OnEntry&& on_entry) noexcept {
    folder_scan out;
    char const* const folder = folder_name(index);
    int const fd = ::openat(root_fd, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        // No folder, a file or a symlink in its place (not the cache's): nothing of
        // ours. A folder that cannot be read (another user's) holds entries that stay.
        int const e = errno;
        if (e != ENOENT && e != ENOTDIR && e != ELOOP) out.failed(e);
        return out;
    }
    DIR* const d = ::fdopendir(fd);
    if (d == nullptr) {
        out.failed(errno);
        ::close(fd);
        return out;
    }
    while (dirent* e = ::readdir(d)) {
        std::string_view const name = e->d_name;
        if (name == "." || name == "..") continue;
        ++out.visited;
        bool const entry = is_entry_name(name, folder);
        if (!entry && !is_temp_name(name)) continue;
        struct stat st {};
        if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        std::int64_t const mtime = mtime_ns(st);
        if (!entry) {
            if (mtime < temps_before) {
                if (::unlinkat(fd, e->d_name, 0) == 0)
                    ++out.temps_removed;
                else if (errno != ENOENT)
                    out.failed(errno);
            }
            continue;
        }
        std::uint64_t const bytes = accounted_size(static_cast<std::uint64_t>(st.st_size));
        if (mtime <= evict_up_to) {
            int const r = ::unlinkat(fd, e->d_name, 0);
            if (r == 0 || errno == ENOENT) {
                ++out.evicted;
                out.evicted_bytes += bytes;
                continue;
            }
            out.failed(errno);
        }
        ++out.entries;
        out.bytes += bytes;
        on_entry(mtime, bytes, name, static_cast<std::uint64_t>(st.st_size));
    }
    ::closedir(d); // closes fd
    return out;
}

struct no_entry_callback {
    void operator()(std::int64_t, std::uint64_t, std::string_view, std::uint64_t) const noexcept {}
};

/// The ledger as a scan that counts folders uses it. A folder's count does not
/// replace its figure: it corrects it. The figures are read (under the lock) before
/// any folder is scanned, and when the counts are written (under the lock again)
/// each folder's figure becomes what it is then plus (count - what it was before the
/// scan). So a change another process added meanwhile (a store whose own cleanup was
/// skipped, as one cleaner runs at a time) is kept, never overwritten by a count made
/// before it: with four processes under a small limit, that loss let the ledger say
/// the cache was nearly empty while the disk held megabytes, and no store cleaned it.
/// A store that landed after its folder's figure was read and before the folder was
/// listed is counted twice until the next count — above what the disk holds, never
/// below. So that this window stays short, each folder's figure is read again just
/// before its scan when the lock is free at that moment (a try, never a wait).
class folder_counter {
public:
    /// Opens the ledger and reads the figures before counting. A ledger that cannot be
    /// used, or whose lock is held all of ledger_lock_wait (counted in `events`), gets
    /// no count written: the folders are scanned all the same.
    COMPILE_CACHE_DECL folder_counter(std::string const& ledger_path, unsigned file_mode, int exact_umask,
                                      lock_events* events = nullptr) noexcept;

    /// Just before `folder` is scanned: reads its figure again if the ledger's lock is
    /// free now (it is not waited for: the figure read at the start is used then).
    COMPILE_CACHE_DECL void before_scan(unsigned folder) noexcept;

    /// What a scan found in `folder`: the bytes its entries (those left) count for.
    void counted(unsigned folder, std::uint64_t bytes) noexcept {
        count_[folder & 0xff] = bytes;
        seen_.set(folder & 0xff);
    }

    /// Entries of a counted folder removed after its scan.
    void removed(unsigned folder, std::uint64_t bytes) noexcept {
        std::uint64_t& c = count_[folder & 0xff];
        c -= std::min(c, bytes);
    }

    /// Writes the corrections of the folders counted so far, marking them counted at
    /// `now`, and starts afresh from the figures written. Returns the ledger's total,
    /// or max() when nothing could be written.
    COMPILE_CACHE_DECL std::uint64_t save(std::int64_t now) noexcept;

private:
    std::string const& path_; ///< for the lock_events' line; outlives the counter
    lock_events* events_;
    file_descriptor fd_;
    bool usable_ = false; ///< the figures before were read
    bool sound_ = false;  ///< ...from a whole ledger (so a slot alone can be read again)
    ledger_slots before_{};
    std::array<std::uint64_t, 256> count_{};
    std::bitset<256> seen_;
};

/// What a cleanup (a step, prune() or clear()) did.
struct cleanup_totals {
    std::uint64_t entries = 0, bytes = 0; ///< left, when a whole pass was made
    std::uint64_t evicted = 0, evicted_bytes = 0;
    std::uint64_t temps_removed = 0;
    std::uint64_t not_removed = 0; ///< files that could not be removed (folder_scan::not_removed)
    int error = 0;                 ///< the first of those errors
    bool complete = false; ///< a whole survey was made, so entries and bytes are exact

    void add_failures(std::uint64_t n, int e) noexcept {
        not_removed += n;
        if (error == 0) error = e;
    }
};

/// A process's cleanup in progress. A cleanup is a survey — every folder counted,
/// every entry's use time and size noted — then eviction of the oldest entries until
/// the total is under 90% of the limit. It proceeds in steps of bounded work, one
/// step per store that finds the cache over its limit, so that no store pays for
/// the whole of a large cache:
/// - a survey that fits in one step keeps the entries' names and evicts them
///   directly, exactly oldest first;
/// - a longer one keeps only (use time, size) pairs, from which it finds the use
///   time at or before which entries must go, then sweeps the folders unlinking
///   those, a few folders per step, stopping once the ledger is under the target.
/// Entries used since the survey have a newer mtime and survive the sweep.
struct cleanup_state {
    struct record {
        std::int64_t mtime;
        std::uint64_t bytes;
        unsigned folder;
        std::string name;
    };
    enum class phase { idle, survey, sweep };

    std::mutex mutex; // one cleaner per process at a time; others skip (try_lock)
    phase current = phase::idle;
    unsigned next = 0;
    std::int64_t started_s = 0;
    bool keep_names = true;
    std::vector<record> records;
    std::vector<std::pair<std::int64_t, std::uint64_t>> samples;
    std::uint64_t surveyed_bytes = 0, surveyed_entries = 0;
    std::int64_t cutoff = no_cutoff;

    // Counters, for the curious and for tests.
    std::atomic<std::uint64_t> evicted{0}, evicted_bytes{0}, temps_removed{0}, steps{0};
    lock_events* events = nullptr; ///< where a ledger lock given up on is counted

    static constexpr std::size_t max_named_records = 4096;

    COMPILE_CACHE_DECL void reset() noexcept;

    COMPILE_CACHE_DECL void drop_names();

    /// One step, with the root already locked by the caller (flock on `root_fd`).
    /// `budget` bounds the work (folders count 4, names 1); max() for prune().
    COMPILE_CACHE_DECL cleanup_totals step(int root_fd, std::string const& ledger_path, unsigned file_mode,
                                           int exact_umask, std::uint64_t max_size, std::size_t budget) noexcept;

private:
    /// What one step works with.
    struct step_context {
        int root_fd;
        std::int64_t now_s;
        std::int64_t temps_before; ///< temp files last written before this go
        std::uint64_t target;      ///< 90% of the limit: where eviction stops
        std::size_t budget;
        folder_counter& counter;   ///< where each folder's figure goes
        std::size_t cost = 0;
    };

    COMPILE_CACHE_DECL void step_impl(int root_fd, std::string const& ledger_path, unsigned file_mode, int exact_umask,
                                      std::uint64_t max_size, std::size_t budget, cleanup_totals& out);

    /// Starts a survey, unless one is under way and younger than ten minutes (and the
    /// clock has not gone back): a stale one starts over.
    COMPILE_CACHE_DECL void begin_or_resume(std::int64_t now_s) noexcept;

    /// Counts folders from `next` on while the budget lasts, noting each entry's use
    /// time and size (with its name while they fit in max_named_records).
    COMPILE_CACHE_DECL void survey_folders(step_context& c, cleanup_totals& out);

    /// Unlinks the named entries oldest first until the total is under the target, and
    /// takes them off the folders' figures in the ledger. Each unlink goes through its
    /// folder opened without following a symlink, so that a folder swapped for a
    /// symlink since the survey (in a directory others may write) cannot turn eviction
    /// on files elsewhere.
    COMPILE_CACHE_DECL void evict_oldest_named(step_context& c, cleanup_totals& out);

    /// Too many entries to name: finds the use time at or before which entries go (the
    /// oldest until the rest is under `target`), for the sweep that follows.
    COMPILE_CACHE_DECL void start_sweep(std::uint64_t target);

    /// Sweeps folders from `next` on while the budget lasts, unlinking the entries used
    /// at or before the cutoff.
    COMPILE_CACHE_DECL void sweep_folders(step_context& c, cleanup_totals& out);
};

} // namespace compile_cache::detail::directory_storage_impl

#include <compile_cache/storage/directory/detail/impl/directory_cleanup.ipp>
