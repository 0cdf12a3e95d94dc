// compile_cache: a Storage in one SQLite database file.
// OPTIONAL: needs libsqlite3 (Debian: libsqlite3-dev; link -lsqlite3, or the CMake
// target compile_cache::sqlite). Not included by compile_cache.hpp: include it yourself.
//
// For hosts on whom many small files weigh (backups, container layers, `du`, shipping a
// prebuilt cache as one read-only file). Entries are rows of one table; the database
// runs in WAL mode, so readers never wait for a writer and a killed writer loses only
// its own unfinished transaction. Every wait is bounded by the busy timeout. A read
// checks the stored length in SQL before a byte is copied. A write replaces the row in
// one statement (atomic). Over the size limit, the least recently used entries are
// evicted; use times are refreshed at most hourly, as directory_storage's are. A file
// that is not a database, or is damaged, is copied aside (`FILE.broken-<time>-<pid>`)
// and emptied in place, with one line, by a storage that may write it; a file this process
// cannot write is opened immutable and read, and a read-only storage never copies,
// repairs or writes its file. Opening a file whose table is there takes no write lock,
// so a writer stopped in its transaction or a full disk still leaves reads served.
// Another program's SQLite database is refused before anything is written to it, and so is
// a file that others may write or in a folder they may write (anyone may have planted its
// rows, or a -wal beside it); a damaged file is never emptied through a symlink. One
// database is shared by the processes of one machine: see docs/policies.md for what
// NFS does to SQLite's locks.
#pragma once

// ---- inlined compile_cache/detail/config.hpp
// compile_cache: what the library needs from the compiler, said first. Every public
// header includes this before anything else, so that a translation unit compiled with
// the wrong flags (llvm-config --cxxflags gives -std=c++14 -fno-exceptions) stops at
// one sentence naming the flag, not at a page of errors from inside the library.
// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_CONFIG_HPP
#define COMPILE_CACHE_DETAIL_CONFIG_HPP

#if defined(_MSVC_LANG)
#define COMPILE_CACHE_CPLUSPLUS _MSVC_LANG
#else
#define COMPILE_CACHE_CPLUSPLUS __cplusplus
#endif

#if COMPILE_CACHE_CPLUSPLUS < 201703L
#error "compile_cache: needs C++17 or later (-std=c++17); with llvm-config --cxxflags, replace its -std=c++14"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "compile_cache: needs exceptions (drop -fno-exceptions; llvm-config --cxxflags adds it, LLVM's headers do not need it)"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

// #error lets g++ and clang go on, into hundreds of errors from the library's code: a
// missing include is fatal to both, so compilation stops here, at the sentences.
#if defined(COMPILE_CACHE_WRONG_FLAGS)
#include <compile_cache: compilation stopped; fix the flags named above>
#endif

// Separate compilation (docs/design.md, "What including the library costs"): a host that
// defines COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit and includes
// <compile_cache/src.hpp> in exactly one gets the library's non-template functions
// compiled once, there, instead of parsed and instantiated in each translation unit.
// COMPILE_CACHE_DECL marks their declarations (inline in the default, header-only mode);
// their definitions are in impl/*.ipp files, compiled where COMPILE_CACHE_INCLUDE_IMPL is 1.
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#define COMPILE_CACHE_DECL
#if defined(COMPILE_CACHE_SOURCE)
#define COMPILE_CACHE_INCLUDE_IMPL 1
#else
#define COMPILE_CACHE_INCLUDE_IMPL 0
#endif
#else
#define COMPILE_CACHE_DECL inline
#define COMPILE_CACHE_INCLUDE_IMPL 1
#endif

// A build that mixes the modes, or has src.hpp in no translation unit or in two, is ill-formed
// (functions defined inline in some translation units and out of line in another, or not at
// all, or twice); it fails at link time with a symbol whose name says what to do:
// - every translation unit in separate-compilation mode references
//   compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit, which
//   src.hpp defines: "undefined reference" without src.hpp, "multiple definition" with two;
// - every header-only translation unit defines
//   compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none
//   in one COMDAT group (merged among them), and src.hpp defines it in another: "multiple
//   definition" when both kinds are linked together.
// (ELF, with GCC or Clang: the mark is a section-group directive of the assembler.)
#if defined(__GNUC__)
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
extern "C" char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
namespace compile_cache::detail {
namespace {
[[maybe_unused]] __attribute__((used)) char const* const separate_compilation_mark =
    &compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
} // namespace
} // namespace compile_cache::detail
#elif defined(__ELF__)
__asm__(".pushsection .rodata.compile_cache_header_only_mark,\"aG\",@progbits,compile_cache_header_only_mark,comdat\n"
        ".globl compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none\n"
        "compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none:\n"
        ".byte 0\n"
        ".popsection\n");
#endif
#endif

// A function each module (the main program, each shared library) has its own copy of,
// called within the module without going to another's: an ELF symbol of hidden visibility.
#if defined(__GNUC__) && defined(__ELF__)
#define COMPILE_CACHE_MODULE_LOCAL __attribute__((visibility("hidden")))
#else
#define COMPILE_CACHE_MODULE_LOCAL
#endif

// RTTI is checked by detail/config_rtti.hpp, in the headers that need it: the LLVM
// adapter's no-RTTI side (compile_cache/llvm/object_store.hpp, object_cache.hpp) does not.

#endif // COMPILE_CACHE_DETAIL_CONFIG_HPP
// ---- end of compile_cache/detail/config.hpp
#include <compile_cache/compile_cache.hpp>


#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace compile_cache {

/// Settings of a sqlite_storage.
struct sqlite_options {
    /// Size limit of the entries' bytes; over it the least recently used are evicted
    /// down to 90% of it. 0: no limit.
    std::uint64_t max_size = std::uint64_t{1} << 30;
    /// The longest any call waits for another process's lock before it gives up (a
    /// read is then an error, a write a write error: counted, never a hang).
    std::chrono::milliseconds busy_timeout{2000};
    /// Open the file immutable, for reading only (a prebuilt cache shipped read-only).
    /// A file this process cannot write, or in a folder it cannot write, is opened so
    /// anyway.
    bool read_only = false;
    /// For tools that only look (compile-cache stats, list, show, verify): the file is
    /// opened read-only but not immutable, so that what live writers committed (their
    /// WAL included) is seen; nothing is written, copied aside or repaired, and damage
    /// is an error of the call. A file that cannot be opened so is opened immutable.
    bool inspect_only = false;
    /// Whether a file found damaged (or not a database) is copied aside and emptied. A tool
    /// that writes to a user's cache (compile-cache clear, verify --remove, copy into it)
    /// sets it false: damage is then an error of the call, and the file stays as it is.
    bool repair = true;
    /// One-line reports (a damaged file copied aside and emptied); stderr when empty.
    std::function<void(std::string_view)> logger;
};

