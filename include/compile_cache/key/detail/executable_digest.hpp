// compile_cache: the running program identified by the SHA-256 of its executable
// file, for when it has no build-id to identify it (detail/build_id.hpp). It sits
// beside its one user, key/toolchain.hpp: it needs hasher/sha256.hpp, which detail/
// (below the hasher) must not include.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/hasher/sha256.hpp>

#include <string>

namespace compile_cache::detail {

/// "exe-sha256:" and the lower-case hex SHA-256 of the file at `path`; empty when it
/// cannot be read to its end. Never throws.
COMPILE_CACHE_DECL std::string file_sha256_id(char const* path) noexcept;

/// The running program's executable, hashed once per process: /proc/self/exe where
/// there is a /proc (Linux, and other systems that mount one); empty elsewhere.
COMPILE_CACHE_DECL std::string const& main_program_file_id() noexcept;

} // namespace compile_cache::detail

#include <compile_cache/key/detail/impl/executable_digest.ipp>
