// compile_cache: the definitions of compression.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

void compression_level_from_env(settings_reader const& env, int max_level, std::optional<int>& level) {
    std::string const v = env.value("_COMPRESS");
    if (v.empty()) return;
    std::string const trimmed(trim_blanks(v));
    if (is_off(trimmed)) {
        level = 0;
        return;
    }
    if (is_on(trimmed)) {
        level = std::nullopt;
        return;
    }
    std::optional<std::uint64_t> const n = parse_whole_number(trimmed, 3);
    if (n && *n >= 2 && *n <= static_cast<std::uint64_t>(max_level)) {
        level = static_cast<int>(*n);
        return;
    }
    env.report_value("_COMPRESS", v,
                     "is not understood (0 to store entries uncompressed, 1 to compress them at the default level, "
                     "or a level from 2 to " +
                         std::to_string(max_level) + "); " +
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

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_INCLUDE_IMPL
