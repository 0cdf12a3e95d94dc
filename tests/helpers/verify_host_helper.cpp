// A deliberately faulty host, for verify mode in fresh processes (verify_test.cpp):
//   verify_host_helper broken SCALE   its key leaves out the global SCALE that its
//                                     compile reads (the unsound host)
//   verify_host_helper stamped        its artifact carries the time it was compiled
//                                     (the nondeterministic host)
// The cache comes from VERIFYHOST_DIR, VERIFYHOST_VERIFY, VERIFYHOST_LOG. Prints the
// kernel's result (`result=...`), how it was obtained, and the verify counters.
#include <compile_cache/compile_cache.hpp>

#include <boost/serialization/string.hpp>

#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    namespace cc = compile_cache;
    std::string const mode = argc > 1 ? argv[1] : "";
    int const scale = argc > 2 ? std::stoi(argv[2]) : 1;
    if (mode != "broken" && mode != "stamped") {
        std::fprintf(stderr, "usage: verify_host_helper broken SCALE | stamped\n");
        return 2;
    }
    auto cache = cc::default_cache::from_env("VERIFYHOST");
    // The bug under test: "scale" is read by the compile below but is not in the key.
    cc::key_result const k =
        cache.make_key_builder("verify_host_helper 1").add("mode", mode).add("ir", "ret x * scale").finish();
    auto const r = cache.get_or_compile<std::string>(k, {mode == "broken" ? "scaled" : "stamped", "host.dsl", 1}, [&] {
        if (mode == "stamped")
            return "ret x ; compiled at " + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
        return "ret x * " + std::to_string(scale);
    });
    auto const s = cache.stats();
    std::printf("result=%s outcome=%s reason=%s verified=%llu unsound=%llu nondeterministic=%llu\n", r.value.c_str(),
                cc::to_string(r.outcome), r.reason.c_str(), static_cast<unsigned long long>(s.verified),
                static_cast<unsigned long long>(s.unsound), static_cast<unsigned long long>(s.nondeterministic));
    return 0;
}
