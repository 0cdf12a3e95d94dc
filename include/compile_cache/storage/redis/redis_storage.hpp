// compile_cache: a Storage on a Redis server or a Redis Cluster.
// Optional header: needs hiredis (0.14 or 1.x; Debian libhiredis-dev), linked by the
// CMake target compile_cache::redis. Not included by compile_cache/compile_cache.hpp.
//
// Values are stored as given (the cache's envelopes) under `NAMESPACE:` + the key in
// hex. Every call is bounded: connect by redis_options::connect_timeout, the whole call
// by redis_options::command_timeout; a read takes at most its bound (plus the reply's
// framing and one socket read) into memory. No member of the Storage interface throws.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/cache.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/concept.hpp>
#include <compile_cache/secret_file.hpp>
#include <compile_cache/storage/redis/detail/redis_cluster.hpp>
#include <compile_cache/storage/redis/detail/redis_connection.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace compile_cache {

/// A parsed Redis address:
///   `redis://[[user][:password]@]host[:port][/db]`   one server (port 6379, db 0 by default)
///   `unix:///path/to/redis.sock`                      one server on a Unix socket
///   `redis+cluster://[[user][:password]@]host:port[,host:port...]`   seed nodes of a cluster
/// A host may be a bracketed IPv6 address (`[::1]:6379`). The credentials end at the
/// last `@`, so a password may hold `@`, `:`, `?` and `/` as they are; `%XX` in them is
/// percent-decoded (as redis-cli does), and a `%` that encodes nothing is itself.
struct redis_address {
    enum class kind { server, unix_socket, cluster };
    struct node {
        std::string host;
        int port = 6379;
    };
    kind type = kind::server;
    std::vector<node> nodes;  ///< the server, or the cluster's seed nodes
    std::string socket_path;  ///< unix_socket only
    std::string user;
    std::string password;
    int db = 0;

    /// Parses `url`; on failure returns nullopt and sets `why` to a sentence that
    /// shows the address as redact() does (never a password).
    static std::optional<redis_address> parse(std::string_view url, std::string& why) {
        why.clear();
        auto bad = [&](std::string const& reason) -> std::optional<redis_address> {
            why = "\"" + redact(url) + "\" is not a Redis address (" + reason +
                  "; expected redis://[[user][:password]@]host[:port][/db], unix:///path.sock or "
                  "redis+cluster://host:port[,host:port...])";
            return std::nullopt;
        };
        redis_address a;
        std::string_view rest;
        if (starts_with(url, "redis://")) {
            a.type = kind::server, rest = url.substr(8);
        } else if (starts_with(url, "redis+cluster://")) {
            a.type = kind::cluster, rest = url.substr(16);
        } else if (starts_with(url, "unix://")) {
            a.type = kind::unix_socket, rest = url.substr(7);
            if (rest.empty() || rest.front() != '/') return bad("a Unix socket needs an absolute path");
            if (rest.find('?') != std::string_view::npos)
                return bad("query parameters are not supported: give a password in PREFIX_REMOTE_PASSWORD_FILE");
            a.socket_path.assign(rest);
            return a;
        } else {
            return bad("unknown scheme");
        }
        std::size_t const at = rest.rfind('@');
        if (at != std::string_view::npos) {
            std::string_view const userinfo = rest.substr(0, at);
            std::size_t const colon = userinfo.find(':');
            a.user = percent_decoded(userinfo.substr(0, colon));
            if (colon != std::string_view::npos) a.password = percent_decoded(userinfo.substr(colon + 1));
            rest = rest.substr(at + 1);
        }
        // Query parameters (`?password=...` in other clients) are not read here: refused,
        // and never echoed (redact() hides them).
        if (rest.find('?') != std::string_view::npos)
            return bad("query parameters are not supported: give a password as redis://user:password@host "
                       "or in PREFIX_REMOTE_PASSWORD_FILE");
        std::string_view hosts = rest;
        std::size_t const slash = rest.find('/');
        if (slash != std::string_view::npos) {
            hosts = rest.substr(0, slash);
            std::string_view const db = rest.substr(slash + 1);
            if (!db.empty()) {
                if (a.type == kind::cluster) return bad("a cluster has only database 0");
                auto const n = parse_number(db, 1 << 20);
                if (!n) return bad("the database must be a number");
                a.db = *n;
            }
        }
        if (hosts.empty()) return bad("no host");
        while (!hosts.empty()) {
            std::size_t const comma = hosts.find(',');
            std::string_view one = hosts.substr(0, comma);
            hosts = comma == std::string_view::npos ? std::string_view() : hosts.substr(comma + 1);
            if (comma != std::string_view::npos && hosts.empty()) return bad("an empty host after a comma");
            node n;
            std::string_view port;
            if (!one.empty() && one.front() == '[') {
                std::size_t const close = one.find(']');
                if (close == std::string_view::npos) return bad("an unclosed [ in an IPv6 host");
                n.host.assign(one.substr(1, close - 1));
                one.remove_prefix(close + 1);
                if (!one.empty()) {
                    if (one.front() != ':') return bad("junk after an IPv6 host");
                    port = one.substr(1);
                    if (port.empty()) return bad("an empty port");
                }
            } else {
                std::size_t const colon = one.find(':');
                n.host.assign(one.substr(0, colon));
                if (colon != std::string_view::npos) {
                    port = one.substr(colon + 1);
                    if (port.empty()) return bad("an empty port");
                }
            }
            if (n.host.empty()) return bad("an empty host");
            if (!port.empty()) {
                auto const p = parse_number(port, 65535);
                if (!p || *p == 0) return bad("the port must be a number from 1 to 65535");
                n.port = *p;
            }
            a.nodes.push_back(std::move(n));
        }
        if (a.type == kind::server && a.nodes.size() != 1) return bad("one host for redis://; use redis+cluster:// for several");
        return a;
    }

