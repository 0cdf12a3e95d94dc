// compile_cache/src.hpp in a build that did not ask for separate compilation: the
// definitions would be inline anyway, so the header says what is missing.
// expect: define COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit
#include <compile_cache/src.hpp>
