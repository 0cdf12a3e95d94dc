// compile_cache: settings from the environment, for the cache and for every storage.
// The cache reads its own, then hands its storage plain values (storage_settings); the
// storage reads its own `PREFIX_*` variables through a settings_reader, whose parsers
// read sizes, durations, switches and choices (every value that does not parse is one
// line through the reporter, then the default), and answers with itself or with why it
// is off (from_env_result).
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/env.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache {

namespace detail {
/// The edit distance (insertions, deletions, substitutions) between `a` and `b`: how a
/// misspelled setting's name is told from another (2 at most).
COMPILE_CACHE_DECL std::size_t edit_distance(std::string_view a, std::string_view b);

/// Of `settings` (each with a `name`), the one whose name is nearest `name` and at most 2
/// letters from it, the first of equals: the setting a misspelled name was meant for;
/// nullptr when none is that near.
template <class Settings>
auto nearest_setting(std::string_view name, Settings const& settings) -> decltype(&*std::begin(settings)) {
    decltype(&*std::begin(settings)) nearest = nullptr;
    std::size_t best = 3; // more letters apart than 2: not a misspelling of it
    for (auto const& s : settings) {
        std::size_t const d = edit_distance(name, s.name);
        if (d < best) {
            best = d;
            nearest = &s;
        }
    }
    return nearest;
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
/// (`250`, `250ms`), or by `s` for seconds (`2s`), of at most 2^40 ms (about 35 years).
/// nullopt for anything else.
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
/// `off`, `false`, `no` are off (any case, the spaces and tabs around them ignored, so
/// that `off ` is off, never a directory named so). nullopt for anything else.
COMPILE_CACHE_DECL std::optional<bool> parse_switch(std::string_view s) noexcept;

/// What a settings_reader's members that serve the deprecated `from_env(settings_reader&)`
/// form say (settings_reader::confirm and the others below).
#define COMPILE_CACHE_DEPRECATED_FROM_ENV                                                                        \
    [[deprecated("use static from_env_result<S> from_env(storage_settings const&); see README, Moving from an "  \
                 "earlier version")]]

class settings_reader;
struct storage_settings;

namespace detail {
/// The lines basic_cache::from_env has to say about its own settings (a bad PREFIX_LOG,
/// PREFIX_VERIFY...), shared by the settings_reader it hands its storage: held until the
/// storage shows it is wanted (it reports a line, or answers with itself or "off"), then
/// said first, in order; dropped when the storage is not configured, so that a cache
/// nobody asked for prints nothing. Lines go to `out`, or to stderr as `compile_cache: LINE`.
class held_lines {
public:
    explicit held_lines(std::function<void(std::string_view)> out) : out_(std::move(out)) {}
    /// Keeps `line` until release().
    COMPILE_CACHE_DECL void hold(std::string line);
    /// Says the held lines, once; later lines are said at once.
    COMPILE_CACHE_DECL void release() noexcept;
    /// Forgets the held lines, unsaid.
    COMPILE_CACHE_DECL void drop() noexcept;
    /// release(), then `line`.
    COMPILE_CACHE_DECL void say(std::string const& line) noexcept;

private:
    COMPILE_CACHE_DECL void emit(std::string const& line) const noexcept;
    std::function<void(std::string_view)> out_;
    std::mutex mutex_;
    std::vector<std::string> lines_;
    bool released_ = false;
};

/// What the deprecated members of a settings_reader handed to a storage's old
/// `from_env(settings_reader&)` answer: the values the cache read before it asked (the
/// storage_settings of the new form), and what the storage said once it confirmed.
struct old_form_answers {
    bool authenticated = false;
    bool remote_trusted = false;
    std::function<void(std::string_view)> logger;
    std::string cache_off;      ///< storage_settings::cache_off
    std::string untrusted_line; ///< storage_settings::untrusted_remote_reason()
    bool untrusted_said = false;
    bool confirmed = false;     ///< confirm() was called: the storage's main setting asked for it
    /// Lines the storage reported after confirm(): said by the cache when the storage
    /// returns itself, the last one being its reason when it returns nullopt.
    std::vector<std::string> after_confirm;
};

/// The cache's way into a settings_reader (the members below are not for storages).
struct settings_reader_access;
} // namespace detail

/// What a cache reads from the environment under one prefix, and where it says what
/// it could not use. A storage reads its own `PREFIX_*` variables through the one in
/// storage_settings (`static from_env_result<S> from_env(storage_settings const&)`,
/// an optional static member: see docs/policies.md), with the same parsers, and reports
/// a bad value the same way: one line (through the cache's logger, or on stderr when
/// it has none), then the default.
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
    /// Whether the variable is unset, empty, `0`, `off`, `false` or `no` (any case, blanks ignored):
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
    /// ("is not a duration (...); using the default, N ms", or "is longer than a duration
    /// may be (...)" past parse_milliseconds' bound) and `fallback` used.
    COMPILE_CACHE_DECL std::chrono::milliseconds milliseconds(std::string_view suffix,
                                                              std::chrono::milliseconds fallback) const;

    /// An on/off switch (parse_switch); unset or empty: `fallback`, as for the other
    /// parsers (a switch that is on by default stays on); a bad value is reported ("is not
    /// understood (...); <otherwise>") and `fallback` used.
    COMPILE_CACHE_DECL bool flag(std::string_view suffix, bool fallback, std::string const& otherwise) const;

    /// One of named choices (any case, blanks around it ignored); unset: `fallback`; a bad value is reported
    /// ("is not <what> (a, b or c); using the default, <fallback's name>").
    template <class T>
    T choice(std::string_view suffix, std::initializer_list<std::pair<std::string_view, T>> choices, T fallback,
             std::string const& what) const {
        std::string const v = value(suffix);
        if (v.empty()) return fallback;
        std::string const lowered = detail::lower(detail::trim_blanks(v));
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

    // --- The deprecated from_env(settings_reader&) form ----------------------------
    // A storage written against the earlier contract asked the cache through these;
    // they now answer from what the cache read before it asked (storage_settings), with
    // no call back into the cache. A new storage reads storage_settings instead.

    /// False when the cache cannot run whatever the storage does (storage_settings::cache_off):
    /// the storage then returns nullopt, and the cache says why. Call it once the
    /// storage's main setting says it is wanted, before it reports anything else. A
    /// reader that no cache made answers true.
    COMPILE_CACHE_DEPRECATED_FROM_ENV COMPILE_CACHE_DECL bool confirm() noexcept;
    /// storage_settings::authenticated; false from a reader that no cache made.
    COMPILE_CACHE_DEPRECATED_FROM_ENV bool authenticated() const noexcept {
        return answers_ && answers_->authenticated;
    }
    /// storage_settings::remote_trusted; when false, the reason (untrusted_remote_reason)
    /// is the storage's line. From a reader that no cache made: `PREFIX_REMOTE_INSECURE`.
    COMPILE_CACHE_DEPRECATED_FROM_ENV COMPILE_CACHE_DECL bool remote_trusted() const;
    /// storage_settings::logger; empty from a reader that no cache made.
    COMPILE_CACHE_DEPRECATED_FROM_ENV reporter const& logger() const noexcept {
        static reporter const none;
        return answers_ ? answers_->logger : none;
    }

private:
    friend struct detail::settings_reader_access;
    std::string prefix_;
    reporter report_;
    std::shared_ptr<detail::held_lines> held_;          ///< the cache's lines, when a cache made this reader
    std::shared_ptr<detail::old_form_answers> answers_; ///< only for the deprecated form
};

/// What a cache hands its storage's `static from_env_result<S> from_env(storage_settings const&)`:
/// the cache reads its own settings first (PREFIX_LOG, PREFIX_SECRET_FILE, ...), then
/// gives the storage what it needs to decide as plain values. The storage reads its own
/// `PREFIX_*` variables through `env` and answers with itself or with "off, because".
/// The order a storage follows: its main setting (its path, its URL) off:
/// `not_configured()`; `cache_off` not empty: `off(cache_off)`, before it reads another
/// setting or touches anything; then its other settings (a bad one: one line through
/// `env`, and the default); a fault that leaves it unusable: `off(why)`.
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
    /// Empty, or why the cache cannot run whatever the storage answers (its own settings
    /// disable it: a `PREFIX_SECRET_FILE` that cannot be read): a storage whose main
    /// setting asks for it answers `off(cache_off)` at once, so that nothing is made or
    /// connected. (One that returns itself anyway is dropped, with this line.)
    std::string cache_off;

    /// The one line a remote storage (or the tier) gives as its reason when a remote is
    /// asked for (`PREFIX_REMOTE` set) but `remote_trusted` is false.
    COMPILE_CACHE_DECL std::string untrusted_remote_reason() const;
};

/// A setting of the cache's own (read by basic_cache::from_env, not by the storage) that
/// a storage found kept with its data: a cache directory's `compress` in `DIR/.cc-settings`
/// (`compile-cache set DIR compress 19`). The storage passes it on as it is, in its
/// from_env_result; the cache uses it where its environment variable is unset or empty
/// (the environment wins), and says a value it cannot use in one line naming `where`.
struct kept_cache_setting {
    std::string suffix; ///< the variable it stands in for: `PREFIX` + suffix (`_COMPRESS`)
    std::string name;   ///< its name where it is kept (`compress`)
    std::string value;  ///< as kept
    std::string where;  ///< where it is kept, for the lines that name it (`/var/cache/x/.cc-settings`)
};

/// A storage's answer to `from_env(storage_settings const&)`: the storage the settings
/// configure, or none, with the reason in one line (empty when the settings did not ask
/// for this storage at all: its main setting is unset or off). The cache reports a
/// reason once and runs without a cache. With the storage, the cache's own settings it
/// found kept with its data, if any (kept_cache_setting).
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

    /// The cache's own settings the storage found kept with its data, in the order found;
    /// none from most storages.
    std::vector<kept_cache_setting> const& kept_cache_settings() const noexcept { return kept_; }
    /// Passes one on to the cache (a storage's from_env; a storage made of others passes
    /// on theirs: a tier, its local storage's).
    from_env_result& keep_cache_setting(kept_cache_setting setting) {
        kept_.push_back(std::move(setting));
        return *this;
    }

private:
    explicit from_env_result(std::string why) : why_off_(std::move(why)) {}
    std::optional<S> storage_;
    std::string why_off_;
    std::vector<kept_cache_setting> kept_;
};

namespace detail {
struct settings_reader_access {
    /// The reader basic_cache::from_env hands its storage: bad values go through `held`.
    static settings_reader holding(std::string prefix, std::shared_ptr<held_lines> held) {
        settings_reader r(std::move(prefix));
        r.held_ = std::move(held);
        return r;
    }
    /// For a storage's deprecated `from_env(settings_reader&)`: `settings.env` whose
    /// deprecated members answer from `settings`.
    COMPILE_CACHE_DECL static settings_reader answering(storage_settings const& settings);
    static old_form_answers& answers(settings_reader& r) noexcept { return *r.answers_; }
    /// The storage_settings a cache would hand a storage, from a reader given to the
    /// deprecated form: its answers when a cache made it, else what the environment says
    /// (not authenticated; the remote trusted only with `PREFIX_REMOTE_INSECURE` on).
    static storage_settings settings_of(settings_reader const& r) {
        settings_reader plain = r;
        plain.answers_.reset();
        if (r.answers_)
            return storage_settings{plain, r.answers_->authenticated, r.answers_->remote_trusted, r.answers_->logger,
                                    r.answers_->cache_off};
        bool const trusted = !r.is_off("_REMOTE") && plain.flag("_REMOTE_INSECURE", false, "the remote needs a secret");
        return storage_settings{plain, false, trusted, {}, {}};
    }
    /// Says `line` as the reader's cache does (its held lines first), skipping the
    /// after-confirm capture of the deprecated form.
    static void say(settings_reader const& r, std::string const& line) noexcept {
        settings_reader plain = r;
        plain.answers_.reset();
        plain.report(line);
    }
};

/// A shipped storage's deprecated `from_env(settings_reader&)`: its new form, given the
/// settings the reader stands for; a reason it is off is reported through the reader.
template <class S>
std::optional<S> from_env_of_reader(settings_reader& env) {
    from_env_result<S> r = S::from_env(settings_reader_access::settings_of(env));
    if (r) return std::move(*r);
    if (!r.why_off().empty()) env.report(r.why_off());
    return std::nullopt;
}
} // namespace detail

/// The deprecation a shipped storage's earlier `from_env(settings_reader&)` carries.
#define COMPILE_CACHE_DEPRECATED_STORAGE_FROM_ENV                                                              \
    [[deprecated("use from_env(storage_settings const&), which answers from_env_result; see README, Moving "   \
                 "from an earlier version")]]

} // namespace compile_cache

#include <compile_cache/impl/settings.ipp>
