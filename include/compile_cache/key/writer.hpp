// compile_cache: the canonical, self-delimiting message a key is the digest of,
// and `describe`, the one customization point through which a host says what a
// value of its own type consists of.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/key/key.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <forward_list>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace compile_cache {

class key_writer;

/// Opt a container type into order-independent encoding (its elements are sorted by
/// their encodings), for unordered containers of the host's own. The standard set
/// and map types, ordered and unordered, are already in: an ordered container's
/// comparator need not follow content (a set of pointers, a custom comparator).
template <class T>
struct is_unordered_collection : std::false_type {};
template <class... A>
struct is_unordered_collection<std::set<A...>> : std::true_type {};
template <class... A>
struct is_unordered_collection<std::multiset<A...>> : std::true_type {};
template <class... A>
struct is_unordered_collection<std::map<A...>> : std::true_type {};
template <class... A>
struct is_unordered_collection<std::multimap<A...>> : std::true_type {};
template <class... A>
struct is_unordered_collection<std::unordered_set<A...>> : std::true_type {};
template <class... A>
struct is_unordered_collection<std::unordered_multiset<A...>> : std::true_type {};
template <class... A>
struct is_unordered_collection<std::unordered_map<A...>> : std::true_type {};
template <class... A>
struct is_unordered_collection<std::unordered_multimap<A...>> : std::true_type {};

namespace detail {

// One byte before every field says what it is, so that values of different kinds
// can never encode alike; lengths and counts make every field self-delimiting.
enum class field_tag : unsigned char {
    boolean = 0x01,
    unsigned_integer = 0x02,
    signed_integer = 0x03,
    floating = 0x04,
    string = 0x05,
    bytes = 0x06,
    sequence_begin = 0x07,
    sequence_end = 0x08,
    collection_begin = 0x09,
    collection_end = 0x0a,
    optional = 0x0b,
    variant = 0x0c,
    tuple = 0x0d,
    enumeration = 0x0e,
    digest = 0x0f,
    record_begin = 0x10,
    record_end = 0x11,
    nothing = 0x12,
    equivalent_run_begin = 0x13, ///< equivalent elements of a multi container that differ, in order
    equivalent_run_end = 0x14,
};

/// For the standard multi containers (equivalent keys allowed): whether two of `c`'s
/// elements have equivalent keys, as the container compares them. Such elements are
/// adjacent in its iteration (the ordered ones in the order they were inserted, the
/// unordered ones in an order of the library's), which is the order a host reads them in.
/// A host's own multi container (is_unordered_collection) is keyed without that order.
template <class C>
struct equivalent_keys : std::false_type {};
template <class... A>
struct equivalent_keys<std::multiset<A...>> : std::true_type {
    template <class E>
    static bool of(std::multiset<A...> const& c, E const& a, E const& b) {
        return !c.key_comp()(a, b) && !c.key_comp()(b, a);
    }
};
template <class... A>
struct equivalent_keys<std::multimap<A...>> : std::true_type {
    template <class E>
    static bool of(std::multimap<A...> const& c, E const& a, E const& b) {
        return !c.key_comp()(a.first, b.first) && !c.key_comp()(b.first, a.first);
    }
};
template <class... A>
struct equivalent_keys<std::unordered_multiset<A...>> : std::true_type {
    template <class E>
    static bool of(std::unordered_multiset<A...> const& c, E const& a, E const& b) {
        return c.key_eq()(a, b);
    }
};
template <class... A>
struct equivalent_keys<std::unordered_multimap<A...>> : std::true_type {
    template <class E>
    static bool of(std::unordered_multimap<A...> const& c, E const& a, E const& b) {
        return c.key_eq()(a.first, b.first);
    }
};

// Poison pill: ADL finds the host's `describe`, never something in this namespace.
void describe() = delete;

template <class T, class = void>
struct has_describe : std::false_type {};
template <class T>
struct has_describe<T, std::void_t<decltype(describe(std::declval<key_writer&>(), std::declval<T const&>()))>>
    : std::true_type {};

/// Converts to `T const&` and to nothing else, not even a base class of T: a describe
/// call with it compiles only when the describe found takes T itself. (Its template
/// argument makes T's namespaces and classes, hidden friends included, take part in
/// argument-dependent lookup, as for a T.)
template <class T>
class only_as {
public:
    // A constructor, so that this is no aggregate: a generic describe constrained to
    // aggregates must not take it in T's stead.
    explicit only_as(T const& v) noexcept : value(&v) {}
    template <class U, std::enable_if_t<std::is_same_v<U, T>, int> = 0>
    operator U const&() const noexcept {
        return *value;
    }

private:
    T const* value;
};

template <class T, class = void>
struct has_exact_describe : std::false_type {};
template <class T>
struct has_exact_describe<
    T, std::void_t<decltype(describe(std::declval<key_writer&>(), std::declval<only_as<T> const&>()))>>
    : std::true_type {};

template <class T, class = void>
struct is_range : std::false_type {};
template <class T>
struct is_range<T, std::void_t<decltype(std::begin(std::declval<T const&>())),
                               decltype(std::end(std::declval<T const&>()))>> : std::true_type {};

template <class T, class = void>
struct is_contiguous_bytes : std::false_type {};
template <class T>
struct is_contiguous_bytes<T, std::void_t<decltype(std::declval<T const&>().data()),
                                          decltype(std::declval<T const&>().size())>>
    : std::bool_constant<std::is_pointer_v<decltype(std::declval<T const&>().data())> &&
                         (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<T const&>().data())>>, unsigned char> ||
                          std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<T const&>().data())>>, std::byte>)> {};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
