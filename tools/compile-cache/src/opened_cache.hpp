// compile-cache: the cache a command names — a directory, a SQLite file, a Redis server
// or cluster — opened as one thing, a storage: a listing, a read that leaves the
// entry's use alone, a write and a remove, and clear. Every command goes through it;
// what only a directory has (its temp and other files, the ledger, the counters) is
// in `directory_facts`, filled by its listing.
#pragma once

#include "cache_directory.hpp"
#include "output.hpp"

#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/concept.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace compile_cache_tool {

// Exit statuses (also in --help).
inline constexpr int exit_ok = 0;
inline constexpr int exit_bad_entries = 1; ///< verify (or show) found an entry that does not check; copy skipped one
inline constexpr int exit_usage = 2;       ///< a usage error, or the cache / KEY_PREFIX / the secret file is not usable
inline constexpr int exit_failed = 3;      ///< the storage refused: a folder that cannot be read, a removal, a server down
inline constexpr int exit_unchecked = 4;   ///< verify found no bad entry but could not check some (--allow-unchecked: 0)

/// Says `message` on stderr (after "compile-cache: "); returns `status`.
int fail(std::string const& message, int status);

/// One entry or identity record as the cache's listing found it.
struct listed_entry {
    compile_cache::key k;
    std::string name;        ///< its key in lower-case hex
    std::uint64_t size = 0;
    std::int64_t use_ns = 0; ///< its last use, ns since the epoch; 0: the storage does not know
    /// (a directory) The hex name of the pack of identity records that holds this record
    /// (its newest version); empty: a file of its own.
    std::string pack{};
};

/// A listing: the kernels' entries, and the identity records (explain.hpp) apart.
struct cache_listing {
    std::vector<listed_entry> entries, records;
};

/// What the listing of a cache directory finds besides entries.
struct directory_facts {
    std::uint64_t temp_files = 0;  ///< stores in progress, or left by killed ones
    std::uint64_t other_files = 0; ///< not the cache's; never touched
    bool any_entry = false;
    bool has_ledger = false;       ///< `.cc-stats`
    bool has_counters = false;     ///< `.cc-counters/`
    bool has_settings = false;     ///< `.cc-settings`
    std::uint64_t claim_files = 0; ///< claims (single flight) of compiles in progress, or left by killed ones
    /// The sound packs of identity records (`ab/<hex ending 1e>`) a marker names
    /// (`.cc-records/<hex>`), listed as their records; one that cannot be read or is not
    /// sound is listed as an entry instead, for verify.
    std::vector<entry_file> packs{};
    /// The sound packs no marker names (a host stopped between writing one and its marker):
    /// hosts never read their records, so neither are they listed; each is still a file
    /// that counts against the size limit, evicted, pruned and cleared as any entry.
    std::vector<entry_file> unmarked_packs{};
    /// Identity record files of earlier releases (`ab/<hex ending 1d>`): no host of this
    /// release reads them (records are read from the packs a marker names), so they are not
    /// listed as records, nor read; each is still a file that counts against the size limit,
    /// evicted, pruned and cleared as any entry.
    std::vector<entry_file> earlier_record_files{};
    /// The names of the markers (`.cc-records/<hex>`) whose pack (`ab/<hex>`) is gone: a merge
    /// or an eviction removes a pack before its marker, so that one may be dangling for a
    /// moment; hosts unlink such a marker at their next look. Nothing wrong, nothing to read.
    std::vector<std::string> dangling_markers{};
};

/// How many of the identity record files of earlier releases and packs of records (marked
/// or not) `facts` lists are gone (a cleanup's count less these is the kernels' entries it removed).
std::uint64_t records_removed(std::string const& dir, directory_facts const& facts);

/// Unlinks the marker `name` in `dir`'s markers' folder (`.cc-records`) when its pack is gone
/// still, as a host does at its next look (a pack's name is never used again, and its marker
/// is made after it: a marker whose pack is gone never names a pack again). Empty when the
/// marker is gone now (unlinked, or by another process), else why it is not.
std::string unlink_dangling_marker(std::string const& dir, std::string const& name);

