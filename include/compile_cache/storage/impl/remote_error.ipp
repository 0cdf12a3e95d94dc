// compile_cache: the definitions of storage/remote_error.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

char const* to_string(remote_error e) noexcept {
    switch (e) {
    case remote_error::timeout: return "timeout";
    case remote_error::refused: return "refused";
    case remote_error::auth: return "auth";
    case remote_error::protocol: return "protocol";
    case remote_error::too_large: return "too-large";
    case remote_error::corrupt: return "corrupt";
    case remote_error::unauthenticated: return "unauthenticated";
    case remote_error::other: return "other";
    case remote_error::node_down: return "node-down";
    case remote_error::cluster_node: return "cluster-node";
    case remote_error::node_timeout: return "node-timeout";
    }
    return "other";
}

std::string detail::remote_error_category::message(int value) const {
    switch (static_cast<remote_error>(value - 1)) {
    case remote_error::timeout: return "the server did not answer in time";
    case remote_error::refused: return "the server refused the connection or is unreachable";
    case remote_error::auth: return "the server refused the credentials or the command";
    case remote_error::protocol: return "the server's reply was invalid, too long or cut short";
    case remote_error::too_large: return "the value is larger than allowed";
    case remote_error::corrupt: return "the entry is damaged or not an entry";
    case remote_error::unauthenticated: return "the entry's authentication does not verify";
    case remote_error::other: return "the server reported an error";
    case remote_error::node_down: return "a node of the cluster is out of reach; only its keys fail";
    case remote_error::node_timeout: return "a node of the cluster did not answer in time; only its keys fail";
    case remote_error::cluster_node:
        return "the server is a node of a Redis Cluster, not a server of its own: address the cluster as "
               "redis+cluster://host:port";
    }
    return "unknown remote error";
}

std::error_condition detail::remote_error_category::default_error_condition(int value) const noexcept {
    switch (static_cast<remote_error>(value - 1)) {
    case remote_error::timeout:
    case remote_error::node_timeout: return std::errc::timed_out;
    case remote_error::refused:
    case remote_error::node_down: return std::errc::connection_refused;
    case remote_error::auth: return std::errc::permission_denied;
    case remote_error::protocol: return std::errc::protocol_error;
    case remote_error::too_large: return std::errc::value_too_large;
    case remote_error::corrupt:
    case remote_error::unauthenticated:
    case remote_error::other:
    case remote_error::cluster_node: break;
    }
    return {value, *this};
}

std::error_category const& remote_category() noexcept {
    return detail::error_category_object<detail::remote_error_category>.object;
}

remote_error remote_error_of(std::error_code const& e) noexcept {
    if (e.category() == remote_category() && e.value() >= 1 &&
        e.value() <= static_cast<int>(remote_error::node_timeout) + 1) {
        auto const why = static_cast<remote_error>(e.value() - 1);
        if (why == remote_error::node_down) return remote_error::refused;
        if (why == remote_error::node_timeout) return remote_error::timeout;
        if (why == remote_error::cluster_node) return remote_error::other;
        return why;
    }
    if (e == std::errc::timed_out) return remote_error::timeout;
    if (e == std::errc::connection_refused || e == std::errc::host_unreachable || e == std::errc::network_unreachable ||
        e == std::errc::no_such_file_or_directory || e == std::errc::connection_reset || e == std::errc::not_connected)
        return remote_error::refused;
    if (e == std::errc::permission_denied || e == std::errc::operation_not_permitted) return remote_error::auth;
    if (e == std::errc::protocol_error || e == std::errc::bad_message) return remote_error::protocol;
    if (e == std::errc::value_too_large || e == std::errc::file_too_large || e == std::errc::message_size)
        return remote_error::too_large;
    return remote_error::other;
}

} // namespace compile_cache

#endif // COMPILE_CACHE_INCLUDE_IMPL
