// compile_cache: a Storage in front of another — a local one (a directory) before a
// remote one shared by many machines (a Redis server). Reads try the local storage
// first; an entry found on the remote is copied locally once the cache has checked its
// envelope; stores go to both, the remote's in the background by default. A remote that
// fails (times out, refuses, rejects the credentials, garbles a reply) or answers too
// slowly is skipped for a back-off period, so a dead, stalled or slow server costs a
// bounded delay.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/detection.hpp>
#include <compile_cache/detail/fork_handlers.hpp>
#include <compile_cache/detail/made_once.hpp>
#include <compile_cache/detail/thread_without_signals.hpp>

#include <compile_cache/identity_record.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/concept.hpp>
#include <compile_cache/storage/remote_error.hpp>
#include <compile_cache/storage/tiered_claims.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace compile_cache {

/// What a tier may do with its remote.
enum class remote_mode {
    read_write, ///< read, and write every store
    read_only,  ///< read only: stores stay local (a developer's machine reading what CI wrote)
};

// (remote_error, remote_error_count, to_string and remote_error_of: storage/remote_error.hpp.)

/// How a tier's stores reach its remote.
enum class remote_upload {
    /// A store writes locally and queues the remote write; a worker thread of the tier
    /// sends it (started at the first one), so the host waits for no remote store. A
    /// remote hit's copy to the local storage is made by the same worker.
    background,
    /// Each store waits for its remote write (bounded by the remote's own timeout), and a
    /// remote hit is copied locally before the cache deserializes it: no thread.
    sync,
};


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
    /// In background mode it is also called from the tier's worker thread (a remote that
    /// fails during an upload, the drops at the end): it must be callable from any thread,
    /// as basic_cache's logger already must (cache_options::logger).
    std::function<void(std::string_view)> logger;
    /// Background (default) or sync stores (remote_upload).
    remote_upload upload = remote_upload::background;
    /// Background: the most bytes the queue of uploads and local copies holds (each
    /// counts its entry's size and ~100 bytes); a store whose upload does not fit is not
    /// sent (counted `remote.uploads-dropped`), a remote hit's copy that does not fit is
    /// not made (`remote.copies-dropped`): the host never waits for room.
    std::size_t upload_queue_bytes = std::size_t{64} << 20;
    /// Background: at the tier's end (the cache's destruction, at the latest the
    /// process's exit) the worker gets this long to send what is queued; what is left is
    /// dropped and counted `remote.uploads-dropped`. An upload under way then runs to
    /// its end (bounded by the remote's own timeout).
    std::chrono::milliseconds upload_drain{1000};
    /// Background: how much longer than upload_drain the end waits for an upload under
    /// way (bounded by the remote's own timeout, which may be longer). Past it the tier
    /// is left to the thread (its memory kept, never freed) and the host goes on: the
    /// end never waits without a bound.
    std::chrono::milliseconds upload_end_grace{2000};
    /// The most bytes of prefetched answers (prefetch) held for the reads that follow
    /// (each counts its entry's size and ~100 bytes); answers past it are not kept
    /// (counted `remote.prefetch-dropped`): their reads ask the remote themselves.
    std::size_t prefetch_bytes = std::size_t{64} << 20;
    /// How long a prefetched answer may wait for its read; an older one is not used (the
    /// read asks the remote): a batch read long ago does not hide a newer entry for long.
    std::chrono::milliseconds prefetch_ttl{60000};
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

/// For tests only: called on the thread that has just taken a tier's health lock to admit
/// a remote call, before it goes on (a fork meanwhile leaves the lock held in the child).
inline thread_local void (*tier_health_held_for_testing)() = nullptr;

/// The jobs one tier runs off the host's path, and the thread that runs them: a queue
/// bounded in bytes (push never waits for room: a job that does not fit is refused),
/// a thread started at the first push, a bounded drain at the end. The thread takes
/// the jobs it finds queued together, as one batch (at most the owner's batch_jobs,
/// itself at most batch_max_jobs, and batch_max_bytes of their cost; one job at least),
/// in the order they were pushed. Fork-safe: a child
/// forked while the thread runs has no thread and an empty queue (the jobs are the
/// parent's), and starts its own thread at its first push; whether the thread was in
/// the middle of a job when the process forked is told (the remote's connection may
/// then be mid-call in the child's copy: the child must not use it).
class tier_worker {
public:
    struct job {
        key k;
        std::string bytes;
        unsigned char kind = 0; ///< the tier's own code
    };
    /// Runs a batch of jobs (on the worker's thread), taken from the queue in the order
    /// they were pushed; must not throw.
    using runner = std::function<void(std::vector<job>&)>;
    /// The most jobs, and bytes of jobs (their cost), a batch may take (one job at least).
    static constexpr std::size_t batch_max_jobs = 256;
    static constexpr std::size_t batch_max_bytes = std::size_t{4} << 20;
    /// Counts a job dropped unrun at the end (under the queue's lock); must not throw.
    using dropper = std::function<void(job const&)>;

    /// `batch_jobs`: the most jobs a batch takes (1: one job at a time; at most batch_max_jobs).
    COMPILE_CACHE_DECL tier_worker(std::size_t max_bytes, std::chrono::milliseconds drain, runner run,
                                   dropper drop, std::chrono::milliseconds end_grace = std::chrono::seconds(2),
                                   std::size_t batch_jobs = 1);
    /// stop(), then, when the thread still runs a job, joins it (a job under way runs to
    /// its end): an owner that must not wait without a bound calls stop() first.
    COMPILE_CACHE_DECL ~tier_worker();

    /// Gives the queued jobs the drain time and drops the rest (counted); waits for the
    /// thread to end at most the drain time and `end_grace` more; true when it ended (it
    /// is joined), false when a job still runs (the thread goes on with `*this`, which
    /// must then outlive it: see keep_for_ever). The thread is never started again.
    COMPILE_CACHE_DECL bool stop() noexcept;
    /// Keeps `p` reachable for ever (never freed): what a thread still uses after the
    /// bound of its owner's end, and a forked child's copies of its parent's thread
    /// objects, which leak checkers would otherwise count as leaks.
    COMPILE_CACHE_DECL static void keep_for_ever(void const* p) noexcept;
    tier_worker(tier_worker const&) = delete;
    tier_worker& operator=(tier_worker const&) = delete;

    /// Queues `j`; false (nothing queued, nothing waited for) when it does not fit under
    /// the bound, the worker is ending, or no thread can be started.
    COMPILE_CACHE_DECL bool push(job&& j) noexcept;
    /// Waits until no job is queued or running, at most `within`; true when none is.
    COMPILE_CACHE_DECL bool wait_idle(std::chrono::milliseconds within) noexcept;
    /// Drops the queued jobs of key `k` but those of kind `kept` (uncounted: what comes next
    /// replaces them) and waits, at most `within`, for a batch under way with a job of `k`
    /// to end; true when none is left.
    COMPILE_CACHE_DECL bool cancel(key const& k, unsigned char kept, std::chrono::milliseconds within) noexcept;
    /// Whether the thread has been started in this process.
    COMPILE_CACHE_DECL bool started() const noexcept;
    /// Whether the worker is ending and its drain time is over: a runner that runs a
    /// batch's jobs one after another drops the ones not begun (counted as the dropper does).
    COMPILE_CACHE_DECL bool past_drain() const noexcept;
    /// In a forked child: whether the parent's thread was running a job when the process forked.
    bool forked_mid_job() const noexcept { return forked_mid_job_.load(std::memory_order_relaxed); }
    /// In a forked child: whether the parent's worker still had jobs queued when the process
    /// forked; it goes on with them on the connections the child inherited, so the child
    /// must not use them.
    bool forked_with_work() const noexcept { return forked_with_work_.load(std::memory_order_relaxed); }

    /// How long fork() waits for a job under way to end (see before_fork).
    static constexpr std::chrono::milliseconds fork_wait{200};
    /// The fork handlers (detail/fork_handlers.hpp, before the directory storages'), for every worker alive.
    COMPILE_CACHE_DECL static void before_fork() noexcept;
    COMPILE_CACHE_DECL static void after_fork_in_parent() noexcept;
    COMPILE_CACHE_DECL static void after_fork_in_child() noexcept;
    /// At the process's exit (atexit, installed with the first worker): every worker
    /// alive, a cache the host never destroyed included, gets its drain time, then its
    /// thread ends (stop): none runs a job while static objects are destroyed.
    COMPILE_CACHE_DECL static void at_exit() noexcept;

private:
    COMPILE_CACHE_DECL void work() noexcept;
    static std::size_t cost(job const& j) noexcept { return j.bytes.size() + sizeof(job) + 64; }

    std::size_t const max_bytes_;
    std::chrono::milliseconds const drain_;
    std::chrono::milliseconds const end_grace_;
    std::size_t const batch_jobs_;
    runner run_;
    dropper drop_;
    mutable std::mutex mutex_;
    // Held by pointer: a child forked while the thread waited on them gets new ones.
    std::unique_ptr<std::condition_variable> wake_ = std::make_unique<std::condition_variable>();
    std::unique_ptr<std::condition_variable> idle_ = std::make_unique<std::condition_variable>();
    std::deque<job> queue_;
    std::size_t queued_bytes_ = 0; ///< the cost of the queued jobs and of the running one
    bool running_ = false;         ///< a batch of jobs is under way
    std::vector<key> running_keys_; ///< their keys
    /// The batch the thread runs (the worker's, not the thread's stack: a child forked
    /// mid-batch holds it through the worker, as it holds the queue).
    std::vector<job> batch_;
    bool waiting_ = false;         ///< the thread waits for a job (a push wakes it)
    bool ending_ = false;
    bool finished_ = false;       ///< the thread has left its loop (it only returns after)
    bool fork_pending_ = false;   ///< a fork() is about to happen: the thread takes no new job
    std::chrono::steady_clock::time_point drain_until_{};
    std::unique_ptr<std::thread> thread_;
    std::atomic<bool> forked_mid_job_{false};
    std::atomic<bool> forked_with_work_{false};
};

} // namespace detail

