// compile_cache: stream buffers over memory, so that archives write straight into
// the entry being built and read straight from the bytes that were fetched.
#pragma once

#include <cstddef>
#include <streambuf>
#include <string>
#include <string_view>

namespace compile_cache::detail {

/// Appends everything written to a std::string.
class string_append_buf : public std::streambuf {
public:
    explicit string_append_buf(std::string& out) : out_(&out) {}

protected:
    std::streamsize xsputn(char const* s, std::streamsize n) override {
        out_->append(s, static_cast<std::size_t>(n));
        return n;
    }
    int_type overflow(int_type c) override {
        if (!traits_type::eq_int_type(c, traits_type::eof())) out_->push_back(traits_type::to_char_type(c));
        return traits_type::not_eof(c);
    }

private:
    std::string* out_;
};

/// Reads a fixed range of memory; reading past its end is end-of-file, never more.
class memory_read_buf : public std::streambuf {
public:
    explicit memory_read_buf(std::string_view in) {
        char* b = const_cast<char*>(in.data()); // get area is never written through
        setg(b, b, b + in.size());
    }

protected:
    std::streamsize xsgetn(char* s, std::streamsize n) override {
        std::streamsize avail = egptr() - gptr();
        if (n > avail) n = avail;
        traits_type::copy(s, gptr(), static_cast<std::size_t>(n));
        gbump(static_cast<int>(n));
        return n;
    }
};

} // namespace compile_cache::detail
