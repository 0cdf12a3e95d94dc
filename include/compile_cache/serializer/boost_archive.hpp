// compile_cache: Serializers over Boost.Serialization archives: boost_binary (the
// default; fast, for one platform) and boost_text (portable across platforms).
//
// Loading reads through bounded archives (detail::bounded_binary_iarchive and
// detail::bounded_text_iarchive): Boost's own, with the same format, except that a
// string length or a collection count larger than the bytes left in the payload is
// refused (an archive_exception: a deserialize-error miss) before anything is
// allocated for it, and a binary bool other than 0 or 1 is refused rather than read
// into a bool (undefined behaviour). Boost trusts its input; a payload that passed
// the envelope's check is still only as trustworthy as whoever could write it
// (docs/security.md), and without the bound a few bytes claiming a string of 2^40
// characters make it allocate that much. With it, what a payload of n bytes can make
// Boost allocate is about n times the size of the largest element type it holds.
// A payload with bytes left once the artifact is read (but a text archive's closing
// whitespace) is refused too: its writer's artifact held more than this reader's.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>

#include <compile_cache/detail/made_once.hpp>
#include <compile_cache/detail/memory_streambuf.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/serializer/reference.hpp>
#include <compile_cache/serializer/concept.hpp>

#include <boost/archive/basic_archive.hpp>
#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
// The bounded archives derive from Boost's archive templates, whose out-of-line members
// the compiled library instantiates only for Boost's own archives.
#include <boost/archive/archive_exception.hpp>
#include <boost/archive/binary_iarchive_impl.hpp>
#include <boost/archive/detail/register_archive.hpp>
#include <boost/archive/impl/archive_serializer_map.ipp>
#include <boost/archive/impl/basic_binary_iarchive.ipp>
#include <boost/archive/impl/basic_binary_iprimitive.ipp>
#include <boost/archive/impl/basic_text_iarchive.ipp>
#include <boost/archive/impl/text_iarchive_impl.ipp>
#include <boost/mpl/bool.hpp>
#include <boost/serialization/access.hpp>
#include <boost/serialization/collection_size_type.hpp>
#include <boost/serialization/is_bitwise_serializable.hpp>
#include <boost/serialization/level.hpp>
#include <boost/serialization/throw_exception.hpp>

#include <atomic>
#include <cstdint>
#include <cstddef>
#include <istream>
#include <type_traits>
#include <locale>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace compile_cache {

