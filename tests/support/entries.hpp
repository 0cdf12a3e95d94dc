// What a cache left on disk, seen from outside: how many entries a directory holds.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <system_error>

namespace compile_cache_test {

/// The cache entries under `dir`: files named by a key's hex (a storage may keep
/// other files of its own beside them).
inline std::size_t entries_under(std::filesystem::path const& dir) {
    std::size_t n = 0;
    std::error_code ec;
    for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string const name = it->path().filename().string();
        // A kernel identity's record (explain.hpp: 33 bytes, ending 1d) is no kernel, nor is
        // a pack of records (ending 1e) or its marker (a symlink in .cc-records).
        bool const identity_record =
            name.size() == 66 && (name.compare(64, 2, "1d") == 0 || name.compare(64, 2, "1e") == 0);
        if (!it->is_symlink() && it->is_regular_file() && name.size() >= 2 && !identity_record &&
            name.find_first_not_of("0123456789abcdef") == std::string::npos)
            ++n;
    }
    return n;
}

} // namespace compile_cache_test
