// compile_cache: a remote Storage chosen at run time by the scheme of its URL among the
// remotes a program is built with (`redis://` a redis_storage, `http://` an http_storage),
// so that one tier type serves every `PREFIX_REMOTE`.
// Needs no library of its own: each alternative brings its own (the Redis storage hiredis,
// the HTTP storage libcurl), and only the alternatives a program names are linked.
#pragma once

// ---- inlined compile_cache/detail/config.hpp
// compile_cache: what the library needs from the compiler, said first. Every public
// header includes this before anything else, so that a translation unit compiled with
// the wrong flags (llvm-config --cxxflags gives -std=c++14 -fno-exceptions) stops at
// one sentence naming the flag, not at a page of errors from inside the library.
// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_CONFIG_HPP
#define COMPILE_CACHE_DETAIL_CONFIG_HPP

#if defined(_MSVC_LANG)
#define COMPILE_CACHE_CPLUSPLUS _MSVC_LANG
#else
#define COMPILE_CACHE_CPLUSPLUS __cplusplus
#endif

#if COMPILE_CACHE_CPLUSPLUS < 201703L
#error "compile_cache: needs C++17 or later (-std=c++17); with llvm-config --cxxflags, replace its -std=c++14"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "compile_cache: needs exceptions (drop -fno-exceptions; llvm-config --cxxflags adds it, LLVM's headers do not need it)"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

// #error lets g++ and clang go on, into hundreds of errors from the library's code: a
// missing include is fatal to both, so compilation stops here, at the sentences.
#if defined(COMPILE_CACHE_WRONG_FLAGS)
#include <compile_cache: compilation stopped; fix the flags named above>
#endif

// Separate compilation (docs/design.md, "What including the library costs"): a host that
// defines COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit and includes
// <compile_cache/src.hpp> in exactly one gets the library's non-template functions
// compiled once, there, instead of parsed and instantiated in each translation unit.
// COMPILE_CACHE_DECL marks their declarations (inline in the default, header-only mode);
// their definitions are in impl/*.ipp files, compiled where COMPILE_CACHE_INCLUDE_IMPL is 1.
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#define COMPILE_CACHE_DECL
#if defined(COMPILE_CACHE_SOURCE)
#define COMPILE_CACHE_INCLUDE_IMPL 1
#else
#define COMPILE_CACHE_INCLUDE_IMPL 0
#endif
#else
#define COMPILE_CACHE_DECL inline
#define COMPILE_CACHE_INCLUDE_IMPL 1
#endif

// A build that mixes the modes, or has src.hpp in no translation unit or in two, is ill-formed
// (functions defined inline in some translation units and out of line in another, or not at
// all, or twice); it fails at link time with a symbol whose name says what to do:
// - every translation unit in separate-compilation mode references
//   compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit, which
//   src.hpp defines: "undefined reference" without src.hpp, "multiple definition" with two;
// - every header-only translation unit defines
//   compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none
//   in one COMDAT group (merged among them), and src.hpp defines it in another: "multiple
//   definition" when both kinds are linked together.
// (ELF, with GCC or Clang: the mark is a section-group directive of the assembler.)
#if defined(__GNUC__)
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
extern "C" char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
namespace compile_cache::detail {
namespace {
[[maybe_unused]] __attribute__((used)) char const* const separate_compilation_mark =
    &compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
} // namespace
} // namespace compile_cache::detail
#elif defined(__ELF__)
__asm__(".pushsection .rodata.compile_cache_header_only_mark,\"aG\",@progbits,compile_cache_header_only_mark,comdat\n"
        ".globl compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none\n"
        "compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none:\n"
        ".byte 0\n"
        ".popsection\n");
#endif
#endif

// A function each module (the main program, each shared library) has its own copy of,
// called within the module without going to another's: an ELF symbol of hidden visibility.
#if defined(__GNUC__) && defined(__ELF__)
#define COMPILE_CACHE_MODULE_LOCAL __attribute__((visibility("hidden")))
#else
#define COMPILE_CACHE_MODULE_LOCAL
#endif

// RTTI is checked by detail/config_rtti.hpp, in the headers that need it: the LLVM
// adapter's no-RTTI side (compile_cache/llvm/object_store.hpp, object_cache.hpp) does not.

#endif // COMPILE_CACHE_DETAIL_CONFIG_HPP
// ---- end of compile_cache/detail/config.hpp
#include <compile_cache/compile_cache.hpp>


