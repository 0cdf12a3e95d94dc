// compile_cache: the definitions of directory_storage's claim members (directory_claims.hpp);
// included by it alone (inline by default, compiled once in compile_cache/src.hpp under
// separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <cstring>
#include <iterator>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/inotify.h>
#endif

namespace compile_cache {

namespace detail::directory_claims_impl {

/// Unlinks the claim file `path`, in the folder `folder` (its prefix); when `guarded`
/// (a shared directory), through the folder opened without following a symlink, so that
/// a symlink another member of the group put in the folder's place never makes it
/// unlink a file elsewhere. 0, or -1 and errno.
COMPILE_CACHE_DECL int unlink_claim(std::string const& folder, std::string const& path, bool guarded) noexcept;
int unlink_claim(std::string const& folder, std::string const& path, bool guarded) noexcept {
    if (!guarded || path.size() <= folder.size() + 1 || path.compare(0, folder.size(), folder) != 0)
        return ::unlink(path.c_str());
    int const dir =
        retry_on_eintr([&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
    if (dir < 0) return -1;
    int const r = ::unlinkat(dir, path.c_str() + folder.size() + 1, 0);
    int const e = errno;
    ::close(dir);
    errno = e;
    return r;
}

/// Locks a claim file its claimant keeps open, for as long as it is open: the kernel
/// drops the lock when the claimant closes it or dies, so a lock seen is a claimant alive
/// (an open file description lock: another descriptor of the same file, closed in this
/// process, does not drop it). Without such locks (COMPILE_CACHE_NO_LINUX_EXTENSIONS, a
/// file system that refuses them) nothing is locked and the claim's text and age decide.
inline void lock_claim_file(int fd) noexcept {
#if COMPILE_CACHE_LINUX_CALLS && defined(F_OFD_SETLK)
    struct ::flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    (void)::fcntl(fd, F_OFD_SETLK, &lock);
#else
    (void)fd;
#endif
}

/// Whether the claim file open at `fd` is locked by its claimant (lock_claim_file): its
/// claimant is then alive, whatever its text or age says (false: not locked, or unknown).
inline bool claim_file_locked(int fd) noexcept {
#if COMPILE_CACHE_LINUX_CALLS && defined(F_OFD_GETLK)
    struct ::flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    return ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
#else
    (void)fd;
    return false;
#endif
}

/// A claim file's text, `name` relative to the folder open at `folder_fd` (AT_FDCWD: a
/// path): at most 1 KiB of it ("" when it cannot be opened: `error` says why). `locked`,
/// when given, says whether its claimant holds the file locked (claim_file_locked);
/// `file`, when given, gets the file's fstat (its lstat when it cannot be opened; all zero
/// when that fails too).
inline std::string read_claim_at(int folder_fd, char const* name, int& error, bool* locked = nullptr,
                                 struct ::stat* file = nullptr) {
    error = 0;
    if (locked != nullptr) *locked = false;
    if (file != nullptr) *file = {};
    int const fd = ::openat(folder_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        error = errno;
        if (file != nullptr && ::fstatat(folder_fd, name, file, AT_SYMLINK_NOFOLLOW) != 0) *file = {};
        return {};
    }
    if (locked != nullptr) *locked = claim_file_locked(fd);
    if (file != nullptr && ::fstat(fd, file) != 0) *file = {};
    std::string text(1024, '\0');
    ssize_t const got = read_up_to(fd, &text[0], text.size());
    if (got < 0) error = errno; // (a claim that cannot be read is never judged empty)
    ::close(fd);
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return text;
}
inline std::string read_claim(std::string const& path, int& error, bool* locked = nullptr,
                              struct ::stat* file = nullptr) {
    return read_claim_at(AT_FDCWD, path.c_str(), error, locked, file);
}

/// Whether a claim read again is the file read first and unchanged: the same text (the
/// caller compares it), no lock, and the same file — device, inode and modification
/// time, since a new claimant's file may take a removed one's inode number and, between
/// its create and its lock, read as a dead claim did (empty, unlocked).
inline bool same_claim_file(struct ::stat const& first, struct ::stat const& again) noexcept {
    return first.st_ino != 0 && first.st_dev == again.st_dev && first.st_ino == again.st_ino &&
           first.st_mtim.tv_sec == again.st_mtim.tv_sec && first.st_mtim.tv_nsec == again.st_mtim.tv_nsec;
}

/// Whether the claim judged dead (its first read: `text`, `error`, `file`) is still there
/// unchanged when read again just before its unlink: the same text and read error, no
/// lock, the very same file (same_claim_file). What a take-over and a cleanup both ask.
inline bool dead_claim_unchanged(int folder_fd, char const* name, std::string const& text, int error,
                                 struct ::stat const& file) {
    if (directory_storage_impl::between_claim_reads_for_testing != nullptr)
        directory_storage_impl::between_claim_reads_for_testing(folder_fd, name);
    int again_error = 0;
    bool again_locked = false;
    struct ::stat again {};
    return read_claim_at(folder_fd, name, again_error, &again_locked, &again) == text && again_error == error &&
           !again_locked && same_claim_file(file, again);
}

inline std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// A whole positive number in field `field` of a claim's text (0 when absent or not one).
inline std::int64_t claim_number(std::string const& text, char const* field) {
    std::string const value = claim_field(text, field);
    if (value.empty()) return 0;
    char* end = nullptr;
    long long const n = std::strtoll(value.c_str(), &end, 10);
    return *end == '\0' && n > 0 ? n : 0;
}

/// How far a claim's time is from now, by its `created_ns=` field, else by the file's
/// modification time (`name` relative to `folder_fd`, as read_claim_at): a time ahead of
/// this clock (another machine's clock, this one set back, a number too large) is as old
/// as it is ahead, never young until this clock catches up.
inline std::int64_t claim_age_ns_at(std::string const& text, int folder_fd, char const* name) {
    auto distance = [](std::int64_t then) {
        std::int64_t const now = now_ns();
        // (In unsigned arithmetic, the exact distance; at most the largest int64_t.)
        std::uint64_t const d = then > now ? static_cast<std::uint64_t>(then) - static_cast<std::uint64_t>(now)
                                           : static_cast<std::uint64_t>(now) - static_cast<std::uint64_t>(then);
        return static_cast<std::int64_t>(std::min<std::uint64_t>(d, static_cast<std::uint64_t>(INT64_MAX)));
    };
    if (std::int64_t const created = claim_number(text, "created_ns")) return distance(created);
    struct stat st {};
    if (::fstatat(folder_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
    return distance(detail::mtime_ns(st));
}

/// The bound a claim file records (`expiry_ms=`, its request's expiry), in ns; an hour
/// for one that records none.
inline std::int64_t claim_bound_ns(std::string const& text) {
    std::int64_t const ms = claim_number(text, "expiry_ms");
    if (ms == 0 || ms > std::int64_t{1} << 40) return directory_storage_impl::temp_stale_after_ns;
    return ms * 1000000;
}

/// A claim file this thread created and keeps open until it releases the claim, so that
/// a store can write the entry into it and rename it onto the entry (write_through_claim).
struct held_claim {
    std::string path;         ///< the claim file's path (the entry's + ".claim")
    int fd = -1;              ///< open for writing; -1 once closed
    std::size_t text_size = 0; ///< the owner text written in it
    unsigned mode = 0;         ///< the mode it was created with (file_mode less the exact umask)
    unsigned generation = 0;   ///< fork_generation() when created: a forked child never writes through it
    bool consumed = false;     ///< renamed onto its entry by a store: nothing left to release
    dev_t dev = 0;             ///< the file's device and inode, as created: the descriptor is
    ino_t ino = 0;             ///< used (written, closed) only while it still opens that file
};

/// At most this many claim files are kept open per thread (a host that claims and never
/// releases): the oldest is then closed, and its claim released and stored the usual way.
constexpr std::size_t max_held_claims = 64;

/// Whether `claim`'s descriptor still opens the file created for it (`own`: its fstat).
/// A descriptor the host closed, and that now opens another file, is neither used nor
/// closed again.
inline bool descriptor_is_claim(held_claim const& claim, struct ::stat& own) noexcept {
    return claim.fd >= 0 && ::fstat(claim.fd, &own) == 0 && own.st_dev == claim.dev && own.st_ino == claim.ino;
}

/// Closes `claim`'s descriptor when it is still the claim's.
inline void close_claim_file(held_claim& claim) noexcept {
    struct ::stat own {};
    if (descriptor_is_claim(claim, own)) ::close(claim.fd);
    claim.fd = -1;
}

/// A thread's list of the claims it took and has not released, oldest first; their files
/// are closed when the thread ends.
struct held_claims {
    std::vector<held_claim> list;
    held_claims() = default;
    held_claims(held_claims const&) = delete;
    held_claims& operator=(held_claims const&) = delete;
    ~held_claims() {
        for (held_claim& c : list) close_claim_file(c);
    }
};

/// This thread's claims (held_claims); nullptr once the thread's list is destroyed (at its
/// end, and at exit before the destructors of objects of static storage duration run:
/// per_thread): a claim is then stored and released the usual way.
inline std::vector<held_claim>* held_claims_of_this_thread() noexcept {
    held_claims* const held = per_thread<held_claims>();
    return held ? &held->list : nullptr;
}

inline std::vector<held_claim>::iterator find_held_claim(std::vector<held_claim>& held, std::string const& path) {
    for (auto it = held.rbegin(); it != held.rend(); ++it)
        if (it->path == path) return std::next(it).base();
    return held.end();
}

/// Closes and forgets a held claim.
inline void forget_held_claim(std::vector<held_claim>& held, std::vector<held_claim>::iterator it) noexcept {
    close_claim_file(*it);
    held.erase(it);
}

/// Whether `path` (lstat) is the file `own` describes (an fstat of a descriptor).
inline bool is_file(struct ::stat const& own, char const* path) noexcept {
    struct ::stat st {};
    return ::lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == own.st_dev && st.st_ino == own.st_ino;
}

/// Whether `path` is the very file `claim` holds open (its descriptor's fstat, `own`, and
/// the path's lstat name one inode; the open descriptor keeps that inode from being
/// reused). A descriptor the host closed, reused for another file, fails it too.
inline bool still_this_file(held_claim const& claim, char const* path, struct ::stat& own) noexcept {
    return descriptor_is_claim(claim, own) && is_file(own, path);
}

/// How long a claim file may be empty (its writer between the create and the write) or
/// hold what is not an owner's text (its owner writing the entry into it, to rename it
/// onto the entry: write_through_claim) before it is judged dead: its owner died then.
constexpr std::int64_t claim_being_written_ns = 1000000000;

/// Whether a claim's text is an entry being written into it (or torn by that write): a
/// claim's text is printable, one line; bytes that are not (a newline before its end, a
/// control or non-ASCII byte, as an envelope's header has) are an entry's.
inline bool claim_becoming_entry(std::string const& text) noexcept {
    for (std::size_t i = 0; i < text.size(); ++i) {
        unsigned char const c = static_cast<unsigned char>(text[i]);
        if (c == '\n' && i + 1 == text.size()) continue;
        if (c < 0x20 || c > 0x7e) return true;
    }
    return false;
}

/// The one judge of a claim file's claimant, for a waiter (try_claim) and a cleanup
/// (remove_stale_claim) alike: whether it is alive, from one read_claim_at of the file
/// `name` (relative to the folder open at `folder_fd`; AT_FDCWD: a path) — its `text`,
/// the read's `error`, whether it was `locked`. Alive: locked by its claimant; or empty,
/// or an entry being written into it (claim_becoming_entry), while the file's time is
/// within claim_being_written_ns; or its owner, of this machine and boot and naming its
/// pid, is alive (claim_owner_alive: however old); or it could not be read for a reason
/// of this process's (EMFILE, ENOMEM, ...) or is a directory; or it cannot be asked — not
/// readable (neither its lock nor its owner), another machine's, one naming no pid — and
/// its age (claim_age_ns_at) is at most `bound_ns`, the caller's bound for those. Dead
/// otherwise.
/// The callers differ only in that bound.
inline bool claim_is_alive(std::string const& text, int error, bool locked, int folder_fd, char const* name,
                           std::int64_t bound_ns) {
    if (locked) return true; // held open by its claimant, whatever its text and age say
    if (error != 0) {
        // Not the file's doing (this process out of descriptors or memory, a signal), or a
        // directory, never a claim: alive, left. Otherwise by the file's time.
        if (error == EMFILE || error == ENFILE || error == ENOMEM || error == EAGAIN || error == EINTR ||
            error == EISDIR)
            return true;
        return claim_age_ns_at(std::string(), folder_fd, name) <= bound_ns;
    }
    // Empty (its writer between the create and the write), or its owner writing the entry
    // into it: by the file's time, which that write sets.
    if (text.empty() || claim_becoming_entry(text))
        return claim_age_ns_at(std::string(), folder_fd, name) <= claim_being_written_ns;
    bool same_machine = false;
    bool const alive = claim_owner_alive(text, same_machine);
    if (same_machine && claim_number(text, "pid") > 0) return alive;
    return claim_age_ns_at(text, folder_fd, name) <= bound_ns;
}

/// Whether the claim file at `path` holds this process's owner text (a claim this
/// process made, not yet written over by its entry nor replaced by another's).
inline bool claim_text_is_ours(std::string const& path) {
    int error = 0;
    std::string const text = read_claim(path, error);
    std::string const mine = claim_owner();
    return error == 0 && text.size() > mine.size() && text.compare(0, mine.size(), mine) == 0 &&
           text[mine.size()] == ' ';
}

} // namespace detail::directory_claims_impl

namespace detail::directory_storage_impl {

int remove_stale_claim(int folder_fd, char const* name) noexcept {
    namespace claims = detail::directory_claims_impl;
    try {
        int error = 0;
        bool locked = false;
        struct ::stat file {};
        std::string const text = claims::read_claim_at(folder_fd, name, error, &locked, &file);
        // Owners that cannot be asked: the bound the claim records (an hour for one that
        // cannot be read, gone meanwhile or not ours to read).
        if (claims::claim_is_alive(text, error, locked, folder_fd, name, claims::claim_bound_ns(text))) return 0;
        // Still the very claim judged, unchanged and unlocked (not one taken over meanwhile)?
        if (!claims::dead_claim_unchanged(folder_fd, name, text, error, file)) return 0;
        if (::unlinkat(folder_fd, name, 0) == 0) return 1;
        return errno == ENOENT ? 0 : -errno;
    } catch (...) {
        return 0;
    }
}

} // namespace detail::directory_storage_impl

claim_answer directory_storage::try_claim(key const& k, claim_request const& request) noexcept {
    namespace impl = detail::directory_claims_impl;
    claim_answer answer;
    if (!includes(request.scope, claim_scope::local)) return answer;
    try {
        std::string const entry = entry_path(k);
        if (entry.empty()) return answer;
        std::string const path = entry + ".claim";
        std::string const folder = entry.substr(0, entry.rfind('/'));
        // (expiry_ms: the bound after which a cleanup removes a claim whose owner cannot be asked)
        std::string const text = detail::claim_owner() + " created_ns=" + std::to_string(impl::now_ns()) +
                                 " expiry_ms=" + std::to_string(std::max<long long>(request.expiry.count(), 1)) + "\n";
        unsigned const mode = options_.umask >= 0 ? options_.file_mode & ~static_cast<unsigned>(options_.umask)
                                                  : options_.file_mode;
        // A few rounds: a claim removed (released, or dead and taken over) between our
        // create and our read is tried again; more contention than that: held.
        // In a shared directory, created in the fan-out folder opened without following a
        // symlink (as a store's temp file is): never a claim file elsewhere, which a store
        // would then rename onto an entry elsewhere too. A private directory's is opened by path.
        auto create_claim = [&]() -> int {
            if (options_.access != sharing::group)
                return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
            int const dir = detail::retry_on_eintr(
                [&] { return ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
            if (dir < 0) return -1;
            int const fd = ::openat(dir, path.c_str() + folder.size() + 1,
                                    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
            int const e = errno;
            ::close(dir);
            errno = e;
            return fd;
        };
        for (int round = 0; round < 4; ++round) {
            int fd = create_claim();
            if (fd < 0 && errno == ENOENT) { // the entry's folder is not there yet
                unsigned const dmode = options_.umask >= 0
                                           ? options_.directory_mode & ~static_cast<unsigned>(options_.umask)
                                           : options_.directory_mode;
                bool made_folder = false; // (the entry's folder made here, not found there)
                auto make = [&](std::string const& d) {
                    if (::mkdir(d.c_str(), dmode) == 0) {
                        if (options_.umask >= 0) detail::directory_storage_impl::set_made_folder_mode(d.c_str(), dmode);
                        if (&d == &folder) made_folder = true;
                        return true;
                    }
                    return errno == EEXIST;
                };
                if (!make(folder) && errno == ENOENT && make(directory_)) // (the cache directory, made on first use)
                    (void)make(folder);
                // Under durability::full the folder's name in the cache directory is synced
                // now (another process may store into it) and by this storage's next store.
                if (made_folder && options_.sync == durability::full) {
                    state_->claim_made_folder.store(true);
                    (void)detail::directory_storage_impl::fsync_directory(directory_.c_str());
                }
                fd = create_claim();
            }
            if (fd >= 0) {
                impl::lock_claim_file(fd); // (released when the claim file is closed: by the store, the release, or an end)
                if (options_.umask >= 0) (void)::fchmod(fd, mode);
                std::size_t done = 0;
                // (Past the file size limit no byte is written: SIGXFSZ would end the host.)
                bool const fits = detail::directory_storage_impl::beyond_file_size_limit(text.size()) == 0;
                while (fits && done < text.size()) {
                    ssize_t const n = ::write(fd, text.data() + done, text.size() - done);
                    if (n < 0 && errno == EINTR) continue;
                    if (n <= 0) break;
                    done += static_cast<std::size_t>(n);
                }
                if (done != text.size()) { // disk full: no claim, and none left behind
                    ::unlink(path.c_str());
                    ::close(fd);
                    return claim_answer{};
                }
                // Kept open for the store, which may make this file the entry (write_through_claim).
                try {
                    struct ::stat made {};
                    auto* held = impl::held_claims_of_this_thread();
                    if (held == nullptr || ::fstat(fd, &made) != 0) { // (at exit, or no answer: the usual way)
                        ::close(fd);
                    } else {
                        auto const old = impl::find_held_claim(*held, path); // (one taken over, ours again)
                        if (old != held->end()) impl::forget_held_claim(*held, old);
                        if (held->size() >= impl::max_held_claims) impl::forget_held_claim(*held, held->begin());
                        impl::held_claim c;
                        c.path = path;
                        c.fd = fd;
                        c.text_size = text.size();
                        c.mode = mode;
                        c.generation = detail::directory_storage_impl::fork_generation();
                        c.dev = made.st_dev;
                        c.ino = made.st_ino;
                        held->push_back(std::move(c));
                    }
                } catch (...) { // (out of memory: this claim is stored and released the usual way)
                    ::close(fd);
                }
                answer.state = claim_state::claimed;
                // A claimant stores before it releases: an entry here now came after our
                // miss (a process preempted between its miss and this claim sees it).
                struct ::stat st {};
                answer.entry_seen = ::stat(entry.c_str(), &st) == 0;
                return answer;
            }
            if (errno != EEXIST) return answer; // read-only, no permission: no claims, as before
            int error = 0;
            bool locked = false;
            struct ::stat file {};
            std::string const held = impl::read_claim(path, error, &locked, &file);
            if (error == ENOENT) continue; // released meanwhile: try again
            // A directory with the claim's name is never a claim, nor ever goes: none (compile
            // as without claims), not held (every miss of the key waited its whole bound).
            if (error == EISDIR) return claim_answer{};
            // Owners that cannot be asked: this request's own bound.
            bool const alive = impl::claim_is_alive(held, error, locked, AT_FDCWD, path.c_str(),
                                                    std::chrono::nanoseconds(request.expiry).count());
            if (alive) {
                answer.state = claim_state::held;
                std::string const pid = detail::claim_field(held, "pid");
                std::string const host = detail::claim_field(held, "host");
                answer.holder = pid.empty() ? "another process" : "pid " + pid + (host.empty() ? "" : " on " + host);
                return answer;
            }
            // Dead: removed if it is still the very claim read, unchanged and unlocked (not
            // one taken over meanwhile: same_claim_file).
            if (!impl::dead_claim_unchanged(AT_FDCWD, path.c_str(), held, error, file)) continue;
            if (impl::unlink_claim(folder, path, options_.access == sharing::group) == 0) answer.took_over = true;
        }
        answer.state = claim_state::held;
        answer.holder = "another process";
        return answer;
    } catch (...) {
        return claim_answer{};
    }
}

void directory_storage::release_claim(key const& k) noexcept {
    // Called only for a claim this process took (basic_cache's claim_guard); a forked
    // child's release of a claim it inherited leaves it to the parent. A claim the
    // store turned into the entry is gone already: the path may now hold another
    // process's new claim, which stays. One still held open is removed when the path is
    // still that file (an fstat and an lstat). Without a record (taken in another thread,
    // its record dropped past max_held_claims, at exit) or without its descriptor (the
    // host closed it), it is removed when its text is still this process's owner text:
    // not written over by its entry, not another's claim.
    namespace impl = detail::directory_claims_impl;
    try {
        std::string const entry = entry_path(k);
        if (entry.empty()) return;
        std::string const path = entry + ".claim";
        std::string const folder = entry.substr(0, entry.rfind('/'));
        bool const guarded = options_.access == sharing::group;
        auto* held = impl::held_claims_of_this_thread();
        auto const it = held ? impl::find_held_claim(*held, path) : std::vector<impl::held_claim>::iterator{};
        if (held == nullptr || it == held->end()) {
            if (impl::claim_text_is_ours(path)) (void)impl::unlink_claim(folder, path, guarded);
            return;
        }
        struct ::stat own {};
        bool remove = false;
        // A record a forked child inherited is its parent's claim, which the parent still
        // compiles under: forgotten here (the child's copy of the descriptor closed; the
        // parent's keeps the lock), never removed.
        if (!it->consumed && it->generation == detail::directory_storage_impl::fork_generation())
            remove = impl::descriptor_is_claim(*it, own) ? impl::is_file(own, path.c_str())
                                                         : impl::claim_text_is_ours(path);
        // (Before the close, which drops its lock: never unlocked while there.)
        if (remove) (void)impl::unlink_claim(folder, path, guarded);
        impl::forget_held_claim(*held, it);
    } catch (...) {
    }
}

bool directory_storage::write_through_claim(key const& k, std::string_view bytes, std::string const& entry,
                                            std::string const& folder, std::error_code& ec) noexcept {
    namespace impl = detail::directory_claims_impl;
    namespace files = detail::directory_storage_impl;
    try {
        auto* held = impl::held_claims_of_this_thread();
        if (held == nullptr || held->empty()) return false; // (the usual store: no claim held, no string built)
        std::string const path = entry + ".claim";
        auto const it = impl::find_held_claim(*held, path);
        if (it == held->end()) return false;
        impl::held_claim& claim = *it;
        unsigned const mode = options_.umask >= 0 ? options_.file_mode & ~static_cast<unsigned>(options_.umask)
                                                  : options_.file_mode;
        // The bytes must cover the owner text whole (the file is never shorter than what a
        // waiter read before), and the file must be this thread's, made as this store
        // would make its temp file.
        if (claim.consumed || claim.fd < 0 || bytes.empty() || bytes.size() < claim.text_size || claim.mode != mode ||
            claim.generation != files::fork_generation())
            return false;
        // Still our claim (not taken over by another process meanwhile)?
        struct ::stat own {};
        if (!impl::still_this_file(claim, path.c_str(), own)) return false;
        // Never longer than the bytes: an earlier store through it that stopped midway (a
        // full disk, a file size limit) left its bytes there, whose tail this shorter
        // write would keep in the entry.
        if (own.st_size < 0 || static_cast<std::uint64_t>(own.st_size) > bytes.size()) return false;
        // The entry's bytes over the owner text, from offset 0. A waiter that reads the
        // claim meanwhile sees the owner text, a mix, or the entry's bytes: any of them
        // names this live process or none (then the claim's age decides, by the file's
        // time this write has just set): alive, never taken over. A failure leaves the
        // claim a claim (released as usual) and the store is made the usual way.
        if (!files::pwrite_all(claim.fd, reinterpret_cast<unsigned char const*>(bytes.data()), bytes.size(), 0))
            return false;
        if (options_.sync != durability::none && files::fsync_fd(claim.fd) != 0) return false;
        if (files::before_claim_rename_for_testing != nullptr) files::before_claim_rename_for_testing(path.c_str());
        std::uint64_t replaced_bytes = 0;
        if (publish(path, entry, replaced_bytes)) return false; // not renamed: still the claim
        claim.consumed = true; // what was at the claim's path is the entry now
        // The entry is the file we wrote, unless another process took the claim over in
        // the moment between the check and the rename: then its claim file went to the
        // entry (it fails the envelope check there: a miss, never a wrong result), that
        // rename is accounted for, and the store is made again the usual way, over it.
        // (The descriptor is closed only after this check: while open, it keeps the
        // file's inode from being given to another's new claim.)
        struct ::stat there {};
        bool const present = ::lstat(entry.c_str(), &there) == 0;
        bool const ours = present && S_ISREG(there.st_mode) && there.st_dev == own.st_dev && there.st_ino == own.st_ino;
        int const fd = claim.fd;
        claim.fd = -1;
        bool const closed = ::close(fd) == 0;
        if (!ours) {
            after_change(k.data()[0], present ? files::accounted_size(static_cast<std::uint64_t>(there.st_size)) : 0,
                         replaced_bytes, false);
            return false;
        }
        if (!closed) {
            // A write the close reports as failed (a network file system's write-back):
            // the entry may be damaged, so it goes (it is ours: just checked), as the usual
            // store's temp file would never have been published.
            ::unlink(entry.c_str());
            after_change(k.data()[0], 0, replaced_bytes, false);
            ec = std::make_error_code(std::errc::io_error);
            return true;
        }
        ec = sync_directories(folder, false);
        if (!ec) after_change(k.data()[0], files::accounted_size(bytes.size()), replaced_bytes, true);
        return true;
    } catch (...) {
        return false;
    }
}

void directory_storage::wait_for_change(key const& k, std::chrono::nanoseconds timeout) const noexcept {
    using clock = std::chrono::steady_clock;
    auto const until = clock::now() + timeout;
    auto sleep_out = [&] {
        auto const left = until - clock::now();
        if (left > clock::duration::zero()) std::this_thread::sleep_for(left);
    };
#if defined(__linux__)
    int fd = -1;
    try {
        std::string const entry = entry_path(k);
        std::size_t const slash = entry.rfind('/');
        if (entry.empty() || slash == std::string::npos) return sleep_out();
        std::string const folder = entry.substr(0, slash), name = entry.substr(slash + 1), claim = name + ".claim";
        fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        // An entry arrives by a rename into its folder (a store's temp file, or the claim
        // file itself: IN_MOVED_TO of the entry's name); a claim goes by an unlink. (What
        // happened before the watch is the next poll's to see, at most `timeout` later.)
        if (fd < 0 || ::inotify_add_watch(fd, folder.c_str(), IN_MOVED_TO | IN_DELETE | IN_ONLYDIR) < 0) {
            if (fd >= 0) ::close(fd);
            fd = -1;
            return sleep_out();
        }
        alignas(inotify_event) char events[4096];
        bool failed = false;
        for (;;) {
            auto const left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - clock::now());
            if (left <= std::chrono::nanoseconds::zero()) break;
            timespec const ts{static_cast<time_t>(left.count() / 1000000000),
                              static_cast<long>(left.count() % 1000000000)};
            pollfd p{fd, POLLIN, 0};
            int const ready = ::ppoll(&p, 1, &ts, nullptr);
            if (ready < 0 && errno == EINTR) continue;
            if (ready == 0) break; // the timeout
            ssize_t const n = ready < 0 ? -1 : ::read(fd, events, sizeof events);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) { // (a failure: the rest slept, so that the caller's polls keep their pace)
                failed = true;
                break;
            }
            bool ours = false;
            for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
                inotify_event const* e = reinterpret_cast<inotify_event const*>(events + at);
                // (An overflowed queue may have dropped ours; the watch gone: the folder went.)
                if ((e->mask & (IN_Q_OVERFLOW | IN_IGNORED)) != 0 ||
                    (e->len > 0 && (std::strcmp(e->name, name.c_str()) == 0 || std::strcmp(e->name, claim.c_str()) == 0)))
                    ours = true;
                at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
            }
            if (ours) break;
        }
        ::close(fd);
        fd = -1;
        if (failed) sleep_out();
    } catch (...) {
        if (fd >= 0) ::close(fd);
        sleep_out();
    }
#else
    (void)k;
    sleep_out();
#endif
}

} // namespace compile_cache

#endif
