// compile_cache: basic_cache, the front a host talks to. It wraps every entry in an
// envelope (envelope.hpp), counts what it does, and owns the policy for failures: any
// failure is a miss with a counted reason, and nothing the cache does throws into the
// host or changes a result.
#pragma once

#include <compile_cache/detail/config_rtti.hpp>
#include <compile_cache/detail/detection.hpp>
#include <compile_cache/detail/elapsed_time.hpp>

#include <compile_cache/detail/env.hpp>
#include <compile_cache/detail/log.hpp>
#include <compile_cache/detail/made_once.hpp>
#include <compile_cache/detail/per_thread.hpp>
#include <compile_cache/detail/record_identities_setting.hpp>
#include <compile_cache/cache/compression.hpp>
#include <compile_cache/cache/from_env.hpp>
#include <compile_cache/cache/identity_records.hpp>
#include <compile_cache/cache/prefetch.hpp>
#include <compile_cache/cache/signed_entry_checks.hpp>
#include <compile_cache/cache_options.hpp>
#include <compile_cache/compression.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/explain.hpp>
#include <compile_cache/hasher/concept.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/identity_record.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/toolchain_component.hpp>
#include <compile_cache/key/toolchain.hpp>
#include <compile_cache/printable.hpp>
#include <compile_cache/resolver/concept.hpp>
#include <compile_cache/resolver/reference.hpp>
#include <compile_cache/resolver/registry.hpp>
#include <compile_cache/secret_file.hpp>
#include <compile_cache/serializer/boost_archive.hpp>
#include <compile_cache/serializer/concept.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/single_flight.hpp>
#include <compile_cache/statistics.hpp>
#include <compile_cache/storage/concept.hpp>
#include <compile_cache/storage_members.hpp>
#include <compile_cache/verify.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

namespace compile_cache {

/// Where a kernel comes from, as the host sees it now. Stored in the entry; when a
/// loaded kernel's origin_line differs (lines were added above it), its source
/// positions are shifted through `relocate_source(artifact, delta)` if the artifact
/// type provides one (found by argument-dependent lookup).
struct entry_info {
    std::string name;
    std::string origin_file;
    std::int64_t origin_line = 0;
    /// What identifies the kernel across changes, for miss explanations (explain.hpp):
    /// the entries stored for one identity are compared when it misses. Empty: its
    /// name and origin file.
    std::string identity{};
};

/// The miss a load counts for a read that ended with `s`; nullopt for found.
inline std::optional<miss_reason> miss_reason_of(read_status s) noexcept {
    switch (s) {
    case read_status::found: return std::nullopt;
    case read_status::absent: return miss_reason::absent;
    case read_status::too_large: return miss_reason::too_large;
    case read_status::error: return miss_reason::read_error;
    }
    return miss_reason::read_error;
}

/// The miss a load counts for an entry that opened with `s`; nullopt for ok.
inline std::optional<miss_reason> miss_reason_of(envelope_status s) noexcept {
    switch (s) {
    case envelope_status::ok: return std::nullopt;
    case envelope_status::corrupt: return miss_reason::corrupt;
    case envelope_status::foreign_version: return miss_reason::foreign_version;
    case envelope_status::key_mismatch: return miss_reason::key_mismatch;
    case envelope_status::too_large: return miss_reason::too_large;
    case envelope_status::unauthenticated: return miss_reason::unauthenticated;
    case envelope_status::untrusted_signer: return miss_reason::untrusted_signer;
    case envelope_status::unsupported: return miss_reason::unsupported;
    }
    return miss_reason::corrupt;
}

/// How get_or_compile produced its value.
enum class outcome {
    loaded,   ///< from the cache
    compiled, ///< by the host's compile function (a miss, or the cache is disabled)
    bypassed, ///< by the host's compile function, because the key could not be made
};

inline char const* to_string(outcome o) noexcept {
    switch (o) {
    case outcome::loaded: return "loaded";
    case outcome::compiled: return "compiled";
    case outcome::bypassed: return "bypass";
    }
    return "?";
}

template <class Artifact>
struct cached {
    Artifact value;
    compile_cache::outcome outcome = compile_cache::outcome::compiled;
    /// Why it was not loaded: for a bypass, why the kernel could not be keyed; for a
    /// compile, the miss reason (`absent`, `corrupt`, ... see statistics.hpp), or
    /// `disabled` when the cache is off; empty when loaded.
    std::string reason;
    /// For an `absent` miss: what changed since the kernel was last stored (or that
    /// it is new, or was evicted). Empty (kind none) otherwise, and when the cache
    /// records no identities.
    miss_explanation explanation{};
    /// For a hit checked by verify mode and found unsound: true, and `value` is the
    /// fresh compile's (outcome compiled, reason `unsound`).
    bool unsound = false;
};

/// One line for a result: `loaded`, `compiled (absent)`, `compiled (absent: callee:helper
/// changed)` (with a miss explanation: its brief()), `compiled (disabled)`, `bypass: <reason>`.
template <class Artifact>
std::string to_string(cached<Artifact> const& r) {
    switch (r.outcome) {
    case outcome::loaded: return "loaded";
    case outcome::bypassed: return "bypass: " + r.reason;
    case outcome::compiled: break;
    }
    std::string const why = r.explanation.brief();
    if (r.reason.empty()) return "compiled";
    return "compiled (" + r.reason + (why.empty() ? "" : ": " + why) + ")";
}

/// The last argument of get_or_compile, in place of `&kernel`: binds the kernel to the
/// key in the cache's resolver (`resolver().bind(kernel, k.value())`; for a bypass, the
/// kernel is left with no key), then passes it as `self`. The resolver must have a
/// `bind(T const*, key const&)`, as registry does.
template <class T>
struct bind_self {
    T const* kernel;
    explicit bind_self(T const* k) noexcept : kernel(k) {}
};

namespace detail {

/// The name of an artifact type in its entries: typeid's name, which is that of every type of
/// that name in an unnamed namespace, in any translation unit; for such a type, with " @"
/// and where its type_info lies: its module's identity (module_identity) and the offset
/// there, the same in every process that runs that build of the module (unknown where
/// modules cannot be listed: the name alone then). Throws only what allocation throws.
inline std::string artifact_type_name(std::type_info const& type) {
    std::string name = type.name();
    if (name.find("_GLOBAL__N_") == std::string::npos && name.find("`anonymous namespace'") == std::string::npos)
        return name;
    loaded_module const m = module_containing(&type);
    if (!m.found) return name;
    std::uintptr_t const offset = reinterpret_cast<std::uintptr_t>(&type) - m.base;
    return name + " @" + module_code_identity(&type, &sha256_content_digests) + "+" + std::to_string(offset);
}

template <class R, class T>
using bind_t = decltype(std::declval<R&>().bind(std::declval<T const*>(), std::declval<key const&>()));
template <class R, class T>
using has_bind = is_detected<bind_t, R, T>;
} // namespace detail

namespace detail {
void relocate_source() = delete; // poison pill: only the host's overload, found by ADL

template <class A>
using relocate_source_t = decltype(relocate_source(std::declval<A&>(), std::int64_t{}));
template <class A>
using has_relocate_source = is_detected<relocate_source_t, A>;

/// What a load's bytes are held by when its storage has no read_view: the buffer.
struct buffer_view {
    static constexpr bool intact() noexcept { return true; }
};
template <class S, bool = has_read_view<S>::value>
struct entry_view_for {
    using type = buffer_view;
};
template <class S>
struct entry_view_for<S, true> {
    using type = typename S::view_type;
};
/// The storage's view type (read_view), or buffer_view.
template <class S>
using entry_view_of = typename entry_view_for<S>::type;

/// The buffer a load reads an entry into: this thread's reused one, so that a hit
/// allocates none, or, for a load started from inside a deserializer (a nested load) and
/// at exit once this thread's is gone (per_thread), one of its own. One such buffer per Tag: entries read, payloads decompressed,
/// payloads serialized before they are compressed.
template <class Tag>
class reused_buffer {
public:
    reused_buffer() noexcept : shared_(busy() ? nullptr : per_thread<std::string, Tag>()) {
        if (shared_) busy() = true;
    }
    ~reused_buffer() {
        if (shared_) busy() = false;
    }
    reused_buffer(reused_buffer const&) = delete;
    reused_buffer& operator=(reused_buffer const&) = delete;

