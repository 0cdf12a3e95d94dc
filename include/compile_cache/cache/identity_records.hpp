// compile_cache: what basic_cache does with its identity records (identity_record.hpp): reads
// one, checked as any entry is, explains an absent miss from it (explain.hpp), and puts a
// stored entry first in it; over a storage that may write records late (write_deferred),
// holds the records it stored, decoded, and writes them in a batch; used by cache.hpp only.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/bounded_mutex.hpp>
#include <compile_cache/detail/fork_generation.hpp>
#include <compile_cache/detail/held_batch_bounds.hpp>
#include <compile_cache/detail/log.hpp>
#include <compile_cache/cache/signed_entry_checks.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/explain.hpp>
#include <compile_cache/identity_record.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/key/toolchain_component.hpp>
#include <compile_cache/statistics.hpp>
#include <compile_cache/storage/concept.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace compile_cache::detail {

/// The records a cache stored and holds, decoded, until it writes them in a batch: over a
/// storage with write_deferred and no remote only (one that lets records be written late:
/// directory_storage; identity_records::holds),
/// so that a miss and store of a kernel whose record is held neither reads, checks and
/// decodes it nor encodes and seals it. Shared by a cache's threads (one mutex), its own:
/// another cache, even over a copy of the same storage, sees the records once written.
/// The mutex is taken within a bound (bounded_mutex): a caller that does not get it
/// goes on without the held records (no explanation, the record not kept), so that a
/// child forked while another thread held it never waits for ever.
struct held_identity_records {
    /// The batch is written when it holds held_batch_bounds' keys (records) or bytes (of
    /// their encoded payloads), or when its oldest record is max_age_ns old: the bounds
    /// of directory_storage's deferred writes, the same constants. It is also written at
    /// the cache's flush_statistics() and destruction. A record is held from its store
    /// to the write.
    using bounds = held_batch_bounds;

    struct held {
        identity_record record;
        entry_metadata kernel; ///< the name, origin and time of its latest store (no components)
        std::size_t size = 0;  ///< encoded_identity_record_size(record)
    };

    bounded_mutex mutex;
    std::unordered_map<key, held> records; ///< by record key
    std::size_t bytes = 0;
    std::int64_t oldest_ns = 0;     ///< steady clock, when the first held record was stored
    unsigned generation = fork_generation(); ///< a forked child drops its parent's (the parent writes them)

    /// Drops what a forked child inherited; the caller holds `mutex`.
    void forget_if_forked() noexcept {
        unsigned const now = fork_generation();
        if (now == generation) return;
        records.clear();
        bytes = 0;
        generation = now;
    }
};

/// What an absent miss found of its kernel's record, for the store that follows.
struct record_read {
    std::string identity;                  ///< kernel_identity() of the kernel
    key record_key;                        ///< empty: not looked up
    std::vector<component_digest> components; ///< the missed key's, as a record keeps them
    std::optional<identity_record> record; ///< read from the storage (not held)
    bool held = false;                     ///< the record was held (held_identity_records)
    std::uint64_t last_compile_ns = 0;     ///< the compile time of its newest entry, 0: none
};

/// One cache's identity records, over its Storage: the cache's parts they need, by
/// reference, made anew for each use. An Info is an entry_info (cache.hpp): the kernel's
/// `identity`, `name` and `origin_file`. No call throws: a failure only loses the
/// explanation of a miss.
template <class Storage, class Hasher>
struct identity_records {
    Storage& storage;
    envelope_auth const& local;  ///< how the cache seals its entries and checks local ones
    envelope_auth const& remote; ///< how an entry from a tier's remote is checked (auth_for)
    toolchain_component<Hasher>& toolchain; ///< the cache's toolchain component, recorded as its parts
    statistics& stats;
    std::atomic<bool>& over_bound_logged; ///< a record over a bound was logged
    line_logger const& logger;
    held_identity_records& held; ///< used when `holds` only

