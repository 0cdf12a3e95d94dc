// expect: compile_cache: the Resolver must be default constructible (the cache owns one)
#include <compile_cache/cache.hpp>
#include <compile_cache/storage/null_storage.hpp>

#include <optional>
#include <typeinfo>

struct resolver_with_an_argument {
    explicit resolver_with_an_argument(int) {}
    std::optional<compile_cache::reference> to_reference(void const*, std::type_info const&, void const*) {
        return std::nullopt;
    }
    void* from_reference(compile_cache::reference const&, std::type_info const&, void const*) { return nullptr; }
};

using cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary,
                                         resolver_with_an_argument, compile_cache::null_storage>;
static_assert(sizeof(cache) > 0);
