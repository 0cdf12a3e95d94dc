// compile_cache: reading settings from the environment.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace compile_cache::detail {

COMPILE_CACHE_DECL std::string lower(std::string_view s);

/// `s` without the spaces and tabs around it.
inline std::string_view trim_blanks(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

/// The value of an environment variable; empty when unset.
COMPILE_CACHE_DECL std::string getenv_string(std::string const& name);

/// The names of the environment variables set now whose name starts with `prefix`.
COMPILE_CACHE_DECL std::vector<std::string> environment_names_with_prefix(std::string_view prefix);

/// Unset, empty, `0`, `off`, `false` and `no` (any case, blanks around them ignored) switch
/// a setting off.
COMPILE_CACHE_DECL bool is_off(std::string_view value);

/// The one line for a process-wide implementation switch (COMPILE_CACHE_SHA256,
/// COMPILE_CACHE_CRC32C) set to a value it does not know; the fastest code is used.
COMPILE_CACHE_DECL void report_unknown_implementation(char const* variable, char const* value,
                                                     char const* accepted) noexcept;

/// `1`, `on`, `true` and `yes` (any case, blanks around them ignored) switch a setting on.
COMPILE_CACHE_DECL bool is_on(std::string_view value);

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/env.ipp>
