// compile_cache: the Storage policy. A Storage keeps opaque, already-enveloped
// bytes under a key; it knows nothing of what they mean.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/detection.hpp>

#include <compile_cache/key/key.hpp>
#include <compile_cache/settings.hpp>
#include <compile_cache/storage/claim.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace compile_cache {

enum class read_status {
    found,     ///< the bytes were read into the output buffer
    absent,    ///< no entry under that key
    too_large, ///< an entry exists but is larger than the caller's bound; nothing was read
    error,     ///< the entry could not be read (permission, I/O error, ...)
};

struct read_result {
    read_status status = read_status::absent;
    std::error_code error{}; ///< set when status is error
    /// Where a `found` entry came from, in the storage's own terms (0 unless the storage
    /// sets it): the cache gives the whole answer back, unchanged, to the storage's
    /// optional `entry_checked` once it checked the entry. tiered_storage says which of
    /// its tiers answered.
    std::uint32_t origin = 0;
};

/// What the cache's check of an entry found, as a storage hears it (the optional
/// `entry_checked` member): enough to act on, without the envelope's own statuses.
enum class entry_check {
    sound,           ///< the envelope checked: the entry is what its key names
    damaged,         ///< damaged, truncated, not an entry, or another key's entry
    unauthenticated, ///< its HMAC does not verify under the cache's secret
    too_large,       ///< over the cache's bound for it
    foreign_version, ///< another format or serializer version's: sound, but not usable here
};

/// One entry as a storage lists it (the optional `list` member), for tools: its key,
/// its size in bytes, and when it was last used (seconds since the epoch; a storage
/// that refreshes use times lazily, as the shipped ones do hourly, gives that time;
/// 0 when the storage cannot know it).
struct stored_entry {
    key k;
    std::uint64_t size = 0;
    std::int64_t last_use_s = 0;
};

/// What the check of an entry's envelope found (defined in envelope.hpp): declared here
/// for the earlier form of the optional `entry_checked` member.
enum class envelope_status;

