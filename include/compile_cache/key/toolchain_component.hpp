// compile_cache: the toolchain component of a cache's keys, described and hashed once per
// host version string rather than once per kernel, with its parts hashed one by one so
// that a miss explanation (explain.hpp) can name the part that changed.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace compile_cache::detail {

/// The toolchain component one cache adds to its keys (basic_cache::make_key_builder).
/// Thread-safe.
template <class Hasher>
class toolchain_component {
public:
    /// Adds the toolchain component of `host_version` and the serializer's `format_id`
    /// to `kb`; fails `kb` when it cannot be described.
    void add_to(key_builder<Hasher>& kb, std::string const& host_version, std::string const& format_id) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!digest_ || host_ != host_version) {
            toolchain const t = toolchain::current(host_version, format_id);
            key_builder<Hasher> once;
            once.add("toolchain", t);
            key_result r = once.finish();
            if (!r.ok() || r.components().empty()) {
                kb.fail(r.bypass_reason());
                return;
            }
            key_builder<Hasher> parts;
            parts.add("toolchain: library format", t.library_format)
                .add("toolchain: compiler", t.compiler)
                .add("toolchain: Boost", t.boost_version)
                .add("toolchain: archive format", t.serializer_format)
                .add("toolchain: platform", t.platform + ", " + std::to_string(t.pointer_size * 8) +
                                                (t.little_endian ? "-bit little-endian" : "-bit big-endian"))
                .add("toolchain: host version", t.host_version)
                .add("toolchain: host build-id", t.host_build_id);
            parts_ = parts.finish().components();
            digest_ = r.components().front();
            host_ = host_version;
        }
        kb.add_component(*digest_);
    }

    /// `components` as an identity record keeps them: the toolchain component add_to
    /// added replaced by its parts, so that a miss names the part, and every digest cut
    /// to `digest_size` bytes (enough to tell a change).
    std::vector<component_digest> with_parts(std::vector<component_digest> const& components,
                                             std::size_t digest_size) {
        std::vector<component_digest> out;
        out.reserve(components.size() + 8);
        auto const add = [&out, digest_size](component_digest const& c) {
            out.push_back({c.name, key(c.digest.data(), std::min(c.digest.size(), digest_size))});
        };
        std::lock_guard<std::mutex> lock(mutex_);
        for (component_digest const& c : components) {
            if (c.name == "toolchain" && digest_ && c == *digest_ && !parts_.empty())
                for (component_digest const& part : parts_) add(part);
            else
                add(c);
        }
        return out;
    }

private:
    std::mutex mutex_;
    std::string host_;                      ///< the host version string digest_ is for
    std::optional<component_digest> digest_; ///< the component, as a key has it
    std::vector<component_digest> parts_;   ///< digest_'s parts, one by one
};

} // namespace compile_cache::detail
