// expect: compile_cache: the Resolver has no from_reference member; expected `void* from_reference(compile_cache::reference const& ref, std::type_info const& type, void const* self)`
// from_reference returns the host's own pointer type instead of void*: the message
// gives the signature the cache expects.
#include <compile_cache/resolver/concept.hpp>

#include <optional>
#include <typeinfo>

struct kernel {};

struct typed_resolver {
    std::optional<compile_cache::reference> to_reference(void const*, std::type_info const&, void const*) {
        return std::nullopt;
    }
    kernel* from_reference(compile_cache::reference const&, std::type_info const&, void const*) { return nullptr; }
};

static_assert(compile_cache::check_resolver<typed_resolver>::value);