namespace detail {
template <class S>
using read_t = decltype(std::declval<S&>().read(std::declval<key const&>(), std::declval<std::string&>(),
                                                std::declval<std::size_t>()));
template <class S>
using has_read = is_detected_exact<read_result, read_t, S>;

template <class S>
using write_t = decltype(std::declval<S&>().write(std::declval<key const&>(), std::declval<std::string_view>()));
template <class S>
using has_write = is_detected_exact<std::error_code, write_t, S>;

template <class S>
using remove_t = decltype(std::declval<S&>().remove(std::declval<key const&>()));
template <class S>
using has_remove = is_detected_exact<std::error_code, remove_t, S>;

/// Optional: a Storage that keeps cumulative counters (directory_storage does) gets
/// a cache's counts when the cache is flushed or destroyed.
template <class S>
using record_counters_t = decltype(std::declval<S&>().record_counters(
    std::declval<std::vector<std::pair<std::string, std::uint64_t>> const&>()));
template <class S>
using has_record_counters = is_detected_exact<std::error_code, record_counters_t, S>;
template <class S>
using record_counters_address_t = decltype(&S::record_counters);

/// Optional: `bool usable() const`, false when the storage cannot work at all (its
/// file is not a database, its server refuses it): the cache then says so in one line
/// and runs disabled, instead of failing every read and write.
template <class S>
using usable_t = decltype(std::declval<S const&>().usable());
template <class S>
using has_usable = is_detected_convertible<bool, usable_t, S>;
template <class S>
using usable_address_t = decltype(&S::usable);

/// Optional: `void corrupt(key const&)`, called by the cache when the entry it read
/// under that key failed the envelope check (damaged, or another key's entry), so that
/// the storage can remove or repair it.
template <class S>
using corrupt_t = decltype(std::declval<S&>().corrupt(std::declval<key const&>()));
template <class S>
using has_corrupt = is_detected<corrupt_t, S>;
template <class S>
using corrupt_address_t = decltype(&S::corrupt);

/// Optional: a Storage that configures itself from the environment
/// (`static from_env_result<S> from_env(storage_settings const&)`); basic_cache::from_env
/// and tiered_storage::from_env delegate to it.
template <class S>
using from_env_t = decltype(S::from_env(std::declval<storage_settings const&>()));
template <class S>
using has_from_env = is_detected_exact<from_env_result<S>, from_env_t, S>;
/// The deprecated form, `static std::optional<S> from_env(settings_reader&)`: still
/// called (storage_from_env below), and the host is told once (basic_cache::from_env).
template <class S>
using deprecated_from_env_t = decltype(S::from_env(std::declval<settings_reader&>()));
template <class S>
struct detects_deprecated_from_env : is_detected_exact<std::optional<S>, deprecated_from_env_t, S> {};
/// (Looked for only where no from_env takes storage_settings: the shipped storages keep
/// the old form as a deprecated overload, which naming here would warn about, and a
/// storage derived from one inherits both, the new one answering for its base.)
template <class S>
using has_deprecated_from_env = std::bool_constant<
    std::conjunction<std::negation<is_detected<from_env_t, S>>, detects_deprecated_from_env<S>>::value>;
/// Either form: what a named from_env must be.
template <class S>
using has_any_from_env = std::bool_constant<has_from_env<S>::value || has_deprecated_from_env<S>::value>;
template <class S>
using from_env_address_t = decltype(&S::from_env);
/// Whether storage_from_env (below) can make S: a from_env of either form, or S
/// constructible from the value of its main setting.
template <class S>
using configurable_from_env = std::bool_constant<has_any_from_env<S>::value || std::is_constructible_v<S, std::string>>;

/// Whether configuring S from the environment goes through the deprecated form (S's own
/// from_env, or a storage S is made of: tiered_storage specialises it for its tiers).
template <class S>
struct uses_deprecated_from_env : has_deprecated_from_env<S> {};

/// Optional: the settings that from_env reads
/// (`static std::vector<environment_setting> environment_settings(std::string_view prefix)`).
template <class S>
using environment_settings_t = decltype(S::environment_settings(std::declval<std::string_view>()));
template <class S>
using has_environment_settings = is_detected_exact<std::vector<environment_setting>, environment_settings_t, S>;
template <class S>
using environment_settings_address_t = decltype(&S::environment_settings);

/// Optional: `void entry_checked(key const&, std::string_view entry, read_result const&
/// answer, entry_check)`, called by the cache right after it checked an entry the
/// storage's read (or read_remote) returned `found` (on the same thread), with that read's answer as the
/// storage gave it (its `origin`) and what the check found: tiered_storage copies a sound
/// remote entry to its local storage, and counts a corrupt or unauthenticated one.
/// The earlier form, `entry_checked(key const&, std::string_view, envelope_status)`, is
/// still called (deprecated: it cannot tell one read from another, and needs envelope.hpp).
template <class S>
using entry_checked_answer_t = decltype(std::declval<S&>().entry_checked(
    std::declval<key const&>(), std::declval<std::string_view>(), std::declval<read_result const&>(),
    std::declval<entry_check>()));
template <class S>
using has_entry_checked_answer = is_detected<entry_checked_answer_t, S>;
template <class S, class Status>
using entry_checked_t = decltype(std::declval<S&>().entry_checked(
    std::declval<key const&>(), std::declval<std::string_view>(), std::declval<Status>()));
/// The earlier form, with the envelope's own status type (envelope_status).
template <class S, class Status>
using has_entry_checked_with = is_detected<entry_checked_t, S, Status>;
template <class S>
using has_entry_checked = std::bool_constant<has_entry_checked_answer<S>::value ||
                                             has_entry_checked_with<S, envelope_status>::value>;
template <class S>
using entry_checked_address_t = decltype(&S::entry_checked);

/// What a storage hears of an envelope check's `status` (an envelope_status; a
/// template so that this header needs no envelope.hpp).
template <class Status>
constexpr entry_check entry_check_of(Status status) noexcept {
    switch (status) {
    case Status::ok: return entry_check::sound;
    case Status::unauthenticated: return entry_check::unauthenticated;
    case Status::too_large: return entry_check::too_large;
    case Status::foreign_version: return entry_check::foreign_version;
    case Status::unsupported: return entry_check::foreign_version; // sound, in a form this reader lacks
    default: return entry_check::damaged; // corrupt, key_mismatch
    }
}

/// Tells `storage` what the check of the entry its read answered `answer` for found
/// (`status`, an envelope_status), by the member it has: the current form, else the
/// earlier one, else nothing.
template <class S, class Status>
void tell_entry_checked(S& storage, key const& k, std::string_view entry, read_result const& answer,
                        Status status) {
    if constexpr (has_entry_checked_answer<S>::value) {
        storage.entry_checked(k, entry, answer, entry_check_of(status));
    } else if constexpr (has_entry_checked_with<S, Status>::value) {
        storage.entry_checked(k, entry, status);
    } else {
        (void)storage, (void)k, (void)entry, (void)answer, (void)status;
    }
}

/// Optional: `std::vector<std::pair<std::string, std::uint64_t>> storage_counters() const`,
/// the storage's own counters, added to the cache's statistics (names with a `.`).
template <class S>
using storage_counters_t = decltype(std::declval<S const&>().storage_counters());
template <class S>
using has_storage_counters =
    is_detected_exact<std::vector<std::pair<std::string, std::uint64_t>>, storage_counters_t, S>;
template <class S>
using storage_counters_address_t = decltype(&S::storage_counters);

/// Optional: `void set_logger(std::function<void(std::string_view)>)`, given the
/// cache's logger when the cache is made and by basic_cache::set_logger.
template <class S>
using set_logger_t = decltype(std::declval<S&>().set_logger(std::declval<std::function<void(std::string_view)>>()));
template <class S>
using has_set_logger = is_detected<set_logger_t, S>;
template <class S>
using set_logger_address_t = decltype(&S::set_logger);

/// Optional: `read_result peek(key const&, std::string& out, std::size_t max_size)`,
/// as read but leaving the entry's use time (eviction order) alone; the compile-cache
/// tool's show and verify use it when there is one.
template <class S>
using peek_t = decltype(std::declval<S&>().peek(std::declval<key const&>(), std::declval<std::string&>(),
                                                std::declval<std::size_t>()));
template <class S>
using has_peek = is_detected_exact<read_result, peek_t, S>;
template <class S>
using peek_address_t = decltype(&S::peek);

/// Optional, for a Storage whose answers may come from a remote (a static `from_remote`
/// origin): `read_result read_remote(key const&, std::string& out, std::size_t max_size)`,
/// the remote's answer alone; the cache asks it when it refuses a local copy of a signed
/// entry whose signer is no longer trusted (tiered_storage).
template <class S>
using read_remote_t = decltype(std::declval<S&>().read_remote(std::declval<key const&>(), std::declval<std::string&>(),
                                                              std::declval<std::size_t>()));
template <class S>
using has_read_remote = is_detected_exact<read_result, read_remote_t, S>;
template <class S>
using read_remote_address_t = decltype(&S::read_remote);

/// Optional: `std::error_code list(std::vector<stored_entry>& out) const`, appends every
/// entry (key, size, last use) without reading a value or touching a use time, so that
/// the compile-cache tool works on the storage; stops at the first error, returned.
/// directory_storage, sqlite_storage and redis_storage have it.
template <class S>
using list_t = decltype(std::declval<S const&>().list(std::declval<std::vector<stored_entry>&>()));
template <class S>
using has_list = is_detected_exact<std::error_code, list_t, S>;
template <class S>
using list_address_t = decltype(&S::list);

/// Optional: `std::error_code write_deferred(key const&, std::string_view)`, a write
/// that may be made later (batched per process) and lost if the process dies first,
/// while a read in this process sees it at once; the cache writes identity records
/// through it when there is one (directory_storage has it), entries never.
template <class S>
using write_deferred_t = decltype(std::declval<S&>().write_deferred(std::declval<key const&>(),
                                                                    std::declval<std::string_view>()));
template <class S>
using has_write_deferred = is_detected_exact<std::error_code, write_deferred_t, S>;
/// With it, `flush_deferred()`: makes the writes held back now (directory_storage: its
/// identity records, in a pack); the cache calls it after it wrote the records it held.
template <class S>
using flush_deferred_t = decltype(std::declval<S&>().flush_deferred());
/// And `look_at_records_now()`: the reads that follow see every record written so far
/// (directory_storage's index of its packs looks again); the cache calls it before the
/// merging reads of its held records.
template <class S>
using look_at_records_now_t = decltype(std::declval<S&>().look_at_records_now());

/// Optional: `std::error_code write_made_at(key const&, std::string_view, std::int64_t
/// made_ns)` (noexcept), write() with the entry's time, the one its eviction goes by,
/// set to `made_ns` (nanoseconds since the epoch; 0 or less: now, as write()). A cache
/// that holds identity records (write_deferred) writes them through it when there is
/// one, each given its newest entry's time, so that a record written at the cache's end
/// is not kept for newer than the entries of its run (directory_storage has it: the
/// file's time). Answers as write() does; the time is best effort.
template <class S>
using write_made_at_t = decltype(std::declval<S&>().write_made_at(
    std::declval<key const&>(), std::declval<std::string_view>(), std::declval<std::int64_t>()));
template <class S>
using has_write_made_at = is_detected_exact<std::error_code, write_made_at_t, S>;
template <class S>
using write_made_at_address_t = decltype(&S::write_made_at);

/// Optional: `void read_many(std::vector<key> const& keys, std::size_t max,
/// std::vector<std::pair<read_result, std::string>>& out)` (noexcept), the batch read: `out`
/// gets one pair per key, in the order of `keys`, `out[i]` being what `read(keys[i], bytes,
/// max)` would answer, with the bytes (found, absent, too_large, or error with its
/// error_code), the whole batch in as few exchanges as the storage can (redis_storage:
/// pipelined, one exchange per server or cluster node) and bounded by the storage's own
/// timeout. tiered_storage::prefetch (basic_cache::prefetch) reads its remote's entries
/// through it when there is one, else one read per key.
template <class S>
using read_many_t = decltype(std::declval<S&>().read_many(
    std::declval<std::vector<key> const&>(), std::declval<std::size_t>(),
    std::declval<std::vector<std::pair<read_result, std::string>>&>()));
template <class S>
using has_read_many = is_detected<read_many_t, S>;

/// Optional: `void write_many(std::vector<std::pair<key, std::string_view>> const& entries,
/// std::vector<std::error_code>& out)` (noexcept), the batch write: `out` gets one
/// error_code per entry, in the order of `entries`, `out[i]` being what `write(entries[i].first,
/// entries[i].second)` would answer, the whole batch in as few exchanges as the storage can
/// (redis_storage: pipelined SETs, one exchange per server or cluster node; http_storage:
/// concurrent PUTs) and bounded by the storage's own timeout. A key appears at most once
/// in a batch (the order of two writes of one key would be the storage's). tiered_storage's
/// background worker sends the uploads it finds queued through it when there is one,
/// else one write per upload.
template <class S>
using write_many_t = decltype(std::declval<S&>().write_many(
    std::declval<std::vector<std::pair<key, std::string_view>> const&>(),
    std::declval<std::vector<std::error_code>&>()));
template <class S>
using has_write_many = is_detected<write_many_t, S>;

/// Optional: `void prefetch(std::vector<key> const& keys, std::size_t max_size)`
/// (noexcept), called by basic_cache::prefetch: the storage may read those entries ahead
/// (tiered_storage: its remote's, in one batch read) for the reads that follow; a read
/// still answers as `read` does, and the cache still checks what it returns.
template <class S>
using prefetch_t = decltype(std::declval<S&>().prefetch(std::declval<std::vector<key> const&>(),
                                                        std::declval<std::size_t>()));
template <class S>
using has_prefetch = is_detected<prefetch_t, S>;

template <class S, class V>
using read_view_t = decltype(std::declval<S&>().read_view(std::declval<key const&>(), std::declval<std::string&>(),
                                                          std::size_t{}, std::declval<V&>()));
/// Optional: `using view_type = V;` and `read_result read_view(key const&, std::string&
/// buffer, std::size_t max_size, V& view)`: read() that may leave the bytes where they
/// are (a mapped file), `view.bytes()` (std::string_view) valid while `view` lives, and
/// `view.intact()` false when they changed under the reader; the cache loads through it
/// when there is one, unless it has a secret (directory_storage has it: entry_view).
template <class S>
using view_type_t = typename S::view_type;
template <class S, class = void>
struct has_read_view : std::false_type {};
template <class S>
struct has_read_view<S, std::void_t<view_type_t<S>>>
    : is_detected_exact<read_result, read_view_t, S, view_type_t<S>> {};

/// Optional: `std::string entry_path(key const&) const`, where the entry of a key is
/// kept (directory_storage: its file), named in the cache's failure lines.
template <class S>
using entry_path_t = decltype(std::declval<S const&>().entry_path(std::declval<key const&>()));
template <class S>
using has_entry_path = is_detected_convertible<std::string, entry_path_t, S>;
template <class S>
using entry_path_address_t = decltype(&S::entry_path);

/// Optional (single flight, single_flight.hpp): `claim_answer try_claim(key const&,
/// claim_request const&)`, which claims `k` for this process before it compiles (answer
/// claimed), or says another process holds it (held), or that no claim can be taken
/// (none); and `void release_claim(key const&)`, which drops the claim of `k` that this
/// process took (the cache calls it only for one it took).
/// Neither throws. directory_storage, redis_storage and tiered_storage have them.
template <class S>
using try_claim_t =
    decltype(std::declval<S&>().try_claim(std::declval<key const&>(), std::declval<claim_request const&>()));
template <class S>
using release_claim_t = decltype(std::declval<S&>().release_claim(std::declval<key const&>()));
template <class S>
using has_claims =
    std::bool_constant<is_detected_exact<claim_answer, try_claim_t, S>::value && is_detected<release_claim_t, S>::value>;
template <class S>
using try_claim_address_t = decltype(&S::try_claim);
/// Optional, beside the claims (has_claims): `void wait_for_change(key const&,
/// std::chrono::nanoseconds timeout) const` (noexcept), which returns when the entry of
/// `k` may have arrived or its claim may have gone (directory_storage: a file system
/// notification on the entry's folder), and at the latest after `timeout`. A miss that
/// waits for another process's entry (single_flight.hpp) waits between its polls through
/// it, so that it wakes when the entry arrives, not at its next poll; without one, it
/// sleeps until the next poll.
template <class S>
using wait_for_change_t = decltype(std::declval<S const&>().wait_for_change(std::declval<key const&>(),
                                                                             std::declval<std::chrono::nanoseconds>()));
template <class S>
using has_wait_for_change = std::bool_constant<has_claims<S>::value && is_detected<wait_for_change_t, S>::value>;
template <class S>
using wait_for_change_address_t = decltype(&S::wait_for_change);
/// A waiting miss's pause between its polls: `*storage`'s wait_for_change (until the
/// entry of `k` may have arrived or its claim gone, at most `timeout`) when S has one and
/// `storage` is given; else a sleep of `timeout`. What single_flight.hpp's waits and a
/// tier without a local storage that has one (tiered_storage::wait_for_change) do.
template <class S>
void wait_for_change_or_sleep(S const* storage, key const& k, std::chrono::nanoseconds timeout) noexcept {
    if constexpr (has_wait_for_change<S>::value) {
        if (storage) return storage->wait_for_change(k, timeout);
    }
    (void)storage, (void)k;
    try {
        std::this_thread::sleep_for(timeout);
    } catch (...) {
    }
}
/// Optional, beside the claims (has_claims): `void try_claim_many(std::vector<key> const&
/// keys, claim_request const&, std::vector<claim_answer>& out)` (noexcept), the batch of
/// claims: `out` gets one answer per key, in the order of `keys`, `out[i]` claimed (this
/// process now holds the claim of `keys[i]`, which release_claim drops), held (another's
/// claim stands; its holder need not be said, and a dead one is not taken over: that is
/// try_claim's), or none (not claimed: the storage cannot, or failed), the whole batch in
/// as few exchanges as the storage can (redis_storage: pipelined, one per server or
/// cluster node) and bounded by the storage's own timeout. tiered_storage::prefetch takes
/// the remote claims of the keys its remote lacks through it (single flight), so that
/// their misses claim without a round trip of their own; a remote without one: none.
template <class S>
using try_claim_many_t = decltype(std::declval<S&>().try_claim_many(
    std::declval<std::vector<key> const&>(), std::declval<claim_request const&>(),
    std::declval<std::vector<claim_answer>&>()));
template <class S>
using has_try_claim_many = std::bool_constant<has_claims<S>::value && is_detected<try_claim_many_t, S>::value>;
template <class S>
using try_claim_many_address_t = decltype(&S::try_claim_many);

/// Optional, beside the claims (has_claims): `void release_claim_many(std::vector<key>
/// const& keys)` (noexcept), the batch of releases: what release_claim does for each key,
/// in as few exchanges as the storage can (redis_storage: pipelined, one per server or
/// node), bounded by the storage's own timeout. tiered_storage's background worker
/// releases the claims among its batch's jobs through it, and the tier the claims its
/// prefetch took and no miss used at its end; without one, one by one.
template <class S>
using release_claim_many_t = decltype(std::declval<S&>().release_claim_many(std::declval<std::vector<key> const&>()));
template <class S>
using has_release_claim_many = std::bool_constant<has_claims<S>::value && is_detected<release_claim_many_t, S>::value>;
template <class S>
using release_claim_many_address_t = decltype(&S::release_claim_many);

/// Optional, beside write_many and release_claim_many: `void write_many_then_release(
/// std::vector<std::pair<key, std::string_view>> const& entries, std::vector<key> const&
/// releases, std::vector<std::error_code>& out)` (noexcept): write_many(entries, out), then
/// release_claim_many(releases), each release reaching the storage after every write of
/// the batch was applied (a failed write's too: its waiters then compile), in as few
/// exchanges as the storage can (redis_storage: one on a server, the releases pipelined
/// after the SETs on the same connection, which the server applies in order; a cluster's
/// writes first, then its releases). tiered_storage's background worker sends a batch
/// whose jobs hold releases through it, one exchange fewer per batch.
template <class S>
using write_many_then_release_t = decltype(std::declval<S&>().write_many_then_release(
    std::declval<std::vector<std::pair<key, std::string_view>> const&>(), std::declval<std::vector<key> const&>(),
    std::declval<std::vector<std::error_code>&>()));
template <class S>
using has_write_many_then_release =
    std::bool_constant<has_write_many<S>::value && has_release_claim_many<S>::value &&
                       is_detected<write_many_then_release_t, S>::value>;
template <class S>
using write_many_then_release_address_t = decltype(&S::write_many_then_release);

/// Optional, beside read_many and try_claim_many: `void read_many_claiming(std::vector<key>
/// const& keys, std::size_t max, std::vector<key> const& to_claim, claim_request const&,
/// std::vector<std::pair<read_result, std::string>>& out, std::vector<claim_answer>&
/// claims)` (noexcept): read_many(keys, max, out), and the claims of the keys of
/// `to_claim` (each also in `keys`) whose entries are absent, `claims` getting one answer
/// per key of `to_claim`, in its order: claimed (this process now holds it; the entry was
/// absent when it was taken), held (another's claim stands; the entry was absent), or
/// none (not claimed: the entry was there, or the storage could not claim, failed, or had
/// no answer: it may then hold the claim all the same, as try_claim_many's none). In as
/// few exchanges as the storage can (redis_storage on a server: one, a script per key
/// that claims only when the entry is absent pipelined after the reads; on a cluster, or
/// a server that refuses scripts, the reads, then try_claim_many for the keys they found
/// absent). tiered_storage::prefetch takes its claims ahead through it when there is one.
template <class S>
using read_many_claiming_t = decltype(std::declval<S&>().read_many_claiming(
    std::declval<std::vector<key> const&>(), std::declval<std::size_t>(), std::declval<std::vector<key> const&>(),
    std::declval<claim_request const&>(), std::declval<std::vector<std::pair<read_result, std::string>>&>(),
    std::declval<std::vector<claim_answer>&>()));
template <class S>
using has_read_many_claiming = std::bool_constant<has_read_many<S>::value && has_try_claim_many<S>::value &&
                                                  is_detected<read_many_claiming_t, S>::value>;
template <class S>
using read_many_claiming_address_t = decltype(&S::read_many_claiming);

/// read_many_claiming's second step where the claims could not ride with the reads: the
/// keys of `to_claim` at the indexes `which` whose reads in `out` (one per key of `keys`)
/// found them absent are claimed in one `claim_many(absent, answers)` (a try_claim_many),
/// each answer put in `claims` at its key's place. The others are left as they are.
template <class ClaimMany>
void claim_absent_after_reads(std::vector<key> const& keys, std::vector<std::pair<read_result, std::string>> const& out,
                              std::vector<key> const& to_claim, std::vector<std::size_t> const& which,
                              std::vector<claim_answer>& claims, ClaimMany&& claim_many) {
    std::unordered_map<key, std::size_t> read_at;
    for (std::size_t i = keys.size(); i-- > 0;) read_at[keys[i]] = i;
    std::vector<key> absent;
    std::vector<std::size_t> absent_at; // (their indexes in to_claim)
    for (std::size_t j : which) {
        if (j >= to_claim.size() || j >= claims.size()) continue;
        auto const it = read_at.find(to_claim[j]);
        if (it == read_at.end() || it->second >= out.size() || out[it->second].first.status != read_status::absent)
            continue;
        absent.push_back(to_claim[j]);
        absent_at.push_back(j);
    }
    if (absent.empty()) return;
    std::vector<claim_answer> answers;
    claim_many(absent, answers);
    for (std::size_t a = 0; a < absent.size() && a < answers.size(); ++a) claims[absent_at[a]] = answers[a];
}

/// Optional: `void prefetch(std::vector<key> const& keys, std::size_t max_size,
/// claim_request const& claims)` (noexcept), prefetch (has_prefetch) that may also claim
/// (single flight, `claims`) the keys whose entries the storage lacks, for the misses that
/// follow (tiered_storage: its remote's claims, in one more batch); basic_cache::prefetch
/// calls it when there is one and single flight is on.
template <class S>
using prefetch_claiming_t = decltype(std::declval<S&>().prefetch(
    std::declval<std::vector<key> const&>(), std::declval<std::size_t>(), std::declval<claim_request const&>()));
template <class S>
using has_prefetch_claiming = is_detected<prefetch_claiming_t, S>;

/// An optional member is *named* when `&S::name` is valid (one member of that name: not
/// overloaded, not a template); a named one must meet its requirement, or it would be
/// silently ignored.
template <template <class...> class Address, template <class...> class Has, class S>
using optional_member_valid = std::bool_constant<!is_detected<Address, S>::value || Has<S>::value>;

/// True when S meets every Storage requirement, optional members included; no diagnostics.
template <class S>
using is_storage = std::bool_constant<
    has_read<S>::value && has_write<S>::value && has_remove<S>::value &&
    optional_member_valid<usable_address_t, has_usable, S>::value &&
    optional_member_valid<corrupt_address_t, has_corrupt, S>::value &&
    optional_member_valid<peek_address_t, has_peek, S>::value &&
    optional_member_valid<read_remote_address_t, has_read_remote, S>::value &&
    optional_member_valid<list_address_t, has_list, S>::value &&
    optional_member_valid<entry_checked_address_t, has_entry_checked, S>::value &&
    optional_member_valid<set_logger_address_t, has_set_logger, S>::value &&
    optional_member_valid<entry_path_address_t, has_entry_path, S>::value &&
    optional_member_valid<try_claim_address_t, has_claims, S>::value &&
    optional_member_valid<try_claim_many_address_t, has_try_claim_many, S>::value &&
    optional_member_valid<wait_for_change_address_t, has_wait_for_change, S>::value &&
    optional_member_valid<write_made_at_address_t, has_write_made_at, S>::value &&
    optional_member_valid<release_claim_many_address_t, has_release_claim_many, S>::value &&
    optional_member_valid<write_many_then_release_address_t, has_write_many_then_release, S>::value &&
    optional_member_valid<read_many_claiming_address_t, has_read_many_claiming, S>::value &&
    optional_member_valid<storage_counters_address_t, has_storage_counters, S>::value &&
    optional_member_valid<record_counters_address_t, has_record_counters, S>::value &&
    optional_member_valid<from_env_address_t, has_any_from_env, S>::value &&
    optional_member_valid<environment_settings_address_t, has_environment_settings, S>::value>;
template <class S>
using reconnects_after_fork_t = decltype(S::reconnects_after_fork);
/// A remote that says (`static constexpr bool reconnects_after_fork = true`) that a
/// forked child never uses the connections it inherited: its first call there makes one
/// of its own (redis_storage). A tier then uses it in a child forked while its worker
/// still had uploads queued, which the parent sends on the inherited ones.
template <class S>
constexpr bool remote_reconnects_after_fork() noexcept {
    if constexpr (is_detected<reconnects_after_fork_t, S>::value) return bool(S::reconnects_after_fork);
    else return false;
}

} // namespace detail

