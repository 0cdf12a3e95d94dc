// compile_cache: a Storage on an HTTP(S) cache server (nginx or Apache with WebDAV,
// bazel-remote, an object store's HTTP gateway): GET reads, PUT writes, DELETE removes,
// WebDAV PROPFIND lists.
// Optional header: needs libcurl (Debian libcurl4-openssl-dev), linked by the CMake target
// compile_cache::http. Not included by compile_cache/compile_cache.hpp.
//
// Values are stored as given (the cache's envelopes) under the base URL, named by the
// key in hex (http_layout). Every call is bounded: connecting by http_options::connect_timeout,
// the whole exchange by http_options::timeout; a read takes at most its bound into memory
// (a larger body is refused while it streams in). No member of the Storage interface throws.
#pragma once

// ---- inlined compile_cache/detail/config.hpp
// compile_cache: what the library needs from the compiler, said first. Every public
// header includes this before anything else, so that a translation unit compiled with
// the wrong flags (llvm-config --cxxflags gives -std=c++14 -fno-exceptions) stops at
// one sentence naming the flag, not at a page of errors from inside the library.
// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_CONFIG_HPP
#define COMPILE_CACHE_DETAIL_CONFIG_HPP

#if defined(_MSVC_LANG)
#define COMPILE_CACHE_CPLUSPLUS _MSVC_LANG
#else
#define COMPILE_CACHE_CPLUSPLUS __cplusplus
#endif

#if COMPILE_CACHE_CPLUSPLUS < 201703L
#error "compile_cache: needs C++17 or later (-std=c++17); with llvm-config --cxxflags, replace its -std=c++14"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "compile_cache: needs exceptions (drop -fno-exceptions; llvm-config --cxxflags adds it, LLVM's headers do not need it)"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

// #error lets g++ and clang go on, into hundreds of errors from the library's code: a
// missing include is fatal to both, so compilation stops here, at the sentences.
#if defined(COMPILE_CACHE_WRONG_FLAGS)
#include <compile_cache: compilation stopped; fix the flags named above>
#endif

// Separate compilation (docs/design.md, "What including the library costs"): a host that
// defines COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit and includes
// <compile_cache/src.hpp> in exactly one gets the library's non-template functions
// compiled once, there, instead of parsed and instantiated in each translation unit.
// COMPILE_CACHE_DECL marks their declarations (inline in the default, header-only mode);
// their definitions are in impl/*.ipp files, compiled where COMPILE_CACHE_INCLUDE_IMPL is 1.
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#define COMPILE_CACHE_DECL
#if defined(COMPILE_CACHE_SOURCE)
#define COMPILE_CACHE_INCLUDE_IMPL 1
#else
#define COMPILE_CACHE_INCLUDE_IMPL 0
#endif
#else
#define COMPILE_CACHE_DECL inline
#define COMPILE_CACHE_INCLUDE_IMPL 1
#endif

// A build that mixes the modes, or has src.hpp in no translation unit or in two, is ill-formed
// (functions defined inline in some translation units and out of line in another, or not at
// all, or twice); it fails at link time with a symbol whose name says what to do:
// - every translation unit in separate-compilation mode references
//   compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit, which
//   src.hpp defines: "undefined reference" without src.hpp, "multiple definition" with two;
// - every header-only translation unit defines
//   compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none
//   in one COMDAT group (merged among them), and src.hpp defines it in another: "multiple
//   definition" when both kinds are linked together.
// (ELF, with GCC or Clang: the mark is a section-group directive of the assembler.)
#if defined(__GNUC__)
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
extern "C" char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
namespace compile_cache::detail {
namespace {
[[maybe_unused]] __attribute__((used)) char const* const separate_compilation_mark =
    &compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
} // namespace
} // namespace compile_cache::detail
#elif defined(__ELF__)
__asm__(".pushsection .rodata.compile_cache_header_only_mark,\"aG\",@progbits,compile_cache_header_only_mark,comdat\n"
        ".globl compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none\n"
        "compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none:\n"
        ".byte 0\n"
        ".popsection\n");
#endif
#endif

// A function each module (the main program, each shared library) has its own copy of,
// called within the module without going to another's: an ELF symbol of hidden visibility.
#if defined(__GNUC__) && defined(__ELF__)
#define COMPILE_CACHE_MODULE_LOCAL __attribute__((visibility("hidden")))
#else
#define COMPILE_CACHE_MODULE_LOCAL
#endif

// RTTI is checked by detail/config_rtti.hpp, in the headers that need it: the LLVM
// adapter's no-RTTI side (compile_cache/llvm/object_store.hpp, object_cache.hpp) does not.

#endif // COMPILE_CACHE_DETAIL_CONFIG_HPP
// ---- end of compile_cache/detail/config.hpp
#include <compile_cache/compile_cache.hpp>

#include <compile_cache/storage/http/detail/webdav_listing.hpp>
#include <compile_cache/storage/http/http_address.hpp>
#include <compile_cache/storage/http/http_errc.hpp>

#include <curl/curl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

/// Where an entry is named under the base URL (`PREFIX_REMOTE_LAYOUT`).
enum class http_layout {
    flat,   ///< `URL/<key hex>`
    fanout, ///< `URL/ab/<key hex>` (ab: the key's first two hex digits), for servers that slow down on big folders
    bazel,  ///< `URL/ac/<key hex>`: bazel-remote's action cache (our keys are SHA-256 digests)
};

/// Everything an http_storage needs; the defaults are the Redis tier's.
struct http_options {
    std::string url; ///< `http[s]://[user@]host[:port][/path]` (http_address; no password)
    http_layout layout = http_layout::flat;
    std::chrono::milliseconds connect_timeout{100}; ///< TCP and TLS connect
    std::chrono::milliseconds timeout{1000};        ///< a whole call, connecting and waiting for the connection included
    std::string ca_file;                            ///< PEM CA bundle to verify the server with; empty: the system's
    std::string cert_file;                          ///< client certificate (PEM); with key_file
    std::string key_file;                           ///< the client certificate's private key (PEM)
    /// Do not verify the server's certificate: anyone on the path can then read and change
    /// what the cache loads. One line says so (set_logger, from_env).
    bool tls_insecure = false;
    std::string password;   ///< basic authentication of the URL's user (read from a file by from_env)
    std::string token_file; ///< bearer token file, re-read whenever it changes (rotated tokens)
    bool follow_redirects = false; ///< follow 3xx (at most 5, http and https only); otherwise a 3xx is an error
    /// A listing (PROPFIND) gives up, as an error, past this long, this many bytes of
    /// answers or this many items (`<response>`s: entries, folders, other files) in all,
    /// over every folder it reads (the base, then each fan-out folder, each read once).
    std::chrono::milliseconds listing_timeout{std::chrono::minutes(10)};
    std::uint64_t listing_max_bytes = std::uint64_t{1} << 30;
    std::size_t listing_max_items = std::size_t{1} << 24;
    /// A batch read (http_storage::read_many) runs at most this many GETs at once, each on
    /// a connection of its own (kept alive for the next batch).
    std::size_t batch_connections = 8;
    /// A batch read takes at most this many bytes of bodies into memory in all, the bodies
    /// still streaming in counted at the most each may take: read_many's `max`, or less
    /// where this bound would not hold one `max` per connection the batch uses (its share:
    /// batch_max_bytes / that many connections). A GET starts only while the room left
    /// holds its share (one starts when none runs, with what is left), and a body past its
    /// share is answered as an error (too_large): a tier then reads that entry alone.
    std::size_t batch_max_bytes = std::size_t(256) << 20;
};

/// What the last failing call of an http_storage saw, for a log line: the method, the
/// URL (never credentials) and the status or libcurl's reason.
struct http_failure {
    std::error_code error;
    std::string text;
};

namespace detail {
/// curl_global_init once per process (libcurl >= 7.84 makes it thread-safe; the static
/// makes it once on older ones too). False when libcurl could not start.
inline bool http_global_init() noexcept {
    static bool const ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    return ok;
}

/// Whether this libcurl resolves names off the calling thread (threaded resolver or
/// c-ares: `AsynchDNS`), so that the connect timeout bounds a resolution.
inline bool http_resolves_asynchronously() noexcept {
    curl_version_info_data const* v = curl_version_info(CURLVERSION_NOW);
    return v && (v->features & CURL_VERSION_ASYNCHDNS) != 0;
}

/// Whether `host` (as http_address keeps it) is an address, which needs no resolution.
inline bool http_host_is_address(std::string const& host) noexcept {
    if (!host.empty() && host.front() == '[') return true;
    return !host.empty() && host.find_first_not_of("0123456789.") == std::string::npos;
}

/// Whether `host` (as http_address keeps it: lower or upper case, an IPv6 address in
/// brackets) names this machine for certain: `localhost`, an IPv4 address of 127.0.0.0/8,
/// `[::1]` or an IPv4-mapped one of 127.0.0.0/8. Any other name is not, whatever it
/// resolves to here (a name's address can change; the check asks no resolver).
inline bool http_host_is_loopback(std::string const& host) noexcept {
    if (host.size() == 9) {
        static char const localhost[] = "localhost";
        bool same = true;
        for (std::size_t i = 0; i < 9; ++i) {
            char c = host[i];
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            same = same && c == localhost[i];
        }
        if (same) return true;
    }
    char text[64] = {};
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        if (host.size() - 2 >= sizeof text) return false;
        std::memcpy(text, host.data() + 1, host.size() - 2);
        in6_addr a{};
        if (::inet_pton(AF_INET6, text, &a) != 1) return false;
        if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
        return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
    }
    if (host.size() >= sizeof text) return false;
    std::memcpy(text, host.data(), host.size());
    in_addr a{};
    if (::inet_pton(AF_INET, text, &a) != 1) return false;
    return (ntohl(a.s_addr) >> 24) == 127;
}