namespace detail::sqlite_impl {

/// Identifies a compile_cache database (PRAGMA application_id): a SQLite file with
/// another id is someone else's, and is left alone.
inline constexpr std::int32_t application_id = 0x63634331; // "ccC1"
inline constexpr std::int64_t refresh_after_s = 3600;

inline std::int64_t now_s() noexcept {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// An error_code for a SQLite result: busy and locked become resource_unavailable_try_again,
/// read-only read_only_file_system, full no_space_on_device, the rest io_error.
inline std::error_code code_of(int rc) noexcept {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return std::make_error_code(std::errc::resource_unavailable_try_again);
    case SQLITE_READONLY: return std::make_error_code(std::errc::read_only_file_system);
    case SQLITE_FULL: return std::make_error_code(std::errc::no_space_on_device);
    case SQLITE_NOMEM: return std::make_error_code(std::errc::not_enough_memory);
    case SQLITE_TOOBIG: return std::make_error_code(std::errc::file_too_large);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM: return std::make_error_code(std::errc::permission_denied);
    default: return std::make_error_code(std::errc::io_error);
    }
}

/// A busy timeout as sqlite3_busy_timeout takes it: within 0 and INT32_MAX ms.
inline int busy_timeout_ms(std::chrono::milliseconds busy) noexcept {
    return busy.count() < 0 ? 0 : busy.count() > INT32_MAX ? INT32_MAX : static_cast<int>(busy.count());
}

/// The statements that make a compile_cache database's table, index and id, in one
/// transaction (what a new or emptied file needs).
inline std::string schema_sql() {
    return "BEGIN IMMEDIATE;"
           "CREATE TABLE IF NOT EXISTS entries(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, "
           "used INTEGER NOT NULL, value BLOB NOT NULL);"
           "CREATE INDEX IF NOT EXISTS entries_by_use ON entries(used);"
           "PRAGMA application_id=" +
           std::to_string(application_id) + ";COMMIT";
}

/// Copies the file `f` (SQLite's own handle of it) to a new file `aside`: made with O_EXCL
/// (nothing there, not even a symlink: in a folder others may write, one planted at the
/// predictable name is never followed), with `mode`, and only when the file system has
/// room for it. Read through SQLite's handle, never another descriptor: closing one would
/// drop every lock this process holds on the file, its other connections' included
/// (POSIX). Taken without a lock: a copy of a damaged file, for a look. "" when done,
/// else why not (the partial copy removed).
inline std::string copy_through(sqlite3_file* f, std::string const& aside, mode_t mode) {
    sqlite3_int64 size = 0;
    if (!f || !f->pMethods || f->pMethods->xFileSize(f, &size) != SQLITE_OK || size < 0) return "cannot size it";
    std::string const folder = aside.find('/') == std::string::npos ? "." : aside.substr(0, aside.rfind('/') + 1);
    struct statvfs fs {};
    if (::statvfs(folder.c_str(), &fs) == 0 &&
        static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < static_cast<unsigned long long>(size) + (1u << 20))
        return std::strerror(ENOSPC); // (nothing written: a full disk is not filled up to the last block)
    int const out = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
    if (out < 0) return std::strerror(errno);
    std::size_t const chunk = std::size_t{1} << 16;
    std::unique_ptr<char[]> const buffer(new (std::nothrow) char[chunk]);
    std::string why = buffer ? "" : std::strerror(ENOMEM);
    for (sqlite3_int64 at = 0; why.empty() && at < size;) {
        int const n = static_cast<int>(std::min<sqlite3_int64>(static_cast<sqlite3_int64>(chunk), size - at));
        int const rc = f->pMethods->xRead(f, buffer.get(), n, at); // (a short read: the rest zero-filled)
        if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) {
            why = sqlite3_errstr(rc);
            break;
        }
        for (int done = 0; why.empty() && done < n;) {
            ssize_t const w =
                retry_on_eintr([&] { return ::write(out, buffer.get() + done, static_cast<std::size_t>(n - done)); });
            if (w < 0) why = std::strerror(errno);
            else done += static_cast<int>(w);
        }
        at += n;
    }
    if (::close(out) != 0 && why.empty()) why = std::strerror(errno);
    if (!why.empty()) ::unlink(aside.c_str());
    return why;
}

/// What repair_file did.
enum class repair_outcome { done, not_copied, not_emptied };

/// Repairs the file at `path` in place: copies it to `aside` (unless `aside` is empty:
/// copied before) through SQLite's handle (copy_through), then empties it with SQLite's
/// reset (a VACUUM under SQLITE_DBCONFIG_RESET_DATABASE: it works on a damaged file, or
/// one that is no database, and is a write transaction under the file's locks, waiting up
/// to `busy`, which other connections see as any commit), incremental auto-vacuum kept,
/// and makes the table at once (schema_sql), so that other processes' statements find it.
/// `why` says why not, when not done.
inline repair_outcome repair_file(std::string const& path, std::string const& aside, mode_t mode,
                                  std::chrono::milliseconds busy, std::string& why) {
    sqlite3* db = nullptr;
    // (Never through a symlink: the file it names may be anyone's, a planted link's.)
    int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr);
    // (Not copied until the copy is made: a failed open leaves a copy to make, never one
    // taken for made.)
    repair_outcome outcome = aside.empty() ? repair_outcome::not_emptied : repair_outcome::not_copied;
    if (rc != SQLITE_OK) {
        why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    } else {
        sqlite3_busy_timeout(db, busy_timeout_ms(busy));
        sqlite3_file* f = nullptr;
        if (!aside.empty()) {
            (void)sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f);
            why = copy_through(f, aside, mode);
        }
        if (why.empty()) {
            outcome = repair_outcome::not_emptied;
            rc = sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 1, nullptr);
            if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA auto_vacuum=INCREMENTAL", nullptr, nullptr, nullptr);
            if (rc == SQLITE_OK) rc = sqlite3_exec(db, "VACUUM", nullptr, nullptr, nullptr);
            (void)sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 0, nullptr);
            if (rc == SQLITE_OK) {
                outcome = repair_outcome::done; // (the table follows: a failure there, the next open's)
                if (sqlite3_exec(db, schema_sql().c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
                    (void)sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
            } else {
                why = sqlite3_errmsg(db);
            }
        }
    }
    sqlite3_close_v2(db);
    return outcome;
}

/// One repair of a file at a time across processes, and the count of repairs done, in
/// `FILE.repair` (a decimal count; made with the file's mode, never through a symlink). A
/// process that found damage takes the lock (flock, waiting up to the busy timeout) and
/// repairs only if no repair was counted since it opened its connection (count(), read
/// then): else the damage it saw may be gone, and what others stored since would be
/// emptied with it. The count is read without the lock: a torn read only makes it differ,
/// which skips a repair that the next damaged call makes.
class repair_lock {
public:
    static std::string path_of(std::string const& db) { return db + ".repair"; }

