// Real Redis servers for the Redis tests: the shared server and cluster that ctest's
// fixture started (COMPILE_CACHE_REDIS_FIXTURE_DIR), or, when the executable runs by
// itself, ones it starts and stops on its own; servers of a test's own (to stop, kill
// or reconfigure) through tests/redis/redis_fixture.sh, under the same folder so that
// the fixture's cleanup stops them even when a test fails; a relay on loopback that
// delays a real server's replies or slips one stray reply in. 127.0.0.1 only.
#pragma once

#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/key/key.hpp>

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

namespace compile_cache_test::redis {

/// Runs the fixture script with `args`; its standard output, trimmed. Throws when it fails.
inline std::string fixture_script(std::string const& args) {
    std::string const command = std::string("bash " COMPILE_CACHE_REDIS_FIXTURE_SCRIPT " ") + args;
    process_result const r = run_shell(command);
    if (!r.exited(0)) throw std::runtime_error(command + " failed: " + r.describe());
    std::string out = r.out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

/// The folder of the servers: the ctest fixture's, or one this process made.
class fixture {
public:
    static fixture& get() {
        static fixture f;
        return f;
    }
    std::string const& dir() const { return dir_; }
    int server_port() const { return std::stoi(read_file(dir_ + "/server.port")); }
    std::vector<int> cluster_ports() const { return split(read_file(dir_ + "/cluster.ports")); }
    std::string server_url() const { return "redis://127.0.0.1:" + std::to_string(server_port()); }
    /// The cluster, named by two of its masters as seeds.
    std::string cluster_url() const {
        std::vector<int> const ports = cluster_ports();
        return "redis+cluster://127.0.0.1:" + std::to_string(ports.at(0)) + ",127.0.0.1:" + std::to_string(ports.at(1));
    }

    static std::vector<int> split(std::string const& ports) {
        std::vector<int> out;
        std::size_t start = 0;
        while (start < ports.size()) {
            std::size_t comma = ports.find(',', start);
            if (comma == std::string::npos) comma = ports.size();
            out.push_back(std::stoi(ports.substr(start, comma - start)));
            start = comma + 1;
        }
        return out;
    }

    ~fixture() {
        if (own_) {
            try {
                fixture_script("stop " + dir_);
            } catch (...) {
            }
        }
    }

private:
    fixture() {
        if (char const* d = std::getenv("COMPILE_CACHE_REDIS_FIXTURE_DIR"); d && *d) {
            dir_ = d;
        } else {
            own_ = std::make_unique<temp_dir>();
            dir_ = own_->path().string() + "/servers";
            fixture_script("start " + dir_);
        }
    }
    std::unique_ptr<temp_dir> own_;
    std::string dir_;
};

inline std::string unique_name(char const* what) {
    static int counter = 0;
    return std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

inline pid_t pid_of(std::string const& name) {
    return static_cast<pid_t>(std::stol(read_file(fixture::get().dir() + "/" + name + ".pid")));
}

/// A server of a test's own; stopped when the object dies.
class server {
public:
    explicit server(std::string const& extra_args = {}) : name_(unique_name("server")) {
        port_ = std::stoi(fixture_script("server " + fixture::get().dir() + " " + name_ + " " + extra_args));
        pid_ = pid_of(name_);
    }
    server(server const&) = delete;
    server& operator=(server const&) = delete;
    ~server() { kill(); }

    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    std::string const& name() const { return name_; }
    std::string home() const { return fixture::get().dir() + "/" + name_; }

    void pause() { ::kill(pid_, SIGSTOP); }
    void resume() { ::kill(pid_, SIGCONT); }
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGCONT);
        ::kill(pid_, SIGKILL);
        // The server is not our child (the script started it): wait until its port is free.
        for (int i = 0; i < 200 && ::kill(pid_, 0) == 0 && !zombie(pid_); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::remove((fixture::get().dir() + "/" + name_ + ".pid").c_str());
        pid_ = -1;
    }
    /// A new server on the same port (after kill()).
    void restart(std::string const& extra_args = {}) {
        fixture_script("server " + fixture::get().dir() + " " + name_ + " --port " + std::to_string(port_) + " " +
                       extra_args);
        pid_ = pid_of(name_);
    }

    static bool zombie(pid_t pid) {
        try {
            std::string const stat = read_file("/proc/" + std::to_string(pid) + "/stat");
            std::size_t const close = stat.rfind(')');
            return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
        } catch (...) {
            return true;
        }
    }

private:
    std::string name_;
    int port_ = 0;
    pid_t pid_ = -1;
};

/// A cluster of three masters of a test's own; stopped when the object dies.
class cluster {
public:
    explicit cluster(std::string const& extra_args = {}) : name_(unique_name("cluster")) {
        ports_ = fixture::split(fixture_script("cluster " + fixture::get().dir() + " " + name_ + " " + extra_args));
    }
    cluster(cluster const&) = delete;
    cluster& operator=(cluster const&) = delete;
    ~cluster() {
        for (std::size_t i = 0; i < ports_.size(); ++i) kill(i);
    }
    std::vector<int> const& ports() const { return ports_; }
    /// Stops node `i` (SIGSTOP: its port still accepts connections, nothing answers), or resumes it.
    void pause(std::size_t i) { ::kill(pid_of(name_ + "-" + std::to_string(i + 1)), SIGSTOP); }
    void resume(std::size_t i) { ::kill(pid_of(name_ + "-" + std::to_string(i + 1)), SIGCONT); }
    std::string url() const {
        return "redis+cluster://127.0.0.1:" + std::to_string(ports_[0]) + ",127.0.0.1:" + std::to_string(ports_[1]);
    }
    void kill(std::size_t i) {
        std::string const node = name_ + "-" + std::to_string(i + 1);
        std::string const pidfile = fixture::get().dir() + "/" + node + ".pid";
        if (!std::ifstream(pidfile)) return;
        pid_t const pid = pid_of(node);
        ::kill(pid, SIGCONT);
        ::kill(pid, SIGKILL);
        for (int n = 0; n < 200 && ::kill(pid, 0) == 0 && !server::zombie(pid); ++n)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::remove(pidfile.c_str());
    }

private:
    std::string name_;
    std::vector<int> ports_;
};

/// Where a relay slips its stray reply in, once: after the first chunk of replies; or
/// into it, before its replies or after its first reply, the chunk's last reply then held
/// 50 ms (it has not arrived yet when the client has read as many replies as it sent
/// commands, counting the stray).
enum class stray_place { after_first_chunk, before_replies, after_first_reply };

/// A relay on 127.0.0.1 in front of a real server's port, for what a real server on
/// loopback does not do by itself: each chunk of replies is held `delay` before it is
/// passed on (a slow link or an overloaded server), and `stray`, when given, is sent
/// once, at `place` (a confused proxy's extra reply). The client side's bytes pass
/// unchanged. An ephemeral port is fine here.
class relay {
public:
    relay(int server_port, std::chrono::milliseconds delay, std::string stray = {},
          stray_place place = stray_place::after_first_chunk)
        : server_port_(server_port), delay_(delay), stray_(std::move(stray)), place_(place) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a = loopback(0);
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 16) != 0)
            throw std::runtime_error("relay: cannot listen on 127.0.0.1");
        socklen_t len = sizeof a;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    relay(relay const&) = delete;
    relay& operator=(relay const&) = delete;
    ~relay() {
        stop_ = true;
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        acceptor_.join();
        for (auto& t : connections_) t.join();
    }
    int port() const { return port_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    /// Calls `hook(chunk)` with each chunk of a client's bytes before passing it on, on the
    /// relay's thread (from the next chunk on; set at any time): a test acts on the
    /// server between a client's commands, as another process would.
    void before_passing(std::function<void(std::string_view)> hook) {
        std::lock_guard<std::mutex> lock(hook_mutex_);
        hook_ = std::make_shared<std::function<void(std::string_view)>>(std::move(hook));
    }

private:
    static sockaddr_in loopback(int port) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        return a;
    }
    /// Where the RESP2 reply that starts at `at` in `bytes` ends; npos when it is not whole.
    static std::size_t reply_end(std::string_view bytes, std::size_t at) {
        constexpr std::size_t none = std::string_view::npos;
        std::size_t const eol = at < bytes.size() ? bytes.find("\r\n", at) : none;
        if (eol == none) return none;
        char const type = bytes[at];
        bool const counted = type == '$' || type == '*';
        long long const n = counted ? std::stoll(std::string(bytes.substr(at + 1, eol - at - 1))) : 0;
        if (type == '$' && n >= 0) {
            std::size_t const end = eol + 2 + static_cast<std::size_t>(n) + 2;
            return end <= bytes.size() ? end : none;
        }
        std::size_t end = eol + 2;
        for (long long i = 0; type == '*' && i < n && end != none; ++i) end = reply_end(bytes, end);
        return end;
    }
    /// Sends `chunk` (replies) to `client` with the stray at place_: false when the client is gone.
    bool send_with_stray(int client, std::string const& chunk) {
        if (place_ == stray_place::after_first_chunk) return send_all(client, chunk + stray_);
        std::size_t last = 0; // where the chunk's last whole reply starts
        std::size_t first_end = std::string::npos;
        for (std::size_t end = reply_end(chunk, 0); end != std::string::npos && end < chunk.size();
             end = reply_end(chunk, end)) {
            if (first_end == std::string::npos) first_end = end;
            last = end;
        }
        std::size_t const slip = place_ == stray_place::before_replies ? 0 : std::min(first_end, last);
        std::string const head = chunk.substr(0, slip) + stray_ + chunk.substr(slip, last - slip);
        if (!send_all(client, head)) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return send_all(client, std::string_view(chunk).substr(last));
    }
    static bool send_all(int fd, std::string_view bytes) {
        while (!bytes.empty()) {
            ssize_t const n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0) return false;
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }
    void accept_loop() {
        for (;;) {
            int const client = ::accept(listener_, nullptr, nullptr);
            if (client < 0 || stop_) {
                if (client >= 0) ::close(client);
                return;
            }
            connections_.emplace_back([this, client] { pass(client); });
        }
    }
    /// Passes bytes both ways until either side closes or the relay stops (polls at
    /// most 50 ms at a time, so that it sees the stop).
    void pass(int client) {
        int const server = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a = loopback(server_port_);
        if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(server), ::close(client);
            return;
        }
        char buffer[65536];
        while (!stop_) {
            pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
            if (::poll(p, 2, 50) <= 0) continue;
            if (p[0].revents) {
                ssize_t const n = ::recv(client, buffer, sizeof buffer, 0);
                std::shared_ptr<std::function<void(std::string_view)>> hook;
                {
                    std::lock_guard<std::mutex> lock(hook_mutex_);
                    hook = hook_;
                }
                if (n > 0 && hook && *hook) (*hook)(std::string_view(buffer, static_cast<std::size_t>(n)));
                if (n <= 0 || !send_all(server, std::string_view(buffer, static_cast<std::size_t>(n)))) break;
            }
            if (p[1].revents) {
                ssize_t const n = ::recv(server, buffer, sizeof buffer, 0);
                if (n <= 0) break;
                std::string const chunk(buffer, static_cast<std::size_t>(n));
                std::this_thread::sleep_for(delay_);
                if (!stray_.empty() && !stray_sent_.exchange(true) ? !send_with_stray(client, chunk)
                                                                   : !send_all(client, chunk))
                    break;
            }
        }
        ::close(server);
        ::close(client);
    }

    int server_port_;
    std::chrono::milliseconds delay_;
    std::string stray_;
    stray_place place_;
    std::atomic<bool> stray_sent_{false};
    std::mutex hook_mutex_;
    std::shared_ptr<std::function<void(std::string_view)>> hook_; // (copied under the mutex, called outside it)
    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread acceptor_;
    std::vector<std::thread> connections_; // (touched by the acceptor only, joined after it)
};

