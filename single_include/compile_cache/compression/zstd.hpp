// compile_cache: zstd_compression, the Compression policy (compression.hpp) that
// compresses payloads with zstd: `basic_cache<sha256, boost_binary, registry,
// directory_storage, zstd_compression>`.
// Optional header: needs libzstd (Debian libzstd-dev), linked by the CMake target
// compile_cache::zstd (or -lzstd). Not included by compile_cache/compile_cache.hpp.
//
// Each thread keeps one compression and one decompression context, made on first use.
// Decompression is one call into a buffer of the size the entry declares: it needs no
// window buffer, so a frame's own claims (its window, its content size) allocate nothing,
// and a frame that would give more or fewer bytes than declared fails.
#pragma once

#include <compile_cache/compile_cache.hpp>

#include <zstd.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace compile_cache {

namespace detail {
/// Zstd contexts, made on first use and freed with the object: this thread's (per_thread),
/// or, once those are gone (at exit), a call's own.
struct zstd_contexts {
    ZSTD_CCtx* compress = nullptr;
    ZSTD_DCtx* decompress = nullptr;
    zstd_contexts() = default;
    zstd_contexts(zstd_contexts const&) = delete;
    zstd_contexts& operator=(zstd_contexts const&) = delete;
    ~zstd_contexts() {
        ZSTD_freeCCtx(compress);
        ZSTD_freeDCtx(decompress);
    }
};

/// This thread's zstd contexts; nullptr once they are gone (per_thread).
inline zstd_contexts* this_thread_zstd() noexcept { return per_thread<zstd_contexts>(); }
} // namespace detail

/// The Compression policy with zstd: one frame per payload, its content size in the
/// frame header, no frame checksum (the envelope's check value covers the frame).
struct zstd_compression {
    static constexpr bool compresses = true;
    /// zstd's own default level.
    static constexpr int default_level = 3;
    /// The highest level PREFIX_COMPRESS takes: 19, zstd's highest before the "ultra"
    /// levels, whose windows make every reader set aside more memory.
    static constexpr int max_level = 19;

    /// Appends one zstd frame of `payload` at `level` to `out`; false when zstd fails
    /// (out may then hold more than before: the caller cuts it back).
    static bool compress(std::string_view payload, int level, std::string& out) noexcept {
        try {
            detail::zstd_contexts own;
            detail::zstd_contexts* contexts = detail::this_thread_zstd();
            ZSTD_CCtx*& c = (contexts ? contexts : &own)->compress;
            if (!c) c = ZSTD_createCCtx();
            if (!c) return false;
            std::size_t const at = out.size();
            std::size_t const bound = ZSTD_compressBound(payload.size());
            out.resize(at + bound);
            if (ZSTD_isError(ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters)) ||
                ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
                ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1)) ||
                ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0)))
                return false;
            std::size_t const n = ZSTD_compress2(c, out.data() + at, bound, payload.data(), payload.size());
            if (ZSTD_isError(n)) return false;
            out.resize(at + n);
            return true;
        } catch (...) {
            return false;
        }
    }

    /// Whether `frame`'s header says `size` bytes of content (not another size, not
    /// unknown, and it is a frame).
    static bool frame_declares(std::string_view frame, std::size_t size) noexcept {
        return ZSTD_getFrameContentSize(frame.data(), frame.size()) == static_cast<unsigned long long>(size);
    }

    /// Decompresses `frame` into out[0, size): true only when it is one whole zstd frame
    /// whose header says `size` and whose blocks give exactly `size` bytes. Never writes
    /// past out + size; a damaged frame or a decompression bomb is false.
    static bool decompress(std::string_view frame, char* out, std::size_t size) noexcept {
        if (!frame_declares(frame, size)) return false;
        if (ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size())
            return false; // truncated, or more than one frame
        detail::zstd_contexts own;
        detail::zstd_contexts* contexts = detail::this_thread_zstd();
        ZSTD_DCtx*& d = (contexts ? contexts : &own)->decompress;
        if (!d) d = ZSTD_createDCtx();
        if (!d) return false;
        std::size_t const n = ZSTD_decompressDCtx(d, out, size, frame.data(), frame.size());
        return !ZSTD_isError(n) && n == size;
    }
};

static_assert(zstd_compression::max_level == kept_compression_max_level,
              "compile_cache: the levels a cache directory keeps (compile-cache set DIR compress) are zstd's");

} // namespace compile_cache
