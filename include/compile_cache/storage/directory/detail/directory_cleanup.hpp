// compile_cache: directory_storage's cleanup — counting a fan-out folder, sweeping
// stale temp files, and evicting the least recently used entries in steps of bounded
// work. Not part of the public interface; see the Storage section of docs/design.md.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/thread_without_signals.hpp>
#include <compile_cache/storage/directory/detail/directory_files.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache::detail::directory_storage_impl {

inline constexpr std::int64_t temp_stale_after_ns = std::int64_t{3600} * 1000000000; ///< one hour
inline constexpr std::int64_t no_cutoff = std::numeric_limits<std::int64_t>::min();

/// How far ahead of now a use time (mtime) may be and still be believed: a day.
inline constexpr std::int64_t future_use_slack_ns = std::int64_t{86400} * 1000000000;

/// How far below every believable use time an unbelievable one is ranked: 2^62 ns.
inline constexpr std::int64_t future_use_shift_ns = std::int64_t{1} << 62;

/// The use time by which eviction ranks an entry last used (mtime) at `mtime`, at `now`
/// (both in nanoseconds): `mtime` itself, or, when it is more than future_use_slack_ns
/// ahead of `now`, `mtime - future_use_shift_ns`: below every believable (non-negative)
/// use time, so that such entries go first, and among themselves in their own order, so
/// that a cutoff among them takes only as many as the target needs.
inline std::int64_t ranked_use_time(std::int64_t mtime, std::int64_t now) noexcept {
    bool const future = now <= std::numeric_limits<std::int64_t>::max() - future_use_slack_ns &&
                        mtime > now + future_use_slack_ns;
    return future ? std::max(no_cutoff + 1, mtime - future_use_shift_ns) : mtime;
}

/// Whether a scan that sweeps temp files also judges claim files (remove_stale_claim:
/// a read of the claim and of its owner's /proc entry each); a scan made only to count a
/// folder (the ledger's recount after a store) leaves them to the cleanups.
enum class claim_sweep { judged, left };

/// What one look at one fan-out folder found and did.
struct folder_scan {
    std::uint64_t bytes = 0;   ///< accounted bytes of the entries left
    std::uint64_t entries = 0; ///< entries left
    std::uint64_t evicted = 0, evicted_bytes = 0;
    std::uint64_t temps_removed = 0;
    std::uint64_t claims_removed = 0; ///< stale claim files (remove_stale_claim)
    /// Files it meant to remove and could not (the unlink failed: permission, a
    /// read-only mount), and a folder that is there but could not be read; the first
    /// such error (an errno value) in `error`.
    std::uint64_t not_removed = 0;
    int error = 0;
    /// The folder is there but could not be listed (another user's, in a shared
    /// directory): `bytes` and `entries` say nothing of it, and a count keeps its figure.
    bool unlisted = false;
    std::size_t visited = 0; ///< names looked at: the work done

    void failed(int e) noexcept {
        ++not_removed;
        if (error == 0) error = e;
    }
};

/// A fan-out folder being looked at, possibly over several cleanup steps: its listing
/// stays open between them, so that a step can stop after a bounded number of names
/// and the next one go on from there. A listing opened before a fork is not used in
/// the child (the child's descriptor would share the parent's position): the look at
/// that folder starts over.
struct folder_cursor {
    unsigned folder = 256; ///< the folder being looked at; 256: none
    DIR* dir = nullptr;    ///< its listing; null when it could not be opened (nothing to look at)
    unsigned generation = 0;
    folder_scan found;            ///< what the look found so far
    std::uint64_t before = 0;     ///< the ledger's figure for the folder when the look began
    folder_cursor() = default;
    folder_cursor(folder_cursor const&) = delete;
    folder_cursor& operator=(folder_cursor const&) = delete;
    ~folder_cursor() { close(); }