/// A bare hiredis connection for arranging and inspecting what a test needs.
class admin {
public:
    explicit admin(int port) {
        timeval tv{2, 0};
        c_ = redisConnectWithTimeout("127.0.0.1", port, tv);
        if (!c_ || c_->err) throw std::runtime_error("admin: cannot connect to port " + std::to_string(port));
        redisSetTimeout(c_, tv);
    }
    admin(admin const&) = delete;
    admin& operator=(admin const&) = delete;
    ~admin() { redisFree(c_); }

    /// The reply as text: a string, a status, an error ("ERR ..."), an integer, "(nil)".
    std::string operator()(std::vector<std::string> const& args) {
        std::vector<char const*> argv;
        std::vector<std::size_t> lens;
        for (auto const& a : args) argv.push_back(a.data()), lens.push_back(a.size());
        auto* r = static_cast<redisReply*>(
            redisCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lens.data()));
        if (!r) throw std::runtime_error("admin: no reply");
        std::string out;
        switch (r->type) {
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS:
        case REDIS_REPLY_ERROR: out.assign(r->str, r->len); break;
        case REDIS_REPLY_INTEGER: out = std::to_string(r->integer); break;
        case REDIS_REPLY_NIL: out = "(nil)"; break;
        default: out = "(array)";
        }
        freeReplyObject(r);
        return out;
    }

    /// One field of INFO (e.g. "evicted_keys"), or "" when absent.
    std::string info(std::string const& section, std::string const& field) {
        std::string const all = (*this)({"INFO", section});
        std::size_t const at = all.find("\n" + field + ":");
        std::size_t const start = at == std::string::npos ? (all.rfind(field + ":", 0) == 0 ? 0 : std::string::npos)
                                                          : at + 1;
        if (start == std::string::npos) return {};
        std::size_t const value = start + field.size() + 1;
        return all.substr(value, all.find('\r', value) - value);
    }

    /// Calls of one command (e.g. "set") the server has answered since its statistics were reset.
    std::uint64_t calls(std::string const& command) {
        std::string const field = info("commandstats", "cmdstat_" + command);
        if (field.empty()) return 0;
        return std::stoull(field.substr(field.find("calls=") + 6));
    }

