// compile_cache: what basic_cache does with its identity records (identity_record.hpp): reads
// one, checked as any entry is, explains an absent miss from it (explain.hpp), and puts a
// stored entry first in it; used by cache.hpp only.
#pragma once

#include <compile_cache/detail/config.hpp>

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
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace compile_cache::detail {

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

    /// The record of the kernel identity `identity` (the entries stored for it, newest
    /// first), or nullopt when there is none or it does not check. `over_bound` is set when
    /// the record is there but over a bound (identity_record_max_size,
    /// identity_record_max_components): a forged one, ignored.
    std::optional<identity_record> read(std::string const& identity, bool& over_bound) noexcept {
        over_bound = false;
        try {
            key const rk = identity_record_key(identity);
            std::string bytes;
            read_result const rr = storage.read(rk, bytes, identity_record_max_size);
            if (rr.status == read_status::too_large) over_bound = true;
            if (rr.status != read_status::found) return std::nullopt;
            envelope_auth const& auth = auth_for<Storage>(rr, local, remote);
            envelope_fields const env =
                check_envelope(bytes, rk, identity_record_format, identity_record_max_size, auth);
            // A tier counts it, keeps another secret's, and copies a sound record it read
            // from its remote, so that this machine has it locally (for its misses and
            // for `compile-cache explain`): resealed locally when it was checked by signature.
            tell_checked(storage, rk, bytes, rr, env.status, auth, local);
            return identity_record_in(env, identity, over_bound);
        } catch (...) {
            return std::nullopt;
        }
    }

    /// What changed since the kernel of `info` was last stored under another key than
    /// `k`, from its identity record, which is left in `previous` for the store that
    /// follows (it updates the record). Kind none when nothing could be read. A record
    /// over a bound is ignored, counted records-ignored and logged once: the miss is left
    /// unexplained, and the store that follows replaces the record.
    template <class Info>
    miss_explanation explain(key_result const& k, Info const& info, std::optional<identity_record>& previous) noexcept {
        try {
            bool over_bound = false;
            previous = read(kernel_identity(info.identity, info.name, info.origin_file), over_bound);
            if (over_bound) {
                stats.record_ignored();
                if (!over_bound_logged.exchange(true)) log_with(logger, [&] { return record_ignored_line(info.name); });
                return {};
            }
            return explain_absent(previous ? &*previous : nullptr, k.value(), components_of(k), info.identity,
                                  info.name, info.origin_file);
        } catch (...) {
            return {};
        }
    }

    /// After a store of the entry under `k` (its metadata `meta`): puts it first in the
    /// record of its kernel's identity. `previous` is the record as an absent miss read it;
    /// null: read it now. Best effort, one write: a failure only loses the explanation of
    /// a later miss.
    template <class Info>
    void record(key_result const& k, Info const& info, entry_metadata const& meta,
                std::optional<identity_record> const* previous) noexcept {
        try {
            std::string identity = kernel_identity(info.identity, info.name, info.origin_file);
            std::optional<identity_record> read_now;
            if (!previous) {
                bool over_bound = false;
                read_now = read(identity, over_bound);
                previous = &read_now;
            }
            key const rk = identity_record_key(identity);
            std::string const entry = sealed_identity_record(
                std::move(identity), {k.value(), meta.created_ns, meta.compile_ns, components_of(k)},
                *previous ? &**previous : nullptr, meta, local);
            // A storage that can defer the write (directory_storage: batched per process,
            // so that a store creates one file) gets it that way; the record is for
            // explanations, and losing the latest one in a crash loses no entry.
            if (!entry.empty()) {
                if constexpr (has_write_deferred<Storage>::value)
                    (void)storage.write_deferred(rk, entry);
                else
                    (void)storage.write(rk, entry);
            }
        } catch (...) {
        }
    }

private:
    // The key's components as an identity record keeps them (toolchain_component::with_parts).
    std::vector<component_digest> components_of(key_result const& k) {
        return toolchain.with_parts(k.components(), identity_record_digest_size);
    }
};

} // namespace compile_cache::detail
