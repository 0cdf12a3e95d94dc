// compile_cache: a Storage in a directory of the local file system, one file per
// entry, written atomically (exclusive temp file in the target folder, then rename),
// with a size limit kept by least-recently-used eviction. POSIX only.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/error_category_object.hpp>

#include <compile_cache/detail/env.hpp>
#include <compile_cache/detail/fork_handlers.hpp>
#include <compile_cache/detail/fork_list.hpp>
#include <compile_cache/detail/held_batch_bounds.hpp>
#include <compile_cache/detail/made_once.hpp>
#include <compile_cache/detail/per_thread.hpp>
#include <compile_cache/detail/posix_io.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/concept.hpp>
#include <compile_cache/storage/directory/detail/directory_cleanup.hpp>
#include <compile_cache/storage/directory/detail/directory_counters.hpp>
#include <compile_cache/storage/directory/detail/directory_files.hpp>
#include <compile_cache/storage/directory/detail/mapped_file.hpp>
#include <compile_cache/storage/directory/detail/record_packs.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <thread>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>

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
    COMPILE_CACHE_DECL std::string message(int code) const override;
};
} // namespace detail

COMPILE_CACHE_DECL std::error_category const& directory_category() noexcept;
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
    /// read_view maps entries of at least this many bytes instead of reading them (see
    /// entry_view); 0: never. The default is where a mapped hit (map, check, copy out)
    /// measured no slower than a read one on this project's machine (docs/benchmarks.md,
    /// "Mapped hits"): below it, read() is faster.
    std::size_t map_min_size = std::size_t{1} << 20;

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
COMPILE_CACHE_DECL directory_options directory_options_from_env(settings_reader const& env);

/// The same, reporting through `report(std::string const&)`.
template <class Report>
directory_options directory_options_from_env(std::string const& prefix, Report&& report) {
    return directory_options_from_env(
        settings_reader(prefix, [&report](std::string_view line) { report(std::string(line)); }));
}

namespace detail {
/// directory_storage::from_env's hook into the directory's own settings file (defined in
/// storage/directory/directory_settings_file.hpp, included below).
COMPILE_CACHE_DECL void apply_directory_settings_file(std::string const& directory, settings_reader const& env,
                                                      directory_options& options,
                                                      std::vector<kept_cache_setting>& for_cache);
} // namespace detail

/// What prune() and clear() did.
struct cleanup_result {
    std::uint64_t entries = 0;   ///< entries left (prune)
    std::uint64_t bytes = 0;     ///< what they count for against the limit (prune)
    std::uint64_t removed = 0;   ///< entries evicted (prune) or removed (clear)
    std::uint64_t removed_bytes = 0;
    std::uint64_t temp_files_removed = 0;
    std::error_code error; ///< why the cleanup could not run (the directory cannot be opened); empty otherwise
    /// Entries and temp files it meant to remove and could not (the unlink failed:
    /// permission, a read-only mount; or their folder could not be read), and the
    /// first such error. A cleanup that left any has not done what it was asked.
    std::uint64_t not_removed = 0;
    std::error_code removal_error;
    /// Claim files (single flight) left by processes that are gone, or past their bound
    /// (directory_claims.hpp), that it removed; a live process's claim stays.
    std::uint64_t claim_files_removed = 0;
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
    /// Stale claim files (single flight) its cleanups removed.
    std::uint64_t claim_files_removed = 0;
    /// Threads prune() started to survey folders beside the caller's (none where no
    /// thread could be started).
    std::uint64_t cleanup_threads = 0;
};

/// An entry as directory_storage::read_view gives it: its bytes, either in the caller's
/// buffer or mapped from the entry's file (no copy), valid while the view lives and is
/// not reset or read into again. A file changed while mapped by another program (the
/// storage itself never changes an entry in place, it renames a new one over it, and a
/// mapping keeps the old file) cannot crash the process, and intact() turns false: when
/// it shrank (the bytes from the fault on read as zeros) or was written in place (its
/// size or modification time changed), so a reader that checks intact() after it is
/// done with the bytes knows to throw away what it made of them.
class entry_view {
public:
    std::string_view bytes() const noexcept { return mapping_.mapped() ? mapping_.bytes() : bytes_; }
    /// Whether the bytes are mapped (not in the buffer).
    bool mapped() const noexcept { return mapping_.mapped(); }
    /// False when the mapped file shrank or was written in place while it was read: the
    /// bytes may not be the entry's.
    bool intact() const noexcept { return mapping_.intact(); }
    void reset() noexcept {
        mapping_.reset();
        bytes_ = {};
    }

private:
    friend class directory_storage;
    detail::directory_storage_impl::mapped_file mapping_;
    std::string_view bytes_;
};

