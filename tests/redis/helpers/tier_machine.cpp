// One machine of a fleet sharing a Redis server, as a fresh process: a cache over
// tiered_storage<directory_storage, redis_storage> configured from the environment
// (prefix MACHINE: MACHINE_DIR, MACHINE_REMOTE, MACHINE_SECRET_FILE, ...), which gets or
// compiles kernels 0 to COUNT - 1.
//
// Usage: tier_machine COUNT [store]
// Prints a line per kernel, `kN loaded` or `kN compiled`, then, once the tier's uploads
// are out (a bound of 10 s), the cache's statistics summary; the cache's log lines
// (MACHINE_LOG=1) go to stderr. With `store`, only stores kernels 0 to COUNT - 1 (no
// lookup; `kN stored` or `kN not stored`). Exit 0, or 1 when a value was wrong or the
// cache is not enabled.
#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/redis/redis_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <boost/serialization/vector.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace cc = compile_cache;

namespace {
struct kernel {
    std::vector<int> code;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & code;
    }
};
using tier = cc::tiered_storage<cc::directory_storage, cc::redis_storage>;
using tier_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, tier>;
} // namespace

int main(int argc, char** argv) {
    if (argc != 2 && !(argc == 3 && std::string(argv[2]) == "store")) {
        std::fprintf(stderr, "usage: %s COUNT [store]\n", argv[0]);
        return 2;
    }
    int const count = std::atoi(argv[1]);
    bool const store_only = argc == 3;
    int wrong = 0;
    {
        tier_cache cache = tier_cache::from_env("MACHINE");
        if (!cache.enabled()) {
            std::printf("not enabled\n");
            return 1;
        }
        for (int n = 0; n < count; ++n) {
            auto const k = cache.make_key_builder("tier_machine").add("ir", "kernel " + std::to_string(n)).finish();
            if (store_only) {
                bool const stored = cache.store(k, kernel{{n, n + 1}}, {"k" + std::to_string(n), "f.tk", 1});
                std::printf("k%d %s\n", n, stored ? "stored" : "not stored");
                continue;
            }
            auto const r = cache.get_or_compile<kernel>(k, {"k" + std::to_string(n), "f.tk", 1},
                                                        [n] { return kernel{{n, n + 1}}; });
            if (r.value.code != std::vector<int>{n, n + 1}) ++wrong;
            std::printf("k%d %s\n", n, r.outcome == cc::outcome::loaded ? "loaded" : "compiled");
        }
        (void)cache.storage().wait_for_uploads(std::chrono::seconds(10));
        std::printf("%s\n", cache.stats().summary().c_str());
    }
    return wrong == 0 ? 0 : 1;
}