/// Whether a connection to `host` (as http_address keeps it) reaches this machine's
/// loopback: http_host_is_loopback, or an IPv4 address of 127.0.0.0/8 in a form that
/// inet_aton reads and inet_pton does not (`127.1`, `0x7f.1`, `2130706433`), which libcurl
/// and getaddrinfo read as such; or `localhost.`, or a name under `localhost` (RFC 6761,
/// which libcurl resolves to the loopback address itself).
inline bool http_host_reaches_loopback(std::string const& host) noexcept {
    if (http_host_is_loopback(host)) return true;
    std::size_t end = host.size();
    if (end != 0 && host[end - 1] == '.') --end; // (a fully qualified name)
    static char const under[] = ".localhost";
    std::size_t const n = sizeof under - 1;
    if (end == n - 1 || end > n) {
        std::size_t const from = end == n - 1 ? 1 : 0; // `localhost.` itself, or `NAME.localhost`
        bool same = true;
        for (std::size_t i = from; i < n; ++i) {
            char c = host[end - n + i];
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            same = same && c == under[i];
        }
        if (same) return true;
    }
    char text[64] = {};
    if (host.empty() || host.size() >= sizeof text) return false;
    std::memcpy(text, host.data(), host.size());
    in_addr a{};
    return ::inet_aton(text, &a) != 0 && (ntohl(a.s_addr) >> 24) == 127;
}

/// Whether the handle's last connection was one the kernel made to itself: a client
/// connecting to a loopback port where nothing listens is, now and then, given that port
/// as its source, and reads back what it sent. Its two ends are the same address.
inline bool http_connected_to_itself(CURL* h) noexcept {
    char* local_ip = nullptr;
    char* primary_ip = nullptr;
    long local_port = 0, primary_port = 0;
    if (curl_easy_getinfo(h, CURLINFO_LOCAL_IP, &local_ip) != CURLE_OK ||
        curl_easy_getinfo(h, CURLINFO_PRIMARY_IP, &primary_ip) != CURLE_OK ||
        curl_easy_getinfo(h, CURLINFO_LOCAL_PORT, &local_port) != CURLE_OK ||
        curl_easy_getinfo(h, CURLINFO_PRIMARY_PORT, &primary_port) != CURLE_OK)
        return false;
    return local_port > 0 && local_port == primary_port && local_ip && primary_ip && *local_ip &&
           std::strcmp(local_ip, primary_ip) == 0;
}

/// Whether bytes are waiting to be read on the socket `fd`: one recv(MSG_PEEK | MSG_DONTWAIT),
/// which takes nothing. False when none are, when the peer closed, or when recv fails.
inline bool http_bytes_waiting(curl_socket_t fd) noexcept {
    char byte;
    return retry_on_eintr([&] { return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT); }) > 0;
}

inline http_errc http_errc_of(CURLcode c) noexcept {
    switch (c) {
    case CURLE_OPERATION_TIMEDOUT: return http_errc::timeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return http_errc::refused;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:        // (HTTP/2's framing layer failed: the connection broke)
    case CURLE_HTTP2_STREAM: // (the server reset the stream: HTTP/1.1's closed connection)
#if LIBCURL_VERSION_NUM >= 0x074400 // (7.68)
    case CURLE_HTTP3:
#endif
        return http_errc::reset;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED: return http_errc::tls;
    case CURLE_FILESIZE_EXCEEDED: return http_errc::too_large;
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL: return http_errc::bad_status;
    default: return http_errc::other;
    }
}

/// The error of an HTTP status the call did not expect (not 2xx, and not 404 on a read).
inline http_errc http_errc_of_status(long status) noexcept {
    if (status == 401 || status == 403) return http_errc::auth;
    if (status == 413) return http_errc::too_large;
    if (status >= 300 && status < 400) return http_errc::redirect;
    if (status >= 500 && status < 600) return http_errc::server_error;
    return http_errc::bad_status;
}
/// For tests only: called with the name of a lane ("calls", "reads", "uploads", "upload
/// calls") on the thread that has just taken it, before it is used.
inline thread_local void (*http_lane_held_for_testing)(char const* lane) = nullptr;

} // namespace detail

/// A Storage on an HTTP(S) server (see http_options and http_layout).
///
/// `read` is a GET whose body is refused while it streams in once it passes `max_size`
/// (and at once when its Content-Length announces more): `too_large`, nothing read.
/// 404 and 410 read as absent. `write` is a PUT (in the fanout and bazel layouts, a PUT
/// answered 409 or 500, as when the folder is missing, is followed by a MKCOL of the base
/// and of the folder, then the PUT again, once), `remove` a DELETE (of an
/// absent entry too), `list` WebDAV PROPFIND (Depth 1, then each fan-out folder). Failures
/// are an error_code of http_category() (http_errc) for a tier to count; last_failure()
/// tells the method, the URL and the status, never a credential.
///
/// The single calls take turns on one libcurl handle, so one kept-alive connection;
/// read_many and write_many each run on connections of their own (at most
/// http_options::batch_connections each), and write_many's follow-ups on one more, so
/// that a host's read never waits behind a tier worker's uploads.
/// No request goes out on a kept-alive HTTP/1 connection holding bytes no request asked
/// for (an answer sent twice, or unasked): it is closed, and the request sent on a new
/// connection within its deadline. An HTTP/1 connection that carried an answer its request
/// did not expect (answer_expected) is not used again, and a GET answered 200 on a kept-alive
/// connection with an entry for another key is sent once more on a new connection (the
/// answer dropped). (libcurl 7.80 and later: CURLOPT_PREREQFUNCTION.)
/// Each call has one deadline, http_options::timeout from its start, for all it does (the
/// wait for the handle, the name's resolution, the connection, a store's MKCOLs and second
/// PUT). A redirect, where followed, goes from https to https only. libcurl's proxy variables
/// (http_proxy, https_proxy, all_proxy, no_proxy) apply, except to a server on this machine
/// (detail::http_host_reaches_loopback), which is always reached directly. A process forked from
/// one that used the storage makes handles and connections of its own at its first call
/// (the parent's are left untouched, and open, in the child); a child forked while another
/// thread was in a call waits for a handle that is never freed: its calls time out. Move-only.
class http_storage {
public:
    /// A process forked after a call makes handles, and so connections, of its own at its
    /// first call, and never uses or cleans up its parent's (own_handles): the child and
    /// the parent both go on using the server (tiered_storage and remote_by_url read this).
    static constexpr bool reconnects_after_fork = true;

    /// The storage `options` describe. Throws std::invalid_argument (the URL's fault in one
    /// phrase, never the URL) when options.url is not an http_address; connects on first use.
    explicit http_storage(http_options options) : state_(std::make_unique<state>()) {
        std::string why;
        std::optional<http_address> address = http_address::parse(options.url, why);
        if (!address) throw std::invalid_argument("compile_cache: the HTTP storage's URL " + why);
        state_->address = std::move(*address);
        state_->options = std::move(options);
        state_->options.url.clear(); // the parsed address is what is used (and shown)
        detail::http_global_init();
    }
    explicit http_storage(std::string url) : http_storage(make_options(std::move(url))) {}

    http_storage(http_storage&&) noexcept = default;
    http_storage& operator=(http_storage&&) noexcept = default;

    /// Whether `url` is an HTTP server's (`http://`, `https://`, any case): the schemes
    /// that select this storage among a program's remotes (remote_by_url).
    static bool handles_url(std::string_view url) noexcept { return http_address::is_http_url(url); }