    /// The address with its password (never shown) replaced by `***`; a user given
    /// without a password is not shown either (some write the password there).
    std::string describe() const {
        std::string s = type == kind::server ? "redis://" : type == kind::cluster ? "redis+cluster://" : "unix://";
        if (type == kind::unix_socket) return s + socket_path + (password.empty() ? "" : " (with a password)");
        if (!password.empty()) s += user + ":***@";
        else if (!user.empty()) s += "***@";
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (i) s += ',';
            bool const v6 = nodes[i].host.find(':') != std::string::npos;
            s += (v6 ? "[" + nodes[i].host + "]" : nodes[i].host) + ":" + std::to_string(nodes[i].port);
        }
        if (db != 0) s += "/" + std::to_string(db);
        return s;
    }

    /// A URL as given, safe to show even when it does not parse: whatever lies between
    /// `://` and the last `@` is reduced to the user name and `:***` (to `***` when it
    /// has no `:`, or when the user name would hold a `%`, `?` or `/`), and a query
    /// after the host (`?...`) to `?***`.
    static std::string redact(std::string_view url) {
        std::size_t const scheme = url.find("://");
        std::size_t const start = scheme == std::string_view::npos ? 0 : scheme + 3;
        std::string out(url.substr(0, start));
        std::string_view rest = url.substr(start);
        std::size_t const at = rest.rfind('@');
        if (at != std::string_view::npos) {
            std::string_view const userinfo = rest.substr(0, at);
            std::size_t const colon = userinfo.find(':');
            std::string_view const user = userinfo.substr(0, colon);
            bool const plain_user = user.find_first_of("%?/") == std::string_view::npos;
            out += colon != std::string_view::npos && plain_user ? std::string(user) + ":***@" : std::string("***@");
            rest = rest.substr(at + 1);
        }
        std::size_t const query = rest.find('?');
        if (query != std::string_view::npos) return out + std::string(rest.substr(0, query)) + "?***";
        return out + std::string(rest);
    }

private:
    static bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
    static int hex_digit(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
    /// `%XX` decoded; any other `%` kept as it is.
    static std::string percent_decoded(std::string_view s) {
        std::string out;
        for (std::size_t i = 0; i < s.size(); ++i) {
            if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
                out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
                i += 2;
            } else {
                out += s[i];
            }
        }
        return out;
    }
    static std::optional<int> parse_number(std::string_view s, int max) {
        if (s.empty() || s.size() > 9) return std::nullopt;
        int v = 0;
        for (char c : s) {
            if (c < '0' || c > '9') return std::nullopt;
            v = v * 10 + (c - '0');
        }
        if (v > max) return std::nullopt;
        return v;
    }
};

/// The longest timeout a redis_storage takes (connect or call): 10 minutes. A longer one
/// is a mistake (and would overflow a deadline), refused.
inline constexpr std::chrono::milliseconds redis_max_timeout{600000};

/// The settings of a redis_storage.
struct redis_options {
    std::string url;                                  ///< see redis_address
    std::string password;                             ///< when set, replaces the URL's password
    std::string name_space = "compile_cache";         ///< keys are `name_space:` + key hex
    std::chrono::milliseconds connect_timeout{100};   ///< for each connection attempt
    std::chrono::milliseconds command_timeout{1000};  ///< for a whole call, connecting and retries included
    std::chrono::seconds ttl{0};                      ///< expiry of a stored value (SET ... EX); 0: none
    /// A listing (the Storage member `list`: SCAN on every master) gives up, as an
    /// error, after this many SCAN calls in all (a server whose cursor never comes back
    /// to 0), or once this long has passed (checked before each call, itself bounded by
    /// command_timeout).
    std::uint64_t listing_max_calls = std::uint64_t{1} << 20; ///< with COUNT 1000: a billion names
    std::chrono::milliseconds listing_timeout{std::chrono::minutes(10)};
};

/// What the last failing call of a redis_storage saw (for a log line; no password).
struct redis_failure {
    std::error_code error;
    std::string text;
};

/// A Storage on one Redis server or on a Redis Cluster (see redis_address).
///
/// `read` sends `GETRANGE k 0 max_size`: a value longer than `max_size` is `too_large`
/// (with redis_errc::too_large) and no more than max_size + 1 of its bytes travel. An
/// empty value reads as absent (GETRANGE does not tell it from no value; the cache never
/// stores one). Failures are `read_status::error` / an error_code of redis_category()
/// (redis_errc) for a tier to count. A connection that failed is reconnected on the next
/// call. Thread-safe: each server's connection is used by one call at a time, a call
/// waiting for it no longer than its command timeout.
///
/// Cluster: a key goes to the node serving its slot (CRC16, hash tags honoured) per the
/// slot map learnt with CLUSTER SLOTS from the seed nodes, one connection per node;
/// `MOVED` refreshes the map and retries once on the node named, `ASK` sends ASKING and
/// retries once there. A node down fails only the keys of its slots: a node that refused
/// or timed out is not called for 1 s (its keys fail at once, redis_errc::node_down,
/// which partial_failure() tells a tier is not the whole cluster's failure) and the slot
/// map is learnt again (a failover's new master takes its slots). When every master is
/// out of reach, or no node tells the slot map, the error is the node's own (refused,
/// timeout): the whole cluster is failing.
///
/// A reply of the wrong type for its command, or one more reply than commands, means
/// the connection is out of step: it is closed and the call fails as `protocol`.
class redis_storage {
public:
    /// No server: every call fails (redis_errc::other). What a disabled cache holds.
    redis_storage() = default;

