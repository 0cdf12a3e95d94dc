// compile_cache: the running program identified by the SHA-256 of its executable
// file, for when it has no build-id to identify it (detail/build_id.hpp). It sits
// beside its one user, key/toolchain.hpp: it needs hasher/sha256.hpp, which detail/
// (below the hasher) must not include.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/build_id.hpp>
#include <compile_cache/detail/made_once.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <atomic>
#include <memory>
#include <string>

namespace compile_cache::detail {

/// "exe-sha256:" and the lower-case hex SHA-256 of the file at `path`; empty when it
/// cannot be read to its end. Never throws.
COMPILE_CACHE_DECL std::string file_sha256_id(char const* path) noexcept;

/// "sha256:" and the lower-case hex SHA-256 of the content of the open file `fd`, read
/// from its first byte (with pread: its offset is not used) to its end; empty when it
/// cannot be read to its end. Never throws.
COMPILE_CACHE_DECL std::string fd_sha256_id(int fd) noexcept;

/// The running program's executable, hashed once per process: /proc/self/exe where
/// there is a /proc (Linux, and other systems that mount one); empty elsewhere.
COMPILE_CACHE_DECL std::string const& main_program_file_id() noexcept;

/// The digests module_identity (detail/build_id.hpp) reads modules without a build-id
/// with: main_program_file_id and fd_sha256_id (toolchain::of_code gives them).
inline content_digests const sha256_content_digests{&main_program_file_id, &fd_sha256_id};

/// Registers sha256_content_digests while a module that includes this header is loaded, for
/// module_identity's callers that cannot include it (the LLVM adapter's side without RTTI).
inline content_digests_registration const sha256_content_digests_registration{&sha256_content_digests};

} // namespace compile_cache::detail

#include <compile_cache/key/detail/impl/executable_digest.ipp>
