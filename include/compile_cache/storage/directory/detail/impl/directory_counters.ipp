// compile_cache: the definitions of storage/directory/detail/directory_counters.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <limits>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache::detail::directory_storage_impl {

bool is_counter_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '_'))
            return false;
    return true;
}

std::map<std::string, std::uint64_t> parse_counters(std::string_view text) {
    std::map<std::string, std::uint64_t> out;
    while (!text.empty()) {
        std::size_t const eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        std::size_t const space = line.find(' ');
        if (space == std::string_view::npos) continue;
        std::string_view const name = line.substr(0, space), digits = line.substr(space + 1);
        if (!is_counter_name(name) || digits.empty() || digits.size() > 20) continue;
        std::uint64_t v = 0;
        bool ok = true;
        for (char c : digits) {
            if (c < '0' || c > '9' ||
                v > (std::numeric_limits<std::uint64_t>::max() - static_cast<unsigned>(c - '0')) / 10) {
                ok = false;
                break;
            }
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (ok) out[std::string(name)] = v;
    }
    return out;
}

bool read_small_file(int dir_fd, char const* name, std::string& text) {
    text.clear();
    int const fd = open_no_follow(dir_fd, name);
    if (fd < 0) return errno == ENOENT;
    file_descriptor const guard{fd};
    struct stat st;
    return read_regular_file(fd, text, counters_max_file, st) == file_read_status::read;
}

int open_counters_folder(std::string const& directory, unsigned directory_mode, int exact_umask, bool create) {
    std::string path = directory + "/" + counters_folder;
    if (create) {
        bool created = false;
        if (make_directories(path, directory_mode, exact_umask, created) != 0) return -1;
    }
    return retry_on_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
}

int open_shard_lock(int dir_fd, char const* lock_name, mode_t mode, bool exact) noexcept {
    int const lock = retry_on_eintr(
        [&] { return ::openat(dir_fd, lock_name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode); });
    if (lock < 0) return -1;
    struct stat st;
    if (::fstat(lock, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(lock);
        errno = EINVAL;
        return -1;
    }
    if (exact && st.st_uid == ::geteuid() && (st.st_mode & 07777) != (mode & 07777)) (void)::fchmod(lock, mode);
    return lock;
}

int add_counters(std::string const& directory, std::vector<std::pair<std::string, std::uint64_t>> const& delta,
                 std::uint64_t max_size, unsigned file_mode, unsigned directory_mode, int exact_umask,
                 lock_events* events) {
    int const dir_fd = open_counters_folder(directory, directory_mode, exact_umask, true);
    if (dir_fd < 0) return errno;
    file_descriptor const dir_guard{dir_fd};
    static constexpr char digits[] = "0123456789abcdef";
    unsigned const shard = static_cast<unsigned>(::getpid()) % counter_shards;
    std::string const name(1, digits[shard]);
    std::string const lock_name = name + ".lock", new_name = name + ".new";
    auto const mode =
        static_cast<mode_t>(exact_umask >= 0 ? file_mode & ~static_cast<unsigned>(exact_umask) : file_mode);

    // (One an earlier release made 0640 under a umask of 022 serves too: open_shard_lock.)
    int const lock = open_shard_lock(dir_fd, lock_name.c_str(), mode, exact_umask >= 0);
    if (lock < 0) return errno;
    file_descriptor const lock_guard{lock};
    if (int const e = lock_fd(lock, counters_lock_wait)) {
        if (e == EWOULDBLOCK && events)
            events->gave_up(directory + "/" + counters_folder + "/" + lock_name,
                            "so this process's counters were not recorded");
        return e;
    }
    unlock_at_end const unlock{lock}; // (before the close: a forked child's copy keeps it else)

    // A shard that is there but cannot be read is left alone: replacing it with this
    // process's counts alone would lose everyone else's.
    std::string old_text;
    if (!read_small_file(dir_fd, name.c_str(), old_text)) return EIO;
    std::map<std::string, std::uint64_t> totals = parse_counters(old_text);
    for (auto const& [counter, n] : delta) {
        if (!is_counter_name(counter) || is_gauge(counter)) continue;
        std::uint64_t& t = totals[counter];
        t = n > std::numeric_limits<std::uint64_t>::max() - t ? std::numeric_limits<std::uint64_t>::max() : t + n;
    }
    totals[std::string(gauge_max_size)] = max_size;
    totals[std::string(gauge_updated_s)] = static_cast<std::uint64_t>(now_s());
    std::string text;
    for (auto const& [counter, n] : totals) text += counter + " " + std::to_string(n) + "\n";

    // Under the lock no one else writes `N.new`: whatever is there (a killed writer's
    // leftover, or something planted: a FIFO would block an open for writing) goes,
    // and the file is created afresh.
    if (::unlinkat(dir_fd, new_name.c_str(), 0) != 0 && errno != ENOENT) return errno;
    int const out =
        ::openat(dir_fd, new_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
    if (out < 0) return errno;
    {
        file_descriptor const out_guard{out};
        if (exact_umask >= 0) ::fchmod(out, mode);
        if (int const e = write_all(out, text.data(), text.size())) return e;
    }
    return ::renameat(dir_fd, new_name.c_str(), dir_fd, name.c_str()) == 0 ? 0 : errno;
}

std::map<std::string, std::uint64_t> read_counters(std::string const& directory) {
    std::map<std::string, std::uint64_t> sum;
    int const dir_fd = open_counters_folder(directory, 0, -1, false);
    if (dir_fd < 0) return sum;
    file_descriptor const guard{dir_fd};
    static constexpr char digits[] = "0123456789abcdef";
    std::uint64_t latest = 0;
    bool any = false;
    for (unsigned shard = 0; shard < counter_shards; ++shard) {
        char const name[2] = {digits[shard], '\0'};
        std::string text;
        if (!read_small_file(dir_fd, name, text)) continue;
        std::map<std::string, std::uint64_t> const shard_counters = parse_counters(text);
        if (shard_counters.empty()) continue;
        auto const updated = shard_counters.find(std::string(gauge_updated_s));
        std::uint64_t const when = updated == shard_counters.end() ? 0 : updated->second;
        bool const newest = !any || when >= latest;
        any = true;
        if (newest) latest = when;
        for (auto const& [counter, n] : shard_counters) {
            if (is_gauge(counter)) {
                if (newest) sum[counter] = n;
                continue;
            }
            std::uint64_t& t = sum[counter];
            t = n > std::numeric_limits<std::uint64_t>::max() - t ? std::numeric_limits<std::uint64_t>::max() : t + n;
        }
    }
    return sum;
}

} // namespace compile_cache::detail::directory_storage_impl

#endif // COMPILE_CACHE_INCLUDE_IMPL
