// compile_cache: key_builder turns named components into a key, and keeps each
// component's own digest so that a miss can be explained component by component.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/hasher/concept.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/detail/digest.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/key/writer.hpp>
#include <compile_cache/version.hpp>

#include <exception>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache {

/// Makes the names of `components` distinct, in place, for explanations: the first
/// component of a name keeps it, the n-th (n >= 2) becomes `NAME#n`, or the next
/// `NAME#k` that no component has (a host may have named one `callee#2` itself). A host
/// that adds one `callee` per callee thus reads `changed callee#2`, never `changed
/// callee, callee; unchanged callee`. Linear in the components; a list whose names are
/// distinct is left as it is.
COMPILE_CACHE_DECL void distinct_component_names(std::vector<component_digest>& components);

/// What key_builder::finish() gives: a key, or a bypass with the reason the host
/// (or the builder) gave for why this kernel cannot be keyed.
class key_result {
public:
    key_result() = default;

    COMPILE_CACHE_DECL static key_result keyed(key k, std::vector<component_digest> components);

    COMPILE_CACHE_DECL static key_result bypass(std::string reason, std::vector<component_digest> components = {});

    /// True when there is a key; false for a bypass.
    bool ok() const noexcept { return key_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }

    /// The key; an empty key for a bypass, which registry::bind refuses (check ok()
    /// first, or let get_or_compile bind the kernel: bind_self).
    key const& value() const noexcept {
        static key const none{};
        return key_ ? *key_ : none;
    }

    /// Why this kernel bypasses the cache; empty when ok().
    std::string const& bypass_reason() const noexcept { return reason_; }

    /// Each named component's digest, in the order they were added; a name added more
    /// than once is made distinct (`callee`, `callee#2`, ...: distinct_component_names).
    std::vector<component_digest> const& components() const noexcept { return components_; }

    /// The names of the components that differ between two results (present in one
    /// only, or with another digest): why a kernel that used to hit now misses.
    /// Components are matched by name (the n-th one of a name with the n-th one of
    /// that name in `other`), so one added or removed component does not make every
    /// later one look changed. When the same components only come in another order,
    /// those whose position changed are named.
    COMPILE_CACHE_DECL std::vector<std::string> differing_components(key_result const& other) const;

private:
    std::optional<key> key_;
    std::string reason_;
    std::vector<component_digest> components_;
};

/// Builds a key from named components:
/// \code
/// compile_cache::key_builder<> kb;
/// kb.add("ir", canonical_text).add("callee", callee_key).add("options", opts);
/// compile_cache::key_result k = kb.finish();
/// \endcode
/// Each component is written as a canonical message (see key_writer) and hashed on
/// its own; the key is the digest of the names and digests in order (the names as
/// added: the key_result's components() make repeated names distinct, the key does
/// not see that, so no key changed when they began to be). A value that
/// cannot be described at run time is reported with fail(): the result is then a
/// bypass, never a key.
template <class Hasher = sha256>
class key_builder {
    static_assert(check_hasher<Hasher>::value, "");

public:
    using hasher_type = Hasher;

    /// Adds a named component. Any exception while describing the value turns the
    /// whole key into a bypass that names the component.
    template <class T>
    key_builder& add(std::string_view name, T const& value) {
        if (failure_) return *this;
        if constexpr (std::is_same_v<T, key_result>) {
            // A callee's key: a callee that bypassed has no key, so neither has its caller.
            if (!value.ok()) return fail("component '" + std::string(name) + "' has no key: " + value.bypass_reason());
            return add(name, value.value());
        } else if constexpr (std::is_same_v<T, std::vector<key_result>>) {
            std::vector<key> keys;
            keys.reserve(value.size());
            for (key_result const& r : value) {
                if (!r.ok()) return fail("component '" + std::string(name) + "' has no key: " + r.bypass_reason());
                keys.push_back(r.value());
            }
            return add(name, keys);
        } else {
            try {
                scratch_.clear();
                key_writer w(scratch_);
                w(value);
                Hasher h;
                detail::hasher_update(h, scratch_.data(), scratch_.size());
                components_.push_back(component_digest{std::string(name), detail::hasher_key(h)});
            } catch (std::exception const& e) {
                fail("component '" + std::string(name) + "' could not be described: " + e.what());
            } catch (...) {
                fail("component '" + std::string(name) + "' could not be described");
            }
            return *this;
        }
    }

    /// Adds a component whose digest was computed before, by a builder with the same
    /// Hasher (basic_cache::make_key_builder adds the toolchain this way).
    key_builder& add_component(component_digest c) {
        if (!failure_) components_.push_back(std::move(c));
        return *this;
    }

    /// Marks the key unusable: finish() then gives a bypass with this reason. The
    /// first reason given is kept.
    key_builder& fail(std::string reason) {
        if (!failure_) failure_ = reason.empty() ? std::string("unkeyable") : std::move(reason);
        return *this;
    }

    bool failed() const noexcept { return failure_.has_value(); }

    /// The key over every component added so far, or a bypass.
    key_result finish() const {
        if (failure_) return key_result::bypass(*failure_, distinct_names());
        try {
            std::string message;
            key_writer w(message);
            w("compile_cache.key", static_cast<std::uint32_t>(format_version));
            for (auto const& c : components_) w(c.name, c.digest);
            Hasher h;
            detail::hasher_update(h, message.data(), message.size());
            return key_result::keyed(detail::hasher_key(h), distinct_names());
        } catch (std::exception const& e) {
            return key_result::bypass(std::string("key could not be computed: ") + e.what());
        } catch (...) { // a Hasher of the host's own may throw anything: a bypass, never the host's
            return key_result::bypass("key could not be computed");
        }
    }

private:
    // The components as key_result shows them: repeated names made distinct.
    std::vector<component_digest> distinct_names() const {
        std::vector<component_digest> out = components_;
        distinct_component_names(out);
        return out;
    }

    std::string scratch_;
    std::vector<component_digest> components_; ///< the names as added: what the key is computed over
    std::optional<std::string> failure_;
};

} // namespace compile_cache

#include <compile_cache/key/impl/builder.ipp>