    /// The storage the settings ask for (settings.hpp): `PREFIX_REMOTE` an `http://` or
    /// `https://` URL (anything else: not configured, another remote's), then
    /// `PREFIX_REMOTE_LAYOUT`, `_CA_FILE`, `_CERT_FILE` + `_KEY_FILE`, `_TLS_INSECURE`,
    /// `_PASSWORD_FILE`, `_TOKEN_FILE`, `_CONNECT_TIMEOUT`, `_TIMEOUT`,
    /// `_FOLLOW_REDIRECTS` (environment_settings). Off, with one line: a server whose entries
    /// would not be authenticated (storage_settings::remote_trusted), a URL that does not
    /// parse or holds a password, a file that cannot be read.
    static from_env_result<http_storage> from_env(storage_settings const& settings) {
        using result = from_env_result<http_storage>;
        try {
            settings_reader const& env = settings.env;
            std::string const url = env.value("_REMOTE");
            if (detail::is_off(url) || !http_address::is_http_url(url)) return result::not_configured();
            if (!settings.cache_off.empty()) return result::off(settings.cache_off);
            if (!settings.remote_trusted) return result::off(settings.untrusted_remote_reason());
            std::string why;
            if (!http_address::parse(url, why)) return result::off(env.name("_REMOTE") + " " + why + "; the remote is off");
            http_options o;
            o.url = url;
            o.layout = env.choice("_REMOTE_LAYOUT",
                                  {{"flat", http_layout::flat}, {"fanout", http_layout::fanout},
                                   {"bazel", http_layout::bazel}},
                                  http_layout::flat, "a layout");
            auto readable = [&](char const* suffix, std::string& into) {
                into = env.value(suffix);
                if (into.empty()) return std::string();
                struct ::stat st {};
                if (::stat(into.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
                    return env.name(suffix) + "=\"" + into + "\" is not a file that can be read; the remote is off";
                return std::string();
            };
            for (auto [suffix, into] : {std::pair<char const*, std::string*>{"_REMOTE_CA_FILE", &o.ca_file},
                                        {"_REMOTE_CERT_FILE", &o.cert_file},
                                        {"_REMOTE_KEY_FILE", &o.key_file},
                                        {"_REMOTE_TOKEN_FILE", &o.token_file}}) {
                std::string const bad = readable(suffix, *into);
                if (!bad.empty()) return result::off(bad);
            }
            if (o.cert_file.empty() != o.key_file.empty())
                return result::off(env.name(o.cert_file.empty() ? "_REMOTE_KEY_FILE" : "_REMOTE_CERT_FILE") +
                                   " is set without " +
                                   env.name(o.cert_file.empty() ? "_REMOTE_CERT_FILE" : "_REMOTE_KEY_FILE") +
                                   ": a client certificate needs both; the remote is off");
            std::string const password_file = env.value("_REMOTE_PASSWORD_FILE");
            if (!password_file.empty()) {
                std::string const reason = read_secret_file(password_file, o.password);
                if (!reason.empty())
                    return result::off(env.name("_REMOTE_PASSWORD_FILE") + "=\"" + password_file +
                                       "\" cannot be used: " + reason + "; the remote is off");
                trim_line_end(o.password);
            }
            o.tls_insecure = env.flag("_REMOTE_TLS_INSECURE", false, "certificates are verified");
            o.follow_redirects = env.flag("_REMOTE_FOLLOW_REDIRECTS", false, "redirects are not followed");
            auto positive = [&](char const* suffix, std::chrono::milliseconds fallback) {
                std::chrono::milliseconds const d = env.milliseconds(suffix, fallback);
                if (d.count() > 0 && d <= max_timeout) return d;
                env.report_value(suffix, env.value(suffix),
                                 std::string(d.count() > 0 ? "is longer than a timeout may be (at most 600 s)"
                                                           : "is not a positive duration") +
                                     "; using the default, " + std::to_string(fallback.count()) + " ms");
                return fallback;
            };
            o.connect_timeout = positive("_REMOTE_CONNECT_TIMEOUT", o.connect_timeout);
            o.timeout = positive("_REMOTE_TIMEOUT", o.timeout);
            http_storage storage(std::move(o));
            storage.state_->logger = settings.logger;
            if (!detail::http_resolves_asynchronously() && !detail::http_host_is_address(storage.state_->address.host))
                env.report(storage.describe() + ": this libcurl resolves names on the calling thread (no AsynchDNS), so "
                                                "a DNS server that does not answer can hold a call past " +
                           env.name("_REMOTE_TIMEOUT") + "; give the server as an address where that matters");
            if (storage.state_->options.tls_insecure) {
                env.report(storage.insecure_line(env.name("_REMOTE_TLS_INSECURE")));
                storage.state_->insecure_said = true;
            }
            if (storage.sends_credentials_in_clear()) {
                env.report(storage.clear_text_line());
                storage.state_->clear_text_said = true;
            }
            return result(std::move(storage));
        } catch (std::exception const& e) {
            return result::off(std::string("the HTTP remote cannot be set up: ") + e.what());
        } catch (...) {
            return result::off("the HTTP remote cannot be set up");
        }
    }

    /// What from_env reads, one line each, for a host's --help.
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        std::string const p(prefix);
        return {
            {p + "_REMOTE", "the HTTP cache server: http[s]://[user@]host[:port][/path] (WebDAV, bazel-remote; a "
                            "password in the URL is refused); unset or off: none"},
            {p + "_REMOTE_LAYOUT", "where entries go under the URL: flat (URL/KEY, the default), fanout (URL/ab/KEY) "
                                   "or bazel (URL/ac/KEY, bazel-remote's action cache)"},
            {p + "_REMOTE_CA_FILE", "PEM file of the CA that signed the server's certificate (default: the system's)"},
            {p + "_REMOTE_CERT_FILE", "PEM client certificate shown to the server (with " + p + "_REMOTE_KEY_FILE)"},
            {p + "_REMOTE_KEY_FILE", "PEM private key of the client certificate"},
            {p + "_REMOTE_TLS_INSECURE", "1 does not verify the server's certificate (anyone on the path can then "
                                         "change what the cache loads)"},
            {p + "_REMOTE_PASSWORD_FILE", "a file holding the password of the URL's user (basic authentication)"},
            {p + "_REMOTE_TOKEN_FILE", "a file holding a bearer token, read again whenever it changes"},
            {p + "_REMOTE_CONNECT_TIMEOUT", "connect timeout, ms or with s (default 100)"},
            {p + "_REMOTE_TIMEOUT", "timeout of each call to the server, ms or with s (default 1000)"},
            {p + "_REMOTE_FOLLOW_REDIRECTS", "1 follows the server's redirects (default: a redirect is an error)"},
            {p + "_REMOTE_INSECURE", "1 uses the server without a secret (only for a server that only trusted "
                                     "machines can write)"},
        };
    }

    /// An entry is `found` on 200 alone: 404 and 410 are `absent`; any other status, 204
    /// (No Content) and 206 (Partial Content) included, is an `error` (bad_status for a
    /// 2xx), never a body handed on as an entry (which a tier would count as corrupt).
    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        out.clear();
        if (k.empty()) return {read_status::absent, {}}; // (the empty key names no entry: key.hpp)
        try {
            exchange x = call(state_->calls, "GET", entry_url(k), {}, &out, max_size, deadline_of_call(), &k);
            if (x.over_bound) {
                out.clear();
                return {read_status::too_large, make_error_code(http_errc::too_large)};
            }
            if (!x.error && (x.status == 404 || x.status == 410)) {
                out.clear();
                return {read_status::absent, {}};
            }
            if (x.error || x.status != 200) {
                out.clear();
                std::error_code const e = x.error ? x.error : make_error_code(detail::http_errc_of_status(x.status));
                if (e == http_errc::too_large) return {read_status::too_large, e};
                fail("GET", k, x, e);
                return {read_status::error, e};
            }
            return {read_status::found, {}};
        } catch (...) {
            out.clear();
            return {read_status::error, make_error_code(http_errc::other)};
        }
    }

    /// Reads `keys` at once (the optional batch read): `out[i]` is what `read(keys[i],
    /// bytes, max)` would answer (found with the bytes, absent, too_large, or error with
    /// its http_errc), `out` holding one pair per key. The GETs run concurrently, at most
    /// http_options::batch_connections at a time, each on a kept-alive connection of the
    /// batch's own (libcurl's multi interface; the single calls keep theirs). Bounded: the
    /// whole batch by one http_options::timeout, each body by `max` and, in all, by
    /// batch_max_bytes, which holds: a GET still running counts at its bound (the most it
    /// may take), `max` or the batch's share of batch_max_bytes when that is less (see
    /// http_options::batch_max_bytes), and another starts only while the bodies read and
    /// those counted leave room for a share; with none running, one starts with whatever
    /// room is left. A body past its GET's bound, when that is less than `max`, answers
    /// `error` with too_large. Never throws.
    void read_many(std::vector<key> const& keys, std::size_t max,
                   std::vector<std::pair<read_result, std::string>>& out) noexcept {
        try {
            out.clear();
            out.resize(keys.size());
            if (keys.empty()) return;
            read_batch(keys, max, out);
        } catch (...) {
            for (auto& o : out) {
                o.second.clear();
                o.first = {read_status::error, make_error_code(http_errc::other)};
            }
        }
    }

    /// As read: an HTTP server keeps no use time for the cache to leave alone.
    read_result peek(key const& k, std::string& out, std::size_t max_size) noexcept { return read(k, out, max_size); }

    std::error_code write(key const& k, std::string_view bytes) noexcept {
        if (k.empty()) return std::make_error_code(std::errc::invalid_argument);
        // One deadline for the whole store, its MKCOLs and second PUT included.
        return write_until(state_->calls, k, bytes, deadline_of_call());
    }

    /// Writes `entries` at once (the optional batch write): `out[i]` is what
    /// `write(entries[i].first, entries[i].second)` would answer, `out` holding one
    /// error_code per entry. The PUTs run concurrently, as read_many's GETs do (at most
    /// http_options::batch_connections at a time, on the batch's kept-alive connections);
    /// one that finds its folder missing (fanout, bazel) is made again alone as write
    /// makes it. Bounded: the whole batch by one http_options::timeout. Never throws.
    void write_many(std::vector<std::pair<key, std::string_view>> const& entries,
                    std::vector<std::error_code>& out) noexcept {
        try {
            out.assign(entries.size(), std::error_code());
            write_batch(entries, out);
        } catch (...) {
            for (auto& e : out) e = make_error_code(http_errc::other); // (the caller checks the size)
        }
    }

    std::error_code remove(key const& k) noexcept {
        if (k.empty()) return {};
        try {
            exchange x = call(state_->calls, "DELETE", entry_url(k), {}, nullptr, 0, deadline_of_call());
            if (!x.error && (x.status / 100 == 2 || x.status == 404 || x.status == 410)) return {};
            std::error_code const e = x.error ? x.error : make_error_code(detail::http_errc_of_status(x.status));
            fail("DELETE", k, x, e);
            return e;
        } catch (...) {
            return make_error_code(http_errc::other);
        }
    }