class directory_storage;

namespace detail::directory_storage_impl {

/// For tests: when set, the next temp file this thread creates is named
/// `.tmp-<this>` instead of a random name (once; then it is reset).
inline thread_local char const* next_temp_suffix_for_testing = nullptr;

/// For tests: called by a store that writes through this thread's claim (see
/// directory_storage::write) after it found the claim file still its own and before it
/// renames it onto the entry, with the claim's path (to replace the claim in between).
inline thread_local void (*before_claim_rename_for_testing)(char const* claim_path) = nullptr;

/// For tests: called by try_claim and by a cleanup between the two reads of a claim they
/// judged dead (`name` relative to `folder_fd`, or a path with AT_FDCWD), to replace it.
inline thread_local void (*between_claim_reads_for_testing)(int folder_fd, char const* name) = nullptr;

/// Writes a storage object held back (write_deferred) and not yet made: the latest
/// bytes of each key, in this process only. Bounded as a cache's held identity records
/// are (held_batch_bounds: max_keys, max_bytes, max_age_ns): the write that reaches a
/// bound, or that finds the oldest held for max_age_ns, makes them all.
struct deferred_writes : held_batch_bounds {
    std::mutex mutex;
    std::unordered_map<key, std::string> held;
    /// When each held write was made: its file gets that time once written, so that a
    /// record written later with the batch is not taken for newer than its entry (eviction
    /// goes by file time).
    std::unordered_map<key, std::int64_t> held_ns;
    std::size_t bytes = 0;
    std::int64_t oldest_ns = 0;    ///< steady_ns() when the first was held: the batch's age
    unsigned generation = 0;       ///< fork_generation() when they were held
    std::atomic<bool> any{false}; ///< read() looks here only when set
};

/// Takes the held writes out of the batch (none in a forked child: the parent's), and
/// when they were made into `times` if given. Each is then made with
/// directory_storage::write_made_at, at the time it was held.
COMPILE_CACHE_DECL std::unordered_map<key, std::string> take_deferred(deferred_writes& d,
                                                                      std::unordered_map<key, std::int64_t>* times = nullptr);

struct shared_state;

/// Takes `m` by the deadline (tried, then retried after growing sleeps); whether it did.
inline bool lock_by(std::mutex& m, std::chrono::steady_clock::time_point deadline) noexcept {
    std::chrono::microseconds pause{20};
    for (;;) {
        if (m.try_lock()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds{2000});
    }
}

/// The shared states of this process's directory storages, whose mutexes a fork takes
/// first (detail/fork_handlers.hpp, installed by the first registration; after a tier
/// worker's job under way has ended, which may need them) and gives back in the
/// parent and the child: a mutex another thread held while this one forked would stay
/// held forever in the child, whose first store, prune or lock report would wait for it.
/// Each is tried for at most fork_lock_wait (the cleanup's once); what the child does with
/// one not taken: give_back_after_fork_in_child and docs/design.md, "Forks".
COMPILE_CACHE_DECL fork_list<shared_state>& the_fork_registry() noexcept;
inline constexpr std::chrono::milliseconds fork_lock_wait{250};
COMPILE_CACHE_DECL void register_for_fork(shared_state* s) noexcept;
COMPILE_CACHE_DECL void unregister_for_fork(shared_state* s) noexcept;

/// How many mutexes of a shared_state a fork takes (the_fork_registry).
inline constexpr int fork_mutexes = 5;

/// State shared by a storage object and its copies.
struct shared_state {
    shared_state(std::string const& ledger_path, unsigned file_mode, int exact_umask)
        : ledger(ledger_path, file_mode, exact_umask, &locks) {
        cleanup.events = &locks;
        register_for_fork(this);
    }
    shared_state(shared_state const&) = delete;
    shared_state& operator=(shared_state const&) = delete;
    /// Makes the deferred writes (through a storage object of its own) when the last
    /// copy of the storage goes.
    COMPILE_CACHE_DECL ~shared_state();

