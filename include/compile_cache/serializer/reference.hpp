// compile_cache: how a ref<T> is written in a Boost archive — a kind byte (0xff for a
// null ref) and an id string, which the cache's Resolver turns back into the live
// object on load (resolver_context_of(ar), installed by the Serializer). Include it,
// or serializer/boost_archive.hpp which does, where artifacts holding refs are
// serialized with Boost archives.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>

#include <compile_cache/resolver/reference.hpp>

#include <boost/serialization/string.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>

namespace compile_cache {

namespace detail {
inline constexpr std::uint8_t null_reference_kind = 0xff;
} // namespace detail

/// Boost.Serialization's free-function form for ref<T> (found by argument-dependent
/// lookup): a ref without a reference, or a reference without a live object, throws
/// unresolved_reference, which the cache turns into a skipped store or a miss.
template <class Archive, class T>
void serialize(Archive& ar, ref<T>& r, unsigned /*version*/) {
    std::uint8_t kind = detail::null_reference_kind;
    std::string id;
    if constexpr (Archive::is_saving::value) {
        if (r) {
            resolver_context& ctx = resolver_context_of(ar);
            if (!ctx.to_reference) throw unresolved_reference("compile_cache: no resolver in this archive");
            std::optional<reference> written = ctx.to_reference(ctx.resolver, r.get(), typeid(T), ctx.self);
            if (!written)
                throw unresolved_reference(std::string("compile_cache: no reference for an object of type ") +
                                           typeid(T).name() + " (a kernel without a key?)");
            kind = static_cast<std::uint8_t>(written->kind);
            // Written only what load can give back as this very object: a kind it knows
            // (0xff would load as a null ref), and a self reference only in a ref of the
            // type of the kernel stored (an object at the kernel's address that is not the
            // kernel, its first member, would be refused at every load: the store is
            // skipped instead).
            if (kind > static_cast<std::uint8_t>(reference_kind::singleton))
                throw unresolved_reference("compile_cache: the resolver gave a reference of an unknown kind");
            if (written->kind == reference_kind::self && (ctx.self_type == nullptr || *ctx.self_type != typeid(T)))
                throw unresolved_reference("compile_cache: a self reference of another type than the kernel stored");
            id = std::move(written->id);
        }
        ar << kind;
        ar << id;
    } else {
        ar >> kind;
        ar >> id;
        r = ref<T>();
        if (kind == detail::null_reference_kind) return;
        if (kind > static_cast<std::uint8_t>(reference_kind::singleton))
            throw unresolved_reference("compile_cache: unknown reference kind");
        resolver_context& ctx = resolver_context_of(ar);
        if (!ctx.from_reference) throw unresolved_reference("compile_cache: no resolver in this archive");
        // A self reference is the kernel being loaded: only a ref of its own type may
        // hold it, or a damaged entry could make a pointer of one type point at another.
        if (kind == static_cast<std::uint8_t>(reference_kind::self) &&
            (ctx.self_type == nullptr || *ctx.self_type != typeid(T)))
            throw unresolved_reference("compile_cache: a self reference of another type than the kernel loaded");
        void* p = ctx.from_reference(ctx.resolver, reference{static_cast<reference_kind>(kind), std::move(id)},
                                     typeid(T), ctx.self);
        if (!p) throw unresolved_reference("compile_cache: a reference has no live object");
        r = ref<T>(static_cast<T*>(p));
    }
}

} // namespace compile_cache
