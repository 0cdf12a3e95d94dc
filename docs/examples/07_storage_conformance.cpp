// Step 7 of docs/tutorial.md: checking a Storage of your own with the conformance kit
// (compile_cache/testing/storage_conformance.hpp). map_storage keeps entries in a map
// that its handles share; its first version forgets the size bound, and the kit says so.
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

namespace cc = compile_cache;

// [tutorial:storage]
// Handles on one shared map: copies and moves of a map_storage see the same entries.
class map_storage {
public:
    explicit map_storage(bool honours_bound) : shared_(std::make_shared<entries>()), honours_bound_(honours_bound) {}

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
    return 0;
}
// [tutorial:check]