    /// The repairs counted in `db`'s lock file; 0 when there is none.
    static std::uint64_t count(std::string const& db) noexcept {
        try {
            std::string const p = path_of(db);
            int const fd = retry_on_eintr([&] { return ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); });
            if (fd < 0) return 0;
            std::uint64_t const n = count_in(fd);
            ::close(fd);
            return n;
        } catch (...) {
            return 0;
        }
    }

    repair_lock() = default;
    repair_lock(repair_lock const&) = delete;
    repair_lock& operator=(repair_lock const&) = delete;
    ~repair_lock() {
        // Unlocked before the close: a child forked (no exec) meanwhile shares the lock
        // through its copy of the descriptor, and would keep it for its whole life.
        if (fd_ >= 0) {
            ::flock(fd_, LOCK_UN);
            ::close(fd_);
        }
    }

    /// Takes the lock of `db` (its file made with `mode` when there is none), waiting up
    /// to `busy`; "" when taken, else why not.
    std::string take(std::string const& db, mode_t mode, std::chrono::milliseconds busy) {
        std::string const p = path_of(db);
        int const flags = O_NOFOLLOW | O_CLOEXEC;
        fd_ = retry_on_eintr([&] { return ::open(p.c_str(), O_RDWR | O_CREAT | O_EXCL | flags, mode & 0666); });
        if (fd_ >= 0) {
            (void)::fchmod(fd_, mode & 0666); // (the umask left aside: shared as the file is)
        } else if (errno == EEXIST) {
            fd_ = retry_on_eintr([&] { return ::open(p.c_str(), O_RDWR | flags); });
            // (A lock file this process may not write still locks; its count then stays.)
            if (fd_ < 0 && errno == EACCES) fd_ = retry_on_eintr([&] { return ::open(p.c_str(), O_RDONLY | flags); });
        }
        if (fd_ < 0) {
            int const e = errno;
            return p + ": " + std::strerror(e);
        }
        auto const until = std::chrono::steady_clock::now() + std::max(busy, std::chrono::milliseconds(0));
        while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            int const e = errno;
            if ((e != EWOULDBLOCK && e != EINTR) || std::chrono::steady_clock::now() >= until) {
                std::string const why = p + ": " + (e == EWOULDBLOCK ? "held by another repair" : std::strerror(e));
                ::close(fd_);
                fd_ = -1;
                return why;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return {};
    }

    /// The repairs counted, read under the lock.
    std::uint64_t held_count() const noexcept { return count_in(fd_); }

    /// Counts one more repair (under the lock); false when the file cannot be written.
    bool counted() noexcept {
        try {
            std::string const text = std::to_string(held_count() + 1) + "\n";
            return ::ftruncate(fd_, 0) == 0 &&
                   retry_on_eintr([&] { return ::pwrite(fd_, text.data(), text.size(), 0); }) ==
                       static_cast<ssize_t>(text.size());
        } catch (...) {
            return false;
        }
    }

private:
    static std::uint64_t count_in(int fd) noexcept {
        char text[24] = {};
        ssize_t const n = retry_on_eintr([&] { return ::pread(fd, text, sizeof text - 1, 0); });
        std::uint64_t count = 0;
        for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9' && count < (UINT64_MAX - 9) / 10; ++i)
            count = count * 10 + static_cast<std::uint64_t>(text[i] - '0');
        return count;
    }

    int fd_ = -1;
};

inline bool is_damage(int rc) noexcept { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }

struct statement_deleter {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using statement = std::unique_ptr<sqlite3_stmt, statement_deleter>;

/// Resets a statement when a call is done with it, whatever the path out. It watches
/// the connection's holder, not the statement: a repair in between (failed_locked
/// closes the damaged connection, which finalizes every statement, and reopens) leaves
/// it nothing freed to touch.
struct reset_guard {
    statement const& held;
    ~reset_guard() {
        if (sqlite3_stmt* s = held.get()) {
            sqlite3_reset(s);
            sqlite3_clear_bindings(s);
        }
    }
};

/// While alive, in a process with a file size limit (RLIMIT_FSIZE, `ulimit -f`), SIGXFSZ
/// is blocked on this thread, and one that SQLite's writes raised meanwhile is taken at the
/// end rather than delivered: a write past the limit fails (EFBIG), which SQLite reports as
/// an error, where the signal at its default action would end the host. Nothing past one
/// getrlimit without a limit; a SIGXFSZ the thread already blocked is left to it.
class file_size_signal_shield {
public:
    file_size_signal_shield() noexcept {
        rlimit r{};
        if (::getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return;
        sigset_t x;
        ::sigemptyset(&x);
        ::sigaddset(&x, SIGXFSZ);
        active_ = ::pthread_sigmask(SIG_BLOCK, &x, &before_) == 0;
    }
    file_size_signal_shield(file_size_signal_shield&& other) noexcept
        : before_(other.before_), active_(std::exchange(other.active_, false)) {}
    file_size_signal_shield& operator=(file_size_signal_shield&&) = delete;
    ~file_size_signal_shield() {
        if (!active_) return;
        sigset_t x;
        ::sigemptyset(&x);
        ::sigaddset(&x, SIGXFSZ);
        sigset_t pending;
        if (!::sigismember(&before_, SIGXFSZ) && ::sigpending(&pending) == 0 && ::sigismember(&pending, SIGXFSZ)) {
            timespec const none{};
            (void)::sigtimedwait(&x, nullptr, &none);
        }
        (void)::pthread_sigmask(SIG_SETMASK, &before_, nullptr);
    }

private:
    sigset_t before_{};
    bool active_ = false;
};

/// One connection and its prepared statements.
struct connection {
    sqlite3* db = nullptr;
    bool read_only = false;
    ino_t inode = 0; ///< the file opened, to tell it from one that replaced it
    dev_t device = 0;
    statement select, upsert, erase, touch, total, evict, list;

    connection() = default;
    connection(connection const&) = delete;
    connection& operator=(connection const&) = delete;
    ~connection() { close(); }

    /// Every prepared statement, for close() and abandon().
    std::array<statement*, 7> statements() noexcept { return {&select, &upsert, &erase, &touch, &total, &evict, &list}; }

    void close() noexcept {
        file_size_signal_shield const shield; // (the last close checkpoints: it writes)
        for (statement* s : statements()) s->reset();
        if (db) sqlite3_close_v2(db);
        db = nullptr;
    }

    /// Forgets the connection without closing it: in a forked child, where it is the
    /// parent's (SQLite forbids using it there, and closing it could checkpoint and delete
    /// the WAL the parent is writing). Its memory and descriptor stay, unused.
    void abandon() noexcept {
        for (statement* s : statements()) (void)s->release();
        db = nullptr;
    }

    int exec(char const* sql) noexcept { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }

    int prepare(statement& s, char const* sql) noexcept {
        sqlite3_stmt* raw = nullptr;
        int const rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
        s.reset(raw);
        return rc;
    }

    /// The first column of the first row of `sql` as text ("" for no row or NULL), or
    /// nullopt (with the result code in rc).
    std::optional<std::string> text_value(char const* sql, int& rc) {
        sqlite3_stmt* raw = nullptr;
        rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
        statement s(raw);
        if (rc != SQLITE_OK) return std::nullopt;
        rc = sqlite3_step(raw);
        if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
            return std::string();
        }
        if (rc != SQLITE_ROW) return std::nullopt;
        rc = SQLITE_OK;
        unsigned char const* text = sqlite3_column_text(raw, 0);
        return text ? std::string(reinterpret_cast<char const*>(text)) : std::string();
    }