#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace compile_cache {

namespace detail {
template <class S>
using handles_url_t = decltype(S::handles_url(std::declval<std::string_view>()));
/// A remote that says which URLs are its own (`static bool handles_url(std::string_view)`).
template <class S>
using has_handles_url = is_detected_convertible<bool, handles_url_t, S>;
template <class S>
using describe_of_t = decltype(std::declval<S const&>().describe());
template <class S>
using last_failure_of_t = decltype(std::declval<S const&>().last_failure());
template <class S>
using partial_failure_of_t = decltype(std::declval<S const&>().partial_failure(std::declval<std::error_code const&>()));
template <class S>
using read_many_of_t = decltype(std::declval<S&>().read_many(
    std::declval<std::vector<key> const&>(), std::declval<std::size_t>(),
    std::declval<std::vector<std::pair<read_result, std::string>>&>()));
} // namespace detail

/// One of `Remotes` (each a Storage), chosen by the URL: `from_env` gives
/// `PREFIX_REMOTE` to the first alternative whose `static bool handles_url(std::string_view)`
/// claims it (redis_storage: `redis://`, `redis+cluster://`, `unix://`; http_storage:
/// `http://`, `https://`), else to the first alternative without such a member; none: the
/// remote is off, with one line naming the URL's scheme (never the rest of the URL). As
/// `tiered_storage<directory_storage, remote_by_url<redis_storage, http_storage>>` a host
/// serves both kinds of server from one setting; a host that names only one alternative
/// links only its library.
///
/// Every Storage member is the held alternative's. Optional members are always there
/// and forward when the alternative has them: `list` (else operation_not_supported),
/// `entry_path`, `describe`, `last_failure` (its text), `partial_failure`, `set_logger`,
/// `read_many` (else one read per key), `write_many` (else one write per entry),
/// `try_claim_many` (else nothing claimed), `release_claim_many` (else one release per
/// key), `write_many_then_release` (else those two in turn), `read_many_claiming` (else
/// the reads, then try_claim_many for the keys found absent). A default-constructed one
/// holds none: reads are absent, the rest fail with invalid_argument. Thread-safe as the held
/// alternative is; move-only when one of them is.
template <class... Remotes>
class remote_by_url {
    static_assert(sizeof...(Remotes) >= 1, "compile_cache: remote_by_url needs at least one remote");

public:
    /// What the last failing call of the held remote saw (its last_failure), for a log line.
    struct failure {
        std::error_code error;
        std::string text;
    };

    remote_by_url() = default;
    /// Holds `remote`, one of Remotes.
    template <class R, std::enable_if_t<std::disjunction_v<std::is_same<std::decay_t<R>, Remotes>...>, int> = 0>
    remote_by_url(R&& remote) : held_(std::in_place_type<std::decay_t<R>>, std::forward<R>(remote)) {}

    /// Whether one of the alternatives claims `url` (handles_url), or one of them takes any URL.
    static bool handles_url(std::string_view url) noexcept {
        return (claims<Remotes>(url) || ...) || (!detail::has_handles_url<Remotes>::value || ...);
    }

    /// The alternative `PREFIX_REMOTE` names (see the class), made by its own from_env
    /// (or from the URL), with the same storage_settings; its answer is this one's.
    static from_env_result<remote_by_url> from_env(storage_settings const& settings) {
        using result = from_env_result<remote_by_url>;
        std::string const url = settings.env.value("_REMOTE");
        if (detail::is_off(url)) return result::not_configured();
        std::optional<result> made;
        // The first alternative that claims the URL; failing that, the first that claims none.
        ((!made && claims<Remotes>(url) ? (void)made.emplace(from_env_of<Remotes>(settings)) : void()), ...);
        ((!made && !detail::has_handles_url<Remotes>::value ? (void)made.emplace(from_env_of<Remotes>(settings))
                                                             : void()),
         ...);
        if (made) return std::move(*made);
        if (!settings.cache_off.empty()) return result::off(settings.cache_off);
        std::string const scheme = scheme_of(url);
        return result::off(settings.env.name("_REMOTE") +
                           (scheme.empty() ? std::string(" is not a URL (scheme://...)")
                                           : " names a remote of scheme \"" + scheme +
                                                 "\", which this program was not built with") +
                           "; the remote is off");
    }