    std::string& bytes() noexcept { return shared_ ? *shared_ : own_; }

private:
    static bool& busy() noexcept {
        thread_local bool flag = false;
        return flag;
    }

    std::string* shared_; ///< this thread's buffer; nullptr: nested, or at exit once it is gone (per_thread)
    std::string own_;
};
/// The most loads one thread may have under way at once, nested ones included (a load
/// started from inside a deserializer): a deeper one is a counted miss.
inline constexpr int max_nested_loads = 32; // (said in load_under_way's message)

/// The loads under way on this thread, the outermost first: a cache (its state) and the
/// key it loads. nullptr at exit, once the thread's objects are gone (per_thread).
struct loads_of_this_thread_tag;
inline std::vector<std::pair<void const*, key>>* loads_of_this_thread() noexcept {
    return per_thread<std::vector<std::pair<void const*, key>>, loads_of_this_thread_tag>();
}

/// A load's place among this thread's loads, held while it runs. `refused()` when it may
/// not run: the same cache already loads the same key on this thread (a nested load of
/// itself, directly or through a cycle), or max_nested_loads are under way.
class load_under_way {
public:
    load_under_way(void const* cache, key const& k) noexcept {
        if (depth() >= max_nested_loads) {
            refused_ = "a nested load deeper than max_nested_loads (32) loads";
            return;
        }
        if (auto* loads = loads_of_this_thread()) {
            for (auto const& [c, loading] : *loads) {
                if (c == cache && loading == k) {
                    refused_ = "a nested load of the kernel this thread is already loading";
                    return;
                }
            }
            try {
                loads->emplace_back(cache, k);
                listed_ = true;
            } catch (...) { // (out of memory: only the depth bound then stops a cycle)
            }
        }
        ++depth();
        counted_ = true;
    }
    ~load_under_way() {
        if (listed_) {
            if (auto* loads = loads_of_this_thread()) loads->pop_back();
        }
        if (counted_) --depth();
    }
    load_under_way(load_under_way const&) = delete;
    load_under_way& operator=(load_under_way const&) = delete;

    /// Why the load may not run (never empty then), or nullptr when it may.
    char const* refused() const noexcept { return refused_; }

private:
    static int& depth() noexcept {
        thread_local int n = 0;
        return n;
    }
    char const* refused_ = nullptr;
    bool listed_ = false;
    bool counted_ = false;
};

using read_buffer = reused_buffer<struct read_buffer_tag>;
using decompress_buffer = reused_buffer<struct decompress_buffer_tag>;
using serialize_buffer = reused_buffer<struct serialize_buffer_tag>;

} // namespace detail

/// The cache: four policies composed at compile time.
/// \code
/// using kernel_cache = compile_cache::basic_cache<compile_cache::sha256, compile_cache::boost_binary,
///                                                 compile_cache::registry, compile_cache::directory_storage>;
/// auto cache = kernel_cache::from_env("MYDSL_CACHE");   // MYDSL_CACHE_DIR
/// auto k = cache.make_key_builder("mydsl 1.2").add("ir", ir_text).finish();
/// auto r = cache.get_or_compile<artifact>(k, {"main", "prog.dsl", 12}, [&] { return compile(); });
/// \endcode
///
/// Each policy is checked by static_asserts in the class body (check_hasher, ...), not
/// by a requires-clause: a policy that misses a requirement gets the library's one
/// sentence, first and alone, under C++17 and C++20 alike.
///
/// The fifth parameter, optional, is the Compression policy (compression.hpp): with
/// zstd_compression (compile_cache/compression/zstd.hpp) payloads over
/// cache_options::compression_threshold are compressed, and compressed entries read.
template <class Hasher, class Serializer, class Resolver, class Storage, class Compression = no_compression>
class basic_cache {
    static_assert(check_hasher<Hasher>::value, "");
    static_assert(check_serializer_policy<Serializer>::value, "");
    static_assert(check_resolver<Resolver>::value, "");
    static_assert(check_storage<Storage>::value, "");

public:
    using hasher_type = Hasher;
    using serializer_type = Serializer;
    using resolver_type = Resolver;
    using storage_type = Storage;
    using compression_type = Compression;

