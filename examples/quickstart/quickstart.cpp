// The README's example as a program: a toy host "compiles" kernels (slowly), and
// keeps them in a cache directory named by QUICKSTART_CACHE_DIR. Run it twice:
// the second process loads both kernels instead of compiling them.
#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace cc = compile_cache;

struct kernel {
    std::string name;
    std::string source;
};

// What compiling a kernel produces: code, plus a reference (not a copy) to the
// kernel it calls, relinked to the live object when loaded.
struct artifact {
    std::vector<int> code;
    cc::ref<kernel> callee;

    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & code & callee;
    }
};

artifact compile(kernel const& k, kernel* callee) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the passes a real compiler runs
    artifact a;
    for (char c : k.source) a.code.push_back(c);
    a.callee = callee;
    return a;
}

int main() {
    auto cache = cc::default_cache::from_env("QUICKSTART_CACHE"); // QUICKSTART_CACHE_DIR
    kernel helper{"helper", "return x * 2"};
    kernel main_kernel{"main", "return helper(x) + 5"};

    // A callee's key is part of its caller's key: changing helper re-keys main.
    cc::key_result helper_key = cache.make_key_builder("quickstart 1").add("source", helper.source).finish();
    cc::key_result main_key = cache.make_key_builder("quickstart 1")
                                  .add("source", main_kernel.source)
                                  .add("callee", helper_key) // a bypassed callee makes main bypass too
                                  .finish();
    // bind_self: binds the kernel to its key in the registry, and compiles or loads it.
    auto h = cache.get_or_compile<artifact>(helper_key, {"helper", "quickstart.cpp", 1},
                                            [&] { return compile(helper, nullptr); }, cc::bind_self(&helper));
    auto m = cache.get_or_compile<artifact>(main_key, {"main", "quickstart.cpp", 2},
                                            [&] { return compile(main_kernel, &helper); }, cc::bind_self(&main_kernel));
    std::printf("helper: %s\nmain: %s (calls %s)\n", cc::to_string(h.outcome), cc::to_string(m.outcome),
                m.value.callee ? m.value.callee->name.c_str() : "nothing");
    std::printf("%s\n", cache.stats().summary().c_str());
    return m.value.callee.get() == &helper ? 0 : 1;
}
