// expect: compile_cache: the Resolver has no from_reference member
// A resolver that can write references but not read them back: the cache names the
// missing member as soon as it is composed.
#include <compile_cache/cache.hpp>
#include <compile_cache/storage/null_storage.hpp>

#include <optional>
#include <typeinfo>

struct write_only_resolver {
    std::optional<compile_cache::reference> to_reference(void const*, std::type_info const&, void const*) {
        return std::nullopt;
    }
};

using cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, write_only_resolver,
                                         compile_cache::null_storage>;
static_assert(sizeof(cache) > 0);
