// Step 4 of docs/tutorial.md: a Hasher of your own. This one is SHA-256 started
// from a namespace label (domain separation): caches of different namespaces can
// share a directory and never share an entry, because no key of one namespace can
// equal a key of another.
#include "scratch_dir.hpp"
#include "toy_compiler.hpp"

#include <compile_cache/compile_cache.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace cc = compile_cache;

// [tutorial:hasher]
// The Hasher requirements (hasher/concept.hpp): result_type, block_size (optional), a default
// constructor that starts a message, update(), result().
template <class Namespace>
class namespaced_sha256 {
public:
    using result_type = cc::sha256::result_type; // 32 bytes
    static constexpr std::size_t block_size = cc::sha256::block_size;

    // sha256's seeded constructor hashes the label and finishes that block before the
    // message starts, so the label cannot run into the message.
    namespaced_sha256() noexcept : inner_(Namespace::label.data(), Namespace::label.size()) {}

    void update(void const* data, std::size_t size) noexcept { inner_.update(data, size); }
    result_type result() noexcept { return inner_.result(); }

private:
    cc::sha256 inner_;
};

struct staging {
    static constexpr std::string_view label = "toyc staging";
};
struct production {
    static constexpr std::string_view label = "toyc production";
};

static_assert(cc::check_hasher<namespaced_sha256<staging>>::value);

using staging_cache = cc::basic_cache<namespaced_sha256<staging>, cc::boost_binary, cc::registry, cc::directory_storage>;
using production_cache =
    cc::basic_cache<namespaced_sha256<production>, cc::boost_binary, cc::registry, cc::directory_storage>;
// [tutorial:hasher]

// [tutorial:host]
template <class Cache>
cc::key_result compile_poly(std::string const& directory, char const* label) {
    Cache cache{cc::directory_storage(directory)};
    std::string const source = "x * (x + 3) - 7 * 2";
    cc::key_result key = cache.make_key_builder("toyc 1.0").add("source", source).finish();
    cc::cached<toy::program> r =
        cache.template get_or_compile<toy::program>(key, {"poly", "poly.toy", 1}, [&] { return toy::compile(source); });
    std::printf("  %s: poly %s, poly(5) = %lld\n", label, cc::to_string(r.outcome),
                static_cast<long long>(toy::run(r.value, 5)));
    return key;
}

int main() {
    scratch_dir dir; // one directory for both namespaces
    cc::key_result const s1 = compile_poly<staging_cache>(dir.path(), "staging");
    cc::key_result const p1 = compile_poly<production_cache>(dir.path(), "production");
    cc::key_result const s2 = compile_poly<staging_cache>(dir.path(), "staging");
    cc::key_result const p2 = compile_poly<production_cache>(dir.path(), "production");
    std::printf("same key in both namespaces: %s; each namespace's key is stable: %s\n",
                s1.value() == p1.value() ? "yes" : "no", s1.value() == s2.value() && p1.value() == p2.value() ? "yes" : "no");
    return 0;
}
// [tutorial:host]
