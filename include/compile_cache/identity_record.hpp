// compile_cache: a kernel's identity record, what miss explanations (explain.hpp) are made
// from. Each store also records, under the kernel's identity, the keys stored for it
// (newest first, a few) with their named components.
//
// The record is an ordinary entry: an envelope (so it is checked like any other, and
// authenticated under the cache's secret) stored through the same Storage under a key
// derived from the identity, with its own format id. Any Storage keeps it without a
// member of its own. Its key is 33 bytes, the last one identity_record_marker, a size no
// Hasher's digest has, so that a tool can tell records from kernels by name alone.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/endian.hpp>
#include <compile_cache/detail/record_key_shape.hpp>
#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/key.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compile_cache {

/// One entry stored for a kernel, as its identity record keeps it.
struct recorded_entry {
    key entry_key;
    std::int64_t created_ns = 0;
    std::uint64_t compile_ns = 0;
    /// The key's components, the toolchain as its parts (`toolchain: compiler`, ...),
    /// digests cut to identity_record_digest_size bytes.
    std::vector<component_digest> components;
};

/// What is recorded under a kernel's identity: its latest entries, newest first.
struct identity_record {
    std::string identity;
    std::vector<recorded_entry> history;
};

/// How many entries a record keeps.
inline constexpr std::size_t identity_record_history = 8;
/// A record keeps the first bytes of each component's digest only: enough to tell
/// whether it changed (a change goes unseen with probability 2^-64), and a record of 8
/// entries of 15 components stays under 4 KiB.
inline constexpr std::size_t identity_record_digest_size = 8;
/// The format id of a record's envelope (a kernel's entry carries its serializer's).
inline constexpr std::string_view identity_record_format = "compile_cache.identity-record 1";
/// The last byte of a record's 33-byte key.
inline constexpr unsigned char identity_record_marker = detail::record_key_marker;
inline constexpr std::size_t identity_record_key_size = detail::record_key_size;
/// A record is small; one over this bound is not read (counted records-ignored).
inline constexpr std::size_t identity_record_max_size = detail::record_max_size;
/// The most components one recorded entry may list; a record with an entry over it is
/// not read either (counted records-ignored). No key a host builds comes near it (a
/// kernel keyed on 4096 callees), and comparing is linear in the components anyway.
inline constexpr std::size_t identity_record_max_components = 4096;

/// The identity of a kernel: the host's own string, or its name and origin file.
COMPILE_CACHE_DECL std::string kernel_identity(std::string_view given, std::string_view name,
                                               std::string_view origin_file);

/// The key a kernel identity's record is stored under.
COMPILE_CACHE_DECL key identity_record_key(std::string_view identity);

/// Whether `k` is the key of an identity record rather than of a kernel.
inline bool is_identity_record_key(key const& k) noexcept {
    return k.size() == identity_record_key_size && k.data()[identity_record_key_size - 1] == identity_record_marker;
}

/// The same, for a key's hex (an entry's file name).
inline bool is_identity_record_name(std::string_view hex) noexcept {
    return hex.size() == 2 * identity_record_key_size && hex.substr(hex.size() - 2) == "1d";
}

/// The payload of a record's envelope.
COMPILE_CACHE_DECL std::string encode_identity_record(identity_record const& r);

/// Parses what encode_identity_record wrote, within bounds; nullopt for anything else,
/// and for a record with an entry of more than identity_record_max_components.
COMPILE_CACHE_DECL std::optional<identity_record> decode_identity_record(std::string_view payload);

/// The same; `over_bound` is set when the payload was refused for holding an entry of
/// more than identity_record_max_components (a forged record, not a damaged one).
COMPILE_CACHE_DECL std::optional<identity_record> decode_identity_record(std::string_view payload,
                                                                         bool& over_bound);

namespace detail {
COMPILE_CACHE_DECL void append_key8(std::string& out, key const& k);
COMPILE_CACHE_DECL bool read_key8(envelope_reader& r, key& k);

/// The key of the identity record a host that gives no identity of its own writes for
/// the kernel of `checked_entry` (by its name and origin file); nullopt when its header
/// does not parse. What tiered_storage copies along with a remote entry.
COMPILE_CACHE_DECL std::optional<key> record_key_of_entry(std::string_view checked_entry);

/// Whether `bytes` look like the identity record stored under `record_key`: its header
/// names that key and the record format (the check value is the reader's to verify).
COMPILE_CACHE_DECL bool looks_like_record(std::string_view bytes, key const& record_key);

/// The record of `identity` in the entry stored under its key, from that entry's check
/// (check_envelope with identity_record_format and identity_record_max_size): nullopt
/// unless the check is ok and the payload is the record of that very identity.
/// `over_bound` is set when the record is there but over a bound (too large, or an entry
/// of more than identity_record_max_components): a forged one, ignored.
COMPILE_CACHE_DECL std::optional<identity_record> identity_record_in(envelope_fields const& checked,
                                                                     std::string_view identity, bool& over_bound);

/// The sealed entry (in `auth`'s mode) of the identity record of `identity` once the
/// entry `newest` is stored: `newest` first, then the entries of `previous` (null: none)
/// under other keys, identity_record_history at most. Its envelope names the kernel as
/// `kernel` (the metadata of the kernel's own entry) does. Over identity_record_max_size,
/// the newest entries that fit; empty when `newest` alone is over it: then no record is written.
COMPILE_CACHE_DECL std::string sealed_identity_record(std::string identity, recorded_entry newest,
                                                      identity_record const* previous, entry_metadata const& kernel,
                                                      envelope_auth const& auth);

/// The sealed entry (in `auth`'s mode) of the record `r` as it is, its envelope naming
/// the kernel as `kernel` does; over identity_record_max_size, of its newest entries that
/// fit; empty when its newest alone is over it.
COMPILE_CACHE_DECL std::string sealed_identity_record(identity_record const& r, entry_metadata const& kernel,
                                                      envelope_auth const& auth);

/// Puts `newest` first in `r`'s history, drops an older entry under the same key, and
/// keeps identity_record_history entries at most.
COMPILE_CACHE_DECL void put_first(identity_record& r, recorded_entry newest);

/// Adds to `ours` the entries of `theirs` (the same identity's record as another
/// process or machine wrote it) under keys `ours` lacks: the history is then the
/// newest identity_record_history of both, by created_ns, `ours` first among equals.
COMPILE_CACHE_DECL void merge_identity_records(identity_record& ours, identity_record const& theirs);

/// The size of encode_identity_record(r), without encoding it.
COMPILE_CACHE_DECL std::size_t encoded_identity_record_size(identity_record const& r) noexcept;

/// Appends encode_identity_record(r) to `out`.
COMPILE_CACHE_DECL void append_identity_record(std::string& out, identity_record const& r);

/// sealed_identity_record(r, kernel, auth), its key `rk` (identity_record_key(r.identity))
/// given rather than hashed again.
COMPILE_CACHE_DECL std::string sealed_identity_record(key const& rk, identity_record const& r,
                                                      entry_metadata const& kernel, envelope_auth const& auth);
} // namespace detail

} // namespace compile_cache

#include <compile_cache/impl/identity_record.ipp>