    bool open_on(unsigned index) const noexcept { return folder == index && generation == fork_generation(); }
    void close() noexcept {
        if (dir != nullptr && generation == fork_generation()) ::closedir(dir); // closes its descriptor
        dir = nullptr;
        folder = 256;
        found = folder_scan{};
        before = 0;
    }
};

/// The most a call of scan_folder_part may do: names looked at, files unlinked.
struct scan_limits {
    std::size_t names = std::numeric_limits<std::size_t>::max();
    std::size_t unlinks = std::numeric_limits<std::size_t>::max();
};

/// What one call of scan_folder_part did.
struct scan_progress {
    bool finished = false; ///< the folder was read to its end (or there was nothing to read)
    std::size_t names = 0, unlinks = 0;
};

/// Removes the claim file `name` (single flight: directory_claims.hpp) of the folder open
/// at `folder_fd` when it is stale: its owner ran on this machine and boot and is gone; or
/// its owner cannot be asked (another machine's, or a text that names none) and the claim
/// is older than the expiry it records (`expiry_ms=`; an hour when it records none); or it
/// has stayed empty for over a second (its writer died before writing). A claim of a live
/// process of this machine stays, however old: its owner removes it. The file is read
/// again just before the unlink and left if it changed (taken over meanwhile). 1: removed;
/// 0: kept (also one that cannot be read: another user's, or not a file; or gone
/// meanwhile); -errno: judged stale, it could not be removed. Defined in
/// storage/directory/impl/directory_claims.ipp.
COMPILE_CACHE_DECL int remove_stale_claim(int folder_fd, char const* name) noexcept;

/// For tests only: called by a scan just before it unlinks an entry it evicts, with the
/// folder's descriptor and the entry's name (to remove it first, as another process may).
inline thread_local void (*before_evicting_unlink_for_testing)(int folder_fd, char const* name) = nullptr;

/// Looks at the names of fan-out folder `index` from where `cursor` stopped (opening it
/// when the cursor is on another folder), within `limits`: entries (regular files with
/// an entry name) are counted, or unlinked when their use time (ranked_use_time of their
/// mtime, at the call's start) is at or before `evict_up_to`; temp files last written
/// before `temps_before` are unlinked, and, unless
/// `temps_before` is no_cutoff (a listing) or `claims` is left, stale claim files
/// (remove_stale_claim); anything else is left alone. `on_entry(mtime_ns, accounted_bytes, name, file_size)` is called
/// for each entry kept (its mtime as it is, not ranked; what it throws, this throws). An
/// entry found gone by its unlink (another process removed it first) is neither evicted
/// nor kept: it is not counted at all. A missing folder is an empty one; a folder that is
/// there but cannot be listed sets `unlisted` (its entries are not counted). Each name is
/// stat-ed once.
template <class OnEntry>
scan_progress scan_folder_part(int root_fd, folder_cursor& cursor, unsigned index, std::int64_t temps_before,
                               std::int64_t evict_up_to, scan_limits limits, OnEntry&& on_entry,
                               claim_sweep claims = claim_sweep::judged) {
    scan_progress progress;
    folder_scan& out = cursor.found;
    char const* const folder = folder_name(index);
    std::int64_t const now = evict_up_to != no_cutoff ? now_ns() : 0;
    if (!cursor.open_on(index)) {
        std::uint64_t const before = cursor.before;
        cursor.close();
        cursor.before = before;
        cursor.folder = index;
        cursor.generation = fork_generation();
        int const fd = ::openat(root_fd, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            // No folder, a file or a symlink in its place (not the cache's): nothing of
            // ours. A folder that cannot be read (another user's) holds entries that stay.
            int const e = errno;
            if (e != ENOENT && e != ENOTDIR && e != ELOOP) {
                out.failed(e);
                out.unlisted = true;
            }
            progress.finished = true;
            return progress;
        }
        cursor.dir = ::fdopendir(fd);
        if (cursor.dir == nullptr) {
            out.failed(errno);
            out.unlisted = true;
            ::close(fd);
            progress.finished = true;
            return progress;
        }
    }
    if (cursor.dir == nullptr) {
        progress.finished = true;
        return progress;
    }
    int const fd = ::dirfd(cursor.dir);
    while (progress.names < limits.names && progress.unlinks < limits.unlinks) {
        dirent* const e = ::readdir(cursor.dir);
        if (e == nullptr) {
            progress.finished = true;
            break;
        }
        std::string_view const name = e->d_name;
        if (name == "." || name == "..") continue;
        ++out.visited;
        ++progress.names;
        bool const entry = is_entry_name(name, folder);
        if (!entry && !is_temp_name(name)) {
            // A claim left by a process that is gone (or past its bound) goes with the
            // temp files; a listing, which sweeps none, leaves it.
            if (temps_before != no_cutoff && claims == claim_sweep::judged && is_claim_name(name, folder)) {
                ++progress.unlinks;
                int const r = remove_stale_claim(fd, e->d_name);
                if (r > 0)
                    ++out.claims_removed;
                else if (r < 0)
                    out.failed(-r);
            }
            continue;
        }
        struct stat st {};
        if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        std::int64_t const mtime = mtime_ns(st);
        if (!entry) {
            if (mtime < temps_before) {
                ++progress.unlinks;
                if (::unlinkat(fd, e->d_name, 0) == 0)
                    ++out.temps_removed;
                else if (errno != ENOENT)
                    out.failed(errno);
            }
            continue;
        }
        std::uint64_t const bytes = accounted_size(static_cast<std::uint64_t>(st.st_size));
        if (evict_up_to != no_cutoff && ranked_use_time(mtime, now) <= evict_up_to) {
            ++progress.unlinks;
            if (before_evicting_unlink_for_testing != nullptr) before_evicting_unlink_for_testing(fd, e->d_name);
            if (::unlinkat(fd, e->d_name, 0) == 0) {
                ++out.evicted;
                out.evicted_bytes += bytes;
                continue;
            }
            if (errno == ENOENT) continue; // removed first by another process, which accounts for it
            out.failed(errno);
        }
        ++out.entries;
        out.bytes += bytes;
        on_entry(mtime, bytes, name, static_cast<std::uint64_t>(st.st_size));
    }
    return progress;
}

