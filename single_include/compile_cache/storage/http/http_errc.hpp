// compile_cache: the reasons an HTTP storage call fails, as an error_code category whose
// conditions are the std::errc ones a tier counts (tiered_storage's remote_error_of).
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <string>
#include <system_error>

namespace compile_cache {

enum class http_errc {
    timeout = 1,    ///< no answer within the connect or request timeout
    refused,        ///< nothing listens, or the name does not resolve, or the host is unreachable
    reset,          ///< the connection broke in the middle of an exchange
    auth,           ///< 401 or 403: the credentials, or the permissions, are refused
    credentials,    ///< the token or password file cannot be read now
    tls,            ///< TLS failed: the server's certificate did not verify, or ours was refused
    too_large,      ///< 413, or a body larger than the caller's bound
    redirect,       ///< a 3xx the settings do not let the storage follow
    server_error,   ///< a 5xx
    bad_status,     ///< any other status the call does not expect
    cannot_list,    ///< the server offers no WebDAV PROPFIND (the tool cannot list it)
    other,          ///< anything else (out of memory, libcurl could not start)
    listing_too_large, ///< a listing (list) past http_options::listing_max_bytes or listing_max_items
};

namespace detail {
class http_category_impl final : public std::error_category {
public:
    char const* name() const noexcept override { return "compile_cache.http"; }
    std::string message(int value) const override {
        switch (static_cast<http_errc>(value)) {
        case http_errc::timeout: return "the HTTP server did not answer in time";
        case http_errc::refused: return "the HTTP server refused the connection, is unreachable or its name does not resolve";
        case http_errc::reset: return "the connection to the HTTP server broke during the exchange";
        case http_errc::auth: return "the HTTP server refused the credentials or the permission (401 or 403)";
        case http_errc::credentials: return "the credentials file (token or password) cannot be read";
        case http_errc::tls: return "TLS failed (the server's certificate did not verify, or the client's was refused)";
        case http_errc::too_large: return "the entry is larger than allowed";
        case http_errc::redirect: return "the HTTP server answered with a redirect, which the settings do not follow";
        case http_errc::server_error: return "the HTTP server failed (5xx)";
        case http_errc::bad_status: return "the HTTP server answered with a status the call does not expect";
        case http_errc::cannot_list: return "the HTTP server cannot list its entries (it offers no WebDAV PROPFIND)";
        case http_errc::other: return "the HTTP call failed";
        case http_errc::listing_too_large:
            return "the listing of the HTTP server's entries is larger than allowed "
                   "(http_options::listing_max_bytes, listing_max_items)";
        }
        return "unknown HTTP error";
    }
    /// The portable condition of each reason, so that a tier counts it by std::errc:
    /// timeouts, refusals, resets, 5xx, TLS failures and unexpected answers put the remote
    /// in back-off; 401/403 count as auth.
    std::error_condition default_error_condition(int value) const noexcept override {
        switch (static_cast<http_errc>(value)) {
        case http_errc::timeout: return std::errc::timed_out;
        case http_errc::refused: return std::errc::connection_refused;
        case http_errc::reset: return std::errc::connection_reset;
        case http_errc::auth:
        case http_errc::credentials: return std::errc::permission_denied;
        case http_errc::tls:
        case http_errc::redirect:
        case http_errc::server_error:
        case http_errc::bad_status: return std::errc::protocol_error;
        case http_errc::too_large:
        case http_errc::listing_too_large: return std::errc::value_too_large;
        case http_errc::cannot_list: return std::errc::operation_not_supported;
        case http_errc::other: break;
        }
        return {value, *this};
    }
};
} // namespace detail

/// The category of http_errc. Never throws: its object is made before any call.
inline std::error_category const& http_category() noexcept {
    return detail::error_category_object<detail::http_category_impl>.object;
}

inline std::error_code make_error_code(http_errc e) noexcept { return {static_cast<int>(e), http_category()}; }

} // namespace compile_cache

template <>
struct std::is_error_code_enum<compile_cache::http_errc> : std::true_type {};
