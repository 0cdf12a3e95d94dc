// compile_cache: the definitions of claim.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

namespace compile_cache::detail {

namespace claim_impl {
/// The first line of a small file under /proc ("" when it cannot be read).
inline std::string first_line(char const* path) {
    // (O_CLOEXEC, which an ifstream does not set: a fork and exec by another thread
    // meanwhile must not leak the descriptor into the new program.)
    int const fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    std::string text(1024, '\0');
    ssize_t const got = read_up_to(fd, &text[0], text.size());
    ::close(fd);
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return text.substr(0, text.find('\n'));
}
/// The first line of `name` under /proc, opened relative to /proc itself: a user-mode
/// emulator (qemu-user) rewrites what a process reads at "/proc/self/stat" and
/// "/proc/<its pid>/stat", with a start time a tick or more off the kernel's, which
/// every other process reads; a relative name is passed through to the kernel.
inline std::string first_line_under_proc(std::string const& name) {
    int const proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0) return {};
    int const fd = ::openat(proc, name.c_str(), O_RDONLY | O_CLOEXEC);
    ::close(proc);
    if (fd < 0) return {};
    std::string text(1024, '\0');
    ssize_t const got = read_up_to(fd, &text[0], text.size());
    ::close(fd);
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return text.substr(0, text.find('\n'));
}
/// Field 22 of /proc/PID/stat (0: this process's): the process's start time in clock
/// ticks since boot, as the kernel gives it to any process ("" if unknown); `state`
/// gets field 3 (R, S, T, Z, ...).
inline std::string start_ticks(long pid, std::string* state = nullptr) {
    std::string const stat = first_line_under_proc(std::to_string(pid == 0 ? static_cast<long>(::getpid()) : pid) + "/stat");
    std::size_t const close = stat.rfind(')'); // the name may hold spaces and parentheses
    if (close == std::string::npos) return {};
    std::istringstream rest(stat.substr(close + 1));
    std::string f;
    for (int field = 3; field <= 22 && (rest >> f); ++field) {
        if (field == 3 && state) *state = f;
        if (field == 22) return f;
    }
    return {};
}
/// This program image's own mark: made once per image (an exec makes a new one; a forked
/// child shares its parent's, but not its pid), so that a claim of this pid and start time
/// made by the image this process ran before an exec is told from its own.
inline std::string image_mark() {
    static std::atomic<std::string*> the_mark{nullptr};
    return detail::made_once(the_mark, [] {
        std::string mark = first_line("/proc/sys/kernel/random/uuid");
        mark.erase(std::remove(mark.begin(), mark.end(), '-'), mark.end());
        if (mark.empty() || mark.find_first_of(" \n") != std::string::npos) {
            auto const now = std::chrono::system_clock::now().time_since_epoch().count() ^
                             std::chrono::steady_clock::now().time_since_epoch().count();
            mark = std::to_string(static_cast<unsigned long long>(now));
        }
        return std::make_unique<std::string>(std::move(mark));
    });
}
inline std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "?";
    std::string h(name);
    for (char& c : h)
        if (c == ' ' || c == '\n') c = '_';
    return h;
}
} // namespace claim_impl

std::string claim_owner() noexcept {
    // Per process: a forked child names itself (its pid and start time differ). Kept in
    // static storage, not per thread: a worker thread's copy would be memory a forked
    // child inherits with no thread to own it. A lock another thread held at a fork is
    // never waited for: the text is then made anew.
    // Never destroyed: a cache of static storage duration claims at exit too. Made inside
    // the try: an allocation that fails there is an empty owner, and tried again next time.
    static ::pid_t cached_pid = 0;
    try {
        static std::atomic<std::mutex*> the_mutex{nullptr};
        static std::atomic<std::string*> the_cached{nullptr};
        std::mutex& mutex = detail::made_once(the_mutex, [] { return std::make_unique<std::mutex>(); });
        std::string& cached = detail::made_once(the_cached, [] { return std::make_unique<std::string>(); });
        ::pid_t const pid = ::getpid();
        std::unique_lock<std::mutex> lock(mutex, std::try_to_lock);
        if (lock.owns_lock() && pid == cached_pid) return cached;
        std::string boot = claim_impl::first_line("/proc/sys/kernel/random/boot_id");
        if (boot.empty()) boot = "?";
        std::string start = claim_impl::start_ticks(0);
        if (start.empty()) start = "?";
        std::string owner = "pid=" + std::to_string(pid) + " boot=" + boot + " start=" + start +
                            " host=" + claim_impl::host_name() + " run=" + claim_impl::image_mark();
        if (lock.owns_lock()) {
            cached = owner;
            cached_pid = pid;
        }
        return owner;
    } catch (...) {
        return {};
    }
}

std::string claim_field(std::string_view owner, std::string_view field) {
    std::string const needle = std::string(field) + "=";
    std::size_t at = 0;
    while ((at = owner.find(needle, at)) != std::string_view::npos) {
        if (at == 0 || owner[at - 1] == ' ' || owner[at - 1] == '\n') {
            std::size_t const from = at + needle.size();
            std::size_t const end = owner.find_first_of(" \n", from);
            return std::string(owner.substr(from, end == std::string_view::npos ? std::string_view::npos : end - from));
        }
        at += needle.size();
    }
    return {};
}

bool claim_owner_alive(std::string_view owner, bool& same_machine) noexcept {
    same_machine = false;
    try {
        std::string const mine = claim_owner();
        std::string const boot = claim_field(owner, "boot");
        if (boot.empty() || boot == "?" || boot != claim_field(mine, "boot")) return true;
        // Containers of one machine share its boot id but not its process ids: another
        // host name is another process space, whose pids say nothing here.
        std::string const host = claim_field(owner, "host");
        if (!host.empty() && host != "?" && host != claim_field(mine, "host")) return true;
        same_machine = true;
        std::string const pid_text = claim_field(owner, "pid");
        char* end = nullptr;
        long const pid = std::strtol(pid_text.c_str(), &end, 10);
        if (pid_text.empty() || *end != '\0' || pid <= 0) return true; // not ours to judge
        if (::kill(static_cast<::pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
        std::string state;
        std::string const now = claim_impl::start_ticks(pid, &state);
        if (state == "Z" || state == "X") return false; // ended, not yet waited for by its parent
        std::string const start = claim_field(owner, "start");
        if (start.empty() || start == "?") return true;
        if (!now.empty() && now != start) return false; // another start time: the pid was reused
        // This very process (its pid and start time) under another image's mark: the claim
        // of the program it ran before an exec, whose descriptors and lock the exec closed.
        std::string const run = claim_field(owner, "run");
        if (pid == static_cast<long>(::getpid()) && !run.empty() && start == claim_field(mine, "start"))
            return run == claim_field(mine, "run");
        return true;
    } catch (...) {
        return true;
    }
}

} // namespace compile_cache::detail

#endif
