// compile_cache: the definitions of serializer/boost_archive.hpp's non-template functions; included
// by it alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <boost/math/special_functions/nonfinite_num_facets.hpp>
#include <boost/version.hpp>

#include <cfloat>
#include <climits>
#include <cstring>

namespace compile_cache {

namespace detail {

std::string archive_abi() {
    std::uint16_t probe = 1;
    unsigned char first;
    std::memcpy(&first, &probe, 1);
    return "s" + std::to_string(sizeof(short)) + "i" + std::to_string(sizeof(int)) + "l" +
           std::to_string(sizeof(long)) + "ll" + std::to_string(sizeof(long long)) + "f" +
           std::to_string(sizeof(float)) + "d" + std::to_string(sizeof(double)) +
           // long double's size and format (its mantissa's digits: x87's 64, binary128's 113,
           // double's 53), and wchar_t's size: a binary archive holds them as raw bytes.
           "ld" + std::to_string(sizeof(long double)) + "m" + std::to_string(LDBL_MANT_DIG) + "w" +
           std::to_string(sizeof(wchar_t)) + "p" +
           std::to_string(sizeof(void*)) + "c" + std::to_string(CHAR_BIT) + (first == 1 ? "le" : "be");
}

unsigned archive_version() {
    boost::serialization::library_version_type const version = boost::archive::BOOST_ARCHIVE_VERSION();
    return static_cast<unsigned>(version);
}

std::locale const& text_archive_locale() {
    // Never destroyed, as the format ids below: a cache of static storage duration loads
    // and stores at exit too.
    static std::atomic<std::locale const*> locale{nullptr};
    return made_once(locale, [] {
        return std::make_unique<std::locale const>(
            std::locale(std::locale::classic(), new boost::math::nonfinite_num_put<char>),
            new boost::math::nonfinite_num_get<char>);
    });
}

bounded_binary_iarchive::bounded_binary_iarchive(std::streambuf& in, unsigned flags) : impl(in, flags), in_(in) {
    init(flags);
}

bounded_text_iarchive::bounded_text_iarchive(std::istream& in, unsigned flags) : impl(in, flags) {
    if ((flags & boost::archive::no_header) == 0) init();
}

} // namespace detail

std::string const& boost_binary::format_id() {
    static std::atomic<std::string const*> id{nullptr};
    return detail::made_once(id, [] {
        return std::make_unique<std::string const>("boost_binary;archive=" + std::to_string(detail::archive_version()) +
                                                   ";boost=" + std::to_string(BOOST_VERSION) +
                                                   ";abi=" + detail::archive_abi());
    });
}

std::string const& boost_text::format_id() {
    static std::atomic<std::string const*> id{nullptr};
    return detail::made_once(id, [] {
        return std::make_unique<std::string const>("boost_text;archive=" + std::to_string(detail::archive_version()) +
                                                   ";boost=" + std::to_string(BOOST_VERSION));
    });
}

} // namespace compile_cache

#endif
