// compile_cache: a Storage in front of another — a local one (a directory) before a
// remote one shared by many machines (a Redis server). Reads try the local storage
// first; an entry found on the remote is copied locally once the cache has checked its
// envelope; stores go to both. A remote that fails (times out, refuses, rejects the
// credentials, garbles a reply) or answers too slowly is skipped for a back-off period,
// so a dead, stalled or slow server costs a bounded delay.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/detection.hpp>

#include <compile_cache/envelope.hpp>
#include <compile_cache/explain.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/concept.hpp>
#include <compile_cache/storage/remote_error.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace compile_cache {

/// What a tier may do with its remote.
enum class remote_mode {
    read_write, ///< read, and write every store
    read_only,  ///< read only: stores stay local (a developer's machine reading what CI wrote)
};

// (remote_error, remote_error_count, to_string and remote_error_of: storage/remote_error.hpp.)

/// How a tiered_storage uses its remote.
struct tier_options {
    compile_cache::remote_mode mode = remote_mode::read_write;
    /// After a failure that says the remote is not usable (timeout, refused, auth,
    /// protocol) the remote is skipped this long; each failed probe after it doubles the
    /// period, up to backoff_max (calls that were already out when it failed do not).
    std::chrono::milliseconds backoff_start{2000};
    std::chrono::milliseconds backoff_max{60000};
    /// A store does not overwrite an entry the remote holds under the same key that
    /// this process read and found not authentic (its HMAC does not verify here: most
    /// likely the machines' secrets differ); counted `remote.store-skipped.foreign`, one
    /// line the first time. True replaces them (to heal garbage planted on the server).
    bool replace_unauthentic = false;
    /// The process's time budget for slow answers: a call that answers after slow_call
    /// or later adds its wait to a count (in wall time: calls waiting side by side on
    /// several threads count once); once the count passes `budget`, every slow answer is
    /// a failure (the remote is skipped for the back-off, one line, as a dead one is).
    /// 0: no budget, slow answers never skip the remote.
    std::chrono::milliseconds budget{1000};
    std::chrono::milliseconds slow_call{200};
    /// One line when the remote goes away and one when it comes back; silent when empty.
    std::function<void(std::string_view)> logger;
};

namespace detail {
template <class S>
using describe_t = decltype(std::declval<S const&>().describe());
template <class S>
using has_remote_describe = is_detected_convertible<std::string, describe_t, S>;
template <class S>
using last_failure_text_t = decltype(std::declval<S const&>().last_failure().text);
/// A remote that tells the text of its last failure (redis_storage::last_failure).
template <class S>
using has_last_failure_text = is_detected_convertible<std::string, last_failure_text_t, S>;
template <class S>
using partial_failure_t = decltype(std::declval<S const&>().partial_failure(std::declval<std::error_code const&>()));
/// A remote that says which of its errors failed only a part of it (a cluster's node).
template <class S>
using has_partial_failure = is_detected_convertible<bool, partial_failure_t, S>;
/// The calls the last found read on this thread answered from a remote (for
/// entry_checked): which tier, and which key.
struct remote_read_mark {
    void const* tier = nullptr;
    key k;
};
inline remote_read_mark& last_remote_read() noexcept {
    thread_local remote_read_mark mark;
    return mark;
}
} // namespace detail

