// The one translation unit of separate compilation: compile_cache/src.hpp.
#include <compile_cache/src.hpp>