/// What clear did.
struct clear_result {
    std::uint64_t removed = 0;            ///< entries (identity records are no entries)
    std::uint64_t removed_bytes = 0;      ///< entries and records alike
    std::uint64_t temp_files_removed = 0; ///< (a directory)
    std::uint64_t not_removed = 0;        ///< what it meant to remove and could not
    std::error_code removal_error;        ///< why (the first such error)
    std::error_code error;                ///< why clear could not run at all
    std::uint64_t claim_files_removed = 0; ///< stale claims (a directory: their owners are gone)
};

/// What a command will do with the cache: the storage is opened for no more.
enum class cache_use {
    read,   ///< look only: nothing is written, moved or repaired
    remove, ///< clear, verify --remove
    write,  ///< copy's destination (made when it is not there)
};

/// The options that say how to reach a cache (a Redis or HTTP server's).
struct reach_options {
    std::optional<std::string> name_space;    ///< (Redis)
    std::optional<std::string> password_file; ///< (Redis; HTTP: basic authentication of the URL's user)
    std::optional<std::string> layout;        ///< (HTTP) flat, fanout or bazel
    std::optional<std::string> ca_file;       ///< (HTTP) the CA the server's certificate is checked with
    std::optional<std::string> token_file;    ///< (HTTP) a bearer token
};

/// A cache, opened. Its functions are set by open_cache, and refer to it: it stays
/// where it was made.
struct opened_cache {
    opened_cache() = default;
    opened_cache(opened_cache const&) = delete;
    opened_cache& operator=(opened_cache const&) = delete;

    std::string shown;     ///< as printed (a Redis password hidden)
    /// Opened as copy's destination (cache_use::write): a server that offers no listing
    /// (HTTP without PROPFIND) lists as empty, with `unlisted` set, instead of failing.
    bool listing_optional = false;
    bool unlisted = false;
    std::string directory; ///< the path when the cache is a directory, else empty
    directory_facts facts; ///< (a directory) what list found besides entries

    bool is_directory() const { return !directory.empty(); }
    /// An entry as the output names it: `ab/<hex>` in a directory, else the hex.
    std::string entry_label(std::string const& name) const;

    /// Every entry and identity record; exit_ok, or the status of the failure it said.
    std::function<int(cache_listing&, progress_line&)> list;
    /// One entry's bytes, its use left alone (the Storage member `peek` where there is one).
    std::function<compile_cache::read_result(compile_cache::key const&, std::string&, std::size_t)> read;
    std::function<std::error_code(compile_cache::key const&, std::string_view)> write;
    /// Makes what the writes held back (a directory's identity records, written a pack per
    /// batch); the first error. Called before a command reports what it wrote.
    std::function<std::error_code()> flush = [] { return std::error_code(); };
    std::function<std::error_code(compile_cache::key const&)> remove;
    /// exit_ok when this cache may be removed from, else the status after the message.
    std::function<int()> may_remove;
    /// Every entry and identity record of `listing` (a directory: its temp files too).
    std::function<clear_result(cache_listing const&)> clear;
    /// What the last listing left out as no entry of the cache (SQLite rows whose key
    /// is no key: the Storage member `foreign_rows`), else 0.
    std::function<std::uint64_t()> foreign_rows = [] { return std::uint64_t{0}; };

    std::shared_ptr<void> storage; ///< keeps the storage the functions use
};

/// What the CACHE argument names.
enum class cache_kind { directory, sqlite, redis, http };

/// `sqlite:FILE`; `redis://...`, `redis+cluster://...`, `unix://...` (Redis); `http://...`,
/// `https://...` (an HTTP server: WebDAV, bazel-remote); an existing
/// regular file that starts as an SQLite database does; anything else is a directory.
/// `location` is the file or the URL.
cache_kind kind_of(std::string const& arg, std::string& location);

/// Whether `path` is a regular file that starts as an SQLite database does.
bool is_sqlite_file(std::string const& path);

/// Opens the cache `arg` names for `use`; exit_ok, or the status of the failure it said.
/// Throws usage_error for a Redis or HTTP option given for another cache.
int open_cache(std::string const& arg, cache_use use, reach_options const& reach, opened_cache& out);

} // namespace compile_cache_tool