struct is_variant : std::false_type {};
template <class... T>
struct is_variant<std::variant<T...>> : std::true_type {};

template <class T, class = void>
struct is_tuple_like : std::false_type {};
template <class T>
struct is_tuple_like<T, std::void_t<decltype(std::tuple_size<T>::value)>> : std::true_type {};

/// A range whose elements are of its own type (std::filesystem::path: each element of
/// a path is a path, and "a"'s only element is "a"): written element by element, it
/// would never end.
template <class T, class = void>
struct is_range_of_itself : std::false_type {};
template <class T>
struct is_range_of_itself<T, std::enable_if_t<is_range<T>::value>>
    : std::is_same<std::remove_cv_t<std::remove_reference_t<decltype(*std::begin(std::declval<T const&>()))>>, T> {};

/// Whether `native()` gives a string (std::filesystem::path's, as the system spells it).
template <class T, class = void>
struct has_native_string : std::false_type {};
template <class T>
struct has_native_string<T, std::void_t<decltype(std::declval<T const&>().native())>>
    : std::bool_constant<std::is_same_v<std::remove_cv_t<std::remove_reference_t<decltype(std::declval<T const&>().native())>>,
                                        std::string>> {};

/// The standard base of a class derived from one standard container (or string, or
/// string view), found by the derived-to-base conversion: standard_base(&t) is a
/// pointer to it. Deduction fails for a class derived from none, or from two.
template <class... A>
std::vector<A...> const* standard_base(std::vector<A...> const*);
template <class... A>
std::basic_string<A...> const* standard_base(std::basic_string<A...> const*);
template <class... A>
std::basic_string_view<A...> const* standard_base(std::basic_string_view<A...> const*);
template <class... A>
std::deque<A...> const* standard_base(std::deque<A...> const*);
template <class... A>
std::list<A...> const* standard_base(std::list<A...> const*);
template <class... A>
std::forward_list<A...> const* standard_base(std::forward_list<A...> const*);
template <class E, std::size_t N>
std::array<E, N> const* standard_base(std::array<E, N> const*);
template <class... A>
std::set<A...> const* standard_base(std::set<A...> const*);
template <class... A>
std::multiset<A...> const* standard_base(std::multiset<A...> const*);
template <class... A>
std::map<A...> const* standard_base(std::map<A...> const*);
template <class... A>
std::multimap<A...> const* standard_base(std::multimap<A...> const*);
template <class... A>
std::unordered_set<A...> const* standard_base(std::unordered_set<A...> const*);
template <class... A>
std::unordered_multiset<A...> const* standard_base(std::unordered_multiset<A...> const*);
template <class... A>
std::unordered_map<A...> const* standard_base(std::unordered_map<A...> const*);
template <class... A>
std::unordered_multimap<A...> const* standard_base(std::unordered_multimap<A...> const*);