    /// A disabled cache: loads nothing, stores nothing, touches no file.
    basic_cache() : state_(std::make_unique<state>()) {}

    /// An enabled cache over `storage`; with `options.secret`, authenticated entries.
    /// Disabled, said through the logger, when the Storage reports it cannot be used, or
    /// when `options.signatures` are set over a Storage that is not a tier, with or without
    /// a secret (nothing would check them: cache/signed_entry_checks.hpp).
    explicit basic_cache(Storage storage, cache_options options = {})
        : state_(std::make_unique<state>()), storage_(std::move(storage)), options_(std::move(options)),
          auth_(options_.secret), remote_auth_(envelope_auth::signed_by(options_.signatures)),
          enabled_(detail::usable_or_said(static_cast<Storage const&>(storage_), options_.logger) &&
                   detail::signatures_honoured_or_said<Storage>(options_.signatures != nullptr, !options_.secret.empty(),
                                                                 options_.logger)) {
        // A Storage that has something to say (has_set_logger) says it through the cache's
        // logger; with signatures, one that uploads to a remote gets the function that signs
        // what it uploads (cache/signed_entry_checks.hpp).
        if (!enabled_) return;
        detail::pass_logger_to_storage(storage_, options_.logger);
        detail::pass_sealer_to_storage(storage_, auth_, remote_auth_);
    }

    /// A cache moved from is a disabled one, as basic_cache() makes: it loads nothing,
    /// stores nothing, and its statistics are zeros.
    basic_cache(basic_cache&& other) noexcept
        : state_(std::move(other.state_)), storage_(std::move(other.storage_)), options_(std::move(other.options_)),
          auth_(std::move(other.auth_)), remote_auth_(std::move(other.remote_auth_)), enabled_(other.enabled_) {
        other.disable_moved_from();
    }
    basic_cache& operator=(basic_cache&& other) noexcept {
        if (this != &other) {
            flush_statistics(); // this cache's counts, before they are replaced
            state_ = std::move(other.state_);
            storage_ = std::move(other.storage_);
            options_ = std::move(other.options_);
            auth_ = std::move(other.auth_);
            remote_auth_ = std::move(other.remote_auth_);
            enabled_ = other.enabled_;
            other.disable_moved_from();
        }
        return *this;
    }
    ~basic_cache() { flush_statistics(); }

    /// Adds what this cache counted since the last flush to the cumulative counters
    /// its Storage keeps, when it keeps any (an optional Storage member,
    /// `std::error_code record_counters(std::vector<std::pair<std::string,
    /// std::uint64_t>> const&)`: directory_storage keeps them in the directory, for
    /// `compile-cache stats`). Done by the destructor; call it in a long-running host
    /// to make the counts visible sooner. Never on a hit or a store: the hot paths pay
    /// nothing for it. Best effort: a failure is ignored (the counts are for display).
    /// Also writes the identity records the cache holds (cache/identity_records.hpp).
    void flush_statistics() noexcept {
        if (!enabled_ || !state_) return;
        records().write_held(); // the identity records held (cache/identity_records.hpp), first
        state_->flushed.flush(storage_, [this](bool made_here) {
            // (A forked child's storage counters hold its parent's: not recorded there.)
            statistics_snapshot s;
            if (!state_->stats.counted_here(s)) return std::vector<std::pair<std::string, std::uint64_t>>();
            if (made_here) s.storage_counters = detail::storage_counters_of(storage_);
            return s.counters();
        });
    }

    /// The cache the environment asks for, in one pass: the cache reads its own settings
    /// first: `PREFIX_LOG` on (`1`, `on`, `true`, `yes`) sends one-line diagnostics to
    /// stderr; `PREFIX_SECRET_FILE` names a file whose whole content (bytes, a trailing
    /// newline included) is the secret that authenticates entries
    /// (cache_options::secret); `PREFIX_VERIFY`, `PREFIX_MIN_COMPILE_TIME`. Then it hands
    /// the Storage what it needs as plain values (storage_settings: authenticated, remote
    /// trusted, the logger, and why the cache cannot run, if it cannot) and the Storage
    /// answers with itself, or off with a reason (one line, said here), or not configured
    /// (no cache, nothing said): `static from_env_result<Storage> from_env(storage_settings const&)`
    /// (docs/policies.md); directory_storage reads `PREFIX_DIR`, `PREFIX_MAX_SIZE`,
    /// `PREFIX_DURABILITY` and `PREFIX_SHARED`. A Storage without from_env is constructed
    /// from `PREFIX_DIR` (a std::string); unset, empty, `0`, `off`, `false` or `no` (any
    /// case) disable the cache. One with the deprecated `static std::optional<Storage>
    /// from_env(settings_reader&)` still works, and this function says so at compile time.
    /// The cache's own lines are said only when the Storage is configured (first, before
    /// the Storage's): a cache nobody asked for prints nothing. A secret file that is
    /// missing, unreadable, empty or over 64 KiB disables the cache: the host asked for
    /// authenticated entries and cannot have them; the Storage, told so, makes nothing.
    /// Every value that does not parse is one diagnostic (through the logger, or on
    /// stderr when there is none); then the default, or no cache.
    /// docs/configuration.md has them all.
    template <class S = Storage, std::enable_if_t<!detail::uses_deprecated_from_env<S>::value, int> = 0>
    static basic_cache from_env(std::string_view prefix) {
        return from_settings(prefix);
    }
    /// The same, for a Storage (or a tier of it) with only the deprecated form.
    template <class S = Storage, std::enable_if_t<detail::uses_deprecated_from_env<S>::value, int> = 0>
    COMPILE_CACHE_DEPRECATED_FROM_ENV static basic_cache from_env(std::string_view prefix) {
        return from_settings(prefix);
    }

private:
    static basic_cache from_settings(std::string_view prefix) {
        static_assert(std::is_default_constructible_v<Storage>,
                      "compile_cache: basic_cache needs a default-constructible Storage (a disabled cache holds one)");
        if constexpr (!detail::has_any_from_env<Storage>::value)
            static_assert(std::is_constructible_v<Storage, std::string>,
                          "compile_cache: from_env needs a Storage with `static from_env_result<Storage> "
                          "from_env(compile_cache::storage_settings const&)` or one constructible from a path "
                          "(std::string); or construct the cache with your storage object instead");
        std::optional<std::pair<Storage, cache_options>> configured =
            detail::storage_and_options_from_env<Storage, Compression>(prefix);
        if (!configured) return basic_cache();
        try {
            return basic_cache(std::move(configured->first), std::move(configured->second));
        } catch (...) { // (memory ran out: a disabled cache, whose state is the one allocation left)
            return basic_cache();
        }
    }

public:
    bool enabled() const noexcept { return enabled_; }
    /// Whether entries are authenticated (HMAC-SHA256 under cache_options::secret).
    bool authenticated() const noexcept { return enabled_ && auth_.keyed(); }
    Resolver& resolver() noexcept { return state_->resolver; }
    Storage& storage() noexcept { return storage_; }
    cache_options const& options() const noexcept { return options_; }

