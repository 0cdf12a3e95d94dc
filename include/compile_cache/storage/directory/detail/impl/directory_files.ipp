// compile_cache: the definitions of storage/directory/detail/directory_files.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

#include <pthread.h>
#include <sys/file.h>
#include <sys/resource.h>
#if COMPILE_CACHE_LINUX_CALLS
#include <sys/random.h>
#include <sys/syscall.h>
#endif

namespace compile_cache::detail::directory_storage_impl {

void append_entry_path(std::string& out, std::string const& directory, key const& k) {
    // The key's hex is built in place at the end of `out`, then moved behind its
    // folder by append_entry_relative_path's rule (two digits, '/', the hex).
    unsigned char const* const bytes = k.data();
    std::size_t const n = k.size();
    out.reserve(out.size() + directory.size() + 4 + 2 * n);
    out += directory;
    if (out.empty() || out.back() != '/') out += '/';
    char hex[2 * 64];
    std::size_t const digits = 2 * std::min<std::size_t>(n, 64);
    for (std::size_t i = 0; i < digits / 2; ++i) {
        hex[2 * i] = lower_hex_digits[bytes[i] >> 4];
        hex[2 * i + 1] = lower_hex_digits[bytes[i] & 15];
    }
    append_entry_relative_path(out, std::string_view(hex, digits));
}

std::uint64_t unique_random_word() {
    struct generator_state {
        std::mt19937_64 engine;
        unsigned generation = 0;
        bool seeded = false;
    };
    thread_local generator_state g;
    unsigned const generation = fork_generation();
    if (!g.seeded || g.generation != generation) {
        std::uint32_t words[8] = {};
        bool random = false;
#if COMPILE_CACHE_LINUX_CALLS
        random = ::getrandom(words, sizeof words, 0) == static_cast<ssize_t>(sizeof words);
#endif
        if (!random) {
            try {
                std::random_device device;
                for (auto& w : words) w = device();
                random = true;
            } catch (...) {
            }
        }
        if (!random) { // no entropy source: still distinct per process, thread and moment
            struct timespec ts {};
            ::clock_gettime(CLOCK_REALTIME, &ts);
            words[0] = static_cast<std::uint32_t>(ts.tv_nsec);
            words[1] = static_cast<std::uint32_t>(ts.tv_sec);
            words[2] = static_cast<std::uint32_t>(::getpid());
            words[3] = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&g));
        }
        std::seed_seq seq(std::begin(words), std::end(words));
        g.engine.seed(seq);
        g.generation = generation;
        g.seeded = true;
    }
    return g.engine();
}

void append_temp_name(std::string& out) {
    for (int half = 0; half < 2; ++half) {
        std::uint64_t v = unique_random_word();
        for (int i = 0; i < 16; ++i, v >>= 4) out += lower_hex_digits[v & 15];
    }
}

int rename_no_replace(char const* from, char const* to) noexcept {
#if COMPILE_CACHE_LINUX_CALLS && defined(SYS_renameat2)
#ifdef RENAME_NOREPLACE
    constexpr unsigned no_replace = RENAME_NOREPLACE;
#else
    constexpr unsigned no_replace = 1; // the kernel's value (linux/fs.h), stable ABI
#endif
    long const r = ::syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, no_replace);
    return r == 0 ? 0 : errno;
#else
    (void)from;
    (void)to;
    return ENOSYS;
#endif
}

int make_directories(std::string& path, unsigned mode, int exact_umask, bool& created) noexcept {
    auto const m = static_cast<mode_t>(mode);
    auto try_mkdir = [&](std::size_t end) -> int { // mkdir of path[0, end)
        char const saved = path[end];
        path[end] = '\0';
        int const r = ::mkdir(path.c_str(), m);
        int const e = errno;
        if (r == 0) {
            created = true;
            if (exact_umask >= 0) set_made_folder_mode(path.c_str(), mode & ~static_cast<unsigned>(exact_umask));
        }
        path[end] = saved;
        return (r == 0 || e == EEXIST) ? 0 : e;
    };
    std::size_t const n = path.size();
    if (n == 0) return ENOENT;
    // Walk up until a mkdir stops failing with ENOENT: that ancestor now exists...
    std::size_t end = n;
    int e;
    for (;;) {
        e = try_mkdir(end);
        if (e != ENOENT) break;
        std::size_t slash = path.rfind('/', end - 1);
        while (slash != std::string::npos && slash > 0 && path[slash - 1] == '/') --slash;
        if (slash == std::string::npos || slash == 0) return e;
        end = slash;
    }
    if (e != 0) return e;
    // ...then walk back down creating each component below it.
    while (end < n) {
        std::size_t next = end;
        while (next < n && path[next] == '/') ++next;
        next = path.find('/', next);
        if (next == std::string::npos) next = n;
        if ((e = try_mkdir(next)) != 0) return e;
        end = next;
    }
    return 0;
}

std::uint64_t file_size_limit() noexcept {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return std::numeric_limits<std::uint64_t>::max();
    return static_cast<std::uint64_t>(limit.rlim_cur);
}

