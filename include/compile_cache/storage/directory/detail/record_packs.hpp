// compile_cache: packs of identity records in a directory_storage directory, many kernels'
// records in one entry file, and the index a process keeps of them (docs/design.md,
// "Identity records in packs"); used by directory_storage and the compile-cache tool.
//
//   DIR/ab/<hex pack key>    a pack: an entry under a 33-byte key ending pack_key_marker,
//                            whose first 8 bytes are the time it was written (big-endian)
//   DIR/.cc-records/<hex>    a pack's marker (a symlink to it, never followed), by which
//                            readers find the packs without listing the fan-out folders
//
// A pack: a header (pack_magic, the record count, the CRC-32C of the header's first 12
// bytes and the slots), a slot per record (its 33-byte key, 7 zero bytes, the time this
// version of it was written, its offset and length), then the records, each a sealed
// envelope as a record file held. Little-endian. Written whole (temp file, rename), never
// changed: a new pack holds a record's later versions, and the newest version wins.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/record_key_shape.hpp>
#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/directory/detail/directory_files.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace compile_cache::detail::directory_storage_impl {

inline constexpr char packs_folder[] = ".cc-records";
inline constexpr char pack_magic[8] = {'C', 'C', 'R', 'P', 'A', 'C', 'K', '1'};
inline constexpr std::size_t pack_header_size = 16;
inline constexpr std::size_t pack_slot_size = 56;
/// A pack holds at most this many records and this many bytes of them: a batch of
/// records (held_batch_bounds) fits, and so do the small packs merged into it.
inline constexpr std::size_t pack_max_records = 4096;
inline constexpr std::size_t pack_max_bytes = std::size_t{4} << 20;
/// The most records a process indexes (about 80 bytes each, 10 MiB in all): the newest
/// packs' first.
inline constexpr std::size_t pack_index_max_records = std::size_t{1} << 17;
/// A write of records merges the smallest packs into its own when the index holds more
/// packs than packs_merged_above: at most that many, within a pack's bounds, and only
/// when at least packs_merged_at_least fit (so that a record is rewritten about once).
inline constexpr std::size_t packs_merged_above = 16;
inline constexpr std::size_t packs_merged_at_least = 8;
/// How long a record's read or write waits for the process's index of packs (held by
/// another thread while it lists the markers): then the read is absent, and the write
/// merges no packs.
inline constexpr std::chrono::milliseconds pack_index_wait{200};
/// A read looks at the markers' folder (a stat) at most this often.
inline constexpr std::int64_t packs_looked_at_every_ns = 1000000000;

inline bool is_record_key(key const& k) noexcept {
    return k.size() == record_key_size && k.data()[record_key_size - 1] == record_key_marker;
}
inline bool is_pack_key(key const& k) noexcept {
    return k.size() == record_key_size && k.data()[record_key_size - 1] == pack_key_marker;
}
/// The same, for a key's hex (an entry's or a marker's name).
inline bool is_pack_name(std::string_view hex) noexcept {
    if (hex.size() != 2 * record_key_size || hex.substr(hex.size() - 2) != "1e") return false;
    return std::all_of(hex.begin(), hex.end(), is_lower_hex_digit);
}

/// A record to put in a pack.
struct packed_record {
    key k;
    std::int64_t version_ns = 0; ///< when this version was written (the newest version wins)
    std::string_view bytes;
};

/// A record a pack holds, as its slot says.
struct pack_slot {
    key k;
    std::int64_t version_ns = 0;
    std::uint32_t offset = 0, length = 0;
};

/// For tests: called at each look at the packs' markers, which holds the index's mutex.
inline thread_local void (*during_pack_listing_for_testing)() = nullptr;
/// For tests: called by a write of records once it has chosen the packs it merges, before it reads them.
inline thread_local void (*after_pack_merge_planned_for_testing)() = nullptr;

/// A fresh pack key: the time now, then random bytes.
COMPILE_CACHE_DECL key new_pack_key();

/// The pack of `records` (at most pack_max_records, their keys record keys).
COMPILE_CACHE_DECL std::string encode_pack(std::vector<packed_record> const& records);

/// The slots of the pack whose first bytes are `head`, in a file of `file_size` bytes:
/// false when it is not a sound pack (magic, CRC, bounds: every record inside the file,
/// each at most record_max_size, each key a record key). `head` holds at least the
/// header and slots (pack_index_size).
COMPILE_CACHE_DECL bool parse_pack_index(std::string_view head, std::uint64_t file_size, std::vector<pack_slot>& out);