    /// Throws std::invalid_argument (its message shows no password) when the URL does
    /// not parse or a timeout is not positive or longer than redis_max_timeout.
    /// Connects on first use, not here.
    explicit redis_storage(redis_options options) : state_(std::make_unique<state>()) {
        std::string why;
        auto address = redis_address::parse(options.url, why);
        if (!address) throw std::invalid_argument(why);
        if (options.connect_timeout.count() <= 0 || options.command_timeout.count() <= 0)
            throw std::invalid_argument("compile_cache: Redis timeouts must be positive");
        if (options.connect_timeout > redis_max_timeout || options.command_timeout > redis_max_timeout)
            throw std::invalid_argument("compile_cache: Redis timeouts must be at most " +
                                        std::to_string(redis_max_timeout.count() / 1000) + " s");
        if (!options.password.empty()) address->password = options.password;
        options.url.clear(); // (holds the password; the address keeps it where it is needed)
        state_->address = std::move(*address);
        state_->options = std::move(options);
        state_->options.password.clear();
        state_->prefix = state_->options.name_space + ":";
        auto const& a = state_->address;
        if (a.type == redis_address::kind::unix_socket) {
            state_->add_node(detail::redis_endpoint{{}, 0, a.socket_path, a.user, a.password, a.db});
        } else {
            for (auto const& n : a.nodes)
                state_->add_node(detail::redis_endpoint{n.host, n.port, {}, a.user, a.password, a.db});
        }
    }

    explicit redis_storage(std::string url) : redis_storage(make_options(std::move(url))) {}

    redis_storage(redis_storage&&) noexcept = default;
    redis_storage& operator=(redis_storage&&) noexcept = default;

    /// The storage the environment asks for (settings.hpp): `PREFIX_REMOTE` (the URL;
    /// an off value: not configured), `PREFIX_REMOTE_PASSWORD_FILE`,
    /// `PREFIX_REMOTE_NAMESPACE`, `PREFIX_REMOTE_CONNECT_TIMEOUT` and
    /// `PREFIX_REMOTE_TIMEOUT` (durations), `PREFIX_REMOTE_TTL` (seconds); see
    /// redis_options_from_env. A URL or password file that cannot be used is off, with the
    /// reason (never showing a password). So is a server whose entries would not be
    /// authenticated (storage_settings::remote_trusted false: no `PREFIX_SECRET_FILE` and
    /// no `PREFIX_REMOTE_INSECURE=1`), before its other settings are read. Connects on
    /// first use, not here.
    static from_env_result<redis_storage> from_env(storage_settings const& settings) {
        if (settings.env.is_off("_REMOTE")) return from_env_result<redis_storage>::not_configured();
        if (!settings.cache_off.empty()) return from_env_result<redis_storage>::off(settings.cache_off);
        // What a shared server returns runs as code here: only with authenticated entries,
        // or when PREFIX_REMOTE_INSECURE says it is trusted.
        if (!settings.remote_trusted) return from_env_result<redis_storage>::off(settings.untrusted_remote_reason());
        from_env_result<redis_options> options = redis_options_from_env(settings.env);
        if (!options) return from_env_result<redis_storage>::off(options.why_off());
        return from_env_result<redis_storage>(redis_storage(*std::move(options)));
    }

