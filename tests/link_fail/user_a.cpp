// A translation unit of a host that uses the library (a key and an escaped name), built
// header-only or with COMPILE_CACHE_SEPARATE_COMPILATION as run.sh asks.
#include <compile_cache/key/builder.hpp>
#include <compile_cache/printable.hpp>

#include <string>

std::string user_a() {
    return compile_cache::printable("a") + compile_cache::key_builder<>().add("ir", 1).finish().value().hex();
}