namespace detail {

/// What a binary archive's bytes depend on besides Boost's version. A binary archive
/// writes native integers and floats: its bytes mean the same only to a reader with the
/// same sizes and byte order.
COMPILE_CACHE_DECL std::string archive_abi();

/// The archive format version of the Boost in use. Read through a const object so the
/// conversion picks library_version_type's const operator (a cast of the temporary
/// picks the non-const one, and -Wconversion says so).
COMPILE_CACHE_DECL unsigned archive_version();

// The archive header is left out (no_header): the envelope's format id already says
// what the header would, and checking it there happens before Boost sees a byte.
inline constexpr unsigned archive_flags = boost::archive::no_header | boost::archive::no_codecvt;

/// The locale of text archives. The classic locale, whatever the host's global one:
/// under a locale that writes 1,5 or 1.000 the entries would read nowhere else. With
/// facets for inf and nan, which std::num_get cannot read back from std::num_put: a
/// kernel with an infinite constant would miss on every load and be stored again.
COMPILE_CACHE_DECL std::locale const& text_archive_locale();

/// Refuses a string length or a collection count that claims more than `in` has left:
/// a character of a string, or an element of a collection, takes at least one byte in
/// either archive. (The one exception, elements of an empty class, which write nothing:
/// a collection of more of those than bytes left is refused too, and is a miss.)
/// Called per string and per collection while loading: inline in both modes.
inline void check_claimed_size(std::uintmax_t claimed, std::uintmax_t unit, std::streambuf& in) {
    std::streamsize const left = in.in_avail();
    if (left < 0 || claimed > static_cast<std::uintmax_t>(left) / unit)
        boost::serialization::throw_exception(boost::archive::archive_exception(
            boost::archive::archive_exception::input_stream_error,
            "compile_cache: a length in the archive is larger than what is left of it"));
}

/// Refuses a payload with bytes left after the artifact was read: bytes its own writer
/// wrote for something this reader's artifact does not read (a field the writer's type had
/// and this one lacks, under the same key), so that the artifact read is not taken for the
/// one written. Whitespace is what a text archive ends with (its last line's end), and is
/// let pass in that archive only.
inline void check_all_read(std::streambuf& in, bool whitespace_ends) {
    for (;;) {
        std::streambuf::int_type const c = in.sgetc();
        if (std::streambuf::traits_type::eq_int_type(c, std::streambuf::traits_type::eof())) return;
        char const ch = std::streambuf::traits_type::to_char_type(c);
        if (!whitespace_ends || (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t'))
            boost::serialization::throw_exception(boost::archive::archive_exception(
                boost::archive::archive_exception::input_stream_error,
                "compile_cache: bytes left in the payload after the artifact was read"));
        in.sbumpc();
    }
}

/// boost::archive::binary_iarchive, bounded (see the file comment). Reads what
/// binary_oarchive writes, byte for byte.
class bounded_binary_iarchive
    : public boost::archive::binary_iarchive_impl<bounded_binary_iarchive, std::istream::char_type,
                                                  std::istream::traits_type> {
    using impl =
        boost::archive::binary_iarchive_impl<bounded_binary_iarchive, std::istream::char_type, std::istream::traits_type>;

public:
    COMPILE_CACHE_DECL bounded_binary_iarchive(std::streambuf& in, unsigned flags);

    /// Which arrays are read as raw bytes (BOOST_SERIALIZATION_USE_ARRAY_OPTIMIZATION, at
    /// the end of this file): what Boost's binary archive reads so, but for bool, whose
    /// arrays (`bool[N]`, `std::array<bool, N>`) are read element by element through
    /// load(bool&), which refuses a byte other than 0 or 1.
    struct use_array_optimization {
        template <class T>
        struct apply : boost::mpl::bool_<boost::serialization::is_bitwise_serializable<T>::value &&
                                         !std::is_same<T, bool>::value> {};
    };

private:
    friend class boost::archive::detail::interface_iarchive<bounded_binary_iarchive>;
    friend class boost::archive::basic_binary_iarchive<bounded_binary_iarchive>;
    friend class boost::archive::basic_binary_iprimitive<bounded_binary_iarchive, std::istream::char_type,
                                                         std::istream::traits_type>;
    friend class boost::archive::load_access;

    template <class T>
    void load_override(T& t) {
        impl::load_override(t);
    }
    // The loads below run per element of an artifact: inline in both modes.
    void load_override(boost::serialization::collection_size_type& t) {
        impl::load_override(t);
        boost::serialization::collection_size_type const& count = t; // the const conversion
        check_claimed_size(static_cast<std::size_t>(count), 1, in_);
    }

    using impl::load;
    // A bool is one byte, 0 or 1. Boost reads the byte straight into the bool, and any
    // other value makes a bool that is neither (undefined behaviour): refused instead.
    void load(bool& t) {
        unsigned char byte = 0;
        load_binary(&byte, 1);
        if (byte > 1)
            boost::serialization::throw_exception(boost::archive::archive_exception(
                boost::archive::archive_exception::input_stream_error,
                "compile_cache: a bool that is neither 0 nor 1"));
        t = byte != 0;
    }
    // binary_oarchive writes a string as its std::size_t length, then its characters.
    void load(std::string& s) {
        std::size_t n = 0;
        impl::load(n);
        check_claimed_size(n, 1, in_);
        s.resize(n);
        if (n != 0) load_binary(&s[0], n);
    }
    void load(std::wstring& s) {
        std::size_t n = 0;
        impl::load(n);
        check_claimed_size(n, sizeof(wchar_t), in_);
        s.resize(n);
        if (n != 0) load_binary(&s[0], n * sizeof(wchar_t));
    }

    std::streambuf& in_;
};

/// boost::archive::text_iarchive, bounded (see the file comment). Reads what
/// text_oarchive writes.
class bounded_text_iarchive : public boost::archive::text_iarchive_impl<bounded_text_iarchive> {
    using impl = boost::archive::text_iarchive_impl<bounded_text_iarchive>;

public:
    COMPILE_CACHE_DECL bounded_text_iarchive(std::istream& in, unsigned flags);

private:
    friend class boost::archive::detail::interface_iarchive<bounded_text_iarchive>;
    friend class boost::archive::basic_text_iarchive<bounded_text_iarchive>;
    friend class boost::archive::load_access;

    template <class T>
    void load_override(T& t) {
        impl::load_override(t);
    }
    // Per element of an artifact, as in the binary archive: inline in both modes.
    void load_override(boost::serialization::collection_size_type& t) {
        impl::load_override(t);
        boost::serialization::collection_size_type const& count = t; // the const conversion
        check_claimed_size(static_cast<std::size_t>(count), 1, *is.rdbuf());
    }

    using impl::load;
    // text_oarchive writes a string as its length, one space, then its characters.
    void load(std::string& s) {
        std::size_t n = 0;
        *this >> n;
        is.get();
        check_claimed_size(n, 1, *is.rdbuf());
        s.resize(n);
        if (n != 0) is.read(&s[0], static_cast<std::streamsize>(n));
    }
    // And a wide string as its length in characters, one space, then their bytes.
    void load(std::wstring& s) {
        std::size_t n = 0;
        *this >> n;
        is.get();
        check_claimed_size(n, sizeof(wchar_t), *is.rdbuf());
        s.resize(n);
        if (n != 0) is.read(reinterpret_cast<char*>(&s[0]), static_cast<std::streamsize>(n * sizeof(wchar_t)));
    }
};

} // namespace detail

namespace detail {
/// Whether Boost.Serialization can serialize T, so that an artifact it cannot gets the
/// library's sentence instead of Boost's pages. Accepted: what Boost keeps as a
/// primitive (numbers, enums, strings, BOOST_CLASS_IMPLEMENTATION(T, primitive_type)),
/// arrays and pointers (Boost's own rules), a class with a member named `serialize`
/// (public or private with `friend class boost::serialization::access`) or members
/// named `save` and `load`, and a class with a free `serialize(Archive&, T&, unsigned)`
/// more specific than Boost's fallback (found in T's namespace or in
/// boost::serialization: Boost's headers for standard containers, SPLIT_FREE). A final
/// class, whose members cannot be probed, is left to Boost.
namespace boost_probe {
struct fallback_marker {};
/// As general as Boost's own fallback `serialize`, so that a call that finds only the
/// two is ambiguous, and one that finds a more specific overload picks it.
template <class Archive, class T>
fallback_marker serialize(Archive&, T&, const unsigned int);

/// An archive type whose argument brings boost::serialization into lookup.
template <class Associated>
struct probe_archive {};

template <class Archive, class T, class = void>
struct has_free_serialize : std::false_type {};
template <class Archive, class T>
struct has_free_serialize<
    Archive, T, std::void_t<decltype(serialize(std::declval<Archive&>(), std::declval<T&>(), 0u))>>
    : std::bool_constant<!std::is_same_v<decltype(serialize(std::declval<Archive&>(), std::declval<T&>(), 0u)),
                                         fallback_marker>> {};

struct names_serialize {
    int serialize;
};
struct names_save {
    int save;
};
struct names_load {
    int load;
};
/// Naming Base's one member in a class derived from T and Base is ambiguous exactly
/// when T has a member of that name too, whatever its access.
template <class T, class Base>
struct probe_member : T, Base {};
} // namespace boost_probe

template <class T, class Base, class = void>
struct has_member_like : std::true_type {};
template <class T>
struct has_member_like<T, boost_probe::names_serialize,
                       std::void_t<decltype(&boost_probe::probe_member<T, boost_probe::names_serialize>::serialize)>>
    : std::false_type {};
template <class T>
struct has_member_like<T, boost_probe::names_save,
                       std::void_t<decltype(&boost_probe::probe_member<T, boost_probe::names_save>::save)>>
    : std::false_type {};
template <class T>
struct has_member_like<T, boost_probe::names_load,
                       std::void_t<decltype(&boost_probe::probe_member<T, boost_probe::names_load>::load)>>
    : std::false_type {};

template <class T>
constexpr bool is_boost_serializable() {
    if constexpr (!std::is_class_v<T> || std::is_final_v<T>) {
        return true; // numbers, enums, arrays, pointers: Boost's rules; final: cannot probe
    } else {
        using boost_probe::has_free_serialize;
        using boost_probe::names_load;
        using boost_probe::names_save;
        using boost_probe::names_serialize;
        return boost::serialization::implementation_level<T>::value == boost::serialization::primitive_type ||
               has_member_like<T, names_serialize>::value ||
               (has_member_like<T, names_save>::value && has_member_like<T, names_load>::value) ||
               has_free_serialize<boost_probe::probe_archive<boost::serialization::access>, T>::value ||
               has_free_serialize<boost::archive::binary_oarchive, T>::value ||
               has_free_serialize<boost::archive::text_oarchive, T>::value;
    }
}

// A function, not a class, so that a failed check is one error (see
// serializer/concept.hpp's assert_serializer_for).
template <class T>
constexpr bool assert_boost_serializable() {
    static_assert(is_boost_serializable<T>(),
                  "compile_cache: Boost.Serialization cannot serialize the artifact type; give it a member "
                  "`template <class Archive> void serialize(Archive& ar, unsigned version)` (or members save "
                  "and load with BOOST_SERIALIZATION_SPLIT_MEMBER()), or a free `template <class Archive> void "
                  "serialize(Archive& ar, T& value, unsigned version)`; for a standard container, include "
                  "Boost's header for it (<boost/serialization/vector.hpp>, ...)");
    return is_boost_serializable<T>();
}

template <class T>
struct check_boost_serializable {
    static constexpr bool value = assert_boost_serializable<T>();
};
} // namespace detail

/// Boost.Serialization in a binary archive. Artifacts give themselves a `serialize`
/// member as usual; `compile_cache::ref<T>` members relink through the resolver.
struct boost_binary {
    COMPILE_CACHE_DECL static std::string const& format_id();

    template <class T>
    static void save(std::string& out, T const& value, resolver_context const& ctx) {
        if constexpr (detail::check_boost_serializable<T>::value) {
            detail::string_append_buf buf(out);
            boost::archive::binary_oarchive ar(buf, detail::archive_flags);
            resolver_context_of(ar) = ctx;
            ar << value;
        }
    }

    template <class T>
    static void load(std::string_view in, T& value, resolver_context const& ctx) {
        if constexpr (detail::check_boost_serializable<T>::value) {
            detail::memory_read_buf buf(in);
            detail::bounded_binary_iarchive ar(buf, detail::archive_flags);
            resolver_context_of(ar) = ctx;
            ar >> value;
            detail::check_all_read(buf, false);
        }
    }
};

/// Boost.Serialization in a text archive: slower and larger, readable on any platform.
struct boost_text {
    COMPILE_CACHE_DECL static std::string const& format_id();

    template <class T>
    static void save(std::string& out, T const& value, resolver_context const& ctx) {
        if constexpr (detail::check_boost_serializable<T>::value) {
            detail::string_append_buf buf(out);
            std::ostream os(&buf);
            os.imbue(detail::text_archive_locale());
            boost::archive::text_oarchive ar(os, detail::archive_flags);
            resolver_context_of(ar) = ctx;
            ar << value;
        }
    }

    template <class T>
    static void load(std::string_view in, T& value, resolver_context const& ctx) {
        if constexpr (detail::check_boost_serializable<T>::value) {
            detail::memory_read_buf buf(in);
            std::istream is(&buf);
            is.imbue(detail::text_archive_locale());
            detail::bounded_text_iarchive ar(is, detail::archive_flags);
            resolver_context_of(ar) = ctx;
            ar >> value;
            detail::check_all_read(buf, true);
        }
    }
};

} // namespace compile_cache

// Boost's registration of an archive type (for exported classes serialized through
// base pointers) and its array optimization, as binary_iarchive has them: without the
// latter, a vector of numbers would be read element by element, in another format.
BOOST_SERIALIZATION_REGISTER_ARCHIVE(compile_cache::detail::bounded_binary_iarchive)
BOOST_SERIALIZATION_USE_ARRAY_OPTIMIZATION(compile_cache::detail::bounded_binary_iarchive)
BOOST_SERIALIZATION_REGISTER_ARCHIVE(compile_cache::detail::bounded_text_iarchive)

#include <compile_cache/serializer/impl/boost_archive.ipp>
