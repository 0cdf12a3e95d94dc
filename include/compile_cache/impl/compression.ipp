// compile_cache: the definitions of compression.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

compression_level_value parse_compression_level(std::string_view value, int max_level) {
    std::string const trimmed(trim_blanks(value));
    if (is_off(trimmed)) return {true, 0};
    if (is_on(trimmed)) return {true, std::nullopt};
    std::optional<std::uint64_t> const n = parse_whole_number(trimmed, 3);
    if (n && *n >= 2 && *n <= static_cast<std::uint64_t>(max_level)) return {true, static_cast<int>(*n)};
    return {};
}

std::string compression_values_text(int max_level) {
    return "0 to store entries uncompressed, 1 to compress them at the default level, or a level from 2 to " +
           std::to_string(max_level);
}

void compression_level_from_env(settings_reader const& env, int max_level, std::optional<int>& level) {
    std::string const v = env.value("_COMPRESS");
    if (v.empty()) return;
    compression_level_value const read = parse_compression_level(v, max_level);
    if (read.understood) {
        level = read.level;
        return;
    }
    env.report_value("_COMPRESS", v,
                     "is not understood (" + compression_values_text(max_level) + "); " +
                         (level && *level == 0 ? std::string("entries stay uncompressed")
                                               : std::string("compression stays as it was")));
}

std::string compression_unavailable_line(settings_reader const& env) {
    std::string const v = env.value("_COMPRESS");
    if (v.empty() || is_off(std::string(trim_blanks(v)))) return {};
    return env.name("_COMPRESS") + "=\"" + v +
           "\" asks for compressed entries, but this host's cache has no Compression policy "
           "(compile_cache/compression/zstd.hpp); entries are stored uncompressed";
}

void compression_level_from_kept(settings_reader const& env, kept_cache_setting const& kept, int max_level,
                                 std::optional<int>& level) {
    compression_level_value const read = parse_compression_level(kept.value, max_level);
    if (read.understood && !trim_blanks(kept.value).empty()) { // (an empty value is not "off" here)
        level = read.level;
        return;
    }
    env.report(kept.where + ": " + kept.name + " = \"" + kept.value + "\" is not understood (" +
               compression_values_text(max_level) + "); using the default");
}

std::string compression_unavailable_line(kept_cache_setting const& kept) {
    std::string const trimmed(trim_blanks(kept.value));
    if (trimmed.empty() || is_off(trimmed)) return {};
    return kept.where + ": " + kept.name + " = \"" + kept.value +
           "\" asks for compressed entries, but this host's cache has no Compression policy "
           "(compile_cache/compression/zstd.hpp); entries are stored uncompressed";
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_INCLUDE_IMPL