/// `Local` before `Remote`, both Storages. Either may be absent: without a remote it
/// is the local storage alone (same reads, same writes, no counter of its own);
/// without a local one (remote only) nothing is kept on this machine.
///
/// - `read`: the local storage; `found` and `too_large` are its answer. Otherwise
///   (absent, or a local error) the remote, unless it is skipped (back-off). A remote
///   error is counted (remote_error) and the read answers as the local storage did. An
///   answer from the remote says so in its `origin` (tiered_storage::from_remote).
///   `read_remote` is the remote's part alone.
/// - `entry_checked` (called by basic_cache after it checked an entry's envelope, with
///   the read's answer): an entry the remote returned that checked `sound` is counted as
///   a remote hit and written to the local storage (so the next process reads it
///   locally and sends nothing): by the worker in background mode, after the cache has
///   the entry (the hit waits for its GET alone), before the cache goes on in sync
///   mode. One that is damaged or unauthenticated is counted as such, never copied.
///   The kernel's identity record comes along (explain.hpp): an identity record read
///   from the remote that checked `sound` is copied too (not counted as a hit), and a
///   copied kernel entry brings the record under its name and origin file when there
///   is none locally, so that misses and `compile-cache explain` here find what the
///   fleet recorded (one remote read per entry copied, by the worker in background mode).
/// - `write`: the local storage, then, in read_write mode, the remote: queued for the
///   worker in background mode (tier_options::upload; a full queue drops it, counted),
///   sent before the answer in sync mode (each remote call is bounded by the remote's
///   own timeout: the host waits no longer). The answer is the local storage's
///   (remote-only: the remote's, or in background mode whether it was queued); a remote
///   failure is counted. An entry this process found unauthentic on the remote is not
///   overwritten there (tier_options::replace_unauthentic).
/// - Identity records (explain.hpp) are counted apart from entries: `remote.record-*`.
/// - `remove`: both (the remote only in read_write mode), at once.
/// - A timeout, a refused connection, refused credentials or permissions (auth) or a
///   reply that is not valid (protocol) make the remote skipped for
///   tier_options::backoff_start, doubling with each failed probe after it, up to
///   backoff_max; so do slow answers once their waits pass tier_options::budget. One
///   log line when it goes away, one when it answers again. Other errors (a server out
///   of memory...) are counted, and said in one line the first time; an error the
///   remote calls partial (`partial_failure(e)`: one node of a cluster) is counted and
///   said once, and the remote is still used. A store refused for `auth` while reads
///   answer (a user allowed to read only) stops the stores, with one line; reads go on.
/// - Background mode, a remote with `write_many` (redis_storage, http_storage): the
///   worker sends the uploads it finds queued in one batch write (counted
///   `remote.upload-batches`, each upload as one sent alone), then the claims' releases
///   and the copies among its jobs; without it, one write per upload, one job at a time.
/// - Background mode: no thread until the first upload or copy; at the tier's end the
///   queue gets tier_options::upload_drain, then what is left is dropped (counted). A
///   process forked after a store has no worker and no queue of its own (the parent's
///   uploads are the parent's); it starts its own worker at its first upload, and does
///   not use the remote at all if the parent's worker was mid-call when it forked (the
///   copied connection is then mid-call). A remote with `reconnects_after_fork`
///   (redis_storage, http_storage) is used by the child with connections of its own;
///   another is not used by a child forked while the parent's worker still had uploads
///   queued. The
///   logger may be called from the worker.
///
/// Thread-safe when both storages are. Move-only. A default-constructed tier is
/// disabled: reads are absent, writes fail with invalid_argument.
template <class Local, class Remote>
class tiered_storage {
public:
    using local_type = Local;
    using remote_type = Remote;

    /// The `origin` of a read's answer that came from the remote (0: the local storage).
    static constexpr std::uint32_t from_remote = 1;

    tiered_storage() = default;
    /// The local storage alone: behaves exactly as `local`.
    explicit tiered_storage(Local local) : state_(new state) { state_->local.emplace(std::move(local)); }
    /// `local` in front of `remote`.
    tiered_storage(Local local, Remote remote, tier_options options = {}) : state_(new state) {
        state_->local.emplace(std::move(local));
        state_->remote.emplace(std::move(remote));
        state_->options = std::move(options);
        state_->start();
    }
    /// The remote alone: nothing kept locally.
    static tiered_storage remote_only(Remote remote, tier_options options = {}) {
        tiered_storage t;
        t.state_.reset(new state);
        t.state_->remote.emplace(std::move(remote));
        t.state_->options = std::move(options);
        t.state_->start();
        return t;
    }

    tiered_storage(tiered_storage&&) noexcept = default;
    tiered_storage& operator=(tiered_storage&&) noexcept = default;

    /// The earlier form, for a host that calls it: the new one, with the settings the reader
    /// stands for (see detail::settings_reader_access::settings_of).
    template <class L = Local, class R = Remote,
              std::enable_if_t<detail::configurable_from_env<L>::value && detail::configurable_from_env<R>::value,
                               int> = 0>
    COMPILE_CACHE_DEPRECATED_STORAGE_FROM_ENV static std::optional<tiered_storage> from_env(settings_reader& env) {
        return detail::from_env_of_reader<tiered_storage>(env);
    }
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
        // The cache's own settings the local storage keeps (a directory's `compress`) are
        // passed on whatever the tier answers with.
        std::vector<kept_cache_setting> kept;
        from_env_result<tiered_storage> answer = tier_from_env(settings, kept);
        if (answer)
            for (kept_cache_setting& k : kept) answer.keep_cache_setting(std::move(k));
        return answer;
    }

private:
    /// from_env's answer; `kept`: the cache's settings the local storage kept.
    template <class L = Local, class R = Remote>
    static from_env_result<tiered_storage> tier_from_env(storage_settings const& settings,
                                                         std::vector<kept_cache_setting>& kept) {
        using result = from_env_result<tiered_storage>;
        settings_reader const& env = settings.env;
        if (env.is_off("_REMOTE")) {
            from_env_result<Local> local = local_from_env(settings);
            if (!local) return result::off(local.why_off()); // (empty: not configured)
            kept = local.kept_cache_settings();
            return result(tiered_storage(*std::move(local)));
        }
        if (!settings.cache_off.empty()) return result::off(settings.cache_off);
        std::optional<bool> const only = parse_switch(env.value("_REMOTE_ONLY"));
        std::optional<Local> local;
        if (!only.value_or(false)) {
            from_env_result<Local> l = local_from_env(settings);
            if (!l && !l.why_off().empty()) return result::off(l.why_off()); // configured, and declined
            kept = l.kept_cache_settings();
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
        upload_from_env(env, options);
        // Signed entries (cache_options::signatures): trusted keys without a signing key
        // can check the remote's entries but not sign any: the remote is read-only here.
        bool const verify_only = !env.value("_TRUSTED_KEYS_FILE").empty() && env.value("_SIGNING_KEY_FILE").empty();
        if (verify_only) options.mode = remote_mode::read_only;
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
        if (verify_only && settings.logger)
            settings.logger(env.name("_TRUSTED_KEYS_FILE") + " is set without " + env.name("_SIGNING_KEY_FILE") + ": " +
                            t.state_->describe_remote() +
                            " is used read-only (its entries are loaded when a trusted key signed them; stores "
                            "stay on this machine)");
        t.state_->replace_setting = env.name("_REMOTE_REPLACE_UNAUTHENTIC");
        return result(std::move(t));
    }

public:
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
        for (auto const& u : upload_environment_settings(prefix)) s.push_back(u);
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
    compile_cache::remote_upload upload() const noexcept { return state_->options.upload; }
    /// Whether the remote is skipped now (it failed, and its back-off is not over).
    bool remote_skipped() const {
        if (!has_remote()) return true;
        auto const lock = state_->health_lock();
        return !lock.owns_lock() || (state_->down && clock::now() < state_->retry_at);
    }
    /// Background mode: waits until the queued uploads and copies are done, at most
    /// `within`; true when nothing is left (and always in sync mode). For a host that
    /// wants its uploads out at a point of its own (before it forks, or a long pause).
    /// While uploads are still under way, the local storage's held writes (its
    /// `flush_deferred`, when it has one: directory_storage's identity records) are made
    /// first, on this thread, so that the two overlap instead of following each other.
    bool wait_for_uploads(std::chrono::milliseconds within) noexcept {
        if (!state_ || !state_->worker) return true;
        auto const deadline = std::chrono::steady_clock::now() + within;
        // (Only a wait long enough to pay for it makes the held writes meanwhile: a poll
        // with no time to spare does no disk work.)
        if constexpr (detail::is_detected<detail::flush_deferred_t, Local>::value) {
            if (within >= std::chrono::milliseconds(10) && state_->local && !state_->forked_mid_job() &&
                !state_->worker->wait_idle(std::chrono::milliseconds(0))) {
                try {
                    (void)state_->local->flush_deferred();
                } catch (...) { // (a policy's failure: made at its own end, or not at all)
                }
            }
        }
        auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        return state_->worker->wait_idle(std::max(left, std::chrono::milliseconds(0)));
    }
    /// Whether the background worker's thread has been started (by an upload or a copy).
    bool worker_started() const noexcept { return state_ && state_->worker && state_->worker->started(); }

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        if (!state_ || k.empty()) { // (the empty key names no entry: key.hpp)
            out.clear();
            return {read_status::absent, {}};
        }
        read_result answer{read_status::absent, {}};
        if (state_->forked_mid_job()) { // a child forked while the worker held the storages' locks
            out.clear();
            return answer;
        }
        if (state_->local) {
            answer = state_->local_read(k, out, max_size);
            answer.origin = 0;
            if (answer.status == read_status::found || answer.status == read_status::too_large) return answer;
        }
        return read_from_remote(k, out, max_size, answer);
    }

    /// The remote's answer alone, the local storage not read: as `read` answers when the
    /// local storage has no entry (absent when there is no remote, or it is skipped or
    /// fails: the failure counted as `read` counts it).
    /// basic_cache reads the remote so when the local copy of a signed entry names a
    /// signer no longer trusted: after a rotation, the remote has the kernel signed anew.
    read_result read_remote(key const& k, std::string& out, std::size_t max_size) noexcept {
        read_result const absent{read_status::absent, {}};
        if (!state_ || state_->forked_mid_job()) {
            out.clear();
            return absent;
        }
        return read_from_remote(k, out, max_size, absent);
    }