    /// An integer PRAGMA's value, or nullopt (with the result code in rc).
    std::optional<std::int64_t> pragma_value(char const* sql, int& rc) noexcept {
        sqlite3_stmt* raw = nullptr;
        rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
        statement s(raw);
        if (rc != SQLITE_OK) return std::nullopt;
        rc = sqlite3_step(raw);
        if (rc != SQLITE_ROW) return std::nullopt;
        rc = SQLITE_OK;
        return sqlite3_column_int64(raw, 0);
    }
};

/// Why an open failed: `damaged` when the file is not a (sound) database, so that it
/// may be repaired (copied aside, emptied); `foreign` when it is another program's database.
enum class open_outcome { ok, damaged, foreign, failed };

/// A storage's mutex and connection, as a fork handles them. A fork first takes each
/// storage's mutex (within fork_lock_wait) and closes its connection, so that the child
/// inherits no SQLite state of the file (a connection, or SQLite's own records of the
/// file's locks, which a connection the child opened would share, so that the parent's
/// close would remove the WAL the child writes: docs/design.md, "SQLite storage");
/// both sides then reopen at their next call. One whose mutex another thread held
/// through the wait keeps its connection in the parent; the child makes the mutex anew,
/// abandons the connection, and that storage fails every call there (never a wait), as
/// every other storage then does.
struct forkable_state {
    mutable std::timed_mutex mutex;
    connection c;
    pid_t connection_pid = 0;         ///< the process that opened `c`
    bool held_for_fork = false;       ///< the fork under way took `mutex`
    bool unusable_after_fork = false; ///< in a child: its connection, or another's, was the parent's, open
    fork_list_links<forkable_state> fork_links; ///< in the_fork_registry()
    unsigned made_in = fork_generation(); ///< the process it was made in (its fork count)
    forkable_state() noexcept;
    forkable_state(forkable_state const&) = delete;
    forkable_state& operator=(forkable_state const&) = delete;
    ~forkable_state();
};

/// Every forkable_state alive, for the fork handlers.
inline fork_list<forkable_state>& the_fork_registry() noexcept {
    static fork_list<forkable_state> registry; // (constant-initialised: fork_list)
    return registry;
}
/// In a child: a connection of the parent's was left open, so SQLite's records of its
/// file's locks are here too, and no storage of this process opens a connection.
inline std::atomic<bool>& parent_connection_open() noexcept {
    static std::atomic<bool> open{false};
    return open;
}
inline constexpr std::chrono::milliseconds fork_lock_wait{250};

inline void take_before_fork() noexcept {
    fork_list<forkable_state>& r = the_fork_registry();
    r.held_for_fork = r.lock(std::chrono::steady_clock::now() + fork_lock_wait);
    if (!r.held_for_fork) return;
    for (forkable_state* s = r.head(); s; s = s->fork_links.next) {
        s->held_for_fork = s->mutex.try_lock_for(fork_lock_wait);
        if (s->held_for_fork) s->c.close();
    }
}
inline void give_back_after_fork_in_parent() noexcept {
    fork_list<forkable_state>& r = the_fork_registry();
    if (!r.held_for_fork) return;
    for (forkable_state* s = r.head(); s; s = s->fork_links.next)
        if (s->held_for_fork) {
            s->held_for_fork = false;
            s->mutex.unlock();
        }
    r.held_for_fork = false;
    r.unlock();
}
// Nothing here allocates. One storage whose connection stayed open (its mutex not taken)
// makes every storage unusable here: SQLite's records of that connection's locks, which
// this process does not hold, would be shared by any connection opened here to its file,
// whose WAL the parent's close could then remove under it (stores reported done, lost).
// A fork that could not take the list closed none: every storage is unusable here too.
inline void give_back_after_fork_in_child() noexcept {
    fork_list<forkable_state>& r = the_fork_registry();
    if (!r.held_for_fork) {
        parent_connection_open() = true;
        r.forget_all();
        return;
    }
    bool one_left_open = false;
    for (forkable_state* s = r.head(); s; s = s->fork_links.next) one_left_open = one_left_open || !s->held_for_fork;
    if (one_left_open) parent_connection_open() = true;
    for (forkable_state* s = r.head(); s; s = s->fork_links.next) {
        if (s->held_for_fork) {
            s->held_for_fork = false;
            s->mutex.unlock();
            s->unusable_after_fork = s->unusable_after_fork || one_left_open;
        } else {
            new (&s->mutex) std::timed_mutex; // its holder is not in this process
            s->c.abandon();
            s->unusable_after_fork = true;
        }
    }
    r.held_for_fork = false;
    r.unlock();
}

inline forkable_state::forkable_state() noexcept {
    fork_list<forkable_state>& r = the_fork_registry();
    if (!r.install(fork_stage::sqlite_storages,
                   {&take_before_fork, &give_back_after_fork_in_parent, &give_back_after_fork_in_child}))
        return;
    unusable_after_fork = parent_connection_open();
    (void)r.link(*this); // (past its bound, left out: its child finds the parent's connection, unusable)
}
inline forkable_state::~forkable_state() {
    the_fork_registry().unlink(*this);
    if (connection_pid != ::getpid()) c.abandon(); // a child's copy still open: the parent's to close
}

} // namespace detail::sqlite_impl

/// A Storage in one SQLite file. Thread-safe: one connection per object and process,
/// used under a mutex (a call holds it for a few statements, each bounded by the busy
/// timeout; a call that cannot take it within lock_wait() fails, counted). A fork closes
/// the connection first; parent and child each reopen at their next call
/// (detail::sqlite_impl::forkable_state).
/// Movable, not copyable. No member throws.
class sqlite_storage {
public:
    /// No file: reads find nothing, writes fail, usable() is false (what a disabled
    /// cache holds).
    sqlite_storage() noexcept = default;

    /// Opens (or creates) the database at `path`. A failure does not throw: usable()
    /// is then false, and a cache over it says so and runs disabled.
    explicit sqlite_storage(std::string path, sqlite_options options = {}) noexcept {
        try {
            state_ = std::make_unique<state>();
            state_->path = std::move(path);
            state_->options = std::move(options);
            std::lock_guard<std::timed_mutex> lock(state_->mutex);
            detail::sqlite_impl::file_size_signal_shield const shield;
            open_locked();
        } catch (...) { // (no memory: a storage that cannot work)
            if (state_) {
                state_->c.close();
                state_->why = "out of memory"; // (within the string's own bytes)
            }
        }
    }

    sqlite_storage(sqlite_storage&&) noexcept = default;
    sqlite_storage& operator=(sqlite_storage&&) noexcept = default;

    /// The earlier form, for a host that calls it: the new one, with the settings the reader
    /// stands for (see detail::settings_reader_access::settings_of).
    COMPILE_CACHE_DEPRECATED_STORAGE_FROM_ENV static std::optional<sqlite_storage> from_env(settings_reader& env) {
        return detail::from_env_of_reader<sqlite_storage>(env);
    }
    /// The storage the environment asks for (settings.hpp): `PREFIX_FILE` names the
    /// database file (unset, empty, `0`, `off`, `false`, `no`: not configured);
    /// `PREFIX_MAX_SIZE` the size limit (default 1G, `0` no limit); `PREFIX_BUSY_TIMEOUT`
    /// the longest wait for another process's lock (default 2000 ms); `PREFIX_FILE_MODE`
    /// `read-write` (default) or `read-only` (sqlite_options::read_only: the file is
    /// opened immutable and never written, e.g. a prebuilt cache a CI job restored). A bad value is one
    /// line and the default; a file that cannot be opened is off, with the reason. Nothing
    /// is opened when the cache cannot run (storage_settings::cache_off).
    static from_env_result<sqlite_storage> from_env(storage_settings const& settings) {
        settings_reader const& env = settings.env;
        std::string file = env.value("_FILE");
        if (detail::is_off(file)) return from_env_result<sqlite_storage>::not_configured();
        if (!settings.cache_off.empty()) return from_env_result<sqlite_storage>::off(settings.cache_off);
        sqlite_options options;
        options.max_size = env.byte_size("_MAX_SIZE", options.max_size, "1G");
        options.busy_timeout = env.milliseconds("_BUSY_TIMEOUT", options.busy_timeout);
        options.read_only = env.choice<bool>("_FILE_MODE", {{"read-write", false}, {"read-only", true}}, false,
                                             "a file mode");
        options.logger = settings.logger;
        sqlite_storage s(file, std::move(options));
        if (!s.usable())
            return from_env_result<sqlite_storage>::off(env.name("_FILE") + "=\"" + file + "\" cannot be used (" +
                                                        s.why_unusable() + "); the cache is disabled");
        return from_env_result<sqlite_storage>(std::move(s));
    }

