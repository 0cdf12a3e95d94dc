// compile_cache: the definitions of cache/compression.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

namespace compile_cache::detail {

std::string compressed_miss_detail(envelope_fields const& env) {
    if (env.status == envelope_status::unsupported)
        return "compressed with zstd, and this cache has no Compression policy (compile_cache/compression/zstd.hpp)";
    if (env.status == envelope_status::corrupt)
        return "its compressed payload does not decompress to the " + std::to_string(env.uncompressed_size) +
               " bytes it declares";
    return "compressed; it declares " + std::to_string(env.uncompressed_size) + " bytes once decompressed";
}

} // namespace compile_cache::detail

#endif
