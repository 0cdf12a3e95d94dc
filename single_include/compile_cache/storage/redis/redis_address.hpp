// compile_cache: a Redis address (`redis://`, `unix://`, `redis+cluster://`) parsed, shown
// without its password, and redacted when it does not parse. Part of the optional Redis
// storage, but needs only the standard library: a host may check an address with it alone.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compile_cache {

/// A parsed Redis address:
///   `redis://[[user][:password]@]host[:port][/db]`   one server (port 6379, db 0 by default)
///   `unix:///path/to/redis.sock`                      one server on a Unix socket
///   `redis+cluster://[[user][:password]@]host:port[,host:port...]`   seed nodes of a cluster
/// A scheme may be written in any case (`REDIS://`). A host may be a bracketed IPv6
/// address (`[::1]:6379`). The credentials end at the last `@`, so a password may hold
/// `@`, `:`, `?` and `/` as they are; `%XX` in them is percent-decoded (as redis-cli
/// does), and a `%` that encodes nothing is itself.
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
            // sockaddr_un's sun_path: 108 bytes with its NUL (a longer one would be cut short).
            if (rest.size() >= 108) return bad("a Unix socket's path must be shorter than 108 bytes");
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

    /// Whether `url` begins with one of the schemes parse() reads (`redis://`,
    /// `redis+cluster://`, `unix://`), in any case (a scheme is case-insensitive, RFC 3986
    /// 3.1): the URLs that are a Redis address's, parsed or not.
    static bool is_redis_url(std::string_view url) noexcept {
        return starts_with(url, "redis://") || starts_with(url, "redis+cluster://") || starts_with(url, "unix://");
    }

private:
    /// Whether `s` begins with `p` (a lower-case scheme), ASCII letters in any case.
    static bool starts_with(std::string_view s, std::string_view p) noexcept {
        if (s.size() < p.size()) return false;
        for (std::size_t i = 0; i < p.size(); ++i) {
            char c = s[i];
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            if (c != p[i]) return false;
        }
        return true;
    }
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

} // namespace compile_cache