    /// The settings from_env reads, one line each.
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        std::string const p(prefix);
        return {
            {p + "_FILE", "the SQLite database file of the cache; unset, empty, 0, off, false or no disable the cache"},
            {p + "_MAX_SIZE", "size limit of the entries: bytes, or with K, M, G (powers of 1024); default 1G; "
                              "least recently used entries are evicted"},
            {p + "_BUSY_TIMEOUT", "the longest wait for another process's lock on the file, in milliseconds "
                                  "(or with s); default 2000"},
            {p + "_FILE_MODE", "read-write (default) or read-only: read-only opens the file immutable and never "
                               "writes it (stores fail, counted)"},
        };
    }

    /// The file's path; empty on a moved-from object, or one whose construction had no memory.
    std::string const& path() const noexcept {
        static std::string const none;
        return state_ ? state_->path : none;
    }
    /// Whether the file was opened read-only (immutable): reads work, writes fail.
    bool read_only() const noexcept {
        if (!state_) return false;
        auto lock = lock_state();
        return lock && state_->c.db && state_->c.read_only;
    }
    /// False when the database could not be opened at all (why_unusable() says why).
    bool usable() const noexcept {
        if (!state_) return false;
        auto lock = lock_state();
        return lock && state_->c.db != nullptr;
    }
    std::string why_unusable() const {
        if (!state_) return "moved from";
        auto lock = lock_state();
        if (!lock) return "another thread held it past the wait's bound";
        return state_->why;
    }

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        return read_row(k, out, max_size, true);
    }

    /// As read, without refreshing the entry's use time: the optional Storage member
    /// `peek`, so that the compile-cache tool's show and verify leave eviction alone.
    read_result peek(key const& k, std::string& out, std::size_t max_size) noexcept {
        return read_row(k, out, max_size, false);
    }

private:
    /// The connection's busy timeout: sqlite_options::busy_timeout.
    void set_busy_timeout_locked(detail::sqlite_impl::connection& c) const noexcept {
        sqlite3_busy_timeout(c.db, detail::sqlite_impl::busy_timeout_ms(state_->options.busy_timeout));
    }

    read_result read_row(key const& k, std::string& out, std::size_t max_size, bool refresh_use) noexcept {
        out.clear();
        if (k.empty() || !state_) return {read_status::absent, {}};
        try {
            auto lock = lock_state();
            if (!lock) return {read_status::error, busy_code()};
            auto& c = state_->c;
            if (!connection_of_this_process_locked()) return {read_status::error, unusable_code()};
            sqlite3_stmt* s = c.select.get();
            detail::sqlite_impl::reset_guard reset{c.select};
            sqlite3_bind_blob(s, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
            sqlite3_bind_int64(s, 2, static_cast<sqlite3_int64>(max_size > std::size_t{INT64_MAX} ? INT64_MAX : max_size));
            int const rc = sqlite3_step(s);
            if (rc == SQLITE_DONE) return {read_status::absent, {}};
            if (rc != SQLITE_ROW) return {read_status::error, failed_locked(rc)};
            // Column 0: length(value), from the record header; column 1: the value
            // only when that length is within max_size (else NULL: nothing copied).
            auto const length = sqlite3_column_int64(s, 0);
            if (length < 0 || static_cast<std::uint64_t>(length) > max_size) return {read_status::too_large, {}};
            void const* bytes = sqlite3_column_blob(s, 1);
            int const n = sqlite3_column_bytes(s, 1);
            if (n != length) return {read_status::error, std::make_error_code(std::errc::io_error)};
            if (n > 0) out.assign(static_cast<char const*>(bytes), static_cast<std::size_t>(n));
            std::int64_t const used = sqlite3_column_int64(s, 2);
            std::int64_t const id = sqlite3_column_int64(s, 3);
            sqlite3_reset(s);
            std::int64_t const now = detail::sqlite_impl::now_s();
            if (refresh_use && !c.read_only && now - used >= detail::sqlite_impl::refresh_after_s) {
                sqlite3_stmt* t = c.touch.get();
                detail::sqlite_impl::reset_guard touch_reset{c.touch};
                sqlite3_bind_int64(t, 1, now);
                sqlite3_bind_int64(t, 2, id);
                // Best effort, and without waiting: a hit never waits for another
                // process's write lock; the entry keeps its old time until a later hit.
                sqlite3_busy_timeout(c.db, 0);
                sqlite3_step(t);
                set_busy_timeout_locked(c);
            }
            return {read_status::found, {}};
        } catch (...) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
        }
    }

public:
    std::error_code write(key const& k, std::string_view bytes) noexcept {
        if (k.empty() || !state_) return std::make_error_code(std::errc::invalid_argument);
        try {
            auto lock = lock_state();
            if (!lock) return busy_code();
            auto& c = state_->c;
            if (!connection_of_this_process_locked()) return unusable_code();
            if (c.read_only) return std::make_error_code(std::errc::read_only_file_system);
            // Another process put a new file at the path (an earlier release moved a
            // damaged file aside and made a new one; a user replaced it): a store into
            // the old file would be lost, so it goes to the new one (a read may still be
            // answered from the old).
            if (!file_is_still_ours_locked() && !reopen_locked()) return unusable_code();
            if (c.read_only) return std::make_error_code(std::errc::read_only_file_system);
            if (bytes.size() > static_cast<std::size_t>(INT32_MAX))
                return std::make_error_code(std::errc::file_too_large);
            {
                sqlite3_stmt* s = c.upsert.get();
                detail::sqlite_impl::reset_guard reset{c.upsert};
                sqlite3_bind_blob(s, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
                sqlite3_bind_int64(s, 2, detail::sqlite_impl::now_s());
                sqlite3_bind_blob(s, 3, bytes.empty() ? "" : bytes.data(), static_cast<int>(bytes.size()),
                                  SQLITE_STATIC);
                int const rc = sqlite3_step(s);
                if (rc != SQLITE_DONE) return failed_locked(rc);
            }
            state_->written_since_check += bytes.size();
            if (state_->options.max_size != 0 &&
                (!state_->checked_once || state_->written_since_check >= state_->options.max_size / 16)) {
                evict_locked();
            }
            return {};
        } catch (...) {
            return std::make_error_code(std::errc::not_enough_memory);
        }
    }

    std::error_code remove(key const& k) noexcept {
        if (!state_) return std::make_error_code(std::errc::invalid_argument);
        if (k.empty()) return {}; // (the empty key names no entry: key.hpp)
        try {
            auto lock = lock_state();
            if (!lock) return busy_code();
            auto& c = state_->c;
            if (!connection_of_this_process_locked()) return unusable_code();
            if (c.read_only) return std::make_error_code(std::errc::read_only_file_system);
            sqlite3_stmt* s = c.erase.get();
            detail::sqlite_impl::reset_guard reset{c.erase};
            sqlite3_bind_blob(s, 1, k.data(), static_cast<int>(k.size()), SQLITE_STATIC);
            int const rc = sqlite3_step(s);
            if (rc != SQLITE_DONE) return failed_locked(rc);
            return {};
        } catch (...) {
            return std::make_error_code(std::errc::not_enough_memory);
        }
    }

    /// Called by the cache when the entry under `k` failed the envelope check: the row
    /// is removed, so that the next store writes a sound one.
    void corrupt(key const& k) noexcept { remove(k); }

    /// Every entry (key, size, last use), without reading a value or touching a use
    /// time: the optional Storage member `list`, for tools. Stops at the first error
    /// (returned). A row whose key cannot be a key (none, or over key::max_size bytes:
    /// planted, or another program's) is no entry: it is left out, never truncated into
    /// another key, and counted in foreign_rows().
    std::error_code list(std::vector<stored_entry>& out) const noexcept {
        if (!state_) return std::make_error_code(std::errc::invalid_argument);
        try {
            auto lock = lock_state();
            if (!lock) return busy_code();
            auto& c = state_->c;
            if (!connection_of_this_process_locked()) return unusable_code();
            state_->foreign_rows = 0;
            sqlite3_stmt* s = c.list.get();
            detail::sqlite_impl::reset_guard reset{c.list};
            int rc;
            while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
                std::optional<key> const k =
                    key::from_bytes(sqlite3_column_blob(s, 0), static_cast<std::size_t>(sqlite3_column_bytes(s, 0)));
                if (!k) {
                    ++state_->foreign_rows;
                    continue;
                }
                stored_entry e;
                e.k = *k;
                e.size = static_cast<std::uint64_t>(sqlite3_column_int64(s, 1));
                e.last_use_s = sqlite3_column_int64(s, 2);
                out.push_back(e);
            }
            return rc == SQLITE_DONE ? std::error_code() : detail::sqlite_impl::code_of(rc);
        } catch (...) {
            return std::make_error_code(std::errc::not_enough_memory);
        }
    }

    /// The rows the last list() left out because their key is not a key.
    std::uint64_t foreign_rows() const noexcept {
        if (!state_) return 0;
        auto lock = lock_state();
        return lock ? state_->foreign_rows : 0;
    }

    /// Evicts least recently used entries now until the entries fit in the limit.
    std::error_code prune() noexcept {
        if (!state_) return std::make_error_code(std::errc::invalid_argument);
        try {
            auto lock = lock_state();
            if (!lock) return busy_code();
            if (!connection_of_this_process_locked()) return unusable_code();
            return evict_locked();
        } catch (...) {
            return std::make_error_code(std::errc::not_enough_memory);
        }
    }

