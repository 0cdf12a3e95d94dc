// expect: specialize compile_cache::describes_whole<T>
// A describe written as a function template hides from the exact-type check (argument
// deduction looks at no conversion): without the describes_whole opt-in it is refused,
// and the message says how to vouch for it (tests/key_test.cpp: with it, it keys).
#include <compile_cache/key/builder.hpp>

namespace host {
template <class T>
struct box {
    T value;
};
template <class T>
void describe(compile_cache::key_writer& w, box<T> const& b) {
    w(b.value);
}
} // namespace host

int main() {
    compile_cache::key_builder<> kb;
    kb.add("box", host::box<int>{3});
    return kb.finish().ok() ? 0 : 1;
}
