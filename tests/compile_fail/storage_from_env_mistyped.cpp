// expect: compile_cache: the Storage's from_env member has the wrong signature
// A from_env that is there but would never be called: it returns the storage itself, not
// a from_env_result (nor, in the deprecated form, a std::optional), so a cache would
// silently construct its storage from PREFIX_DIR instead.
#include <compile_cache/cache.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

struct mistyped_store {
    mistyped_store() = default;
    explicit mistyped_store(std::string) {}
    compile_cache::read_result read(compile_cache::key const&, std::string&, std::size_t) { return {}; }
    std::error_code write(compile_cache::key const&, std::string_view) { return {}; }
    std::error_code remove(compile_cache::key const&) { return {}; }
    static mistyped_store from_env(compile_cache::storage_settings const&) { return {}; }
};

using cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry,
                                         mistyped_store>;
static_assert(sizeof(cache) > 0);
