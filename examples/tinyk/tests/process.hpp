// A small process runner for the tinyk tests: runs a program as a fresh child
// (fork + execve) with exactly the environment and working directory given, stdin
// from /dev/null, and gives back its stdout, stderr and exit status. A child that
// outlives its timeout is killed (and reported as such), so a hung tinyk fails one
// test instead of the whole run.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tinyk_test {

struct process_spec {
    std::vector<std::string> argv;          ///< argv[0] is the program's path (not searched in PATH)
    std::vector<std::string> env;           ///< NAME=VALUE, the child's whole environment
    std::string cwd;                        ///< working directory; empty: the parent's
    std::chrono::milliseconds timeout{30000};
};

struct process_result {
    int exit_code = -1;  ///< the status passed to exit, or -1 when killed by a signal
    int signal = 0;      ///< the signal that ended it, 0 if it exited
    bool timed_out = false;
    std::string out, err;

    bool exited(int code) const noexcept { return signal == 0 && !timed_out && exit_code == code; }
    /// For test failure messages.
    std::string describe() const {
        std::string s = timed_out ? "timed out" : signal ? "killed by signal " + std::to_string(signal)
                                                         : "exit " + std::to_string(exit_code);
        return s + "\n--- stdout\n" + out + "--- stderr\n" + err + "---";
    }
};

namespace child_process {

inline void close_fd(int& fd) noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

struct pipe_pair {
    int read = -1, write = -1;
    pipe_pair() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
        read = fds[0];
        write = fds[1];
    }
    ~pipe_pair() {
        close_fd(read);
        close_fd(write);
    }
    pipe_pair(pipe_pair const&) = delete;
    pipe_pair& operator=(pipe_pair const&) = delete;
};

[[noreturn]] inline void child_failed(int report, int e) noexcept {
    ssize_t n = ::write(report, &e, sizeof e);
    (void)n;
    ::_exit(127);
}

// Child side, after fork: only async-signal-safe calls. Reports a failed chdir or
// exec as errno through `report` (close-on-exec, so a successful exec closes it).
[[noreturn]] inline void exec_child(char const* const* argv, char const* const* envp, char const* cwd, int out,
                                    int err, int report) noexcept {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
        child_failed(report, errno);
    if (cwd && *cwd && ::chdir(cwd) != 0) child_failed(report, errno);
    ::execve(argv[0], const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    child_failed(report, errno);
}

} // namespace child_process

/// Runs `spec` to completion (or its timeout) and returns what it did. Throws only
/// when the child cannot be started (fork, pipe, chdir or exec failed).
inline process_result run_process(process_spec const& spec) {
    if (spec.argv.empty()) throw std::invalid_argument("run_process: empty argv");
    std::vector<char const*> argv, envp;
    for (auto const& a : spec.argv) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    for (auto const& e : spec.env) envp.push_back(e.c_str());
    envp.push_back(nullptr);

    child_process::pipe_pair out, err, report;
    pid_t pid = ::fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid == 0) child_process::exec_child(argv.data(), envp.data(), spec.cwd.c_str(), out.write, err.write, report.write);
    child_process::close_fd(out.write);
    child_process::close_fd(err.write);
    child_process::close_fd(report.write);

    process_result r;
    auto deadline = std::chrono::steady_clock::now() + spec.timeout;
    int fds[2] = {out.read, err.read};
    std::string* sinks[2] = {&r.out, &r.err};
    char buf[65536];
    while (fds[0] >= 0 || fds[1] >= 0) {
        pollfd p[2];
        nfds_t n = 0;
        int which[2];
        for (int i = 0; i < 2; ++i)
            if (fds[i] >= 0) {
                p[n] = pollfd{fds[i], POLLIN, 0};
                which[n++] = i;
            }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            r.timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        int ready = ::poll(p, n, static_cast<int>(left.count()));
        if (ready < 0) {
            if (errno == EINTR) continue;
            ::kill(pid, SIGKILL);
            break;
        }
        for (nfds_t j = 0; j < n; ++j) {
            if (!(p[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int i = which[j];
            ssize_t got = ::read(fds[i], buf, sizeof buf);
            if (got > 0) sinks[i]->append(buf, static_cast<std::size_t>(got));
            else if (got == 0 || errno != EINTR) fds[i] = -1; // end of file (or a broken pipe)
        }
    }

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);

    int child_errno = 0;
    if (::read(report.read, &child_errno, sizeof child_errno) == static_cast<ssize_t>(sizeof child_errno))
        throw std::system_error(child_errno, std::generic_category(),
                                "cannot start " + spec.argv[0] + (spec.cwd.empty() ? "" : " in " + spec.cwd));
    return r;
}

} // namespace tinyk_test
