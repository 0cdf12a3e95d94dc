// compile_cache: version numbers that go into every key and every entry.
#pragma once

#include <compile_cache/detail/config.hpp>

#define COMPILE_CACHE_VERSION_MAJOR 0
#define COMPILE_CACHE_VERSION_MINOR 1
#define COMPILE_CACHE_VERSION_PATCH 0

namespace compile_cache {

/// Bumped whenever the canonical key message or the envelope layout changes, so
/// that entries written by an older library are never mistaken for current ones.
inline constexpr unsigned format_version = 1;

} // namespace compile_cache
