// compile-cache: what only a cache directory has, as the tool sees it — whether it is
// one, the entries and other files in it (one listing pass), and the counters its
// hosts record (read, and zeroed).
//
// The names are the library's own (storage/directory_layout.hpp), so that the tool
// counts, and deletes, exactly what directory_storage would.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace compile_cache_tool {

/// One entry file: `DIR/ab/<name>`, where name is the key's lower-case hex.
struct entry_file {
    std::string name;
    std::uint64_t size = 0;
    std::int64_t use_ns = 0; ///< its mtime, which the library sets at a store and at a hit

    std::string relative_path() const;
};

/// Everything a listing of the directory found.
struct directory_scan {
    std::vector<entry_file> entries;
    std::uint64_t temp_files = 0;  ///< `.tmp-` + 32 hex digits in fan-out folders: stores in progress, or left
                                   ///< by killed ones
    std::uint64_t other_files = 0; ///< anything else in fan-out folders; never touched
    std::uint64_t claim_files = 0; ///< `<hex key>.claim`: claims of compiles in progress, or left by killed ones
    bool has_ledger = false;       ///< `.cc-stats`
    bool has_counters = false;     ///< `.cc-counters/`
    bool has_settings = false;     ///< `.cc-settings` (compile-cache set)
    bool empty = true;             ///< nothing at all in the directory
    /// Why this cannot be a compile_cache directory, when something in it says so.
    std::string contradiction;
    /// A listing that failed (a folder that cannot be read): the scan is incomplete.
    std::string error;
};

enum class directory_kind { cache, missing, not_directory, foreign, unreadable };

/// The rule, also in the tool's --help. A directory is taken for a compile_cache
/// directory when nothing in it contradicts the layout and it is empty, or holds the
/// ledger `.cc-stats`, the counters folder `.cc-counters` or the settings file
/// `.cc-settings`, or at least one entry.
/// Contradictions: a `.cc-stats` that is not a regular file starting with the
/// ledger's magic (or empty), a `.cc-counters` that is not a folder, and, in a
/// two-hex-digit folder, a file named by lower-case hex that is not an entry of that
/// folder (a git object store looks like that). Other files (a README, notes) are
/// allowed: they are neither counted nor ever deleted.
std::string rule_text();

/// What scan_directory reports as it goes: (folders done, folders, entries so far).
using scan_progress = std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)>;

/// One pass over the directory: the top level, then each fan-out folder.
directory_kind scan_directory(std::string const& dir, directory_scan& scan, std::string& message,
                              scan_progress const& progress);

/// The counters the hosts recorded in the directory (directory_storage::
/// recorded_counters), gauges included, less the time they were last zeroed, which
/// `zeroed_s` holds (0: never).
struct directory_counters {
    std::map<std::string, std::uint64_t> all;
    std::uint64_t zeroed_s = 0;
};

directory_counters read_directory_counters(std::string const& dir);

/// `compile-cache zero`: every counter the hosts recorded set to 0, the gauges kept,
/// and the time of it recorded, as a host records its counters (each shard rewritten
/// under its lock, renamed over the old one). 0, or the errno of the first shard that
/// could not be rewritten.
int zero_directory_counters(std::string const& dir);

} // namespace compile_cache_tool