/// How many bytes the header and slots of a pack take, from its header (0: no pack).
COMPILE_CACHE_DECL std::size_t pack_index_size(std::string_view header);

/// Reads the header and slots of the pack open at `fd` (`file_size` bytes) into `out`;
/// false when it cannot be read or is not sound (parse_pack_index).
COMPILE_CACHE_DECL bool read_pack_index(int fd, std::uint64_t file_size, std::vector<pack_slot>& out);

/// The pack names (markers) in the markers' folder open at `folder_fd`, appended to
/// `names`; false when it cannot be listed (opened, or read to its end).
COMPILE_CACHE_DECL bool list_markers(int folder_fd, std::vector<std::string>& names);

/// Where a record is.
struct record_location {
    key pack;
    std::int64_t version_ns = 0;
    std::uint32_t offset = 0, length = 0;
};

/// The records of the packs this process knows, by the first 8 bytes of their keys
/// (a record read is checked against its whole key by the cache, as any entry is), at
/// most pack_index_max_records: each pack's records, sorted, and each record's newest
/// version, hashed, so that a lookup is one probe. Its members are used under `mutex`.
struct record_pack_index {
    struct record {
        std::uint64_t fingerprint = 0;
        std::int64_t version_ns = 0;
        std::uint32_t offset = 0, length = 0;
    };
    struct pack {
        key name;
        std::uint32_t id = 0;         ///< its number in this index
        std::size_t bytes = 0;        ///< of its records
        std::vector<record> records; ///< by fingerprint
    };
    struct newest {
        std::uint32_t pack = 0; ///< its pack's id
        std::uint32_t offset = 0, length = 0;
        std::int64_t version_ns = 0;
    };

    std::mutex mutex;
    std::vector<pack> packs; ///< in the order they were indexed
    std::unordered_map<std::uint64_t, newest> newest_of; ///< each fingerprint's newest version
    /// A bit per fingerprint's low bits, set for every one in newest_of (and left set when one
    /// goes), at least 16 bits per fingerprint: most misses are answered here, in a few
    /// hundred KiB at most, without newest_of's cache misses.
    std::vector<std::uint64_t> present;
    std::size_t present_marks = 0; ///< fingerprints marked since `present` was made (gone ones included)
    std::uint32_t next_id = 1;
    std::size_t records = 0;
    /// Packs listed but not indexed (over the bound, or unsound): not read again at each listing.
    std::unordered_set<std::string> left_out;
    /// Records this process removed (directory_storage::remove): by fingerprint, the
    /// version it removed; hidden from its reads until a newer one is written (at most
    /// pack_index_max_records: past that, forgotten).
    std::unordered_map<std::uint64_t, std::int64_t> removed;
    std::int64_t folder_mtime_ns = -1; ///< the markers' folder's mtime at the last listing
    std::int64_t looked_ns = 0;        ///< (steady clock) when the folder was last looked at
    bool stale = true;                 ///< list the folder at the next look

    COMPILE_CACHE_DECL static std::uint64_t fingerprint(key const& k) noexcept;
    /// False when no record whose fingerprint is `fp` is indexed; true when one may be.
    COMPILE_CACHE_DECL bool may_hold(std::uint64_t fp) const noexcept;
    /// The newest version of the record whose fingerprint is `fp` in the packs indexed, if
    /// any: none when this process removed that version, and `hide_removed`.
    COMPILE_CACHE_DECL std::optional<record_location> find(std::uint64_t fp, bool hide_removed = true) const;
    /// Hides the newest version of `fp` known now from this process's reads.
    COMPILE_CACHE_DECL void hide(std::uint64_t fp);
    /// Indexes the pack `name` with `slots`; a record's newer version elsewhere stays its newest.
    COMPILE_CACHE_DECL void add(key const& name, std::vector<pack_slot> const& slots);
    /// Forgets the pack `name`: its records' newest versions are then the other packs'.
    COMPILE_CACHE_DECL void drop(key const& name);
    COMPILE_CACHE_DECL bool knows(key const& name) const;
    /// Forgets every pack.
    COMPILE_CACHE_DECL void clear() noexcept;
    /// Drops the oldest packs until at most pack_index_max_records records are indexed.
    COMPILE_CACHE_DECL void bound();

private:
    // Sizes `present` for newest_of as it is now and sets its bits.
    COMPILE_CACHE_DECL void remake_present();
    // Sets `fp`'s bit in `present`.
    COMPILE_CACHE_DECL void mark_present(std::uint64_t fp) noexcept;
};

} // namespace compile_cache::detail::directory_storage_impl

#include <compile_cache/storage/directory/detail/impl/record_packs.ipp>