    /// Whether records are held and written in a batch over this Storage: one that lets
    /// them be written late (write_deferred) and reads nothing from a remote. A tier
    /// (tiered_storage) gets each record at its store, as before, and uploads it as any
    /// store, so that the machines its remote feeds see it at once.
    static constexpr bool holds = has_write_deferred<Storage>::value && !has_from_remote_origin<Storage>::value;

    /// The record of the kernel identity `identity` (the entries stored for it, newest
    /// first), or nullopt when there is none or it does not check. `over_bound` is set when
    /// the record is there but over a bound (identity_record_max_size,
    /// identity_record_max_components): a forged one, ignored.
    std::optional<identity_record> read(std::string const& identity, bool& over_bound) noexcept {
        try {
            return read(identity, identity_record_key(identity), over_bound);
        } catch (...) {
            over_bound = false;
            return std::nullopt;
        }
    }

    /// The same, with the record's key `rk` (identity_record_key(identity)) already made. A
    /// local copy whose signer is no longer trusted gives way to the remote's record when
    /// that one verifies (settle_local_copy); one the remote finds too large sets
    /// `over_bound`, as a remote read of it would.
    std::optional<identity_record> read(std::string const& identity, key const& rk, bool& over_bound) noexcept {
        over_bound = false;
        try {
            std::string bytes;
            read_result rr = storage.read(rk, bytes, identity_record_max_size);
            if (rr.status == read_status::too_large) over_bound = true;
            if (rr.status != read_status::found) return std::nullopt;
            envelope_auth const* auth = &auth_for<Storage>(rr, local, remote);
            envelope_fields env = check_envelope(bytes, rk, identity_record_format, identity_record_max_size, *auth);
            std::string refetched; // the remote's record, when a refused copy gives way to it
            std::string_view record = bytes;
            if (auth == &local) {
                remote_refetch refetch;
                auth = settle_local_copy(storage, rk, identity_record_format, identity_record_max_size, local, remote,
                                          record, refetched, rr, env, refetch);
                if (refetch.status == read_status::too_large) over_bound = true; // (as the remote's read says)
            }
            // A tier counts it, keeps another secret's, and copies a sound record it read
            // from its remote, so that this machine has it locally (for its misses and
            // for `compile-cache explain`): resealed locally when it was checked by signature.
            tell_checked(storage, rk, record, rr, env.status, *auth, local);
            return identity_record_in(env, identity, over_bound);
        } catch (...) {
            return std::nullopt;
        }
    }

    /// The record of `identity` this cache holds (not yet written), copied; nullopt when
    /// it holds none.
    std::optional<identity_record> held_record(std::string const& identity) noexcept {
        if constexpr (holds) {
            try {
                key const rk = identity_record_key(identity);
                std::unique_lock<std::timed_mutex> const lock = held.mutex.lock();
                if (!lock.owns_lock()) return std::nullopt;
                held.forget_if_forked();
                auto const it = held.records.find(rk);
                if (it != held.records.end()) return it->second.record;
            } catch (...) {
            }
        }
        return std::nullopt;
    }

