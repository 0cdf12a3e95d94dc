// compile_cache: one connection to one Redis server, every exchange bounded in time
// and in the bytes it takes in. Part of the optional redis_storage: needs hiredis
// (0.14 or 1.x), used here for connecting and for parsing replies; commands are
// written with send(MSG_NOSIGNAL), so a server that went away never raises SIGPIPE.
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <hiredis/hiredis.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace compile_cache::detail {

using redis_clock = std::chrono::steady_clock;

struct redis_reply_deleter {
    void operator()(redisReply* r) const noexcept {
        if (r) freeReplyObject(r);
    }
};
using redis_reply_ptr = std::unique_ptr<redisReply, redis_reply_deleter>;

/// What one connection needs to know to (re)connect.
struct redis_endpoint {
    std::string host;        ///< empty for a Unix socket
    int port = 6379;
    std::string socket_path; ///< set for a Unix socket
    std::string user;        ///< for AUTH user password (Redis 6 ACL); empty: AUTH password
    std::string password;    ///< empty: no AUTH
    int db = 0;              ///< SELECT db when not 0
};

/// An error reply's classification.
inline remote_error classify_error_reply(std::string_view text) noexcept {
    auto starts = [&](std::string_view p) { return text.substr(0, p.size()) == p; };
    if (starts("NOAUTH") || starts("WRONGPASS") || starts("NOPERM") || starts("ERR invalid password") ||
        starts("ERR invalid username-password") || starts("ERR AUTH") || starts("ERR Client sent AUTH"))
        return remote_error::auth;
    return remote_error::other;
}

/// One command, as its arguments.
using redis_command = std::vector<std::string_view>;

/// A blocking connection used from one thread at a time. Every member is noexcept
/// and bounded by the deadline it is given; after any failure but an error reply the
/// connection is closed, and the next exchange reconnects. In a process forked after it
/// connected, the first exchange closes this process's copy of the socket, sending
/// nothing on it (the parent goes on with it), and makes a connection of its own.
class redis_connection {
public:
    explicit redis_connection(redis_endpoint endpoint) : endpoint_(std::move(endpoint)) {}
    redis_connection(redis_connection const&) = delete;
    redis_connection& operator=(redis_connection const&) = delete;
    ~redis_connection() { close(); }

    redis_endpoint const& endpoint() const noexcept { return endpoint_; }
    bool connected() const noexcept { return context_ != nullptr; }

    void close() noexcept {
        if (context_) redisFree(context_);
        context_ = nullptr;
    }

    /// Sends the commands in one write, the first preceded by an `ECHO <nonce>` (a nonce
    /// new for each exchange) and the last followed by one, as is every 16th where the
    /// byte bound may stop the exchange (echo_follows), and reads as many replies, each of
    /// at most `max_reply_bytes` on the wire (a longer one is `protocol`, and no more of it is
    /// read); `replies` gets those of the commands, in order. A command's reply is taken
    /// only when the first reply and the first after it that is not a command's are the
    /// nonce (or, where the server refuses ECHO, the same error reply), none of the
    /// commands' is, and no byte follows the last: anything else is `protocol`, the
    /// connection closed, `replies` empty. Connects first when needed, within
    /// `connect_timeout` and the deadline.
    /// Arrays are accepted only when `arrays` is set, and only while the elements a reply's
    /// arrays announce together fit in `max_reply_bytes` (max_array_elements; past it the
    /// reply is `protocol`, refused before hiredis allocates them). An error reply is
    /// returned as a reply (type REDIS_REPLY_ERROR), not as an error. All replies together
    /// take at most `max_total_bytes` on the wire: past it the exchange stops as
    /// `too_large` (the connection closed), `replies` holding those of the commands read
    /// before it that a nonce read followed. On any other failure `replies` is empty.
    std::error_code exchange(std::vector<redis_command> const& commands, std::vector<redis_reply_ptr>& replies,
                             std::size_t max_reply_bytes, redis_clock::time_point deadline,
                             std::chrono::milliseconds connect_timeout, bool arrays = false,
                             std::size_t max_total_bytes = std::numeric_limits<std::size_t>::max()) noexcept {
        replies.clear();
        total_taken_ = 0;
        max_total_bytes_ = max_total_bytes;
        echo_from_ = first_echoed(max_reply_bytes, max_total_bytes);
        try {
            if (context_ && generation_ != fork_generation()) close(); // the parent's socket
            if (context_)
                if (auto e = check_in_step()) return fail(e);
            if (!context_)
                if (auto e = connect(deadline, connect_timeout)) return e;
            std::string const nonce = next_nonce();
            if (auto e = send_commands(commands, deadline, nonce)) return fail(e);
            // The first reply: ECHO's. A reply that came before it (a stray one, or a late
            // one of an exchange that failed) is not the nonce.
            redis_reply_ptr first;
            if (auto e = read_reply(first, max_reply_bytes, deadline, arrays)) return fail(e);
            if (!is_nonce_or_refusal(first.get(), nonce)) return out_of_step(replies);
            // The commands' replies, and ECHO's again where echo_follows says, the same as
            // the first. A stray reply among them shifts the rest: the reply read as a
            // command's is then the nonce, or the one read as the nonce is a command's. A
            // command's reply is kept only once a nonce after it came, so that a batch
            // stopped at its byte bound (too_large) answers none that a stray shifted.
            std::vector<redis_reply_ptr> pending;
            for (std::size_t i = 0; i < commands.size() || (commands.empty() && i == 0); ++i) {
                if (!commands.empty()) {
                    redis_reply_ptr reply;
                    if (auto e = read_reply(reply, max_reply_bytes, deadline, arrays)) {
                        if (e != remote_error::too_large) replies.clear();
                        return fail(e);
                    }
                    if (is_nonce(reply.get(), nonce)) return out_of_step(replies);
                    pending.push_back(std::move(reply));
                    if (!echo_follows(commands, i)) continue;
                }
                redis_reply_ptr after;
                if (auto e = read_reply(after, max_reply_bytes, deadline, arrays)) {
                    if (e != remote_error::too_large) replies.clear();
                    return fail(e);
                }
                if (!same_reply(after.get(), first.get())) return out_of_step(replies);
                for (auto& reply : pending) replies.push_back(std::move(reply));
                pending.clear();
            }
            // Bytes after the last nonce answer no command.
            if (context_->reader->len > context_->reader->pos) return out_of_step(replies);
            return {};
        } catch (...) {
            replies.clear();
            return fail(make_error_code(remote_error::other));
        }
    }

    /// The last failure's text, for a log line (never holds a password).
    std::string const& last_error_text() const noexcept { return error_text_; }

private:
    std::error_code fail(std::error_code e) noexcept {
        close();
        return e;
    }

    /// A new exchange's nonce: a number this process never used before (one counter for
    /// every connection, so that no reply of another connection's exchange matches either).
    static std::string next_nonce() {
        static std::atomic<std::uint64_t> counter{0};
        return "cc-" + std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
    }

    /// Whether `r`, the reply that came first, can be ECHO's: the nonce, or an error (a
    /// server that refuses ECHO: an ACL user without it, or without AUTH yet, answers the
    /// ECHO at the end with the same error, which a stray reply would have to repeat).
    static bool is_nonce_or_refusal(redisReply const* r, std::string const& nonce) noexcept {
        return r->type == REDIS_REPLY_ERROR || is_nonce(r, nonce);
    }

    /// Whether `r` is the bulk string `nonce`.
    static bool is_nonce(redisReply const* r, std::string const& nonce) noexcept {
        return r->type == REDIS_REPLY_STRING && std::string_view(r->str, r->len) == nonce;
    }

    /// Whether `a` and `b` are the same nonce, or the same error text.
    static bool same_reply(redisReply const* a, redisReply const* b) noexcept {
        if (a->type != b->type || (a->type != REDIS_REPLY_STRING && a->type != REDIS_REPLY_ERROR)) return false;
        return std::string_view(a->str, a->len) == std::string_view(b->str, b->len);
    }

    /// The exchange's replies are not in step with its commands: `protocol`, the
    /// connection closed, `replies` cleared.
    std::error_code out_of_step(std::vector<redis_reply_ptr>& replies) noexcept {
        replies.clear();
        error_text_ = "the server's replies were out of step with the commands (a reply no command asked for; "
                      "the connection is closed)";
        return fail(make_error_code(remote_error::protocol));
    }

    /// Before a request on an open connection: nothing may be waiting to be read. Bytes
    /// that no command asked for are a stray reply (protocol: the connection closes); a
    /// connection the server closed meanwhile is closed here and opened again, no error.
    std::error_code check_in_step() {
        if (context_->reader->len > context_->reader->pos)
            return error_text_ = "the server sent a reply no command asked for (the connection is closed)",
                   make_error_code(remote_error::protocol);
        char byte;
        ssize_t const n = retry_on_eintr([&] { return ::recv(context_->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT); });
        if (n > 0)
            return error_text_ = "the server sent a reply no command asked for (the connection is closed)",
                   make_error_code(remote_error::protocol);
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) close();
        return {};
    }

    static timeval to_timeval(std::chrono::microseconds us) noexcept {
        if (us.count() < 1000) us = std::chrono::microseconds(1000);
        timeval tv{};
        tv.tv_sec = static_cast<decltype(tv.tv_sec)>(us.count() / 1000000);
        tv.tv_usec = static_cast<decltype(tv.tv_usec)>(us.count() % 1000000);
        return tv;
    }

    static std::chrono::microseconds remaining(redis_clock::time_point deadline) noexcept {
        return std::chrono::duration_cast<std::chrono::microseconds>(deadline - redis_clock::now());
    }

    std::error_code classify_context_error(redisContext const* c) {
        error_text_ = c ? c->errstr : "out of memory";
        if (!c) return make_error_code(remote_error::other);
        int const saved = errno;
#ifdef REDIS_ERR_TIMEOUT
        if (c->err == REDIS_ERR_TIMEOUT) return make_error_code(remote_error::timeout);
#endif
        if (c->err == REDIS_ERR_IO) {
            if (saved == ECONNREFUSED || saved == ENOENT || saved == ECONNRESET || saved == EHOSTUNREACH ||
                saved == ENETUNREACH || saved == EADDRNOTAVAIL || saved == ECONNABORTED)
                return make_error_code(remote_error::refused);
            if (saved == ETIMEDOUT || saved == EAGAIN || saved == EINPROGRESS || saved == EWOULDBLOCK)
                return make_error_code(remote_error::timeout);
            // hiredis 0.14 reports a connect timeout with its own text and errno cleared.
            if (std::strstr(c->errstr, "timed out") || std::strstr(c->errstr, "Timeout"))
                return make_error_code(remote_error::timeout);
            if (std::strstr(c->errstr, "refused") || std::strstr(c->errstr, "No such file"))
                return make_error_code(remote_error::refused);
        }
        return make_error_code(remote_error::other);
    }

    /// A TCP connection to a loopback port where nothing listens can be made by the kernel
    /// to itself, when the source port it picks is that port: what is sent would be read
    /// back as replies. Such a connection is one whose two ends are the same address.
    static bool connected_to_itself(int fd) noexcept {
        sockaddr_storage mine{}, peer{};
        socklen_t mine_size = sizeof mine, peer_size = sizeof peer;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &mine_size) != 0 ||
            ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0)
            return false;
        if (mine.ss_family != peer.ss_family) return false;
        if (mine.ss_family == AF_INET) {
            auto const& a = reinterpret_cast<sockaddr_in const&>(mine);
            auto const& b = reinterpret_cast<sockaddr_in const&>(peer);
            return a.sin_port == b.sin_port && a.sin_addr.s_addr == b.sin_addr.s_addr;
        }
        if (mine.ss_family == AF_INET6) {
            auto const& a = reinterpret_cast<sockaddr_in6 const&>(mine);
            auto const& b = reinterpret_cast<sockaddr_in6 const&>(peer);
            return a.sin6_port == b.sin6_port && std::memcmp(&a.sin6_addr, &b.sin6_addr, sizeof a.sin6_addr) == 0;
        }
        return false;
    }

    std::error_code connect(redis_clock::time_point deadline, std::chrono::milliseconds connect_timeout) {
        generation_ = fork_generation();
        auto const left = remaining(deadline);
        if (left.count() <= 0) return error_text_ = "no time left to connect", make_error_code(remote_error::timeout);
        auto const budget = std::min<std::chrono::microseconds>(left, connect_timeout);
        auto const connect_deadline = redis_clock::now() + budget;
        timeval const tv = to_timeval(budget);
        errno = 0;
        redisContext* c = endpoint_.socket_path.empty()
                              ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, tv)
                              : redisConnectUnixWithTimeout(endpoint_.socket_path.c_str(), tv);
        if (!c || c->err) {
            auto e = classify_context_error(c);
            if (c) redisFree(c);
            // A connect that gave up at its own timeout is a timeout, whatever errno says;
            // one that failed otherwise (a name that does not resolve, no route) is a
            // server out of reach, as a refusal is: a tier backs off from it alike.
            if (e == remote_error::other)
                e = redis_clock::now() >= connect_deadline ? remote_error::timeout : remote_error::refused;
            return e;
        }
        if (connected_to_itself(c->fd)) {
            redisFree(c);
            error_text_ = "nothing listens on the port (the connection the kernel made was to itself)";
            return make_error_code(remote_error::refused);
        }
        context_ = c;
        // The socket's receive timeout: a blocking recv waits at most receive_slice_, and
        // read_reply uses one only while more than that is left before the deadline (half
        // of what was left now: a later call, with its whole timeout ahead, gets a reply
        // with one recv and no poll). Sends never block (MSG_DONTWAIT).
        auto const slice = std::max<std::chrono::microseconds>(remaining(deadline) / 2, std::chrono::milliseconds(1));
        receive_slice_ = redisSetTimeout(context_, to_timeval(slice)) == REDIS_OK ? slice : std::chrono::microseconds(0);