private:
    // The remote's answer to a read, or `answer` (the local storage's) when the remote has
    // no entry, fails or is skipped.
    read_result read_from_remote(key const& k, std::string& out, std::size_t max_size,
                                 read_result const& answer) noexcept {
        if (!state_->remote || !state_->remote_usable()) {
            out.clear();
            return answer;
        }
        read_result r;
        if (state_->take_prefetched(k, out, max_size, r)) {
            // The batch's answer (prefetch): counted as the remote's read would be.
            r.origin = from_remote;
            switch (r.status) {
            case read_status::found: state_->counts[c_bytes_read] += out.size(); return r;
            case read_status::too_large:
                ++state_->counts[c_error + static_cast<std::size_t>(remote_error::too_large)];
                return r;
            default: ++state_->counts[is_identity_record_key(k) ? c_record_misses : c_misses]; break;
            }
            out.clear();
            return answer;
        }
        admission const a = state_->admit();
        if (a == admission::skipped) {
            out.clear();
            return answer;
        }
        auto const start = clock::now();
        try {
            r = state_->remote->read(k, out, max_size);
        } catch (...) {
            r = {read_status::error, std::make_error_code(std::errc::io_error)};
        }
        auto const took = clock::now() - start;
        state_->counts[c_read_ns] += ns_of(took);
        r.origin = from_remote;
        switch (r.status) {
        case read_status::found:
            state_->read_answered = true;
            state_->answered(a, took);
            state_->counts[c_bytes_read] += out.size();
            return r;
        case read_status::absent:
            state_->read_answered = true;
            state_->answered(a, took);
            ++state_->counts[is_identity_record_key(k) ? c_record_misses : c_misses];
            break;
        case read_status::too_large:
            state_->answered(a, took);
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::too_large)];
            return r;
        case read_status::error: state_->failed(a, r.error); break;
        }
        out.clear();
        return answer;
    }

public:
    /// Signed entries (basic_cache calls it when cache_options::signatures is set): what a
    /// store uploads is `sealer(k, entry, out)`'s `out`; false: nothing is uploaded. The
    /// local storage keeps the entry as given. Call before any write.
    /// `can_seal` false: the sealer refuses every entry (trusted keys, no signing key), so
    /// this process uploads nothing, and so takes no claim on the remote either (the
    /// fleet would wait for an entry it never sends).
    void set_remote_sealer(std::function<bool(key const&, std::string_view, std::string&)> sealer,
                           bool can_seal = true) {
        if (!state_) return;
        state_->remote_sealer = std::move(sealer);
        state_->remote_can_seal = can_seal;
    }

    /// Signed entries (basic_cache calls it when cache_options::signatures is set): what the
    /// local storage keeps of an identity record this tier copies from the remote beside
    /// an entry it copied is `resealer(record_key, record, out)`'s `out` (verified, and
    /// sealed in the local mode); false: the record is not copied. Call before any read.
    void set_record_resealer(std::function<bool(key const&, std::string_view, std::string&)> resealer) {
        if (state_) state_->record_resealer = std::move(resealer);
    }

    std::error_code write(key const& k, std::string_view bytes) noexcept { return write_through(k, bytes, false); }

    /// Present when the local storage has it (directory_storage): the cache's identity
    /// records are written through it. The local storage's write_deferred (made later,
    /// batched), then the remote's write as `write` sends it (queued in background mode).
    template <class L = Local, std::enable_if_t<detail::has_write_deferred<L>::value, int> = 0>
    std::error_code write_deferred(key const& k, std::string_view bytes) noexcept {
        return write_through(k, bytes, true);
    }

private:
    std::error_code write_through(key const& k, std::string_view bytes, bool deferred) noexcept {
        if (!state_ || k.empty()) return std::make_error_code(std::errc::invalid_argument);
        if (state_->remote_sealer && state_->remote && state_->options.mode == remote_mode::read_write) {
            std::string sealed;
            bool ok = false;
            try {
                ok = state_->remote_sealer(k, bytes, sealed);
            } catch (...) {
            }
            if (!ok) {
                if (!state_->local) return std::make_error_code(std::errc::operation_not_permitted);
                if (state_->forked_mid_job()) return std::make_error_code(std::errc::resource_unavailable_try_again);
                return deferred ? state_->local_write_deferred(k, bytes) : state_->local_write(k, bytes);
            }
            return write_sealed(k, bytes, sealed, deferred);
        }
        return write_sealed(k, bytes, bytes, deferred);
    }

    // write_through(): `bytes` to the local storage (deferred or not), `upload` to the remote.
    std::error_code write_sealed(key const& k, std::string_view bytes, std::string_view upload, bool deferred) noexcept {
        if (state_->forked_mid_job()) return std::make_error_code(std::errc::resource_unavailable_try_again);
        state_->forget_prefetched(k);
        std::error_code answer;
        if (state_->local) answer = deferred ? state_->local_write_deferred(k, bytes) : state_->local_write(k, bytes);
        else if (state_->options.mode != remote_mode::read_write)
            return std::make_error_code(std::errc::read_only_file_system); // remote-only and read-only: nowhere
        if (!state_->remote || state_->options.mode != remote_mode::read_write) return answer;
        if (!state_->remote_usable()) {
            ++state_->counts[c_skipped];
            return state_->local ? answer : std::make_error_code(std::errc::resource_unavailable_try_again);
        }
        if (state_->worker) {
            // Background: checked again when sent; refused here only when already known.
            if (state_->keep_foreign(k)) return state_->local ? answer : std::make_error_code(std::errc::file_exists);
            bool queued = false;
            try {
                queued = state_->worker->push({k, std::string(upload), job_upload});
            } catch (...) {
            }
            ++state_->counts[queued ? c_uploads_queued : c_uploads_dropped];
            if (state_->local) return answer;
            return queued ? std::error_code() : std::make_error_code(std::errc::no_buffer_space);
        }
        std::error_code const e = state_->send(k, upload);
        state_->forget_prefetched(k); // (a batch that read the server before the upload landed)
        return state_->local ? answer : e;
    }

public:
    /// Single flight (tiered_claims.hpp): the local storage's claim (the machine's
    /// processes), then the remote's (the fleet's) when the remote is read-write and up.
    /// A claim of `k` that this process's prefetch took on the remote (prefetch with a
    /// claim_request) is this miss's: the remote is not asked.
    /// A key whose claim another process held at the prefetch, claimed now, says
    /// `entry_seen`: that process may have stored the entry and released its claim
    /// between this miss's read and this claim, so the cache reads once more.
    claim_answer try_claim(key const& k, claim_request const& request) noexcept {
        if (!state_ || state_->forked_mid_job()) return {};
        // (A key whose remote claim the parent of this forked process took ahead: the local
        // claim alone, the remote one being the parent's, which would only be waited on.)
        bool const remote = remote_claims_ok() && !state_->held_by_parent(k);
        claim_answer answer =
            detail::tier_try_claim(state_.get(), state_->local ? &*state_->local : static_cast<Local*>(nullptr),
                                   remote ? &*state_->remote : static_cast<Remote*>(nullptr), k, request,
                                   [&](key const& c) noexcept { return state_->take_preclaimed(c); });
        if (answer.state == claim_state::claimed && state_->was_contended(k)) answer.entry_seen = true;
        return answer;
    }
    /// Releases this process's claims of `k`: the local one at once, the remote one (when
    /// this thread took it) after the uploads queued before it (background mode), so that
    /// the fleet's waiters find the entry when the claim goes; a remote skipped for its
    /// failures keeps it until its expiry.
    void release_claim(key const& k) noexcept {
        if (!state_ || state_->forked_mid_job()) return;
        if constexpr (detail::has_claims<Local>::value)
            if (state_->local) state_->local->release_claim(k);
        if constexpr (detail::has_claims<Remote>::value) {
            if (!detail::forget_remote_claim(state_.get(), k)) return; // none taken there
            if (!state_->remote || !state_->remote_usable() || remote_skipped()) return; // (left to its expiry)
            if (state_->worker) {
                try {
                    if (state_->worker->push({k, std::string(), job_release})) return;
                } catch (...) {
                }
            }
            state_->remote->release_claim(k);
        }
    }

    /// A waiting miss's pause between polls (single_flight.hpp): the local storage's
    /// wait_for_change (an entry another process of this machine stores arrives there
    /// first), at most `timeout`; what arrives on the remote only is seen at the next poll.
    /// Without a local storage that has one: a sleep of `timeout`.
    void wait_for_change(key const& k, std::chrono::nanoseconds timeout) const noexcept {
        detail::wait_for_change_or_sleep(state_ && state_->local ? &*state_->local : nullptr, k, timeout);
    }

    std::error_code remove(key const& k) noexcept {
        if (!state_ || k.empty()) return {};
        if (state_->forked_mid_job()) return std::make_error_code(std::errc::resource_unavailable_try_again);
        // What the worker would still write for k (an upload, a copy) must not bring it back;
        // a queued release of k's remote claim still goes (the fleet's misses wait on it).
        if (state_->worker) (void)state_->worker->cancel(k, job_release, std::chrono::seconds(10));
        state_->forget_prefetched(k);
        std::error_code answer;
        if (state_->local) answer = state_->local_remove(k);
        admission const a = state_->remote && state_->options.mode == remote_mode::read_write &&
                                    !state_->writes_refused && state_->remote_usable()
                                ? state_->admit()
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
                state_->failed(a, e, true);
            else
                state_->answered(a, clock::now() - start);
            if (!state_->local) answer = e;
            // Again: a batch that began after the first forget and read the server before
            // the removal reached it holds the entry, or will.
            state_->forget_prefetched(k);
        }
        return answer;
    }

    /// Reads ahead, in one batch read of the remote (its `read_many`; a remote without
    /// one: nothing), the entries of `keys` that the local storage does not have, for the
    /// reads that follow (basic_cache::prefetch). Their answers (found, absent,
    /// too_large; not errors) wait in a memory area bounded by tier_options::prefetch_bytes,
    /// each used once, by the first read of its key within tier_options::prefetch_ttl,
    /// which then answers as a remote read would (and the cache checks the entry as any
    /// other); the worker's copy of a record uses them too. Not while the remote is
    /// skipped. Counted `remote.prefetch-batches`, `remote.prefetch-keys`. Bounded as any
    /// remote call (the batch by the remote's own timeout; see the claims' below).
    void prefetch(std::vector<key> const& keys, std::size_t max_size) noexcept {
        prefetch(keys, max_size, claim_request{claim_scope::none, std::chrono::milliseconds(0)});
    }

    /// prefetch, and single flight's claims taken ahead: when `claims.scope` has `remote`
    /// and this process may claim on the remote now (as try_claim: read-write, up, able to
    /// seal), the remote claims of the entries the batch found absent (not the identity
    /// records') are taken in one more batch (the remote's `try_claim_many`; a remote
    /// without one: none), expiring after `claims.expiry`. Each claim taken waits for the
    /// miss of its key, whose try_claim then takes it without asking the remote, within
    /// half its expiry (later: released, and the miss asks as without it); a key whose
    /// claim another process held is asked at its miss as always, and its batch answer is
    /// dropped (that process is compiling it: the miss reads the remote afresh, and finds
    /// the entry once it is stored, instead of compiling it again). The claims never used
    /// are released at the tier's end (as release_claim does, within the upload drain
    /// time), else left to their expiry; those held past half their expiry are released by
    /// the worker (in sync mode, or when its queue is full: here, before the batch, one
    /// more remote call). At most max_preclaims held. Bounded by the remote's one timeout
    /// with a remote that has read_many_claiming and does it within one (redis_storage);
    /// otherwise read_many's, then try_claim_many's. Counted `remote.claims-prefetched`,
    /// `remote.claims-prefetched-unused`.
    void prefetch(std::vector<key> const& keys, std::size_t max_size, claim_request const& claims) noexcept {
        if (!state_ || !state_->remote || state_->forked_mid_job() || !state_->remote_usable()) return;
        if constexpr (detail::has_read_many<Remote>::value) {
            bool const claim = includes(claims.scope, claim_scope::remote) && claims.expiry.count() > 0 &&
                               remote_claims_ok();
            state_->prefetch(keys, max_size, claim ? &claims : nullptr);
        } else {
            (void)keys, (void)max_size, (void)claims;
        }
    }

    /// The most claims prefetch holds ahead (the rest are not taken ahead).
    static constexpr std::size_t max_preclaims = 4096;

    /// Called by basic_cache after it checked an entry this storage's read returned
    /// `found`, with that read's answer (see docs/policies.md). An entry from the remote
    /// (`answer.origin == from_remote`) that is sound is copied to the local storage; a
    /// damaged or unauthenticated one is counted against the remote.
    void entry_checked(key const& k, std::string_view entry, read_result const& answer, entry_check check) noexcept {
        if (!state_ || !state_->remote || answer.origin != from_remote || answer.status != read_status::found ||
            state_->forked_mid_job())
            return;
        if (is_identity_record_key(k)) {
            // An identity record is no entry: counted apart, and its errors not at all.
            if (check == entry_check::sound) {
                ++state_->counts[c_record_hits];
                if (state_->local) state_->copy_locally(k, entry);
            } else if (check == entry_check::unauthenticated) {
                state_->note_foreign(k);
            }
            return;
        }
        switch (check) {
        case entry_check::sound:
            ++state_->counts[c_hits];
            // A failure here is the next run's miss; a copied entry brings its record along.
            if (state_->local) state_->copy_locally(k, entry);
            break;
        case entry_check::damaged:
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::corrupt)];
            break;
        case entry_check::unauthenticated:
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::unauthenticated)];
            state_->note_foreign(k);
            break;
        case entry_check::too_large:
            ++state_->counts[c_error + static_cast<std::size_t>(remote_error::too_large)];
            break;
        case entry_check::foreign_version: ++state_->counts[c_misses]; break;
        }
    }

    /// The remote's counters, by name (`remote.hits`, `remote.misses`, `remote.stores`,
    /// `remote.errors.<remote_error>`, `remote.skipped`, `remote.bytes-read`,
    /// `remote.bytes-written`, `remote.read-ns`, `remote.write-ns`,
    /// `remote.store-skipped.foreign`, the identity records' own `remote.record-hits`,
    /// `remote.record-misses`, `remote.record-stores`, and the background worker's
    /// `remote.uploads-queued`, `remote.uploads-sent` (entries and records stored by
    /// it), `remote.uploads-dropped` (a full queue, or left at the end) and
    /// `remote.copies-dropped` (remote hits not copied locally: a full queue),
    /// `remote.upload-batches` (write_many calls: uploads sent together)), and
    /// prefetch's `remote.prefetch-batches`, `remote.prefetch-keys` (keys asked) and
    /// `remote.prefetch-dropped` (answers past tier_options::prefetch_bytes), and the
    /// single-flight claims prefetch took ahead, `remote.claims-prefetched`, and those
    /// released unused, `remote.claims-prefetched-unused` (their key never missed, or
    /// missed past half their expiry); empty without a remote. basic_cache adds them to its statistics.
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
            if (state_ && state_->local && !state_->forked_mid_job()) {
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
        auto const lock = state_->health_lock();
        if (lock.owns_lock()) state_->options.logger = std::move(logger);
    }

