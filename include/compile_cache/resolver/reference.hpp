// compile_cache: references. An artifact points at objects it must not copy (the
// kernels it calls, its dialect group, type singletons compared by identity); it
// holds them as ref<T>, which is written as a stable reference and relinked to the
// live object on load by the cache's Resolver. How a ref is written in a Boost archive
// is serializer/reference.hpp's (included by serializer/boost_archive.hpp): this
// header needs no Boost.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>

namespace compile_cache {

enum class reference_kind : std::uint8_t {
    self = 0,      ///< the kernel whose artifact this is
    kernel = 1,    ///< another kernel, by its key
    shared = 2,    ///< a shared object (dialect group, pass pipeline), by a stable name
    singleton = 3, ///< a singleton, by a name-based Boost.Uuid
};

/// What a Resolver writes for an object and reads back: a kind and an id (key bytes,
/// a name, or 16 uuid bytes).
struct reference {
    reference_kind kind = reference_kind::self;
    std::string id;
};

/// Thrown inside an archive when an object has no reference (store: a kernel without
/// a key) or a reference has no live object (load: a kernel that is gone). The cache
/// front catches it and counts an unresolved reference; it never reaches the host.
class unresolved_reference : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// What a Serializer hands to the objects it serializes: the cache's Resolver and the
/// kernel being stored or loaded, type-erased so that artifacts need not know the
/// composition. Boost archives carry it through get_helper (see resolver_context_of).
struct resolver_context {
    void* resolver = nullptr;
    void const* self = nullptr;
    /// The C++ type of `self`: a self reference loads only into a ref of that type.
    /// Null when the host gave no typed self, and then no self reference resolves.
    std::type_info const* self_type = nullptr;
    std::optional<reference> (*to_reference)(void* resolver, void const* object, std::type_info const& type,
                                             void const* self) = nullptr;
    void* (*from_reference)(void* resolver, reference const& ref, std::type_info const& type,
                            void const* self) = nullptr;

    /// Wraps any Resolver (see resolver/concept.hpp).
    template <class Resolver, class Self>
    static resolver_context of(Resolver& r, Self const* self) {
        resolver_context c;
        c.resolver = &r;
        c.self = self;
        if constexpr (!std::is_void_v<Self>) c.self_type = &typeid(Self);
        c.to_reference = [](void* rp, void const* obj, std::type_info const& t, void const* s) {
            return static_cast<Resolver*>(rp)->to_reference(obj, t, s);
        };
        c.from_reference = [](void* rp, reference const& ref, std::type_info const& t, void const* s) {
            return static_cast<Resolver*>(rp)->from_reference(ref, t, s);
        };
        return c;
    }
};

namespace detail {
// The address of this object is the helper id. Boost's own shared_ptr helper uses the
// default id 0; sharing it would be undefined behaviour.
inline char resolver_context_helper_id = 0;
} // namespace detail

/// The resolver context installed in a Boost archive by the Serializer; null-resolver
/// context when there is none (the archive was not made by compile_cache).
template <class Archive>
resolver_context& resolver_context_of(Archive& ar) {
    return ar.template get_helper<resolver_context>(&detail::resolver_context_helper_id);
}

/// A pointer to an object the artifact refers to but does not own. Serialized as a
/// reference; loads as the very same live object (`loaded.get() == &original`), or the
/// load fails as a miss, never with a dangling pointer.
template <class T>
class ref {
public:
    ref() noexcept = default;
    ref(T* object) noexcept : ptr_(object) {} // NOLINT: implicit, like a pointer

    T* get() const noexcept { return ptr_; }
    T& operator*() const noexcept { return *ptr_; }
    T* operator->() const noexcept { return ptr_; }
    explicit operator bool() const noexcept { return ptr_ != nullptr; }

    friend bool operator==(ref const& a, ref const& b) noexcept { return a.ptr_ == b.ptr_; }
    friend bool operator!=(ref const& a, ref const& b) noexcept { return a.ptr_ != b.ptr_; }

private:
    T* ptr_ = nullptr;
};

} // namespace compile_cache