template <class T, class = void>
struct standard_base_of {
    using type = void;
};
template <class T>
struct standard_base_of<T, std::enable_if_t<std::is_class_v<T>,
                                            std::void_t<decltype(standard_base(std::declval<T const*>()))>>> {
    using type = std::remove_cv_t<std::remove_pointer_t<decltype(standard_base(std::declval<T const*>()))>>;
};

template <class T, class Base>
struct is_larger_than : std::bool_constant<(sizeof(T) > sizeof(Base))> {};

/// A class derived from a standard container that is larger than it: fields of its own,
/// which iterating it (or its data()) would never reach. (The size is compared only for a
/// class with such a base.)
template <class T, class Base = typename standard_base_of<T>::type>
struct is_container_with_fields_of_its_own
    : std::conjunction<std::negation<std::is_void<Base>>, std::negation<std::is_same<Base, T>>,
                       is_larger_than<T, std::conditional_t<std::is_void_v<Base>, T, Base>>> {};

template <class T>
struct is_string_like
    : std::bool_constant<std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>> {};

template <class>
inline constexpr bool dependent_false = false;

} // namespace detail

/// Specialize as std::true_type for a type whose describe is a function template, to
/// say that it describes every field of the type: the check that the describe found
/// takes the type itself, not a base class, cannot see through a template (argument
/// deduction looks at no conversion).
template <class T>
struct describes_whole : std::false_type {};

/// Writes values into a canonical message: a type tag and a length for every field,
/// integers little-endian at fixed width, floats by IEEE bit pattern (a NaN by its own:
/// sign and payload), strings and bytes with their length, sequences as elements then size,
/// sets and maps independent of order. Equal content gives equal bytes in every
/// process; any difference gives different bytes.
///
/// A host describes its own types with a function found by argument-dependent lookup:
/// \code
/// struct options { int level; std::vector<std::string> flags;
///   friend void describe(compile_cache::key_writer& w, options const& o) { w(o.level, o.flags); } };
/// \endcode
class key_writer {
public:
    explicit key_writer(std::string& out) noexcept : out_(&out) {}

    /// Appends each value in turn.
    template <class... T>
    key_writer& operator()(T const&... values) {
        (append(values), ...);
        return *this;
    }

    /// Appends raw bytes as one field (tag, length, bytes).
    void bytes(void const* data, std::size_t size) { field(detail::field_tag::bytes, data, size); }

    /// The message written so far.
    std::string const& message() const noexcept { return *out_; }

