// What the tests need from the operating system, each undone at the end of its scope:
// a temporary directory, whole-file reads and writes, captured stderr, a umask, the
// working directory, environment variables; and a free loopback port a client may be
// connected to itself on.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h> // mkdtemp
#include <sys/stat.h>
#include <unistd.h>

namespace compile_cache_test {

/// A fresh, empty directory under $TMPDIR (or /tmp), named TAG-XXXXXX, removed with
/// everything in it when the object dies, even if a test left parts of it read-only.
class temp_dir {
public:
    explicit temp_dir(std::string const& tag = "compile_cache-test") {
        char const* base = std::getenv("TMPDIR");
        std::string pattern = (base && *base) ? base : "/tmp";
        pattern += "/" + tag + "-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
        path_ = pattern;
    }
    temp_dir(temp_dir const&) = delete;
    temp_dir& operator=(temp_dir const&) = delete;
    ~temp_dir() {
        restore_permissions(path_);
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }

    std::filesystem::path const& path() const noexcept { return path_; }
    std::string str() const { return path_.string(); }

private:
    // Gives every directory below (not through symlinks) owner rwx back, so that
    // remove_all can enter and empty it.
    static void restore_permissions(std::filesystem::path const& dir) noexcept {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code sec;
            if (it->symlink_status(sec).type() == fs::file_type::directory)
                restore_permissions(it->path());
        }
    }

    std::filesystem::path path_;
};

/// Replaces the file at `path` with exactly `bytes`.
inline void write_file(std::filesystem::path const& path, std::string_view bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot open for writing: " + path.string());
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) throw std::runtime_error("cannot write: " + path.string());
}

/// write_file, then mode 0600: a secret or a signing key file, as the library accepts it
/// (open to no other user).
inline void write_private_file(std::filesystem::path const& path, std::string_view bytes) {
    write_file(path, bytes);
    if (::chmod(path.c_str(), 0600) != 0)
        throw std::system_error(errno, std::generic_category(), "chmod " + path.string());
}

/// The whole content of the file at `path`.
inline std::string read_file(std::filesystem::path const& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open for reading: " + path.string());
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Sets the access and modification times of `path` itself (not of what a symbolic link
/// names) `seconds` into the past.
inline void set_times_ago(std::filesystem::path const& path, int seconds) {
    timespec times[2];
    ::clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
        throw std::system_error(errno, std::generic_category(), "utimensat " + path.string());
}

/// Whether the file at `path` is locked by an open file description lock (as a directory
/// claim's claimant locks its claim), asked on a descriptor of its own.
inline bool file_is_locked(std::filesystem::path const& path) {
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return false;
    struct ::flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    bool const locked = ::fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
    ::close(fd);
    return locked;
}

/// Drops the locks this process's open descriptors of the file at `path` hold (found in
/// /proc/self/fd by device and inode), as the kernel drops them when their owner dies, or
/// as a file system without locks never has them; the descriptors stay open. True when
/// the file was locked before and is not after.
inline bool drop_locks_on(std::filesystem::path const& path) {
    struct stat file {};
    if (::lstat(path.c_str(), &file) != 0 || !file_is_locked(path)) return false;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
        int const fd = std::atoi(it->path().filename().c_str());
        struct stat st {};
        if (::fstat(fd, &st) != 0 || st.st_dev != file.st_dev || st.st_ino != file.st_ino) continue;
        struct ::flock lock {};
        lock.l_type = F_UNLCK;
        lock.l_whence = SEEK_SET;
        (void)::fcntl(fd, F_OFD_SETLK, &lock);
    }
    return !file_is_locked(path);
}

/// The lines of `text`, without their newlines.
inline std::vector<std::string> lines_of(std::string const& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

/// What this process writes to stderr (fd 2) from construction until text() (or
/// destruction), kept in `file`.
class captured_stderr {
public:
    explicit captured_stderr(std::filesystem::path file) : file_(std::move(file)) {
        std::fflush(stderr);
        int const fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) throw std::runtime_error("captured_stderr: cannot create " + file_.string());
        saved_ = ::dup(2);
        ::dup2(fd, 2);
        ::close(fd);
    }
    captured_stderr(captured_stderr const&) = delete;
    captured_stderr& operator=(captured_stderr const&) = delete;
    ~captured_stderr() { restore(); }

    /// Stops capturing and returns what was written.
    std::string text() {
        restore();
        return read_file(file_);
    }

private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        saved_ = -1;
    }
    std::filesystem::path file_;
    int saved_ = -1;
};

