// compile_cache: the address of an HTTP(S) cache server, `http[s]://[user@]host[:port][/path]`,
// as the HTTP storage reads it from PREFIX_REMOTE (parsed apart from the storage, so that
// a host or a tool can check one without libcurl).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace compile_cache {

/// A parsed `http://` or `https://` URL: no password (refused: see parse), no query, no
/// fragment. `base()` is the URL every entry's name is appended to, ending in `/`.
struct http_address {
    bool tls = false;     ///< https
    std::string user;     ///< for basic authentication (the password comes from a file)
    std::string host;     ///< a name, an IPv4 address, or an IPv6 address in brackets
    std::uint16_t port = 0; ///< 80 or 443 when the URL names none
    std::string path = "/"; ///< starts and ends with `/`

    /// Whether `url` names an HTTP server at all (`http://` or `https://`, any case):
    /// the scheme that selects the HTTP storage among the remotes.
    static bool is_http_url(std::string_view url) noexcept {
        auto starts = [&](std::string_view scheme) {
            if (url.size() < scheme.size()) return false;
            for (std::size_t i = 0; i < scheme.size(); ++i) {
                char c = url[i];
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
                if (c != scheme[i]) return false;
            }
            return true;
        };
        return starts("http://") || starts("https://");
    }

    /// Parses `url`; on failure nullopt and `why` says what is wrong in one phrase that
    /// never repeats the URL (it may hold a password). A password in the URL
    /// (`https://user:secret@host/`) is refused: every line that names the server would
    /// show it; it belongs in PREFIX_REMOTE_PASSWORD_FILE.
    static std::optional<http_address> parse(std::string_view url, std::string& why) {
        why.clear();
        http_address a;
        std::string_view rest;
        if (!is_http_url(url)) {
            why = "is not an http:// or https:// URL";
            return std::nullopt;
        }
        std::size_t const colon = url.find(':');
        a.tls = colon == 5;
        rest = url.substr(colon + 3);
        std::size_t const end_authority = rest.find_first_of("/?#");
        std::string_view authority = rest.substr(0, end_authority);
        std::string_view path = end_authority == std::string_view::npos ? std::string_view() : rest.substr(end_authority);
        std::size_t const at = authority.rfind('@');
        if (at != std::string_view::npos) {
            std::string_view const userinfo = authority.substr(0, at);
            if (userinfo.find(':') != std::string_view::npos) {
                why = "holds a password, which every line naming the server would show: give the user in the URL "
                      "(https://user@host/...) and the password in a file named by the _REMOTE_PASSWORD_FILE setting";
                return std::nullopt;
            }
            if (userinfo.empty()) {
                why = "has an empty user name before '@'";
                return std::nullopt;
            }
            a.user = std::string(userinfo);
            authority = authority.substr(at + 1);
        }
        std::string_view port;
        if (!authority.empty() && authority.front() == '[') {
            std::size_t const close = authority.find(']');
            if (close == std::string_view::npos) {
                why = "has an IPv6 address without its closing ']'";
                return std::nullopt;
            }
            a.host = std::string(authority.substr(0, close + 1));
            std::string_view const after = authority.substr(close + 1);
            if (!after.empty()) {
                if (after.front() != ':') {
                    why = "has something other than a port after its IPv6 address";
                    return std::nullopt;
                }
                port = after.substr(1);
                if (port.empty()) {
                    why = "has an empty port";
                    return std::nullopt;
                }
            }
        } else {
            std::size_t const c = authority.find(':');
            a.host = std::string(authority.substr(0, c));
            if (c != std::string_view::npos) {
                port = authority.substr(c + 1);
                if (port.empty()) {
                    why = "has an empty port";
                    return std::nullopt;
                }
            }
        }
        if (a.host.empty() || a.host == "[]") {
            why = "names no host";
            return std::nullopt;
        }
        for (char const c : a.host) {
            bool const ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                            c == '-' || c == '_' || c == '[' || c == ']' || c == ':' || c == '%';
            if (!ok) {
                why = "has a character a host name cannot hold";
                return std::nullopt;
            }
        }
        a.port = a.tls ? 443 : 80;
        if (!port.empty()) {
            std::uint32_t p = 0;
            for (char const c : port) {
                if (c < '0' || c > '9' || p > 65535) {
                    why = "has a port that is not a number from 1 to 65535";
                    return std::nullopt;
                }
                p = p * 10 + static_cast<std::uint32_t>(c - '0');
            }
            if (p == 0 || p > 65535) {
                why = "has a port that is not a number from 1 to 65535";
                return std::nullopt;
            }
            a.port = static_cast<std::uint16_t>(p);
        }
        if (path.find_first_of("?#") != std::string_view::npos) {
            why = "has a query or a fragment ('?' or '#'), which an entry's name cannot follow";
            return std::nullopt;
        }
        for (char const c : path) {
            if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f) {
                why = "has a space, a control character or a non-ASCII byte in its path (write it %-encoded)";
                return std::nullopt;
            }
        }
        a.path = path.empty() ? std::string("/") : std::string(path);
        if (a.path.back() != '/') a.path += '/';
        return a;
    }

    /// The URL entries are named under, ending in `/`, without the user: what lines
    /// and errors show.
    std::string base() const {
        std::string s = tls ? "https://" : "http://";
        s += host;
        if (port != (tls ? 443 : 80)) s += ":" + std::to_string(port);
        return s + path;
    }
};

} // namespace compile_cache