    template <class T>
    void append(T const& v) {
        using detail::field_tag;
        if constexpr (std::is_same_v<T, bool>) {
            unsigned char b = v ? 1 : 0;
            field(field_tag::boolean, &b, 1);
        } else if constexpr (std::is_same_v<T, key>) {
            // An empty key is what a bypassed kernel's key_result holds: it stands for
            // no content at all, so a caller keyed on it would hit whatever its callee
            // became. The component becomes a bypass instead (key_builder::add).
            if (v.empty())
                throw std::invalid_argument("an empty key (a kernel that bypassed the cache) has no content");
            field(field_tag::digest, v.data(), v.size());
        } else if constexpr (std::is_enum_v<T>) {
            tag(field_tag::enumeration);
            append(static_cast<std::underlying_type_t<T>>(v));
        } else if constexpr (std::is_integral_v<T>) {
            integer(v);
        } else if constexpr (std::is_floating_point_v<T>) {
            static_assert(std::numeric_limits<T>::is_iec559 && (sizeof(T) == 4 || sizeof(T) == 8),
                          "compile_cache: only IEEE float and double have a portable bit pattern; "
                          "convert long double to double or describe it as bytes");
            floating(v);
        } else if constexpr (detail::is_string_like<T>::value) {
            field(field_tag::string, v.data(), v.size());
        } else if constexpr (std::is_array_v<T> && std::is_same_v<std::remove_cv_t<std::remove_extent_t<T>>, char>) {
            // Every character but the NULs at its end: a string literal as its string, and
            // an array with bytes after an inner NUL (a magic number, a table) keyed by
            // them too, never past the array. An array of unknown bound (`extern char
            // const src[];`) up to its NUL, as a char const* is.
            if constexpr (std::extent_v<T> == 0) {
                append(std::string_view(v));
            } else {
                std::size_t n = std::extent_v<T>;
                while (n > 0 && v[n - 1] == '\0') --n;
                append(std::string_view(v, n));
            }
        } else if constexpr (std::is_same_v<T, char const*> || std::is_same_v<T, char*>) {
            if (v == nullptr)
                tag(field_tag::nothing); // (not the empty string)
            else
                append(std::string_view(v));
        } else if constexpr (std::is_pointer_v<T> || std::is_member_pointer_v<T>) {
            static_assert(detail::dependent_false<T>,
                          "compile_cache: a pointer has no content to key (its address differs between "
                          "runs); describe what it points to, or number it with compile_cache::ordinal_map");
        } else if constexpr (detail::has_describe<T>::value) {
            // A describe found only for a base class would key a derived value by its
            // base part alone: two values that differ in the derived fields would share
            // an entry, and one would load the other's kernel.
            static_assert(detail::has_exact_describe<T>::value || describes_whole<T>::value,
                          "compile_cache: the describe found for this type takes a base class of it (or "
                          "another type it converts to), so its own fields would not reach the key. Provide "
                          "`void describe(compile_cache::key_writer& w, T const& value)` for the type itself "
                          "(it may describe the base part first: w(static_cast<Base const&>(value), ...)). If "
                          "it is a function template that does take the type itself, say so: specialize "
                          "compile_cache::describes_whole<T> as std::true_type");
            tag(field_tag::record_begin);
            describe(*this, v);
            tag(field_tag::record_end);
        } else if constexpr (std::is_same_v<T, std::monostate> || std::is_same_v<T, std::nullopt_t>) {
            tag(field_tag::nothing);
        } else if constexpr (detail::is_optional<T>::value) {
            unsigned char present = v.has_value() ? 1 : 0;
            field(field_tag::optional, &present, 1);
            if (v) append(*v);
        } else if constexpr (detail::is_variant<T>::value) {
            tag(field_tag::variant);
            detail::append_le<std::uint64_t>(*out_, static_cast<std::uint64_t>(v.index()));
            std::visit([this](auto const& alt) { this->append(alt); }, v);
        } else if constexpr (detail::is_container_with_fields_of_its_own<T>::value) {
            static_assert(detail::dependent_false<T>,
                          "compile_cache: a type derived from a standard container with fields of its own "
                          "would be keyed by its elements alone; describe it");
        } else if constexpr (is_unordered_collection<T>::value) {
            collection(v);
        } else if constexpr (detail::is_contiguous_bytes<T>::value) {
            field(field_tag::bytes, v.data(), v.size());
        } else if constexpr (detail::is_range_of_itself<T>::value) {
            static_assert(detail::has_native_string<T>::value,
                          "compile_cache: a range whose elements are of its own type never ends; describe it");
            append(v.native()); // std::filesystem::path: its string, as the system spells it
        } else if constexpr (detail::is_range<T>::value) {
            tag(field_tag::sequence_begin);
            std::uint64_t n = 0;
            for (auto const& e : v) {
                append(e);
                ++n;
            }
            tag(field_tag::sequence_end);
            detail::append_le<std::uint64_t>(*out_, n);
        } else if constexpr (detail::is_tuple_like<T>::value) {
            tag(field_tag::tuple);
            detail::append_le<std::uint64_t>(*out_, std::tuple_size<T>::value);
            std::apply([this](auto const&... e) { (this->append(e), ...); }, v);
        } else {
            static_assert(detail::dependent_false<T>,
                          "compile_cache: this type has no content description. Provide "
                          "`void describe(compile_cache::key_writer& w, T const& value)` found by "
                          "argument-dependent lookup (a hidden friend works) that writes each field "
                          "with w(field, ...)");
        }
    }

private:
    void tag(detail::field_tag t) { out_->push_back(static_cast<char>(t)); }

