// Step 7 of docs/tutorial.md: checking a Storage of your own with the conformance kit
// (compile_cache/testing/storage_conformance.hpp). map_storage keeps entries in a map
// that its handles share, and configures itself from MAP_CACHE_MAP through from_env; its
// first version forgets the size bound, and the kit says so.
#include <compile_cache/compile_cache.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <cstddef>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>

#include <stdlib.h>

namespace cc = compile_cache;

// [tutorial:storage]
// Handles on one shared map: copies and moves of a map_storage see the same entries.
class map_storage {
public:
    explicit map_storage(bool honours_bound) : shared_(std::make_shared<entries>()), honours_bound_(honours_bound) {}
    map_storage() : map_storage(true) {} // what a disabled cache holds

    // For basic_cache::from_env (docs/policies.md): the cache has read its own settings
    // and hands over plain values; the storage reads its own PREFIX_* variables and
    // answers with itself, off(why) (one line, which the cache prints), or
    // not_configured() when its main setting is off (the cache prints nothing).
    static cc::from_env_result<map_storage> from_env(cc::storage_settings const& settings) {
        using result = cc::from_env_result<map_storage>;
        cc::settings_reader const& env = settings.env;
        if (env.is_off("_MAP")) return result::not_configured();
        if (!settings.cache_off.empty()) return result::off(settings.cache_off); // before anything is made
        if (!cc::parse_switch(env.value("_MAP")))
            return result::off(env.name("_MAP") + "=\"" + env.value("_MAP") + "\" is not 1 or 0; the cache is disabled");
        return result(map_storage(true));
    }

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max_size) {
        out.clear();
        std::lock_guard<std::mutex> lock(shared_->mutex);
        auto const it = shared_->map.find(k);
        if (it == shared_->map.end()) return {cc::read_status::absent, {}};
        if (honours_bound_ && it->second.size() > max_size) return {cc::read_status::too_large, {}};
        out = it->second;
        return {cc::read_status::found, {}};
    }
    std::error_code write(cc::key const& k, std::string_view bytes) {
        // The empty key (what an over-long key becomes) names no entry: refused.
        if (k.empty()) return std::make_error_code(std::errc::invalid_argument);
        std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->map[k] = std::string(bytes);
        return {};
    }
    std::error_code remove(cc::key const& k) {
        std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->map.erase(k);
        return {};
    }

private:
    struct entries {
        std::mutex mutex;
        std::map<cc::key, std::string> map;
    };
    std::shared_ptr<entries> shared_;
    bool honours_bound_;
};

using map_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, map_storage>;
// [tutorial:storage]

// [tutorial:check]
int main() {
    for (bool const honours_bound : {false, true}) {
        std::printf("map_storage, %s the size bound:\n", honours_bound ? "honouring" : "ignoring");
        // The factory gives a handle on the store under test (here a copy, sharing its
        // map); with options.processes set, each child process gets one of its own.
        map_storage const store(honours_bound);
        auto const failures = cc::testing::check_storage_conformance([&] { return store; });
        for (std::string const& failure : failures) std::printf("  %s\n", failure.c_str());
        if (failures.empty()) std::printf("  conforms\n");
    }
    // A host's cache over it, as from_env makes it (the variable is set here for the example).
    ::setenv("MAP_CACHE_MAP", "1", 1);
    map_cache const cache = map_cache::from_env("MAP_CACHE");
    std::printf("from_env with MAP_CACHE_MAP=1: %s\n", cache.enabled() ? "enabled" : "disabled");
    return 0;
}
// [tutorial:check]
