// compile_cache: the definitions of printable.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache {

std::string printable(std::string_view s) {
    static char const hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    auto escape = [&](unsigned char c) {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 0xf];
    };
    std::size_t i = 0;
    while (i < s.size()) {
        auto const c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f || c == '\\') escape(c);
            else out += static_cast<char>(c);
            ++i;
            continue;
        }
        // A well-formed UTF-8 sequence is kept, unless it encodes a C1 control
        // (U+0080..U+009F: 0xc2 0x80..0x9f), which some terminals act on as they do on
        // the raw bytes 0x80..0x9f; anything malformed is escaped byte by byte.
        std::size_t const n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        bool ok = n != 0 && i + n <= s.size();
        for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
        if (ok && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) <= 0x9f) ok = false;
        if (ok && c == 0xe0 && static_cast<unsigned char>(s[i + 1]) < 0xa0) ok = false; // overlong
        if (ok && c == 0xf0 && static_cast<unsigned char>(s[i + 1]) < 0x90) ok = false; // overlong
        if (ok && c == 0xed && static_cast<unsigned char>(s[i + 1]) >= 0xa0) ok = false; // surrogates
        if (ok && c == 0xf4 && static_cast<unsigned char>(s[i + 1]) >= 0x90) ok = false; // over U+10FFFF
        if (!ok) {
            escape(c);
            ++i;
            continue;
        }
        out.append(s.data() + i, n);
        i += n;
    }
    return out;
}

} // namespace compile_cache

#endif