    void field(detail::field_tag t, void const* data, std::size_t size) {
        tag(t);
        detail::append_le<std::uint64_t>(*out_, static_cast<std::uint64_t>(size));
        out_->append(static_cast<char const*>(data), size);
    }

    template <class Int>
    void integer(Int v) {
        using U = std::make_unsigned_t<Int>;
        tag(std::is_signed_v<Int> ? detail::field_tag::signed_integer : detail::field_tag::unsigned_integer);
        detail::append_le<std::uint64_t>(*out_, sizeof(Int));
        detail::append_le<U>(*out_, static_cast<U>(v));
    }

    template <class Float>
    void floating(Float v) {
        using Bits = std::conditional_t<sizeof(Float) == 4, std::uint32_t, std::uint64_t>;
        Bits bits;
        // Every bit, a NaN's sign and payload too: a kernel may fold them (copysign, a
        // NaN-boxed value), so two NaNs are two inputs (docs/design.md, "Keys").
        std::memcpy(&bits, &v, sizeof bits);
        tag(detail::field_tag::floating);
        detail::append_le<std::uint64_t>(*out_, sizeof(Float));
        detail::append_le<Bits>(*out_, bits);
    }

    // Order independence without trusting the container's order or comparator: each
    // element is encoded on its own, and the encodings are sorted.
    template <class C>
    void collection(C const& c) {
        std::vector<std::string> encoded;
        encoded.reserve(static_cast<std::size_t>(std::distance(std::begin(c), std::end(c))));
        auto const end = std::end(c);
        for (auto it = std::begin(c); it != end;) {
            // A run of elements with equivalent keys (multi containers only) that are not
            // all alike is one field, in the container's order: a host that iterates it
            // sees that order. Alike ones, and every other element, are fields of their own.
            std::size_t const first = encoded.size();
            auto run_end = it;
            do {
                std::string one;
                key_writer w(one);
                w.append(*run_end);
                encoded.push_back(std::move(one));
                ++run_end;
            } while (run_end != end && equivalent_in(c, *it, *run_end));
            it = run_end;
            std::size_t const n = encoded.size() - first;
            if (n > 1 && std::any_of(encoded.begin() + static_cast<std::ptrdiff_t>(first) + 1, encoded.end(),
                                     [&](std::string const& e) { return e != encoded[first]; })) {
                std::string run(1, static_cast<char>(detail::field_tag::equivalent_run_begin));
                for (std::size_t i = first; i < encoded.size(); ++i) run += encoded[i];
                run.push_back(static_cast<char>(detail::field_tag::equivalent_run_end));
                detail::append_le<std::uint64_t>(run, static_cast<std::uint64_t>(n));
                encoded.resize(first);
                encoded.push_back(std::move(run));
            }
        }
        std::sort(encoded.begin(), encoded.end());
        tag(detail::field_tag::collection_begin);
        for (auto const& e : encoded) out_->append(e);
        tag(detail::field_tag::collection_end);
        detail::append_le<std::uint64_t>(*out_, static_cast<std::uint64_t>(encoded.size()));
    }

    // Whether `a` and `b`, adjacent elements of `c`, have equivalent keys (false for a
    // container that cannot hold two).
    template <class C, class E>
    static bool equivalent_in(C const& c, E const& a, E const& b) {
        if constexpr (detail::equivalent_keys<C>::value)
            return detail::equivalent_keys<C>::of(c, a, b);
        else
            return (void)c, (void)a, (void)b, false;
    }

    std::string* out_;
};

} // namespace compile_cache
