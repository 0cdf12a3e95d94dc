// compile_cache: how basic_cache compresses the payloads it stores and decompresses the
// ones it loads, through its Compression policy (compression.hpp); used by cache.hpp only.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/compression.hpp>
#include <compile_cache/detail/detection.hpp>
#include <compile_cache/envelope.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace compile_cache::detail {

/// Whether a store compresses: the policy can, and `level` (cache_options::
/// compression_level) does not turn it off.
template <class Compression>
bool compression_on(std::optional<int> level) noexcept {
    if constexpr (compresses<Compression>::value)
        return level.value_or(Compression::default_level) != 0;
    else
        return (void)level, false;
}

/// Appends `payload` to the entry: compressed (at `level`, or the policy's default) when
/// it is at least `threshold` bytes and comes out smaller, as it is otherwise.
template <class Compression>
void append_payload(envelope_writer& envelope, std::string const& payload, std::optional<int> level,
                    std::size_t threshold) {
    if constexpr (compresses<Compression>::value) {
        if (payload.size() >= threshold) {
            std::string& out = envelope.out();
            std::size_t const plain_at = out.size();
            envelope.begin_compressed_payload(payload.size());
            if (Compression::compress(payload, level.value_or(Compression::default_level), out) &&
                out.size() - plain_at < payload.size())
                return;
            envelope.drop_compressed_payload(plain_at);
        }
    } else {
        (void)level, (void)threshold;
    }
    envelope.out() += payload;
}

template <class C>
using frame_declares_t = decltype(C::frame_declares(std::string_view(), std::size_t{}));
/// Whether the policy has the optional frame_declares (compression.hpp).
template <class C>
using has_frame_declares = is_detected_convertible<bool, frame_declares_t, C>;

/// A compressed payload, decompressed into `out` (which grows with the hits, so that hits
/// of one size allocate nothing, and is given back when over 1 MiB after a frame that
/// fails), bounded by the size the entry declares, itself bounded
/// by max_entry_size (check_envelope: too_large above it). A frame that does not give
/// exactly that many bytes (damaged, or a bomb) is corrupt; a cache that cannot
/// decompress reads the entry as unsupported.
template <class Compression>
void decompress_payload(envelope_fields& env, std::string& out) {
    std::string_view const frame = env.payload;
    env.payload = {};
    if constexpr (compresses<Compression>::value) {
        auto const size = static_cast<std::size_t>(env.uncompressed_size);
        if constexpr (has_frame_declares<Compression>::value) {
            if (!Compression::frame_declares(frame, size)) { // before any room is made for `size`
                env.status = envelope_status::corrupt;
                return;
            }
        }
        if (out.size() < size) out.resize(size);
        if (Compression::decompress(frame, out.data(), size)) {
            env.payload = std::string_view(out.data(), size);
            return;
        }
        env.status = envelope_status::corrupt;
        if (out.capacity() > (std::size_t{1} << 20)) std::string().swap(out); // not kept for a corrupt entry
    } else {
        (void)frame, (void)out;
        env.status = envelope_status::unsupported;
    }
}

/// What the log says of a compressed entry that missed.
COMPILE_CACHE_DECL std::string compressed_miss_detail(envelope_fields const& env);

} // namespace compile_cache::detail

#include <compile_cache/cache/impl/compression.ipp>
