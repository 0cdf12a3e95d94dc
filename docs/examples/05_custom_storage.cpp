// Step 5 of docs/tutorial.md: a Storage of your own. overlay_storage reads a local,
// writable directory first and then a shared one that it never writes: a team's CI
// fills the shared directory, and each developer's misses are stored locally.
#include "scratch_dir.hpp"
#include "toy_compiler.hpp"

#include <compile_cache/compile_cache.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace cc = compile_cache;

// [tutorial:storage]
// The Storage requirements (storage/concept.hpp): read, write and remove. The bytes
// are opaque: the cache checks every entry's envelope (key, version, CRC or HMAC)
// whichever directory it came from.
class overlay_storage {
public:
    overlay_storage(cc::directory_storage local, cc::directory_storage shared)
        : local_(std::move(local)), shared_(std::move(shared)) {}

    cc::read_result read(cc::key const& k, std::string& out, std::size_t max_size) noexcept {
        cc::read_result const mine = local_.read(k, out, max_size);
        if (mine.status == cc::read_status::found || mine.status == cc::read_status::too_large) return mine;
        // Absent here, or unreadable: the shared copy is as good. If it is missing as
        // well, report the local result (an error is worth a log line; absent is not).
        cc::read_result const theirs = shared_.read(k, out, max_size);
        return theirs.status == cc::read_status::found ? theirs : mine;
    }

    // New entries go to the local directory only; the shared one is read-only here.
    std::error_code write(cc::key const& k, std::string_view bytes) noexcept { return local_.write(k, bytes); }
    std::error_code remove(cc::key const& k) noexcept { return local_.remove(k); }

    cc::directory_storage& local() noexcept { return local_; }
    cc::directory_storage& shared() noexcept { return shared_; }

private:
    cc::directory_storage local_;
    cc::directory_storage shared_;
};

using developer_cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, overlay_storage>;
// [tutorial:storage]

// [tutorial:host]
template <class Cache>
cc::key_result compile_kernel(Cache& cache, char const* who, char const* name, std::string const& source) {
    cc::key_result key = cache.make_key_builder("toyc 1.0").add("source", source).finish();
    cc::cached<toy::program> r =
        cache.template get_or_compile<toy::program>(key, {name, "team.toy", 1}, [&] { return toy::compile(source); });
    std::printf("  %s: %s %s, %s(5) = %lld\n", who, name, cc::to_string(r.outcome), name,
                static_cast<long long>(toy::run(r.value, 5)));
    return key;
}

bool has_entry(cc::directory_storage& storage, cc::key_result const& key) {
    std::string bytes;
    return storage.read(key.value(), bytes, std::size_t{1} << 20).status == cc::read_status::found;
}

int main() {
    scratch_dir dir;
    std::printf("CI fills the shared directory:\n");
    cc::default_cache ci{cc::directory_storage(dir / "shared")};
    compile_kernel(ci, "ci", "poly", "x * (x + 3) - 7 * 2");

    std::printf("a developer's process:\n");
    developer_cache cache{overlay_storage(cc::directory_storage(dir / "local"), cc::directory_storage(dir / "shared"))};
    cc::key_result const poly = compile_kernel(cache, "dev", "poly", "x * (x + 3) - 7 * 2");
    cc::key_result const cube = compile_kernel(cache, "dev", "cube", "x * x * x");
    std::printf("poly in local: %s, in shared: %s\n", has_entry(cache.storage().local(), poly) ? "yes" : "no",
                has_entry(cache.storage().shared(), poly) ? "yes" : "no");
    std::printf("cube in local: %s, in shared: %s\n", has_entry(cache.storage().local(), cube) ? "yes" : "no",
                has_entry(cache.storage().shared(), cube) ? "yes" : "no");

    std::printf("the developer's next process:\n");
    developer_cache next{overlay_storage(cc::directory_storage(dir / "local"), cc::directory_storage(dir / "shared"))};
    compile_kernel(next, "dev", "poly", "x * (x + 3) - 7 * 2");
    compile_kernel(next, "dev", "cube", "x * x * x");
    return 0;
}
// [tutorial:host]