    /// What from_env reads, one line each, for a host's --help.
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        std::string const p(prefix);
        return {
            {p + "_REMOTE", "the Redis server: redis://[[user][:password]@]host[:port][/db], unix:///path.sock or "
                            "redis+cluster://host:port[,host:port...]; unset or off: none"},
            {p + "_REMOTE_PASSWORD_FILE", "a file holding the Redis password (a trailing newline is dropped)"},
            {p + "_REMOTE_NAMESPACE", "prefix of the keys on the server (default compile_cache)"},
            {p + "_REMOTE_CONNECT_TIMEOUT", "connect timeout, ms or with s (default 100)"},
            {p + "_REMOTE_TIMEOUT", "timeout of each call to the server, ms or with s (default 1000)"},
            {p + "_REMOTE_TTL", "expiry of stored values in seconds (default 0: none)"},
            {p + "_REMOTE_INSECURE", "1 uses the server without a secret (only for a server that only trusted "
                                     "machines can write)"},
        };
    }

    /// The redis_options the environment asks for; not configured when `PREFIX_REMOTE` is
    /// off; off, with the reason, when its URL does not parse or the password file cannot
    /// be read. A bad timeout or TTL is one line through `env`, and the default.
    static from_env_result<redis_options> redis_options_from_env(settings_reader const& env);

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        out.clear();
        if (!state_) return {read_status::error, make_error_code(redis_errc::other)};
        try {
            // (An unbounded read asks for what a Redis string can hold at most.)
            std::size_t const bound = std::min<std::size_t>(max_size, std::size_t(1) << 40);
            std::string const name = redis_key(k);
            std::string const end = std::to_string(bound);
            call c = run(name, {"GETRANGE", name, "0", end}, bound + 64);
            if (c.error) return {read_status::error, c.error};
            redisReply const* r = c.reply.get();
            if (r->type == REDIS_REPLY_ERROR) return {read_status::error, error_reply(r)};
            if (r->type == REDIS_REPLY_NIL) return {read_status::absent, {}};
            if (r->type != REDIS_REPLY_STRING)
                return {read_status::error, record(redis_errc::protocol, "GETRANGE did not return a string")};
            if (r->len == 0) return {read_status::absent, {}};
            if (r->len > max_size) return {read_status::too_large, make_error_code(redis_errc::too_large)};
            out.assign(r->str, r->len);
            return {read_status::found, {}};
        } catch (...) {
            out.clear();
            return {read_status::error, make_error_code(redis_errc::other)};
        }
    }

    std::error_code write(key const& k, std::string_view bytes) noexcept {
        if (!state_) return make_error_code(redis_errc::other);
        try {
            std::string const name = redis_key(k);
            std::string const ttl = std::to_string(state_->options.ttl.count());
            detail::redis_command command{"SET", name, bytes};
            if (state_->options.ttl.count() > 0) command.insert(command.end(), {"EX", ttl});
            return simple(name, std::move(command));
        } catch (...) {
            return make_error_code(redis_errc::other);
        }
    }

    std::error_code remove(key const& k) noexcept {
        if (!state_) return make_error_code(redis_errc::other);
        try {
            std::string const name = redis_key(k);
            return simple(name, {"DEL", name});
        } catch (...) {
            return make_error_code(redis_errc::other);
        }
    }

    /// Every entry of this storage's namespace (on every master of a cluster), with its
    /// size and last use: the optional Storage member `list` (storage/concept.hpp). Names
    /// come from `SCAN ... MATCH namespace:*` (names that are not `namespace:` + a key in
    /// hex are skipped); each page's sizes and idle times are asked in one pipelined
    /// exchange (`OBJECT IDLETIME`, which leaves the server's LRU clock alone, then
    /// `STRLEN`, which on servers before 7.2 counts as a use for `maxmemory` eviction).
    /// last_use_s is 0 when the server does not track idle time (an LFU policy). Each
    /// exchange is bounded by the command timeout; entries written or evicted meanwhile
    /// may or may not be listed, and one may be listed twice (SCAN's guarantees). Stops
    /// at the first failure, which it returns; past redis_options::listing_max_calls
    /// SCAN calls (`protocol`) or listing_timeout (`timeout`) too.
    std::error_code list(std::vector<stored_entry>& out) const noexcept {
        // Logically const: only the connections behind state_ change, never an entry.
        auto& self = const_cast<redis_storage&>(*this);
        return self.scan_pages([&](std::size_t index, std::vector<key> const& page,
                                   std::vector<std::string> const& names) -> std::error_code {
            std::vector<detail::redis_command> commands;
            for (std::string const& name : names) {
                commands.push_back({"OBJECT", "IDLETIME", name});
                commands.push_back({"STRLEN", name});
            }
            std::vector<detail::redis_reply_ptr> replies;
            auto const deadline = detail::redis_clock::now() + state_->options.command_timeout;
            if (auto e = self.pipeline_on(index, commands, replies, std::size_t(1) << 20, deadline)) return e;
            std::int64_t const now = std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count();
            for (std::size_t i = 0; i < page.size() && 2 * i + 1 < replies.size(); ++i) {
                redisReply const* idle = replies[2 * i].get();
                redisReply const* length = replies[2 * i + 1].get();
                // Gone since the SCAN (evicted, expired, moved to another master): not listed.
                if (length->type != REDIS_REPLY_INTEGER || length->integer <= 0) continue;
                stored_entry e;
                e.k = page[i];
                e.size = static_cast<std::uint64_t>(length->integer);
                if (idle->type == REDIS_REPLY_INTEGER) e.last_use_s = now - idle->integer;
                out.push_back(e);
            }
            return {};
        });
    }

    /// Calls `visit(key const&)` for each entry in this storage's namespace.
    template <class Visit>
    [[deprecated("use list(std::vector<stored_entry>&), the Storage listing member")]] std::error_code
    for_each_entry(Visit&& visit) noexcept {
        return scan_pages([&](std::size_t, std::vector<key> const& page, std::vector<std::string> const&) {
            for (key const& k : page) visit(k);
            return std::error_code();
        });
    }

    /// The address, password hidden, and the namespace: for logs and --stats.
    std::string describe() const {
        if (!state_) return "no Redis server";
        return state_->address.describe() + " (namespace " + state_->options.name_space + ")";
    }
    /// The settings (the password left out). Not on a default-constructed storage.
    redis_options const& options() const noexcept { return state_->options; }
    bool is_cluster() const noexcept { return state_ && state_->address.type == redis_address::kind::cluster; }

    /// The last failure any call saw, with a text for a log line.
    redis_failure last_failure() const {
        if (!state_) return {make_error_code(redis_errc::other), "no Redis server"};
        std::lock_guard<std::mutex> lock(state_->failure_mutex);
        return state_->failure;
    }

    /// Whether `e`, from a call of this storage, failed only a part of it (one node of a
    /// cluster; the others answer): a tier keeps using the storage, counting the error.
    static bool partial_failure(std::error_code const& e) noexcept { return e == redis_errc::node_down; }

    /// The name of a key on the server: `namespace:` + hex.
    std::string redis_key(key const& k) const { return state_->prefix + k.hex(); }

