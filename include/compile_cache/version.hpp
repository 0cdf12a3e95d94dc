// compile_cache: the library's release number, and the version of the key message that
// every key is made with.
#pragma once

#include <compile_cache/detail/config.hpp>

// The release; nothing is keyed on it.
#define COMPILE_CACHE_VERSION_MAJOR 0
#define COMPILE_CACHE_VERSION_MINOR 1
#define COMPILE_CACHE_VERSION_PATCH 0

namespace compile_cache {

/// The version of the canonical key message: the first field of every key
/// (key_builder::finish) and the toolchain component's library_format. A library that
/// derives keys differently carries another number, so that its keys never equal
/// these. The envelope's layout has its own number (envelope_version, envelope.hpp).
/// 2: a multi container's equivalent elements are keyed in order (key/writer.hpp), and
/// entries name their artifact type (basic_cache::entry_format_id).
inline constexpr unsigned format_version = 2;

} // namespace compile_cache
