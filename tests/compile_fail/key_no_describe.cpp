// expect: no content description
// A value of a type that says nothing about its content cannot be keyed: adding it
// to a key builder must not compile, and the message names the customization point.
#include <compile_cache/key/builder.hpp>

#include <string>

namespace host {
struct options { // no describe(key_writer&, options const&)
    int level = 2;
    std::string target;
};
} // namespace host

int main() {
    compile_cache::key_builder<> kb;
    kb.add("options", host::options{});
    return kb.finish().ok() ? 0 : 1;
}
