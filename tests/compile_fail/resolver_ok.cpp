// Control for run.sh: the registry and a complete user resolver compose into a cache.
// expect: success
#include <compile_cache/cache.hpp>
#include <compile_cache/storage/null_storage.hpp>

#include <optional>
#include <typeinfo>

struct user_resolver {
    std::optional<compile_cache::reference> to_reference(void const*, std::type_info const&, void const*) {
        return std::nullopt;
    }
    void* from_reference(compile_cache::reference const&, std::type_info const&, void const*) { return nullptr; }
};

static_assert(compile_cache::check_resolver<compile_cache::registry>::value);
static_assert(compile_cache::check_resolver<user_resolver>::value);

using cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary, user_resolver,
                                         compile_cache::null_storage>;
static_assert(sizeof(cache) > 0);
