// compile_cache: stream buffers over memory, so that archives write straight into
// the entry being built and read straight from the bytes that were fetched.
#pragma once

#include <compile_cache/detail/config.hpp>

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
    COMPILE_CACHE_DECL std::streamsize xsputn(char const* s, std::streamsize n) override;
    COMPILE_CACHE_DECL int_type overflow(int_type c) override;

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
    COMPILE_CACHE_DECL std::streamsize xsgetn(char* s, std::streamsize n) override;
};

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/memory_streambuf.ipp>