/// The permission bits of `p` itself (not of what a symlink points to).
inline unsigned mode_of(std::filesystem::path const& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) throw std::system_error(errno, std::generic_category(), "lstat " + p.string());
    return static_cast<unsigned>(st.st_mode) & 07777u;
}

/// Root reads and writes whatever the permission bits say: tests of refusals skip then.
inline bool running_as_root() { return ::geteuid() == 0; }

/// The process's umask, set to `mask` for one scope.
class umask_guard {
public:
    explicit umask_guard(mode_t mask) : old_(::umask(mask)) {}
    umask_guard(umask_guard const&) = delete;
    umask_guard& operator=(umask_guard const&) = delete;
    ~umask_guard() { ::umask(old_); }

private:
    mode_t old_;
};

/// `dir` as the working directory for one scope (relative paths resolve in it).
class working_directory {
public:
    explicit working_directory(std::filesystem::path const& dir) : old_(std::filesystem::current_path()) {
        std::filesystem::current_path(dir);
    }
    working_directory(working_directory const&) = delete;
    working_directory& operator=(working_directory const&) = delete;
    ~working_directory() {
        std::error_code ec;
        std::filesystem::current_path(old_, ec);
    }

private:
    std::filesystem::path old_;
};

/// One environment variable set (or, with nullptr, unset) for one scope; its old
/// value, or its absence, comes back at the end.
class env_var {
public:
    env_var(std::string name, char const* value) : name_(std::move(name)) {
        if (char const* old = std::getenv(name_.c_str())) old_ = old;
        if (value) ::setenv(name_.c_str(), value, 1);
        else ::unsetenv(name_.c_str());
    }
    env_var(std::string name, std::string const& value) : env_var(std::move(name), value.c_str()) {}
    env_var(env_var const&) = delete;
    env_var& operator=(env_var const&) = delete;
    ~env_var() {
        if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
        else ::unsetenv(name_.c_str());
    }

private:
    std::string name_;
    std::optional<std::string> old_;
};

/// PREFIX + each suffix, unset when made and again when destroyed, so that no test
/// sees another's settings; set() sets one for this test.
class scoped_settings {
public:
    scoped_settings(std::string prefix, std::vector<std::string> suffixes)
        : prefix_(std::move(prefix)), suffixes_(std::move(suffixes)) {
        clear();
    }
    scoped_settings(scoped_settings const&) = delete;
    scoped_settings& operator=(scoped_settings const&) = delete;
    ~scoped_settings() { clear(); }
    void set(std::string const& suffix, std::string const& value) {
        ::setenv((prefix_ + suffix).c_str(), value.c_str(), 1);
    }
    void clear() {
        for (auto const& suffix : suffixes_) ::unsetenv((prefix_ + suffix).c_str());
    }

private:
    std::string prefix_;
    std::vector<std::string> suffixes_;
};

/// A free loopback port of the range the kernel picks source ports from, with nothing
/// listening on it, and even: Linux tries even ports first for a connection's source
/// (and gives odd ones to bind(0), which finds the range here). A client that connects
/// to it again and again is, within one pass over the range, connected to itself once.
/// 0 when none was found.
inline int free_port_a_client_may_take() {
    auto bind_loopback = [](int wanted) {
        int const fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return 0;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(wanted));
        socklen_t len = sizeof a;
        int port = 0;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
            port = ntohs(a.sin_port);
        ::close(fd);
        return port;
    };
    for (int tries = 0; tries < 100; ++tries) {
        int const any = bind_loopback(0);
        if (any <= 0 || any >= 65535) continue;
        if (int const even = bind_loopback(any % 2 == 0 ? any : any + 1)) return even;
    }
    return 0;
}

} // namespace compile_cache_test
