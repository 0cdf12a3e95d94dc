// compile_cache: the Serializer policy. A Serializer turns an artifact into bytes and
// back, handing the objects it serializes a resolver_context so that references
// relink to live objects.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/resolver/reference.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace compile_cache {

namespace detail {
template <class S, class = void>
struct has_format_id : std::false_type {};
template <class S>
struct has_format_id<S, std::enable_if_t<std::is_convertible_v<decltype(S::format_id()), std::string>>>
    : std::true_type {};

template <class S, class A, class = void>
struct has_save : std::false_type {};
template <class S, class A>
struct has_save<S, A, std::void_t<decltype(S::save(std::declval<std::string&>(), std::declval<A const&>(),
                                                    std::declval<resolver_context const&>()))>> : std::true_type {};

template <class S, class A, class = void>
struct has_load : std::false_type {};
template <class S, class A>
struct has_load<S, A, std::void_t<decltype(S::load(std::declval<std::string_view>(), std::declval<A&>(),
                                                    std::declval<resolver_context const&>()))>> : std::true_type {};
} // namespace detail

/// Checks a Serializer policy for one artifact type, one requirement at a time.
template <class S, class Artifact>
struct check_serializer {
    static_assert(detail::has_format_id<S>::value,
                  "compile_cache: the Serializer has no format_id; expected `static std::string format_id()` "
                  "naming the format, its version and the ABI facts it depends on");
    static_assert(std::is_default_constructible_v<Artifact>,
                  "compile_cache: the artifact type must be default constructible: it is loaded into a "
                  "default-constructed value");
    static_assert(detail::has_save<S, Artifact>::value,
                  "compile_cache: the Serializer cannot save this artifact; expected `static void "
                  "save(std::string& out, Artifact const& value, compile_cache::resolver_context const& ctx)` "
                  "that appends the bytes to out (for Boost serializers: give the artifact a serialize member)");
    static_assert(detail::has_load<S, Artifact>::value,
                  "compile_cache: the Serializer cannot load this artifact; expected `static void "
                  "load(std::string_view in, Artifact& value, compile_cache::resolver_context const& ctx)` "
                  "that throws on bad input");
    static constexpr bool value = true;
};

} // namespace compile_cache

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
#include <concepts>

namespace compile_cache {

/// C++20: what every Serializer has whatever it stores: a format id (basic_cache
/// requires it of its Serializer).
template <class S>
concept Serializer = requires {
    { S::format_id() } -> std::convertible_to<std::string>;
};

/// C++20: the requirements of check_serializer<S, Artifact> as a concept: S saves and
/// loads Artifact (basic_cache's load, store and get_or_compile require it).
template <class S, class Artifact>
concept SerializerFor = Serializer<S> && std::is_default_constructible_v<Artifact> &&
    requires(std::string& out, std::string_view in, Artifact const& value, Artifact& target,
             resolver_context const& ctx) {
        S::save(out, value, ctx);
        S::load(in, target, ctx);
    };

} // namespace compile_cache
#endif
