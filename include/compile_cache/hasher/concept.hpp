// compile_cache: the Hasher policy. A Hasher turns a byte message into a digest, the
// key of an entry. Its members are named as in Boost.Hash2's HashAlgorithm concept
// (result_type, update(void const*, std::size_t), result(); block_size optional), so a
// Boost.Hash2 algorithm is a Hasher as it is, whether its result is a byte array
// (sha2_256, blake2b_512, ...) or an integer (fnv1a_64, xxhash_64, siphash_64).
//
// Each requirement is one detection trait in detail::, used by one static_assert of
// check_hasher (the sentence a compiler prints) and by the C++20 concept Hasher.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/detection.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace compile_cache {

namespace detail {

template <class H>
using result_type_t = typename H::result_type;
template <class H>
using has_result_type = is_detected<result_type_t, H>;

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

/// How a result becomes the bytes of a key.
enum class digest_kind {
    none,       ///< not a digest
    bytes,      ///< a byte container with a compile-time size: its bytes, in order
    integer,    ///< an integer (not bool): its value as little-endian bytes, on every platform
    trivial,    ///< a trivially copyable type without padding (XXH128_hash_t): its object bytes
};

template <class R>
constexpr digest_kind digest_kind_of() {
    if constexpr (is_byte_container<R>::value)
        return static_byte_size<R>::value != 0 ? digest_kind::bytes : digest_kind::none;
    else if constexpr (std::is_integral_v<R> && !std::is_same_v<R, bool>)
        return digest_kind::integer;
    // No padding (whose bytes are indeterminate: a key must be the same every time),
    // no floating point (two zeros), nothing with pointers (not content).
    else if constexpr (std::is_class_v<R> && std::is_trivially_copyable_v<R> &&
                       std::has_unique_object_representations_v<R>)
        return digest_kind::trivial;
    else
        return digest_kind::none;
}

/// The number of key bytes a result gives (0 when it is not a digest).
template <class R>
constexpr std::size_t digest_size() {
    constexpr digest_kind kind = digest_kind_of<R>();
    if constexpr (kind == digest_kind::bytes)
        return static_byte_size<R>::value;
    else if constexpr (kind == digest_kind::none)
        return 0;
    else
        return sizeof(R);
}

template <class H, bool = has_result_type<H>::value>
struct has_digest_result_type : std::false_type {};
template <class H>
struct has_digest_result_type<H, true>
    : std::bool_constant<digest_kind_of<typename H::result_type>() != digest_kind::none> {};

/// The longest digest a key holds (key::max_size; key/detail/digest.hpp checks they agree).
inline constexpr std::size_t max_digest_size = 64;

template <class H, bool = has_digest_result_type<H>::value>
struct has_key_sized_result_type : std::false_type {};
template <class H>
struct has_key_sized_result_type<H, true>
    : std::bool_constant<(digest_size<typename H::result_type>() >= 1 &&
                          digest_size<typename H::result_type>() <= max_digest_size)> {};

/// H::block_size is optional; when present it is an integral constant expression (any
/// integer type: Boost.Hash2 uses int, compile_cache::sha256 std::size_t). Only hmac<H>
/// uses it (the HMAC pad length); keys never do.
template <class H>
using block_size_address_t = decltype(&H::block_size);
template <class H>
using names_block_size = is_detected<block_size_address_t, H>;
/// A static member (its address is an ordinary pointer, not a pointer to member).
template <class H>
using has_static_block_size = std::is_pointer<detected_t<block_size_address_t, H>>;
template <class H, class = void>
struct has_constant_block_size : std::false_type {};
template <class H>
struct has_constant_block_size<
    H, std::enable_if_t<std::is_integral_v<std::remove_cv_t<decltype(H::block_size)>>,
                        std::void_t<std::integral_constant<std::size_t, static_cast<std::size_t>(H::block_size)>>>>
    : std::true_type {};
template <class H, bool = has_static_block_size<H>::value>
struct has_block_size : std::false_type {};
template <class H>
struct has_block_size<H, true> : has_constant_block_size<H> {};
template <class H>
struct has_valid_block_size : std::bool_constant<!names_block_size<H>::value || has_block_size<H>::value> {};

/// update(p, n) with p a pointer to the message bytes: `void const*` (Boost.Hash2), or
/// `unsigned char const*` (= `std::uint8_t const*`), or `std::byte const*`.
template <class H, class P>
using update_t = decltype(std::declval<H&>().update(std::declval<P>(), std::declval<std::size_t>()));
template <class H, class P>
using has_update_on = is_detected<update_t, H, P>;
template <class H>
struct has_update
    : std::bool_constant<has_update_on<H, void const*>::value || has_update_on<H, unsigned char const*>::value ||
                         has_update_on<H, std::byte const*>::value> {};

template <class H>
using result_t = decltype(std::declval<H&>().result());
template <class H>
using has_result = std::bool_constant<has_result_type<H>::value &&
                                      std::is_same_v<detected_t<result_t, H>, detected_t<result_type_t, H>>>;

/// True when H meets every Hasher requirement; no diagnostics.
template <class H>
struct is_hasher
    : std::bool_constant<has_result_type<H>::value && has_digest_result_type<H>::value &&
                         has_key_sized_result_type<H>::value && has_valid_block_size<H>::value &&
                         std::is_default_constructible_v<H> && has_update<H>::value &&
                         has_result<H>::value> {};
template <class H>
inline constexpr bool is_hasher_v = is_hasher<H>::value;

/// Feeds n bytes at p to h through whichever update H has.
template <class H>
void hasher_update(H& h, void const* p, std::size_t n) {
    if constexpr (has_update_on<H, void const*>::value)
        h.update(p, n);
    else if constexpr (has_update_on<H, unsigned char const*>::value)
        h.update(static_cast<unsigned char const*>(p), n);
    else
        h.update(static_cast<std::byte const*>(p), n);
}

} // namespace detail