    /// Every entry under the base URL (in each fan-out folder; under `ac/` for bazel), from
    /// WebDAV PROPFIND with Depth 1: its size and modification time (last_use_s; a server
    /// keeps no use time). Names that are not a key in hex are skipped. A server that does
    /// not offer PROPFIND (405, 501) answers http_errc::cannot_list; a base URL that does
    /// not exist yet lists nothing. Each fan-out folder is read once, however often the
    /// base's answer names it. Stops at the first failure, which it returns; past
    /// http_options::listing_timeout (`timeout`), or past listing_max_bytes of answers or
    /// listing_max_items items in all, over every folder (`listing_too_large`, whose
    /// condition is std::errc::value_too_large), too: a server cannot make the listing
    /// hold more than those bounds.
    std::error_code list(std::vector<stored_entry>& out) const {
        try {
            http_options const& o = state_->options;
            auto const deadline = clock::now() + o.listing_timeout;
            std::vector<std::string> folders;
            std::vector<bool> fan_listed(256, false); // the fan-out folders already in `folders`
            std::string const base = state_->address.base();
            folders.push_back(o.layout == http_layout::bazel ? base + "ac/" : base);
            std::uint64_t bytes_left = o.listing_max_bytes; // of answers, over the whole listing
            std::size_t items_left = o.listing_max_items;
            auto past_bound = [&](std::string const& folder, std::string const& what) {
                std::error_code const e = make_error_code(http_errc::listing_too_large);
                remember(e, "PROPFIND " + folder + ": the listing passed " + what +
                                " in all (http_options::listing_max_bytes, listing_max_items)");
                return e;
            };
            for (std::size_t i = 0; i < folders.size(); ++i) {
                if (clock::now() >= deadline) return make_error_code(http_errc::timeout);
                std::string body;
                exchange x = call(state_->calls, "PROPFIND", folders[i], {}, &body, bytes_left, deadline);
                if (x.over_bound)
                    return past_bound(folders[i], std::to_string(o.listing_max_bytes) + " bytes of answers");
                if (!x.error && x.status == 404) continue;
                if (!x.error && (x.status == 405 || x.status == 501)) {
                    std::error_code const e = make_error_code(http_errc::cannot_list);
                    remember(e, "PROPFIND " + folders[i] + ": HTTP " + std::to_string(x.status) +
                                    ": the server offers no WebDAV listing");
                    return e;
                }
                if (x.error || x.status != 207) {
                    std::error_code const e = x.error ? x.error : make_error_code(detail::http_errc_of_status(x.status));
                    remember(e, "PROPFIND " + folders[i] + ": " + describe_exchange(x));
                    return e;
                }
                bytes_left -= std::min<std::uint64_t>(bytes_left, body.size());
                bool items_over = false;
                std::vector<detail::webdav_item> const items =
                    detail::parse_webdav_multistatus(body, items_left, items_over);
                if (items_over)
                    return past_bound(folders[i], std::to_string(o.listing_max_items) + " items");
                items_left -= items.size();
                body.clear();
                body.shrink_to_fit();
                for (std::size_t j = 0; j < items.size(); ++j) {
                    detail::webdav_item const& item = items[j];
                    if (item.collection) {
                        if (j == 0) continue; // the folder itself
                        std::optional<key> const fan = key::from_hex(item.name);
                        if (i == 0 && o.layout == http_layout::fanout && fan && fan->size() == 1 &&
                            fan->hex() == item.name && !fan_listed[fan->data()[0]]) { // two lower-case hex digits
                            fan_listed[fan->data()[0]] = true;
                            folders.push_back(base + item.name + "/");
                        }
                        continue;
                    }
                    std::optional<key> const k = key::from_hex(item.name);
                    if (!k || k->hex() != item.name) continue; // not an entry's name as entry_url writes it
                    if (o.layout == http_layout::fanout &&
                        (i == 0 || item.name.compare(0, 2, folders[i], folders[i].size() - 3, 2) != 0))
                        continue; // not in the folder its key names
                    out.push_back(stored_entry{*k, item.size, item.modified_s});
                }
            }
            return {};
        } catch (...) {
            return make_error_code(http_errc::other);
        }
    }

    /// The URL of a key's entry (never with credentials), for the cache's failure lines.
    std::string entry_path(key const& k) const { return entry_url(k); }

    /// "HTTP server https://host:port/path/ (layout fanout)", for the tier's lines.
    std::string describe() const {
        static char const* const names[] = {"flat", "fanout", "bazel"};
        return "HTTP server " + state_->address.base() + " (layout " +
               names[static_cast<int>(state_->options.layout)] + ")";
    }

    /// What the last failing call saw (the method, the URL, the status or libcurl's
    /// reason); no credential.
    http_failure last_failure() const {
        std::unique_lock<std::timed_mutex> lock(state_->failure_mutex, std::defer_lock);
        if (!lock.try_lock_for(failure_wait)) return {};
        return state_->failure;
    }

    /// The cache's logger: with http_options::tls_insecure, one line says that the
    /// server's certificate is not verified (once); with credentials (a token file, the
    /// URL's user) sent over `http://` to a host that is not this machine
    /// (detail::http_host_is_loopback), one line says that they go in clear text (once).
    void set_logger(std::function<void(std::string_view)> logger) {
        state_->logger = std::move(logger);
        if (!state_->logger) return;
        if (state_->options.tls_insecure && !state_->insecure_said) {
            state_->insecure_said = true;
            try {
                state_->logger(insecure_line("http_options::tls_insecure"));
            } catch (...) {
            }
        }
        if (sends_credentials_in_clear() && !state_->clear_text_said) {
            state_->clear_text_said = true;
            try {
                state_->logger(clear_text_line());
            } catch (...) {
            }
        }
    }

    /// Whether the storage sends credentials (a bearer token, or the basic authentication
    /// of the URL's user) over plain `http://` to a host other than this machine, where
    /// anyone on the network path can read them.
    bool sends_credentials_in_clear() const noexcept {
        http_address const& a = state_->address;
        bool const credentials = !state_->options.token_file.empty() || !a.user.empty();
        return credentials && !a.tls && !detail::http_host_is_loopback(a.host);
    }

    http_address const& address() const noexcept { return state_->address; }
    http_options const& options() const noexcept { return state_->options; }

    /// The longest connect or call timeout from_env accepts.
    static constexpr std::chrono::milliseconds max_timeout{600000};

private:
    using clock = std::chrono::steady_clock;

    struct curl_deleter {
        void operator()(CURL* c) const noexcept { curl_easy_cleanup(c); }
    };
    struct curl_multi_deleter {
        void operator()(CURLM* m) const noexcept { curl_multi_cleanup(m); }
    };

    /// The bearer token file as last read: re-read when any of these changes.
    struct file_stamp {
        dev_t dev = 0;
        ino_t ino = 0;
        off_t size = -1;
        std::int64_t mtime_ns = -1;
        bool operator==(file_stamp const& o) const noexcept {
            return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
        }
    };

    /// A socket libcurl opened for one of a lane's connections, as the lane knows it.
    struct lane_socket {
        curl_socket_t fd = CURL_SOCKET_BAD;
        std::uint64_t serial = 0; ///< this connection, not a later one on the same descriptor
        char local_ip[INET6_ADDRSTRLEN] = {}; ///< its own address, as libcurl writes it (once known)
        int local_port = 0;                   ///< its own port; 0 until known
        int requests = 0;                     ///< requests on it now (more than one: HTTP/2)
        bool used = false;                    ///< it has carried a request
        bool multiplexed = false;             ///< it speaks HTTP/2 or 3: each answer names its stream
        bool drop = false;                    ///< an answer on it was not one its request can have: not used again
    };
    /// The sockets of a lane's connections: libcurl adds each it opens (on_socket_open)
    /// and removes each it closes (on_socket_close). Used by the thread holding the lane
    /// (libcurl opens and closes a lane's sockets only within that lane's calls), and
    /// when the lane's handles are cleaned up. Declared before the handles: it outlives them.
    struct lane_sockets {
        std::vector<lane_socket> open;
        std::uint64_t next_serial = 1;
        lane_socket* find(std::uint64_t serial) noexcept {
            for (lane_socket& s : open)
                if (serial != 0 && s.serial == serial) return &s;
            return nullptr;
        }
    };

    /// One handle, and so one kept-alive connection, used by one call at a time.
    struct single_lane {
        lane_sockets sockets;
        std::timed_mutex mutex;
        std::unique_ptr<CURL, curl_deleter> handle;
    };
    /// A batch's concurrent handles on libcurl's multi handle, used by one batch at a time.
    struct batch_lane {
        lane_sockets sockets;
        std::timed_mutex mutex;
        std::unique_ptr<CURLM, curl_multi_deleter> multi;        // (before its easy handles: they go first)
        std::vector<std::unique_ptr<CURL, curl_deleter>> handles; // a batch's concurrent requests
    };

    struct state {
        http_options options;
        http_address address;
        single_lane calls;        // read, write, remove, list
        batch_lane reads;         // read_many
        batch_lane uploads;       // write_many
        single_lane upload_calls; // write_many's follow-ups: the MKCOLs and the PUT again
        // Timed, as every mutex here: a child forked while another thread held one waits
        // for it only until its call's deadline.
        std::timed_mutex handles_mutex; // guards handles_pid (and a child's dropping of the handles)
        pid_t handles_pid = 0;          // the process the handles were made in (own_handles)
        std::timed_mutex token_mutex;   // guards token and token_stamp
        std::string token;
        file_stamp token_stamp;
        mutable std::timed_mutex failure_mutex; // (held for a copy: taken within failure_wait)
        http_failure failure;
        std::function<void(std::string_view)> logger;
        bool insecure_said = false;
        bool clear_text_said = false;
    };

    /// What one exchange gave: a transport error (error set), or a status.
    struct exchange {
        std::error_code error;
        long status = 0;
        bool over_bound = false; ///< the body passed the caller's bound and was refused
        std::string curl_text;   ///< libcurl's reason for a transport error
    };

    /// Where a response body goes: `out` up to `max` bytes (then the transfer is aborted);
    /// the body of another status than the one wanted (a 204's, a 206's, an error's), or of
    /// a call that wants none, is read up to 64 KiB
    /// and dropped (past that the connection is dropped rather than read to its end).
    struct body_sink {
        CURL* handle = nullptr;
        std::string* out = nullptr;
        std::size_t max = 0;
        bool over = false;
        std::size_t dropped = 0;
        long wanted = 200; ///< the one status whose body goes to `out` (207 for PROPFIND)
    };

    /// Gives `s` (its bytes kept) a capacity of `n`, more than it has: `n`, where
    /// `s.reserve(n)` may give up to twice the old capacity (libstdc++ does). A fresh string
    /// reserves from its inline capacity: `n` itself on libstdc++ (30 bytes for a smaller
    /// `n`), `n` rounded up to 16 bytes on libc++.
    static void grow_to(std::string& s, std::size_t n) {
        std::string grown;
        grown.reserve(n); // (a fresh string: from its inline capacity, not from s's)
        grown.append(s);
        s.swap(grown);
    }

