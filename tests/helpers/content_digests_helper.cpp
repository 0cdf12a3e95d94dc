// A program linked without a GNU build-id (tests/CMakeLists.txt) that registers no digests
// of its own: it includes detail/build_id.hpp alone, as the LLVM adapter's side without RTTI
// does. It loads the library at its argument (registering_module), which registers its
// digests, and prints, as lines of `name=value`, what module_identity names this program
// by while the library is loaded (`registered=`), whether unloading it unmapped it
// (`unloaded=yes` or `no`) and what it names the program by after (`after=`).
#include <compile_cache/detail/build_id.hpp>

#include <cstdio>
#include <string>

#include <dlfcn.h>

namespace {

__attribute__((noinline)) int in_this_program(int x) { return x + 1; }

} // namespace

int main(int argc, char** argv) {
    namespace cc = compile_cache;
    if (argc != 2) {
        std::fprintf(stderr, "usage: content_digests_helper LIBRARY\n");
        return 2;
    }
    void const* program = cc::detail::code_address(&in_this_program);
    void* const library = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    void const* const digests = library ? ::dlsym(library, "compile_cache_test_registering_digests") : nullptr;
    if (!digests) {
        std::fprintf(stderr, "cannot load %s: %s\n", argv[1], ::dlerror());
        return 1;
    }
    std::printf("registered=%s\n", cc::detail::module_identity({program}).c_str());
    ::dlclose(library);
    std::printf("unloaded=%s\n", cc::detail::module_containing(digests).found ? "no" : "yes");
    std::fflush(stdout);
    std::printf("after=%s\n", cc::detail::module_identity({program}).c_str());
    return 0;
}
