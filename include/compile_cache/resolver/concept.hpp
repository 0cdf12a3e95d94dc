// compile_cache: the Resolver policy. A Resolver turns the objects an artifact refers
// to into stable references when it is stored, and references back into the same
// live objects when it is loaded.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>

#include <compile_cache/resolver/reference.hpp>

#include <optional>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace compile_cache {

namespace detail {
template <class R, class = void>
struct has_to_reference : std::false_type {};
template <class R>
struct has_to_reference<R, std::enable_if_t<std::is_same_v<
    decltype(std::declval<R&>().to_reference(std::declval<void const*>(), std::declval<std::type_info const&>(),
                                             std::declval<void const*>())),
    std::optional<reference>>>> : std::true_type {};

template <class R, class = void>
struct has_from_reference : std::false_type {};
template <class R>
struct has_from_reference<R, std::enable_if_t<std::is_same_v<
    decltype(std::declval<R&>().from_reference(std::declval<reference const&>(),
                                               std::declval<std::type_info const&>(), std::declval<void const*>())),
    void*>>> : std::true_type {};
} // namespace detail

/// Checks a Resolver policy one requirement at a time.
template <class R>
struct check_resolver {
    static_assert(std::is_default_constructible_v<R>,
                  "compile_cache: the Resolver must be default constructible (the cache owns one)");
    static_assert(detail::has_to_reference<R>::value,
                  "compile_cache: the Resolver has no to_reference member; expected "
                  "`std::optional<compile_cache::reference> to_reference(void const* object, "
                  "std::type_info const& type, void const* self)` returning nullopt for an object it "
                  "cannot name");
    static_assert(detail::has_from_reference<R>::value,
                  "compile_cache: the Resolver has no from_reference member; expected "
                  "`void* from_reference(compile_cache::reference const& ref, std::type_info const& type, "
                  "void const* self)` returning the live object, or nullptr when there is none");
    static constexpr bool value = true;
};

} // namespace compile_cache

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
namespace compile_cache {

/// C++20, for users' own templates: the traits check_resolver asserts, as a concept.
/// basic_cache checks with the static_asserts, so that its diagnostic is the sentence.
template <class R>
concept Resolver = std::is_default_constructible_v<R> && detail::has_to_reference<R>::value &&
                   detail::has_from_reference<R>::value;

} // namespace compile_cache
#endif
