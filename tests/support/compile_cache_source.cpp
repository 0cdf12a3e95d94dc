// The one translation unit that compiles the library's non-template functions when the
// tests are built with COMPILE_CACHE_TEST_SEPARATE_COMPILATION, as a host's would be.
#include <compile_cache/src.hpp>