/// `Local` before `Remote`, both Storages. Either may be absent: without a remote it
/// is the local storage alone (same reads, same writes, no counter of its own);
/// without a local one (remote only) nothing is kept on this machine.
///
/// - `read`: the local storage; `found` and `too_large` are its answer. Otherwise
///   (absent, or a local error) the remote, unless it is skipped (back-off). A remote
///   error is counted (remote_error) and the read answers as the local storage did.
/// - `entry_checked` (called by basic_cache after it checked an entry's envelope):
///   an entry the remote returned that checked `ok` is written to the local storage
///   (so the next process reads it locally and sends nothing), and counted as a remote
///   hit; one that is corrupt or unauthenticated is counted as such, never copied.
///   The kernel's identity record comes along (explain.hpp): an identity record read
///   from the remote that checked `ok` is copied too (not counted as a hit), and a
///   copied kernel entry brings the record under its name and origin file when there
///   is none locally, so that misses and `compile-cache explain` here find what the
///   fleet recorded (one remote read per entry copied).
/// - `write`: the local storage, then, in read_write mode, the remote (each remote call
///   is bounded by the remote's own timeout: the host waits no longer). The answer is
///   the local storage's (remote-only: the remote's); a remote failure is counted. An
///   entry this process found unauthentic on the remote is not overwritten there
///   (tier_options::replace_unauthentic).
/// - Identity records (explain.hpp) are counted apart from entries: `remote.record-*`.
/// - `remove`: both (the remote only in read_write mode).
/// - A timeout, a refused connection, refused credentials or permissions (auth) or a
///   reply that is not valid (protocol) make the remote skipped for
///   tier_options::backoff_start, doubling with each failed probe after it, up to
///   backoff_max; so do slow answers once their waits pass tier_options::budget. One
///   log line when it goes away, one when it answers again. Other errors (a server out
///   of memory...) are counted, and said in one line the first time; an error the
///   remote calls partial (`partial_failure(e)`: one node of a cluster) is counted and
///   said once, and the remote is still used. A store refused for `auth` while reads
///   answer (a user allowed to read only) stops the stores, with one line; reads go on.
///
/// Thread-safe when both storages are. Move-only. A default-constructed tier is
/// disabled: reads are absent, writes fail with invalid_argument.
template <class Local, class Remote>
class tiered_storage {
public:
    using local_type = Local;
    using remote_type = Remote;

    tiered_storage() = default;
    /// The local storage alone: behaves exactly as `local`.
    explicit tiered_storage(Local local) : state_(std::make_unique<state>()) { state_->local.emplace(std::move(local)); }
    /// `local` in front of `remote`.
    tiered_storage(Local local, Remote remote, tier_options options = {}) : state_(std::make_unique<state>()) {
        state_->local.emplace(std::move(local));
        state_->remote.emplace(std::move(remote));
        state_->options = std::move(options);
    }
    /// The remote alone: nothing kept locally.
    static tiered_storage remote_only(Remote remote, tier_options options = {}) {
        tiered_storage t;
        t.state_ = std::make_unique<state>();
        t.state_->remote.emplace(std::move(remote));
        t.state_->options = std::move(options);
        return t;
    }

    tiered_storage(tiered_storage&&) noexcept = default;
    tiered_storage& operator=(tiered_storage&&) noexcept = default;

    /// The tier the environment asks for (see settings.hpp), the same storage_settings
    /// handed to Local and Remote. `PREFIX_REMOTE` off: the local storage alone, exactly
    /// as `Local::from_env` makes it. Set: the local storage (unless `PREFIX_REMOTE_ONLY`
    /// is on, or the local one is not configured) before the remote that
    /// `Remote::from_env` makes; `PREFIX_REMOTE_MODE` (`read-write`, default, or
    /// `read-only`). Entries from a shared server run as code here: without a secret
    /// (`PREFIX_SECRET_FILE`) the remote is off (storage_settings::remote_trusted, its
    /// reason untrusted_remote_reason()), unless `PREFIX_REMOTE_INSECURE` is on. A remote
    /// that is off says why in one line, and the local storage is kept; with nothing
    /// left, the tier is off with that reason (the cache is disabled). Only for tiers
    /// that can be configured so: each with a from_env, or made from its setting's value.
    template <class L = Local, class R = Remote,
              std::enable_if_t<detail::configurable_from_env<L>::value && detail::configurable_from_env<R>::value,
                               int> = 0>
    static from_env_result<tiered_storage> from_env(storage_settings const& settings) {
        using result = from_env_result<tiered_storage>;
        settings_reader const& env = settings.env;
        if (env.is_off("_REMOTE")) {
            from_env_result<Local> local = local_from_env(settings);
            if (!local) return result::off(local.why_off()); // (empty: not configured)
            return result(tiered_storage(*std::move(local)));
        }
        if (!settings.cache_off.empty()) return result::off(settings.cache_off);
        std::optional<bool> const only = parse_switch(env.value("_REMOTE_ONLY"));
        std::optional<Local> local;
        if (!only.value_or(false)) {
            from_env_result<Local> l = local_from_env(settings);
            if (!l && !l.why_off().empty()) return result::off(l.why_off()); // configured, and declined
            if (l) local.emplace(*std::move(l));
        }
        if (!only)
            env.report_value("_REMOTE_ONLY", env.value("_REMOTE_ONLY"),
                             "is not understood (1, on, true or yes; 0, off, false or no); the local storage is kept");
        // The remote off, for `why`: said here when the local storage is kept, or the tier's reason.
        auto local_only = [&](std::string const& why) -> result {
            if (!local) return result::off(why);
            env.report(why);
            return result(tiered_storage(std::move(*local)));
        };
        if (!settings.remote_trusted) return local_only(settings.untrusted_remote_reason());
        tier_options options;
        options.logger = settings.logger;
        options.mode = env.choice<remote_mode>(
            "_REMOTE_MODE", {{"read-write", remote_mode::read_write}, {"read-only", remote_mode::read_only}},
            remote_mode::read_write, "a remote mode");
        options.replace_unauthentic =
            env.flag("_REMOTE_REPLACE_UNAUTHENTIC", false, "entries that are not authentic are kept");
        options.budget = budget_from_env(env);
        options.slow_call = std::max(options.budget / 5, std::chrono::milliseconds(1));
        std::optional<from_env_result<Remote>> remote;
        try {
            remote.emplace(remote_from_env(settings));
        } catch (std::exception const& e) {
            return local_only(env.name("_REMOTE") + ": " + e.what() + "; the remote is off");
        } catch (...) {
            return local_only(env.name("_REMOTE") + " cannot be used; the remote is off");
        }
        if (!*remote) {
            if (remote->why_off().empty()) return local ? result(tiered_storage(std::move(*local))) : result::not_configured();
            return local_only(remote->why_off());
        }
        tiered_storage t = local ? tiered_storage(std::move(*local), *std::move(*remote), std::move(options))
                                 : remote_only(*std::move(*remote), std::move(options));
        t.state_->secret_setting = env.name("_SECRET_FILE");
        t.state_->replace_setting = env.name("_REMOTE_REPLACE_UNAUTHENTIC");
        return result(std::move(t));
    }