    static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) noexcept {
        body_sink& sink = *static_cast<body_sink*>(user);
        std::size_t const n = size * count;
        long status = 0;
        curl_easy_getinfo(sink.handle, CURLINFO_RESPONSE_CODE, &status);
        if (!sink.out || status != sink.wanted) {
            sink.dropped += n;
            return sink.dropped > drop_max ? 0 : n;
        }
        if (n > sink.max - sink.out->size()) {
            sink.over = true;
            return 0;
        }
        try {
            if (sink.out->empty()) {
                curl_off_t announced = -1;
                if (curl_easy_getinfo(sink.handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) == CURLE_OK &&
                    announced > 0 && static_cast<std::uint64_t>(announced) <= sink.max &&
                    static_cast<std::size_t>(announced) > sink.out->capacity())
                    grow_to(*sink.out, static_cast<std::size_t>(announced));
            }
            // Grown by doubling (a body of 16 KiB pieces is copied O(log n) times), but
            // never past the bound: what a body holds stays within it.
            std::size_t const need = sink.out->size() + n;
            if (need > sink.out->capacity())
                grow_to(*sink.out, std::min(sink.max, std::max(need, 2 * sink.out->capacity())));
            sink.out->append(data, n);
        } catch (...) {
            return 0;
        }
        return n;
    }

    struct body_source {
        std::string_view whole;
        std::string_view rest;
    };

    /// libcurl sends the body again from its start (a 307/308 or 302 followed, a kept-alive
    /// connection found dead): without this, the store would fail (CURLE_SEND_FAIL_REWIND).
    static int on_upload_seek(void* user, curl_off_t offset, int origin) noexcept {
        body_source& source = *static_cast<body_source*>(user);
        if (origin != SEEK_SET || offset < 0 || static_cast<std::uint64_t>(offset) > source.whole.size())
            return CURL_SEEKFUNC_CANTSEEK;
        source.rest = source.whole.substr(static_cast<std::size_t>(offset));
        return CURL_SEEKFUNC_OK;
    }

    static std::size_t on_upload(char* buffer, std::size_t size, std::size_t count, void* user) noexcept {
        body_source& source = *static_cast<body_source*>(user);
        std::size_t const n = std::min(size * count, source.rest.size());
        if (n > 0) std::memcpy(buffer, source.rest.data(), n);
        source.rest.remove_prefix(n);
        return n;
    }

    struct header_list {
        curl_slist* list = nullptr;
        ~header_list() { curl_slist_free_all(list); }
        void add(char const* h) {
            curl_slist* const l = curl_slist_append(list, h);
            if (!l) throw std::bad_alloc();
            list = l;
        }
    };

    static constexpr std::size_t drop_max = std::size_t{64} << 10;

    static http_options make_options(std::string url) {
        http_options o;
        o.url = std::move(url);
        return o;
    }

    static void trim_line_end(std::string& s) {
        if (!s.empty() && s.back() == '\n') s.pop_back();
        if (!s.empty() && s.back() == '\r') s.pop_back();
    }

    std::string insecure_line(std::string const& setting) const {
        return describe() + ": TLS certificate verification is off (" + setting +
               "): anyone on the network path can read and change what the cache loads";
    }

    std::string clear_text_line() const {
        return describe() + ": " +
               (state_->options.token_file.empty() ? "the password of the URL's user" : "the bearer token") +
               " goes in clear text over http://: anyone on the network path can read it and use it; use https://";
    }

    std::string entry_url(key const& k) const {
        std::string const hex = k.hex();
        std::string url = state_->address.base();
        switch (state_->options.layout) {
        case http_layout::flat: break;
        case http_layout::fanout: url += hex.substr(0, 2) + "/"; break;
        case http_layout::bazel: url += "ac/"; break;
        }
        return url + hex;
    }

    static std::string describe_exchange(exchange const& x) {
        if (x.error) return x.curl_text.empty() ? x.error.message() : x.curl_text;
        return "HTTP " + std::to_string(x.status);
    }

    /// How long remember() and last_failure() wait for the failure's mutex.
    static constexpr std::chrono::milliseconds failure_wait{100};

    void remember(std::error_code e, std::string text) const {
        std::unique_lock<std::timed_mutex> lock(state_->failure_mutex, std::defer_lock);
        if (!lock.try_lock_for(failure_wait)) return; // (a child forked while a thread of the parent held it)
        state_->failure = {e, std::move(text)};
    }

    void fail(char const* method, key const& k, exchange const& x, std::error_code e) const {
        remember(e, std::string(method) + " " + entry_url(k) + ": " + describe_exchange(x));
    }

    /// The bearer token in `token`, read again when its file changed: `credentials` (and
    /// the failure remembered) when it cannot be read now, `timeout` when another thread
    /// held it past `deadline`.
    std::error_code current_token(std::string& token, clock::time_point deadline) const {
        std::unique_lock<std::timed_mutex> lock(state_->token_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return make_error_code(http_errc::timeout);
        struct ::stat st {};
        if (::stat(state_->options.token_file.c_str(), &st) != 0) {
            std::error_code const e = make_error_code(http_errc::credentials);
            remember(e, "the token file " + state_->options.token_file + " cannot be read: " + std::strerror(errno));
            return e;
        }
        file_stamp const now{st.st_dev, st.st_ino, st.st_size, detail::mtime_ns(st)};
        if (!(now == state_->token_stamp) || state_->token.empty()) {
            std::string read;
            std::string const reason = read_secret_file(state_->options.token_file, read);
            if (!reason.empty()) {
                std::error_code const e = make_error_code(http_errc::credentials);
                remember(e, "the token file " + state_->options.token_file + " cannot be used: " + reason);
                return e;
            }
            trim_line_end(read);
            // A header carries it: a second line, a space or a control character would
            // write header lines of the file's choosing (RFC 6750's token is printable ASCII).
            if (read.empty() || std::any_of(read.begin(), read.end(), [](char ch) {
                    auto const b = static_cast<unsigned char>(ch);
                    return b <= 0x20 || b >= 0x7f;
                })) {
                std::error_code const e = make_error_code(http_errc::credentials);
                remember(e, "the token file " + state_->options.token_file +
                                " cannot be used: it is not one line of printable ASCII (a token, no spaces)");
                return e;
            }
            state_->token = std::move(read);
            state_->token_stamp = now;
        }
        token = state_->token;
        return {};
    }

    /// The deadline of one Storage call begun now: http_options::timeout from now.
    clock::time_point deadline_of_call() const { return clock::now() + state_->options.timeout; }

    static std::chrono::milliseconds left_until(clock::time_point deadline) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    }

    /// One request's state while libcurl runs it: where its body goes and comes from, its
    /// headers, libcurl's words on a failure.
    struct request {
        std::string method;
        std::string url;
        body_sink sink;
        body_source source;
        header_list headers;
        char error_text[CURL_ERROR_SIZE] = {};
        std::uint64_t bound = 0; ///< the body's bound (a batch's read)
        std::string token;       ///< the bearer token, when there is a token file
        lane_sockets* sockets = nullptr; ///< the lane's (set before prepare)
        key const* entry_key = nullptr;  ///< a GET of an entry: its key (again_on_new_connection)
        std::uint64_t socket = 0;        ///< the serial of the connection it was sent on; 0: none known
        bool reused = false;     ///< that connection is HTTP/1 and had carried a request before
        bool stray = false;      ///< stopped before it was sent: its connection held bytes no request asked for
        bool sent_again = false; ///< already sent again on a new connection (again_on_new_connection)
    };

    /// libcurl opened `fd` for a connection of the lane `user` (CURLOPT_SOCKOPTFUNCTION).
    static int on_socket_open(void* user, curl_socket_t fd, curlsocktype) noexcept {
        lane_sockets& sockets = *static_cast<lane_sockets*>(user);
        std::vector<lane_socket>& open = sockets.open;
        // (One on the same descriptor was closed without the lane's hearing of it.)
        open.erase(std::remove_if(open.begin(), open.end(), [&](lane_socket const& s) { return s.fd == fd; }),
                   open.end());
        try {
            lane_socket s;
            s.fd = fd;
            s.serial = sockets.next_serial++;
            open.push_back(s);
        } catch (...) {
            return CURL_SOCKOPT_ERROR; // (a socket the lane cannot check is not used)
        }
        return CURL_SOCKOPT_OK;
    }

    /// libcurl closes `fd`, a socket of the lane `user` (CURLOPT_CLOSESOCKETFUNCTION):
    /// forgotten, and closed.
    static int on_socket_close(void* user, curl_socket_t fd) noexcept {
        std::vector<lane_socket>& open = static_cast<lane_sockets*>(user)->open;
        open.erase(std::remove_if(open.begin(), open.end(), [&](lane_socket const& s) { return s.fd == fd; }),
                   open.end());
        return ::close(fd);
    }

    /// The lane's socket whose own address is `local_ip` port `local_port` (an open
    /// connection's address names it alone), or nullptr.
    static lane_socket* socket_at(lane_sockets& sockets, char const* local_ip, int local_port) noexcept {
        for (lane_socket& s : sockets.open) {
            if (s.local_port == 0) { // (known once connected; read once)
                sockaddr_storage a{};
                socklen_t size = sizeof a;
                if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&a), &size) != 0) continue;
                void const* address = nullptr;
                int port = 0;
                if (a.ss_family == AF_INET) {
                    auto const& v4 = reinterpret_cast<sockaddr_in const&>(a);
                    address = &v4.sin_addr;
                    port = ntohs(v4.sin_port);
                } else if (a.ss_family == AF_INET6) {
                    auto const& v6 = reinterpret_cast<sockaddr_in6 const&>(a);
                    address = &v6.sin6_addr;
                    port = ntohs(v6.sin6_port);
                }
                if (!address || port == 0 || !::inet_ntop(a.ss_family, address, s.local_ip, sizeof s.local_ip))
                    continue;
                s.local_port = port;
            }
            if (s.local_port == local_port && local_ip && std::strcmp(s.local_ip, local_ip) == 0) return &s;
        }
        return nullptr;
    }

    /// libcurl has chosen the connection for the request `user` and is about to send it
    /// (CURLOPT_PREREQFUNCTION, libcurl 7.80): the request is stopped (CURL_PREREQFUNC_ABORT,
    /// which closes the connection; request::stray set) when that connection is one the lane
    /// was told to drop, or an HTTP/1 connection taken again from idle with bytes waiting
    /// on it: an answer no request asked for, which libcurl would read as this request's.
    static int on_request_ready(void* user, char*, char* local_ip, int, int local_port) noexcept {
        request& rq = *static_cast<request*>(user);
        if (lane_socket* before = rq.sockets->find(rq.socket)) --before->requests; // (a redirect's first request)
        rq.socket = 0;
        lane_socket* const s = socket_at(*rq.sockets, local_ip, local_port);
        if (!s) return CURL_PREREQFUNC_OK; // (libcurl opens each through on_socket_open: not met)
        bool const idle_http1 = s->used && s->requests == 0 && !s->multiplexed;
        if (s->drop || (idle_http1 && detail::http_bytes_waiting(s->fd))) {
            s->drop = true;
            rq.stray = true;
            return CURL_PREREQFUNC_ABORT;
        }
        rq.reused = idle_http1;
        s->used = true;
        ++s->requests;
        rq.socket = s->serial;
        return CURL_PREREQFUNC_OK;
    }

    /// Whether `x` can be the answer to `rq`: no transport error, and a status the call
    /// expects (for GET 200, for PROPFIND 207, for the others any 2xx; 404 and 410 always;
    /// 409 for PUT and MKCOL, a folder missing; 405 for MKCOL, a folder there). Another may
    /// answer some other request, or come from a server out of step: the connection it came
    /// on is not used again.
    static bool answer_expected(request const& rq, exchange const& x) noexcept {
        if (x.error || x.over_bound) return false;
        long const s = x.status;
        if (s == 404 || s == 410) return true;
        if (rq.method == "GET") return s == 200;
        if (rq.method == "PROPFIND") return s == 207;
        if ((rq.method == "PUT" || rq.method == "MKCOL") && s == 409) return true;
        if (rq.method == "MKCOL" && s == 405) return true;
        return s / 100 == 2;
    }

    /// After `rq` ended on `h` with `x`: its connection is marked multiplexed when it spoke
    /// HTTP/2 or 3, and else to be dropped when `x` cannot be the answer to `rq` (an
    /// HTTP/2 answer names its request's stream: the server's own).
    static void after_request(CURL* h, request const& rq, exchange const& x) noexcept {
        lane_socket* const s = rq.sockets ? rq.sockets->find(rq.socket) : nullptr;
        if (!s) return;
        if (s->requests > 0) --s->requests;
        long version = 0;
        if (curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version) == CURLE_OK && version >= CURL_HTTP_VERSION_2_0)
            s->multiplexed = true;
        if (!s->multiplexed && !answer_expected(rq, x)) s->drop = true;
    }

    /// Whether `rq`, ended on `h` with libcurl's `c`, goes once more on a new connection
    /// (then set up so, by `deadline`), which it does once at most: when it was stopped
    /// before it was sent (request::stray), or when it is the GET of an entry
    /// (request::entry_key) answered 200, on a kept-alive HTTP/1 connection, with an entry
    /// for another key (entry_names_other_key), as an answer that an earlier request left
    /// on the connection is: that connection is not used again, and the answer is dropped.
    bool again_on_new_connection(CURL* h, request& rq, CURLcode c, clock::time_point deadline) const noexcept {
        if (rq.sent_again) return false;
        if (!(c == CURLE_ABORTED_BY_CALLBACK && rq.stray)) {
            long status = 0;
            if (c != CURLE_OK || !rq.entry_key || !rq.sink.out || !rq.reused ||
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200 ||
                !detail::entry_names_other_key(*rq.sink.out, *rq.entry_key))
                return false;
            if (lane_socket* const s = rq.sockets->find(rq.socket)) {
                s->drop = true;
                if (s->requests > 0) --s->requests;
            }
        }
        auto const left = left_until(deadline);
        if (left.count() <= 0) return false;
        rq.sent_again = true;
        send_again(h, rq, left, state_->options.connect_timeout);
        return true;
    }

    /// Sets `h`, whose request `rq` ended, up to send it again on a new connection, bounded
    /// by `left` (libcurl takes these options, of valid values, without fail).
    static void send_again(CURL* h, request& rq, std::chrono::milliseconds left,
                           std::chrono::milliseconds connect_timeout) noexcept {
        rq.stray = false;
        rq.socket = 0;
        rq.reused = false;
        rq.error_text[0] = '\0';
        rq.sink.over = false;
        rq.sink.dropped = 0;
        if (rq.sink.out) rq.sink.out->clear();
        rq.source.rest = rq.source.whole;
        (void)curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
        (void)curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(left.count()));
        long const connect_ms = static_cast<long>(std::min(connect_timeout, left).count());
        (void)curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    }

    /// A handle this process may use: a handle made before a fork() is the parent's (its
    /// connection, its TLS session: bytes the child sent or read there would be in the
    /// parent's stream), so a child leaves it alone, never cleaned up (that could write a
    /// TLS close to the parent's connection), and makes its own.
    /// Called with a lane's mutex held, before its handles are used: every lane's handles
    /// are used only after this call in the same process, so the first call in a child
    /// drops them all while no thread of the child uses any. False when another thread
    /// held their state past `deadline`.
    bool own_handles(clock::time_point deadline) const {
        std::unique_lock<std::timed_mutex> lock(state_->handles_mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) return false;
        pid_t const self = ::getpid();
        if (state_->handles_pid == self) return true;
        if (state_->handles_pid != 0) {
            for (single_lane* lane : {&state_->calls, &state_->upload_calls}) {
                (void)lane->handle.release();
                lane->sockets.open.clear(); // (the parent's)
            }
            for (batch_lane* lane : {&state_->reads, &state_->uploads}) {
                (void)lane->multi.release();
                for (auto& h : lane->handles) (void)h.release();
                lane->handles.clear();
                lane->sockets.open.clear();
            }
        }
        state_->handles_pid = self;
        return true;
    }

    /// The lane's name, for the tests' hook: "calls", "reads", "uploads" or "upload calls".
    char const* lane_name(single_lane const& lane) const noexcept {
        return &lane == &state_->calls ? "calls" : "upload calls";
    }
    char const* lane_name(batch_lane const& lane) const noexcept {
        return &lane == &state_->reads ? "reads" : "uploads";
    }

    /// Sets `h` up for `rq` (its options from none: the handle was reset), the exchange
    /// bounded by `left`. False, with x's error, when libcurl refused an option.
    bool prepare(CURL* h, request& rq, std::string* out, std::uint64_t max, std::string_view upload,
                 std::chrono::milliseconds left, exchange& x) const {
        http_options const& o = state_->options;
        std::size_t const sink_max = out ? static_cast<std::size_t>(std::min<std::uint64_t>(max, SIZE_MAX)) : 0;
        rq.sink = body_sink{h, out, sink_max, false, 0, rq.method == "PROPFIND" ? 207L : 200L};
        rq.source = body_source{upload, upload};
        rq.headers.add("Expect:"); // no 100-continue wait before a large PUT
        bool const put = rq.method == "PUT";
        bool const propfind = rq.method == "PROPFIND";
        static char const propfind_body[] =
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\"><D:prop>"
            "<D:resourcetype/><D:getcontentlength/><D:getlastmodified/></D:prop></D:propfind>\n";
        if (put) rq.headers.add("Content-Type: application/octet-stream");
        if (propfind) {
            rq.headers.add("Depth: 1");
            rq.headers.add("Content-Type: application/xml");
        }
        auto set = [&](CURLoption option, auto value) {
            CURLcode const c = curl_easy_setopt(h, option, value);
            if (c != CURLE_OK && x.curl_text.empty()) x.curl_text = curl_easy_strerror(c);
            return c == CURLE_OK;
        };
        bool ok = set(CURLOPT_URL, rq.url.c_str()) && set(CURLOPT_NOSIGNAL, 1L) &&
                  set(CURLOPT_ERRORBUFFER, rq.error_text) &&
                  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(o.connect_timeout, left).count())) &&
                  set(CURLOPT_TIMEOUT_MS, static_cast<long>(left.count())) && set(CURLOPT_TCP_KEEPALIVE, 1L) &&
                  set(CURLOPT_HTTPHEADER, rq.headers.list) && set(CURLOPT_WRITEFUNCTION, &http_storage::on_body) &&
                  set(CURLOPT_WRITEDATA, static_cast<void*>(&rq.sink)) &&
                  set(CURLOPT_FOLLOWLOCATION, o.follow_redirects ? 1L : 0L) && set(CURLOPT_MAXREDIRS, 5L) &&
                  set(CURLOPT_SOCKOPTFUNCTION, &http_storage::on_socket_open) &&
                  set(CURLOPT_SOCKOPTDATA, static_cast<void*>(rq.sockets)) &&
                  set(CURLOPT_CLOSESOCKETFUNCTION, &http_storage::on_socket_close) &&
                  set(CURLOPT_CLOSESOCKETDATA, static_cast<void*>(rq.sockets));
        // A listing may take up to listing_timeout, but one whose server sends nothing for 30 s (or a
        // longer call timeout) gives up (timeout): a server that took the connection and never answers
        // is no ten-minute wait, and one building a large folder's answer is still waited for.
        long const stall_s = propfind ? std::max(30L, static_cast<long>((o.timeout.count() + 999) / 1000)) : 0L;
        ok = ok && set(CURLOPT_LOW_SPEED_LIMIT, propfind ? 1L : 0L) && set(CURLOPT_LOW_SPEED_TIME, stall_s);
