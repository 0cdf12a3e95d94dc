// A shared library that compiles "kernels" through a cache of its own (make_key_builder), built
// twice as two code generators (CODEGEN_MODULE_NAME), which build_id_test.cpp loads side by side.

#include <compile_cache/default_cache.hpp>

#include <cstddef>
#include <cstring>
#include <string>

#ifndef CODEGEN_MODULE_NAME
#error "CODEGEN_MODULE_NAME names this build of the code generator"
#endif

/// Gets the kernel "k" from the cache in `directory`, compiling it (to this code generator's
/// name) on a miss, as a host whose compiler is this library would; writes it to `out`
/// (`size` bytes at most, NUL included). The host version string is the same in every build.
extern "C" void compile_cache_test_codegen(char const* directory, char* out, std::size_t size) {
    compile_cache::default_cache cache{compile_cache::directory_storage(directory)};
    compile_cache::key_result const k = cache.make_key_builder("codegen 1.0").add("ir", "k").finish();
    std::string const made =
        cache.get_or_compile<std::string>(k, {}, [] { return std::string(CODEGEN_MODULE_NAME); }).value;
    std::strncpy(out, made.c_str(), size - 1);
    out[size - 1] = '\0';
}

namespace {
/// What this library compiles, declared as a translation unit keeps its own types: in an
/// unnamed namespace, whose name another translation unit's type has too.
struct artifact {
    std::string text;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & text;
    }
};
} // namespace

/// Stores this library's `artifact` under the key of "k" alone (no toolchain) in the cache in
/// `directory`, as a second kind of artifact under the key of the first would be.
extern "C" void compile_cache_test_codegen_store_artifact(char const* directory) {
    compile_cache::default_cache cache{compile_cache::directory_storage(directory)};
    compile_cache::key_result const k = compile_cache::key_builder<>().add("ir", "k").finish();
    (void)cache.get_or_compile<artifact>(k, {}, [] { return artifact{"this library's artifact"}; });
}
