// compile_cache: the toolchain component of a cache's keys, described and hashed once per
// host version string rather than once per kernel, with its parts hashed one by one so
// that a miss explanation (explain.hpp) can name the part that changed.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/build_id.hpp>
#include <compile_cache/detail/made_once.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/detail/executable_digest.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace compile_cache::detail {

/// Where calling_module_identity keeps what it made, in the module's own memory: written
/// once, never allocated, so that an unloaded library leaves nothing allocated behind.
/// Constant-initialised and trivially destructible (no guard, usable at exit).
struct calling_module_name {
    std::atomic<int> state{0}; ///< 0: not made; 1: being written; 2: written
    std::size_t size = 0;
    char text[256] = {};
};

/// What identifies the module (a shared library) whose code calls it, when that is not the
/// main program: its module_code_identity (build-id, or its file's content); empty for the main
/// program, and where modules cannot be listed. Made once per module: the function and its
/// name are module-local, so each library has its own, never another's. Throws only what
/// allocation throws.
template <class = void>
COMPILE_CACHE_MODULE_LOCAL std::string calling_module_identity() {
    static calling_module_name name;
    if (name.state.load(std::memory_order_acquire) == 2) return std::string(name.text, name.size);
    void const* const here = code_address(&calling_module_identity<>);
    loaded_module const m = module_containing(here);
    std::string id = m.found && !m.main_program ? module_code_identity(here, &sha256_content_digests) : std::string();
    int none = 0; // (another thread writing it meanwhile: this call's own is as good)
    if (id.size() <= sizeof name.text && name.state.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) {
        std::memcpy(name.text, id.data(), id.size());
        name.size = id.size();
        name.state.store(2, std::memory_order_release);
    }
    return id;
}

/// The toolchain component one cache adds to its keys (basic_cache::make_key_builder).
/// Thread-safe, and without a lock: each host version's description is kept, once made,
/// in a list that only grows (one entry per host version string the cache was given),
/// so that no thread waits for another's description, and a child forked while another
/// thread described the toolchain does not wait for a thread it does not have.
template <class Hasher>
class toolchain_component {
public:
    toolchain_component() = default;
    toolchain_component(toolchain_component const&) = delete;
    toolchain_component& operator=(toolchain_component const&) = delete;
    ~toolchain_component() {
        for (described const* d = newest_.load(std::memory_order_acquire); d != nullptr;) {
            described const* const next = d->next;
            delete d;
            d = next;
        }
    }

    /// Adds the toolchain component of `host_version` and the serializer's `format_id`
    /// to `kb`; fails `kb` when it cannot be described. `module` identifies the shared
    /// library that calls (calling_module_identity: empty for the main program); when
    /// there is one, it is the compiler as much as the main program is, and the host
    /// build-id names both.
    void add_to(key_builder<Hasher>& kb, std::string const& host_version, std::string const& format_id,
                std::string const& module = {}) {
        described const* d = find(host_version, module);
        if (d == nullptr) {
            toolchain t = toolchain::current(host_version, format_id);
            if (!module.empty()) t.host_build_id += " " + module;
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
            auto made = std::make_unique<described>(
                described{host_version, module, r.components().front(), parts.finish().components(), nullptr});
            d = keep(made); // (null: too many kept; this one is used once, and freed)
            kb.add_component((d != nullptr ? d : made.get())->digest);
            return;
        }
        kb.add_component(d->digest);
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
        for (component_digest const& c : components) {
            described const* d = nullptr;
            if (c.name == "toolchain")
                for (d = newest_.load(std::memory_order_acquire); d != nullptr && !(d->digest == c); d = d->next) {
                }
            if (d != nullptr && !d->parts.empty())
                for (component_digest const& part : d->parts) add(part);
            else
                add(c);
        }
        return out;
    }

private:
    struct described {
        std::string host;                  ///< the host version string it is for
        std::string module;                ///< and the calling module (add_to)
        component_digest digest;           ///< the component, as a key has it
        std::vector<component_digest> parts; ///< digest's parts, one by one
        described const* next;             ///< the one kept before it
    };

    // The description kept for `host` and `module`; null when none is.
    described const* find(std::string const& host, std::string const& module) const noexcept {
        for (described const* d = newest_.load(std::memory_order_acquire); d != nullptr; d = d->next)
            if (d->host == host && d->module == module) return d;
        return nullptr;
    }

    // Keeps `made` (taking it), unless another thread kept one for its host meanwhile:
    // that one then; null (`made` left to the caller) when max_kept are kept.
    described const* keep(std::unique_ptr<described>& made) noexcept {
        described const* head = newest_.load(std::memory_order_acquire);
        for (;;) {
            std::size_t kept = 0;
            for (described const* d = head; d != nullptr; d = d->next, ++kept)
                if (d->host == made->host && d->module == made->module) return d;
            if (kept >= max_kept) return nullptr;
            made->next = head;
            if (newest_.compare_exchange_weak(head, made.get(), std::memory_order_acq_rel,
                                              std::memory_order_acquire))
                return made.release();
        }
    }

    /// At most this many host versions (and calling modules) are kept (a host that gives ever new ones has
    /// the others described at each use).
    static constexpr std::size_t max_kept = 16;

    std::atomic<described const*> newest_{nullptr}; ///< the list, newest first; freed by the destructor
};

} // namespace compile_cache::detail
