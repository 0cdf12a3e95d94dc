// expect: takes a base class of it
// A type whose only describe is its base class's would be keyed by the base part
// alone: values differing in the derived fields would share an entry (a stale hit).
// Adding one to a key must not compile, and the message says what to declare.
#include <compile_cache/key/builder.hpp>

#include <string>

namespace host {
struct options {
    int level = 2;
    friend void describe(compile_cache::key_writer& w, options const& o) { w(o.level); }
};
struct gpu_options : options { // no describe of its own
    std::string arch = "sm_90";
};
} // namespace host

int main() {
    compile_cache::key_builder<> kb;
    kb.add("options", host::gpu_options{});
    return kb.finish().ok() ? 0 : 1;
}
