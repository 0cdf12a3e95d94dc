// A TCP proxy on 127.0.0.1 that delays each direction by a chosen time in front of a
// real server (a redis-server): a network's round-trip time on loopback, for the tests
// and benchmarks of what a remote storage costs over a real network (issue 26).
//
// Unlike the relay of redis_servers.hpp, which holds each chunk of replies before it
// reads the next, this is a link's latency, not a slow server: every byte is passed on
// `one_way` after it arrived, in order, whatever came after it (pipelined requests stay
// pipelined, and a large value costs one delay, not one per chunk). One thread polls
// every connection. Linux/POSIX; 127.0.0.1 only.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace compile_cache_test {

class latency_proxy {
public:
    using clock = std::chrono::steady_clock;

    /// Listens on 127.0.0.1:`listen_port` (0: an ephemeral port) and passes each
    /// connection on to 127.0.0.1:`server_port`, each direction `one_way` later. Runs on a
    /// thread of its own until destroyed (or, with run_here(), on the caller's thread).
    latency_proxy(int server_port, std::chrono::microseconds one_way, int listen_port = 0)
        : server_port_(server_port), one_way_(one_way) {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int const yes = 1;
        ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        sockaddr_in a = loopback(listen_port);
        if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::listen(listener_, 64) != 0) {
            if (listener_ >= 0) ::close(listener_);
            throw std::runtime_error("latency_proxy: cannot listen on 127.0.0.1");
        }
        socklen_t len = sizeof a;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        set_nonblocking(listener_);
    }
    latency_proxy(latency_proxy const&) = delete;
    latency_proxy& operator=(latency_proxy const&) = delete;
    ~latency_proxy() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        for (auto& l : links_) l->close_both();
        ::close(listener_);
    }

    int port() const noexcept { return port_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

    /// Runs the proxy on a thread of its own.
    void start() {
        thread_ = std::thread([this] { run_here(); });
    }
    /// Runs the proxy on this thread until stop() (or the destructor).
    void run_here() {
        while (!stop_) step();
    }
    void stop() noexcept { stop_ = true; }

private:
    struct pending {
        clock::time_point at;
        std::string bytes;
    };
    /// One direction of one connection: what arrived and when, waiting for its time.
    struct direction {
        int from = -1, to = -1;
        std::deque<pending> queue;
        bool from_closed = false;
    };
    struct link {
        direction up, down; // client to server, server to client
        bool dead = false;
        void close_both() {
            if (up.from >= 0) ::close(up.from);
            if (down.from >= 0) ::close(down.from);
            up.from = down.from = up.to = down.to = -1;
        }
    };

    static sockaddr_in loopback(int port) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        return a;
    }
    static void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }
    static void no_delay(int fd) {
        int const yes = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    }

    void accept_all() {
        for (;;) {
            int const client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) return;
            int const server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in a = loopback(server_port_);
            if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
                if (server >= 0) ::close(server);
                ::close(client); // nothing behind: refused, as the server would be
                continue;
            }
            set_nonblocking(client), set_nonblocking(server), no_delay(client), no_delay(server);
            auto l = std::make_unique<link>();
            l->up.from = client, l->up.to = server;
            l->down.from = server, l->down.to = client;
            links_.push_back(std::move(l));
        }
    }

    /// Reads what `d.from` has, stamped with its time to go on.
    void take(direction& d) {
        char buffer[65536];
        for (;;) {
            ssize_t const n = ::recv(d.from, buffer, sizeof buffer, 0);
            if (n > 0) {
                d.queue.push_back({clock::now() + one_way_, std::string(buffer, static_cast<std::size_t>(n))});
                continue;
            }
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) d.from_closed = true;
            return;
        }
    }

    /// Passes on what is due; false when the other side is gone.
    bool give(direction& d) {
        auto const now = clock::now();
        while (!d.queue.empty() && d.queue.front().at <= now) {
            std::string& bytes = d.queue.front().bytes;
            ssize_t const n = ::send(d.to, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
            if (static_cast<std::size_t>(n) < bytes.size()) {
                bytes.erase(0, static_cast<std::size_t>(n));
                return true;
            }
            d.queue.pop_front();
        }
        return true;
    }

    void step() {
        std::vector<pollfd> fds;
        fds.push_back({listener_, POLLIN, 0});
        auto next = clock::now() + std::chrono::milliseconds(50);
        for (auto& l : links_)
            for (direction* d : {&l->up, &l->down}) {
                short events = d->from_closed ? 0 : POLLIN;
                fds.push_back({d->from, events, 0});
                if (!d->queue.empty()) {
                    next = std::min(next, d->queue.front().at);
                    if (d->queue.front().at <= clock::now()) fds.push_back({d->to, POLLOUT, 0});
                }
            }
        auto const wait = std::max<long long>(
            0, std::chrono::duration_cast<std::chrono::nanoseconds>(next - clock::now()).count());
        timespec const t{static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
        ::ppoll(fds.data(), fds.size(), &t, nullptr);
        accept_all();
        for (auto& l : links_) {
            for (direction* d : {&l->up, &l->down}) {
                if (!d->from_closed) take(*d);
                if (!give(*d)) l->dead = true;
                // A side that closed: once what it sent went on, close the link.
                if (d->from_closed && d->queue.empty()) l->dead = true;
            }
        }
        for (auto& l : links_)
            if (l->dead) l->close_both();
        links_.erase(std::remove_if(links_.begin(), links_.end(), [](auto const& l) { return l->dead; }),
                     links_.end());
    }

    int server_port_;
    std::chrono::microseconds one_way_;
    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    std::vector<std::unique_ptr<link>> links_;
};

} // namespace compile_cache_test
