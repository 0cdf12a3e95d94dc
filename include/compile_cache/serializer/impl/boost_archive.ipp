// compile_cache: the definitions of serializer/boost_archive.hpp's non-template functions; included
// by it alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <boost/math/special_functions/nonfinite_num_facets.hpp>
#include <boost/version.hpp>

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
           std::to_string(sizeof(float)) + "d" + std::to_string(sizeof(double)) + "p" +
           std::to_string(sizeof(void*)) + "c" + std::to_string(CHAR_BIT) + (first == 1 ? "le" : "be");
}

unsigned archive_version() {
    boost::serialization::library_version_type const version = boost::archive::BOOST_ARCHIVE_VERSION();
    return static_cast<unsigned>(version);
}

std::locale const& text_archive_locale() {
    static std::locale const locale(
        std::locale(std::locale::classic(), new boost::math::nonfinite_num_put<char>),
        new boost::math::nonfinite_num_get<char>);
    return locale;
}

void check_claimed_size(std::uintmax_t claimed, std::uintmax_t unit, std::streambuf& in) {
    std::streamsize const left = in.in_avail();
    if (left < 0 || claimed > static_cast<std::uintmax_t>(left) / unit)
        boost::serialization::throw_exception(boost::archive::archive_exception(
            boost::archive::archive_exception::input_stream_error,
            "compile_cache: a length in the archive is larger than what is left of it"));
}

bounded_binary_iarchive::bounded_binary_iarchive(std::streambuf& in, unsigned flags) : impl(in, flags), in_(in) {
    init(flags);
}

void bounded_binary_iarchive::load_override(boost::serialization::collection_size_type& t) {
    impl::load_override(t);
    boost::serialization::collection_size_type const& count = t; // the const conversion
    check_claimed_size(static_cast<std::size_t>(count), 1, in_);
}

void bounded_binary_iarchive::load(bool& t) {
    unsigned char byte = 0;
    load_binary(&byte, 1);
    if (byte > 1)
        boost::serialization::throw_exception(boost::archive::archive_exception(
            boost::archive::archive_exception::input_stream_error, "compile_cache: a bool that is neither 0 nor 1"));
    t = byte != 0;
}

void bounded_binary_iarchive::load(std::string& s) {
    std::size_t n = 0;
    impl::load(n);
    check_claimed_size(n, 1, in_);
    s.resize(n);
    if (n != 0) load_binary(&s[0], n);
}

void bounded_binary_iarchive::load(std::wstring& s) {
    std::size_t n = 0;
    impl::load(n);
    check_claimed_size(n, sizeof(wchar_t), in_);
    s.resize(n);
    if (n != 0) load_binary(&s[0], n * sizeof(wchar_t));
}

bounded_text_iarchive::bounded_text_iarchive(std::istream& in, unsigned flags) : impl(in, flags) {
    if ((flags & boost::archive::no_header) == 0) init();
}

void bounded_text_iarchive::load_override(boost::serialization::collection_size_type& t) {
    impl::load_override(t);
    boost::serialization::collection_size_type const& count = t; // the const conversion
    check_claimed_size(static_cast<std::size_t>(count), 1, *is.rdbuf());
}

void bounded_text_iarchive::load(std::string& s) {
    std::size_t n = 0;
    *this >> n;
    is.get();
    check_claimed_size(n, 1, *is.rdbuf());
    s.resize(n);
    if (n != 0) is.read(&s[0], static_cast<std::streamsize>(n));
}

} // namespace detail

std::string const& boost_binary::format_id() {
    static std::string const id = "boost_binary;archive=" +
                                  std::to_string(detail::archive_version()) +
                                  ";boost=" + std::to_string(BOOST_VERSION) + ";abi=" + detail::archive_abi();
    return id;
}

std::string const& boost_text::format_id() {
    static std::string const id = "boost_text;archive=" +
                                  std::to_string(detail::archive_version()) +
                                  ";boost=" + std::to_string(BOOST_VERSION);
    return id;
}

} // namespace compile_cache

#endif