/// Which optional Storage members S has (with the signature the cache, the tier and the
/// compile-cache tool call; see detail:: above): a member that is absent, or misspelt,
/// is false here, and the conformance kit prints the list.
template <class S>
struct storage_capabilities {
    static constexpr bool usable = detail::has_usable<S>::value;
    static constexpr bool corrupt = detail::has_corrupt<S>::value;
    static constexpr bool peek = detail::has_peek<S>::value;
    static constexpr bool list = detail::has_list<S>::value;
    static constexpr bool entry_checked = detail::has_entry_checked<S>::value;
    static constexpr bool set_logger = detail::has_set_logger<S>::value;
    static constexpr bool entry_path = detail::has_entry_path<S>::value;
    /// try_claim and release_claim (single flight).
    static constexpr bool claims = detail::has_claims<S>::value;
    static constexpr bool storage_counters = detail::has_storage_counters<S>::value;
    static constexpr bool record_counters = detail::has_record_counters<S>::value;
    /// A from_env the cache calls, in either form.
    static constexpr bool from_env = detail::has_any_from_env<S>::value;
    /// It is the deprecated `static std::optional<S> from_env(settings_reader&)`.
    static constexpr bool from_env_is_deprecated = detail::has_deprecated_from_env<S>::value;
    static constexpr bool environment_settings = detail::has_environment_settings<S>::value;

