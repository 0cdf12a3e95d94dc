// The one way tests start other processes:
// - run_process: a program as a fresh child (fork + execve) with exactly the
//   environment and working directory given, stdin from /dev/null, its stdout, stderr
//   and exit status given back; a child that outlives its timeout is killed and
//   reported as such, so a hung program fails one test instead of the whole run.
// - run_shell: a /bin/sh command line the same way, in this process's environment.
// - child_process: a program started now and waited for (or killed) later, its
//   stdout read line by line.
// - run_in_child: a function in a forked child that reports back a line of text.
// No Catch2 here, so that a forked child never touches it.
#pragma once

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

extern char** environ;

namespace compile_cache_test {

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

namespace process_io {

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

} // namespace process_io

/// Runs `spec` to completion (or its timeout) and returns what it did. Throws only
/// when the child cannot be started (fork, pipe, chdir or exec failed).
inline process_result run_process(process_spec const& spec) {
    if (spec.argv.empty()) throw std::invalid_argument("run_process: empty argv");
    std::vector<char const*> argv, envp;
    for (auto const& a : spec.argv) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    for (auto const& e : spec.env) envp.push_back(e.c_str());
    envp.push_back(nullptr);

    process_io::pipe_pair out, err, report;
    pid_t pid = ::fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid == 0) process_io::exec_child(argv.data(), envp.data(), spec.cwd.c_str(), out.write, err.write, report.write);
    process_io::close_fd(out.write);
    process_io::close_fd(err.write);
    process_io::close_fd(report.write);

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

/// The pid of a process of this machine that has ended (a child, exited and waited
/// for): what a claim of a gone owner names.
inline pid_t dead_pid() {
    pid_t const pid = ::fork();
    if (pid == 0) ::_exit(0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return pid;
}

/// This process's environment, NAME=VALUE each, for a child that should inherit it.
inline std::vector<std::string> this_environment() {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
    return env;
}

/// A child's environment with nothing inherited but the sanitizers' settings (so that a
/// sanitizer build's options reach it): PATH, LC_ALL=C, and `more` (NAME=VALUE each).
inline std::vector<std::string> clean_environment(std::vector<std::string> const& more = {}) {
    std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"};
    for (char const* pass : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"})
        if (char const* v = std::getenv(pass)) env.push_back(std::string(pass) + "=" + v);
    env.insert(env.end(), more.begin(), more.end());
    return env;
}

/// Runs `command` with /bin/sh -c in this process's environment, as run_process does
/// (stdout and stderr captured, killed after `timeout`).
inline process_result run_shell(std::string const& command,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds(120000)) {
    process_spec spec;
    spec.argv = {"/bin/sh", "-c", command};
    spec.env = this_environment();
    spec.timeout = timeout;
    return run_process(spec);
}

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

} // namespace compile_cache_test
