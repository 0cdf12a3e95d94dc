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
// and may have:
//   static bool frame_declares(std::string_view frame, std::size_t size) noexcept;
//       whether the frame's own header says `size` bytes of content (false when it says
//       another size or none): asked before the cache makes room for `size` bytes, so
//       that an entry declaring a size its frame does not costs no allocation

/// The highest level a cache directory keeps for its hosts (`compile-cache set DIR
/// compress N`, storage/directory/directory_settings_file.hpp): zstd_compression's
/// max_level, the highest a shipped policy takes. A host whose policy stops lower says
/// so in one line and uses its default.
inline constexpr int kept_compression_max_level = 19;

namespace detail {
template <class C>
struct compresses : std::bool_constant<C::compresses> {};

/// A value of PREFIX_COMPRESS (or of a kept `compress`), read: `0`, `off`, `false`,
/// `no` (or blanks): level 0; `1`, `on`, `true`, `yes`: nullopt (the policy's default
/// level); a whole number from 2 to `max_level`: that level. Anything else: not understood.
struct compression_level_value {
    bool understood = false;
    std::optional<int> level;
};
COMPILE_CACHE_DECL compression_level_value parse_compression_level(std::string_view value, int max_level);

/// The values parse_compression_level understands, as a phrase for the lines that say a
/// value is not one: "0 to store entries uncompressed, ..., or a level from 2 to 19".
COMPILE_CACHE_DECL std::string compression_values_text(int max_level);

/// Reads `PREFIX_COMPRESS` into `level`: `0`, `off`, `false`, `no`: 0 (entries written
/// plain); `1`, `on`, `true`, `yes`: nullopt (the policy's default level); a whole
/// number from 2 to `max_level`: that level. Unset or empty: `level` as it is.
/// Anything else is one line through `env`, and `level` stays.
COMPILE_CACHE_DECL void compression_level_from_env(settings_reader const& env, int max_level,
                                                   std::optional<int>& level);

/// For a cache without compression: the line to say when `PREFIX_COMPRESS` asks for it
/// (the entries are then stored plain); empty when it does not.
COMPILE_CACHE_DECL std::string compression_unavailable_line(settings_reader const& env);

/// A `compress` a storage found kept (`kept.suffix` is `_COMPRESS`), for a cache whose
/// environment leaves `PREFIX_COMPRESS` unset or empty: read into `level` as
/// compression_level_from_env reads the variable; anything else is one line through
/// `env` naming where it is kept, and `level` stays (the default).
COMPILE_CACHE_DECL void compression_level_from_kept(settings_reader const& env, kept_cache_setting const& kept,
                                                    int max_level, std::optional<int>& level);

/// For a cache without compression: the line to say when a kept `compress` asks for it,
/// in the words of the line for `PREFIX_COMPRESS`; empty when it does not.
COMPILE_CACHE_DECL std::string compression_unavailable_line(kept_cache_setting const& kept);
} // namespace detail

} // namespace compile_cache

#include <compile_cache/impl/compression.ipp>