    /// Sets the function that receives one-line diagnostics (replacing PREFIX_LOG's).
    void set_logger(std::function<void(std::string_view)> logger) {
        options_.logger = std::move(logger);
        if (enabled_) detail::pass_logger_to_storage(storage_, options_.logger);
    }

    /// The counts so far; with the Storage's own (its optional `storage_counters()`:
    /// tiered_storage's `remote.*`) in statistics_snapshot::storage_counters.
    statistics_snapshot stats() const {
        statistics_snapshot s = state_->stats.snapshot();
        if (enabled_) s.storage_counters = detail::storage_counters_of(storage_);
        return s;
    }

    /// For a host that compiles outside get_or_compile and stores with store() (the
    /// LLVM adapter): counts what get_or_compile counts around its compile function,
    /// the time it took, and, for a kernel that could not be keyed, a bypass with its
    /// reason (not logged: the caller says it once).
    void count_compile(std::chrono::nanoseconds compile_time) noexcept {
        state_->stats.compiled(static_cast<std::uint64_t>(compile_time.count() < 0 ? 0 : compile_time.count()));
    }
    void count_bypass(std::string const& reason) noexcept { state_->stats.bypassed(reason); }

    /// The serializer's format: part of every entry and of every key.
    static std::string format_id() { return std::string(Serializer::format_id()); }

    /// The format an entry of `Artifact` is written in and must have to be loaded as one:
    /// format_id() and the artifact's type (`;artifact=` and its `typeid` name, and for a
    /// type in an unnamed namespace where it lies: detail::artifact_type_name), so that
    /// an entry stored as one type is never loaded as another of the same shape under
    /// the same key (a `foreign_version` miss). Made once per type.
    template <class Artifact>
    static std::string const& entry_format_id() {
        // (made_once: no static's guard, which a child forked while another thread made it,
        // reading the module list, would find held for ever)
        static std::atomic<std::string const*> id{nullptr};
        return detail::made_once(id, [] {
            return std::make_unique<std::string const>(
                detail::entry_format_id(Serializer::format_id(), detail::artifact_type_name(typeid(Artifact))));
        });
    }

    /// A key builder with the toolchain component already added: the library's
    /// format, the compiler, Boost and the archive format, the ABI, the host's
    /// version string and its build-id.
    /// The toolchain component is described and hashed once per host version string,
    /// not once per kernel. Called from a shared library (a Python extension, a plugin),
    /// the host's build-id names that library too: it is then the compiler, and another
    /// build of it under the same program and version string is another key. (Inlined into
    /// its caller always, which calls its own module's detail::calling_module_identity: the
    /// library named is the caller's. Called through a pointer to member, it names the
    /// module holding the copy called.)
    [[gnu::always_inline]] key_builder<Hasher> make_key_builder(std::string const& host_version = {}) const {
        key_builder<Hasher> kb;
        try {
            state_->toolchain.add_to(kb, host_version, format_id(), detail::calling_module_identity());
        } catch (...) { // (an allocation that failed: a bypass, never the host's exception)
            kb.fail("the toolchain component could not be described");
        }
        return kb;
    }

    /// The settings from_env(prefix) reads, with one line each, for a host's --help:
    /// the Storage's (its static `environment_settings(prefix)`, or `PREFIX_DIR` for a
    /// Storage without one), then the cache's own.
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        return detail::cache_environment_settings<Storage, Compression>(prefix);
    }

    /// Loads the artifact stored under `k`, relinking its references through the
    /// resolver; `self` is the live kernel it is loaded for. nullopt on any miss.
    template <class Artifact, class Self = void>
    std::optional<Artifact> load(key_result const& k, entry_info const& info = {}, Self const* self = nullptr) {
        static_assert(check_serializer<Serializer, Artifact>::value, "");
        if constexpr (!detail::is_serializer_for<Serializer, Artifact>::value) {
            return std::nullopt; // the assertion above said why; no second error
        } else {
            miss_reason why = miss_reason::absent;
            return load_impl<Artifact>(k, info, self, why);
        }
    }

