// compile_cache: Serializers over Boost.Serialization archives: boost_binary (the
// default; fast, for one platform) and boost_text (portable across platforms).
#pragma once

#include <compile_cache/detail/memory_streambuf.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/serializer/concept.hpp>

#include <boost/archive/basic_archive.hpp>
#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/math/special_functions/nonfinite_num_facets.hpp>
#include <boost/version.hpp>

#include <climits>
#include <cstdint>
#include <cstring>
#include <istream>
#include <locale>
#include <ostream>
#include <string>
#include <string_view>

namespace compile_cache {

namespace detail {

inline std::string archive_abi() {
    // A binary archive writes native integers and floats: its bytes mean the same only
    // to a reader with the same sizes and byte order.
    std::uint16_t probe = 1;
    unsigned char first;
    std::memcpy(&first, &probe, 1);
    return "s" + std::to_string(sizeof(short)) + "i" + std::to_string(sizeof(int)) + "l" +
           std::to_string(sizeof(long)) + "ll" + std::to_string(sizeof(long long)) + "f" +
           std::to_string(sizeof(float)) + "d" + std::to_string(sizeof(double)) + "p" +
           std::to_string(sizeof(void*)) + "c" + std::to_string(CHAR_BIT) + (first == 1 ? "le" : "be");
}

/// The archive format version of the Boost in use. Read through a const object so the
/// conversion picks library_version_type's const operator (a cast of the temporary
/// picks the non-const one, and -Wconversion says so).
inline unsigned archive_version() {
    boost::serialization::library_version_type const version = boost::archive::BOOST_ARCHIVE_VERSION();
    return static_cast<unsigned>(version);
}

// The archive header is left out (no_header): the envelope's format id already says
// what the header would, and checking it there happens before Boost sees a byte.
inline constexpr unsigned archive_flags = boost::archive::no_header | boost::archive::no_codecvt;

/// The locale of text archives. The classic locale, whatever the host's global one:
/// under a locale that writes 1,5 or 1.000 the entries would read nowhere else. With
/// facets for inf and nan, which std::num_get cannot read back from std::num_put: a
/// kernel with an infinite constant would miss on every load and be stored again.
inline std::locale const& text_archive_locale() {
    static std::locale const locale(
        std::locale(std::locale::classic(), new boost::math::nonfinite_num_put<char>),
        new boost::math::nonfinite_num_get<char>);
    return locale;
}

} // namespace detail

/// Boost.Serialization in a binary archive. Artifacts give themselves a `serialize`
/// member as usual; `compile_cache::ref<T>` members relink through the resolver.
struct boost_binary {
    static std::string const& format_id() {
        static std::string const id = "boost_binary;archive=" +
                                      std::to_string(detail::archive_version()) +
                                      ";boost=" + std::to_string(BOOST_VERSION) + ";abi=" + detail::archive_abi();
        return id;
    }

    template <class T>
    static void save(std::string& out, T const& value, resolver_context const& ctx) {
        detail::string_append_buf buf(out);
        boost::archive::binary_oarchive ar(buf, detail::archive_flags);
        resolver_context_of(ar) = ctx;
        ar << value;
    }

    template <class T>
    static void load(std::string_view in, T& value, resolver_context const& ctx) {
        detail::memory_read_buf buf(in);
        boost::archive::binary_iarchive ar(buf, detail::archive_flags);
        resolver_context_of(ar) = ctx;
        ar >> value;
    }
};

/// Boost.Serialization in a text archive: slower and larger, readable on any platform.
struct boost_text {
    static std::string const& format_id() {
        static std::string const id = "boost_text;archive=" +
                                      std::to_string(detail::archive_version()) +
                                      ";boost=" + std::to_string(BOOST_VERSION);
        return id;
    }

    template <class T>
    static void save(std::string& out, T const& value, resolver_context const& ctx) {
        detail::string_append_buf buf(out);
        std::ostream os(&buf);
        os.imbue(detail::text_archive_locale());
        {
            boost::archive::text_oarchive ar(os, detail::archive_flags);
            resolver_context_of(ar) = ctx;
            ar << value;
        }
    }

    template <class T>
    static void load(std::string_view in, T& value, resolver_context const& ctx) {
        detail::memory_read_buf buf(in);
        std::istream is(&buf);
        is.imbue(detail::text_archive_locale());
        boost::archive::text_iarchive ar(is, detail::archive_flags);
        resolver_context_of(ar) = ctx;
        ar >> value;
    }
};

} // namespace compile_cache