/// Checks a Hasher policy, one requirement at a time, so that a user's own hash that
/// misses one gets a sentence naming it instead of a page of template errors. Each
/// requirement that depends on result_type is only checked once result_type is there,
/// so one missing piece gives one message.
template <class H>
struct check_hasher {
    static_assert(detail::has_result_type<H>::value,
                  "compile_cache: the Hasher has no result_type member type (docs/policies.md)");
    static_assert(!detail::has_result_type<H>::value || detail::has_digest_result_type<H>::value,
                  "compile_cache: the Hasher's result_type is not a digest: an integer, "
                  "`std::array<unsigned char, N>` or a struct without padding (docs/policies.md)");
    static_assert(!detail::has_digest_result_type<H>::value || detail::has_key_sized_result_type<H>::value,
                  "compile_cache: the Hasher's result_type is larger than 64 bytes (docs/policies.md)");
    static_assert(detail::has_valid_block_size<H>::value,
                  "compile_cache: the Hasher's block_size is not an integral constant (docs/policies.md)");
    static_assert(std::is_default_constructible_v<H>,
                  "compile_cache: the Hasher is not default constructible (docs/policies.md)");
    static_assert(detail::has_update<H>::value,
                  "compile_cache: the Hasher has no usable update member; expected "
                  "`void update(void const* data, std::size_t n)` (docs/policies.md)");
    static_assert(!detail::has_result_type<H>::value || detail::has_result<H>::value,
                  "compile_cache: the Hasher has no result member returning its result_type "
                  "(docs/policies.md)");
    static constexpr bool value = true; // the asserts above say what is wrong, once
};

} // namespace compile_cache

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
namespace compile_cache {

/// C++20: the Hasher requirements as a concept, for users' own templates. It is the
/// same traits as check_hasher; basic_cache checks with check_hasher, so that its
/// diagnostic is the sentence, under C++17 and C++20 alike.
template <class H>
concept Hasher = detail::is_hasher<H>::value;

} // namespace compile_cache
#endif