    /// Stores `artifact` under `k`, atomically. False, counted and logged, on any
    /// failure; the host keeps its artifact either way.
    template <class Artifact, class Self = void>
    bool store(key_result const& k, Artifact const& artifact, entry_info const& info = {}, Self const* self = nullptr,
               std::chrono::nanoseconds compile_time = {}) {
        static_assert(check_serializer<Serializer, Artifact>::value, "");
        if constexpr (!detail::is_serializer_for<Serializer, Artifact>::value)
            return false; // the assertion above said why; no second error
        else
            return store_impl(k, artifact, info, self, compile_time, nullptr);
    }

    /// The artifact for `k`: loaded when the cache has it, otherwise compiled by
    /// `compile()` (a callable returning the artifact) and stored. Exceptions of
    /// `compile` reach the caller; nothing else does.
    template <class Artifact, class Compile, class Self = void>
    cached<Artifact> get_or_compile(key_result const& k, entry_info const& info, Compile&& compile,
                                    Self const* self = nullptr) {
        static_assert(check_serializer<Serializer, Artifact>::value, "");
        if constexpr (!detail::is_serializer_for<Serializer, Artifact>::value)
            return cached<Artifact>{std::forward<Compile>(compile)(), outcome::compiled, "disabled"};
        else
            return get_or_compile_impl<Artifact>(k, info, std::forward<Compile>(compile), self);
    }

    /// `self` given as a literal nullptr: no kernel, so no self reference resolves.
    template <class Artifact>
    std::optional<Artifact> load(key_result const& k, entry_info const& info, std::nullptr_t) {
        return load<Artifact, void>(k, info, static_cast<void const*>(nullptr));
    }
    template <class Artifact>
    bool store(key_result const& k, Artifact const& artifact, entry_info const& info, std::nullptr_t,
               std::chrono::nanoseconds compile_time = {}) {
        return store<Artifact, void>(k, artifact, info, static_cast<void const*>(nullptr), compile_time);
    }
    template <class Artifact, class Compile>
    cached<Artifact> get_or_compile(key_result const& k, entry_info const& info, Compile&& compile, std::nullptr_t) {
        return get_or_compile<Artifact, Compile, void>(k, info, std::forward<Compile>(compile),
                                                       static_cast<void const*>(nullptr));
    }

    /// Reads ahead the entries of `keys` and, for each key given an entry_info (`infos[i]`
    /// for `keys[i]`; fewer infos: none for the rest), its kernel's identity record, in as
    /// few exchanges as the storage can (tiered_storage over Redis: one round trip for
    /// all), so that the get_or_compile and load calls that follow find them without a
    /// remote call of their own. Each is still read and checked as any entry when it is
    /// used. Does nothing when the cache is disabled or its storage has no `prefetch`
    /// (storage/concept.hpp). Never throws.
    ///
    /// With single flight on the remote (cache_options::single_flight's scope has
    /// `remote`) and `claims` take (the default), the keys the remote lacks are also
    /// claimed for this process, in one more batch (tiered_storage over Redis), so that
    /// their misses compile without a round trip to claim each: the fleet's other
    /// processes wait for this one's entries. Prefetch so only keys this process will
    /// get_or_compile soon (a key never missed keeps the others waiting, within their
    /// bound, until the cache's end); `prefetch_claims::none` only reads ahead.
    void prefetch(std::vector<key_result> const& keys, std::vector<entry_info> const& infos = {},
                  prefetch_claims claims = prefetch_claims::take) noexcept {
        if (!enabled_) return;
        claim_request const request{claims == prefetch_claims::take ? options_.single_flight.scope : claim_scope::none,
                                    options_.single_flight.wait_max};
        detail::prefetch_entries(storage_, keys, infos, options_.max_entry_size, options_.record_identities, request);
    }

    /// Binds `self.kernel` to `k` in the resolver and compiles or loads it as its own
    /// `self`: the two calls `resolver().bind(&kernel, k.value())` and
    /// `get_or_compile(k, info, compile, &kernel)` in one.
    template <class Artifact, class Compile, class T>
    cached<Artifact> get_or_compile(key_result const& k, entry_info const& info, Compile&& compile,
                                    bind_self<T> self) {
        static_assert(detail::has_bind<Resolver, T>::value,
                      "bind_self needs a resolver with bind(T const*, key const&), such as registry");
        if constexpr (detail::has_bind<Resolver, T>::value) {
            // A bind that throws (the Resolver's own bookkeeping could not be made) leaves
            // the kernel unbound, as for a bypass: logged, and the call goes on.
            try {
                state_->resolver.bind(self.kernel, k.ok() ? k.value() : key{});
            } catch (std::exception const& e) {
                bind_failed(info, e.what());
            } catch (...) {
                bind_failed(info, "unknown exception");
            }
        }
        return get_or_compile<Artifact, Compile, T>(k, info, std::forward<Compile>(compile), self.kernel);
    }

    /// The explanation an `absent` miss of `k` would get now (explain.hpp): reads the
    /// record of the kernel's identity. Kind none when the cache is disabled, records
    /// no identities, or `k` is a bypass.
    miss_explanation explain_miss(key_result const& k, entry_info const& info) {
        if (!enabled_ || !k.ok() || !options_.record_identities) return {};
        detail::record_read previous;
        return records().explain(k, info, previous);
    }