    /// The settings from_env reads: the local storage's, the tier's, the remote's.
    static std::vector<environment_setting> environment_settings(std::string_view prefix) {
        std::string const p(prefix);
        std::vector<environment_setting> s;
        if constexpr (detail::has_environment_settings<Local>::value) s = Local::environment_settings(prefix);
        std::vector<environment_setting> const tier = {
            {p + "_REMOTE", "the URL of a shared remote storage behind the local one; unset: no remote"},
            {p + "_REMOTE_MODE", "read-write (default) or read-only: whether stores go to the remote"},
            {p + "_REMOTE_ONLY", "1 keeps nothing locally: every read and store goes to the remote"},
            {p + "_REMOTE_INSECURE", "1 reads the remote without a secret (only for a server that only trusted "
                                     "machines can write)"},
            {p + "_REMOTE_REPLACE_UNAUTHENTIC", "1 lets stores replace remote entries that do not authenticate "
                                                "under this secret (default: kept, as another secret's)"},
            {p + "_REMOTE_BUDGET", "time the process may wait for slow answers (each a fifth of it or longer) "
                                   "before a slow remote is skipped as a dead one; default: the call timeout "
                                   "(_REMOTE_TIMEOUT, 1 s); off: no budget"},
        };
        for (auto const& t : tier) s.push_back(t);
        if constexpr (detail::has_environment_settings<Remote>::value)
            for (auto const& r : Remote::environment_settings(prefix))
                if (std::none_of(s.begin(), s.end(), [&](environment_setting const& e) { return e.name == r.name; }))
                    s.push_back(r);
        return s;
    }

