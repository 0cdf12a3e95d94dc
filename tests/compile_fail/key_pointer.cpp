// expect: a pointer has no content
// A raw pointer's value is an address, different in every run: adding one to a key
// builder must not compile (describe the pointee, or number it with ordinal_map).
#include <compile_cache/key/builder.hpp>

int main() {
    int callee = 0;
    int* p = &callee;
    compile_cache::key_builder<> kb;
    kb.add("callee", p);
    return kb.finish().ok() ? 0 : 1;
}