    /// What changed since the kernel of `info` was last stored under another key than
    /// `k`, from its identity record: the one this cache holds, else the one read from the
    /// storage, which is left in `previous` for the store that follows (it updates the
    /// record). Kind none when nothing could be read. A record over a bound is ignored,
    /// counted records-ignored and logged once: the miss is left unexplained, and the
    /// store that follows replaces the record.
    template <class Info>
    miss_explanation explain(key_result const& k, Info const& info, record_read& previous) noexcept {
        try {
            previous.identity = kernel_identity(info.identity, info.name, info.origin_file);
            previous.components = components_of(k);
            previous.record_key = identity_record_key(previous.identity); // last: record() takes all three
            if constexpr (holds) {
                // (A forked child may read its parent's held records: they are right; it
                // only never writes them: forget_if_forked, at its first store.)
                std::unique_lock<std::timed_mutex> const lock = held.mutex.lock();
                if (!lock.owns_lock()) { // (not had within its bound: no explanation, none looked up)
                    previous.record_key = key();
                    return {};
                }
                auto const it = held.records.find(previous.record_key);
                if (it != held.records.end()) {
                    identity_record const& r = it->second.record;
                    previous.held = true;
                    previous.last_compile_ns = r.history.empty() ? 0 : r.history.front().compile_ns;
                    return explain_absent(&r, k.value(), previous.components, info.identity, info.name,
                                          info.origin_file);
                }
            }
            bool over_bound = false;
            previous.record = read(previous.identity, previous.record_key, over_bound);
            if (over_bound) {
                stats.record_ignored();
                if (!over_bound_logged.exchange(true)) log_with(logger, [&] { return record_ignored_line(info.name); });
                return {};
            }
            if (previous.record && !previous.record->history.empty())
                previous.last_compile_ns = previous.record->history.front().compile_ns;
            return explain_absent(previous.record ? &*previous.record : nullptr, k.value(), previous.components,
                                  info.identity, info.name, info.origin_file);
        } catch (...) {
            return {};
        }
    }

    /// After a store of the entry under `k` (its metadata `meta`): puts it first in the
    /// record of its kernel's identity. `previous` is what an absent miss found; null:
    /// read it now. When `holds`, the record is held (decoded, this entry first) and
    /// written with the batch (write_held); else sealed and written now.
    /// Best effort: a failure only loses the explanation of a later miss.
    template <class Info>
    void record(key_result const& k, Info const& info, entry_metadata const& meta, record_read* previous) noexcept {
        try {
            bool const looked_up = previous && !previous->record_key.empty();
            std::string identity = looked_up ? std::move(previous->identity)
                                             : kernel_identity(info.identity, info.name, info.origin_file);
            key const rk = looked_up ? previous->record_key : identity_record_key(identity);
            recorded_entry newest{k.value(), meta.created_ns, meta.compile_ns,
                                  looked_up ? std::move(previous->components) : components_of(k)};
            if constexpr (holds) {
                if (hold(rk, newest, meta)) return;
                // Not held: the record as the miss read it, or as the storage has it now.
                identity_record base;
                if (looked_up && !previous->held) { // (as the miss read it: none is none, not read again)
                    if (previous->record) base = std::move(*previous->record);
                } else {
                    bool over_bound = false;
                    if (std::optional<identity_record> now = read(identity, rk, over_bound)) base = std::move(*now);
                }
                base.identity = std::move(identity);
                put_first(base, std::move(newest));
                hold_new(rk, std::move(base), meta);
            } else {
                std::optional<identity_record> read_now;
                std::optional<identity_record> const* before = previous ? &previous->record : nullptr;
                if (!before) {
                    bool over_bound = false;
                    read_now = read(identity, rk, over_bound);
                    before = &read_now;
                }
                std::string const entry = sealed_identity_record(std::move(identity), std::move(newest),
                                                                 *before ? &**before : nullptr, meta, local);
                // A storage that can defer the write (a tier over directory_storage) gets it
                // that way: the record is for explanations, and losing the latest one in a
                // crash loses no entry.
                if (!entry.empty()) {
                    if constexpr (has_write_deferred<Storage>::value)
                        (void)storage.write_deferred(rk, entry);
                    else
                        (void)storage.write(rk, entry);
                }
            }
        } catch (...) {
        }
    }

