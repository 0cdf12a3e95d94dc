// compile_cache: the definitions of detail/env.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__APPLE__)
#include <crt_externs.h> // _NSGetEnviron: `environ` is not there for a shared library
#else
#include <unistd.h>
extern "C" {
extern char** environ; // (unistd.h declares it only for _GNU_SOURCE and the like)
}
#endif

namespace compile_cache::detail {

std::vector<std::string> environment_names_with_prefix(std::string_view prefix) {
#if defined(__APPLE__)
    char** const env = *_NSGetEnviron();
#else
    char** const env = environ;
#endif
    std::vector<std::string> names;
    for (char** e = env; e != nullptr && *e != nullptr; ++e) {
        char const* const eq = std::strchr(*e, '=');
        std::string_view const name(*e, eq ? static_cast<std::size_t>(eq - *e) : std::strlen(*e));
        if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) names.emplace_back(name);
    }
    return names;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string getenv_string(std::string const& name) {
    char const* v = std::getenv(name.c_str());
    return v ? std::string(v) : std::string();
}

bool is_off(std::string_view value) {
    std::string v = lower(trim_blanks(value));
    return v.empty() || v == "0" || v == "off" || v == "false" || v == "no";
}

void report_unknown_implementation(char const* variable, char const* value, char const* accepted) noexcept {
    std::fprintf(stderr,
                 "compile_cache: %s=\"%s\" is not understood (auto, or one this CPU runs: %s); using the "
                 "fastest implementation this CPU runs\n",
                 variable, value, accepted);
}

bool is_on(std::string_view value) {
    std::string v = lower(trim_blanks(value));
    return v == "1" || v == "on" || v == "true" || v == "yes";
}

} // namespace compile_cache::detail
#endif
