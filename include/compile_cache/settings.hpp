// compile_cache: settings from the environment, for the cache and for every storage.
// A storage configures itself from `PREFIX_*` variables through a settings_reader:
// the parsers below read sizes, durations, switches and choices, and every value that
// does not parse is one line through the reporter, then the default.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/env.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace compile_cache {

namespace detail {
/// `s` without the spaces and tabs around it.
inline std::string_view trim_blanks(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}
} // namespace detail

/// A setting read from the environment, for a host's --help.
struct environment_setting {
    std::string name;        ///< e.g. `MYDSL_CACHE_DIR`
    std::string description; ///< one line
};

/// Parses a size: a number of bytes, or a number followed by K, M or G (powers of
/// 1024; any case; an optional trailing `B` or `iB`): `1048576`, `48K`, `500M`, `2G`,
/// `2GiB`. nullopt for anything else, overflow included.
COMPILE_CACHE_DECL std::optional<std::uint64_t> parse_byte_size(std::string_view s) noexcept;

/// Parses a duration in milliseconds: a whole number, optionally followed by `ms`
/// (`250`, `250ms`), or by `s` for seconds (`2s`). nullopt for anything else.
COMPILE_CACHE_DECL std::optional<std::chrono::milliseconds> parse_milliseconds(std::string_view s) noexcept;

/// Parses a whole number of at most `max_digits` decimal digits (no sign, no unit).
/// nullopt for anything else, the empty string included.
COMPILE_CACHE_DECL std::optional<std::uint64_t> parse_whole_number(std::string_view s, std::size_t max_digits) noexcept;

/// Parses a fraction from 0 to 1 written with a decimal point, whatever the host's
/// locale, optionally with a decimal exponent: `0`, `1`, `0.01`, `.5`, `1e-3`, ` 0.5 `.
/// nullopt for anything else (a sign before the number, a comma, more than 18 digits,
/// an exponent of more than 3 digits, a value over 1).
COMPILE_CACHE_DECL std::optional<double> parse_fraction(std::string_view s) noexcept;

/// Parses an on/off word: `1`, `on`, `true`, `yes` are on; unset (empty), `0`,
/// `off`, `false`, `no` are off (any case). nullopt for anything else.
COMPILE_CACHE_DECL std::optional<bool> parse_switch(std::string_view s) noexcept;

/// What a cache reads from the environment under one prefix, and where it says what
/// it could not use. Given to `Storage::from_env(settings_reader&)` (an optional
/// static member: see docs/policies.md), so that a storage reads its own
/// `PREFIX_*` variables with the same parsers, and reports a bad value the same way:
/// one line (through the cache's logger, or on stderr when it has none), then the
/// default.
class settings_reader {
public:
    /// Receives one line, without a trailing newline.
    using reporter = std::function<void(std::string_view)>;

    /// `prefix`: e.g. `MYDSL_CACHE`. `report`: where bad values are reported; when
    /// empty, lines go to stderr as `compile_cache: LINE`.
    explicit settings_reader(std::string prefix, reporter report = {})
        : prefix_(std::move(prefix)), report_(std::move(report)) {}

    std::string const& prefix() const noexcept { return prefix_; }
    /// `PREFIX` + `suffix`, e.g. name("_DIR") is `MYDSL_CACHE_DIR`.
    std::string name(std::string_view suffix) const { return prefix_ + std::string(suffix); }
    /// The variable's value; empty when unset.
    std::string value(std::string_view suffix) const { return detail::getenv_string(name(suffix)); }
    /// Whether the variable is unset, empty, `0`, `off`, `false` or `no` (any case):
    /// the way a storage's main setting (its path, its URL) switches it off.
    bool is_off(std::string_view suffix) const { return detail::is_off(value(suffix)); }

    /// Reports one line (a bad value, an unusable path) as the cache reports them.
    COMPILE_CACHE_DECL void report(std::string const& line) const noexcept;
    /// Reports `NAME="value" ` + `text`: the first words of every bad-value line.
    COMPILE_CACHE_DECL void report_value(std::string_view suffix, std::string const& value,
                                         std::string const& text) const noexcept;

    /// A size (parse_byte_size); unset: `fallback`; a bad value is reported
    /// ("is not a size (...); using the default, <fallback_text>") and `fallback` used.
    COMPILE_CACHE_DECL std::uint64_t byte_size(std::string_view suffix, std::uint64_t fallback,
                                               std::string const& fallback_text) const;

    /// A duration (parse_milliseconds); unset: `fallback`; a bad value is reported
    /// ("is not a duration (...); using the default, N ms") and `fallback` used.
    COMPILE_CACHE_DECL std::chrono::milliseconds milliseconds(std::string_view suffix,
                                                              std::chrono::milliseconds fallback) const;

    /// An on/off switch (parse_switch); unset: off; a bad value is reported ("is not
    /// understood (...); <otherwise>") and `fallback` used.
    COMPILE_CACHE_DECL bool flag(std::string_view suffix, bool fallback, std::string const& otherwise) const;