private:
    static redis_options make_options(std::string url) {
        redis_options o;
        o.url = std::move(url);
        return o;
    }

    struct node {
        explicit node(detail::redis_endpoint e) : connection(std::move(e)) {}
        std::timed_mutex mutex;
        detail::redis_connection connection;
        // A cluster node's health: after a refusal or a timeout it rests until resting_until.
        std::mutex health_mutex;
        detail::redis_clock::time_point resting_until{};
        std::error_code last_error;
    };
    /// How long a cluster node that failed is not called.
    static constexpr std::chrono::milliseconds node_rest{1000};

    struct state {
        redis_address address;
        redis_options options;
        std::string prefix;
        std::deque<node> nodes; ///< grows only (under map_mutex), so references stay valid
        std::timed_mutex map_mutex;
        std::vector<std::uint16_t> slot_owner; ///< node index + 1 per slot; 0: unknown (cluster)
        std::vector<std::size_t> masters;      ///< the nodes that own slots in slot_owner
        bool map_loaded = false;
        detail::redis_clock::time_point last_refresh{};
        std::error_code refresh_error;         ///< why the last refresh failed (refused, timeout...)
        std::string refresh_error_text;
        std::mutex failure_mutex;
        redis_failure failure;
        std::atomic<bool> cluster_member{false}; ///< a redis:// server answered MOVED or ASK

        std::size_t add_node(detail::redis_endpoint e) {
            for (std::size_t i = 0; i < nodes.size(); ++i)
                if (nodes[i].connection.endpoint().host == e.host && nodes[i].connection.endpoint().port == e.port &&
                    nodes[i].connection.endpoint().socket_path == e.socket_path)
                    return i;
            nodes.emplace_back(std::move(e));
            return nodes.size() - 1;
        }
    };

    struct call {
        std::error_code error;
        detail::redis_reply_ptr reply;
    };
    static call failed(std::error_code e) {
        call c;
        c.error = e;
        return c;
    }

    std::error_code record(std::error_code e, std::string text) const {
        try {
            std::lock_guard<std::mutex> lock(state_->failure_mutex);
            state_->failure = {e, std::move(text)};
        } catch (...) {
        }
        return e;
    }
    std::error_code record(redis_errc e, std::string text) const { return record(make_error_code(e), std::move(text)); }

    std::error_code error_reply(redisReply const* r) const {
        std::string text(r->str, r->len);
        redis_errc why = detail::classify_error_reply(text);
        if (text.find("exceeds maximum allowed size") != std::string::npos) why = redis_errc::too_large;
        return record(why, std::move(text));
    }

    std::error_code simple(std::string const& name, detail::redis_command command) {
        call c = run(name, std::move(command), 4096);
        if (c.error) return c.error;
        if (c.reply->type == REDIS_REPLY_ERROR) return error_reply(c.reply.get());
        return {};
    }

    /// SCANs the namespace on every master (the one server, or each master of a
    /// cluster) and calls `page(master index, keys, their names)` for each non-empty page
    /// of keys; stops at the first error, a page's too (an exception: redis_errc::other).
    template <class Page>
    std::error_code scan_pages(Page&& page) noexcept {
        if (!state_) return make_error_code(redis_errc::other);
        try {
            std::vector<std::size_t> masters{0};
            if (is_cluster()) {
                auto const deadline = detail::redis_clock::now() + state_->options.command_timeout;
                if (!owner(0, deadline)) return record(redis_errc::other, "the cluster's slot map is not known");
                std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
                if (!lock.try_lock_until(deadline)) return record(redis_errc::timeout, "waited too long for the slot map");
                masters.clear();
                for (std::uint16_t owner_index : state_->slot_owner)
                    if (owner_index != 0 && std::find(masters.begin(), masters.end(), owner_index - 1u) == masters.end())
                        masters.push_back(owner_index - 1u);
            }
            std::string pattern;
            for (char c : state_->prefix) {
                if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
                pattern += c;
            }
            pattern += '*';
            auto const listing_deadline = detail::redis_clock::now() + state_->options.listing_timeout;
            std::uint64_t calls = 0;
            for (std::size_t index : masters) {
                std::string cursor = "0";
                do {
                    // A server whose cursor never comes back to 0 (or an endless keyspace)
                    // ends the listing here, never in a loop without end.
                    if (calls == state_->options.listing_max_calls)
                        return record(redis_errc::protocol, "SCAN did not finish after " + std::to_string(calls) +
                                                                " calls (listing_max_calls); the listing is incomplete");
                    if (detail::redis_clock::now() >= listing_deadline)
                        return record(redis_errc::timeout,
                                      "SCAN did not finish within " +
                                          std::to_string(state_->options.listing_timeout.count()) +
                                          " ms (listing_timeout); the listing is incomplete");
                    ++calls;
                    auto const deadline = detail::redis_clock::now() + state_->options.command_timeout;
                    call c = exchange_on(index, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, std::size_t(4) << 20,
                                         deadline, false, true);
                    if (c.error) return c.error;
                    redisReply const* r = c.reply.get();
                    if (r->type == REDIS_REPLY_ERROR) return error_reply(r);
                    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
                        r->element[1]->type != REDIS_REPLY_ARRAY)
                        return record(redis_errc::protocol, "SCAN did not return a cursor and names");
                    cursor.assign(r->element[0]->str, r->element[0]->len);
                    std::vector<key> keys;
                    std::vector<std::string> names;
                    for (std::size_t i = 0; i < r->element[1]->elements; ++i) {
                        redisReply const* name = r->element[1]->element[i];
                        if (name->type != REDIS_REPLY_STRING) continue;
                        std::string_view const text(name->str, name->len);
                        if (text.substr(0, state_->prefix.size()) != state_->prefix) continue;
                        if (auto k = key::from_hex(text.substr(state_->prefix.size()))) {
                            keys.push_back(*k);
                            names.emplace_back(text);
                        }
                    }
                    if (!keys.empty())
                        if (std::error_code e = page(index, static_cast<std::vector<key> const&>(keys),
                                                     static_cast<std::vector<std::string> const&>(names)))
                            return e;
                } while (cursor != "0");
            }
            return {};
        } catch (...) {
            return make_error_code(redis_errc::other);
        }
    }

    /// Several commands sent to node `index` at once, their replies in order.
    /// `expected_last`: the reply types (bit 1 << REDIS_REPLY_...) the last command may
    /// have besides an error; another type closes the connection (it is out of step) and
    /// fails as `protocol`. 0: any.
    std::error_code pipeline_on(std::size_t index, std::vector<detail::redis_command> const& commands,
                                std::vector<detail::redis_reply_ptr>& replies, std::size_t max_reply,
                                detail::redis_clock::time_point deadline, bool arrays = false,
                                unsigned expected_last = 0) {
        node* n = nullptr;
        {
            // The deque only grows under map_mutex; reading an element needs no lock
            // once its index is known, but taking the address must not race a push_back.
            std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
            if (!lock.try_lock_until(deadline)) return record(redis_errc::timeout, "waited too long for the slot map");
            n = &state_->nodes[index];
        }
        std::unique_lock<std::timed_mutex> lock(n->mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return record(redis_errc::timeout, "waited too long for the connection");
        if (auto e = n->connection.exchange(commands, replies, max_reply, deadline, state_->options.connect_timeout,
                                            arrays))
            return record(e, describe_node(n->connection.endpoint()) + ": " + n->connection.last_error_text());
        if (expected_last != 0 && !replies.empty()) {
            int const type = replies.back()->type;
            if (type != REDIS_REPLY_ERROR && (type < 0 || type > 31 || !(expected_last & (1u << type)))) {
                n->connection.close();
                replies.clear();
                return record(redis_errc::protocol,
                              describe_node(n->connection.endpoint()) + ": a reply of the wrong type to " +
                                  std::string(commands.back().front()) +
                                  " (the connection was out of step; it is closed)");
            }
        }
        return {};
    }

    static std::string describe_node(detail::redis_endpoint const& e) {
        if (!e.socket_path.empty()) return e.socket_path;
        bool const v6 = e.host.find(':') != std::string::npos;
        return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
    }

    /// The reply types a command of this storage may get besides an error (see pipeline_on).
    static unsigned expected_replies(std::string_view command) noexcept {
        auto bit = [](int type) { return 1u << static_cast<unsigned>(type); };
        if (command == "GETRANGE" || command == "GET") return bit(REDIS_REPLY_STRING) | bit(REDIS_REPLY_NIL);
        if (command == "SET") // (OK; nil after NX/XX; the old value after GET)
            return bit(REDIS_REPLY_STATUS) | bit(REDIS_REPLY_NIL) | bit(REDIS_REPLY_STRING);
        if (command == "DEL" || command == "EXISTS" || command == "STRLEN") return bit(REDIS_REPLY_INTEGER);
        return 0;
    }

    /// One exchange with node `index`: the command, or ASKING then the command.
    call exchange_on(std::size_t index, detail::redis_command const& command, std::size_t max_reply,
                     detail::redis_clock::time_point deadline, bool asking, bool arrays = false) {
        std::vector<detail::redis_command> commands;
        if (asking) commands.push_back({"ASKING"});
        commands.push_back(command);
        std::vector<detail::redis_reply_ptr> replies;
        call c;
        c.error = pipeline_on(index, commands, replies, max_reply, deadline, arrays,
                              command.empty() ? 0u : expected_replies(command.front()));
        if (!c.error) c.reply = std::move(replies.back());
        return c;
    }

    call run(std::string const& name, detail::redis_command command, std::size_t max_reply) {
        auto const deadline = detail::redis_clock::now() + state_->options.command_timeout;
        if (!is_cluster()) return run_on_server(command, max_reply, deadline);
        std::uint16_t const slot = detail::redis_hash_slot(name);
        std::optional<std::size_t> target = owner(slot, deadline);
        if (!target) return failed(unserved(slot));
        if (auto e = resting(*target)) return failed(e);
        bool asking = false;
        for (int attempt = 0;; ++attempt) {
            call c = exchange_on(*target, command, max_reply, deadline, asking);
            if (c.error) {
                if (c.error == redis_errc::refused || c.error == redis_errc::timeout) {
                    want_refresh();
                    c.error = node_failed(*target, c.error);
                }
                return c;
            }
            node_answered(*target);
            if (c.reply->type != REDIS_REPLY_ERROR) return c;
            auto redirect = detail::parse_redis_redirection(std::string_view(c.reply->str, c.reply->len));
            if (!redirect || attempt == 1) {
                if (redirect) c.error = record(redis_errc::other, "redirected twice for slot " + std::to_string(slot));
                return c;
            }
            if (redirect->host.empty()) redirect->host = node_host(*target, deadline);
            auto next = node_for(redirect->host, redirect->port, deadline);
            if (!next) {
                c.reply.reset();
                c.error = record(redis_errc::timeout, "waited too long for the slot map");
                return c;
            }
            asking = redirect->ask;
            if (!asking) {
                refresh(deadline, *target);
                set_owner(redirect->slot, *next, deadline);
            }
            target = next;
        }
    }

    /// A call to the one server of a redis:// address. A server that redirects (MOVED,
    /// ASK) is a cluster's node, which serves only some keys: from then on every call
    /// fails at once as redis_errc::cluster_node, whose text says to use redis+cluster://,
    /// so that neither entries nor records are read from a part of the cluster only.
    call run_on_server(detail::redis_command const& command, std::size_t max_reply,
                       detail::redis_clock::time_point deadline) {
        if (state_->cluster_member.load(std::memory_order_relaxed))
            return failed(make_error_code(redis_errc::cluster_node));
        call c = exchange_on(0, command, max_reply, deadline, false);
        if (c.error || c.reply->type != REDIS_REPLY_ERROR) return c;
        std::string_view const said(c.reply->str, c.reply->len);
        if (!detail::parse_redis_redirection(said)) return c;
        state_->cluster_member.store(true, std::memory_order_relaxed);
        // The node this storage talks to: a host and port, or a Unix socket (which has no
        // entry in address.nodes).
        std::string const where = describe_node(node_at(0).connection.endpoint());
        std::string const text = where + " is a node of a Redis Cluster (it answered \"" +
                                 std::string(said.substr(0, said.find(' '))) + "\"), which serves only some keys: " +
                                 "address the cluster as redis+cluster://" + where;
        return failed(record(redis_errc::cluster_node, text));
    }

    std::string node_host(std::size_t index, detail::redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return {};
        return state_->nodes[index].connection.endpoint().host;
    }

    std::optional<std::size_t> node_for(std::string const& host, int port, detail::redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return std::nullopt;
        auto const& a = state_->address;
        return state_->add_node(detail::redis_endpoint{host, port, {}, a.user, a.password, 0});
    }

    void set_owner(std::uint16_t slot, std::size_t index, detail::redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return;
        if (state_->slot_owner.size() == detail::redis_cluster_slots) {
            state_->slot_owner[slot] = static_cast<std::uint16_t>(index + 1);
            if (std::find(state_->masters.begin(), state_->masters.end(), index) == state_->masters.end())
                state_->masters.push_back(index);
        }
    }

    void want_refresh() {
        std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::try_to_lock);
        if (lock.owns_lock()) state_->map_loaded = false;
    }

    std::optional<std::size_t> owner(std::uint16_t slot, detail::redis_clock::time_point deadline) {
        {
            std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
            if (!lock.try_lock_until(deadline)) return std::nullopt;
            // A map that failed is learnt again, but not more than once a second.
            bool const due = !state_->map_loaded &&
                             (state_->slot_owner.empty() ||
                              detail::redis_clock::now() - state_->last_refresh > std::chrono::seconds(1));
            if (!due && !state_->slot_owner.empty() && state_->slot_owner[slot] != 0)
                return std::size_t(state_->slot_owner[slot] - 1);
            if (!due) return std::nullopt;
        }
        (void)refresh(deadline, std::nullopt);
        std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return std::nullopt;
        if (state_->slot_owner.empty() || state_->slot_owner[slot] == 0) return std::nullopt;
        return std::size_t(state_->slot_owner[slot] - 1);
    }

    /// Learns the slot map with CLUSTER SLOTS from the first node that answers (the
    /// known nodes, the one that just failed last). Its failure (the last node's error,
    /// or timeout when no time was left) is kept in refresh_error and returned.
    std::error_code refresh(detail::redis_clock::time_point deadline, std::optional<std::size_t> last) {
        std::size_t count;
        {
            std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
            if (!lock.try_lock_until(deadline)) return make_error_code(redis_errc::timeout);
            state_->last_refresh = detail::redis_clock::now();
            count = state_->nodes.size();
        }
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < count; ++i)
            if (!last || i != *last) order.push_back(i);
        if (last) order.push_back(*last);
        std::error_code why = make_error_code(redis_errc::timeout);
        std::string text = "no time was left to ask a node";
        for (std::size_t index : order) {
            if (detail::redis_clock::now() >= deadline) break;
            call c = exchange_on(index, {"CLUSTER", "SLOTS"}, std::size_t(1) << 20, deadline, false, true);
            if (c.error) {
                why = c.error;
                text = last_failure().text;
                continue;
            }
            if (c.reply->type == REDIS_REPLY_ERROR) {
                why = error_reply(c.reply.get());
                text = last_failure().text;
                continue;
            }
            if (c.reply->type == REDIS_REPLY_ARRAY && install_map(c.reply.get(), index, deadline)) return {};
            why = make_error_code(redis_errc::protocol);
            text = "CLUSTER SLOTS did not return a slot map";
        }
        std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
        if (lock.try_lock_until(deadline)) {
            state_->refresh_error = why;
            state_->refresh_error_text = text;
        }
        return why;
    }

    /// The error of a call whose slot no known node serves: while the slot map is not
    /// known, why no node told it (the cluster is out of reach: refused, timeout, auth...);
    /// with a map that leaves the slot out, `other`.
    std::error_code unserved(std::uint16_t slot) {
        std::error_code why;
        std::string text;
        {
            std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
            if (lock.try_lock_for(std::chrono::milliseconds(1)) && state_->slot_owner.empty()) {
                why = state_->refresh_error;
                text = state_->refresh_error_text;
            }
        }
        if (why) return record(why, "no node of the cluster told its slot map (" + text + ")");
        return record(redis_errc::other, "no cluster node serves slot " + std::to_string(slot));
    }

    /// A call to node `index` while it rests (it failed less than node_rest ago): the
    /// node's error, at once; node_down while another master has not failed.
    std::error_code resting(std::size_t index) {
        node& n = node_at(index);
        std::error_code last;
        {
            std::lock_guard<std::mutex> lock(n.health_mutex);
            if (detail::redis_clock::now() >= n.resting_until) return {};
            last = n.last_error;
        }
        std::string const where = describe_node(n.connection.endpoint());
        if (another_master_answers(index))
            return record(redis_errc::node_down, where + " failed less than " +
                                                     std::to_string(node_rest.count()) + " ms ago; its slots fail");
        return record(last, where + " and every other master of the cluster failed less than " +
                                std::to_string(node_rest.count()) + " ms ago");
    }

    /// Node `index` refused or timed out with `e`: it rests for node_rest. The answer is
    /// node_down while another master has not failed, else `e` (the cluster is failing).
    std::error_code node_failed(std::size_t index, std::error_code e) {
        node& n = node_at(index);
        std::string const text = last_failure().text;
        {
            std::lock_guard<std::mutex> lock(n.health_mutex);
            n.resting_until = detail::redis_clock::now() + node_rest;
            n.last_error = e;
        }
        if (!another_master_answers(index)) return e;
        return record(redis_errc::node_down, text + " (" + redis_errc_name(static_cast<redis_errc>(e.value())) +
                                                 "); only this node's slots fail, for " +
                                                 std::to_string(node_rest.count()) + " ms at least");
    }

    void node_answered(std::size_t index) {
        node& n = node_at(index);
        std::lock_guard<std::mutex> lock(n.health_mutex);
        n.resting_until = {};
    }

    /// Whether a master of the slot map other than `index` is not resting.
    bool another_master_answers(std::size_t index) {
        std::vector<std::size_t> masters;
        {
            std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
            if (!lock.try_lock_for(std::chrono::milliseconds(10))) return false;
            masters = state_->masters;
        }
        auto const now = detail::redis_clock::now();
        for (std::size_t m : masters) {
            if (m == index) continue;
            node& n = node_at(m);
            std::lock_guard<std::mutex> lock(n.health_mutex);
            if (now >= n.resting_until) return true;
        }
        return false;
    }

    node& node_at(std::size_t index) {
        // (The deque only grows, under map_mutex; an element's address never changes, and
        // index is one that was handed out, so this read does not race a push_back's
        // element, only its bookkeeping: taken under the lock, as pipeline_on does.)
        std::lock_guard<std::timed_mutex> lock(state_->map_mutex);
        return state_->nodes[index];
    }

    bool install_map(redisReply const* slots, std::size_t asked, detail::redis_clock::time_point deadline) {
        std::unique_lock<std::timed_mutex> lock(state_->map_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return false;
        std::vector<std::uint16_t> owners(detail::redis_cluster_slots, 0);
        std::string const asked_host = state_->nodes[asked].connection.endpoint().host;
        auto const& a = state_->address;
        for (std::size_t i = 0; i < slots->elements; ++i) {
            redisReply const* range = slots->element[i];
            if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) return false;
            redisReply const* from = range->element[0];
            redisReply const* to = range->element[1];
            redisReply const* master = range->element[2];
            if (from->type != REDIS_REPLY_INTEGER || to->type != REDIS_REPLY_INTEGER ||
                master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
                master->element[0]->type != REDIS_REPLY_STRING || master->element[1]->type != REDIS_REPLY_INTEGER)
                return false;
            if (from->integer < 0 || to->integer >= static_cast<long long>(detail::redis_cluster_slots) ||
                from->integer > to->integer)
                return false;
            std::string host(master->element[0]->str, master->element[0]->len);
            if (host.empty() || host == "?") host = asked_host;
            long long const port = master->element[1]->integer;
            if (port <= 0 || port > 65535) return false;
            std::size_t const index =
                state_->add_node(detail::redis_endpoint{host, static_cast<int>(port), {}, a.user, a.password, 0});
            if (index + 1 > 0xffff) return false;
            for (long long s = from->integer; s <= to->integer; ++s)
                owners[static_cast<std::size_t>(s)] = static_cast<std::uint16_t>(index + 1);
        }
        std::vector<std::size_t> masters;
        for (std::uint16_t o : owners)
            if (o != 0 && std::find(masters.begin(), masters.end(), std::size_t(o - 1u)) == masters.end())
                masters.push_back(o - 1u);
        state_->slot_owner = std::move(owners);
        state_->masters = std::move(masters);
        state_->map_loaded = true;
        return true;
    }

    std::unique_ptr<state> state_;
};

