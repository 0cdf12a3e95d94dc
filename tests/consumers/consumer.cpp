// The program every consumer test builds, however it got the library (an installed
// CMake package, add_subdirectory, FetchContent, pkg-config, the single header): it
// stores one kernel in a cache directory and loads it back, through a fresh cache
// object, as a host's next process would. Run it twice on the same directory: the
// second process must load the kernel without compiling it.
//
// Usage: consumer CACHE_DIR   prints "compiled" or "loaded"; exit 0 when the kernel
//                             loaded back intact, 1 otherwise.
#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace cc = compile_cache;

struct artifact {
    std::string name;
    std::vector<int> code;

    template <class Archive>
    void serialize(Archive& ar, unsigned /*version*/) {
        ar & name & code;
    }
};

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CACHE_DIR\n", argv[0]);
        return 2;
    }
    std::string const source = "return x * 2 + 1";
    artifact const expected{"double_plus_one", {1, 2, 3, 42}};
    bool compiled = false;
    auto compile = [&] {
        compiled = true;
        return expected;
    };

    cc::default_cache cache{cc::directory_storage(argv[1])};
    cc::key_result k = cache.make_key_builder("consumer 1").add("source", source).finish();
    if (!k.ok()) {
        std::fprintf(stderr, "consumer: no key: %s\n", k.bypass_reason().c_str());
        return 1;
    }
    cc::cached<artifact> r = cache.get_or_compile<artifact>(k, {"double_plus_one", "consumer.cpp", 1}, compile);
    std::printf("%s\n", cc::to_string(r.outcome));
    if (r.value.name != expected.name || r.value.code != expected.code) {
        std::fprintf(stderr, "consumer: get_or_compile returned a different kernel\n");
        return 1;
    }
    if (compiled == (r.outcome == cc::outcome::loaded)) {
        std::fprintf(stderr, "consumer: outcome %s but compile ran: %d\n", cc::to_string(r.outcome), compiled);
        return 1;
    }

    // A fresh cache over the same directory loads what the first one stored.
    cc::default_cache other{cc::directory_storage(argv[1])};
    std::optional<artifact> loaded = other.load<artifact>(k);
    if (!loaded || loaded->name != expected.name || loaded->code != expected.code) {
        std::fprintf(stderr, "consumer: the stored kernel did not load back (%s)\n", other.stats().summary().c_str());
        return 1;
    }
    return 0;
}
