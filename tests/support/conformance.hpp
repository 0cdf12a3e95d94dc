// What the conformance kit (compile_cache/testing/) reports, as a test prints it.
#pragma once

#include <string>
#include <vector>

namespace compile_cache_test {

/// The kit's failures, one a line, for a Catch2 INFO.
inline std::string failure_lines(std::vector<std::string> const& failures) {
    std::string s;
    for (auto const& f : failures) s += f + '\n';
    return s;
}

} // namespace compile_cache_test
