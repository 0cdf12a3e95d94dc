// compile_cache: the Resolver policy. A Resolver turns the objects an artifact refers
// to into stable references when it is stored, and references back into the same
// live objects when it is loaded.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>
#include <compile_cache/detail/detection.hpp>

#include <compile_cache/resolver/reference.hpp>

#include <optional>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace compile_cache {

namespace detail {
template <class R>
using to_reference_t = decltype(std::declval<R&>().to_reference(
    std::declval<void const*>(), std::declval<std::type_info const&>(), std::declval<void const*>()));
template <class R>
using has_to_reference = is_detected_exact<std::optional<reference>, to_reference_t, R>;

template <class R>
using from_reference_t = decltype(std::declval<R&>().from_reference(
    std::declval<reference const&>(), std::declval<std::type_info const&>(), std::declval<void const*>()));
template <class R>
using has_from_reference = is_detected_exact<void*, from_reference_t, R>;
} // namespace detail

/// Checks a Resolver policy one requirement at a time.
template <class R>
struct check_resolver {
    static_assert(std::is_default_constructible_v<R>,
                  "compile_cache: the Resolver must be default constructible (the cache owns one)");
    static_assert(detail::has_to_reference<R>::value,
                  "compile_cache: the Resolver has no to_reference member; expected "
                  "`std::optional<compile_cache::reference> to_reference(void const* object, "
                  "std::type_info const& type, void const* self)` (docs/policies.md)");
    static_assert(detail::has_from_reference<R>::value,
                  "compile_cache: the Resolver has no from_reference member; expected "
                  "`void* from_reference(compile_cache::reference const& ref, std::type_info const& type, "
                  "void const* self)` (docs/policies.md)");
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