    /// The record of a kernel's identity (the entries stored for it, newest first), or
    /// nullopt when there is none or it does not check: the one this cache holds when it
    /// holds it (cache/identity_records.hpp), else the storage's.
    std::optional<identity_record> read_identity_record(std::string const& identity) {
        if (!enabled_) return std::nullopt;
        if (std::optional<identity_record> held = records().held_record(identity)) return held;
        bool over_bound = false;
        return records().read(identity, over_bound);
    }

private:
    template <class Artifact, class Self>
    bool store_impl(key_result const& k, Artifact const& artifact, entry_info const& info, Self const* self,
                    std::chrono::nanoseconds compile_time, detail::record_read* previous) {
        if (!enabled_ || !k.ok()) return false;
        auto start = std::chrono::steady_clock::now();
        try {
            entry_metadata const meta = detail::entry_metadata_now(info.name, info.origin_file, info.origin_line,
                                                                   entry_format_id<Artifact>(), compile_time.count(),
                                                                   k.components());
            std::string entry;
            envelope_writer envelope(entry, k.value(), meta, auth_);
            if (!envelope.metadata_fits())
                return store_failed(store_failure::too_large, start, info, k.value(), "metadata over 1 MiB");
            // Compressing: the payload is serialized aside, then compressed into the entry.
            detail::serialize_buffer aside;
            bool const compressing = detail::compression_on<Compression>(options_.compression_level);
            std::string& payload = compressing ? aside.bytes() : envelope.out();
            if (compressing) payload.clear();
            try {
                Serializer::save(payload, artifact, resolver_context::of(state_->resolver, self));
            } catch (unresolved_reference const& e) {
                return store_failed(store_failure::unresolved_reference, start, info, k.value(), e.what());
            } catch (std::exception const& e) {
                return store_failed(store_failure::serialize_error, start, info, k.value(), e.what());
            }
            // The bound is on the whole sealed entry, as load applies it when reading, and
            // on the payload a compressed entry declares, which load bounds the same way.
            if (compressing) {
                if (payload.size() > options_.max_entry_size)
                    return store_failed(store_failure::too_large, start, info, k.value(), {});
                detail::append_payload<Compression>(envelope, payload, options_.compression_level,
                                                    options_.compression_threshold);
            }
            if (envelope.sealed_size() > options_.max_entry_size)
                return store_failed(store_failure::too_large, start, info, k.value(), {});
            envelope.seal();
            if (!write_entry(k.value(), entry, start, info)) return false;
            state_->stats.stored(entry.size(), detail::elapsed_ns(start));
            if (options_.record_identities) records().record(k, info, meta, previous);
            return true;
        } catch (std::exception const& e) {
            return store_failed(store_failure::serialize_error, start, info, k.value(), e.what());
        } catch (...) {
            return store_failed(store_failure::serialize_error, start, info, k.value(), "unknown exception");
        }
    }

    // Hands a sealed entry to the storage; false (counted, logged) when it fails. A
    // Storage member that throws is the storage failing: a write-error, as for read.
    bool write_entry(key const& k, std::string const& entry, std::chrono::steady_clock::time_point start,
                     entry_info const& info) {
        try {
            if (std::error_code ec = storage_.write(k, entry))
                return store_failed(store_failure::write_error, start, info, k, ec.message());
        } catch (std::exception const& e) {
            return store_failed(store_failure::write_error, start, info, k, e.what());
        } catch (...) {
            return store_failed(store_failure::write_error, start, info, k, "unknown exception");
        }
        return true;
    }

    template <class Artifact, class Compile, class Self>
    cached<Artifact> get_or_compile_impl(key_result const& k, entry_info const& info, Compile&& compile,
                                         Self const* self) {
        if (!enabled_) return cached<Artifact>{std::forward<Compile>(compile)(), outcome::compiled, "disabled"};
        if (!k.ok()) {
            state_->stats.bypassed(k.bypass_reason());
            log_with([&] { return "bypass " + printable(info.name) + ": " + printable(k.bypass_reason()); });
            auto start = std::chrono::steady_clock::now();
            cached<Artifact> result = compiled_result<Artifact>(std::forward<Compile>(compile)(), outcome::bypassed,
                                                                k.bypass_reason());
            state_->stats.compiled(detail::elapsed_ns(start));
            return result;
        }
        miss_reason why = miss_reason::absent;
        if (std::optional<Artifact> hit = load_impl<Artifact>(k, info, self, why)) {
            if (std::optional<Artifact> fresh = verify_hit(k, info, *hit, compile, self))
                return cached<Artifact>{std::move(*fresh), outcome::compiled, "unsound", {}, true};
            return cached<Artifact>{std::move(*hit), outcome::loaded, {}};
        }
        // An absent miss reads the kernel's identity record to say what changed; the
        // record read is kept for the store that follows, which updates it.
        detail::record_read previous;
        miss_explanation explanation;
        bool const explained = why == miss_reason::absent && options_.record_identities;
        if (explained) {
            explanation = records().explain(k, info, previous);
            log_with([&] { return detail::absent_miss_line(info.name, explanation, state_->new_kernel_logged); });
        }
        // Single flight (single_flight.hpp): claim the key, or wait for the process that
        // claimed it; the claim is released on every way out of here.
        detail::claim_guard<Storage> claim(storage_);
        if (std::optional<Artifact> hit = detail::claim_or_wait<Artifact>(
                storage_, claim, k.value(), options_.single_flight,
                previous.last_compile_ns,
                options_.max_entry_size, why == miss_reason::absent, state_->stats, options_.logger, info.name,
                [&] { return load_impl<Artifact>(k, info, self, why); }))
            return cached<Artifact>{std::move(*hit), outcome::loaded, {}};
        auto start = std::chrono::steady_clock::now();
        cached<Artifact> result = compiled_result<Artifact>(std::forward<Compile>(compile)(), outcome::compiled,
                                                            to_string(why));
        std::uint64_t compile_ns = detail::elapsed_ns(start);
        state_->stats.compiled(compile_ns);
        result.explanation = std::move(explanation);
        if (std::chrono::nanoseconds(compile_ns) < options_.min_compile_time) {
            state_->stats.store_skipped_cheap();
            return result;
        }
        store_impl(k, result.value, info, self, std::chrono::nanoseconds(compile_ns), explained ? &previous : nullptr);
        return result;
    }

    // What a move leaves behind: a disabled cache with a state of its own (its accessors
    // dereference it), or none when even that cannot be allocated.
    void disable_moved_from() noexcept {
        enabled_ = false;
        try {
            state_ = std::make_unique<state>();
        } catch (...) {
        }
    }