int beyond_file_size_limit(std::uint64_t end) noexcept { return end > file_size_limit() ? EFBIG : 0; }

int write_all(int fd, char const* p, std::size_t left) noexcept {
    if (left > 0) {
        std::uint64_t const limit = file_size_limit();
        if (limit != std::numeric_limits<std::uint64_t>::max()) { // (the offset asked only then)
            off_t const at = ::lseek(fd, 0, SEEK_CUR);
            if (static_cast<std::uint64_t>(at > 0 ? at : 0) + left > limit) return EFBIG;
        }
    }
    while (left > 0) {
        ssize_t const r = retry_on_eintr([&] { return ::write(fd, p, left); });
        if (r < 0) return errno;
        if (r == 0) return EIO; // a regular file never does this; do not spin
        p += r;
        left -= static_cast<std::size_t>(r);
    }
    return 0;
}

int fsync_directory(char const* path) noexcept {
    int const fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int const e = fsync_fd(fd);
    ::close(fd);
    return e;
}

int lock_fd(int fd, std::chrono::milliseconds wait) noexcept {
    auto const deadline = std::chrono::steady_clock::now() + wait;
    unsigned pause_us = 250;
    for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
        int const e = errno;
        if (e == EINTR) continue;
        if (e != EWOULDBLOCK || std::chrono::steady_clock::now() >= deadline) return e;
        ::usleep(pause_us);
        pause_us = pause_us < 8000 ? pause_us * 2 : pause_us;
    }
}

void lock_events::gave_up(std::string const& path, char const* consequence) noexcept {
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> const lock(mutex_);
    if (said_ || !logger_) return;
    said_ = true;
    try {
        logger_("another process holds the lock on " + path + " (stopped or frozen?); gave up waiting for it, " +
                consequence);
    } catch (...) {
    }
}

bool read_ledger(int fd, ledger_slots& slots) noexcept {
    unsigned char buf[ledger_bytes];
    ssize_t const got = retry_on_eintr([&] { return ::pread(fd, buf, sizeof buf, 0); });
    slots = {};
    if (got != static_cast<ssize_t>(sizeof buf) || std::memcmp(buf, ledger_magic, 8) != 0) return false;
    for (std::size_t i = 0; i < 256; ++i) {
        unsigned char const* p = buf + ledger_header + 16 * i;
        slots[i].bytes = read_le<std::uint64_t>(p);
        slots[i].counted_at = static_cast<std::int64_t>(read_le<std::uint64_t>(p + 8));
        if (slots[i].bytes > ledger_sane_limit) {
            slots = {};
            return false;
        }
    }
    return true;
}

bool pwrite_all(int fd, unsigned char const* p, std::size_t n, std::size_t offset) noexcept {
    if (n > 0)
        if (int const e = beyond_file_size_limit(static_cast<std::uint64_t>(offset) + n)) {
            errno = e;
            return false;
        }
    while (n > 0) {
        ssize_t const r = retry_on_eintr([&] { return ::pwrite(fd, p, n, static_cast<off_t>(offset)); });
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
        offset += static_cast<std::size_t>(r);
    }
    return true;
}

bool write_ledger(int fd, ledger_slots const& slots) noexcept {
    unsigned char buf[ledger_bytes] = {};
    std::memcpy(buf, ledger_magic, 8);
    for (std::size_t i = 0; i < 256; ++i) {
        store_le<std::uint64_t>(buf + ledger_header + 16 * i, slots[i].bytes);
        store_le<std::uint64_t>(buf + ledger_header + 16 * i + 8, static_cast<std::uint64_t>(slots[i].counted_at));
    }
    return pwrite_all(fd, buf, sizeof buf, 0);
}

std::uint64_t ledger_total(ledger_slots const& slots) noexcept {
    std::uint64_t t = 0;
    for (auto const& s : slots) t += s.bytes;
    return t;
}

int open_ledger(std::string const& path, unsigned file_mode, int exact_umask, struct stat* st_out) noexcept {
    int const fd = retry_on_eintr([&] {
        return ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
                      static_cast<mode_t>(file_mode));
    });
    if (fd < 0) return -1;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return -1;
    }
    if (exact_umask >= 0 && (st.st_mode & 07777) != (file_mode & ~static_cast<unsigned>(exact_umask) & 07777))
        ::fchmod(fd, static_cast<mode_t>(file_mode & ~static_cast<unsigned>(exact_umask)));
    if (st_out) *st_out = st;
    return fd;
}

bool ledger::open(std::string const& path, unsigned file_mode, int exact_umask, lock_events* events) noexcept {
    fd_.fd = open_ledger(path, file_mode, exact_umask);
    if (!fd_) return false;
    if (int const e = lock_fd(fd_.fd, ledger_lock_wait)) {
        if (e == EWOULDBLOCK && events) events->gave_up(path, "so the size ledger was not updated");
        return false;
    }
    read_ledger(fd_.fd, slots);
    return true;
}

