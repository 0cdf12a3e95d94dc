// Control for the two src_* cases: the one translation unit of separate compilation.
// expect: success
#define COMPILE_CACHE_SEPARATE_COMPILATION
#include <compile_cache/src.hpp>
