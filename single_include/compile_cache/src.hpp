// compile_cache: the library's non-template functions, compiled once, for a host that
// builds with COMPILE_CACHE_SEPARATE_COMPILATION defined in every translation unit.
// Include this header in exactly one of the host's .cpp files, before any other
// compile_cache header; every other translation unit then parses only declarations
// (docs/design.md, "What including the library costs"). Without the macro the library
// is header-only, as by default, and this header is not needed.
#pragma once

#if !defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#error "compile_cache/src.hpp: define COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit of the host, or do not include this header"
#endif
#if defined(COMPILE_CACHE_DETAIL_CONFIG_HPP)
#error "compile_cache/src.hpp: include it first in its translation unit, before any other compile_cache header"
#endif

#define COMPILE_CACHE_SOURCE
#include <compile_cache/compile_cache.hpp>