    /// Each optional member's name and whether S has it, in the order above.
    static constexpr std::pair<char const*, bool> members[] = {
        {"usable", usable},
        {"corrupt", corrupt},
        {"peek", peek},
        {"list", list},
        {"entry_checked", entry_checked},
        {"set_logger", set_logger},
        {"entry_path", entry_path},
        {"try_claim", claims},
        {"storage_counters", storage_counters},
        {"record_counters", record_counters},
        {from_env_is_deprecated ? "from_env (the deprecated settings_reader& form)" : "from_env", from_env},
        {"environment_settings", environment_settings},
    };
};

/// Checks a Storage policy, one requirement at a time, so that a user's own backend
/// that misses one gets a sentence naming it instead of a page of template errors.
template <class S>
struct check_storage {
    static_assert(detail::has_read<S>::value, "compile_cache: the Storage has no read member; expected "
                                              "`read_result read(key const&, std::string& out, std::size_t max)` "
                                              "(docs/policies.md)");
    static_assert(detail::has_write<S>::value, "compile_cache: the Storage has no write member; expected "
                                               "`std::error_code write(key const&, std::string_view)` "
                                               "(docs/policies.md)");
    static_assert(detail::has_remove<S>::value, "compile_cache: the Storage has no remove member; expected "
                                                "`std::error_code remove(key const&)` (docs/policies.md)");
    // An optional member that is named but would not be called: one sentence each.
    static_assert(detail::optional_member_valid<detail::usable_address_t, detail::has_usable, S>::value,
                  "compile_cache: the Storage's usable member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::corrupt_address_t, detail::has_corrupt, S>::value,
                  "compile_cache: the Storage's corrupt member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::peek_address_t, detail::has_peek, S>::value,
                  "compile_cache: the Storage's peek member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::read_remote_address_t, detail::has_read_remote, S>::value,
                  "compile_cache: the Storage's read_remote member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::list_address_t, detail::has_list, S>::value,
                  "compile_cache: the Storage's list member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::entry_checked_address_t, detail::has_entry_checked, S>::value,
                  "compile_cache: the Storage's entry_checked member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::set_logger_address_t, detail::has_set_logger, S>::value,
                  "compile_cache: the Storage's set_logger member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::entry_path_address_t, detail::has_entry_path, S>::value,
                  "compile_cache: the Storage's entry_path member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::try_claim_address_t, detail::has_claims, S>::value,
                  "compile_cache: the Storage's try_claim member has the wrong signature, or it has no "
                  "release_claim (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::try_claim_many_address_t, detail::has_try_claim_many, S>::value,
                  "compile_cache: the Storage's try_claim_many member has the wrong signature, or it has no "
                  "try_claim and release_claim (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::wait_for_change_address_t, detail::has_wait_for_change, S>::value,
                  "compile_cache: the Storage's wait_for_change member has the wrong signature, or it has no "
                  "try_claim and release_claim (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::write_made_at_address_t, detail::has_write_made_at, S>::value,
                  "compile_cache: the Storage's write_made_at member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::release_claim_many_address_t, detail::has_release_claim_many, S>::value,
                  "compile_cache: the Storage's release_claim_many member has the wrong signature, or it has no "
                  "try_claim and release_claim (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::write_many_then_release_address_t,
                                                detail::has_write_many_then_release, S>::value,
                  "compile_cache: the Storage's write_many_then_release member has the wrong signature, or it has "
                  "no write_many and release_claim_many (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::read_many_claiming_address_t, detail::has_read_many_claiming,
                                                S>::value,
                  "compile_cache: the Storage's read_many_claiming member has the wrong signature, or it has no "
                  "read_many and try_claim_many (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::storage_counters_address_t, detail::has_storage_counters, S>::value,
                  "compile_cache: the Storage's storage_counters member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::record_counters_address_t, detail::has_record_counters, S>::value,
                  "compile_cache: the Storage's record_counters member has the wrong signature (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::from_env_address_t, detail::has_any_from_env, S>::value,
                  "compile_cache: the Storage's from_env member has the wrong signature; expected `static "
                  "from_env_result<S> from_env(storage_settings const&)` (docs/policies.md)");
    static_assert(detail::optional_member_valid<detail::environment_settings_address_t, detail::has_environment_settings, S>::value,
                  "compile_cache: the Storage's environment_settings member has the wrong signature (docs/policies.md)");
    static constexpr bool value = true;
};

