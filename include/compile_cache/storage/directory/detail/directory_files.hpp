// compile_cache: the POSIX pieces of directory_storage — exclusive temp files and
// their names, a rename that does not replace, `mkdir -p`, full writes, descriptor
// guards, the names the storage owns, and the size ledger (`DIR/.cc-stats`) with the
// batch of a storage object's changes not yet written to it. Not part of the public
// interface.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/detail/fork_generation.hpp>
#include <compile_cache/detail/platform.hpp>
#include <compile_cache/detail/posix_io.hpp>
#include <compile_cache/key/key.hpp>

#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
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

using detail::mtime_ns; // (posix_io.hpp)

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
/// How many lower-case hex digits follow temp_prefix in a temp file's name (append_temp_name).
inline constexpr std::size_t temp_name_digits = 32;
/// A store's temp file: exactly what create_temp_file names one, `.tmp-` and 32
/// lower-case hex digits. Nothing else is ever removed as a temp file: a user's
/// `.tmp-mywork` beside the entries is not the cache's.
inline bool is_temp_name(std::string_view n) noexcept {
    if (n.size() != temp_prefix.size() + temp_name_digits || n.compare(0, temp_prefix.size(), temp_prefix) != 0)
        return false;
    for (char c : n.substr(temp_prefix.size()))
        if (!is_lower_hex_digit(c)) return false;
    return true;
}

inline constexpr std::string_view claim_suffix = ".claim";
/// A claim file of single flight (directory_claims.hpp) in fan-out folder `folder`: an
/// entry's name there and `.claim`.
inline bool is_claim_name(std::string_view n, std::string_view folder) noexcept {
    return n.size() > claim_suffix.size() && n.substr(n.size() - claim_suffix.size()) == claim_suffix &&
           is_entry_name(n.substr(0, n.size() - claim_suffix.size()), folder);
}

inline constexpr char lower_hex_digits[] = "0123456789abcdef";

/// The entry path rule, written once: an entry lives at `ab/<hex>` relative to the
/// cache directory, where `<hex>` is its key's lower-case hex and `ab` its first two
/// digits (the fan-out folder). Appends that to `out`; `hex` has at least two digits.
inline void append_entry_relative_path(std::string& out, std::string_view hex) {
    out.append(hex.data(), 2);
    out += '/';
    out += hex;
}

/// Appends `DIR/ab/<hex of k>` (append_entry_relative_path) to `out` (`directory`
/// without a trailing slash, unless it is "/"), with no intermediate string.
COMPILE_CACHE_DECL void append_entry_path(std::string& out, std::string const& directory, key const& k);

/// The 256 fan-out folders' names, "00" to "ff", indexed by a key's first byte.
struct folder_name_table {
    char names[256][3];
};
constexpr folder_name_table make_folder_name_table() noexcept {
    folder_name_table t{};
    for (unsigned i = 0; i < 256; ++i) {
        t.names[i][0] = lower_hex_digits[i >> 4];
        t.names[i][1] = lower_hex_digits[i & 15];
        t.names[i][2] = 0;
    }
    return t;
}
inline constexpr folder_name_table folder_names = make_folder_name_table();

inline char const* folder_name(unsigned index) noexcept { return folder_names.names[index & 0xff]; }

// ---- fork --------------------------------------------------------------------

/// What a process keeps in memory for a directory — a temp-name generator's state, a
/// batch of ledger changes, the ledger's descriptor and its lock — is used by the parent
/// or a forked child, never both: each is tagged with fork_generation() and starts afresh
/// when it has changed (detail/fork_generation.hpp).
using detail::fork_generation;

// ---- files -----------------------------------------------------------------

/// 64 random bits for a name that must be unique, not secret (a temp file, created
/// O_EXCL|O_NOFOLLOW, another name tried when one exists; a record pack's key): each
/// thread seeds a generator once — one getrandom per thread, not per store — and
/// reseeds in a forked child, which would otherwise repeat its parent's names.
COMPILE_CACHE_DECL std::uint64_t unique_random_word();
/// Appends 32 random hex digits (two unique_random_word) for a temp file name.
COMPILE_CACHE_DECL void append_temp_name(std::string& out);