    struct state {
        Resolver resolver;
        statistics stats;
        std::atomic<bool> write_error_logged{false};
        std::atomic<bool> new_kernel_logged{false};     ///< the first new kernel's miss was logged
        std::atomic<bool> record_ignored_logged{false}; ///< an identity record over a bound was logged
        detail::held_identity_records held_records;      ///< records() holds them
        detail::hit_verifier verifier;                  ///< verify mode
        detail::toolchain_component<Hasher> toolchain;  ///< make_key_builder's, and its parts
        detail::counters_flushed flushed;               ///< flush_statistics's
        detail::untrusted_signers_said untrusted_signers; ///< their key ids, logged once each
    };

    // One load's bookkeeping: its key, where its miss reason goes, when it started, and
    // how many bytes it read.
    struct load_attempt {
        key const& k;
        entry_info const& info;
        miss_reason& why;
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
        std::size_t bytes = 0;
        read_result read{}; ///< the storage's answer, given back to its entry_checked
        std::uint64_t refetch_ns = 0; ///< spent reading the remote in place of a refused copy (open_entry)
    };

    // The hit path, timed phase by phase (read, verify, deserialize and relink,
    // relocate) so that a host can see where a warm run spends its time.
    template <class Artifact, class Self>
    std::optional<Artifact> load_impl(key_result const& k, entry_info const& info, Self const* self,
                                      miss_reason& why) {
        if (!enabled_ || !k.ok()) return std::nullopt;
        load_attempt attempt{k.value(), info, why};
        detail::load_under_way const under_way(state_.get(), k.value());
        try {
            if (under_way.refused()) return missed(attempt, miss_reason::unresolved_reference, under_way.refused());
            detail::read_buffer buffer;
            // A storage with read_view may hand out the entry's bytes where they are (a
            // mapped file), kept alive by `view` until the artifact is made.
            detail::entry_view_of<Storage> view;
            std::string_view bytes;
            if (!read_entry(k.value(), buffer.bytes(), view, bytes, attempt)) return std::nullopt;
            auto const read_done = std::chrono::steady_clock::now();
            detail::decompress_buffer decompressed; // a compressed payload, decompressed here
            std::string refetched; // the remote's entry in place of a refused local copy (open_entry)
            detail::envelope_fields const env = open_entry(k.value(), entry_format_id<Artifact>(), bytes, view,
                                                           refetched, decompressed.bytes(), attempt);
            if (env.status != envelope_status::ok) return std::nullopt;
            auto const verify_done = std::chrono::steady_clock::now();
            std::optional<Artifact> artifact = deserialize<Artifact>(env.payload, self, view, attempt);
            if (!artifact) return std::nullopt;
            auto const deserialize_done = std::chrono::steady_clock::now();
            if constexpr (detail::has_relocate_source<Artifact>::value) {
                // (An entry stored with no origin line, 0, has none to move from.)
                if (info.origin_line != 0 && env.origin_line != 0 && env.origin_line != info.origin_line)
                    relocate_source(*artifact, info.origin_line - env.origin_line);
            }
            auto const done = std::chrono::steady_clock::now();
            // (A refetch from the remote, made while checking, is read time: its read and
            // the signature check of what it read.)
            state_->stats.hit(attempt.bytes,
                              {detail::ns_between(attempt.start, read_done) + attempt.refetch_ns,
                               detail::ns_between(read_done, verify_done) - attempt.refetch_ns,
                               detail::ns_between(verify_done, deserialize_done),
                               detail::ns_between(deserialize_done, done)},
                              env.compile_ns);
            return artifact;
        } catch (std::exception const& e) {
            return missed(attempt, miss_reason::deserialize_error, e.what());
        } catch (...) {
            return missed(attempt, miss_reason::deserialize_error, "unknown exception");
        }
    }

    // Reads the entry under `k` into `buffer`; false (a counted miss) when there is
    // none to open. A Storage member that throws is the storage failing, not the
    // serializer: counted as read-error (docs/policies.md, exceptions).
    template <class View>
    bool read_entry(key const& k, std::string& buffer, View& view, std::string_view& bytes, load_attempt& attempt) {
        read_result rr;
        // With a secret or signatures, the bytes are read into the buffer, never mapped
        // (docs/design.md, "Mapped hits"): a storage with read_view whose answers may
        // come from a remote (a Storage of the host's own) would otherwise have a
        // signature checked on bytes that can change after the check.
        bool const viewed = detail::has_read_view<Storage>::value && !auth_.keyed() && !remote_auth_.is_signed();
        try {
            if constexpr (detail::has_read_view<Storage>::value) {
                if (viewed) rr = storage_.read_view(k, buffer, options_.max_entry_size, view);
            }
            if (!viewed) rr = storage_.read(k, buffer, options_.max_entry_size);
        } catch (std::exception const& e) {
            missed(attempt, miss_reason::read_error, e.what());
            return false;
        } catch (...) {
            missed(attempt, miss_reason::read_error, "unknown exception");
            return false;
        }
        if (std::optional<miss_reason> const miss = miss_reason_of(rr.status)) {
            missed(attempt, *miss, rr.status == read_status::error ? rr.error.message() : std::string());
            return false;
        }
        bytes = buffer;
        if constexpr (detail::has_read_view<Storage>::value) {
            if (viewed) bytes = view.bytes();
        }
        attempt.bytes = bytes.size();
        attempt.read = rr;
        return true;
    }

    // The miss of a load whose entry changed while it was read (entry_view::intact).
    std::nullopt_t changed_while_read(load_attempt& attempt) {
        return missed(attempt, miss_reason::read_error, "the entry's file changed while it was read");
    }

