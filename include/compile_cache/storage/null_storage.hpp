// compile_cache: a Storage that keeps nothing. Every read misses and every write is
// accepted and dropped, so a cache over it costs a lookup and changes nothing.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/concept.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

namespace compile_cache {

/// The Storage that stores nothing.
///
/// - `read` always reports `read_status::absent` and leaves `out` empty;
/// - `write` always succeeds and discards the bytes;
/// - `remove` always succeeds.
class null_storage {
public:
    read_result read(key const&, std::string& out, std::size_t) noexcept {
        out.clear();
        return {read_status::absent, {}};
    }

    /// Keeps nothing; refuses the empty key (invalid_argument), as every storage does.
    std::error_code write(key const& k, std::string_view) noexcept {
        return k.empty() ? std::make_error_code(std::errc::invalid_argument) : std::error_code();
    }

    std::error_code remove(key const&) noexcept { return {}; }
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::null_storage>::value);
