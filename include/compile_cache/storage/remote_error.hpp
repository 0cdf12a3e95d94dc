// compile_cache: why a call to a remote storage failed — one set of conditions shared by
// every remote (the Redis client, the HTTP storage) and by the tier that counts them.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/error_category_object.hpp>

#include <cstddef>
#include <string>
#include <new>
#include <system_error>
#include <type_traits>

namespace compile_cache {

/// Why a remote call failed. A remote storage returns these as error codes
/// (`make_error_code(remote_error::timeout)`, category remote_category()); a tier counts
/// any remote's error_code by remote_error_of. The first remote_error_count values are
/// the reasons a tier counts (and their order is the order of its counters); the ones
/// after them are finer conditions a remote reports, each counted as one of the first.
enum class remote_error : std::size_t {
    timeout,         ///< no answer within the remote's timeout (connect or call)
    refused,         ///< nothing listens, the connection was reset, or the host is unreachable
    auth,            ///< the server refused the credentials or the command's permissions
    protocol,        ///< a reply that is not valid, longer than asked for, or cut short
    too_large,       ///< larger than the caller's bound (the cache's entry bound), or than the server takes
    corrupt,         ///< an entry whose envelope the cache found damaged or not an entry
    unauthenticated, ///< an entry whose HMAC does not verify under the cache's secret
    other,           ///< any other error reply or I/O error
    node_down,       ///< one node of a cluster is out of reach while the others answer: only its keys
                     ///< fail (counted as refused; the remote's partial_failure() says it is partial)
    cluster_node,    ///< the address names one node of a cluster, which serves only some keys
                     ///< (counted as other)
    node_timeout,    ///< one node of a cluster timed out while the others answer: only its keys fail
                     ///< (counted as timeout; the remote's partial_failure() says it is partial)
};

/// How many reasons a tier counts: the values of remote_error before node_down.
inline constexpr std::size_t remote_error_count = 8;

/// The short name of a reason ("timeout", "too-large", "node-down", ...), for counters and logs.
COMPILE_CACHE_DECL char const* to_string(remote_error e) noexcept;

namespace detail {
class remote_error_category final : public std::error_category {
public:
    char const* name() const noexcept override { return "compile_cache.remote"; }
    COMPILE_CACHE_DECL std::string message(int value) const override;
    /// The portable std::errc condition of each reason (timeout and node_timeout: timed_out,
    /// refused and node_down: connection_refused, auth: permission_denied, protocol: protocol_error,
    /// too_large: value_too_large), so that code written against std::errc tells them.
    COMPILE_CACHE_DECL std::error_condition default_error_condition(int value) const noexcept override;
};
} // namespace detail

/// The category of the error codes of remote_error.
COMPILE_CACHE_DECL std::error_category const& remote_category() noexcept;

/// remote_error as an error code: its value is the enumerator's plus one (0 is success).
inline std::error_code make_error_code(remote_error e) noexcept {
    return {static_cast<int>(e) + 1, remote_category()};
}

/// The reason counted for a remote's error code, one of the first remote_error_count:
/// a remote_error as it is (node_down as refused, node_timeout as timeout, cluster_node as other); another
/// category's code by its std::errc condition (timed_out; connection_refused,
/// host_unreachable, network_unreachable, no_such_file_or_directory, connection_reset,
/// not_connected; permission_denied, operation_not_permitted; protocol_error,
/// bad_message; value_too_large, file_too_large, message_size), else other.
COMPILE_CACHE_DECL remote_error remote_error_of(std::error_code const& e) noexcept;

} // namespace compile_cache

template <>
struct std::is_error_code_enum<compile_cache::remote_error> : std::true_type {};

#include <compile_cache/storage/impl/remote_error.ipp>
