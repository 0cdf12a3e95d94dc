// Small helpers shared by the tests: a temporary directory that cleans up after
// itself, whole-file read/write, and capturing stderr. Keep this file minimal and general.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <cstdio>

#include <fcntl.h>
#include <sys/wait.h>
#include <stdlib.h> // mkdtemp
#include <unistd.h>

namespace compile_cache_test {

/// A fresh, empty directory under $TMPDIR (or /tmp), removed with everything in it
/// when the object dies, even if a test left parts of it read-only.
class temp_dir {
public:
    temp_dir() {
        char const* base = std::getenv("TMPDIR");
        std::string pattern = (base && *base) ? base : "/tmp";
        pattern += "/compile_cache-test-XXXXXX";
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
    if (!f) throw std::runtime_error("cannot write: " + path.string());
}

/// The whole content of the file at `path`.
inline std::string read_file(std::filesystem::path const& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open for reading: " + path.string());
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// The cache entries under `dir`: files named by a key's hex (a storage may keep
/// other files of its own beside them).
inline std::size_t entries_under(std::filesystem::path const& dir) {
    std::size_t n = 0;
    std::error_code ec;
    for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string const name = it->path().filename().string();
        // A kernel identity's record (explain.hpp: 33 bytes, ending 1d) is no kernel.
        bool const identity_record = name.size() == 66 && name.compare(64, 2, "1d") == 0;
        if (it->is_regular_file() && name.size() >= 2 && !identity_record &&
            name.find_first_not_of("0123456789abcdef") == std::string::npos)
            ++n;
    }
    return n;
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

/// What a shell command did: its exit status (-1 when it did not exit) and stdout.
struct shell_result {
    int status = -1;
    std::string out;
};

/// Runs `command` with /bin/sh (popen), for tests that start a helper program.
inline shell_result run_shell(std::string const& command) {
    shell_result r;
    FILE* p = ::popen(command.c_str(), "r");
    if (p == nullptr) throw std::runtime_error("popen failed: " + command);
    char buf[512];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
    int const st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

} // namespace compile_cache_test
