// expect: compile_cache: the Storage has no write member
// A read-only backend composed into a cache: the cache says what is missing.
#include <compile_cache/cache.hpp>

#include <cstddef>
#include <string>
#include <system_error>

struct read_only_store {
    compile_cache::read_result read(compile_cache::key const&, std::string&, std::size_t) { return {}; }
    std::error_code remove(compile_cache::key const&) { return {}; }
};

using cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, compile_cache::registry,
                                         read_only_store>;
static_assert(sizeof(cache) > 0);
