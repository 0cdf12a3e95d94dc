// compile_cache: the Hasher policy. A Hasher turns a byte message into a digest, the
// key of an entry. Its members are named as in Boost.Hash2's HashAlgorithm concept
// (result_type, block_size, update(void const*, std::size_t), result()), so a Boost.Hash2
// algorithm whose result is a byte array (sha2_256, sha2_512, sha3_256, blake2b_512, ...)
// is a Hasher as it is.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/key/key.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace compile_cache {

namespace detail {

template <class H, class = void>
struct has_result_type : std::false_type {};
template <class H>
struct has_result_type<H, std::void_t<typename H::result_type>> : std::true_type {};

/// A contiguous container of one-byte elements: data() gives a pointer to them and
/// size() their number.
template <class R, class = void>
struct is_byte_container : std::false_type {};
template <class R>
struct is_byte_container<
    R, std::void_t<decltype(std::declval<R const&>().data()), decltype(std::declval<R const&>().size())>>
    : std::bool_constant<
          std::is_pointer_v<decltype(std::declval<R const&>().data())> &&
          sizeof(std::remove_pointer_t<decltype(std::declval<R const&>().data())>) == 1 &&
          std::is_convertible_v<decltype(std::declval<R const&>().size()), std::size_t>> {};

/// The size of R when it is a compile-time constant (std::array, boost::array), else 0.
template <class R, class = void>
struct static_byte_size : std::integral_constant<std::size_t, 0> {};
template <class R>
struct static_byte_size<R, std::void_t<std::integral_constant<std::size_t, R{}.size()>>>
    : std::integral_constant<std::size_t, R{}.size()> {};

template <class H, bool = has_result_type<H>::value>
struct has_byte_result_type : std::false_type {};
template <class H>
struct has_byte_result_type<H, true> : is_byte_container<typename H::result_type> {};

template <class H, bool = has_byte_result_type<H>::value>
struct has_key_sized_result_type : std::false_type {};
template <class H>
struct has_key_sized_result_type<H, true>
    : std::bool_constant<(static_byte_size<typename H::result_type>::value >= 1 &&
                          static_byte_size<typename H::result_type>::value <= key::max_size)> {};

/// H::block_size is an integral constant expression (any integer type: Boost.Hash2
/// uses int, compile_cache::sha256 std::size_t).
template <class H, class = void>
struct has_block_size : std::false_type {};
template <class H>
struct has_block_size<H, std::enable_if_t<std::is_integral_v<std::remove_cv_t<decltype(H::block_size)>>,
                                          std::void_t<std::integral_constant<
                                              std::size_t, static_cast<std::size_t>(H::block_size)>>>>
    : std::true_type {};

template <class H, class = void>
struct has_update : std::false_type {};
template <class H>
struct has_update<H, std::void_t<decltype(std::declval<H&>().update(
                         std::declval<void const*>(), std::declval<std::size_t>()))>>
    : std::true_type {};

template <class H, class = void>
struct has_result : std::false_type {};
template <class H>
struct has_result<H, std::enable_if_t<has_result_type<H>::value &&
                                      std::is_same_v<decltype(std::declval<H&>().result()),
                                                     typename H::result_type>>>
    : std::true_type {};

/// True when H meets every Hasher requirement; no diagnostics (for overloads, and later
/// for a C++20 concept).
template <class H>
struct is_hasher
    : std::bool_constant<has_result_type<H>::value && has_byte_result_type<H>::value &&
                         has_key_sized_result_type<H>::value && has_block_size<H>::value &&
                         std::is_default_constructible_v<H> && has_update<H>::value &&
                         has_result<H>::value> {};
template <class H>
inline constexpr bool is_hasher_v = is_hasher<H>::value;

} // namespace detail

/// Checks a Hasher policy, one requirement at a time, so that a user's own hash that
/// misses one gets a sentence naming it instead of a page of template errors. Each
/// requirement that depends on result_type is only checked once result_type is there,
/// so one missing piece gives one message.
template <class H>
struct check_hasher {
    static_assert(detail::has_result_type<H>::value,
                  "compile_cache: the Hasher has no result_type member type; expected "
                  "`using result_type = std::array<unsigned char, N>;` with N from 1 to 64");
    static_assert(!detail::has_result_type<H>::value || detail::has_byte_result_type<H>::value,
                  "compile_cache: the Hasher's result_type is not a contiguous byte container; "
                  "expected a type with `data()` returning a pointer to one-byte elements and "
                  "`size()`, such as `std::array<unsigned char, N>` (an integer result, as "
                  "Boost.Hash2's fnv1a_64 has, cannot be a key)");
    static_assert(!detail::has_byte_result_type<H>::value ||
                      detail::has_key_sized_result_type<H>::value,
                  "compile_cache: the Hasher's result_type does not have a compile-time size "
                  "from 1 to 64 bytes; expected `std::array<unsigned char, N>` with N from 1 "
                  "to 64, since a compile_cache::key holds at most 64 bytes");
    static_assert(detail::has_block_size<H>::value,
                  "compile_cache: the Hasher has no block_size static constant; expected "
                  "`static constexpr std::size_t block_size = ...;` (an int, as in Boost.Hash2, "
                  "is accepted too)");
    static_assert(std::is_default_constructible_v<H>,
                  "compile_cache: the Hasher is not default constructible; expected a public "
                  "default constructor `H()` that starts an empty message");
    static_assert(detail::has_update<H>::value,
                  "compile_cache: the Hasher has no usable update member; expected "
                  "`void update(void const* data, std::size_t n)` that appends n bytes to the "
                  "message");
    static_assert(!detail::has_result_type<H>::value || detail::has_result<H>::value,
                  "compile_cache: the Hasher has no result member returning its result_type; "
                  "expected `result_type result()` that returns the digest of the message");
    static constexpr bool value = true;
};

} // namespace compile_cache

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
#include <concepts>

namespace compile_cache {

/// C++20: the Hasher requirements of check_hasher as a concept, so that a template
/// constrained by it (basic_cache is) names the requirement a type does not meet.
template <class H>
concept Hasher =
    requires { typename H::result_type; } && detail::has_byte_result_type<H>::value &&
    detail::has_key_sized_result_type<H>::value && detail::has_block_size<H>::value &&
    std::is_default_constructible_v<H> &&
    requires(H& h, void const* data, std::size_t size) {
        h.update(data, size);
        { h.result() } -> std::same_as<typename H::result_type>;
    };

} // namespace compile_cache
#endif
