// compile_cache: the definitions of storage/tiered_storage.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

remote_error remote_error_of(std::error_code const& e) noexcept {
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