bool ledger_batch::add(unsigned folder, std::uint64_t added, std::uint64_t removed, std::uint64_t max_size,
                       std::int64_t now_nanoseconds) noexcept {
    std::int64_t const now = now_nanoseconds / 1000000000;
    std::lock_guard<std::mutex> const lock(mutex_);
    if_forked_start_afresh();
    folder &= 0xff;
    delta_[folder] += static_cast<std::int64_t>(added) - static_cast<std::int64_t>(removed);
    touched_.set(folder);
    if (changes_++ == 0) first_change_ns_ = now_nanoseconds;
    if (added != 0) ++stores_;
    added_ += added;
    removed_ += removed;
    // The ledger's lock was held by someone else lately: keep the changes, and
    // do not make this store wait for it again yet.
    if (std::chrono::steady_clock::now() < retry_after_) return false;
    if (!known_ || stores_ >= ledger_batch_stores || changes_ >= ledger_batch_changes ||
        now_nanoseconds - first_change_ns_ >= ledger_batch_age_ns || now_nanoseconds < first_change_ns_ ||
        recount_due(counted_at_[folder], now))
        return true;
    if (max_size == 0) return false;
    if (added_ >= (max_size >> ledger_batch_limit_shift)) return true;
    // Crossing the limit: written at once, so that the store cleans. Once the ledger
    // said the cache is over it, the batch's bounds decide (one store in 256 cleans).
    std::uint64_t const estimate = last_total_ + added_ >= removed_ ? last_total_ + added_ - removed_ : 0;
    return estimate > max_size && last_total_ <= max_size;
}

unsigned ledger_batch::take_stores() noexcept {
    std::lock_guard<std::mutex> const lock(mutex_);
    unsigned const n = stores_;
    stores_ = 0;
    return n;
}

ledger_batch::flushed ledger_batch::flush(std::int64_t now) noexcept {
    std::lock_guard<std::mutex> const lock(mutex_);
    if (during_ledger_flush_for_testing != nullptr) during_ledger_flush_for_testing();
    if_forked_start_afresh();
    flushed out;
    if (!current_descriptor()) {
        clear_changes();
        return out;
    }
    if (int const e = lock_fd(fd_.fd, ledger_lock_wait)) {
        if (e == EWOULDBLOCK) {
            retry_after_ = std::chrono::steady_clock::now() + ledger_retry_after;
            if (events_) events_->gave_up(path_, "so the size ledger's update is kept for later");
        } else {
            clear_changes();
        }
        return out;
    }
    bool const changed = changes_ > 0;
    std::bitset<256> const touched = touched_;
    std::array<std::int64_t, 256> const delta = delta_;
    clear_changes();
    ledger_slots slots;
    read_ledger(fd_.fd, slots); // a fresh ledger reads as zeros: the recounts fill it in
    bool written = true;
    if (changed) {
        for (unsigned f = 0; f < 256; ++f) {
            if (!touched[f]) continue;
            std::int64_t const d = delta[f];
            std::uint64_t const down = d < 0 ? static_cast<std::uint64_t>(-(d + 1)) + 1 : 0;
            slots[f].bytes = d >= 0 ? slots[f].bytes + static_cast<std::uint64_t>(d)
                                    : (slots[f].bytes >= down ? slots[f].bytes - down : 0);
            if (recount_due(slots[f].counted_at, now)) out.due.set(f);
        }
        written = write_ledger(fd_.fd, slots);
    }
    ::flock(fd_.fd, LOCK_UN);
    if (!written) return out;
    for (unsigned f = 0; f < 256; ++f) counted_at_[f] = slots[f].counted_at;
    out.total = last_total_ = ledger_total(slots);
    known_ = true;
    out.ok = true;
    return out;
}

void ledger_batch::counted(std::bitset<256> const& folders, std::int64_t now, std::uint64_t total) noexcept {
    std::lock_guard<std::mutex> const lock(mutex_);
    for (unsigned f = 0; f < 256; ++f)
        if (folders[f]) counted_at_[f] = now;
    last_total_ = total;
}

bool ledger_batch::has_changes() noexcept {
    std::lock_guard<std::mutex> const lock(mutex_);
    if_forked_start_afresh();
    return changes_ > 0;
}

void ledger_batch::clear_changes() noexcept {
    delta_ = {};
    touched_.reset();
    changes_ = 0;
    added_ = removed_ = 0;
}

void ledger_batch::if_forked_start_afresh() noexcept {
    unsigned const generation = fork_generation();
    if (generation == generation_) return;
    generation_ = generation;
    clear_changes();
    if (fd_.fd >= 0) ::close(fd_.fd);
    fd_.fd = -1;
    known_ = false;
    retry_after_ = {};
}

bool ledger_batch::current_descriptor() noexcept {
    if (fd_) {
        struct stat st {};
        if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) return true;
        ::close(fd_.fd);
        fd_.fd = -1;
    }
    struct stat st {};
    fd_.fd = open_ledger(path_, file_mode_, umask_, &st);
    if (!fd_) return false;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    return true;
}

} // namespace compile_cache::detail::directory_storage_impl

#endif // COMPILE_CACHE_INCLUDE_IMPL
