// compile_cache: the Compression policy, basic_cache's optional fifth parameter, which
// says whether a cache can compress the payloads it seals and decompress the ones it
// reads. no_compression (the default) has no codec: its cache writes plain entries and
// reads a compressed one as a miss with reason `unsupported`, never as bytes for its
// deserializer. zstd_compression (compile_cache/compression/zstd.hpp, which needs
// libzstd) compresses. docs/design.md ("Compressed entries") says why a policy.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/settings.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace compile_cache {

/// The Compression policy of a cache that neither compresses nor decompresses.
struct no_compression {
    static constexpr bool compresses = false;
};

// A Compression policy that compresses has, besides `compresses = true`:
//   static constexpr int default_level;   // the level of PREFIX_COMPRESS=1
//   static constexpr int max_level;       // the highest level PREFIX_COMPRESS takes
//   static bool compress(std::string_view payload, int level, std::string& out) noexcept;
//       appends one frame of `payload` to `out`; false when it cannot (out is then
//       left with what it had, or more: the caller cuts it back)
//   static bool decompress(std::string_view frame, char* out, std::size_t size) noexcept;
//       true only when `frame` is one whole frame whose content is exactly `size` bytes,
//       then in out[0, size); never writes past out + size, never allocates more than
//       its bounded working memory (a decompression bomb is false, not a crash)

namespace detail {
template <class C>
struct compresses : std::bool_constant<C::compresses> {};

/// Reads `PREFIX_COMPRESS` into `level`: `0`, `off`, `false`, `no`: 0 (entries written
/// plain); `1`, `on`, `true`, `yes`: nullopt (the policy's default level); a whole
/// number from 2 to `max_level`: that level. Unset or empty: `level` as it is.
/// Anything else is one line through `env`, and `level` stays.
COMPILE_CACHE_DECL void compression_level_from_env(settings_reader const& env, int max_level,
                                                   std::optional<int>& level);

/// For a cache without compression: the line to say when `PREFIX_COMPRESS` asks for it
/// (the entries are then stored plain); empty when it does not.
COMPILE_CACHE_DECL std::string compression_unavailable_line(settings_reader const& env);
} // namespace detail

} // namespace compile_cache

#include <compile_cache/impl/compression.ipp>
