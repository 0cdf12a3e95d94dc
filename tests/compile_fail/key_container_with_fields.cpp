// expect: derived from a standard container with fields of its own
// A type derived from a standard container and holding fields of its own would be
// keyed by its elements alone: values differing in those fields would share an entry
// (a stale hit). Adding one to a key must not compile, and the message says what to do.
#include <compile_cache/key/builder.hpp>

#include <vector>

namespace host {
struct arguments : std::vector<int> { // no describe
    int level = 2;
};
} // namespace host

int main() {
    compile_cache::key_builder<> kb;
    kb.add("arguments", host::arguments{});
    return kb.finish().ok() ? 0 : 1;
}
