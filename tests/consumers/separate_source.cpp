// The one translation unit of a consumer built with COMPILE_CACHE_SEPARATE_COMPILATION:
// the library's non-template functions, compiled once (compile_cache/src.hpp).
#include <compile_cache/src.hpp>
