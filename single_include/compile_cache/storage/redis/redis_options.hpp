// compile_cache: the settings of a redis_storage, what its last failure said, and how a
// Redis password file is read. Part of the optional Redis storage; needs no hiredis.
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>

namespace compile_cache {

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
    /// A batch read (redis_storage::read_many) takes at most this many bytes of replies
    /// into memory in all; the keys whose replies come after are answered as errors (and
    /// up to 15 before them: see redis_storage::read_many).
    std::size_t batch_max_bytes = std::size_t(256) << 20;
};

/// What the last failing call of a redis_storage saw (for a log line; no password).
struct redis_failure {
    std::error_code error;
    std::string text;
};

/// Reads a Redis password as `PREFIX_REMOTE_PASSWORD_FILE` is read: by read_secret_file's
/// rules (a regular file, a pipe or a FIFO, not writable by others), then one trailing
/// line end (`\n` or `\r\n`) dropped. Returns an empty string, or why the file cannot be
/// used (`password` is then unspecified).
inline std::string read_redis_password_file(std::string const& path, std::string& password) {
    std::string const reason = read_secret_file(path, password);
    if (!reason.empty()) return reason;
    if (!password.empty() && password.back() == '\n') password.pop_back();
    if (!password.empty() && password.back() == '\r') password.pop_back();
    return {};
}

} // namespace compile_cache
