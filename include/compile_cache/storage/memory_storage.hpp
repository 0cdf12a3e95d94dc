// compile_cache: a Storage in the process's memory, shared between threads. For
// tests, for a cache that lives as long as one process, and as the fast tier in
// front of a slower one.
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/fork_shared_mutex.hpp>

#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/concept.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

namespace compile_cache {

/// A thread-safe map from key to bytes. Readers share a lock; writers take it alone.
///
/// `read` fills `out` only when it reports `found`; on any other outcome `out` is
/// left empty. An entry larger than `max_size` is reported as `too_large` without
/// being copied. Allocation failures become error results; no member throws. The empty
/// key (what an over-long one becomes: key.hpp) names no entry: it reads absent, a write
/// under it fails with invalid_argument, and a removal of it removes nothing.
///
/// In a child forked while another thread of the parent was inside a write or a removal
/// (for longer than the fork's wait, 250 ms), the storage holds nothing, for ever, and never waits:
/// reads are absent, writes fail with state_not_recoverable, removals remove nothing,
/// size() is 0; moving it or into it moves nothing.
class memory_storage {
public:
    memory_storage() = default;
    COMPILE_CACHE_DECL ~memory_storage();
    memory_storage(memory_storage const&) = delete;
    memory_storage& operator=(memory_storage const&) = delete;

    /// Movable, so that a cache can hold one by value; moving from a storage that
    /// other threads still use is a race, as for any object.
    COMPILE_CACHE_DECL memory_storage(memory_storage&& other) noexcept;
    COMPILE_CACHE_DECL memory_storage& operator=(memory_storage&& other) noexcept;

    COMPILE_CACHE_DECL read_result read(key const& k, std::string& out, std::size_t max_size) noexcept;

    COMPILE_CACHE_DECL std::error_code write(key const& k, std::string_view bytes) noexcept;

    COMPILE_CACHE_DECL std::error_code remove(key const& k) noexcept;

    /// The number of entries held.
    std::size_t size() const {
        if (mutex_.lost()) return 0;
        std::shared_lock<detail::fork_shared_mutex> lock(mutex_);
        return entries_->size();
    }

private:
    mutable detail::fork_shared_mutex mutex_;
    detail::abandonable<std::unordered_map<key, std::string>> entries_; ///< not to be touched once mutex_ is lost
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::memory_storage>::value);

#include <compile_cache/storage/impl/memory_storage.ipp>
