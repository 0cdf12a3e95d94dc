// compile-cache: a cache directory as the tool sees it — whether it is one, the
// entries in it (one listing pass), and what each entry holds (one read, checked by
// the library's inspect_envelope). Reading never changes an entry: no use time is
// refreshed, so looking at a cache does not change what it evicts next.
//
// The names are the library's own (storage/directory_layout.hpp), so that the tool
// counts, and deletes, exactly what directory_storage would.
#pragma once

#include <compile_cache/envelope.hpp>

#include <cstdint>
#include <functional>
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
    bool has_ledger = false;       ///< `.cc-stats`
    bool has_counters = false;     ///< `.cc-counters/`
    bool empty = true;             ///< nothing at all in the directory
    /// Why this cannot be a compile_cache directory, when something in it says so.
    std::string contradiction;
    /// A listing that failed (a folder that cannot be read): the scan is incomplete.
    std::string error;
};

enum class directory_kind { cache, missing, not_directory, foreign, unreadable };

/// The rule, also in the tool's --help. A directory is taken for a compile_cache
/// directory when nothing in it contradicts the layout and it is empty, or holds the
/// ledger `.cc-stats` or the counters folder `.cc-counters`, or at least one entry.
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

/// The largest file read as an entry: the library's default bound on an entry
/// (cache_options::max_entry_size). A larger file is judged without being read.
inline constexpr std::uint64_t max_entry_read = std::uint64_t{64} << 20;

/// Reads the whole entry at `path` without following a symlink and without touching
/// its use time. False, with `why`, when it cannot; `too_large` says it was not read
/// because it is over max_entry_read.
bool read_entry(std::string const& path, std::string& bytes, std::string& why, bool* too_large = nullptr);

/// What checking one entry concluded.
enum class verdict {
    sound,     ///< the check value (CRC-32C or HMAC) verifies and the key is the file's name
    bad,       ///< damaged, truncated, unreadable, for another key, or not authenticated under the secret
    unchecked, ///< cannot be judged here: keyed without a secret given, or another envelope version
};

struct checked_entry {
    verdict result = verdict::bad;
    std::string problem; ///< for bad and unchecked: why, one phrase
    compile_cache::opened_envelope envelope; ///< its payload view is cleared: only sizes are kept
    std::uint64_t file_size = 0;
    std::uint64_t payload_size = 0;
    std::uint64_t check_size = 0;
};

char const* to_string(verdict v) noexcept;

/// Checks the bytes stored under the key whose hex is `name`, in `auth`'s mode.
checked_entry check_bytes(std::string const& bytes, std::string const& name, compile_cache::envelope_auth const& auth);

/// Reads and checks the entry `name` of `dir` in `auth`'s mode.
checked_entry check_entry(std::string const& dir, std::string const& name, compile_cache::envelope_auth const& auth);

} // namespace compile_cache_tool