namespace detail {

/// S's answer to `settings` through its deprecated `std::optional<S> from_env(settings_reader&)`:
/// the reader's deprecated members answer from `settings`; the lines the storage reports
/// once it confirmed are said here, the last one being its reason when it returns
/// nullopt (off), so that the caller says the reason once, as for the new form.
template <class S>
from_env_result<S> from_env_of_deprecated_form(storage_settings const& settings) {
    settings_reader env = settings_reader_access::answering(settings);
    old_form_answers& answers = settings_reader_access::answers(env);
    auto say_all_but = [&](std::size_t kept) noexcept {
        for (std::size_t i = 0; i + kept < answers.after_confirm.size(); ++i)
            settings_reader_access::say(env, answers.after_confirm[i]);
    };
    std::optional<S> storage = [&] {
        try {
            return S::from_env(env);
        } catch (...) {
            say_all_but(0);
            throw;
        }
    }();
    if (storage) {
        say_all_but(0);
        return from_env_result<S>(std::move(*storage));
    }
    if (!answers.confirmed) return from_env_result<S>::not_configured();
    if (answers.after_confirm.empty()) return from_env_result<S>::off(answers.cache_off); // (empty: silent)
    say_all_but(1);
    return from_env_result<S>::off(answers.after_confirm.back());
}

/// S's answer to `settings`, in whichever form S has from_env; without one, S made from
/// the value of its main setting `PREFIX` + `main_suffix` (off: not configured).
template <class S>
from_env_result<S> storage_from_env(storage_settings const& settings, std::string_view main_suffix) {
    if constexpr (has_from_env<S>::value) {
        return S::from_env(settings);
    } else if constexpr (has_deprecated_from_env<S>::value) {
        return from_env_of_deprecated_form<S>(settings);
    } else {
        std::string value = settings.env.value(main_suffix);
        if (is_off(value)) return from_env_result<S>::not_configured();
        if (!settings.cache_off.empty()) return from_env_result<S>::off(settings.cache_off);
        return from_env_result<S>(S(std::move(value)));
    }
}

} // namespace detail

} // namespace compile_cache

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
namespace compile_cache {

/// C++20, for users' own templates: the traits check_storage asserts, as a concept.
/// basic_cache checks with the static_asserts, so that its diagnostic is the sentence.
template <class S>
concept Storage = detail::is_storage<S>::value;

} // namespace compile_cache
#endif