    // Checks the entry read for `k` (by signature when detail::auth_for says so), and
    // decompresses its payload into `decompressed` when it is compressed (env.payload then
    // points there); a status other than ok is a counted miss, and a damaged entry is
    // reported to the storage. A local copy whose signer is no longer trusted gives way to
    // the remote's entry, read into `refetched`, when that one verifies. Bytes that changed
    // under the reader (a view no longer intact, checked after the decompression that reads
    // them) are a read error, neither corrupt nor reported.
    template <class View>
    detail::envelope_fields open_entry(key const& k, std::string_view format_id, std::string_view buffer, View const& view,
                                       std::string& refetched, std::string& decompressed, load_attempt& attempt) {
        envelope_auth const* auth = &detail::auth_for<Storage>(attempt.read, auth_, remote_auth_);
        detail::envelope_fields env = detail::check_envelope(buffer, k, format_id, options_.max_entry_size, *auth);
        if (auth == &auth_) { // (With signatures the entry was read, never viewed: `view` is no mapping.)
            detail::remote_refetch refetch;
            auth = detail::settle_local_copy(storage_, k, format_id, options_.max_entry_size, auth_, remote_auth_,
                                              buffer, refetched, attempt.read, env, refetch);
            if (auth != &auth_) attempt.bytes = buffer.size();
            attempt.refetch_ns = refetch.ns;
        }
        if (env.status == envelope_status::ok && env.compressed) detail::decompress_payload<Compression>(env, decompressed);
        if (!view.intact()) {
            env.status = envelope_status::corrupt;
            changed_while_read(attempt);
            return env;
        }
        // A tier copies a sound remote entry locally (cache/signed_entry_checks.hpp).
        detail::tell_checked(storage_, k, buffer, attempt.read, env.status, *auth, auth_);
        if (std::optional<miss_reason> const miss = miss_reason_of(env.status)) {
            if (is_damaged_entry(env.status)) detail::tell_storage_corrupt(storage_, k);
            missed(attempt, *miss,
                   env.status == envelope_status::untrusted_signer ? state_->untrusted_signers.first_time(env)
                   : env.compressed                                ? detail::compressed_miss_detail(env)
                                                                   : std::string());
        }
        return env;
    }

    // The artifact in `payload`, its references relinked; nullopt (a counted miss)
    // when the deserializer refuses it or a reference names nothing live.
    // Bytes that changed under the deserializer (a mapped file truncated meanwhile) made
    // whatever it made of them: thrown away, a read error.
    template <class Artifact, class Self, class View>
    std::optional<Artifact> deserialize(std::string_view payload, Self const* self, View const& view,
                                        load_attempt& attempt) {
        std::optional<Artifact> artifact(std::in_place);
        try {
            Serializer::load(payload, *artifact, resolver_context::of(state_->resolver, self));
        } catch (unresolved_reference const& e) {
            if (!view.intact()) return changed_while_read(attempt);
            return missed(attempt, miss_reason::unresolved_reference, e.what());
        } catch (std::exception const& e) {
            if (!view.intact()) return changed_while_read(attempt);
            return missed(attempt, miss_reason::deserialize_error, e.what());
        }
        if (!view.intact()) return changed_while_read(attempt);
        return artifact;
    }

    // The cache's identity records (cache/identity_records.hpp), over its storage.
    detail::identity_records<Storage, Hasher> records() noexcept {
        return {storage_,       auth_,           remote_auth_,         state_->toolchain, state_->stats,
                state_->record_ignored_logged, options_.logger, state_->held_records};
    }

    // Verify mode (verify.hpp: hit_verifier judges and counts), for the share of the hits it
    // checks: the fresh artifact when the hit's entry is unsound; nullopt when the hit stands.
    template <class Artifact, class Compile, class Self>
    std::optional<Artifact> verify_hit(key_result const& k, entry_info const& info, Artifact const& loaded,
                                       Compile& compile, Self const* self) {
        if (!detail::verify_this_hit(options_.verify_fraction)) return std::nullopt;
        auto const serialize = [this, self](Artifact const& a, std::string& out) {
            Serializer::save(out, a, resolver_context::of(state_->resolver, self));
        };
        return state_->verifier.judge(info.name, k.value(), loaded, compile, serialize, state_->stats, options_.logger);
    }

    // A Resolver's bind (bind_self) that threw: logged, with what it threw.
    void bind_failed(entry_info const& info, char const* what) noexcept {
        log_with([&] { return "bind failed " + printable(info.name) + ": the resolver threw: " + what; });
    }

    // The result of a compile: `value`, with `reason` when it can be had; memory too short
    // for its copy leaves it empty rather than lose the artifact.
    template <class Artifact>
    static cached<Artifact> compiled_result(Artifact&& value, compile_cache::outcome o,
                                            std::string_view reason) {
        cached<Artifact> result{std::move(value), o, std::string()};
        try {
            result.reason = reason;
        } catch (...) {
        }
        return result;
    }

    std::nullopt_t missed(load_attempt& attempt, miss_reason r, std::string const& detail) noexcept {
        attempt.why = r;
        state_->stats.miss(r, attempt.bytes, detail::elapsed_ns(attempt.start));
        if (r != miss_reason::absent)
            log_with([&] {
                return "miss " + printable(attempt.info.name) + " (" + detail::failure_subject(storage_, attempt.k) +
                       "): " + to_string(r) + (detail.empty() ? "" : ": " + detail);
            });
        return std::nullopt;
    }

    bool store_failed(store_failure f, std::chrono::steady_clock::time_point start, entry_info const& info,
                      key const& k, std::string const& detail) noexcept {
        state_->stats.store_failed(f, detail::elapsed_ns(start));
        // A write error (disk full, read-only, permission) tends to repeat for every
        // store: it is reported once, and counted every time.
        if (f == store_failure::write_error && state_->write_error_logged.exchange(true)) return false;
        log_with([&] {
            return "store failed " + printable(info.name) + " (" + detail::failure_subject(storage_, k) +
                   "): " + to_string(f) + (detail.empty() ? "" : ": " + detail);
        });
        return false;
    }

    /// Logs the line `build()` makes, built only when there is a logger (detail/log.hpp).
    template <class Build>
    void log_with(Build&& build) noexcept {
        detail::log_with(options_.logger, std::forward<Build>(build));
    }

    std::unique_ptr<state> state_;
    Storage storage_{};
    cache_options options_;
    envelope_auth auth_; ///< from options_.secret; set by the constructor only
    envelope_auth remote_auth_; ///< signed by options_.signatures, or unkeyed (then unused)
    bool enabled_ = false;
};

} // namespace compile_cache

