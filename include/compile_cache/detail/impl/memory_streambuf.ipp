// compile_cache: the definitions of detail/memory_streambuf.hpp's non-template functions; included
// by it alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

std::streamsize string_append_buf::xsputn(char const* s, std::streamsize n) {
    out_->append(s, static_cast<std::size_t>(n));
    return n;
}

string_append_buf::int_type string_append_buf::overflow(int_type c) {
    if (!traits_type::eq_int_type(c, traits_type::eof())) out_->push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
}

std::streamsize memory_read_buf::xsgetn(char* s, std::streamsize n) {
    std::streamsize avail = egptr() - gptr();
    if (n > avail) n = avail;
    traits_type::copy(s, gptr(), static_cast<std::size_t>(n));
    gbump(static_cast<int>(n));
    return n;
}

} // namespace compile_cache::detail

#endif