    lock_events locks; ///< before ledger and cleanup, which point to it
    cleanup_state cleanup;
    ledger_batch ledger;
    std::atomic<std::uint64_t> lock_timeouts_recorded{0}; ///< how many of them the counters file has
    /// Set once renameat2(RENAME_NOREPLACE) is found unsupported here.
    std::atomic<bool> no_rename_noreplace{false};
    /// With durability::full: a claim made a fan-out folder (try_claim), so the next
    /// store's sync_directories syncs the cache directory too, whatever folder it made.
    std::atomic<bool> claim_made_folder{false};
    deferred_writes deferred;
    record_pack_index packs;        ///< the packs of identity records this process knows
    std::string directory;          ///< for the deferred writes made by the destructor
    directory_options options;
    /// Which of cleanup's, deferred's, the ledger's and the lock events' mutexes (in that
    /// order, the order they nest in), and the packs index's (which nests in none), the
    /// fork under way took (the_fork_registry).
    bool held_for_fork[fork_mutexes] = {};
    fork_list_links<shared_state> fork_links; ///< in the_fork_registry()
};

/// The path of the entry a read opens, built in a buffer each thread reuses; `fallback`
/// on a thread whose thread_local objects are already destroyed (at exit, a cache with
/// static storage duration is destroyed after them, and its destructor writes the
/// identity records it holds, reading each first).
struct read_path_buffer_tag;
inline std::string& read_path_buffer(std::string& fallback) {
    std::string* const path = per_thread<std::string, read_path_buffer_tag>();
    return path ? *path : fallback;
}

} // namespace detail::directory_storage_impl

/// Entries as files under a directory: `DIR/ab/abcdef...`, where the file name is
/// the key's full lower-case hex and `ab` its first two digits (256 fan-out folders,
/// so that no folder grows huge). Temp files are `.tmp-<uuid>` in the same folder and
/// never match an entry name (`.tmp-` and 32 random hex digits). `DIR/.cc-stats` holds
/// the size ledger.
///
/// - `write` creates the folders on first use, writes a fresh temp file created
///   exclusively (never following a symlink) — or, for a key this thread claimed, the
///   claim file (write) — syncs it as `durability` says, and renames it over the entry: a reader sees the old entry or the new one, never a
///   part (a new key is one renameat2(RENAME_NOREPLACE); an existing one is lstat-ed
///   first, for what it counted for). On failure the temp file is removed and the
///   error returned. It then adds the entry to its folder's figure in the ledger (in
///   batches: ledger_batch), recounts that folder when its figure is over an hour old (sweeping temp
///   files older than an hour). The store that writes the batch — one in 256
///   (ledger_batch_stores) while the cache is over `max_size`, and the first store to
///   take it over — does one step of cleanup for the batch's stores when the ledger
///   says the cache is over `max_size` (store_cleanup_budget: see cleanup_state). Accounting and cleanup never fail a store. The last copy of a
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
    friend struct detail::directory_storage_impl::shared_state; // its destructor makes the held writes