inline from_env_result<redis_options> redis_storage::redis_options_from_env(settings_reader const& env) {
    redis_options o;
    o.url = env.value("_REMOTE");
    if (detail::is_off(o.url)) return from_env_result<redis_options>::not_configured();
    std::string why;
    if (!redis_address::parse(o.url, why))
        return from_env_result<redis_options>::off(env.name("_REMOTE") + "=" + why + "; the remote is off");
    std::string const password_file = env.value("_REMOTE_PASSWORD_FILE");
    if (!password_file.empty()) {
        std::string const reason = read_secret_file(password_file, o.password);
        if (!reason.empty())
            return from_env_result<redis_options>::off(env.name("_REMOTE_PASSWORD_FILE") + "=\"" + password_file +
                                                       "\" cannot be used: " + reason + "; the remote is off");
        if (!o.password.empty() && o.password.back() == '\n') o.password.pop_back();
        if (!o.password.empty() && o.password.back() == '\r') o.password.pop_back();
    }
    std::string const name_space = env.value("_REMOTE_NAMESPACE");
    if (!name_space.empty()) o.name_space = name_space;
    auto positive = [&](char const* suffix, std::chrono::milliseconds fallback) {
        std::chrono::milliseconds const d = env.milliseconds(suffix, fallback);
        if (d.count() > 0 && d <= redis_max_timeout) return d;
        env.report_value(suffix, env.value(suffix),
                         std::string(d.count() > 0 ? "is longer than a timeout may be (at most " +
                                                         std::to_string(redis_max_timeout.count() / 1000) + " s)"
                                                   : "is not a positive duration") +
                             "; using the default, " + std::to_string(fallback.count()) + " ms");
        return fallback;
    };
    o.connect_timeout = positive("_REMOTE_CONNECT_TIMEOUT", o.connect_timeout);
    o.command_timeout = positive("_REMOTE_TIMEOUT", o.command_timeout);
    std::string const ttl = env.value("_REMOTE_TTL");
    if (!ttl.empty()) {
        if (std::optional<std::uint64_t> const seconds = parse_whole_number(ttl, 10))
            o.ttl = std::chrono::seconds(static_cast<std::chrono::seconds::rep>(*seconds));
        else
            env.report_value("_REMOTE_TTL", ttl, "is not a number of seconds; using the default, 0 (no expiry)");
    }
    return from_env_result<redis_options>(std::move(o));
}

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::redis_storage>::value);
static_assert(compile_cache::detail::has_list<compile_cache::redis_storage>::value);
