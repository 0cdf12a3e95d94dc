// compile_cache: why a kernel missed. An `absent` miss reads the record of the kernel's
// identity (identity_record.hpp: the keys stored for it, newest first, with their named
// components) and compares the component lists: which components changed, appeared or
// disappeared since the kernel was stored under the recorded key nearest to the one missed.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/identity_record.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/printable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace compile_cache {

/// Why a get_or_compile missed, component by component (for an `absent` miss only).
struct miss_explanation {
    enum class kind {
        none,        ///< no explanation: not an absent miss, or nothing could be read
        new_kernel,  ///< no entry was ever recorded for this kernel's identity
        evicted,     ///< an entry under this very key was recorded: it was evicted or removed
        changed,     ///< the kernel was stored before under another key: see the lists
    };
    kind what = kind::none;
    std::vector<std::string> changed;     ///< components with another digest
    std::vector<std::string> appeared;    ///< components the previous key did not have
    std::vector<std::string> disappeared; ///< components of the previous key that are gone
    std::vector<std::string> unchanged;   ///< the others (an unchanged toolchain as one name)
    /// For kind::new_kernel, what no earlier entry was found for: the host's identity
    /// string when it gave one, else the kernel's name and origin file (empty when the
    /// explanation was made without them).
    std::string identity, name, origin_file;

    explicit operator bool() const noexcept { return what != kind::none; }

    /// For a log line: `changed callee:helper, ir; unchanged toolchain, options`,
    /// `new (no earlier entry named main from prog.dsl)`, `evicted or removed`; empty
    /// for kind::none. Every name in it is printable() (a record may have been forged).
    COMPILE_CACHE_DECL std::string text() const;

    /// Short, for a host's one-line report: `callee:helper, ir changed`, `new`, `evicted`.
    /// Names printable(), as in text().
    COMPILE_CACHE_DECL std::string brief() const;

    /// The names, printable(), separated by `, `.
    COMPILE_CACHE_DECL static std::string join(std::vector<std::string> const& names);

private:
    COMPILE_CACHE_DECL static void append_list(std::string& s, char const* label,
                                               std::vector<std::string> const& names);
};

/// The component lists of two keys of one kernel compared: which names of `now`
/// changed or appeared since `before`, and which of `before` disappeared. Both lists'
/// names are first made distinct as key_builder makes them (distinct_component_names:
/// the n-th `callee` is `callee#n`), so the n-th component of a name is matched with
/// the n-th of that name, records written before names were made distinct compare
/// alike, and no name is ever listed twice, nor both changed and unchanged. Linear in
/// the components. Toolchain parts (names starting `toolchain: `) that are all
/// unchanged are named `toolchain` once.
COMPILE_CACHE_DECL miss_explanation compare_components(std::vector<component_digest> const& before,
                                                       std::vector<component_digest> const& now);

/// The explanation of an `absent` miss of the key `now_key` (components `now`), from
/// the record of the kernel's identity (null when there is none): `now_key` in its
/// history is `evicted`; else `now` compared with the recorded entry it is nearest to
/// (the fewest components changed, appeared or disappeared, the toolchain's parts counting
/// as one; the newest among equals). `identity`, `name`
/// and `origin_file` (as in entry_info) say what a new kernel had no earlier entry for.
COMPILE_CACHE_DECL miss_explanation explain_absent(identity_record const* record, key const& now_key,
                                                   std::vector<component_digest> const& now,
                                                   std::string_view identity = {}, std::string_view name = {},
                                                   std::string_view origin_file = {});

namespace detail {
/// The line the cache logs for an `absent` miss of the kernel `name` explained by `m`:
/// what changed, or that it was evicted; that it is new only for the first new kernel
/// (`new_kernel_logged` is set then: a new kernel is the normal case of a cold run);
/// empty when there is nothing to log.
COMPILE_CACHE_DECL std::string absent_miss_line(std::string_view name, miss_explanation const& m,
                                                std::atomic<bool>& new_kernel_logged);

/// The line the cache logs, once, for an identity record over a bound.
COMPILE_CACHE_DECL std::string record_ignored_line(std::string_view name);
} // namespace detail

} // namespace compile_cache

#include <compile_cache/impl/explain.ipp>
