// compile_cache: the default composition — SHA-256 keys, Boost binary archives, the
// registry, and a directory on disk. The only place basic_cache meets directory_storage.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>

#include <compile_cache/cache.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

namespace compile_cache {

/// The common composition: SHA-256 keys, Boost binary archives, the registry, and a
/// directory on disk (configured by `PREFIX_DIR` and the other settings of
/// directory_storage::from_env).
using default_cache = basic_cache<sha256, boost_binary, registry, directory_storage>;

} // namespace compile_cache