#if HIREDIS_MAJOR > 1 || (HIREDIS_MAJOR == 1 && (HIREDIS_MINOR > 0 || HIREDIS_PATCH >= 1))
        context_->reader->maxelements = 1u << 20; // (hiredis 1.0.1 and later)
#endif
        bound_arrays(context_->reader);
        std::vector<redis_command> setup;
        if (!endpoint_.password.empty()) {
            if (endpoint_.user.empty())
                setup.push_back({"AUTH", endpoint_.password});
            else
                setup.push_back({"AUTH", endpoint_.user, endpoint_.password});
        }
        std::string const db = std::to_string(endpoint_.db);
        if (endpoint_.db != 0) setup.push_back({"SELECT", db});
        if (setup.empty()) return {};
        if (auto e = send_commands(setup, deadline)) return fail(e);
        for (std::size_t i = 0; i < setup.size(); ++i) {
            redis_reply_ptr reply;
            if (auto e = read_reply(reply, 4096, deadline, false)) return fail(e);
            if (reply->type == REDIS_REPLY_ERROR) {
                // The server's text about credentials never holds the password itself.
                error_text_.assign(reply->str, reply->len);
                remote_error const why = i == 0 && !endpoint_.password.empty() ? remote_error::auth
                                                                              : classify_error_reply(error_text_);
                return fail(make_error_code(why));
            }
        }
        return {};
    }

    /// Waits until the socket is ready for `events`, or the deadline.
    std::error_code wait(short events, redis_clock::time_point deadline) {
        for (;;) {
            auto const left = remaining(deadline);
            if (left.count() <= 0) return error_text_ = "timed out", make_error_code(remote_error::timeout);
            pollfd p{context_->fd, events, 0};
            int const ms = static_cast<int>((left.count() + 999) / 1000);
            int const n = ::poll(&p, 1, ms);
            if (n > 0) return {};
            if (n == 0) continue; // re-check the deadline
            if (errno == EINTR) continue;
            error_text_ = std::strerror(errno);
            return make_error_code(remote_error::other);
        }
    }

    static void append_bulk_header(std::string& out, char kind, std::size_t n) {
        out += kind;
        out += std::to_string(n);
        out += "\r\n";
    }

    /// How often an exchange that its byte bound may stop checks that it is in step: an
    /// `ECHO nonce` after every echo_every-th command (echo_follows). A stop answers the
    /// replies up to the last of them, and fails the others (at most echo_every - 1 more).
    static constexpr std::size_t echo_every = 16;

    /// Whether the exchange's `ECHO nonce` follows `commands[i]`: after the last command;
    /// and, in an exchange that its byte bound may stop (too_large keeps the replies read
    /// before it), after every echo_every-th command from echo_from_ on (those whose replies
    /// may reach half of the bound) but ASKING, whose flag only the next command may use.
    bool echo_follows(std::vector<redis_command> const& commands, std::size_t i) const noexcept {
        if (i + 1 == commands.size()) return true;
        return i >= echo_from_ && (i + 1) % echo_every == 0 &&
               (commands[i].empty() || commands[i].front() != "ASKING");
    }

    /// The first command that echo_follows may give a nonce of its own (besides the last):
    /// none when the replies are not bounded together; else the first whose reply, with
    /// all those before it at `max_reply_bytes` each, may pass half of `max_total_bytes`.
    /// (Only where the nonces stand matters for what a stop keeps, never for its truth:
    /// a stop before the first kept nothing.)
    static std::size_t first_echoed(std::size_t max_reply_bytes, std::size_t max_total_bytes) noexcept {
        if (max_total_bytes == std::numeric_limits<std::size_t>::max()) return std::numeric_limits<std::size_t>::max();
        std::size_t const k = max_total_bytes / 2 / std::max<std::size_t>(max_reply_bytes, 1);
        return k == 0 ? 0 : k - 1;
    }

    /// Sends `commands` in one write; with a `nonce`, each followed by `ECHO nonce` (but
    /// as echo_follows says) and the first preceded by one (two when there is no command).
    std::error_code send_commands(std::vector<redis_command> const& commands, redis_clock::time_point deadline,
                                  std::string_view nonce = {}) {
        // The small parts (headers, short arguments) are copied into one buffer; long
        // arguments (values) are sent from where they are.
        constexpr std::size_t copy_limit = 1024;
        std::string small;
        struct piece {
            std::size_t offset; // into small, when data is null
            char const* data;
            std::size_t size;
        };
        std::vector<piece> pieces;
        std::size_t small_start = 0;
        auto flush_small = [&] {
            if (small.size() > small_start) pieces.push_back({small_start, nullptr, small.size() - small_start});
            small_start = small.size();
        };
        auto append = [&](redis_command const& command) {
            append_bulk_header(small, '*', command.size());
            for (std::string_view arg : command) {
                append_bulk_header(small, '$', arg.size());
                if (arg.size() <= copy_limit) {
                    small.append(arg.data(), arg.size());
                } else {
                    flush_small();
                    pieces.push_back({0, arg.data(), arg.size()});
                }
                small += "\r\n";
            }
        };
        redis_command const echo{"ECHO", nonce};
        if (!nonce.empty()) append(echo);
        for (std::size_t i = 0; i < commands.size(); ++i) {
            append(commands[i]);
            if (!nonce.empty() && echo_follows(commands, i)) append(echo);
        }
        if (!nonce.empty() && commands.empty()) append(echo);
        flush_small();
        std::vector<iovec> iov;
        iov.reserve(pieces.size());
        for (auto const& p : pieces)
            iov.push_back({const_cast<char*>(p.data ? p.data : small.data() + p.offset), p.size});
        // Sent at once when the socket buffer takes it (a command usually fits); the
        // wait for room comes only after a send that could not go on.
        // At most IOV_MAX pieces per call (Linux refuses more: EMSGSIZE), the rest next.
#ifdef IOV_MAX
        constexpr std::size_t max_pieces = IOV_MAX;
#else
        constexpr std::size_t max_pieces = 1024;
#endif
        std::size_t first = 0;
        while (first < iov.size()) {
            msghdr m{};
            m.msg_iov = iov.data() + first;
            m.msg_iovlen = std::min(iov.size() - first, max_pieces);
            ssize_t const n = retry_on_eintr([&] { return ::sendmsg(context_->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT); });
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    if (auto e = wait(POLLOUT, deadline)) return e;
                    continue;
                }
                error_text_ = std::strerror(errno);
                return make_error_code(errno == EPIPE || errno == ECONNRESET ? remote_error::refused : remote_error::other);
            }
            auto sent = static_cast<std::size_t>(n);
            while (first < iov.size() && sent >= iov[first].iov_len) sent -= iov[first++].iov_len;
            if (first < iov.size()) {
                iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + sent;
                iov[first].iov_len -= sent;
            }
        }
        return {};
    }

    /// The element pointers an array reply may announce, all its arrays together, while
    /// it is read: what a reply of at most `max_reply_bytes` can hold (each element takes
    /// at least 3 bytes on the wire, `+\r\n`). hiredis allocates an array's pointers when
    /// its header arrives, and freeing the reply walks them all, so a 13-byte header
    /// `*2147483647\r\n` would otherwise cost 16 GiB of address space and seconds of CPU.
    static constexpr std::size_t max_array_elements(std::size_t max_reply_bytes) noexcept {
        return max_reply_bytes / 3;
    }

    /// The state bounded_create_array reads through the reader's privdata: the default
    /// functions' createArray, and what the reply being read may still announce.
    struct array_bound {
        redisReplyObjectFunctions functions{}; ///< the reader's table: hiredis's own, but createArray
        decltype(redisReplyObjectFunctions::createArray) create_array = nullptr; ///< hiredis's own
        std::size_t elements_left = 0; ///< elements the reply being read may still announce
        std::size_t refused = 0;       ///< the element count refused (0: none) in this reply
    };

    /// The reader's createArray: an array whose element count passes what the reply may
    /// still announce is refused (NULL: hiredis fails the read, as out of memory, before
    /// allocating anything); any other is hiredis's own array. `Count` is hiredis's type
    /// for it (int on 0.14, size_t on 1.x).
    template <class Count>
    static void* bounded_create_array(redisReadTask const* task, Count elements) {
        auto* bound = static_cast<array_bound*>(task->privdata);
        std::size_t n = 0;
        if constexpr (std::is_signed<Count>::value)
            n = elements < 0 ? 0 : static_cast<std::size_t>(elements);
        else
            n = static_cast<std::size_t>(elements);
        if (n > bound->elements_left) {
            bound->refused = n;
            return nullptr;
        }
        bound->elements_left -= n;
        return bound->create_array(task, elements);
    }

    /// Gives `reader` (a new context's) array_bound_'s table, a copy of its own with
    /// bounded_create_array, on every hiredis version (on 1.x, maxelements bounds one
    /// array, not all of them together). array_bound_ outlives every context this
    /// connection opens: close() frees the context, and the destructor calls close().
    void bound_arrays(redisReader* reader) noexcept {
        if (!reader->fn || !reader->fn->createArray) return; // no table: hiredis allocates no arrays
        array_bound_.functions = *reader->fn;
        array_bound_.create_array = reader->fn->createArray;
        array_bound_.functions.createArray = &bounded_create_array;
        reader->fn = &array_bound_.functions;
        reader->privdata = &array_bound_;
    }

    std::error_code read_reply(redis_reply_ptr& reply, std::size_t max_reply_bytes, redis_clock::time_point deadline,
                               bool arrays) {
        redisReader* reader = context_->reader;
        std::size_t taken = 0; // bytes of this reply received so far (an upper bound)
        array_bound_.elements_left = max_array_elements(max_reply_bytes);
        array_bound_.refused = 0;
        for (;;) {
            // Refuse an array header before hiredis allocates its elements.
            if (!arrays && reader->ridx == -1 && reader->pos < reader->len && reader->buf[reader->pos] == '*')
                return error_text_ = "unexpected array reply", make_error_code(remote_error::protocol);
            void* r = nullptr;
            if (redisReaderGetReply(reader, &r) != REDIS_OK) {
                error_text_ = array_bound_.refused
                                  ? "an array reply announced " + std::to_string(array_bound_.refused) +
                                        " elements, more than a reply of at most " + std::to_string(max_reply_bytes) +
                                        " bytes holds"
                                  : std::string(reader->errstr);
                return make_error_code(remote_error::protocol);
            }
            if (r) {
                reply.reset(static_cast<redisReply*>(r));
                return {};
            }
            if (taken > max_reply_bytes)
                return error_text_ = "reply longer than the bound", make_error_code(remote_error::protocol);
            if (total_taken_ > max_total_bytes_)
                return error_text_ = "the replies together passed their bound of " + std::to_string(max_total_bytes_) +
                                     " bytes",
                       make_error_code(remote_error::too_large);
            char buffer[16384];
            ssize_t n;
            if (receive_slice_.count() > 0 && remaining(deadline) > receive_slice_) {
                // The common case: one recv, which the socket's timeout (receive_slice_,
                // less than the time left) bounds; a stalled server gives EAGAIN, and the
                // loop goes on with what is left.
                n = ::recv(context_->fd, buffer, sizeof buffer, 0);
            } else {
                if (auto e = wait(POLLIN, deadline)) return e;
                n = ::recv(context_->fd, buffer, sizeof buffer, MSG_DONTWAIT);
            }
            if (n == 0) {
                // Closed before the reply began: the server went away; within it: a cut reply.
                error_text_ = taken ? "the server closed the connection within a reply"
                                    : "the server closed the connection";
                return make_error_code(taken ? remote_error::protocol : remote_error::refused);
            }
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
                error_text_ = std::strerror(errno);
                return make_error_code(errno == ECONNRESET ? remote_error::refused : remote_error::other);
            }
            taken += static_cast<std::size_t>(n);
            total_taken_ += static_cast<std::size_t>(n);
            if (redisReaderFeed(reader, buffer, static_cast<std::size_t>(n)) != REDIS_OK) {
                error_text_ = reader->errstr;
                return make_error_code(remote_error::protocol);
            }
        }
    }

    redis_endpoint endpoint_;
    redisContext* context_ = nullptr;
    unsigned generation_ = 0; ///< fork_generation() when context_ was opened
    std::chrono::microseconds receive_slice_{0}; ///< the socket's SO_RCVTIMEO; 0: every wait polls
    std::size_t total_taken_ = 0; ///< bytes the current exchange received
    std::size_t max_total_bytes_ = std::numeric_limits<std::size_t>::max();
    std::size_t echo_from_ = std::numeric_limits<std::size_t>::max(); ///< (echo_follows; set per exchange)
    std::string error_text_;
    array_bound array_bound_; ///< the table and state of every context's reader (bound_arrays)
};

} // namespace compile_cache::detail
