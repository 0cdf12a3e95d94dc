// compile_cache: the Serializer policy. A Serializer turns an artifact into bytes and
// back, handing the objects it serializes a resolver_context so that references
// relink to live objects.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/detection.hpp>

#include <compile_cache/resolver/reference.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace compile_cache {

namespace detail {
template <class S>
using format_id_t = decltype(S::format_id());
template <class S>
using has_format_id = is_detected_convertible<std::string, format_id_t, S>;

template <class S, class A>
using save_t = decltype(S::save(std::declval<std::string&>(), std::declval<A const&>(),
                                std::declval<resolver_context const&>()));
template <class S, class A>
using has_save = is_detected<save_t, S, A>;

template <class S, class A>
using load_t = decltype(S::load(std::declval<std::string_view>(), std::declval<A&>(),
                                std::declval<resolver_context const&>()));
template <class S, class A>
using has_load = is_detected<load_t, S, A>;

/// Every requirement of check_serializer<S, A> met; no diagnostics.
template <class S, class A>
struct is_serializer_for
    : std::bool_constant<has_format_id<S>::value && std::is_default_constructible_v<A> &&
                         has_save<S, A>::value && has_load<S, A>::value> {};
} // namespace detail

/// Checks what a Serializer has whatever it stores: a format id (basic_cache checks it
/// in its class body).
namespace detail {
// The checks as functions: a class whose static_assert failed is incomplete to clang,
// so naming its ::value afterwards would be a second error; a function's is not.
template <class S>
constexpr bool assert_serializer_policy() {
    static_assert(has_format_id<S>::value,
                  "compile_cache: the Serializer has no format_id; expected `static std::string format_id()` "
                  "(docs/policies.md)");
    return true;
}

template <class S, class Artifact>
constexpr bool assert_serializer_for() {
    assert_serializer_policy<S>(); // its sentence, once per S
    static_assert(std::is_default_constructible_v<Artifact>,
                  "compile_cache: the artifact type must be default constructible (docs/policies.md)");
    static_assert(has_save<S, Artifact>::value,
                  "compile_cache: the Serializer cannot save this artifact; expected `static void "
                  "save(std::string& out, Artifact const& value, compile_cache::resolver_context const& ctx)` "
                  "(docs/policies.md)");
    static_assert(!has_save<S, Artifact>::value || has_load<S, Artifact>::value,
                  "compile_cache: the Serializer cannot load this artifact; expected `static void "
                  "load(std::string_view in, Artifact& value, compile_cache::resolver_context const& ctx)` "
                  "(docs/policies.md)");
    return true;
}
} // namespace detail

template <class S>
struct check_serializer_policy {
    static constexpr bool value = detail::assert_serializer_policy<S>();
};

/// Checks a Serializer policy for one artifact type, one requirement at a time.
template <class S, class Artifact>
struct check_serializer {
    static constexpr bool value = detail::assert_serializer_for<S, Artifact>();
};

} // namespace compile_cache

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
namespace compile_cache {

/// C++20, for users' own templates: what every Serializer has whatever it stores (the
/// trait check_serializer_policy asserts). basic_cache itself checks with the
/// static_asserts, so that its diagnostic is the sentence under C++17 and C++20 alike.
template <class S>
concept Serializer = detail::has_format_id<S>::value;

/// C++20: the requirements of check_serializer<S, Artifact>: S saves and loads Artifact.
template <class S, class Artifact>
concept SerializerFor = detail::is_serializer_for<S, Artifact>::value;

} // namespace compile_cache
#endif