    /// Writes the records held (when `holds`), each merged first
    /// with the record the storage has now (merge_identity_records: what other processes
    /// stored meanwhile is kept), sealed, and written at its newest entry's time
    /// (write_dated); then the storage's held writes are made (flush_deferred: one pack
    /// in a directory). Best effort.
    void write_held() noexcept {
        if constexpr (holds) {
            try {
                std::unordered_map<key, held_identity_records::held> batch;
                {
                    std::unique_lock<std::timed_mutex> const lock = held.mutex.lock();
                    if (!lock.owns_lock()) return; // (held until a later write)
                    held.forget_if_forked();
                    batch.swap(held.records);
                    held.bytes = 0;
                }
                if constexpr (is_detected<look_at_records_now_t, Storage>::value)
                    if (!batch.empty()) storage.look_at_records_now(); // what other processes wrote, merged
                for (auto& [rk, h] : batch) {
                    try {
                        bool over_bound = false;
                        if (std::optional<identity_record> const now = read(h.record.identity, rk, over_bound))
                            merge_identity_records(h.record, *now);
                        std::string const entry = sealed_identity_record(rk, h.record, h.kernel, local);
                        if (!entry.empty()) (void)write_dated(rk, entry, h.kernel.created_ns);
                    } catch (...) {
                    }
                }
                // A storage that holds them back (directory_storage: in a pack) makes them now:
                // written here means written (a forked child's flush, a host's at a point of its own).
                if constexpr (is_detected<flush_deferred_t, Storage>::value)
                    if (!batch.empty()) (void)storage.flush_deferred();
            } catch (...) {
            }
        }
    }

private:
    // Writes a record of the batch with, as its time, its newest entry's `created_ns`
    // (the storage's write_made_at, when it has one: directory_storage), so that
    // eviction, which goes by that time, does not take it for newer than the entries of
    // its run: written at the cache's end, it would be kept while they go. Else write().
    std::error_code write_dated(key const& rk, std::string_view entry, std::int64_t created_ns) {
        if constexpr (has_write_made_at<Storage>::value)
            return storage.write_made_at(rk, entry, created_ns);
        else
            return storage.write(rk, entry);
    }

    // Puts `newest` first in the held record under `rk`: false when none is held; true
    // also when the mutex was not had within its bound (the entry is not recorded).
    bool hold(key const& rk, recorded_entry& newest, entry_metadata const& meta) {
        bool due = false;
        {
            std::unique_lock<std::timed_mutex> const lock = held.mutex.lock();
            if (!lock.owns_lock()) return true;
            held.forget_if_forked();
            auto const it = held.records.find(rk);
            if (it == held.records.end()) return false;
            put_first(it->second.record, std::move(newest));
            keep_kernel(it->second, meta);
            due = resized(it->second);
        }
        if (due) write_held();
        return true;
    }

    // Holds `r`, the record under `rk` (merged into one another thread held meanwhile);
    // not when the mutex was not had within its bound.
    void hold_new(key const& rk, identity_record r, entry_metadata const& meta) {
        bool due = false;
        {
            std::unique_lock<std::timed_mutex> const lock = held.mutex.lock();
            if (!lock.owns_lock()) return;
            held.forget_if_forked();
            if (held.records.empty()) held.oldest_ns = steady_ns();
            auto [it, added] = held.records.try_emplace(rk);
            if (added)
                it->second.record = std::move(r);
            else
                merge_identity_records(it->second.record, r);
            keep_kernel(it->second, meta);
            due = resized(it->second);
        }
        if (due) write_held();
    }

    static void keep_kernel(held_identity_records::held& h, entry_metadata const& meta) {
        h.kernel.name = meta.name;
        h.kernel.origin_file = meta.origin_file;
        h.kernel.origin_line = meta.origin_line;
        h.kernel.created_ns = meta.created_ns;
    }

    // Accounts for the new size of `h`; whether the batch is due. The caller holds the mutex.
    bool resized(held_identity_records::held& h) {
        held.bytes -= h.size;
        h.size = encoded_identity_record_size(h.record) + h.kernel.name.size() + h.kernel.origin_file.size();
        held.bytes += h.size;
        return held_identity_records::bounds::due(held.records.size(), held.bytes, steady_ns() - held.oldest_ns);
    }

    // The key's components as an identity record keeps them (toolchain_component::with_parts).
    std::vector<component_digest> components_of(key_result const& k) {
        return toolchain.with_parts(k.components(), identity_record_digest_size);
    }
};

} // namespace compile_cache::detail
