// compile_cache: text made safe to print on a terminal. Names, files and component names
// come from entries and records anyone who can write the storage may have forged: the
// library's log lines and the compile-cache tool print them through printable() alone.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <string>
#include <string_view>

namespace compile_cache {

/// `s` with every byte that could upset a terminal written as `\xNN`: control
/// characters (escape sequences, newlines that would fake another line), DEL, the
/// backslash itself, C1 controls encoded in UTF-8, and any byte that is not part of
/// well-formed UTF-8. Well-formed UTF-8 otherwise passes unchanged.
COMPILE_CACHE_DECL std::string printable(std::string_view s);

} // namespace compile_cache

#include <compile_cache/impl/printable.ipp>
