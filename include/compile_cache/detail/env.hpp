// compile_cache: reading settings from the environment.
#pragma once

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace compile_cache::detail {

inline std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// The value of an environment variable; empty when unset.
inline std::string getenv_string(std::string const& name) {
    char const* v = std::getenv(name.c_str());
    return v ? std::string(v) : std::string();
}

/// Unset, empty, `0`, `off`, `false` and `no` (any case) switch a setting off.
inline bool is_off(std::string_view value) {
    std::string v = lower(value);
    return v.empty() || v == "0" || v == "off" || v == "false" || v == "no";
}

/// The one line for a process-wide implementation switch (COMPILE_CACHE_SHA256,
/// COMPILE_CACHE_CRC32C) set to a value it does not know; the fastest code is used.
inline void report_unknown_implementation(char const* variable, char const* value) noexcept {
    std::fprintf(stderr,
                 "compile_cache: %s=\"%s\" is not understood (portable, or auto); using the fastest "
                 "implementation this CPU runs\n",
                 variable, value);
}

/// `1`, `on`, `true` and `yes` (any case) switch a setting on.
inline bool is_on(std::string_view value) {
    std::string v = lower(value);
    return v == "1" || v == "on" || v == "true" || v == "yes";
}

} // namespace compile_cache::detail
