// compile_cache: config.hpp, and RTTI, which the cache needs (Boost.Serialization and
// the registry use typeid). Included first by the headers that need it.
#pragma once

#include <compile_cache/detail/config.hpp>

#if !defined(__GXX_RTTI) && !defined(_CPPRTTI) && !defined(__cpp_rtti)
#error "compile_cache: needs RTTI (drop -fno-rtti); a JIT compiled with -fno-rtti includes only compile_cache/llvm/object_cache.hpp and gets its object_store from a translation unit with RTTI (see compile_cache/llvm/object_store.hpp)"
// Fatal, so that compilation stops at the sentence (config.hpp says why).
#include <compile_cache: compilation stopped; fix the flag named above>
#endif
