// Another translation unit of the same host, using the same non-template functions.
#include <compile_cache/key/builder.hpp>
#include <compile_cache/printable.hpp>

#include <string>

std::string user_b() {
    return compile_cache::printable("b") + compile_cache::key_builder<>().add("ir", 1).finish().value().hex();
}