public:
    using view_type = entry_view; ///< what read_view fills

    directory_storage() noexcept = default;

    COMPILE_CACHE_DECL explicit directory_storage(std::string directory, directory_options options = {});

    /// The earlier form, for a host that calls it: the new one, with the settings the reader
    /// stands for (see detail::settings_reader_access::settings_of).
    COMPILE_CACHE_DEPRECATED_STORAGE_FROM_ENV static std::optional<directory_storage> from_env(settings_reader& env) {
        return detail::from_env_of_reader<directory_storage>(env);
    }
    /// The storage the environment asks for (see settings.hpp): `PREFIX_DIR` names the
    /// directory; unset, empty, `0`, `off`, `false` or `no` (any case): not configured.
    /// `PREFIX_MAX_SIZE`, `PREFIX_DURABILITY` and `PREFIX_SHARED` give its options
    /// (directory_options_from_env); where those are unset, the directory's own settings
    /// file says (`DIR/.cc-settings`: directory_settings_file.hpp), whose settings of the
    /// cache's (`compress`) the answer passes on (from_env_result::kept_cache_settings).
    /// The directory is made now, as a first store would
    /// (not when the cache cannot run: storage_settings::cache_off): a path that cannot
    /// be made a directory is off, with the reason. An on value (`1`, `on`, `true`,
    /// `yes`) is used as a relative path, with one line.
    COMPILE_CACHE_DECL static from_env_result<directory_storage> from_env(storage_settings const& settings);

    /// The settings from_env reads, with one line each, for a host's --help.
    COMPILE_CACHE_DECL static std::vector<environment_setting> environment_settings(std::string_view prefix);

    /// 0 when `directory` is a directory or can be made one (it is made, with the
    /// options' mode, as a first store would); otherwise the errno value that says why not.
    COMPILE_CACHE_DECL static int usable_directory(std::string directory, directory_options const& options);

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
    COMPILE_CACHE_DECL std::string entry_path(key const& k) const;

    /// Single flight (directory_claims.hpp, docs/design.md): claims `k` for this process
    /// with the file `entry_path(k) + ".claim"`, created exclusively; held when another
    /// live process's claim is there; a dead one's (its pid gone on this boot, or another
    /// machine's past `request.expiry`) is taken over at once. none when the directory
    /// cannot be written (read-only: no claims), or `request.scope` has no `local`.
    COMPILE_CACHE_DECL claim_answer try_claim(key const& k, claim_request const& request) noexcept;
    /// Removes the claim of `k` that this process took (call it only for one it took).
    /// Nothing to remove when a store already turned the claim into the entry (write);
    /// a claim file that is no longer the one created (another process took the claim
    /// over) is left to its new owner. The thread that took it keeps the claim file open
    /// until it is released from that thread, or until that thread takes 64 more.
    COMPILE_CACHE_DECL void release_claim(key const& k) noexcept;
    /// Returns when the entry of `k` may have arrived (a file renamed to its name) or its
    /// claim may have gone (the claim file removed), and at the latest after `timeout`:
    /// a waiting miss's pause between polls (single_flight.hpp). On Linux an inotify watch
    /// of the entry's folder, made for the call (what it does not report, such as another
    /// machine's store on a shared file system, ends the pause at `timeout`); elsewhere, or
    /// when the folder cannot be watched (missing, no inotify instance left), a sleep of
    /// `timeout`.
    COMPILE_CACHE_DECL void wait_for_change(key const& k, std::chrono::nanoseconds timeout) const noexcept;

    COMPILE_CACHE_DECL read_result read(key const& k, std::string& out, std::size_t max_size) noexcept;

    /// read() without the copy for large entries: the optional Storage member the cache
    /// reads through. An entry of at least `map_min_size` bytes is mapped (when the
    /// process's SIGBUS guard is in place: see entry_view) and `view` holds it; a smaller
    /// one, or one that cannot be mapped, is read into `buffer` and `view` points there.
    /// Statuses, checks and the use-time refresh are read()'s; `view` is empty unless found.
    COMPILE_CACHE_DECL read_result read_view(key const& k, std::string& buffer, std::size_t max_size,
                                             entry_view& view) noexcept;

    /// Stores `bytes` under `k` atomically: a temp file in the entry's folder, filled,
    /// then renamed over the entry (see the class comment). When this thread holds the
    /// claim of `k` in this directory (try_claim, not yet released) and `bytes` are at
    /// least as long as the claim's text, the claim file itself is that temp file: the
    /// bytes are written into it and it is renamed onto the entry, so that the entry
    /// appears and the claim goes in one step, with no file created (then release_claim
    /// has nothing left to remove). The claim is first checked to be still this thread's
    /// file (not taken over: the file it holds open is the one at the claim's path);
    /// whenever it is not, or anything fails on the way, the store is made the usual way
    /// (directory_claims.hpp).
    ///
    /// An identity record's key (33 bytes ending 0x1d) is not written now: it is held as
    /// write_deferred holds it and written in a pack with its batch (docs/design.md,
    /// "Identity records in packs"); a record over record_max_size is refused
    /// (value_too_large). The answer is then that batch's, when this write made it due.
    COMPILE_CACHE_DECL std::error_code write(key const& k, std::string_view bytes) noexcept;

    /// Unlinks the entry of `k`. An identity record in a pack is not unlinked (a pack is
    /// never changed): the version this object knows is hidden from its reads until a
    /// newer one is written; other processes still read it.
    COMPILE_CACHE_DECL std::error_code remove(key const& k) noexcept;

    /// Stores `bytes` under `k` later, in a batch: the optional Storage member the cache
    /// writes identity records through, so that a store creates one file (the entry),
    /// not two. A read or a remove of `k` through this object or its copies sees the
    /// held bytes at once; other processes see them once written, which happens when
    /// the batch passes deferred_writes' bounds (256 keys, 4 MiB, or 10 s since the
    /// oldest), at record_counters() (so when a cache is destroyed or flushed), at
    /// flush_deferred(), and when the last copy of this object is destroyed. A held
    /// write is lost if the process dies first; a later write() of `k` replaces it. In a
    /// forked child the held writes are the parent's: dropped. Fails only as write()
    /// would for a disabled storage or an empty key.
    COMPILE_CACHE_DECL std::error_code write_deferred(key const& k, std::string_view bytes) noexcept;

    /// Makes the deferred writes now; the first error, if any (each is tried).
    COMPILE_CACHE_DECL std::error_code flush_deferred() noexcept;

    /// Looks at the packs of identity records now (one fstat; a listing when they changed),
    /// so that the reads that follow see every pack written so far, not only those of a
    /// second ago: a cache calls it before it merges the records it holds with the
    /// directory's (cache/identity_records.hpp), so that no other process's entries are lost.
    COMPILE_CACHE_DECL void look_at_records_now() noexcept;

    /// (For an identity record: held as write() holds it, its pack's file given the newest
    /// such time of its batch.)
    /// write() of `bytes` under `k`, the entry's file then given the time `made_ns`
    /// (nanoseconds since the epoch, as entry_metadata::created_ns) as its last use; 0 or
    /// less: now, as write() leaves it. The optional Storage member a cache writes the
    /// identity records it held through, each given its newest entry's time, so that
    /// eviction, which goes by that time, does not take a record written at the cache's
    /// end for newer than the entries of its run; the deferred writes are made with it as
    /// well, each given the time of its write_deferred. The answer is write()'s: setting
    /// the time is best effort, and its failure costs nothing else.
    COMPILE_CACHE_DECL std::error_code write_made_at(key const& k, std::string_view bytes,
                                                     std::int64_t made_ns) noexcept;

    /// Adds a cache's counters (statistics_snapshot::counters(), as deltas since its
    /// last call) to the cumulative ones kept in `DIR/.cc-counters/`, and records this
    /// storage's size limit: see storage/directory/detail/directory_counters.hpp. basic_cache
    /// calls it when it is destroyed or flushed, never on a hit or a store. Counters
    /// that are all zero write nothing.
    COMPILE_CACHE_DECL std::error_code
    record_counters(std::vector<std::pair<std::string, std::uint64_t>> const& delta) noexcept;

    /// The counters every cache using this directory recorded, summed: `hits`,
    /// `misses.absent`, ..., `stores`, and the gauges `max-size` (the size limit of
    /// the latest writer) and `updated-s`. Empty when none were recorded (or on error).
    COMPILE_CACHE_DECL std::map<std::string, std::uint64_t> recorded_counters() const noexcept;

    /// Every entry (key, size, last use: its mtime, refreshed at most hourly) without
    /// reading one or changing a use time: the optional Storage member `list`. Temp
    /// files, the ledger and other files are not entries; a missing directory or fan-out
    /// folder lists nothing. A pack of identity records is listed as its records (the
    /// newest version of each; size: the record's bytes, last use: when it was written),
    /// even one without a marker, which read() does not find; a record file of an earlier
    /// release is listed as an entry, which read() does not return either.
    COMPILE_CACHE_DECL std::error_code list(std::vector<stored_entry>& out) const noexcept;

    /// A whole cleanup now, whatever the cache's size: recounts every folder
    /// (correcting the ledger), removes temp files older than an hour, and, when the
    /// cache is over `max_size`, evicts least recently used entries until it is under
    /// 90% of it. Waits for a cleanup step another thread or process is running.
    /// Looks at the upper half of the fan-out folders in a second thread, which takes no
    /// signal and is joined before it returns (one thread where none can be started).
    COMPILE_CACHE_DECL cleanup_result prune() noexcept;

    /// Removes every entry and every temp file of this library — names made of a
    /// key's hex in two-hex-digit folders, and `.tmp-` + 32 lower-case hex digits there
    /// — and nothing else: other files, and the folders themselves, stay. A store
    /// running meanwhile in another process may fail (its temp file is gone): a
    /// counted failure there. What it could not remove is counted in `not_removed`.
    COMPILE_CACHE_DECL cleanup_result clear() noexcept;

    /// What the ledger says the entries count for (whole 4 KiB blocks each), after
    /// this object's unwritten changes are written to it (and the folders they touched
    /// recounted, when due): exact after prune() or clear() with no store running
    /// meanwhile, otherwise an estimate that the hourly recount of each folder keeps
    /// close. 0 when there is no ledger.
    COMPILE_CACHE_DECL std::uint64_t accounted_size() const noexcept;

    /// What cleanups run through this object (and its copies) did.
    COMPILE_CACHE_DECL directory_counters counters() const noexcept;

    /// A hit refreshes an entry's use time when it is at least this old (seconds).
    static constexpr std::int64_t refresh_after_s = 3600;