#if LIBCURL_VERSION_NUM >= 0x075000 // (7.80)
        // Before each request on a connection: none goes out on one holding an answer no
        // request asked for (on_request_ready).
        ok = ok && set(CURLOPT_PREREQFUNCTION, &http_storage::on_request_ready) &&
             set(CURLOPT_PREREQDATA, static_cast<void*>(&rq));
#endif
        // A redirect is followed only to as safe a scheme: from https, to https alone (an
        // https server's redirect to http would send the request, and its credentials
        // where the server allows, in the clear).
        bool const tls = state_->address.tls;
#if LIBCURL_VERSION_NUM >= 0x075500
        ok = ok && set(CURLOPT_PROTOCOLS_STR, "http,https") && set(CURLOPT_REDIR_PROTOCOLS_STR, tls ? "https" : "http,https");
#else
        ok = ok && set(CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS)) &&
             set(CURLOPT_REDIR_PROTOCOLS, static_cast<long>(tls ? CURLPROTO_HTTPS : CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
#if LIBCURL_VERSION_NUM >= 0x075700
        // A name still resolving at the timeout: its resolver thread is left to end on its
        // own instead of waited for (libcurl's threaded resolver, Debian's), so the call
        // ends at its deadline.
        ok = ok && set(CURLOPT_QUICK_EXIT, 1L);
#endif
        // A server on this machine (detail::http_host_reaches_loopback) is reached directly, never
        // through the proxy of the environment's http_proxy, https_proxy or all_proxy (nor are
        // the redirects it sends): through one, 127.0.0.1 is the proxy's machine.
        if (detail::http_host_reaches_loopback(state_->address.host)) ok = ok && set(CURLOPT_PROXY, "");
        if (out && !propfind) ok = ok && set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(std::min<std::uint64_t>(max, INT64_MAX)));
        if (tls) {
            ok = ok && set(CURLOPT_SSL_VERIFYPEER, o.tls_insecure ? 0L : 1L) &&
                 set(CURLOPT_SSL_VERIFYHOST, o.tls_insecure ? 0L : 2L);
            // The CA file alone: without its built-in folder (Debian's /etc/ssl/certs), which
            // would still trust every system CA beside it.
            // (A TLS backend without CA folders answers CURLE_NOT_BUILT_IN, and has none to exclude.)
            if (!o.ca_file.empty()) {
                ok = ok && set(CURLOPT_CAINFO, o.ca_file.c_str());
                (void)curl_easy_setopt(h, CURLOPT_CAPATH, static_cast<char*>(nullptr));
            }
            if (!o.cert_file.empty()) ok = ok && set(CURLOPT_SSLCERT, o.cert_file.c_str());
            if (!o.key_file.empty()) ok = ok && set(CURLOPT_SSLKEY, o.key_file.c_str());
        }
        if (!o.token_file.empty()) {
            ok = ok && set(CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BEARER)) &&
                 set(CURLOPT_XOAUTH2_BEARER, rq.token.c_str());
        } else if (!state_->address.user.empty()) {
            ok = ok && set(CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC)) &&
                 set(CURLOPT_USERNAME, state_->address.user.c_str()) && set(CURLOPT_PASSWORD, o.password.c_str());
        }
        if (put) {
            ok = ok && set(CURLOPT_UPLOAD, 1L) && set(CURLOPT_READFUNCTION, &http_storage::on_upload) &&
                 set(CURLOPT_READDATA, static_cast<void*>(&rq.source)) &&
                 set(CURLOPT_SEEKFUNCTION, &http_storage::on_upload_seek) &&
                 set(CURLOPT_SEEKDATA, static_cast<void*>(&rq.source)) &&
                 set(CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(upload.size()));
        } else if (propfind) {
            ok = ok && set(CURLOPT_CUSTOMREQUEST, "PROPFIND") && set(CURLOPT_POSTFIELDS, propfind_body) &&
                 set(CURLOPT_POSTFIELDSIZE, static_cast<long>(sizeof propfind_body - 1));
        } else if (rq.method != "GET") {
            ok = ok && set(CURLOPT_CUSTOMREQUEST, rq.method.c_str());
        }
        if (!ok) x.error = make_error_code(http_errc::other);
        return ok;
    }

    /// What a finished request gave (libcurl's code `c`).
    static exchange finish(CURL* h, request const& rq, CURLcode c) {
        exchange x;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x.status);
        if (rq.stray) {
            x.status = 0;
            x.error = make_error_code(http_errc::reset);
            x.curl_text = "the kept-alive connection held an answer no request asked for (it was closed), "
                          "and no time was left to send the request on a new one";
        } else if (c != CURLE_OK && detail::http_connected_to_itself(h)) {
            // (what came back was the request, which libcurl never takes for an answer, HTTP/0.9
            // being off: only a failed exchange is asked, so a hit pays nothing for the check)
            x.status = 0;
            x.error = make_error_code(http_errc::refused);
            x.curl_text = "nothing listens on the port (the connection the kernel made was to itself)";
        } else if (rq.sink.over || (c == CURLE_FILESIZE_EXCEEDED && x.status == rq.sink.wanted)) {
            x.over_bound = true;
        } else if (c == CURLE_WRITE_ERROR && rq.sink.dropped > drop_max) {
            // An error status with a long body: the status is the answer.
        } else if (c == CURLE_UNSUPPORTED_PROTOCOL && x.status / 100 == 3) {
            // A redirect to a scheme it may not follow (https to http): the redirect is the answer.
            x.error = make_error_code(http_errc::redirect);
            x.curl_text = "HTTP " + std::to_string(x.status) + ", a redirect to a less safe scheme (refused)";
        } else if (c != CURLE_OK && !(c == CURLE_FILESIZE_EXCEEDED && x.status != 0)) {
            x.error = make_error_code(detail::http_errc_of(c));
            x.curl_text = rq.error_text[0] ? std::string(rq.error_text) : std::string(curl_easy_strerror(c));
        }
        return x;
    }

    /// One exchange on `lane`'s handle, ending by `deadline` (the wait for the handle
    /// included). `upload`: the PUT body; `out`: where a 2xx body goes, up to `max`;
    /// `entry_key`: the key of the entry a GET asks for (again_on_new_connection).
    exchange call(single_lane& lane, char const* method, std::string const& url, std::string_view upload,
                  std::string* out, std::uint64_t max, clock::time_point deadline,
                  key const* entry_key = nullptr) const {
        exchange x;
        std::unique_lock<std::timed_mutex> lock(lane.mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline)) {
            x.error = make_error_code(http_errc::timeout);
            x.curl_text = "another call held the connection for the whole timeout";
            return x;
        }
        if (detail::http_lane_held_for_testing != nullptr) detail::http_lane_held_for_testing(lane_name(lane));
        if (!detail::http_global_init()) {
            x.error = make_error_code(http_errc::other);
            x.curl_text = "libcurl could not be initialised";
            return x;
        }
        if (!own_handles(deadline)) {
            x.error = make_error_code(http_errc::timeout);
            x.curl_text = "another thread held the handles' state for the whole timeout";
            return x;
        }
        if (!lane.handle) lane.handle.reset(curl_easy_init());
        CURL* const h = lane.handle.get();
        if (!h) {
            x.error = make_error_code(http_errc::other);
            x.curl_text = "libcurl could not make a handle";
            return x;
        }
        request rq;
        rq.sockets = &lane.sockets;
        rq.entry_key = entry_key;
        if (!state_->options.token_file.empty()) {
            if (std::error_code const e = current_token(rq.token, deadline)) {
                x.error = e;
                x.curl_text = e == http_errc::timeout ? "another thread held the token for the whole timeout"
                                                      : last_failure().text;
                return x;
            }
        }
        // What is left of the call once the handles and the token were had (each may have
        // waited): the request gets that, not the whole timeout again.
        auto const left = left_until(deadline);
        if (left.count() <= 0) {
            x.error = make_error_code(http_errc::timeout);
            x.curl_text = "the call's time was up before it was sent";
            return x;
        }
        // reset keeps the open connection, the DNS cache and the TLS session.
        curl_easy_reset(h);
        rq.method = method;
        rq.url = url;
        if (!prepare(h, rq, out, max, upload, left, x)) {
            curl_easy_reset(h);
            return x;
        }
        CURLcode c = CURLE_OK;
        {
            detail::sigpipe_blocked const no_sigpipe; // (CURLOPT_NOSIGNAL: libcurl leaves SIGPIPE to us)
            c = curl_easy_perform(h);
            if (again_on_new_connection(h, rq, c, deadline)) c = curl_easy_perform(h);
        }
        x = finish(h, rq, c);
        after_request(h, rq, x);
        // Nothing of this call (the token, the password) stays set on the handle.
        curl_easy_reset(h);
        return x;
    }

    /// Runs `count` requests concurrently on `lane`'s handles (libcurl's multi
    /// interface; at most http_options::batch_connections at a time, each on a kept-alive
    /// connection of the lane's own), in order, all ending by `deadline`: `admit(i)` says
    /// whether request `i` may start while others run (false: it waits for one to end; it
    /// is never asked when none runs), `start(i, h, rq, left, x)`
    /// sets handle `h` up for request `i` (with prepare; false, x's error set: it is not
    /// run), and `done(i, rq, x)` gets each request's exchange, once: one not run, still
    /// running at the deadline or never started has x.error (`timeout` past the deadline,
    /// else `other`). One batch at a time per lane.
    template <class Admit, class Start, class Done>
    void run_batch(batch_lane& lane, std::size_t count, clock::time_point deadline, Admit&& admit, Start&& start,
                   Done&& done) {
        std::vector<bool> answered(count, false);
        auto give = [&](std::size_t i, request const& rq, exchange const& x) {
            if (answered[i]) return;
            answered[i] = true;
            done(i, rq, x);
        };
        auto fail_rest = [&](std::error_code e) {
            request none;
            exchange x;
            x.error = e;
            for (std::size_t i = 0; i < count; ++i) give(i, none, x);
        };
        if (count == 0) return;
        std::unique_lock<std::timed_mutex> lock(lane.mutex, std::defer_lock);
        if (!lock.try_lock_until(deadline) || !detail::http_global_init()) {
            fail_rest(make_error_code(http_errc::timeout));
            return;
        }
        if (detail::http_lane_held_for_testing != nullptr) detail::http_lane_held_for_testing(lane_name(lane));
        if (!own_handles(deadline)) {
            fail_rest(make_error_code(http_errc::timeout));
            return;
        }
        std::string token;
        if (!state_->options.token_file.empty()) {
            if (std::error_code const e = current_token(token, deadline)) {
                fail_rest(e);
                return;
            }
        }
        if (!lane.multi) lane.multi.reset(curl_multi_init());
        CURLM* const m = lane.multi.get();
        std::size_t const width = std::max<std::size_t>(1, std::min<std::size_t>(state_->options.batch_connections, count));
        while (lane.handles.size() < width) {
            CURL* h = curl_easy_init();
            if (!h) break;
            lane.handles.emplace_back(h);
        }
        if (!m || lane.handles.empty()) {
            fail_rest(make_error_code(http_errc::other));
            return;
        }
        curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(width));
        std::vector<std::unique_ptr<request>> running(lane.handles.size());
        // Left by an exception (bad_alloc) while transfers run: each is taken out of the
        // multi handle and reset, so that none runs on into the requests freed with `running`.
        struct detach_on_unwind {
            CURLM* m;
            std::vector<std::unique_ptr<request>>& running;
            decltype(lane.handles)& handles;
            ~detach_on_unwind() {
                for (std::size_t j = 0; j < running.size(); ++j)
                    if (running[j]) {
                        curl_multi_remove_handle(m, handles[j].get());
                        curl_easy_reset(handles[j].get());
                    }
            }
        };
        // (Before the guard: still blocked while the guard closes transfers on an unwind.)
        detail::sigpipe_blocked const no_sigpipe; // (CURLOPT_NOSIGNAL: libcurl leaves SIGPIPE to us)
        detach_on_unwind const detach{m, running, lane.handles};
        std::vector<std::size_t> index_of(lane.handles.size());
        std::vector<std::size_t> idle;
        for (std::size_t j = lane.handles.size(); j-- > 0;) idle.push_back(j);
        std::size_t next = 0;
        std::size_t active = 0;
        auto start_next = [&]() -> bool { // false: the deadline has passed
            while (next < count && !idle.empty()) {
                if (active > 0 && !admit(next)) break;
                auto const left = left_until(deadline);
                if (left.count() <= 0) return false;
                std::size_t const j = idle.back();
                CURL* const h = lane.handles[j].get();
                curl_easy_reset(h);
                auto rq = std::make_unique<request>();
                rq->token = token;
                rq->sockets = &lane.sockets;
                exchange x;
                if (!start(next, h, *rq, left, x) ||
                    curl_easy_setopt(h, CURLOPT_PRIVATE, reinterpret_cast<char*>(j)) != CURLE_OK ||
                    curl_multi_add_handle(m, h) != CURLM_OK) {
                    curl_easy_reset(h);
                    if (!x.error) x.error = make_error_code(http_errc::other);
                    give(next, *rq, x);
                    ++next;
                    continue;
                }
                idle.pop_back();
                index_of[j] = next++;
                running[j] = std::move(rq);
                ++active;
            }
            return true;
        };
        auto finished = [&](std::size_t j, CURLcode c) {
            CURL* const h = lane.handles[j].get();
            curl_multi_remove_handle(m, h);
            if (again_on_new_connection(h, *running[j], c, deadline)) {
                if (curl_multi_add_handle(m, h) == CURLM_OK) return; // (running again)
                c = CURLE_FAILED_INIT; // (its answer is gone: an error)
            }
            exchange const x = finish(h, *running[j], c);
            after_request(h, *running[j], x);
            curl_easy_reset(h);
            std::unique_ptr<request> const rq = std::move(running[j]);
            idle.push_back(j);
            --active;
            give(index_of[j], *rq, x);
        };
        bool in_time = start_next();
        while (active > 0 && in_time) {
            int still = 0;
            if (curl_multi_perform(m, &still) != CURLM_OK) break;
            int queued = 0;
            while (CURLMsg* msg = curl_multi_info_read(m, &queued)) {
                if (msg->msg != CURLMSG_DONE) continue;
                char* p = nullptr;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
                finished(reinterpret_cast<std::size_t>(p), msg->data.result);
            }
            in_time = start_next();
            if (active == 0) break;
            auto const left = left_until(deadline);
            if (left.count() <= 0) {
                in_time = false;
                break;
            }
            if (curl_multi_poll(m, nullptr, 0, static_cast<int>(std::min<std::int64_t>(left.count(), 100)), nullptr) !=
                CURLM_OK)
                break;
        }
        // What is still running or was never started: the deadline passed (or libcurl failed).
        exchange late;
        late.error = make_error_code(in_time ? http_errc::other : http_errc::timeout);
        for (std::size_t j = 0; j < running.size(); ++j) {
            if (!running[j]) continue;
            CURL* const h = lane.handles[j].get();
            after_request(h, *running[j], late); // (not used again, should libcurl keep it)
            curl_multi_remove_handle(m, h); // its connection is closed, not kept
            curl_easy_reset(h);
            std::unique_ptr<request> const rq = std::move(running[j]);
            give(index_of[j], *rq, late);
        }
        fail_rest(late.error);
    }

    /// read_many's work (see there): keys[i]'s answer in out[i].
    void read_batch(std::vector<key> const& keys, std::size_t max,
                    std::vector<std::pair<read_result, std::string>>& out) {
        // batch_bytes (the bodies read) + reserved (the bounds of the GETs running) never
        // passes batch_max: a body takes at most its bound, then frees the rest of it.
        std::size_t batch_bytes = 0;
        std::size_t reserved = 0;
        std::vector<std::size_t> reserved_for(keys.size(), 0);
        std::size_t const batch_max = state_->options.batch_max_bytes;
        auto room = [&] { return batch_max - std::min(batch_max, batch_bytes + reserved); };
        // Each connection the batch uses gets a share of the bound, so that all of them
        // run (not batch_max / max of them) and the bound still holds.
        std::size_t const lanes = std::max<std::size_t>(1, std::min(state_->options.batch_connections, keys.size()));
        std::size_t const share = std::min(max, std::max<std::size_t>(1, batch_max / lanes));
        auto admit = [&](std::size_t) { return room() >= share; };
        auto start = [&](std::size_t i, CURL* h, request& rq, std::chrono::milliseconds left, exchange& x) {
            rq.method = "GET";
            rq.url = entry_url(keys[i]);
            rq.entry_key = &keys[i];
            std::size_t const bound = std::min(share, room());
            rq.bound = bound;
            reserved += bound;
            reserved_for[i] = bound;
            return prepare(h, rq, &out[i].second, bound, {}, left, x);
        };
        auto done = [&](std::size_t i, request const& rq, exchange const& x) {
            reserved -= reserved_for[i];
            reserved_for[i] = 0;
            bool const entry_bound = rq.bound == max; // (not the batch's, smaller)
            std::string& bytes = out[i].second;
            // A body not kept gives its memory back at once (a failed one may hold its
            // announced length); a kept one counts as the memory it holds.
            if (x.over_bound) {
                std::string().swap(bytes);
                // Past the entry bound: too_large; past what the batch may still take: an error.
                out[i].first = entry_bound ? read_result{read_status::too_large, make_error_code(http_errc::too_large)}
                                           : read_result{read_status::error, make_error_code(http_errc::too_large)};
            } else if (!x.error && (x.status == 404 || x.status == 410)) {
                std::string().swap(bytes);
                out[i].first = {read_status::absent, {}};
            } else if (x.error || x.status != 200) { // (204, 206: bad_status, as read answers)
                std::string().swap(bytes);
                std::error_code const e = x.error ? x.error : make_error_code(detail::http_errc_of_status(x.status));
                if (e == http_errc::too_large) {
                    out[i].first = {read_status::too_large, e};
                } else {
                    if (!rq.method.empty()) fail("GET", keys[i], x, e); // (one that ran)
                    out[i].first = {read_status::error, e};
                }
            } else {
                batch_bytes += bytes.capacity();
                out[i].first = {read_status::found, {}};
            }
        };
        run_batch(state_->reads, keys.size(), deadline_of_call(), admit, start, done);
    }

    /// write's work on `lane`, ending by `deadline`.
    std::error_code write_until(single_lane& lane, key const& k, std::string_view bytes,
                                clock::time_point deadline) noexcept {
        try {
            std::string const url = entry_url(k);
            exchange x = call(lane, "PUT", url, bytes, nullptr, 0, deadline);
            if (!x.error && (x.status == 409 || x.status == 500) && state_->options.layout != http_layout::flat) {
                // The folder may be missing: WebDAV answers 409 (RFC 4918), nginx without
                // create_full_put_path 500. Make the base and the folder (either may exist
                // already: its MKCOL fails, harmlessly), then put again, once.
                std::string const folder = url.substr(0, url.rfind('/') + 1);
                exchange const base = call(lane, "MKCOL", state_->address.base(), {}, nullptr, 0, deadline);
                exchange const made = base.error ? base : call(lane, "MKCOL", folder, {}, nullptr, 0, deadline);
                x = made.error ? made : call(lane, "PUT", url, bytes, nullptr, 0, deadline);
            }
            if (!x.error && x.status / 100 == 2) return {};
            std::error_code const e = x.error ? x.error : make_error_code(detail::http_errc_of_status(x.status));
            fail("PUT", k, x, e);
            return e;
        } catch (...) {
            return make_error_code(http_errc::other);
        }
    }

    /// write_many's work (see there): entries[i]'s answer in out[i]. A PUT the server
    /// answers 409 or 500 in a layout of folders is made again alone by write (which makes
    /// the folder first), within what is left of the batch's time.
    void write_batch(std::vector<std::pair<key, std::string_view>> const& entries, std::vector<std::error_code>& out) {
        clock::time_point const deadline = deadline_of_call();
        std::vector<std::size_t> again;
        auto start = [&](std::size_t i, CURL* h, request& rq, std::chrono::milliseconds left, exchange& x) {
            rq.method = "PUT";
            rq.url = entry_url(entries[i].first);
            return prepare(h, rq, nullptr, 0, entries[i].second, left, x);
        };
        auto done = [&](std::size_t i, request const& rq, exchange const& x) {
            if (!x.error && x.status / 100 == 2) {
                out[i] = {};
                return;
            }
            if (!x.error && (x.status == 409 || x.status == 500) && state_->options.layout != http_layout::flat) {
                out[i] = make_error_code(detail::http_errc_of_status(x.status));
                again.push_back(i);
                return;
            }
            std::error_code const e = x.error ? x.error : make_error_code(detail::http_errc_of_status(x.status));
            if (!rq.method.empty()) fail("PUT", entries[i].first, x, e); // (one that ran)
            out[i] = e;
        };
        run_batch(state_->uploads, entries.size(), deadline, [](std::size_t) { return true; }, start, done);
        for (std::size_t i : again)
            out[i] = write_until(state_->upload_calls, entries[i].first, entries[i].second, deadline);
    }

    std::unique_ptr<state> state_;
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::http_storage>::value);
static_assert(compile_cache::detail::has_write_many<compile_cache::http_storage>::value);