    /// Every alternative's settings (each name once, the first alternative's line).
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        std::vector<environment_setting> s;
        (add_settings<Remotes>(s, prefix), ...);
        return s;
    }

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        read_result answer{read_status::absent, {}};
        if (!each_held([&](auto& r) { answer = r.read(k, out, max_size); })) out.clear();
        return answer;
    }

    std::error_code write(key const& k, std::string_view bytes) noexcept {
        std::error_code e = none_error();
        each_held([&](auto& r) { e = r.write(k, bytes); });
        return e;
    }

    std::error_code remove(key const& k) noexcept {
        std::error_code e = none_error();
        each_held([&](auto& r) { e = r.remove(k); });
        return e;
    }

    /// The held remote's batch read, or one read per key (see redis_storage::read_many
    /// for the contract): `out[i]` is what `read(keys[i], bytes, max)` would answer.
    void read_many(std::vector<key> const& keys, std::size_t max,
                   std::vector<std::pair<read_result, std::string>>& out) noexcept {
        try {
            out.clear();
            out.resize(keys.size());
            each_held([&](auto& r) { read_many_of(r, keys, max, out); });
        } catch (...) {
            for (auto& o : out) {
                o.second.clear();
                o.first = {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
            }
        }
    }

    /// The held remote's batch write, or one write per entry (see redis_storage::write_many
    /// for the contract): `out[i]` is what `write(entries[i].first, entries[i].second)` would answer.
    void write_many(std::vector<std::pair<key, std::string_view>> const& entries,
                    std::vector<std::error_code>& out) noexcept {
        try {
            out.assign(entries.size(), none_error());
            each_held([&](auto& r) { write_many_of(r, entries, out); });
        } catch (...) {
            for (auto& e : out) e = std::make_error_code(std::errc::not_enough_memory);
        }
    }

    /// Single flight: the held remote's claims (claim.hpp) when it has them; none otherwise.
    claim_answer try_claim(key const& k, claim_request const& request) noexcept {
        claim_answer answer{};
        each_held([&](auto& r) {
            if constexpr (detail::has_claims<std::decay_t<decltype(r)>>::value) answer = r.try_claim(k, request);
        });
        return answer;
    }
    /// The held remote's batch of claims (storage/concept.hpp's try_claim_many) when it
    /// has one; without: every answer none (nothing claimed).
    void try_claim_many(std::vector<key> const& keys, claim_request const& request,
                        std::vector<claim_answer>& out) noexcept {
        try {
            out.assign(keys.size(), claim_answer{});
        } catch (...) {
            out.clear();
            return;
        }
        each_held([&](auto& r) {
            if constexpr (detail::has_try_claim_many<std::decay_t<decltype(r)>>::value)
                r.try_claim_many(keys, request, out);
        });
    }
    void release_claim(key const& k) noexcept {
        each_held([&](auto& r) {
            if constexpr (detail::has_claims<std::decay_t<decltype(r)>>::value) r.release_claim(k);
        });
    }
    /// The held remote's batch of releases when it has one; else one release_claim per key.
    void release_claim_many(std::vector<key> const& keys) noexcept {
        each_held([&](auto& r) {
            using R = std::decay_t<decltype(r)>;
            if constexpr (detail::has_release_claim_many<R>::value) r.release_claim_many(keys);
            else if constexpr (detail::has_claims<R>::value)
                for (key const& k : keys) r.release_claim(k);
        });
    }

    /// The held remote's writes then releases (storage/concept.hpp's write_many_then_release)
    /// when it has them together; else its write_many (or one write per entry), then its
    /// release_claim_many (or one release per key).
    void write_many_then_release(std::vector<std::pair<key, std::string_view>> const& entries,
                                 std::vector<key> const& releases, std::vector<std::error_code>& out) noexcept {
        try {
            out.assign(entries.size(), none_error());
        } catch (...) {
            out.clear();
            return; // (the caller sees the size, and releases them itself)
        }
        each_held([&](auto& r) { write_many_then_release_of(r, entries, releases, out); });
    }
    /// The held remote's reads with claims (storage/concept.hpp's read_many_claiming) when
    /// it has them together; else its read_many (or one read per key), then its
    /// try_claim_many for the keys of `to_claim` found absent (without one: none).
    void read_many_claiming(std::vector<key> const& keys, std::size_t max, std::vector<key> const& to_claim,
                            claim_request const& request, std::vector<std::pair<read_result, std::string>>& out,
                            std::vector<claim_answer>& claims) noexcept {
        try {
            out.clear();
            out.resize(keys.size());
            claims.assign(to_claim.size(), claim_answer{});
            each_held([&](auto& r) { read_many_claiming_of(r, keys, max, to_claim, request, out, claims); });
        } catch (...) {
            for (auto& o : out) {
                o.second.clear();
                o.first = {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
            }
            for (auto& c : claims) c = claim_answer{};
        }
    }

    /// A forked child may use it when every alternative makes connections of its own there
    /// (tiered_storage: `reconnects_after_fork`).
    static constexpr bool reconnects_after_fork = (detail::remote_reconnects_after_fork<Remotes>() && ...);

    /// The held remote's listing; operation_not_supported when it cannot list.
    std::error_code list(std::vector<stored_entry>& out) const {
        std::error_code e = none_error();
        each_held([&](auto const& r) { e = list_of(r, out); });
        return e;
    }

    /// Where the held remote keeps `k`'s entry (empty when it does not say).
    std::string entry_path(key const& k) const {
        std::string path;
        each_held([&](auto const& r) { path = entry_path_of(r, k); });
        return path;
    }

    /// The held remote's description ("HTTP server https://host/path/ (layout flat)"), for lines.
    std::string describe() const {
        std::string text = "(none)";
        each_held([&](auto const& r) { text = describe_of(r); });
        return text;
    }

    /// What the held remote's last failing call saw (empty when it does not say).
    failure last_failure() const {
        failure f;
        each_held([&](auto const& r) { f = last_failure_of(r); });
        return f;
    }

    /// Whether the held remote calls error `e` partial (one node of a cluster).
    bool partial_failure(std::error_code const& e) const {
        bool partial = false;
        each_held([&](auto const& r) { partial = partial_failure_of(r, e); });
        return partial;
    }

    void set_logger(std::function<void(std::string_view)> logger) {
        each_held([&](auto& r) { set_logger_of(r, logger); });
    }

    /// The held remote when it is an R, else null.
    template <class R>
    R* get() noexcept {
        return std::get_if<R>(&held_);
    }
    template <class R>
    R const* get() const noexcept {
        return std::get_if<R>(&held_);
    }
    /// Whether it holds a remote (a default-constructed one holds none).
    bool holds_remote() const noexcept { return held_.index() != 0; }

private:
    /// The scheme of `url` (what comes before `://`) when it is one by RFC 3986 (a letter,
    /// then letters, digits, `+`, `-` or `.`; 32 at most), else empty: never a part of the
    /// URL that may hold a password (`user:pass@host/?next=http://...`).
    static std::string scheme_of(std::string_view url) {
        std::size_t const colon = url.find("://");
        if (colon == std::string_view::npos || colon == 0 || colon > 32) return {};
        for (std::size_t i = 0; i < colon; ++i) {
            char const c = url[i];
            bool const letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            if (!letter && (i == 0 || !((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))) return {};
        }
        return std::string(url.substr(0, colon));
    }

    template <class R>
    static bool claims(std::string_view url) noexcept {
        if constexpr (detail::has_handles_url<R>::value) return R::handles_url(url);
        else return false;
    }

    template <class R>
    static from_env_result<remote_by_url> from_env_of(storage_settings const& settings) {
        from_env_result<R> r = detail::storage_from_env<R>(settings, "_REMOTE");
        if (r) return from_env_result<remote_by_url>(remote_by_url(*std::move(r)));
        if (r.why_off().empty()) return from_env_result<remote_by_url>::not_configured();
        return from_env_result<remote_by_url>::off(r.why_off());
    }

    template <class R>
    static void add_settings(std::vector<environment_setting>& s, std::string_view prefix) {
        if constexpr (detail::has_environment_settings<R>::value)
            for (auto const& e : R::environment_settings(prefix))
                if (std::none_of(s.begin(), s.end(), [&](environment_setting const& o) { return o.name == e.name; }))
                    s.push_back(e);
    }

    static std::error_code none_error() noexcept { return std::make_error_code(std::errc::invalid_argument); }

    /// Calls `f` with the held remote; false when there is none. (No std::visit and no
    /// `if constexpr` in the callers' lambdas: clang 14 crashes on that nesting.)
    template <class F>
    bool each_held(F&& f) {
        return held_at<0>(f, held_);
    }
    template <class F>
    bool each_held(F&& f) const {
        return held_at<0>(f, held_);
    }
    template <std::size_t I, class F, class V>
    static bool held_at(F& f, V& held) {
        if constexpr (I == sizeof...(Remotes)) {
            return false;
        } else {
            using R = std::tuple_element_t<I, std::tuple<Remotes...>>;
            if (auto* r = std::get_if<R>(&held)) {
                f(*r);
                return true;
            }
            return held_at<I + 1>(f, held);
        }
    }

    template <class R>
    static void read_many_of(R& r, std::vector<key> const& keys, std::size_t max,
                             std::vector<std::pair<read_result, std::string>>& out) {
        if constexpr (detail::is_detected<detail::read_many_of_t, R>::value) {
            r.read_many(keys, max, out);
        } else {
            for (std::size_t i = 0; i < keys.size(); ++i) out[i].first = r.read(keys[i], out[i].second, max);
        }
    }
    template <class R>
    static void write_many_of(R& r, std::vector<std::pair<key, std::string_view>> const& entries,
                              std::vector<std::error_code>& out) {
        if constexpr (detail::has_write_many<R>::value) {
            r.write_many(entries, out);
        } else {
            for (std::size_t i = 0; i < entries.size(); ++i) out[i] = r.write(entries[i].first, entries[i].second);
        }
    }
    template <class R>
    static void write_many_then_release_of(R& r, std::vector<std::pair<key, std::string_view>> const& entries,
                                           std::vector<key> const& releases, std::vector<std::error_code>& out) {
        if constexpr (detail::has_write_many_then_release<R>::value) {
            r.write_many_then_release(entries, releases, out);
        } else {
            try {
                write_many_of(r, entries, out);
            } catch (...) {
                for (auto& e : out) e = std::make_error_code(std::errc::not_enough_memory);
            }
            if constexpr (detail::has_release_claim_many<R>::value) r.release_claim_many(releases);
            else if constexpr (detail::has_claims<R>::value)
                for (key const& k : releases) r.release_claim(k);
        }
    }
    template <class R>
    static void read_many_claiming_of(R& r, std::vector<key> const& keys, std::size_t max,
                                      std::vector<key> const& to_claim, claim_request const& request,
                                      std::vector<std::pair<read_result, std::string>>& out,
                                      std::vector<claim_answer>& claims) {
        if constexpr (detail::has_read_many_claiming<R>::value) {
            r.read_many_claiming(keys, max, to_claim, request, out, claims);
        } else {
            read_many_of(r, keys, max, out);
            if constexpr (detail::has_try_claim_many<R>::value) {
                std::vector<std::size_t> all(to_claim.size());
                for (std::size_t j = 0; j < all.size(); ++j) all[j] = j;
                claims.assign(to_claim.size(), claim_answer{});
                detail::claim_absent_after_reads(keys, out, to_claim, all, claims,
                                                 [&](std::vector<key> const& absent, std::vector<claim_answer>& answers) {
                                                     r.try_claim_many(absent, request, answers);
                                                 });
            }
        }
    }
    template <class R>
    static std::error_code list_of(R const& r, std::vector<stored_entry>& out) {
        if constexpr (detail::has_list<R>::value) return r.list(out);
        else return std::make_error_code(std::errc::operation_not_supported);
    }
    template <class R>
    static std::string entry_path_of(R const& r, key const& k) {
        if constexpr (detail::has_entry_path<R>::value) return r.entry_path(k);
        else return {};
    }
    template <class R>
    static std::string describe_of(R const& r) {
        if constexpr (detail::is_detected<detail::describe_of_t, R>::value) return std::string(r.describe());
        else return "server";
    }
    template <class R>
    static failure last_failure_of(R const& r) {
        if constexpr (detail::is_detected<detail::last_failure_of_t, R>::value) {
            auto const f = r.last_failure();
            return {f.error, std::string(f.text)};
        } else {
            return {};
        }
    }
    template <class R>
    static bool partial_failure_of(R const& r, std::error_code const& e) {
        if constexpr (detail::is_detected<detail::partial_failure_of_t, R>::value) return r.partial_failure(e);
        else return false;
    }
    template <class R>
    static void set_logger_of(R& r, std::function<void(std::string_view)> const& logger) {
        if constexpr (detail::has_set_logger<R>::value) r.set_logger(logger);
        else (void)r, (void)logger;
    }

    std::variant<std::monostate, Remotes...> held_;
};

} // namespace compile_cache
