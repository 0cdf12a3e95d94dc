// compile_cache/src.hpp after another compile_cache header in its translation unit: the
// headers read before it were compiled as declarations only, so it must come first.
// expect: include it first in its translation unit
#define COMPILE_CACHE_SEPARATE_COMPILATION
#include <compile_cache/key/key.hpp>
#include <compile_cache/src.hpp>