private:
    // ---- write(), step by step ----

    /// Creates a temp file with a fresh random name beside `entry` (`DIR/ab/.tmp-...`),
    /// exclusively: a name that exists already (a symlink planted at a guessed temp
    /// name, say) is never opened, another is tried. Creates the folders on the first
    /// store in `folder` (`created_folders`); a symlink in the folder's place is not
    /// followed (ENOTDIR).
    COMPILE_CACHE_DECL std::error_code create_temp_file(std::string const& entry, std::string const& folder,
                                                        std::string& temp, int& fd, bool& created_folders);

    /// Gives the temp file its mode, writes `bytes` to it, syncs it when asked, closes it.
    COMPILE_CACHE_DECL std::error_code fill_temp_file(detail::directory_storage_impl::temp_file& file,
                                                      std::string_view bytes) const;

    /// Renames the temp file to the entry. A new key (the usual store) is one call that
    /// cannot replace anything, so the ledger needs no lstat; an existing entry is
    /// lstat-ed for what it counted for (`replaced_bytes`), then replaced.
    COMPILE_CACHE_DECL std::error_code publish(std::string const& temp, std::string const& entry,
                                               std::uint64_t& replaced_bytes);

    /// write() through this thread's claim of `k` (see write): true when it was made that
    /// way (or failed after the claim file became the entry), `ec` then its result; false
    /// when the store is to be made the usual way (no claim of this thread here, the
    /// claim taken over, bytes shorter than its text, a failure before the rename).
    COMPILE_CACHE_DECL bool write_through_claim(key const& k, std::string_view bytes, std::string const& entry,
                                                std::string const& folder, std::error_code& ec) noexcept;

    /// With durability::full, syncs the folder (and the cache directory when the store
    /// created folders, or a claim made one since the last such sync: claim_made_folder),
    /// so that the new entry survives a crash.
    COMPILE_CACHE_DECL std::error_code sync_directories(std::string const& folder, bool created_folders) const noexcept;

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
        impl::unlock_at_end const unlock{root.fd}; // (before the close: a forked child's copy keeps it else)
        try {
            // Within the root's bound too: in a child forked mid-cleanup it stays held (the_fork_registry).
            if (!impl::lock_by(state_->cleanup.mutex, std::chrono::steady_clock::now() + impl::cleanup_lock_wait)) {
                state_->locks.gave_up(directory_, "so the cleanup did not run");
                r.error = std::make_error_code(std::errc::resource_unavailable_try_again);
                return r;
            }
            std::lock_guard<std::mutex> const lock(state_->cleanup.mutex, std::adopt_lock);
            state_->cleanup.reset();
            work(root.fd, r);
        } catch (...) { // bad_alloc
            r.error = std::make_error_code(std::errc::not_enough_memory);
        }
        return r;
    }

    COMPILE_CACHE_DECL std::error_code trust(struct stat const& st) const noexcept;

    /// read() and read_view(): the entry into `out`, or, when `view` is given and the
    /// entry is at least map_min_size bytes, mapped into it.
    COMPILE_CACHE_DECL read_result read_entry(key const& k, std::string& out, std::size_t max_size,
                                              entry_view* view) noexcept;

    /// The bytes held for `k` by write_deferred, as read() answers them; nullopt when
    /// none are held.
    COMPILE_CACHE_DECL std::optional<read_result> read_deferred(key const& k, std::string& out, std::size_t max_size);

    /// Notes a change of `folder`'s figure in this object's ledger batch, and writes
    /// the batch when it says so; then, after a store (`may_clean`), when the ledger's
    /// total is over the limit, does one step of bounded cleanup.
    COMPILE_CACHE_DECL void after_change(unsigned folder, std::uint64_t added, std::uint64_t removed,
                                         bool may_clean) noexcept;

    // ---- identity records in packs (detail/record_packs.hpp) ----

    /// Holds a write back (write_deferred), with the time its file is to get.
    COMPILE_CACHE_DECL std::error_code hold_write(key const& k, std::string_view bytes, std::int64_t made_ns) noexcept;
    /// Makes held writes: the identity records in packs (a pack per batch), the others
    /// each with write_made_at, at their `times`; the first error, if any.
    COMPILE_CACHE_DECL std::error_code write_held(std::unordered_map<key, std::string> const& held,
                                                  std::unordered_map<key, std::int64_t>& times) noexcept;
    /// Writes one pack of `records` (version_ns 0: this write's time), merged with the small
    /// packs of this process's index when it holds over packs_merged_above, then its marker;
    /// indexes it; removes the packs merged. The pack's file gets the time `file_ns` (its
    /// records' newest entry's, for eviction), or a merged pack's when later.
    COMPILE_CACHE_DECL std::error_code write_pack(std::vector<detail::directory_storage_impl::packed_record> records,
                                                  std::int64_t file_ns);
    /// read() of an identity record: its newest version in the packs indexed, absent when
    /// none holds it (record files of earlier releases are not read).
    COMPILE_CACHE_DECL read_result read_packed_record(key const& k, std::string& out, std::size_t max_size) noexcept;
    /// Looks at the markers' folder (an fstat) at most once a packs_looked_at_every_ns, or
    /// now when `now_only`, and lists it into the index when it changed since (or changed
    /// in the last two seconds, or the index is stale); the caller holds the index's mutex.
    COMPILE_CACHE_DECL void look_at_packs(bool now_only);
    /// Takes the index's mutex within pack_index_wait; whether it did (the caller then
    /// adopts it).
    COMPILE_CACHE_DECL bool take_pack_index() const noexcept;
    /// How reading a pack's slots ended.
    enum class pack_read { read, gone, unsound, failed };
    /// The slots of pack `pack`, its file opened without following a symlink and trusted
    /// as an entry is: gone when it is not there (ENOENT), unsound when it is no sound pack.
    COMPILE_CACHE_DECL pack_read read_pack_slots(key const& pack,
                                                 std::vector<detail::directory_storage_impl::pack_slot>& slots) const;
    /// Drops pack `name` from the index and unlinks its marker: it is gone.
    COMPILE_CACHE_DECL void forget_pack(key const& name) noexcept;
    /// After clear(): empties the index and unlinks the markers whose packs are gone.
    COMPILE_CACHE_DECL void forget_gone_packs() noexcept;
    /// The most bytes of records a pack is written with: pack_max_bytes, or a sixteenth of
    /// the size limit when that is less (a pack is evicted whole).
    COMPILE_CACHE_DECL std::size_t pack_bytes_bound() const noexcept;
    COMPILE_CACHE_DECL std::string packs_folder_path() const;
    /// The markers' folder, opened without following a symlink (-1, errno set, when it cannot be).
    COMPILE_CACHE_DECL int open_packs_folder() const;
    COMPILE_CACHE_DECL static std::string layout_path_of(key const& k);

    /// Writes this object's ledger batch, then recounts the folders it changed whose
    /// figures are over an hour old (sweeping their temp files older than an hour).
    /// False when the ledger cannot be used; otherwise `total` is its total.
    COMPILE_CACHE_DECL bool flush_ledger(std::int64_t now, std::uint64_t& total) const noexcept;

    std::string directory_;
    directory_options options_{};
    uid_t euid_ = 0;
    std::string ledger_path_;
    std::shared_ptr<detail::directory_storage_impl::shared_state> state_;
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::directory_storage>::value);
static_assert(compile_cache::detail::has_list<compile_cache::directory_storage>::value);

#include <compile_cache/storage/directory/directory_settings_file.hpp>
#include <compile_cache/storage/directory/impl/directory_storage.ipp>
#include <compile_cache/storage/directory/impl/directory_record_packs.ipp>
#include <compile_cache/storage/directory/directory_claims.hpp>