    bool has_local() const noexcept { return state_ && state_->local.has_value(); }
    bool has_remote() const noexcept { return state_ && state_->remote.has_value(); }
    /// The local storage; has_local() must be true.
    Local& local() noexcept { return *state_->local; }
    /// The remote storage; has_remote() must be true.
    Remote& remote() noexcept { return *state_->remote; }
    compile_cache::remote_mode mode() const noexcept { return state_->options.mode; }
    /// Whether the remote is skipped now (it failed, and its back-off is not over).
    bool remote_skipped() const {
        if (!has_remote()) return true;
        std::lock_guard<std::mutex> lock(state_->health_mutex);
        return state_->down && clock::now() < state_->retry_at;
    }

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        detail::last_remote_read().tier = nullptr;
        if (!state_) {
            out.clear();
            return {read_status::absent, {}};
        }
        read_result answer{read_status::absent, {}};
        if (state_->local) {
            answer = local_read(k, out, max_size);
            if (answer.status == read_status::found || answer.status == read_status::too_large) return answer;
        }
        if (!state_->remote) return answer;
        admission const a = admit();
        if (a == admission::skipped) return answer;
        auto const start = clock::now();
        read_result r;
        try {
            r = state_->remote->read(k, out, max_size);
        } catch (...) {
            r = {read_status::error, std::make_error_code(std::errc::io_error)};
        }
        auto const took = clock::now() - start;
        state_->counts[c_read_ns] += ns_of(took);
        switch (r.status) {
        case read_status::found:
            state_->read_answered = true;
            answered(a, took);
            state_->counts[c_bytes_read] += out.size();
            try {
                detail::last_remote_read() = {this, k};
            } catch (...) {
            }
            return r;
        case read_status::absent:
            state_->read_answered = true;
            answered(a, took);
            ++state_->counts[is_identity_record_key(k) ? c_record_misses : c_misses];
            break;
        case read_status::too_large:
            answered(a, took);
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::too_large)];
            return r;
        case read_status::error: failed(a, r.error); break;
        }
        out.clear();
        return answer;
    }

    std::error_code write(key const& k, std::string_view bytes) noexcept {
        if (!state_) return std::make_error_code(std::errc::invalid_argument);
        std::error_code answer;
        if (state_->local) answer = local_write(k, bytes);
        else if (state_->options.mode != remote_mode::read_write)
            return std::make_error_code(std::errc::read_only_file_system); // remote-only and read-only: nowhere
        if (!state_->remote || state_->options.mode != remote_mode::read_write) return answer;
        if (keep_foreign(k)) return state_->local ? answer : std::make_error_code(std::errc::file_exists);
        if (state_->writes_refused) {
            ++state_->counts[c_skipped];
            return state_->local ? answer : std::make_error_code(std::errc::permission_denied);
        }
        admission const a = admit();
        if (a == admission::skipped)
            return state_->local ? answer : std::make_error_code(std::errc::resource_unavailable_try_again);
        auto const start = clock::now();
        std::error_code e;
        try {
            e = state_->remote->write(k, bytes);
        } catch (...) {
            e = std::make_error_code(std::errc::io_error);
        }
        auto const took = clock::now() - start;
        state_->counts[c_write_ns] += ns_of(took);
        if (e) {
            failed(a, e, true);
        } else {
            answered(a, took);
            ++state_->counts[is_identity_record_key(k) ? c_record_stores : c_stores];
            state_->counts[c_bytes_written] += bytes.size();
        }
        return state_->local ? answer : e;
    }

    std::error_code remove(key const& k) noexcept {
        if (!state_) return {};
        std::error_code answer;
        if (state_->local) answer = local_remove(k);
        admission const a =
            state_->remote && state_->options.mode == remote_mode::read_write && !state_->writes_refused
                ? admit()
                : admission::skipped;
        if (a != admission::skipped) {
            auto const start = clock::now();
            std::error_code e;
            try {
                e = state_->remote->remove(k);
            } catch (...) {
                e = std::make_error_code(std::errc::io_error);
            }
            if (e)
                failed(a, e, true);
            else
                answered(a, clock::now() - start);
            if (!state_->local) answer = e;
        }
        return answer;
    }

    /// Called by basic_cache after it checked the envelope of an entry this storage's
    /// read returned `found` on this thread (see docs/policies.md). An entry from the
    /// remote that is `ok` is copied to the local storage; a corrupt or unauthenticated
    /// one is counted against the remote.
    void entry_checked(key const& k, std::string_view entry, envelope_status status) noexcept {
        detail::remote_read_mark& mark = detail::last_remote_read();
        if (!state_ || mark.tier != this || mark.k != k) return;
        mark.tier = nullptr;
        if (is_identity_record_key(k)) {
            // An identity record is no entry: counted apart, and its errors not at all.
            if (status == envelope_status::ok) {
                ++state_->counts[c_record_hits];
                if (state_->local) (void)local_write(k, entry);
            } else if (status == envelope_status::unauthenticated) {
                note_foreign(k);
            }
            return;
        }
        switch (status) {
        case envelope_status::ok:
            ++state_->counts[c_hits];
            // A failure here is the next run's miss; a copied entry brings its record along.
            if (state_->local && !local_write(k, entry)) copy_record_of(entry);
            break;
        case envelope_status::corrupt:
        case envelope_status::key_mismatch:
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::corrupt)];
            break;
        case envelope_status::unauthenticated:
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::unauthenticated)];
            note_foreign(k);
            break;
        case envelope_status::too_large:
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::too_large)];
            break;
        case envelope_status::foreign_version: ++state_->counts[c_misses]; break;
        }
    }

    /// The remote's counters, by name (`remote.hits`, `remote.misses`, `remote.stores`,
    /// `remote.errors.<remote_error>`, `remote.skipped`, `remote.bytes-read`,
    /// `remote.bytes-written`, `remote.read-ns`, `remote.write-ns`,
    /// `remote.store-skipped.foreign`, and the identity records' own
    /// `remote.record-hits`, `remote.record-misses`, `remote.record-stores`); empty
    /// without a remote. basic_cache adds them to its statistics.
    std::vector<std::pair<std::string, std::uint64_t>> storage_counters() const {
        std::vector<std::pair<std::string, std::uint64_t>> c;
        if (!has_remote()) return c;
        for (std::size_t i = 0; i < count_names().size(); ++i)
            c.emplace_back(count_names()[i], state_->counts[i].load(std::memory_order_relaxed));
        return c;
    }

    /// Passes the cache's counters on to the local storage when it keeps them.
    std::error_code record_counters(std::vector<std::pair<std::string, std::uint64_t>> const& delta) noexcept {
        if constexpr (detail::has_record_counters<Local>::value) {
            if (state_ && state_->local) {
                try {
                    return state_->local->record_counters(delta);
                } catch (...) {
                    return std::make_error_code(std::errc::io_error);
                }
            }
        }
        (void)delta;
        return {};
    }

    /// The logger for the remote's going away and coming back (basic_cache passes its
    /// own here); passed on to the local and remote storages that take one (the
    /// directory says when it gave up waiting for a lock).
    void set_logger(std::function<void(std::string_view)> logger) {
        if (!state_) return;
        if constexpr (detail::has_set_logger<Local>::value)
            if (state_->local) state_->local->set_logger(logger);
        if constexpr (detail::has_set_logger<Remote>::value)
            if (state_->remote) state_->remote->set_logger(logger);
        std::lock_guard<std::mutex> lock(state_->health_mutex);
        state_->options.logger = std::move(logger);
    }

