// Processes for the storage tests: start a helper program with its stdout captured,
// wait for it or kill it, and run a function in a forked child that reports back a
// line of text. Test-side only (uses no Catch2 so that a child never touches it).
#pragma once

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace storage_test {

/// A started program whose stdout is read through a pipe.
class child_process {
public:
    explicit child_process(std::vector<std::string> const& argv) {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
        std::vector<char*> args;
        for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
        if (pid_ == 0) {
            ::dup2(fds[1], 1);
            ::execv(args[0], args.data());
            ::_exit(127);
        }
        ::close(fds[1]);
        out_ = fds[0];
    }
    child_process(child_process const&) = delete;
    child_process& operator=(child_process const&) = delete;
    ~child_process() {
        if (pid_ > 0 && !waited_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (out_ >= 0) ::close(out_);
    }

    pid_t pid() const noexcept { return pid_; }

    /// Reads stdout until it holds a full line (or the child closes it); false on EOF.
    bool wait_for_line(int timeout_ms = 10000) {
        while (output_.find('\n') == std::string::npos) {
            struct pollfd p {out_, POLLIN, 0};
            if (::poll(&p, 1, timeout_ms) <= 0) return false;
            if (!read_some()) return false;
        }
        return true;
    }

    void kill(int sig = SIGKILL) { ::kill(pid_, sig); }

    /// Waits for the end; returns the exit code, or 128 + signal.
    int wait() {
        while (read_some()) {
        }
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        waited_ = true;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
        return -1;
    }

    std::string const& output() const noexcept { return output_; }

private:
    bool read_some() {
        char buf[4096];
        ssize_t n;
        do {
            n = ::read(out_, buf, sizeof buf);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) return false;
        output_.append(buf, static_cast<std::size_t>(n));
        return true;
    }

    pid_t pid_ = -1;
    int out_ = -1;
    bool waited_ = false;
    std::string output_;
};

/// Runs `fn` in a forked child and returns what it returned (or a line saying how
/// the child died). The child leaves with _exit: no destructor or atexit handler of
/// the test process runs twice. Use for scenarios that change process-wide state
/// (resource limits, mount namespaces, user ids).
inline std::string run_in_child(std::function<std::string()> const& fn) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    std::fflush(nullptr);
    pid_t const pid = ::fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid == 0) {
        ::close(fds[0]);
        std::string result;
        try {
            result = fn();
        } catch (std::exception const& e) {
            result = std::string("child threw: ") + e.what();
        } catch (...) {
            result = "child threw";
        }
        std::size_t done = 0;
        while (done < result.size()) {
            ssize_t const n = ::write(fds[1], result.data() + done, result.size() - done);
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t const n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) out += " [child killed by signal " + std::to_string(WTERMSIG(status)) + "]";
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) out += " [child exit " + std::to_string(WEXITSTATUS(status)) + "]";
    return out;
}

} // namespace storage_test
