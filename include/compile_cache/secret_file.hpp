// compile_cache: reading a secret from a file, the way PREFIX_SECRET_FILE (the key
// that authenticates entries) and a Redis password file are read, for hosts and tools
// that take a secret file of their own.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/posix_io.hpp>

#include <chrono>
#include <cstddef>
#include <string>

namespace compile_cache {

/// A secret file larger than this is refused: it is not a secret but the wrong file.
inline constexpr std::size_t max_secret_file_size = std::size_t{64} << 10;

/// How long a pipe or FIFO named as a secret file (`<(command)`) may take to deliver
/// the secret and close: reading it never blocks longer.
inline constexpr std::chrono::milliseconds secret_pipe_timeout{1000};

/// Who besides its owner a file read by read_secret_file may be open to; checked on the
/// descriptor read (fstat), before a byte is read. docs/security.md says why each.
enum class secret_file_rule {
    /// Mode o+w refused (anyone could have planted their secret): a password or token file.
    not_world_writable,
    /// PREFIX_SECRET_FILE's HMAC secret: o+w and o+r refused (any user could read the
    /// secret and forge entries); group read stays allowed, for a shared directory's group.
    hmac_secret,
    /// A signing key (PREFIX_SIGNING_KEY_FILE): any group or other permission bit refused.
    signing_key,
    /// A trusted-keys file (PREFIX_TRUSTED_KEYS_FILE): refused unless owned by this
    /// process's effective user or root, and when group or other users may write it (as
    /// ssh's StrictModes): anyone else who can change it could add their own key.
    trusted_keys,
};

/// Reads the whole secret file at `path` into `secret`. On failure returns why (one
/// phrase) and leaves `secret` empty; an empty file is a failure too, and so is a file
/// open to others beyond what `rule` allows. A pipe or FIFO is read until its writer
/// closes it, within secret_pipe_timeout (a FIFO that no program has open for writing
/// reads as empty).
COMPILE_CACHE_DECL std::string read_secret_file(std::string const& path, std::string& secret, secret_file_rule rule);

/// read_secret_file under secret_file_rule::not_world_writable (the form of earlier
/// versions, kept with its signature).
COMPILE_CACHE_DECL std::string read_secret_file(std::string const& path, std::string& secret);

} // namespace compile_cache

#include <compile_cache/impl/secret_file.ipp>