private:
    using clock = std::chrono::steady_clock;

    // The local storage's calls. A policy may throw (docs/policies.md), and nothing it
    // throws may leave this storage's noexcept members: it is the local storage's
    // failure, as the remote's is the remote's.
    read_result local_read(key const& k, std::string& out, std::size_t max_size) noexcept {
        try {
            return state_->local->read(k, out, max_size);
        } catch (...) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::io_error)};
        }
    }
    std::error_code local_write(key const& k, std::string_view bytes) noexcept {
        try {
            return state_->local->write(k, bytes);
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }
    std::error_code local_remove(key const& k) noexcept {
        try {
            return state_->local->remove(k);
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }

    // The identity record of the kernel whose remote entry was just copied here, under
    // the identity a host that gives none has (name and origin file), copied from the
    // remote when the local storage has none: best effort, bounded as any remote call,
    // never when the remote is skipped. The record's check value is verified by whoever
    // reads it, as for any record.
    void copy_record_of(std::string_view entry) noexcept {
        try {
            std::optional<key> const rk = detail::record_key_of_entry(entry);
            if (!rk) return;
            std::string bytes;
            if (local_read(*rk, bytes, identity_record_max_size).status != read_status::absent) return;
            admission const a = admit();
            if (a == admission::skipped) return;
            auto const start = clock::now();
            read_result r;
            try {
                r = state_->remote->read(*rk, bytes, identity_record_max_size);
            } catch (...) {
                r = {read_status::error, std::make_error_code(std::errc::io_error)};
            }
            auto const took = clock::now() - start;
            state_->counts[c_read_ns] += ns_of(took);
            if (r.status == read_status::error) {
                failed(a, r.error);
                return;
            }
            answered(a, took);
            if (r.status == read_status::found && detail::looks_like_record(bytes, *rk)) (void)local_write(*rk, bytes);
        } catch (...) {
        }
    }

    enum counter : std::size_t {
        c_hits,
        c_misses,
        c_stores,
        c_error,
        c_skipped = c_error + remote_error_count,
        c_bytes_read,
        c_bytes_written,
        c_read_ns,
        c_write_ns,
        c_store_skipped_foreign,
        c_record_hits,
        c_record_misses,
        c_record_stores,
        c_count
    };
    static std::array<std::string, c_count> const& count_names() {
        static std::array<std::string, c_count> const names = [] {
            std::array<std::string, c_count> n;
            n[c_hits] = "remote.hits";
            n[c_misses] = "remote.misses";
            n[c_stores] = "remote.stores";
            for (std::size_t i = 0; i < remote_error_count; ++i)
                n[c_error + i] = std::string("remote.errors.") + to_string(static_cast<remote_error>(i));
            n[c_skipped] = "remote.skipped";
            n[c_bytes_read] = "remote.bytes-read";
            n[c_bytes_written] = "remote.bytes-written";
            n[c_read_ns] = "remote.read-ns";
            n[c_write_ns] = "remote.write-ns";
            n[c_store_skipped_foreign] = "remote.store-skipped.foreign";
            n[c_record_hits] = "remote.record-hits";
            n[c_record_misses] = "remote.record-misses";
            n[c_record_stores] = "remote.record-stores";
            return n;
        }();
        return names;
    }

    struct state {
        std::optional<Local> local;
        std::optional<Remote> remote;
        tier_options options;
        std::array<std::atomic<std::uint64_t>, c_count> counts{};
        mutable std::mutex health_mutex;
        bool down = false;
        clock::time_point down_since{};
        clock::time_point retry_at{};
        std::chrono::milliseconds backoff{0};
        /// Keys whose remote entry this process read and found not authentic (at most
        /// max_foreign_keys; past that, stores overwrite them as before).
        std::mutex foreign_mutex;
        std::unordered_set<key> foreign;
        bool foreign_said = false;
        std::string secret_setting = "the secret file", replace_setting = "PREFIX_REMOTE_REPLACE_UNAUTHENTIC";
        clock::duration slow_waited{0};   ///< the waits of slow answers so far (see tier_options::budget)
        clock::time_point slow_counted_until{}; ///< the end of the last slow answer counted
        std::vector<std::string> said;    ///< the errors already said in a line (at most said_max)
        std::atomic<bool> read_answered{false};  ///< a read of the remote has answered
        std::atomic<bool> writes_refused{false}; ///< stores were refused (auth) while reads answer
    };
    static constexpr std::size_t said_max = 16;
    static constexpr std::size_t max_foreign_keys = 1u << 16;

    void note_foreign(key const& k) noexcept {
        if (state_->options.replace_unauthentic || state_->options.mode != remote_mode::read_write) return;
        try {
            std::lock_guard<std::mutex> lock(state_->foreign_mutex);
            if (state_->foreign.size() < max_foreign_keys) state_->foreign.insert(k);
        } catch (...) {
        }
    }

    /// Whether a store of `k` must leave the remote's entry alone (it is another
    /// secret's, or garbage); counted, and said once.
    bool keep_foreign(key const& k) noexcept {
        bool say = false;
        {
            std::lock_guard<std::mutex> lock(state_->foreign_mutex);
            if (state_->foreign.empty() || state_->foreign.count(k) == 0) return false;
            say = !state_->foreign_said;
            state_->foreign_said = true;
        }
        if (!is_identity_record_key(k)) ++state_->counts[c_store_skipped_foreign];
        if (say) {
            try {
                log(describe_remote() + " holds entries that do not authenticate under this secret: the secrets "
                                        "seem to differ between machines (" + state_->secret_setting +
                    "). They are kept, not overwritten (" + state_->replace_setting +
                    "=1 replaces them; compile-cache verify --remove --secret-file cleans them)");
            } catch (...) {
            }
        }
        return true;
    }

    static std::uint64_t ns_of(clock::duration d) noexcept {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
    }

    /// PREFIX_REMOTE_BUDGET: a duration, or off (no budget); unset: the call timeout
    /// (PREFIX_REMOTE_TIMEOUT when it is a sane duration, else 1 s). A bad value is one
    /// line and the default.
    static std::chrono::milliseconds budget_from_env(settings_reader const& env) {
        std::chrono::milliseconds fallback{1000};
        if (auto const t = parse_milliseconds(env.value("_REMOTE_TIMEOUT"));
            t && t->count() > 0 && *t <= std::chrono::minutes(10))
            fallback = *t;
        std::string const v = env.value("_REMOTE_BUDGET");
        if (v.empty()) return fallback;
        if (detail::is_off(v)) return std::chrono::milliseconds(0);
        if (auto const b = parse_milliseconds(v)) return *b;
        env.report_value("_REMOTE_BUDGET", v,
                         "is not a duration (milliseconds, or seconds such as 2s) nor off; using the default, " +
                             std::to_string(fallback.count()) + " ms");
        return fallback;
    }

    /// Local's answer to the tier's settings: its from_env (either form), or Local made
    /// from `PREFIX_DIR`.
    static from_env_result<Local> local_from_env(storage_settings const& settings) {
        return detail::storage_from_env<Local>(settings, "_DIR");
    }

    /// Remote's answer to the tier's settings (the tier has checked that a remote may be
    /// used): its from_env (either form), or Remote made from the URL in `PREFIX_REMOTE`.
    static from_env_result<Remote> remote_from_env(storage_settings const& settings) {
        return detail::storage_from_env<Remote>(settings, "_REMOTE");
    }

    std::string describe_remote() const {
        if constexpr (detail::has_remote_describe<Remote>::value) {
            try {
                return "the remote " + std::string(state_->remote->describe());
            } catch (...) {
            }
        }
        return "the remote";
    }

    void log(std::string const& line) const noexcept {
        if (!state_->options.logger) return;
        try {
            state_->options.logger(line);
        } catch (...) {
        }
    }

    /// How a call to the remote was let through.
    enum class admission {
        skipped, ///< not at all: the back-off runs (counted as remote.skipped)
        normal,  ///< the remote was up
        probe,   ///< the first call after a back-off: its failure doubles the back-off
    };

    /// Whether to call the remote now: not while its back-off runs. When it is over,
    /// one call goes through as the probe (the others keep skipping until it answers or fails).
    admission admit() noexcept {
        std::lock_guard<std::mutex> lock(state_->health_mutex);
        if (!state_->down) return admission::normal;
        auto const now = clock::now();
        if (now < state_->retry_at) {
            ++state_->counts[c_skipped];
            return admission::skipped;
        }
        state_->retry_at = now + state_->backoff; // this call is the probe
        return admission::probe;
    }

    /// The remote answered after `took`: it is up again, unless the answer was slow and
    /// the budget of slow answers is spent (then it is skipped as if it had failed).
    void answered(admission a, clock::duration took) noexcept {
        if (state_->options.budget.count() > 0 && took >= state_->options.slow_call) {
            std::unique_lock<std::mutex> lock(state_->health_mutex);
            // Only the part of this wait that no slow answer counted already: wall time.
            auto const end = clock::now();
            auto const from = std::max(end - took, state_->slow_counted_until);
            if (end > from) state_->slow_waited += end - from;
            state_->slow_counted_until = std::max(state_->slow_counted_until, end);
            auto const waited = std::chrono::duration_cast<std::chrono::milliseconds>(state_->slow_waited);
            bool const over = state_->slow_waited > state_->options.budget;
            lock.unlock();
            if (over) {
                went_down(a, [&] {
                    return " answers too slowly (" + std::to_string(waited.count()) + " ms waited for answers of " +
                           std::to_string(state_->options.slow_call.count()) + " ms or more, past the budget of " +
                           std::to_string(state_->options.budget.count()) + " ms)";
                });
                return;
            }
        }
        std::unique_lock<std::mutex> lock(state_->health_mutex);
        if (!state_->down) return;
        state_->down = false;
        auto const away = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - state_->down_since);
        state_->backoff = std::chrono::milliseconds(0);
        lock.unlock();
        try {
            log(describe_remote() + " answers again (after " + std::to_string(away.count()) + " ms); it is used again");
        } catch (...) {
        }
    }

    /// The remote's own text about its last failure ("" when it has none).
    std::string failure_text() const {
        if constexpr (detail::has_last_failure_text<Remote>::value) {
            return std::string(state_->remote->last_failure().text);
        } else {
            return {};
        }
    }

    bool partial(std::error_code const& e) const noexcept {
        if constexpr (detail::has_partial_failure<Remote>::value) {
            try {
                return state_->remote->partial_failure(e);
            } catch (...) {
            }
        }
        (void)e;
        return false;
    }

    /// A call failed with `e`; `write`: a store or a removal.
    void failed(admission a, std::error_code const& e, bool write = false) noexcept {
        remote_error const why = remote_error_of(e);
        ++state_->counts[c_error + static_cast<std::size_t>(why)];
        try {
            std::string const text = failure_text();
            std::string reason = std::string(to_string(why)) + ": " + e.message();
            if (!text.empty()) reason += "; " + text;
            if (partial(e)) {
                std::string where = text.substr(0, text.find(' '));
                if (!where.empty() && where.back() == ':') where.pop_back();
                say_once("partial " + where,
                         describe_remote() + ": a part of it failed (" + reason +
                             "); counted as remote.errors." + to_string(why) + ", the rest of it is still used");
                return;
            }
            if (why == remote_error::auth && write && state_->read_answered) {
                // Reads answer, stores are refused: a user allowed to read only (an ACL
                // without SET). Stores stop; reads go on.
                state_->writes_refused = true;
                say_once("stores refused", describe_remote() + " refuses stores (" + reason +
                                               "); stores to it are skipped from now on, reads go on (give its "
                                               "user the write commands, or set the remote mode read-only)");
                return;
            }
            if (why == remote_error::timeout || why == remote_error::refused || why == remote_error::auth ||
                why == remote_error::protocol) {
                if (why == remote_error::auth)
                    reason += "; check its password (in the URL or the password file) and that its user may run "
                              "the cache's commands";
                went_down(a, [&] { return " failed (" + reason + ")"; });
                return;
            }
            std::string const first_word = text.substr(0, text.find(' '));
            say_once(std::string(to_string(why)) + " " + first_word,
                     describe_remote() + " failed (" + reason + "); counted as remote.errors." + to_string(why) +
                         ", the remote is still used (said once)");
        } catch (...) {
            went_down(a, [] { return std::string(" failed"); });
        }
    }

    /// The remote is not usable: skipped for the back-off. The first failure starts it
    /// (one line: the remote, then what `why()` says); a failed probe doubles it; a call
    /// that was let through before the remote went down changes nothing (it failed in
    /// the same outage: concurrent calls do not each double the period).
    template <class Why>
    void went_down(admission a, Why&& why) noexcept {
        std::unique_lock<std::mutex> lock(state_->health_mutex);
        auto const now = clock::now();
        bool const first = !state_->down;
        if (first) {
            state_->down = true;
            state_->down_since = now;
            state_->backoff = state_->options.backoff_start;
            state_->retry_at = now + state_->backoff;
        } else if (a == admission::probe) {
            state_->backoff = std::min(state_->backoff * 2, state_->options.backoff_max);
            state_->retry_at = now + state_->backoff;
        }
        auto const backoff = state_->backoff;
        lock.unlock();
        if (!first) return;
        try {
            log(describe_remote() + why() + "; it is skipped for " + std::to_string(backoff.count()) +
                " ms, then retried (longer while it keeps failing, up to " +
                std::to_string(state_->options.backoff_max.count()) + " ms)");
        } catch (...) {
        }
    }

    /// One line for an error that does not skip the remote, the first time `what` is seen.
    void say_once(std::string const& what, std::string const& line) {
        {
            std::lock_guard<std::mutex> lock(state_->health_mutex);
            if (state_->said.size() >= said_max ||
                std::find(state_->said.begin(), state_->said.end(), what) != state_->said.end())
                return;
            state_->said.push_back(what);
        }
        log(line);
    }

    std::unique_ptr<state> state_;
};

namespace detail {
/// A tier over a storage with only the deprecated from_env form configures it through
/// that form: basic_cache::from_env tells the host.
template <class Local, class Remote>
struct uses_deprecated_from_env<tiered_storage<Local, Remote>>
    : std::bool_constant<uses_deprecated_from_env<Local>::value || uses_deprecated_from_env<Remote>::value> {};
} // namespace detail

} // namespace compile_cache

#include <compile_cache/storage/impl/tiered_storage.ipp>
