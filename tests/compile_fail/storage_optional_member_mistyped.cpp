// expect: compile_cache: the Storage's usable member has the wrong signature
// An optional member that is there but would never be called: `usable` is not const,
// so a cache (which asks through a const storage) would silently ignore it.
#include <compile_cache/cache.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

struct mistyped_store {
    compile_cache::read_result read(compile_cache::key const&, std::string&, std::size_t) { return {}; }
    std::error_code write(compile_cache::key const&, std::string_view) { return {}; }
    std::error_code remove(compile_cache::key const&) { return {}; }
    bool usable() { return true; }
};

using cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry,
                                         mistyped_store>;
static_assert(sizeof(cache) > 0);