private:
    using clock = std::chrono::steady_clock;

    /// Whether this process may take claims on the remote now: read-write, able to seal
    /// what it uploads, usable here, not skipped.
    bool remote_claims_ok() const {
        return state_->remote && state_->options.mode == remote_mode::read_write && state_->remote_can_seal &&
               state_->remote_usable() && !remote_skipped();
    }

    /// How a call to the remote was let through.
    enum class admission {
        skipped, ///< not at all: the back-off runs (counted as remote.skipped)
        normal,  ///< the remote was up
        probe,   ///< the first call after a back-off: its failure doubles the back-off
    };

    /// The worker's jobs (detail::tier_worker::job::kind).
    static constexpr unsigned char job_upload = 0; ///< a remote write
    static constexpr unsigned char job_copy = 1;   ///< a remote hit's local copy (and its record's)
    static constexpr unsigned char job_release = 2; ///< a remote claim's release (after the uploads before it)

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
        c_uploads_queued,
        c_uploads_sent,
        c_uploads_dropped,
        c_copies_dropped,
        c_prefetch_batches,
        c_prefetch_keys,
        c_prefetch_dropped,
        c_upload_batches,
        c_claims_prefetched,
        c_claims_prefetched_unused,
        c_count
    };
    static std::array<std::string, c_count> const& count_names() {
        // Never destroyed: a cache of static storage duration reports at exit too.
        static std::array<std::string, c_count> const& names = *new std::array<std::string, c_count>([] {
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
            n[c_uploads_queued] = "remote.uploads-queued";
            n[c_uploads_sent] = "remote.uploads-sent";
            n[c_uploads_dropped] = "remote.uploads-dropped";
            n[c_copies_dropped] = "remote.copies-dropped";
            n[c_prefetch_batches] = "remote.prefetch-batches";
            n[c_prefetch_keys] = "remote.prefetch-keys";
            n[c_prefetch_dropped] = "remote.prefetch-dropped";
            n[c_upload_batches] = "remote.upload-batches";
            n[c_claims_prefetched] = "remote.claims-prefetched";
            n[c_claims_prefetched_unused] = "remote.claims-prefetched-unused";
            return n;
        }());
        return names;
    }

    static constexpr std::size_t said_max = 16;
    static constexpr std::size_t max_foreign_keys = 1u << 16;

    static std::uint64_t ns_of(clock::duration d) noexcept {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
    }

    /// Everything a tier holds, at a fixed address (the worker's thread works on it while
    /// the tier object itself may be moved), with what both the host's calls and the
    /// worker's jobs do.
    struct state {
        std::optional<Local> local;
        std::optional<Remote> remote;
        tier_options options;
        std::array<std::atomic<std::uint64_t>, c_count> counts{};
        /// Health, prefetch, preclaim and foreign locks: held for a few loads and stores (and
        /// a map's changes), never across a call or the host's code, but a process forked
        /// while another thread held one has it held for ever. So each is taken within
        /// lock_wait; a lock not had by then is lost for good (`health_lost`, ...): the
        /// remote is skipped, the prefetched answers and batches are not used, no claim is
        /// taken ahead (those held ahead are left to their expiry), no remote entry is kept
        /// as foreign (stores overwrite it, as past max_foreign_keys), from then on.
        static constexpr std::chrono::milliseconds lock_wait{1000};
        mutable std::timed_mutex health_mutex;
        mutable std::atomic<bool> health_lost{false};
        std::atomic<bool> prefetch_lost{false};
        /// health_mutex within lock_wait (not owned when lost).
        std::unique_lock<std::timed_mutex> health_lock() const noexcept {
            return bounded_lock(health_mutex, health_lost);
        }
        /// prefetch_mutex within lock_wait (not owned when lost).
        std::unique_lock<std::timed_mutex> prefetch_lock() noexcept {
            return bounded_lock(prefetch_mutex, prefetch_lost);
        }
        std::atomic<bool> preclaim_lost{false};
        std::atomic<bool> foreign_lost{false};
        /// preclaim_mutex within lock_wait (not owned when lost).
        std::unique_lock<std::timed_mutex> preclaim_lock() noexcept {
            return bounded_lock(preclaim_mutex, preclaim_lost);
        }
        /// foreign_mutex within lock_wait (not owned when lost).
        std::unique_lock<std::timed_mutex> foreign_lock() noexcept {
            return bounded_lock(foreign_mutex, foreign_lost);
        }
        static std::unique_lock<std::timed_mutex> bounded_lock(std::timed_mutex& m, std::atomic<bool>& lost) noexcept {
            std::unique_lock<std::timed_mutex> lock(m, std::defer_lock);
            if (lost.load(std::memory_order_relaxed)) return lock;
            try {
                if (!lock.try_lock_for(lock_wait)) lost.store(true, std::memory_order_relaxed);
                // Lost by another thread meanwhile: a change it could not make (a prefetched
                // answer a store could not drop) must not be used now either.
                if (lock.owns_lock() && lost.load()) lock.unlock();
            } catch (...) {
            }
            return lock;
        }
        bool down = false;
        clock::time_point down_since{};
        clock::time_point retry_at{};
        std::chrono::milliseconds backoff{0};
        /// Keys whose remote entry this process read and found not authentic (at most
        /// max_foreign_keys; past that, stores overwrite them as before).
        std::timed_mutex foreign_mutex; ///< (taken by foreign_lock)
        std::unordered_set<key> foreign;
        bool foreign_said = false;
        std::string secret_setting = "the secret file", replace_setting = "PREFIX_REMOTE_REPLACE_UNAUTHENTIC";
        /// Signed entries: makes a store's upload from its local entry (set_remote_sealer).
        std::function<bool(key const&, std::string_view, std::string&)> remote_sealer;
        bool remote_can_seal = true; ///< set_remote_sealer's can_seal
        /// Signed entries: makes the local copy of a remote identity record (set_record_resealer).
        std::function<bool(key const&, std::string_view, std::string&)> record_resealer;
        clock::duration slow_waited{0};   ///< the waits of slow answers so far (see tier_options::budget)
        clock::time_point slow_counted_until{}; ///< the end of the last slow answer counted
        std::vector<std::string> said;    ///< the errors already said in a line (at most said_max)
        std::atomic<bool> read_answered{false};  ///< a read of the remote has answered
        std::atomic<bool> writes_refused{false}; ///< stores were refused (auth) while reads answer
        /// Background mode: the worker (no thread before its first job). Last, so that it
        /// ends (drains, joins) before anything it uses is destroyed.
        std::unique_ptr<detail::tier_worker> worker;
        std::atomic<std::uint64_t> dropped_at_end{0}; ///< uploads left when the drain time ran out
        /// prefetch's answers, each waiting for the first read of its key.
        struct prefetched_answer {
            read_status status = read_status::absent;
            std::string bytes;
            clock::time_point at{};
        };
        std::timed_mutex prefetch_mutex; ///< (taken by prefetch_lock)
        std::unordered_map<key, prefetched_answer> prefetched;
        std::size_t prefetched_bytes = 0;
        /// What a batch in flight must not keep: a key stored or removed after the batch began
        /// (forget_prefetched) has a stale answer in it. Forgets are numbered; each batch
        /// running keeps the number at its start (`batch_starts`), and `forgotten` the number
        /// of each key's last forget made while one ran (pruned to what a running batch can
        /// need). Past max_forgotten keys, the batches running then keep nothing
        /// (`forgot_all_at`). This process's only: a forked child drops its parent's.
        std::uint64_t forgets = 0;
        std::multiset<std::uint64_t> batch_starts;
        std::unordered_map<key, std::uint64_t> forgotten;
        std::uint64_t forgot_all_at = 0;
        ::pid_t prefetch_pid = ::getpid();
        static constexpr std::size_t max_forgotten = 4096;
        /// The remote claims prefetch took ahead (single flight), each waiting for its key's
        /// miss (take_preclaimed) or the tier's end (release_preclaims); this process's only
        /// (`preclaim_pid`: a forked child holds none of its parent's, and remembers them in
        /// `parents`: its misses of those keys take no remote claim, which would only find
        /// the parent's and wait on it).
        struct preclaim {
            clock::time_point taken{};
            std::chrono::milliseconds expiry{0};
            /// The batch gave no answer for it (a timeout, a failure): the server may hold
            /// this process's claim all the same, so its miss releases it first (a
            /// compare-and-delete, harmless when it is not there) and then claims as always;
            /// never used as taken.
            bool unknown = false;
        };
        std::timed_mutex preclaim_mutex; ///< (taken by preclaim_lock)
        std::unordered_map<key, preclaim> preclaimed;
        ::pid_t preclaim_pid = 0;
        std::unordered_set<key> parents; ///< in a forked child: the claims its parent held ahead
        /// The keys whose claims another process held at the prefetch (at most max_preclaims).
        std::unordered_set<key> contended;

        state() = default;
        state(state const&) = delete;
        state& operator=(state const&) = delete;
        /// Drains the worker's queue (tier_options::upload_drain); what is left is dropped,
        /// counted, and said in one line.
        ~state() {
            if (!worker) return;
            worker.reset();
            if (std::uint64_t const n = dropped_at_end.load()) {
                try {
                    log(std::to_string(n) + (n == 1 ? " upload" : " uploads") + " to " + describe_remote() +
                        " still waited at the end, after " + std::to_string(options.upload_drain.count()) +
                        " ms of drain time: dropped (counted remote.uploads-dropped)");
                } catch (...) {
                }
            }
        }

        /// Makes the worker in background mode (it starts no thread yet).
        void start() {
            if (!remote || options.upload != remote_upload::background) return;
            worker = std::make_unique<detail::tier_worker>(
                options.upload_queue_bytes, options.upload_drain,
                [this](std::vector<detail::tier_worker::job>& jobs) { run_batch(jobs); },
                [this](detail::tier_worker::job const& j) { dropped(j); }, options.upload_end_grace,
                // Batches only where the uploads among them go in one call (write_many).
                detail::has_write_many<Remote>::value ? detail::tier_worker::batch_max_jobs : std::size_t{1});
        }

        /// A job not run at the end (the drain time was over): counted.
        void dropped(detail::tier_worker::job const& j) noexcept {
            if (j.kind == job_upload) {
                ++counts[c_uploads_dropped];
                ++dropped_at_end;
            } else if (j.kind == job_release) {
                // (a claim left to its expiry)
            } else {
                ++counts[c_copies_dropped];
            }
        }

        /// Whether the remote may be called from this process: not in a child forked while
        /// the worker was mid-call (its copy of the connection is mid-call, its locks held),
        /// nor, with a remote that would use the connections it inherited, in one forked
        /// while the worker had uploads queued (the parent goes on with them there).
        bool remote_usable() const noexcept {
            if (forked_mid_job()) return false;
            if constexpr (detail::remote_reconnects_after_fork<Remote>()) return true;
            else return !(worker && worker->forked_with_work());
        }
        /// Whether this is a child forked while the worker ran a job that did not end within
        /// the fork's wait: the locks that job held (the storages', the tier's) stay held
        /// here for ever, so the tier answers without touching either storage.
        bool forked_mid_job() const noexcept { return worker && worker->forked_mid_job(); }

        static std::size_t prefetch_cost(std::string const& bytes) noexcept { return bytes.size() + 96; }

        /// A store or a removal of `k` makes what prefetch holds for it stale: dropped, and
        /// so is what a batch in flight will answer for it.
        void forget_prefetched(key const& k) noexcept {
            try {
                auto const lock = prefetch_lock(); // (not had: prefetch_lost, nothing held is used)
                if (!lock.owns_lock()) return;
                auto const it = prefetched.find(k);
                if (it != prefetched.end()) {
                    prefetched_bytes -= std::min(prefetched_bytes, prefetch_cost(it->second.bytes));
                    prefetched.erase(it);
                }
                adopt_prefetch_pid_locked();
                ++forgets;
                if (batch_starts.empty()) return;
                try {
                    if (forgotten.size() < max_forgotten || forgotten.count(k) != 0)
                        forgotten[k] = forgets;
                    else
                        forgot_all_at = forgets;
                } catch (...) {
                    forgot_all_at = forgets; // (not recorded: the batches running keep nothing)
                }
            } catch (...) {
            }
        }

        /// The answer prefetch holds for `k` (then no longer held), as a remote read of at
        /// most `max_size` bytes answers; false when there is none (or it is too old).
        bool take_prefetched(key const& k, std::string& out, std::size_t max_size, read_result& r) noexcept {
            try {
                auto const lock = prefetch_lock();
                if (!lock.owns_lock() || prefetched.empty()) return false;
                auto const it = prefetched.find(k);
                if (it == prefetched.end()) return false;
                prefetched_answer a = std::move(it->second);
                prefetched.erase(it);
                prefetched_bytes -= std::min(prefetched_bytes, prefetch_cost(a.bytes));
                if (clock::now() - a.at > options.prefetch_ttl) return false;
                out.clear();
                if (a.status == read_status::found && a.bytes.size() > max_size) {
                    r = {read_status::too_large, make_error_code(remote_error::too_large)};
                } else {
                    r = {a.status, a.status == read_status::too_large ? make_error_code(remote_error::too_large)
                                                                     : std::error_code()};
                    if (a.status == read_status::found) out = std::move(a.bytes);
                }
                return true;
            } catch (...) {
                out.clear();
                return false;
            }
        }

        /// Whether the local storage has `k`: its file exists (a storage that tells its
        /// entries' paths), else a read finds it.
        bool local_has(key const& k) noexcept {
            try {
                // (An identity record has no file of its own in a directory: it is in a pack.)
                if constexpr (detail::has_entry_path<Local>::value) {
                    if (!is_identity_record_key(k)) {
                        std::string const path = local->entry_path(k);
                        struct ::stat st;
                        return !path.empty() && ::stat(path.c_str(), &st) == 0;
                    }
                }
                std::string bytes;
                read_status const s = local_read(k, bytes, std::size_t(64) << 20).status;
                return s == read_status::found || s == read_status::too_large;
            } catch (...) {
                return false;
            }
        }

        /// Under prefetch_mutex: in a process forked since, the batches that ran are the
        /// parent's threads' (not here), and so are the forgets they needed.
        void adopt_prefetch_pid_locked() {
            ::pid_t const me = ::getpid();
            if (me == prefetch_pid) return;
            batch_starts.clear();
            forgotten.clear();
            forgot_all_at = 0;
            prefetch_pid = me;
        }

        /// Under prefetch_mutex: whether a batch that began at forget number `start` may keep
        /// its answer for `k` (nothing stored or removed it since).
        bool answer_fresh_locked(key const& k, std::uint64_t start) const {
            if (forgot_all_at > start) return false;
            auto const it = forgotten.find(k);
            return it == forgotten.end() || it->second <= start;
        }

        /// A batch in flight, from its start to its end whatever the path out: its start is
        /// kept, and at its end the forgets no running batch needs any more are dropped.
        struct in_flight_guard {
            state& s;
            std::uint64_t start = 0;
            bool counted = false; ///< `start` is in batch_starts
            ::pid_t pid = ::getpid();
            ~in_flight_guard() {
                if (!counted) return;
                try {
                    auto const lock = s.prefetch_lock();
                    if (!lock.owns_lock() || pid != s.prefetch_pid) return; // (begun before a fork: the set is anew)
                    auto const it = s.batch_starts.find(start);
                    if (it != s.batch_starts.end()) s.batch_starts.erase(it);
                    if (s.batch_starts.empty()) {
                        s.forgotten.clear();
                        s.forgot_all_at = 0;
                        return;
                    }
                    std::uint64_t const oldest = *s.batch_starts.begin();
                    for (auto f = s.forgotten.begin(); f != s.forgotten.end();)
                        f = f->second <= oldest ? s.forgotten.erase(f) : std::next(f);
                } catch (...) {
                }
            }
        };

        void prefetch(std::vector<key> const& keys, std::size_t max_size, claim_request const* claims) noexcept {
            if constexpr (detail::has_read_many<Remote>::value) {
                try {
                    std::vector<key> wanted;
                    std::unordered_set<key> seen;
                    in_flight_guard flight{*this};
                    {
                        auto const lock = prefetch_lock();
                        if (!lock.owns_lock()) return;
                        for (key const& k : keys)
                            if (!k.empty() && prefetched.count(k) == 0 && seen.insert(k).second) wanted.push_back(k);
                        adopt_prefetch_pid_locked();
                        flight.start = forgets;
                        batch_starts.insert(flight.start);
                        flight.counted = true;
                    }
                    if (local)
                        wanted.erase(std::remove_if(wanted.begin(), wanted.end(), [&](key const& k) { return local_has(k); }),
                                     wanted.end());
                    if (wanted.empty()) return;
                    admission const a = admit();
                    if (a == admission::skipped) return;
                    // With a remote that can (read_many_claiming), the claims ride in the read's
                    // exchange: each entry's claimed there only if it is absent.
                    std::vector<key> to_claim;
                    std::vector<claim_answer> claimed;
                    bool claim_in_read = false;
                    if constexpr (detail::has_read_many_claiming<Remote>::value) {
                        if (claims) {
                            for (key const& k : wanted)
                                if (!is_identity_record_key(k)) to_claim.push_back(k);
                            claim_in_read = prepare_claims(to_claim);
                        }
                    }
                    auto const start = clock::now();
                    std::vector<std::pair<read_result, std::string>> got;
                    auto const taken = clock::now();
                    if constexpr (detail::has_read_many_claiming<Remote>::value) {
                        if (claim_in_read)
                            remote->read_many_claiming(wanted, max_size, to_claim, claim_request_of(*claims), got,
                                                       claimed);
                        else
                            remote->read_many(wanted, max_size, got);
                    } else {
                        remote->read_many(wanted, max_size, got);
                    }
                    auto const took = clock::now() - start;
                    counts[c_read_ns] += ns_of(took);
                    ++counts[c_prefetch_batches];
                    counts[c_prefetch_keys] += wanted.size();
                    if (got.size() != wanted.size()) {
                        if (claim_in_read) { // (no read answered: each claim maybe taken)
                            got.assign(wanted.size(), {read_result{read_status::error, {}}, std::string()});
                            record_claims(to_claim, claimed, wanted, got, taken, *claims);
                        }
                        return;
                    }
                    std::error_code first_error;
                    bool any_answer = false;
                    for (auto const& g : got) {
                        if (g.first.status == read_status::error) {
                            // (Past the batch's own byte bound: no failure of the remote's; the
                            // key is read alone later.)
                            if (!first_error && g.first.error != std::errc::value_too_large)
                                first_error = g.first.error;
                        } else {
                            any_answer = true;
                        }
                    }
                    if (any_answer) {
                        read_answered = true;
                        answered(a, took);
                    }
                    if (first_error) failed(a, first_error);
                    auto const now = clock::now();
                    std::vector<key> absent; // the entries to claim ahead
                    {
                        auto const lock = prefetch_lock();
                        for (std::size_t i = 0; lock.owns_lock() && i < wanted.size(); ++i) {
                            if (got[i].first.status == read_status::error) continue;
                            // (stored or removed while the batch was read: its answer is stale,
                            // and an absent one is no longer absent, or no longer to claim)
                            if (!answer_fresh_locked(wanted[i], flight.start)) continue;
                            if (claims && !claim_in_read && got[i].first.status == read_status::absent &&
                                !is_identity_record_key(wanted[i]))
                                absent.push_back(wanted[i]);
                            // An answer held already (an overlapping prefetch's, fresh too: a
                            // forget since would have dropped it) gives way to this newer one,
                            // and its cost back; kept when the newer one does not fit.
                            std::size_t const cost = prefetch_cost(got[i].second);
                            auto const held = prefetched.find(wanted[i]);
                            std::size_t const held_cost =
                                held == prefetched.end() ? 0 : prefetch_cost(held->second.bytes);
                            std::size_t const others = prefetched_bytes - std::min(prefetched_bytes, held_cost);
                            if (others + cost > options.prefetch_bytes) {
                                ++counts[c_prefetch_dropped];
                                continue;
                            }
                            prefetched[wanted[i]] = {got[i].first.status, std::move(got[i].second), now};
                            prefetched_bytes = others + cost;
                        }
                    }
                    if (claim_in_read) record_claims(to_claim, claimed, wanted, got, taken, *claims);
                    else if (claims && !first_error && !absent.empty()) claim_ahead(absent, *claims);
                } catch (...) {
                }
            } else {
                (void)keys, (void)max_size, (void)claims;
            }
        }

        /// Under preclaim_mutex: in a process forked since the claims were taken ahead, they
        /// become the parent's (`parents`, at most max_preclaims), and this one holds none.
        void adopt_pid_locked(::pid_t me) {
            if (preclaim_pid == me) return;
            parents.clear();
            for (auto const& p : preclaimed) {
                if (parents.size() >= max_preclaims) break;
                parents.insert(p.first);
            }
            preclaimed.clear();
            contended.clear();
            preclaim_pid = me;
        }

        /// Whether the remote claim of `k` is held by the process this one was forked from,
        /// which took it ahead (then forgotten: asked once).
        bool held_by_parent(key const& k) noexcept {
            try {
                auto const lock = preclaim_lock();
                if (!lock.owns_lock() || preclaim_pid == 0) return false;
                adopt_pid_locked(::getpid());
                return !parents.empty() && parents.erase(k) != 0;
            } catch (...) {
                return false;
            }
        }

        /// As tier_try_claim asks the remote: for the claim as it would take it alone.
        static claim_request claim_request_of(claim_request const& request) noexcept {
            claim_request whole = request;
            whole.scope = claim_scope::both;
            return whole;
        }

        /// Before prefetch's claims: the claims held ahead past half their expiry are
        /// released (their room freed), and `absent` keeps those this process does not hold
        /// ahead already (up to max_preclaims held); false when none is left to claim.
        bool prepare_claims(std::vector<key>& absent) noexcept {
            if constexpr (detail::has_try_claim_many<Remote>::value) {
                try {
                    ::pid_t const me = ::getpid();
                    std::vector<key> stale; // held ahead past half their expiry: released, their room freed
                    {
                        auto const lock = preclaim_lock();
                        if (!lock.owns_lock()) return false; // (no claim taken ahead)
                        adopt_pid_locked(me);
                        auto const now = clock::now();
                        for (auto it = preclaimed.begin(); it != preclaimed.end();) {
                            if (now - it->second.taken >= it->second.expiry / 2) {
                                if (!it->second.unknown) ++counts[c_claims_prefetched_unused];
                                stale.push_back(it->first);
                                it = preclaimed.erase(it);
                            } else {
                                ++it;
                            }
                        }
                        absent.erase(std::remove_if(absent.begin(), absent.end(),
                                                    [&](key const& k) { return preclaimed.count(k) != 0; }),
                                     absent.end());
                        std::size_t const room = max_preclaims - std::min(max_preclaims, preclaimed.size());
                        if (absent.size() > room) absent.resize(room);
                    }
                    // Released by the worker (background uploads), off the prefetch's path, which
                    // the remote's one timeout bounds; in sync mode, or where the queue is full,
                    // here, when there are any.
                    if (worker)
                        stale.erase(std::remove_if(stale.begin(), stale.end(),
                                                   [&](key const& k) {
                                                       return worker->push({k, std::string(), job_release});
                                                   }),
                                    stale.end());
                    if (!stale.empty()) {
                        if constexpr (detail::has_release_claim_many<Remote>::value) {
                            remote->release_claim_many(stale);
                        } else {
                            for (key const& k : stale) remote->release_claim(k);
                        }
                    }
                    return !absent.empty();
                } catch (...) {
                    return false;
                }
            } else {
                (void)absent;
                return false;
            }
        }

        /// prefetch's claims: those of `absent` that this process does not hold ahead
        /// already (up to max_preclaims held), taken in one batch and remembered.
        void claim_ahead(std::vector<key>& absent, claim_request const& request) noexcept {
            if constexpr (detail::has_try_claim_many<Remote>::value) {
                try {
                    if (!prepare_claims(absent)) return;
                    std::vector<claim_answer> answers;
                    auto const taken = clock::now();
                    remote->try_claim_many(absent, claim_request_of(request), answers);
                    if (answers.size() != absent.size()) return;
                    auto const lock = preclaim_lock();
                    if (!lock.owns_lock()) return; // (left to their expiry)
                    for (std::size_t i = 0; i < absent.size(); ++i)
                        remember_claim_locked(absent[i], answers[i], true, taken, request);
                } catch (...) {
                }
            } else {
                (void)absent, (void)request;
            }
        }

        /// Under preclaim_mutex: the answer to the claim of `k` taken ahead at `taken`:
        /// claimed, held for its miss; held by another, the batch's answer dropped and the
        /// key remembered as contended; none, remembered as unknown (the miss releases it
        /// first) when `maybe_taken`.
        void remember_claim_locked(key const& k, claim_answer const& answer, bool maybe_taken,
                                   clock::time_point taken, claim_request const& request) {
            if (answer.state == claim_state::claimed) {
                preclaimed[k] = {taken, request.expiry};
                ++counts[c_claims_prefetched];
            } else if (answer.state == claim_state::none) {
                if (maybe_taken) preclaimed[k] = {taken, request.expiry, true};
            } else if (answer.state == claim_state::held) {
                // Another process compiles it: the batch's `absent` will soon be
                // stale, so the miss reads the remote afresh (and claims as always,
                // reading once more if it then claims: was_contended).
                forget_prefetched(k);
                if (contended.size() < max_preclaims) contended.insert(k);
            }
        }

        /// The claims read_many_claiming took with prefetch's reads (`claimed`, one answer
        /// per key of `to_claim`; `got`, the reads of `wanted`): as claim_ahead's, a none
        /// being unknown only where the entry's read did not find it (the storage may then
        /// hold the claim: its answer was lost); where it found it, nothing was claimed.
        void record_claims(std::vector<key> const& to_claim, std::vector<claim_answer> const& claimed,
                           std::vector<key> const& wanted, std::vector<std::pair<read_result, std::string>> const& got,
                           clock::time_point taken, claim_request const& request) noexcept {
            try {
                std::unordered_map<key, read_status> read;
                for (std::size_t i = 0; i < wanted.size() && i < got.size(); ++i)
                    read.emplace(wanted[i], got[i].first.status);
                auto const lock = preclaim_lock();
                if (!lock.owns_lock()) return; // (left to their expiry)
                for (std::size_t i = 0; i < to_claim.size(); ++i) {
                    claim_answer const answer = i < claimed.size() ? claimed[i] : claim_answer{};
                    auto const r = read.find(to_claim[i]);
                    bool const maybe_taken = r == read.end() || r->second == read_status::absent ||
                                             r->second == read_status::error;
                    remember_claim_locked(to_claim[i], answer, maybe_taken, taken, request);
                }
            } catch (...) {
            }
        }

        /// Whether another process held the claim of `k` when this one's prefetch asked
        /// (then forgotten).
        bool was_contended(key const& k) noexcept {
            try {
                auto const lock = preclaim_lock();
                return lock.owns_lock() && !contended.empty() && preclaim_pid == ::getpid() && contended.erase(k) != 0;
            } catch (...) {
                return false;
            }
        }

        /// Whether this process took the remote claim of `k` ahead (prefetch), recently
        /// enough (within half its expiry) for a miss to take it now: then it is this
        /// miss's (forgotten here). An older one is released at once (the miss then asks
        /// the remote as without it, and must not find its own claim there).
        bool take_preclaimed(key const& k) noexcept {
            if constexpr (detail::has_claims<Remote>::value) {
                try {
                    {
                        auto const lock = preclaim_lock();
                        if (!lock.owns_lock() || preclaimed.empty() || preclaim_pid != ::getpid()) return false;
                        auto const it = preclaimed.find(k);
                        if (it == preclaimed.end()) return false;
                        preclaim const p = it->second;
                        preclaimed.erase(it);
                        if (!p.unknown && clock::now() - p.taken < p.expiry / 2) return true;
                        if (!p.unknown) ++counts[c_claims_prefetched_unused];
                    }
                    remote->release_claim(k);
                } catch (...) {
                }
            } else {
                (void)k;
            }
            return false;
        }

        /// The tier's end: the claims taken ahead and never used are released (no upload
        /// of theirs to wait for): in one batch with a remote that has release_claim_many,
        /// else as release_claim does (queued for the worker after the uploads, or at once
        /// in sync mode within the upload drain time); the rest are left to their expiry.
        void release_preclaims() noexcept {
            if constexpr (detail::has_claims<Remote>::value) {
                try {
                    std::vector<key> unused;
                    {
                        auto const lock = preclaim_lock();
                        if (!lock.owns_lock() || preclaimed.empty() || preclaim_pid != ::getpid()) return;
                        for (auto const& p : preclaimed) {
                            unused.push_back(p.first);
                            if (!p.second.unknown) ++counts[c_claims_prefetched_unused];
                        }
                        preclaimed.clear();
                    }
                    if (!remote || !remote_usable() || forked_mid_job()) return; // (left to their expiry)
                    {
                        auto const lock = health_lock();
                        if (!lock.owns_lock() || (down && clock::now() < retry_at)) return;
                    }
                    if constexpr (detail::has_release_claim_many<Remote>::value) {
                        remote->release_claim_many(unused);
                        return;
                    }
                    auto const until = clock::now() + options.upload_drain;
                    for (key const& k : unused) {
                        if (worker) {
                            if (worker->push({k, std::string(), job_release})) continue;
                        }
                        if (clock::now() >= until) return;
                        {
                            auto const lock = health_lock();
                            if (!lock.owns_lock() || (down && clock::now() < retry_at)) return;
                        }
                        remote->release_claim(k);
                    }
                } catch (...) {
                }
            }
        }

        /// The worker's batch (the jobs it found queued, in their order). A remote with
        /// write_many: the uploads first, sent together (a key's second upload in the batch
        /// starts another write_many, so that the later one lands last), then the other
        /// jobs in their order (the releases in one release_claim_many when the remote has it):
        /// a claim's release reaches the remote after the upload of its entry was answered.
        /// Without write_many the worker takes one job at a time: run().
        void run_batch(std::vector<detail::tier_worker::job>& jobs) noexcept {
            if constexpr (detail::has_write_many<Remote>::value) {
                std::vector<detail::tier_worker::job*> uploads;
                try {
                    uploads.reserve(jobs.size());
                } catch (...) {
                    for (auto& j : jobs) run(j); // (no room for the batch: one by one)
                    return;
                }
                std::unordered_set<key> in_batch;
                std::size_t sent_from = 0; // the uploads before it are sent
                for (auto& j : jobs) {
                    if (j.kind != job_upload) continue;
                    bool repeated = false;
                    try {
                        repeated = !in_batch.insert(j.k).second;
                    } catch (...) {
                        repeated = true; // (sends what is gathered: the order stays)
                    }
                    if (repeated) {
                        send_uploads(uploads, sent_from, {});
                        sent_from = uploads.size();
                        in_batch.clear();
                        try {
                            in_batch.insert(j.k);
                        } catch (...) {
                        }
                    }
                    uploads.push_back(&j); // (reserved: no allocation)
                }
                // The releases together (a remote with release_claim_many): with the last
                // uploads, in the same exchange, where the remote can (write_many_then_release),
                // else after them; then the rest one by one, as the queue's jobs: past the
                // drain time, dropped.
                std::vector<key> releases;
                if constexpr (detail::has_release_claim_many<Remote>::value) {
                    try {
                        for (auto const& j : jobs)
                            if (j.kind == job_release) releases.push_back(j.k);
                        if (worker && worker->past_drain()) releases.clear();
                    } catch (...) {
                        releases.clear(); // (left to their expiry)
                    }
                }
                bool const released = send_uploads(uploads, sent_from, releases);
                if constexpr (detail::has_release_claim_many<Remote>::value) {
                    if (!released && !releases.empty()) remote->release_claim_many(releases);
                }
                for (auto& j : jobs) {
                    if (j.kind == job_upload) continue;
                    if (j.kind == job_release && detail::has_release_claim_many<Remote>::value) continue;
                    if (worker && worker->past_drain())
                        dropped(j);
                    else
                        run(j);
                }
            } else {
                for (auto& j : jobs) run(j);
            }
        }

        /// The uploads `jobs[from...]`, sent now: a lone one as send() does, more in one
        /// write_many; each counted as send() counts it (an entry kept as another secret's,
        /// stores refused, the remote skipped: not sent). The batch is one call for the
        /// back-off: admitted once (each entry it skips counted remote.skipped), answered
        /// once when an entry was stored, and its first failure that of its admission
        /// (a probe's doubles the back-off once); its other failures are counted alone.
        /// `releases` (claims whose uploads were queued before them): with a remote that has
        /// write_many_then_release, sent in the same call, after the writes (even one);
        /// true when they were (else the caller releases them).
        bool send_uploads(std::vector<detail::tier_worker::job*> const& jobs, std::size_t from,
                          std::vector<key> const& releases) noexcept {
            constexpr bool releasing = detail::has_write_many_then_release<Remote>::value;
            bool with_releases = releasing && !releases.empty();
            if constexpr (detail::has_write_many<Remote>::value) {
                if (jobs.size() <= from) return false;
                if (jobs.size() == from + 1 && !with_releases) {
                    if (!send(jobs[from]->k, jobs[from]->bytes)) ++counts[c_uploads_sent];
                    return false;
                }
                try {
                    std::vector<std::pair<key, std::string_view>> entries;
                    entries.reserve(jobs.size() - from);
                    for (std::size_t i = from; i < jobs.size(); ++i) {
                        if (keep_foreign(jobs[i]->k)) continue;
                        if (writes_refused) {
                            ++counts[c_skipped];
                            continue;
                        }
                        entries.emplace_back(jobs[i]->k, jobs[i]->bytes);
                    }
                    if (entries.empty()) return false;
                    admission const a = admit();
                    if (a == admission::skipped) {
                        counts[c_skipped] += entries.size() - 1; // (admit counted one)
                        return false;
                    }
                    std::vector<std::error_code> out;
                    auto const start = clock::now();
                    try {
                        if constexpr (releasing) {
                            if (with_releases) remote->write_many_then_release(entries, releases, out);
                            else remote->write_many(entries, out);
                        } else {
                            remote->write_many(entries, out);
                        }
                    } catch (...) {
                        out.clear();
                    }
                    auto const took = clock::now() - start;
                    counts[c_write_ns] += ns_of(took);
                    ++counts[c_upload_batches];
                    if (out.size() != entries.size()) {
                        // (A remote that gave up inside, before its answers: its releases may
                        // not have gone either; the caller sends them, twice being harmless.)
                        with_releases = false;
                        out.assign(entries.size(), std::make_error_code(std::errc::io_error));
                    }
                    bool stored = false;
                    for (std::size_t i = 0; i < entries.size(); ++i) {
                        if (out[i]) continue;
                        stored = true;
                        ++counts[is_identity_record_key(entries[i].first) ? c_record_stores : c_stores];
                        counts[c_bytes_written] += entries[i].second.size();
                        ++counts[c_uploads_sent];
                    }
                    if (stored) answered(a, took);
                    bool first = true;
                    for (std::size_t i = 0; i < entries.size(); ++i) {
                        if (!out[i]) continue;
                        failed(first ? a : admission::normal, out[i], true);
                        first = false;
                    }
                    return with_releases;
                } catch (...) {
                    return false; // (a release sent twice is harmless: a compare-and-delete)
                }
            } else {
                (void)jobs, (void)from, (void)releases, (void)with_releases;
                return false;
            }
        }

        /// The worker's job.
        void run(detail::tier_worker::job& j) noexcept {
            if (j.kind == job_release) {
                if constexpr (detail::has_claims<Remote>::value) remote->release_claim(j.k);
                return;
            }
            if (j.kind == job_upload) {
                if (!send(j.k, j.bytes)) ++counts[c_uploads_sent];
                return;
            }
            if (!local_write(j.k, j.bytes) && !is_identity_record_key(j.k)) copy_record_of(j.bytes);
        }

        /// A sound remote entry (or record) to the local storage: queued for the worker in
        /// background mode (a full queue: not copied, counted), at once in sync mode.
        void copy_locally(key const& k, std::string_view entry) noexcept {
            if (worker) {
                bool queued = false;
                try {
                    queued = worker->push({k, std::string(entry), job_copy});
                } catch (...) {
                }
                if (!queued) ++counts[c_copies_dropped];
                return;
            }
            if (!local_write(k, entry) && !is_identity_record_key(k)) copy_record_of(entry);
        }

        /// A store's remote write, now: not over an entry kept as another secret's, not
        /// while stores are refused or the remote is skipped; timed and counted.
        std::error_code send(key const& k, std::string_view bytes) noexcept {
            if (keep_foreign(k)) return std::make_error_code(std::errc::file_exists);
            if (writes_refused) {
                ++counts[c_skipped];
                return std::make_error_code(std::errc::permission_denied);
            }
            admission const a = admit();
            if (a == admission::skipped) return std::make_error_code(std::errc::resource_unavailable_try_again);
            auto const start = clock::now();
            std::error_code e;
            try {
                e = remote->write(k, bytes);
            } catch (...) {
                e = std::make_error_code(std::errc::io_error);
            }
            auto const took = clock::now() - start;
            counts[c_write_ns] += ns_of(took);
            if (e) {
                failed(a, e, true);
            } else {
                answered(a, took);
                ++counts[is_identity_record_key(k) ? c_record_stores : c_stores];
                counts[c_bytes_written] += bytes.size();
            }
            return e;
        }

        // The local storage's calls. A policy may throw (docs/policies.md), and nothing it
        // throws may leave this storage's noexcept members: it is the local storage's
        // failure, as the remote's is the remote's.
        read_result local_read(key const& k, std::string& out, std::size_t max_size) noexcept {
            try {
                return local->read(k, out, max_size);
            } catch (...) {
                out.clear();
                return {read_status::error, std::make_error_code(std::errc::io_error)};
            }
        }
        std::error_code local_write(key const& k, std::string_view bytes) noexcept {
            try {
                return local->write(k, bytes);
            } catch (...) {
                return std::make_error_code(std::errc::io_error);
            }
        }
        std::error_code local_write_deferred(key const& k, std::string_view bytes) noexcept {
            try {
                if constexpr (detail::has_write_deferred<Local>::value) return local->write_deferred(k, bytes);
                else return local->write(k, bytes);
            } catch (...) {
                return std::make_error_code(std::errc::io_error);
            }
        }
        std::error_code local_remove(key const& k) noexcept {
            try {
                return local->remove(k);
            } catch (...) {
                return std::make_error_code(std::errc::io_error);
            }
        }

        // The identity record of the kernel whose remote entry was just copied here, under
        // the identity a host that gives none has (name and origin file), copied from the
        // remote when the local storage has none: best effort, bounded as any remote call,
        // never when the remote is skipped. The record's check value is verified by whoever
        // reads it, as for any record; a signed remote's is verified here and resealed in
        // the local mode (keep_record_locally), since the local mode is all a local read checks.
        void copy_record_of(std::string_view entry) noexcept {
            try {
                std::optional<key> const rk = detail::record_key_of_entry(entry);
                if (!rk) return;
                std::string bytes;
                if (local_read(*rk, bytes, identity_record_max_size).status != read_status::absent) return;
                if (!remote_usable()) return;
                read_result held;
                if (take_prefetched(*rk, bytes, identity_record_max_size, held)) { // (the batch read it)
                    if (held.status == read_status::found && detail::looks_like_record(bytes, *rk))
                        keep_record_locally(*rk, bytes);
                    return;
                }
                admission const a = admit();
                if (a == admission::skipped) return;
                auto const start = clock::now();
                read_result r;
                try {
                    r = remote->read(*rk, bytes, identity_record_max_size);
                } catch (...) {
                    r = {read_status::error, std::make_error_code(std::errc::io_error)};
                }
                auto const took = clock::now() - start;
                counts[c_read_ns] += ns_of(took);
                if (r.status == read_status::error) {
                    failed(a, r.error);
                    return;
                }
                answered(a, took);
                if (r.status == read_status::found && detail::looks_like_record(bytes, *rk))
                    keep_record_locally(*rk, bytes);
            } catch (...) {
            }
        }

        // A remote identity record to the local storage: as read, or as the record resealer
        // makes it (signed remotes: the local mode's check, as a copied entry has).
        void keep_record_locally(key const& rk, std::string const& bytes) noexcept {
            if (!record_resealer) {
                (void)local_write(rk, bytes);
                return;
            }
            try {
                std::string resealed;
                if (record_resealer(rk, bytes, resealed)) (void)local_write(rk, resealed);
            } catch (...) {
            }
        }

        void note_foreign(key const& k) noexcept {
            if (options.replace_unauthentic || options.mode != remote_mode::read_write) return;
            try {
                auto const lock = foreign_lock();
                if (lock.owns_lock() && foreign.size() < max_foreign_keys) foreign.insert(k);
            } catch (...) {
            }
        }

        /// Whether a store of `k` must leave the remote's entry alone (it is another
        /// secret's, or garbage); counted, and said once.
        bool keep_foreign(key const& k) noexcept {
            bool say = false;
            {
                auto const lock = foreign_lock();
                if (!lock.owns_lock() || foreign.empty() || foreign.count(k) == 0) return false;
                say = !foreign_said;
                foreign_said = true;
            }
            if (!is_identity_record_key(k)) ++counts[c_store_skipped_foreign];
            if (say) {
                try {
                    log(describe_remote() + " holds entries that do not authenticate under this secret: the secrets "
                                            "seem to differ between machines (" + secret_setting +
                        "). They are kept, not overwritten (" + replace_setting +
                        "=1 replaces them; compile-cache verify --remove --secret-file cleans them)");
                } catch (...) {
                }
            }
            return true;
        }

        std::string describe_remote() const {
            if constexpr (detail::has_remote_describe<Remote>::value) {
                try {
                    return "the remote " + std::string(remote->describe());
                } catch (...) {
                }
            }
            return "the remote";
        }

        void log(std::string const& line) const noexcept {
            try {
                std::function<void(std::string_view)> logger;
                {
                    auto const lock = health_lock();
                    if (!lock.owns_lock()) return;
                    logger = options.logger;
                }
                if (logger) logger(line);
            } catch (...) {
            }
        }

        /// Whether to call the remote now: not while its back-off runs. When it is over,
        /// one call goes through as the probe (the others keep skipping until it answers or fails).
        admission admit() noexcept {
            auto const lock = health_lock();
            if (lock.owns_lock() && detail::tier_health_held_for_testing != nullptr)
                detail::tier_health_held_for_testing();
            if (!lock.owns_lock()) {
                ++counts[c_skipped];
                return admission::skipped;
            }
            if (!down) return admission::normal;
            auto const now = clock::now();
            if (now < retry_at) {
                ++counts[c_skipped];
                return admission::skipped;
            }
            retry_at = now + backoff; // this call is the probe
            return admission::probe;
        }

        /// The remote answered after `took`: it is up again, unless the answer was slow and
        /// the budget of slow answers is spent (then it is skipped as if it had failed).
        void answered(admission a, clock::duration took) noexcept {
            if (options.budget.count() > 0 && took >= options.slow_call) {
                auto lock = health_lock();
                if (!lock.owns_lock()) return;
                // Only the part of this wait that no slow answer counted already: wall time.
                auto const end = clock::now();
                auto const from = std::max(end - took, slow_counted_until);
                if (end > from) slow_waited += end - from;
                slow_counted_until = std::max(slow_counted_until, end);
                auto const waited = std::chrono::duration_cast<std::chrono::milliseconds>(slow_waited);
                bool const over = slow_waited > options.budget;
                lock.unlock();
                if (over) {
                    went_down(a, [&] {
                        return " answers too slowly (" + std::to_string(waited.count()) +
                               " ms waited for answers of " + std::to_string(options.slow_call.count()) +
                               " ms or more, past the budget of " + std::to_string(options.budget.count()) + " ms)";
                    });
                    return;
                }
            }
            auto lock = health_lock();
            if (!lock.owns_lock() || !down) return;
            down = false;
            auto const away = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - down_since);
            backoff = std::chrono::milliseconds(0);
            lock.unlock();
            try {
                log(describe_remote() + " answers again (after " + std::to_string(away.count()) +
                    " ms); it is used again");
            } catch (...) {
            }
        }

        /// The remote's own text about its last failure ("" when it has none).
        std::string failure_text() const {
            if constexpr (detail::has_last_failure_text<Remote>::value) {
                return std::string(remote->last_failure().text);
            } else {
                return {};
            }
        }

        bool partial(std::error_code const& e) const noexcept {
            if constexpr (detail::has_partial_failure<Remote>::value) {
                try {
                    return remote->partial_failure(e);
                } catch (...) {
                }
            }
            (void)e;
            return false;
        }

        /// A call failed with `e`; `write`: a store or a removal.
        void failed(admission a, std::error_code const& e, bool write = false) noexcept {
            remote_error const why = remote_error_of(e);
            ++counts[c_error + static_cast<std::size_t>(why)];
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
                if (why == remote_error::auth && write && read_answered) {
                    // Reads answer, stores are refused: a user allowed to read only (an ACL
                    // without SET). Stores stop; reads go on.
                    writes_refused = true;
                    say_once("stores refused", describe_remote() + " refuses stores (" + reason +
                                                   "); stores to it are skipped from now on, reads go on (give its "
                                                   "user the write commands, or set the remote mode read-only)");
                    return;
                }
                if (why == remote_error::timeout || why == remote_error::refused || why == remote_error::auth ||
                    why == remote_error::protocol) {
                    if (why == remote_error::auth)
                        reason += "; check its password (in the URL or the password file) and that its user may "
                                  "run the cache's commands";
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
            auto lock = health_lock();
            if (!lock.owns_lock()) return; // (health_lost: skipped from now on all the same)
            auto const now = clock::now();
            bool const first = !down;
            if (first) {
                down = true;
                down_since = now;
                backoff = options.backoff_start;
                retry_at = now + backoff;
            } else if (a == admission::probe) {
                backoff = std::min(backoff * 2, options.backoff_max);
                retry_at = now + backoff;
            }
            auto const period = backoff;
            lock.unlock();
            if (!first) return;
            try {
                log(describe_remote() + why() + "; it is skipped for " + std::to_string(period.count()) +
                    " ms, then retried (longer while it keeps failing, up to " +
                    std::to_string(options.backoff_max.count()) + " ms)");
            } catch (...) {
            }
        }

        /// One line for an error that does not skip the remote, the first time `what` is seen.
        void say_once(std::string const& what, std::string const& line) {
            {
                auto const lock = health_lock();
                if (!lock.owns_lock() || said.size() >= said_max ||
                    std::find(said.begin(), said.end(), what) != said.end())
                    return;
                said.push_back(what);
            }
            log(line);
        }
    };

    /// The background worker's settings: PREFIX_REMOTE_UPLOAD (`background`, default, or
    /// `sync`), PREFIX_REMOTE_UPLOAD_QUEUE (a size; default 64M), PREFIX_REMOTE_UPLOAD_DRAIN
    /// (a duration; default 1s). A bad value is one line and the default.
    static void upload_from_env(settings_reader const& env, tier_options& options) {
        options.upload = env.choice<remote_upload>(
            "_REMOTE_UPLOAD", {{"background", remote_upload::background}, {"sync", remote_upload::sync}},
            remote_upload::background, "an upload mode");
        options.upload_queue_bytes =
            static_cast<std::size_t>(env.byte_size("_REMOTE_UPLOAD_QUEUE", options.upload_queue_bytes, "64M"));
        options.upload_drain = env.milliseconds("_REMOTE_UPLOAD_DRAIN", options.upload_drain);
    }

    /// The settings upload_from_env reads, for environment_settings.
    static std::vector<environment_setting> upload_environment_settings(std::string_view prefix) {
        std::string const p(prefix);
        return {
            {p + "_REMOTE_UPLOAD", "background (default): stores queue their remote write for a worker thread; "
                                   "sync: each store waits for it"},
            {p + "_REMOTE_UPLOAD_QUEUE", "the most bytes of uploads waiting (default 64M); a store past it is not "
                                         "uploaded (counted remote.uploads-dropped)"},
            {p + "_REMOTE_UPLOAD_DRAIN", "how long uploads still waiting at exit may take (default 1s); the rest "
                                         "are dropped and counted"},
        };
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

    /// Ends a tier: its worker stopped within its bound (tier_worker::stop), then freed;
    /// one whose worker still runs a job past that bound is left to it, kept for ever.
    struct state_deleter {
        void operator()(state* s) const noexcept {
            s->release_preclaims();
            if (!s->worker || s->worker->stop()) {
                delete s;
                return;
            }
            detail::tier_worker::keep_for_ever(s);
            try {
                s->log(s->describe_remote() + ": an upload under way did not end within " +
                       std::to_string((s->options.upload_drain + s->options.upload_end_grace).count()) +
                       " ms of the cache's end; it is left to finish on its own");
            } catch (...) {
            }
        }
    };
    std::unique_ptr<state, state_deleter> state_;
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
