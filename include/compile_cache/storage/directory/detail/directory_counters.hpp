// compile_cache: the cumulative counters a cache directory keeps for its hosts, so
// that `compile-cache stats DIR` can say what every process that used it did.
//
// `DIR/.cc-counters/` holds 16 shard files (`0` ... `f`), text, one `name value` line
// per counter. A process adds what it counted (a delta) to the shard its pid picks,
// when its cache is destroyed or flushed: never on a hit or a store, so the hot paths
// take no lock and make no call for it. The update is a read, add and replace under an
// exclusive flock on the shard's lock file (`N.lock`): the new content goes to `N.new`
// and is renamed over `N`, so a process killed at any moment leaves the old figures
// or the new ones, never a torn file, and a reader needs no lock. Sixteen shards keep
// processes that exit together from queueing on one lock.
//
// The figures are for display only: a file someone else wrote is parsed with bounds
// (64 KiB at most, malformed lines skipped) and can mislead a reader but do nothing
// else. Two lines are gauges, not sums: `max-size` (the size limit of the latest
// writer) and `updated-s` (when it wrote, seconds since the epoch).
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/storage/directory/detail/directory_files.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace compile_cache::detail::directory_storage_impl {

inline constexpr char counters_folder[] = ".cc-counters";
inline constexpr unsigned counter_shards = 16;
inline constexpr std::size_t counters_max_file = 64u << 10;
inline constexpr std::string_view gauge_max_size = "max-size";
inline constexpr std::string_view gauge_updated_s = "updated-s";

inline bool is_gauge(std::string_view name) noexcept { return name == gauge_max_size || name == gauge_updated_s; }

/// A counter name as written: letters, digits, '.', '-' and '_', at most 64 of them,
/// so that a line always parses back as it was written.
COMPILE_CACHE_DECL bool is_counter_name(std::string_view name) noexcept;

/// Parses `name value` lines; anything else is skipped.
COMPILE_CACHE_DECL std::map<std::string, std::uint64_t> parse_counters(std::string_view text);

/// Reads a whole small file into `text` without following a symlink (or blocking on
/// a FIFO). True when it was read, or is absent (then `text` is empty); false when it
/// is there but not a regular file, larger than counters_max_file, or unreadable.
COMPILE_CACHE_DECL bool read_small_file(int dir_fd, char const* name, std::string& text);

/// How long a flush waits for a shard's lock before giving up (the counts are for
/// display: a host must never hang at exit because someone holds the lock).

COMPILE_CACHE_DECL int open_counters_folder(std::string const& directory, unsigned directory_mode, int exact_umask,
                                            bool create);

/// Opens the lock file `lock_name` of the counters folder open at `dir_fd` read-only
/// (flock needs no more: a lock file another member of a shared directory's group made is
/// usable whenever it can be read), making it with mode `mode` when it is absent. When
/// `exact`, a lock file of this user's whose mode is not `mode` is set to it (the process
/// umask would strip a shared directory's group bits). The descriptor, or -1 with errno
/// (EINVAL: not a regular file). Every writer of a shard (a host, `compile-cache zero`)
/// takes its lock through this.
COMPILE_CACHE_DECL int open_shard_lock(int dir_fd, char const* lock_name, mode_t mode, bool exact) noexcept;

/// Adds `delta` to the shard of this process; sets the gauges. Returns 0 or errno.
COMPILE_CACHE_DECL int add_counters(std::string const& directory,
                                    std::vector<std::pair<std::string, std::uint64_t>> const& delta,
                                    std::uint64_t max_size, unsigned file_mode, unsigned directory_mode,
                                    int exact_umask, lock_events* events = nullptr);

/// The sum of every shard; the gauges from the shard written last.
COMPILE_CACHE_DECL std::map<std::string, std::uint64_t> read_counters(std::string const& directory);

} // namespace compile_cache::detail::directory_storage_impl

#include <compile_cache/storage/directory/detail/impl/directory_counters.ipp>
