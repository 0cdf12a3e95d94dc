// A program linked without a GNU build-id (tests/CMakeLists.txt) that prints, as lines of
// `name=value`, what toolchain::current() and toolchain::of_code() name it by, a key over
// each (`current-key=`, `key=`), and the output of its "code generator" (a marker string,
// which build_id_test.cpp changes in a copy of this file to make another build of the same
// size). With a path argument, it also loads that library (a copy of no_build_id_module)
// and prints `library=` (what of_code names it by) and `library-output=` (its marker).
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <cstdio>
#include <string>

#include <dlfcn.h>

namespace {

/// What this build of the program "generates" (as LLVM linked statically would).
char const marker[] = "compile_cache of_code helper marker A";

__attribute__((noinline)) std::string generate_code() { return marker; }

} // namespace

int main(int argc, char** argv) {
    namespace cc = compile_cache;
    cc::toolchain const current = cc::toolchain::current("host 1.0");
    cc::toolchain const code = cc::toolchain::of_code({cc::code_address(&generate_code)}, "host 1.0");
    cc::key_builder<> kb, current_kb;
    kb.add("toolchain", code).add("ir", std::string("kernel"));
    current_kb.add("toolchain", current).add("ir", std::string("kernel"));
    std::printf("current=%s\nof_code=%s\nkey=%s\ncurrent-key=%s\noutput=%s\n", current.host_build_id.c_str(),
                code.host_build_id.c_str(), kb.finish().value().hex().c_str(),
                current_kb.finish().value().hex().c_str(), generate_code().c_str());
    if (argc > 1) {
        void* const library = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        void const* const function = library ? ::dlsym(library, "compile_cache_test_no_build_id") : nullptr;
        void const* const output = library ? ::dlsym(library, "compile_cache_test_no_build_id_marker") : nullptr;
        if (!function || !output) {
            std::fprintf(stderr, "cannot load %s\n", argv[1]);
            return 1;
        }
        std::printf("library=%s\nlibrary-output=%s\n", cc::toolchain::of_code({function}).host_build_id.c_str(),
                    static_cast<char const*>(output));
    }
    return 0;
}
