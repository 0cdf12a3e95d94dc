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

/// Reads the whole secret file at `path` into `secret`. On failure returns why (one
/// phrase) and leaves `secret` empty; an empty file is a failure too, and so is a file
/// any user may write (mode o+w: anyone could have planted their secret). A pipe or FIFO
/// is read until its writer closes it, within secret_pipe_timeout (a FIFO that no
/// program has open for writing reads as empty).
COMPILE_CACHE_DECL std::string read_secret_file(std::string const& path, std::string& secret);

} // namespace compile_cache

#include <compile_cache/impl/secret_file.ipp>