/// Renames `from` to `to` unless `to` exists (EEXIST then, nothing changed), in one
/// call: Linux's renameat2(RENAME_NOREPLACE). Returns 0 or an errno value; ENOSYS or
/// EINVAL where the kernel or the file system does not support it (and everywhere
/// but Linux), and the caller falls back to lstat + rename.
COMPILE_CACHE_DECL int rename_no_replace(char const* from, char const* to) noexcept;

/// Creates `path` exclusively: an existing name, a symlink included (dangling or
/// not), makes it fail with EEXIST; nothing is ever followed or truncated.
inline int open_exclusive(std::string const& path, unsigned mode) noexcept {
    return retry_on_eintr([&] {
        return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
    });
}

/// For tests: called after make_directories (or a claim's folder) made a folder, with its
/// path, before its mode is set (to put a symlink in its place, as another member of a
/// shared directory's group could).
inline thread_local void (*after_mkdir_for_testing)(char const* path) = nullptr;

/// Sets the mode of the folder just made at `path` to `mode`, exactly, through a
/// descriptor opened without following a symlink: in a directory others may write, the
/// folder may have been swapped for a symlink since its mkdir, and a chmod by path would
/// then set the mode of whatever it names (a folder of this user's, made group-writable).
inline void set_made_folder_mode(char const* path, unsigned mode) noexcept {
    if (after_mkdir_for_testing != nullptr) after_mkdir_for_testing(path);
    int const fd = retry_on_eintr([&] { return ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
    if (fd < 0) return;
    (void)::fchmod(fd, static_cast<mode_t>(mode));
    ::close(fd);
}

/// `mkdir -p` for `path`; an existing entry on the way is fine (if it is not a
/// directory, the open that follows says so). `path` is cut in place at its slashes
/// while working and restored before returning. When `exact_umask` is 0 or more, each
/// folder created is chmod-ed to `mode & ~exact_umask` (the process umask would
/// otherwise strip group bits). Returns 0 or an errno value; sets `created` when it
/// made at least one folder.
COMPILE_CACHE_DECL int make_directories(std::string& path, unsigned mode, int exact_umask, bool& created) noexcept;

/// The process's file size limit (RLIMIT_FSIZE) in bytes; the largest std::uint64_t when
/// there is none.
COMPILE_CACHE_DECL std::uint64_t file_size_limit() noexcept;

/// EFBIG when a file that ends `end` bytes in would pass the process's file size limit
/// (RLIMIT_FSIZE), else 0. No write is made past it: one would raise SIGXFSZ, whose
/// default action ends the host.
COMPILE_CACHE_DECL int beyond_file_size_limit(std::uint64_t end) noexcept;

/// Writes all of `bytes` at the file offset, through partial writes and interruptions.
/// Returns 0 or errno; EFBIG, with nothing written, when they would pass the file size
/// limit (beyond_file_size_limit).
COMPILE_CACHE_DECL int write_all(int fd, char const* p, std::size_t left) noexcept;

inline int fsync_fd(int fd) noexcept {
    int const r = retry_on_eintr([&] { return ::fsync(fd); });
    return r == 0 ? 0 : errno;
}

/// fsync of a directory, so that a rename or a creation in it survives a crash.
COMPILE_CACHE_DECL int fsync_directory(char const* path) noexcept;

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

using detail::file_descriptor; // (detail/posix_io.hpp)

/// How long a lock the library takes is waited for before it gives up. No wait is
/// unbounded: a lock held by a stopped, frozen or debugged process costs a bounded
/// delay, then the work that needed it is deferred or skipped, never the host's.
inline constexpr std::chrono::milliseconds ledger_lock_wait{50};   ///< the size ledger (store path)
inline constexpr std::chrono::milliseconds cleanup_lock_wait{2000}; ///< the directory, for prune() and clear()
inline constexpr std::chrono::milliseconds counters_lock_wait{1000}; ///< a counters shard (at a cache's flush)
/// After the ledger's lock could not be had, a storage object waits this long before
/// asking for it again, keeping its changes meanwhile.
inline constexpr std::chrono::milliseconds ledger_retry_after{1000};

/// An exclusive flock, tried without blocking and retried (through interruptions
/// too) for at most `wait`; zero tries once. Returns 0 or errno (EWOULDBLOCK when
/// another holder kept it all along).
COMPILE_CACHE_DECL int lock_fd(int fd, std::chrono::milliseconds wait) noexcept;

/// Releases the flock lock_fd took on `fd` when it goes out of scope (declared after the
/// descriptor's owner, so before its close). A lock belongs to the open file
/// description, which a child forked (no exec) meanwhile shares through its copy of the
/// descriptor: released by the close alone, it would be held for the child's whole life.
struct unlock_at_end {
    int fd;
    explicit unlock_at_end(int descriptor) noexcept : fd(descriptor) {}
    unlock_at_end(unlock_at_end const&) = delete;
    unlock_at_end& operator=(unlock_at_end const&) = delete;
    ~unlock_at_end() { ::flock(fd, LOCK_UN); }
};

/// Where a storage object counts the locks it gave up waiting for, and says so once
/// through its logger (the cache's, with PREFIX_LOG=1).
class lock_events {
public:
    void set_logger(std::function<void(std::string_view)> logger) {
        std::lock_guard<std::mutex> const lock(mutex_);
        logger_ = std::move(logger);
    }

    /// A lock on `path` was still held after the wait; `consequence` says what was
    /// deferred or skipped.
    COMPILE_CACHE_DECL void gave_up(std::string const& path, char const* consequence) noexcept;

    std::uint64_t timeouts() const noexcept { return timeouts_.load(std::memory_order_relaxed); }

    /// For the fork handlers alone (directory_storage.hpp, the_fork_registry).
    std::mutex& mutex_for_fork() noexcept { return mutex_; }

private:
    std::atomic<std::uint64_t> timeouts_{0};
    std::mutex mutex_;
    std::function<void(std::string_view)> logger_;
    bool said_ = false;
};

/// The cache directory itself, opened for *at() calls and as the cleanup lock. The
/// lock (flock on the directory) is released when the descriptor is closed, so a
/// killed cleaner never leaves it held.
inline int open_root(std::string const& directory) noexcept {
    return retry_on_eintr([&] { return ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
}

// ---- the ledger --------------------------------------------------------------

/// `DIR/.cc-stats`: for each of the 256 fan-out folders, the bytes its entries count
/// for and when the folder was last counted by a scan. Stores add to their folder's
/// figure under an exclusive flock (in batches: see ledger_batch); a scan of a
/// folder sets it. Little-endian, fixed size; anything else found there is treated as
/// a fresh ledger (every folder uncounted), which the next scans fill in.
struct ledger_slot {
    std::uint64_t bytes = 0;
    std::int64_t counted_at = 0; ///< seconds since the epoch; 0 = never counted
};
using ledger_slots = std::array<ledger_slot, 256>;

inline constexpr char ledger_name[] = ".cc-stats";
inline constexpr char ledger_magic[8] = {'C', 'C', 'S', 'T', 'A', 'T', 'S', '1'};
inline constexpr std::size_t ledger_header = 16;
inline constexpr std::size_t ledger_bytes = ledger_header + 256 * 16;
/// A folder figure above this is garbage (a torn or foreign file), not a size.
inline constexpr std::uint64_t ledger_sane_limit = std::uint64_t{1} << 50;

/// A folder's figure is recounted when it was never counted, was counted over an
/// hour ago, or claims to have been counted in the future (a clock that jumped).
inline constexpr std::int64_t recount_after_s = 3600; ///< a folder's figure is trusted this long
/// How many due folders one write of a batch recounts (directory_storage::flush_ledger):
/// one folder listed, about 1/256 of the cache, whatever the batch touched.
inline constexpr std::size_t ledger_recounts_per_flush = 1;
inline bool recount_due(std::int64_t counted_at, std::int64_t now) noexcept {
    return counted_at == 0 || now - counted_at > recount_after_s || counted_at > now + recount_after_s;
}

/// Reads the ledger file open at `fd` into `slots`. True when it was a whole, sane
/// ledger; false (slots all zero: a fresh ledger) otherwise.
COMPILE_CACHE_DECL bool read_ledger(int fd, ledger_slots& slots) noexcept;

/// Writes all of `p[0, n)` at `offset`: true, or false with errno (EFBIG, with nothing
/// written, past the file size limit: beyond_file_size_limit).
COMPILE_CACHE_DECL bool pwrite_all(int fd, unsigned char const* p, std::size_t n, std::size_t offset) noexcept;

/// Writes the whole ledger (one pwrite of 4 KiB).
COMPILE_CACHE_DECL bool write_ledger(int fd, ledger_slots const& slots) noexcept;

COMPILE_CACHE_DECL std::uint64_t ledger_total(ledger_slots const& slots) noexcept;

/// Opens the ledger at `path` (creating it) for reading and writing: never through a
/// symlink, never blocking on a FIFO (O_NONBLOCK), and only a regular file; its mode
/// set to `file_mode & ~exact_umask` when that is 0 or more. -1 when it cannot be used
/// (read-only directory, ...): the caller then does no accounting.
COMPILE_CACHE_DECL int open_ledger(std::string const& path, unsigned file_mode, int exact_umask,
                                   struct stat* st_out = nullptr) noexcept;

/// One locked session with the ledger: open (creating it), lock, read; change slots;
/// write back; the lock goes with the descriptor. For scans and cleanups, which set
/// folder figures; stores go through a ledger_batch.
class ledger {
public:
    ledger_slots slots{};

    ledger() = default;
    ledger(ledger const&) = delete;
    ledger& operator=(ledger const&) = delete;
    /// Unlocks before the close (unlock_at_end: a forked child's copy would keep it).
    ~ledger() {
        if (fd_) ::flock(fd_.fd, LOCK_UN);
    }

    /// Opens, locks and reads the ledger at `path`, locked until destroyed. False when it
    /// cannot be used, or its lock could not be had within ledger_lock_wait (counted in `events`).
    COMPILE_CACHE_DECL bool open(std::string const& path, unsigned file_mode, int exact_umask,
                                 lock_events* events = nullptr) noexcept;

    void save_all() noexcept { write_ledger(fd_.fd, slots); }

    std::uint64_t total() const noexcept { return ledger_total(slots); }

private:
    file_descriptor fd_;
};

/// A store writes its change to the ledger after at most this many stores (256: so
/// that fewer than 1% of stores write it (0.4%), and clean when the cache is over its limit,
/// which keeps the other 99% at the cost of a store with no limit) or changes...
inline constexpr unsigned ledger_batch_stores = 256;
inline constexpr unsigned ledger_batch_changes = 1024;
/// ...or once its oldest unwritten change is this old (a second; checked at changes)...
inline constexpr std::int64_t ledger_batch_age_ns = 1000000000;
/// ...or once the unwritten bytes reach this share of the size limit (1/64).
inline constexpr unsigned ledger_batch_limit_shift = 6;

/// For tests: called by ledger_batch::flush with its mutex held, on the thread that
/// set it (to fork while a flush is under way, for real).
inline thread_local void (*during_ledger_flush_for_testing)() = nullptr;

/// One storage object's side of the ledger (shared by its copies and threads): the
/// ledger's descriptor, kept open, and the per-folder changes of its stores and
/// removals not yet written. Writing a change costs an flock, a pread and a pwrite
/// (and an lstat to notice a ledger removed or replaced), so it is done for a batch:
/// add() says when to write (flush()), and the destructor writes what is left.
/// Changes are deltas added under the lock, so none is lost between processes; what
/// a batch costs the others (a late view of the total): docs/design.md, "Accounting".
class ledger_batch {
public:
    ledger_batch(std::string path, unsigned file_mode, int exact_umask, lock_events* events = nullptr)
        : path_(std::move(path)), file_mode_(file_mode), umask_(exact_umask), generation_(fork_generation()),
          events_(events) {}
    ledger_batch(ledger_batch const&) = delete;
    ledger_batch& operator=(ledger_batch const&) = delete;
    ~ledger_batch() {
        if (has_changes()) flush(now_s()); // a reader-only object leaves the ledger alone
    }

    /// Notes that `folder` gained `added` bytes (a store) and lost `removed`. True when
    /// the caller should flush() now: ledger_batch_stores stores since take_stores(),
    /// the batch is full or old, the folder is due for a recount, the batch's bytes
    /// reach 1/64 of `max_size` (0: none), this object has not read the ledger yet, or
    /// the batch may take the cache over `max_size` while the ledger last said it was
    /// under. Once the ledger says the cache is over its limit, stores go on in batches
    /// (the store that writes one cleans for them all: see directory_storage's write).
    COMPILE_CACHE_DECL bool add(unsigned folder, std::uint64_t added, std::uint64_t removed, std::uint64_t max_size,
                                std::int64_t now_nanoseconds) noexcept;

    struct flushed {
        bool ok = false;           ///< the ledger was read (and written when there were changes)
        std::uint64_t total = 0;   ///< its total afterwards
        std::bitset<256> due;      ///< folders this batch changed that are due for a recount
    };

    /// Adds the unwritten changes to the ledger under its lock (reading it in any
    /// case). Changes that cannot be written (no usable ledger) are dropped; when the
    /// lock is still held after ledger_lock_wait they are kept for a flush at least
    /// ledger_retry_after later (counted and said once in the lock_events).
    COMPILE_CACHE_DECL flushed flush(std::int64_t now) noexcept;

    /// After a recount wrote folder figures: what the ledger now says.
    COMPILE_CACHE_DECL void counted(std::bitset<256> const& folders, std::int64_t now, std::uint64_t total) noexcept;

    COMPILE_CACHE_DECL bool has_changes() noexcept;

    /// The stores add() counted since the last call (flush() leaves the count alone, so
    /// that a flush for another reason, accounted_size() say, does not skip a cleanup).
    COMPILE_CACHE_DECL unsigned take_stores() noexcept;

    /// For the fork handlers alone (directory_storage.hpp, the_fork_registry).
    std::mutex& mutex_for_fork() noexcept { return mutex_; }

private:
    COMPILE_CACHE_DECL void clear_changes() noexcept;

    /// In a forked child the changes are the parent's (it writes them) and the
    /// descriptor shares the parent's lock: drop both. close() here leaves the
    /// parent's lock alone, since the parent still has the description open.
    COMPILE_CACHE_DECL void if_forked_start_afresh() noexcept;

    /// The descriptor of the ledger now at path_: the one kept, unless the file was
    /// removed or replaced since (then it is opened again, created if need be).
    COMPILE_CACHE_DECL bool current_descriptor() noexcept;

    std::mutex mutex_;
    std::string const path_;
    unsigned const file_mode_;
    int const umask_;
    unsigned generation_;
    file_descriptor fd_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
    std::array<std::int64_t, 256> delta_{};
    std::bitset<256> touched_;
    unsigned changes_ = 0;
    unsigned stores_ = 0;
    std::int64_t first_change_ns_ = 0;
    std::uint64_t added_ = 0, removed_ = 0;
    bool known_ = false; ///< the ledger was read at least once (in this process)
    lock_events* const events_;
    std::chrono::steady_clock::time_point retry_after_{}; ///< no flush before this (the lock was held)
    std::uint64_t last_total_ = 0;
    std::array<std::int64_t, 256> counted_at_{};
};

} // namespace compile_cache::detail::directory_storage_impl

#include <compile_cache/storage/directory/detail/impl/directory_files.ipp>
