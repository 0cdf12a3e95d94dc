// compile_cache: the definitions of detail/log.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <cstdio>

namespace compile_cache::detail {

void log_or_stderr(line_logger const& logger, std::string_view line) noexcept {
    if (logger)
        log_with(logger, [&] { return line; });
    else
        std::fprintf(stderr, "compile_cache: %.*s\n", static_cast<int>(line.size()), line.data());
}

} // namespace compile_cache::detail

#endif