    /// One of named choices (any case); unset: `fallback`; a bad value is reported
    /// ("is not <what> (a, b or c); using the default, <fallback's name>").
    template <class T>
    T choice(std::string_view suffix, std::initializer_list<std::pair<std::string_view, T>> choices, T fallback,
             std::string const& what) const {
        std::string const v = value(suffix);
        if (v.empty()) return fallback;
        std::string const lowered = detail::lower(v);
        std::string names;
        std::string fallback_name;
        std::size_t i = 0;
        for (auto const& [choice_name, choice_value] : choices) {
            if (lowered == choice_name) return choice_value;
            if (choice_value == fallback && fallback_name.empty()) fallback_name = std::string(choice_name);
            names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(choice_name);
            ++i;
        }
        report_value(suffix, v, "is not " + what + " (" + names + "); using the default, " + fallback_name);
        return fallback;
    }

    // --- Between the cache and its storage -------------------------------------

    /// A storage calls this once its own main setting (its path, its URL) says it is
    /// wanted, before it reports anything else or touches anything: the cache then
    /// reads its own settings (`PREFIX_LOG`, `PREFIX_SECRET_FILE`). False when the
    /// cache cannot run (it has reported why, in one line): the storage returns
    /// nullopt. Later calls return the first answer. A storage that never calls it
    /// still works: the cache calls it when from_env returns a storage.
    bool confirm() {
        if (!confirmed_) confirmed_ = confirm_ ? confirm_() : true;
        return *confirmed_;
    }
    /// After confirm(): whether the cache authenticates its entries (a secret is set),
    /// so that a storage sharing entries with other machines can refuse to run
    /// without it.
    bool authenticated() const noexcept { return authenticated_; }
    /// After confirm(): whether a storage shared with other machines (a remote) may be
    /// used. What such a server returns runs as code here, so only when entries are
    /// authenticated (a secret) or `PREFIX_REMOTE_INSECURE` says the server is trusted;
    /// otherwise one line saying how to set a secret. Asked by the tier and by the Redis
    /// storage alike, answered (and said) once.
    COMPILE_CACHE_DECL bool remote_trusted();
    /// After confirm(): the cache's logger (empty when it logs nothing), for a storage
    /// that reports what happens while it runs (a server gone, then back).
    reporter const& logger() const noexcept { return logger_; }

    /// For the cache: what confirm() does, and what it then tells the storage.
    void on_confirm(std::function<bool()> confirm) { confirm_ = std::move(confirm); }
    void set_reporter(reporter report) { report_ = std::move(report); }
    void set_logger(reporter logger) { logger_ = std::move(logger); }
    void set_authenticated(bool authenticated) noexcept { authenticated_ = authenticated; }
    bool confirmed() const noexcept { return confirmed_.has_value(); }

private:
    std::string prefix_;
    reporter report_;
    reporter logger_;
    std::function<bool()> confirm_;
    std::optional<bool> confirmed_;
    bool authenticated_ = false;
    std::optional<bool> remote_trusted_;
};

/// What a cache hands its storage's `static from_env_result<S> from_env(storage_settings const&)`:
/// the cache reads its own settings first (PREFIX_LOG, PREFIX_SECRET_FILE, ...), then
/// gives the storage what it needs to decide as plain values. The storage reads its own
/// `PREFIX_*` variables through `env` and answers with itself or with "off, because".
struct storage_settings {
    /// The prefix, the parsers, and where a bad value is reported (the logger, or stderr).
    settings_reader env;
    /// Whether the cache authenticates its entries (a secret is set).
    bool authenticated = false;
    /// Whether a storage shared with other machines (a remote) may be used: entries are
    /// authenticated, or `PREFIX_REMOTE_INSECURE` says only trusted machines write there.
    /// A remote answers `off(untrusted_remote_reason())` when it is false.
    bool remote_trusted = false;
    /// The cache's logger, for a storage that reports what happens while it runs; empty
    /// when the cache logs nothing.
    settings_reader::reporter logger;

    /// The one line a remote storage (or the tier) gives as its reason when a remote is
    /// asked for (`PREFIX_REMOTE` set) but `remote_trusted` is false.
    COMPILE_CACHE_DECL std::string untrusted_remote_reason() const;
};

/// A storage's answer to `from_env(storage_settings const&)`: the storage the settings
/// configure, or none, with the reason in one line (empty when the settings did not ask
/// for this storage at all: its main setting is unset or off). The cache reports a
/// reason once and runs without a cache.
template <class S>
class from_env_result {
public:
    /// The storage the settings configure.
    from_env_result(S storage) : storage_(std::move(storage)) {}
    /// No storage, because `why` (one line, reported by the cache; empty: not asked for).
    static from_env_result off(std::string why) { return from_env_result(std::move(why)); }
    /// No storage: the settings do not ask for one (nothing is reported).
    static from_env_result not_configured() { return from_env_result(std::string()); }

    bool has_value() const noexcept { return storage_.has_value(); }
    explicit operator bool() const noexcept { return storage_.has_value(); }
    S& operator*() & noexcept { return *storage_; }
    S&& operator*() && noexcept { return std::move(*storage_); }
    S* operator->() noexcept { return &*storage_; }
    /// Why there is no storage; empty when there is one, or when none was asked for.
    std::string const& why_off() const noexcept { return why_off_; }

private:
    explicit from_env_result(std::string why) : why_off_(std::move(why)) {}
    std::optional<S> storage_;
    std::string why_off_;
};

} // namespace compile_cache

#include <compile_cache/impl/settings.ipp>