private:
    redisContext* c_ = nullptr;
};

/// A key made from a number, as a hasher's digest would be.
inline compile_cache::key key_of(std::uint64_t n) {
    unsigned char digest[32] = {};
    for (int i = 0; i < 8; ++i) digest[i] = static_cast<unsigned char>(n >> (8 * i));
    digest[31] = 0x5a;
    return compile_cache::key(digest, sizeof digest);
}

/// Milliseconds since `start`.
inline double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

/// The port of the master that serves `slot`, as the cluster says (CLUSTER NODES); -1: none.
inline int owner_port(int any_port, unsigned slot) {
    std::istringstream nodes(admin(any_port)({"CLUSTER", "NODES"}));
    std::string line;
    while (std::getline(nodes, line)) {
        std::istringstream fields(line);
        std::string id, address, flags, master, ping, pong, epoch, state, range;
        fields >> id >> address >> flags >> master >> ping >> pong >> epoch >> state;
        if (flags.find("master") == std::string::npos) continue;
        while (fields >> range) {
            if (range.front() == '[') continue;
            std::size_t const dash = range.find('-');
            unsigned const from = static_cast<unsigned>(std::stoul(range.substr(0, dash)));
            unsigned const to =
                dash == std::string::npos ? from : static_cast<unsigned>(std::stoul(range.substr(dash + 1)));
            if (slot >= from && slot <= to) return std::stoi(address.substr(address.find(':') + 1));
        }
    }
    return -1;
}

} // namespace compile_cache_test::redis