private:
    /// The ways a repair fails, each reported once until a repair succeeds (report_once):
    /// bits of state::reported_unrepaired.
    enum class repair_failure : unsigned { none = 0, lock = 1, copy = 2, empty = 4, link = 8 };

    struct state : detail::sqlite_impl::forkable_state { // (its mutex, connection and fork marks)
        std::string path;
        sqlite_options options;
        std::string why; ///< why the database could not be opened
        std::uint64_t written_since_check = 0;
        bool checked_once = false;
        std::uint64_t foreign_rows = 0; ///< of the last list()
        /// The last repair that did not finish (repair_in_place_locked), of the file as it
        /// was then: tried again on it, a copy made is not made again, and one that failed
        /// is tried again only after a minute.
        struct {
            ino_t inode = 0;
            dev_t device = 0;
            off_t size = 0;
            std::int64_t mtime_ns = 0;
            std::chrono::steady_clock::time_point at{};
            bool copied = false;
            std::string aside;
        } repair;
        /// The ways of failing already reported since the last repair that succeeded (bits
        /// of repair_failure; 0: none).
        unsigned reported_unrepaired = 0;
        /// The repairs counted in the file's repair_lock when the connection was opened (or
        /// this process last repaired it): another count at a repair means another process
        /// repaired the file since, so this one does not.
        std::uint64_t repairs_seen = 0;
    };

    std::error_code unusable_code() const noexcept { return std::make_error_code(std::errc::io_error); }
    std::error_code busy_code() const noexcept { return std::make_error_code(std::errc::device_or_resource_busy); }

    /// How long a call waits for the storage's mutex: what another thread's call may hold
    /// it for (a few statements, each within the busy timeout), and a second more. Past it
    /// the call fails (a prune, a listing, a first open's quick check or a repair's copy may
    /// hold it longer).
    std::chrono::milliseconds lock_wait() const noexcept {
        auto const busy = state_->options.busy_timeout.count() < 0 ? std::chrono::milliseconds(0)
                                                                   : state_->options.busy_timeout;
        return std::min<std::chrono::milliseconds>(busy, std::chrono::hours(1)) * 3 + std::chrono::seconds(1);
    }

    /// The state's mutex, held (or not: false), and SIGXFSZ kept from the host meanwhile
    /// (file_size_signal_shield: released after the mutex).
    struct state_lock {
        detail::sqlite_impl::file_size_signal_shield shield;
        std::unique_lock<std::timed_mutex> lock;
        explicit operator bool() const noexcept { return lock.owns_lock(); }
    };
    state_lock lock_state() const noexcept {
        state_lock l{{}, std::unique_lock<std::timed_mutex>(state_->mutex, std::defer_lock)};
        try {
            (void)l.lock.try_lock_for(lock_wait());
        } catch (...) { // (a system error: not taken)
        }
        return l;
    }

    /// Whether the file at the path is the one the connection has open (not one another
    /// process put there since: an earlier release that moved a damaged one aside, a user).
    bool file_is_still_ours_locked() const noexcept {
        auto const& c = state_->c;
        if (c.inode == 0) return true; // (not known: immutable opens)
        struct stat st {};
        return ::stat(state_->path.c_str(), &st) == 0 && st.st_ino == c.inode && st.st_dev == c.device;
    }

    /// The connection, opened in this process: one closed by a fork or a failure is opened
    /// again. False when none can be opened, or when this process may not use the
    /// storage (connection_may_be_used_locked).
    bool connection_of_this_process_locked() const {
        if (!connection_may_be_used_locked()) return false;
        // (const for list(): the connection is the storage's means, not its value)
        return state_->c.db || const_cast<sqlite_storage&>(*this).reopen_locked();
    }
    /// False in a child that holds its parent's open connection (a fork that could not
    /// close it, or one made without the fork handlers): it is abandoned, and the storage
    /// fails every call in this process, since a connection opened here would share
    /// SQLite's records of the file's locks with it.
    bool connection_may_be_used_locked() const noexcept {
        if (state_->c.db && state_->connection_pid != ::getpid()) {
            state_->c.abandon();
            state_->unusable_after_fork = true;
            detail::sqlite_impl::parent_connection_open() = true;
        }
        // Nor in a child where this storage, made before its fork, is out of the fork list
        // (its fork could not take the list, or ran none of its handlers): its connection,
        // or another's, may be the parent's. (Out of it in the process it was made in, its
        // link having failed, it is used there.)
        return !state_->unusable_after_fork && !detail::sqlite_impl::parent_connection_open() &&
               (state_->made_in == detail::fork_generation() ||
                detail::sqlite_impl::the_fork_registry().current(*state_));
    }

    void report(std::string const& line) const noexcept {
        try {
            if (state_->options.logger)
                state_->options.logger(line);
            else
                std::fprintf(stderr, "compile_cache: %s\n", line.c_str());
        } catch (...) {
        }
    }

    /// A failed statement: damage is repaired (copied aside, emptied) for the next call,
    /// by a storage that may write the file and repairs (sqlite_options::repair); others
    /// leave it as it is.
    std::error_code failed_locked(int rc) {
        if (detail::sqlite_impl::is_damage(rc) && !state_->c.read_only && state_->options.repair) {
            state_->c.close();
            repair_in_place_locked("it is damaged");
            open_locked();
        }
        return detail::sqlite_impl::code_of(rc);
    }

    bool reopen_locked() {
        open_locked();
        return state_->c.db != nullptr;
    }

    /// Repairs a damaged file (or one that is not a database) in place: copies it to
    /// `FILE.broken-<time>-<pid>`, then empties it through SQLite's own reset
    /// (detail::sqlite_impl::repair_file), so that other connections, this process's and
    /// others', stay sound and see the emptied file (nothing is renamed or unlinked under
    /// them), and the file keeps its owner, group and mode. A file that cannot be copied
    /// (no room: checked before a byte is written) is left as it is (nothing lost), and the
    /// repair is tried again a minute later (a copy made and not emptied, at once, unless
    /// the file changed since); one another process replaced meanwhile is left too. One
    /// line either way, once per damaged file.
    void repair_in_place_locked(char const* why) {
        auto& c = state_->c;
        std::string const& path = state_->path;
        struct stat st {};
        if (c.inode != 0 && (::stat(path.c_str(), &st) != 0 || st.st_ino != c.inode || st.st_dev != c.device))
            return; // (an earlier release moved it aside and made another: open that)
        c.close();
        if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
            // Never emptied through a symlink: one planted where the cache file goes may
            // name any file this process can write.
            report_once(repair_failure::link, path + ": " + why + ", and it is a symlink: left as it is");
            return;
        }
        if (::stat(path.c_str(), &st) != 0) return;
        detail::sqlite_impl::repair_lock lock;
        if (std::string const not_taken = lock.take(path, st.st_mode, state_->options.busy_timeout);
            !not_taken.empty()) {
            report_once(repair_failure::lock, path + ": " + why + ", and its repair lock cannot be taken (" +
                                                  not_taken + "): left as it is for now");
            return;
        }
        if (lock.held_count() != state_->repairs_seen) {
            // Another process repaired it since this one opened it: what it found may be gone,
            // and what was stored since is not emptied. The caller opens it again.
            state_->repairs_seen = lock.held_count();
            return;
        }
        if (::stat(path.c_str(), &st) != 0) return; // (as it is now, under the lock)
        auto& tried = state_->repair;
        bool const same_file = tried.inode == st.st_ino && tried.device == st.st_dev && tried.size == st.st_size &&
                               tried.mtime_ns == detail::mtime_ns(st);
        auto const now = std::chrono::steady_clock::now();
        // An unfinished repair is tried again a minute later, but for a copy already made
        // of this very file, which is emptied at once: no copy per call, whatever others
        // write meanwhile.
        if (!tried.aside.empty() && now - tried.at < std::chrono::minutes(1) && !(same_file && tried.copied)) return;
        std::string aside; // (none: the copy made of this very file before)
        if (!(same_file && tried.copied)) {
            aside = path + ".broken-" + std::to_string(detail::sqlite_impl::now_s()) + "-" + std::to_string(::getpid());
            tried = {st.st_ino, st.st_dev, st.st_size, detail::mtime_ns(st), now, false, aside};
        }
        std::string failure;
        auto const outcome =
            detail::sqlite_impl::repair_file(path, aside, st.st_mode, state_->options.busy_timeout, failure);
        using detail::sqlite_impl::repair_outcome;
        if (outcome == repair_outcome::not_copied) {
            report_once(repair_failure::copy, path + ": " + why + ", and it cannot be copied aside to " +
                                                  tried.aside + " (" + failure + "): left as it is");
            return;
        }
        tried.copied = true;
        if (outcome == repair_outcome::not_emptied) {
            report_once(repair_failure::empty, path + ": " + why + "; copied aside to " + tried.aside +
                                                   ", but it cannot be emptied (" + failure + "): left as it is");
            return;
        }
        if (!lock.counted())
            report(detail::sqlite_impl::repair_lock::path_of(path) +
                   ": the repair cannot be counted there (it cannot be written): another process that "
                   "found the same damage may repair the file again");
        state_->repairs_seen = lock.held_count();
        report(path + ": " + why + " (not a compile_cache database, or damaged); copied aside to " + tried.aside +
               " and emptied in place");
        tried = {};
        state_->reported_unrepaired = 0;
    }

    /// report(), once for each way a repair fails, until one succeeds: a file left damaged
    /// fails each call that reaches the damage, and says so once; a repair that then fails
    /// another way (the lock was held, now the copy fails) says that too, once, however the
    /// two alternate.
    void report_once(repair_failure how, std::string const& line) {
        auto const bit = static_cast<unsigned>(how);
        if ((state_->reported_unrepaired & bit) != 0) return;
        state_->reported_unrepaired |= bit;
        report(line);
    }

    /// Opens the connection (state::why says why not); one left half made by an exception
    /// (no memory), its statements missing, is closed, so that the next call opens again.
    void open_locked() {
        try {
            open_or_throw_locked();
        } catch (...) {
            state_->c.close();
            throw;
        }
    }

    void open_or_throw_locked() {
        using detail::sqlite_impl::open_outcome;
        state_->c.close();
        state_->connection_pid = ::getpid();
        state_->why.clear();
        if (state_->unusable_after_fork) {
            state_->why = "this process was forked while another thread used a SQLite storage, whose locks it "
                          "does not hold";
            return;
        }
        state_->repairs_seen = detail::sqlite_impl::repair_lock::count(state_->path);
        struct stat st {};
        if (::stat(state_->path.c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0) {
            // Anyone may have planted its rows (directory_storage trusts no such entry).
            state_->why = "it is writable by other users (chmod o-w makes it usable)";
            state_->checked_once = false;
            return;
        }
        if (::stat(folder_of(state_->path).c_str(), &st) == 0 && (st.st_mode & S_IWOTH) != 0) {
            // Anyone may plant a -wal beside it, whose rows SQLite reads as the file's.
            state_->why = "its folder is writable by other users, who may plant its -wal file";
            state_->checked_once = false;
            return;
        }
        bool const immutable = state_->options.read_only || !writable(state_->path);
        // An inspection shares the writers' WAL when there is one; with none, nothing
        // committed is elsewhere, and the file is read immutable (no side file made).
        bool const inspect = state_->options.inspect_only;
        bool const share_wal = inspect && !immutable && ::access((state_->path + "-wal").c_str(), F_OK) == 0;
        open_outcome o = share_wal ? try_open_locked(open_mode::inspect) : open_outcome::failed;
        if (!share_wal || o == open_outcome::failed) {
            state_->why.clear();
            o = try_open_locked(inspect || immutable ? open_mode::immutable : open_mode::read_write);
        }
        if (o == open_outcome::damaged && !immutable && !inspect && state_->options.repair) {
            state_->c.close();
            state_->c.inode = 0; // (the file found damaged is the one at the path now)
            repair_in_place_locked("it is not a database");
            o = try_open_locked(open_mode::read_write);
        }
        if (o != open_outcome::ok) {
            if (state_->why.empty()) state_->why = o == open_outcome::damaged ? "it is not a database" : "it cannot be opened";
            state_->c.close();
        }
        state_->checked_once = false;
    }

    /// The folder of the file at `path`.
    static std::string folder_of(std::string const& path) {
        std::string folder = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
        if (folder.empty()) folder = path.find('/') == 0 ? "/" : ".";
        return folder;
    }

    /// Whether this process may write the file and, for WAL's side files, its folder.
    static bool writable(std::string const& path) {
        std::string const folder = folder_of(path);
        if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0) return false;
        return ::access(folder.c_str(), W_OK) == 0 || ::access(path.c_str(), F_OK) != 0;
    }

    /// `file:` URI of a path, for opening it immutable.
    static std::string uri_of(std::string const& path) {
        std::string u = "file:";
        for (char ch : path) {
            auto const b = static_cast<unsigned char>(ch);
            if (b == '%' || b == '?' || b == '#' || b < 0x21 || b >= 0x7f) {
                static constexpr char digits[] = "0123456789ABCDEF";
                u += '%';
                u += digits[b >> 4];
                u += digits[b & 15];
            } else {
                u += ch;
            }
        }
        return u + "?immutable=1";
    }

    /// How a file is opened: for reading and writing; read-only (sharing the writers'
    /// WAL, for inspect_only); or immutable (no lock, no side file).
    enum class open_mode { read_write, inspect, immutable };

    detail::sqlite_impl::open_outcome try_open_locked(open_mode mode) {
        using detail::sqlite_impl::open_outcome;
        auto& c = state_->c;
        c.close();
        c.read_only = mode != open_mode::read_write;
        bool const immutable = c.read_only;
        int rc = mode == open_mode::immutable
                     ? sqlite3_open_v2(uri_of(state_->path).c_str(), &c.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                                       nullptr)
                 : mode == open_mode::inspect
                     ? sqlite3_open_v2(state_->path.c_str(), &c.db, SQLITE_OPEN_READONLY, nullptr)
                     : sqlite3_open_v2(state_->path.c_str(), &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                       nullptr);
        auto failed = [&](int code, char const* what) {
            if (state_->why.empty())
                state_->why = std::string(what) + ": " + (c.db ? sqlite3_errmsg(c.db) : sqlite3_errstr(code));
            return detail::sqlite_impl::is_damage(code) ? open_outcome::damaged : open_outcome::failed;
        };
        if (rc != SQLITE_OK) return failed(rc, "cannot open it");
        set_busy_timeout_locked(c);
        std::optional<std::int64_t> const id = c.pragma_value("PRAGMA application_id", rc);
        if (!id) return failed(rc, "cannot read it");
        int tables_rc = SQLITE_OK;
        std::optional<std::int64_t> const others = c.pragma_value(
            "SELECT count(*) FROM sqlite_master WHERE name NOT IN ('entries', 'entries_by_use') "
            "AND name NOT LIKE 'sqlite_%'",
            tables_rc);
        if (!others) return failed(tables_rc, "cannot read it");
        // What is there of the schema, read before anything is written: a table named
        // `entries` (or `entries_by_use`) that is not this library's makes the file
        // another program's, left as it is.
        int shape_rc = SQLITE_OK;
        std::optional<std::string> const columns = c.text_value(
            "SELECT group_concat(name || ' ' || type, ',') FROM (SELECT name, type FROM pragma_table_info('entries') "
            "ORDER BY cid)",
            shape_rc);
        if (!columns) return failed(shape_rc, "cannot read it");
        std::optional<std::int64_t> const odd = c.pragma_value(
            "SELECT count(*) FROM sqlite_master WHERE (name = 'entries' AND type != 'table') OR "
            "(name = 'entries_by_use' AND (type != 'index' OR tbl_name != 'entries'))",
            shape_rc);
        if (!odd) return failed(shape_rc, "cannot read it");
        bool const has_table = *columns == "id INTEGER,key BLOB,used INTEGER,value BLOB";
        if ((*id != detail::sqlite_impl::application_id && (*id != 0 || *others != 0)) ||
            (!columns->empty() && !has_table) || *odd != 0) {
            state_->why = "it is another program's SQLite database";
            return open_outcome::foreign;
        }
        std::optional<std::int64_t> const has_index =
            c.pragma_value("SELECT count(*) FROM sqlite_master WHERE name = 'entries_by_use'", shape_rc);
        if (!has_index) return failed(shape_rc, "cannot read it");
        // The table, its index and the id are there: nothing to make, so no write lock
        // is needed (a writer stopped in its transaction, or a full disk, must not keep
        // the readers out).
        bool const complete = has_table && *has_index != 0 && *id == detail::sqlite_impl::application_id;
        if (!immutable) {
            // auto_vacuum only takes on an empty file; WAL and the schema persist.
            c.exec("PRAGMA auto_vacuum=INCREMENTAL");
            {
                sqlite3_stmt* raw = nullptr;
                rc = sqlite3_prepare_v2(c.db, "PRAGMA journal_mode=WAL", -1, &raw, nullptr);
                detail::sqlite_impl::statement st(raw);
                // SQLite answers BUSY at once, without its busy handler, to one of two
                // connections switching a new file at the same moment (each holds the
                // lock the other needs): tried again, a few milliseconds apart, within
                // the busy timeout.
                auto const give_up = std::chrono::steady_clock::now() + state_->options.busy_timeout;
                for (unsigned attempt = 0; rc == SQLITE_OK; ++attempt) {
                    rc = sqlite3_step(raw);
                    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= give_up)
                        break;
                    sqlite3_reset(raw);
                    rc = SQLITE_OK;
                    ::usleep(1000 + 1000 * (attempt % 4));
                }
                // (A complete file that cannot be switched now, its lock held, is read
                // as it is; a writer switches it later.)
                if (rc != SQLITE_ROW && !complete) return failed(rc, "cannot switch it to WAL");
            }
            c.exec("PRAGMA synchronous=NORMAL");
        }
        if (!immutable && !complete) {
            rc = c.exec(detail::sqlite_impl::schema_sql().c_str());
            if (rc != SQLITE_OK) {
                failed(rc, "cannot make its table"); // the error's own message, before the rollback's
                c.exec("ROLLBACK");
                return detail::sqlite_impl::is_damage(rc) ? open_outcome::damaged : open_outcome::failed;
            }
        }
        struct {
            detail::sqlite_impl::statement* s;
            char const* sql;
        } const statements[] = {
            {&c.select, "SELECT length(value), CASE WHEN length(value) <= ?2 THEN value END, used, id "
                        "FROM entries WHERE key = ?1"},
            {&c.upsert, "INSERT OR REPLACE INTO entries(key, used, value) VALUES(?1, ?2, ?3)"},
            {&c.erase, "DELETE FROM entries WHERE key = ?1"},
            {&c.touch, "UPDATE entries SET used = ?1 WHERE id = ?2"},
            {&c.total, "SELECT total(length(value)) FROM entries"},
            {&c.evict, "DELETE FROM entries WHERE id IN (SELECT id FROM (SELECT id, sum(length(value)) OVER "
                       "(ORDER BY used, id ROWS UNBOUNDED PRECEDING) - length(value) AS before FROM entries) "
                       "WHERE before < ?1)"},
            {&c.list, "SELECT key, length(value), used FROM entries ORDER BY used DESC"},
        };
        for (auto const& st : statements)
            if ((rc = c.prepare(*st.s, st.sql)) != SQLITE_OK) return failed(rc, "cannot use it");
        struct stat info;
        if (::stat(state_->path.c_str(), &info) == 0) {
            c.inode = info.st_ino;
            c.device = info.st_dev;
        }
        return open_outcome::ok;
    }

    /// Over the limit: deletes the least recently used entries down to 90% of it, in
    /// one statement, then gives the freed pages back to the file system.
    std::error_code evict_locked() {
        auto& c = state_->c;
        state_->written_since_check = 0;
        state_->checked_once = true;
        std::uint64_t const limit = state_->options.max_size;
        if (limit == 0 || c.read_only) return {};
        double total = 0;
        {
            sqlite3_stmt* s = c.total.get();
            detail::sqlite_impl::reset_guard reset{c.total};
            int const rc = sqlite3_step(s);
            if (rc != SQLITE_ROW) return failed_locked(rc);
            total = sqlite3_column_double(s, 0);
        }
        if (total <= static_cast<double>(limit)) return {};
        double const excess = total - static_cast<double>(limit) * 0.9;
        {
            sqlite3_stmt* s = c.evict.get();
            detail::sqlite_impl::reset_guard reset{c.evict};
            sqlite3_bind_double(s, 1, excess);
            int const rc = sqlite3_step(s);
            if (rc != SQLITE_DONE) return failed_locked(rc);
        }
        c.exec("PRAGMA incremental_vacuum");
        return {};
    }

    std::unique_ptr<state> state_; ///< on the heap: the storage moves, its connection stays
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::sqlite_storage>::value);
static_assert(compile_cache::detail::has_list<compile_cache::sqlite_storage>::value &&
              compile_cache::detail::has_usable<compile_cache::sqlite_storage>::value &&
              compile_cache::detail::has_corrupt<compile_cache::sqlite_storage>::value &&
              compile_cache::detail::has_from_env<compile_cache::sqlite_storage>::value);