/// scan_folder_part over the whole of fan-out folder `index` at once.
template <class OnEntry>
folder_scan scan_folder(int root_fd, unsigned index, std::int64_t temps_before, std::int64_t evict_up_to,
                        OnEntry&& on_entry, claim_sweep claims = claim_sweep::judged) {
    folder_cursor cursor;
    scan_folder_part(root_fd, cursor, index, temps_before, evict_up_to, scan_limits{}, on_entry, claims);
    return cursor.found;
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
    /// Opens the ledger and reads the figures before counting, on first use (a cleanup
    /// step that counts no folder touches no ledger). A ledger that cannot be used, or
    /// whose lock is held all of ledger_lock_wait (counted in `events`), gets no count
    /// written: the folders are scanned all the same.
    COMPILE_CACHE_DECL folder_counter(std::string const& ledger_path, unsigned file_mode, int exact_umask,
                                      lock_events* events = nullptr) noexcept;

    /// Just before `folder` is scanned: reads its figure again if the ledger's lock is
    /// free now (it is not waited for: the figure read at the start is used then), and
    /// returns it: a scan that ends in a later step, with another folder_counter, gives
    /// it back to counted().
    COMPILE_CACHE_DECL std::uint64_t before_scan(unsigned folder) noexcept;

    /// What a scan found in `folder` (the bytes its entries, those left, count for), and
    /// the folder's figure when the scan began (what before_scan returned). A folder the
    /// scan could not list (folder_scan::unlisted) is not counted: its figure stays.
    COMPILE_CACHE_DECL void counted(unsigned folder, folder_scan const& found, std::uint64_t figure_before) noexcept;

    /// Entries evicted from a folder whose count will not be written by this counter
    /// (a scan that spans cleanup steps, during which this process's stores may land in
    /// the folder and be listed or not: its count is not exact, so it corrects
    /// nothing). Its figure is lowered by `bytes` when the counter is saved.
    void evicted(unsigned folder, std::uint64_t bytes) noexcept {
        minus_[folder & 0xff] += bytes;
        shrunk_.set(folder & 0xff);
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
    /// Opens the ledger and reads the figures, once.
    COMPILE_CACHE_DECL void open() noexcept;

    std::string const& path_; ///< for the lock_events' line; outlives the counter
    unsigned file_mode_;
    int exact_umask_;
    lock_events* events_;
    bool opened_ = false;
    file_descriptor fd_;
    bool usable_ = false; ///< the figures before were read
    bool sound_ = false;  ///< ...from a whole ledger (so a slot alone can be read again)
    ledger_slots before_{};
    std::array<std::uint64_t, 256> count_{};
    std::bitset<256> seen_;
    std::array<std::uint64_t, 256> minus_{};
    std::bitset<256> shrunk_;
};

/// What a cleanup (a step, prune() or clear()) did.
struct cleanup_totals {
    std::uint64_t entries = 0, bytes = 0; ///< left, when a whole pass was made
    std::uint64_t evicted = 0, evicted_bytes = 0;
    std::uint64_t temps_removed = 0;
    std::uint64_t claims_removed = 0;
    std::uint64_t not_removed = 0; ///< files that could not be removed (folder_scan::not_removed)
    int error = 0;                 ///< the first of those errors
    bool complete = false; ///< a whole survey was made, so entries and bytes are exact

    void add_failures(std::uint64_t n, int e) noexcept {
        not_removed += n;
        if (error == 0) error = e;
    }
};

/// The work one cleanup step may do: names looked at (a fan-out folder opened counts
/// as one) and files unlinked. A step stops at whichever runs out first, in the middle of a
/// folder if need be, and the next step goes on from there.
struct cleanup_budget {
    std::size_t names;
    std::size_t unlinks;
    /// A whole cleanup in one call (prune()): entries are kept by name, so that each
    /// is stat-ed once and the oldest are unlinked by name, with no second pass.
    bool whole = false;
};

/// What the store that writes a batch (ledger_batch_stores: 256 stores) may spend on
/// cleanup when it finds the cache over its limit: a little more than the batch's
/// share of the work (32 names and 2 unlinks a store), so that a limit hit
/// continuously is kept (the batch evicts, on average, what it adds), while 255 stores
/// in 256 do none and no store pays for the whole of a cleanup. A survey of N entries
/// takes N/8192 such steps, during which the cache may exceed its limit by those
/// batches' entries; the sweep that follows evicts up to 512 entries a step until the
/// cache is under 90% of the limit.
inline constexpr cleanup_budget store_cleanup_budget{32 * ledger_batch_stores, 2 * ledger_batch_stores, false};
/// prune(): everything at once.
inline constexpr cleanup_budget whole_cleanup_budget{std::numeric_limits<std::size_t>::max(),
                                                     std::numeric_limits<std::size_t>::max(), true};

/// The entry names a whole cleanup keeps: each in binary (an entry's name is an even
/// number of lower-case hex digits, is_entry_name), without its first byte (its
/// folder's), in blocks of 1 MiB that never move — a million names cost no copy as they
/// grow, and half the memory of their text.
class entry_name_blocks {
public:
    /// Keeps `hex` (an entry's name, at most 128 digits); its place, for `get`.
    std::uint32_t add(std::string_view hex) {
        std::size_t const size = hex.size() / 2 - 1;
        if (blocks_.empty() || used_ + size >= block_size) { // (`at` always inside a block, a 0-byte name's too)
            std::unique_ptr<unsigned char[]> block(new unsigned char[block_size]); // (not zeroed: written first)
            blocks_.push_back(std::move(block));
            used_ = 0;
        }
        unsigned char* const out = blocks_.back().get() + used_;
        for (std::size_t i = 0; i < size; ++i)
            out[i] = static_cast<unsigned char>(digit(hex[2 + 2 * i]) << 4 | digit(hex[3 + 2 * i]));
        auto const at = static_cast<std::uint32_t>((blocks_.size() - 1) * block_size + used_);
        used_ += size;
        return at;
    }
    /// The name of `hex_size` digits kept at `at` in fan-out folder `folder`, into `out`.
    void get(std::uint32_t at, std::size_t hex_size, char const* folder, std::string& out) const {
        static constexpr char digits[] = "0123456789abcdef";
        unsigned char const* const in = blocks_[at / block_size].get() + at % block_size;
        out.assign(folder, 2);
        for (std::size_t i = 0; i + 1 < hex_size / 2; ++i) {
            out += digits[in[i] >> 4];
            out += digits[in[i] & 0xf];
        }
    }
    void clear() noexcept {
        blocks_.clear();
        blocks_.shrink_to_fit();
        used_ = 0;
    }

    /// The most names whose places fit 32 bits (add's return).
    static constexpr std::uint64_t max_names = std::uint64_t{1} << 22;

private:
    static constexpr std::size_t block_size = std::size_t{1} << 20;
    static_assert(block_size >= 64, "a name of 128 hex digits fits a block");
    // max_names names of at most 63 bytes each fill blocks that each hold at least
    // block_size - 63 bytes (a name never straddles two), and end before 2^32.
    static_assert((max_names * 63 / (block_size - 63) + 1) * block_size <= std::uint64_t{1} << 32,
                  "names' places fit 32 bits");
    static unsigned digit(char c) noexcept {
        return c <= '9' ? static_cast<unsigned>(c - '0') : static_cast<unsigned>(c - 'a' + 10);
    }
    std::vector<std::unique_ptr<unsigned char[]>> blocks_;
    std::size_t used_ = 0;
};

/// For tests only: when not 0, a whole cleanup names at most this many entries
/// (cleanup_state::max_named_records otherwise), so that a test reaches the sweep a
/// cache of millions would.
inline std::size_t max_named_records_for_testing = 0;

/// For tests only: called by a whole cleanup between its survey and its eviction, so
/// that a test can store or use an entry there.
inline thread_local void (*before_named_eviction_for_testing)() = nullptr;

/// A process's cleanup in progress. A cleanup is a survey — every folder counted,
/// every entry's use time and size noted — then eviction of the oldest entries until
/// the total is under 90% of the limit.
/// - prune() (a whole cleanup) keeps the entries' names as it surveys, then unlinks the
///   oldest by name: each entry is stat-ed once, the folders are listed once, and an
///   entry is stat-ed again just before its unlink and kept if its use time moved since
///   the survey (stored again or used meanwhile).
/// - a store's cleanup proceeds in steps of bounded work (store_cleanup_budget), one
///   step per store that finds the cache over its limit, a step stopping in the middle
///   of a folder if need be. It keeps only (use time, size) pairs, from which it finds
///   the use time at or before which entries must go, then sweeps the folders
///   unlinking those. Entries used since the survey have a newer mtime and survive the
///   sweep. A sweep notes the (use time, size) of every entry it keeps, so that it is
///   the survey of the next sweep: when a sweep ends with the cache still over 90% of
///   the limit (stores went on meanwhile) another starts at once from its notes, and
///   when the cache next goes over the limit (within ten minutes) a sweep starts from
///   them with no survey. With the limit hit continuously, a store's cleanup is then
///   one sweep over and over, each entry stat-ed once a pass.
struct cleanup_state {
    /// An entry seen by a whole cleanup's survey; its name is at `name_at`, `name_size`
    /// hex digits, in `names` or, for a folder from `upper_half` on, `upper_names`.
    struct record {
        std::int64_t mtime;
        std::uint64_t bytes;
        std::uint32_t name_at;
        std::uint8_t name_size;
        std::uint8_t folder;
    };
    enum class phase { idle, survey, sweep };

    std::mutex mutex; // one cleaner per process at a time; others skip (try_lock)
    phase current = phase::idle;
    unsigned next = 0;
    folder_cursor cursor; ///< where the current step stopped in folder `next`
    std::int64_t started_s = 0;
    bool keep_names = false;
    std::vector<record> records;
    entry_name_blocks names;      ///< the names of the records of folders below `upper_half`
    entry_name_blocks upper_names; ///< those of folders from `upper_half` on, which a second thread surveyed
    unsigned upper_half = 256;    ///< 256: every name is in `names`
    std::vector<std::pair<std::int64_t, std::uint64_t>> samples;
    std::vector<std::pair<std::int64_t, std::uint64_t>> swept; ///< the entries the sweep in progress kept
    bool warm = false; ///< `samples` are those of the last whole sweep, made at `started_s`
    std::uint64_t surveyed_bytes = 0, surveyed_entries = 0;
    std::int64_t cutoff = no_cutoff;

    // Counters, for the curious and for tests.
    std::atomic<std::uint64_t> evicted{0}, evicted_bytes{0}, temps_removed{0}, steps{0}, claims_removed{0};
    std::atomic<std::uint64_t> threads{0}; ///< second threads a whole survey started (survey_in_two)
    lock_events* events = nullptr; ///< where a ledger lock given up on is counted

    /// Past this many entries a whole cleanup keeps (use time, size) pairs only, as a
    /// store's does, and sweeps (a second stat of each entry) instead of naming: 4 M
    /// records and names take about 220 MB (32-byte keys; 350 MB with 64-byte keys), and
    /// up to 48 MB more while the second thread's records are merged (survey_in_two),
    /// each of whose halves names at most half of them.
    static constexpr std::size_t max_named_records = std::size_t{1} << 22;
    static_assert(max_named_records <= entry_name_blocks::max_names, "names' places fit 32 bits");
    /// A whole cleanup's survey in two threads: the folders from this one on are looked at
    /// by a second thread (survey_in_two).
    static constexpr unsigned second_thread_from = 128;
    /// max_named_records, or what a test set in max_named_records_for_testing.
    COMPILE_CACHE_DECL static std::size_t named_limit() noexcept;

    COMPILE_CACHE_DECL void reset() noexcept;

    COMPILE_CACHE_DECL void drop_names();

    /// One step, with the root already locked by the caller (flock on `root_fd`),
    /// within `budget`. `total` is what the ledger said the cache holds (0: not known).
    /// A store's step passes its ledger batch (`batch`), where evictions go.
    COMPILE_CACHE_DECL cleanup_totals step(int root_fd, std::string const& ledger_path, unsigned file_mode,
                                           int exact_umask, std::uint64_t max_size, cleanup_budget budget,
                                           std::uint64_t total = 0, ledger_batch* batch = nullptr) noexcept;

private:
    /// What one step works with.
    struct step_context {
        int root_fd;
        std::int64_t now_ns; ///< when the step began: what use times are ranked against (ranked_use_time)
        std::int64_t now_s;
        std::int64_t temps_before; ///< temp files last written before this go
        std::uint64_t target;      ///< 90% of the limit: where eviction stops
        cleanup_budget budget;
        folder_counter& counter;   ///< where each folder's figure goes (a whole cleanup)
        /// A store's step: evictions go to the storage's ledger batch, which the store
        /// writes once the step is done, and no folder is counted (no ledger I/O in the
        /// step); the hourly recount of each folder corrects the figures.
        ledger_batch* batch = nullptr;
        std::uint64_t max_size = 0;
        std::size_t names = 0, unlinks = 0; ///< the work done so far

        bool spent() const noexcept { return names >= budget.names || unlinks >= budget.unlinks; }
        scan_limits left() const noexcept { return {budget.names - names, budget.unlinks - unlinks}; }
        void add(scan_progress const& p) noexcept {
            names = p.names > budget.names - names ? budget.names : names + p.names;
            unlinks = p.unlinks > budget.unlinks - unlinks ? budget.unlinks : unlinks + p.unlinks;
        }
    };

    COMPILE_CACHE_DECL void step_impl(int root_fd, std::string const& ledger_path, unsigned file_mode, int exact_umask,
                                      std::uint64_t max_size, cleanup_budget budget, std::uint64_t total,
                                      ledger_batch* batch, cleanup_totals& out);

    /// Starts a survey, unless one is under way and younger than ten minutes (and the
    /// clock has not gone back): a stale one starts over. A whole cleanup (`whole`)
    /// always starts over, keeping names. With the notes of a sweep younger than ten
    /// minutes and the cache's `total` known, starts a sweep from them instead.
    COMPILE_CACHE_DECL void begin_or_resume(std::int64_t now_s, bool whole, std::uint64_t total,
                                            std::uint64_t target);

    /// Looks at folder `next` from where the cursor stopped, within what is left of the
    /// step's budget, unlinking entries used at or before `evict_up_to`; adds what it
    /// did to `out`. True when the folder is done: its figure is then counted and the
    /// cursor moves on to the next folder.
    template <class OnEntry>
    bool scan_next(step_context& c, cleanup_totals& out, std::int64_t evict_up_to, OnEntry&& on_entry);

    /// Counts folders from `next` on while the budget lasts, noting each entry's use
    /// time and size (with its name, in a whole cleanup, while they fit in
    /// max_named_records). A whole cleanup from its first folder surveys in two threads
    /// (survey_in_two).
    COMPILE_CACHE_DECL void survey_folders(step_context& c, cleanup_totals& out);

    /// A whole cleanup's survey, from its first folder, with the folders from
    /// second_thread_from on looked at by a second thread (which takes no signal): its
    /// records' names go to `upper_names`. The work is the same (each entry stat-ed once);
    /// its wall time is about half on an idle second core. True when every folder was
    /// looked at (`next` is 256). False when it looked at none: names are not kept, or
    /// no thread could be started (the upper folders' ledger figures were read, no more).
    /// Also false, with `next` at second_thread_from, when the second thread failed (out
    /// of memory): this thread looks at its folders again, and the temp files and claims
    /// that thread removed are counted.
    COMPILE_CACHE_DECL bool survey_in_two(step_context& c, cleanup_totals& out);

    /// Adds what a look at a folder found (`now`), less what an earlier step of the same
    /// look found (`was`), to `out`.
    static void add_found(cleanup_totals& out, folder_scan const& was, folder_scan const& now) noexcept {
        out.evicted += now.evicted - was.evicted;
        out.evicted_bytes += now.evicted_bytes - was.evicted_bytes;
        out.temps_removed += now.temps_removed - was.temps_removed;
        out.claims_removed += now.claims_removed - was.claims_removed;
        if (now.not_removed != was.not_removed) out.add_failures(now.not_removed - was.not_removed, now.error);
    }

    /// Unlinks the named entries oldest first until the total is under the target, and
    /// takes them off the folders' figures in the ledger. Each unlink goes through its
    /// folder opened without following a symlink, so that a folder swapped for a
    /// symlink since the survey (in a directory others may write) cannot turn eviction
    /// on files elsewhere.
    COMPILE_CACHE_DECL void evict_oldest_named(step_context& c, cleanup_totals& out);

    /// Too many entries to name: finds the use time at or before which entries go (the
    /// oldest of `samples` until the rest of `total`, at most their sum, is under
    /// `target`), for the sweep that follows.
    COMPILE_CACHE_DECL void start_sweep(std::uint64_t total, std::uint64_t target);

    /// Sweeps folders from `next` on while the budget lasts, unlinking the entries used
    /// at or before the cutoff.
    COMPILE_CACHE_DECL void sweep_folders(step_context& c, cleanup_totals& out);
};

} // namespace compile_cache::detail::directory_storage_impl

#include <compile_cache/storage/directory/detail/impl/directory_cleanup.ipp>
