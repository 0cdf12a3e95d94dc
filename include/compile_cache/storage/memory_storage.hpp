// compile_cache: a Storage in the process's memory, shared between threads. For
// tests, for a cache that lives as long as one process, and as the fast tier in
// front of a slower one.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/key/key.hpp>
#include <compile_cache/storage/concept.hpp>

#include <cstddef>
#include <exception>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace compile_cache {

/// A thread-safe map from key to bytes. Readers share a lock; writers take it alone.
///
/// `read` fills `out` only when it reports `found`; on any other outcome `out` is
/// left empty. An entry larger than `max_size` is reported as `too_large` without
/// being copied. Allocation failures become error results; no member throws.
class memory_storage {
public:
    memory_storage() = default;
    memory_storage(memory_storage const&) = delete;
    memory_storage& operator=(memory_storage const&) = delete;

    /// Movable, so that a cache can hold one by value; moving from a storage that
    /// other threads still use is a race, as for any object.
    memory_storage(memory_storage&& other) noexcept {
        std::unique_lock<std::shared_mutex> lock(other.mutex_);
        entries_ = std::move(other.entries_);
    }
    memory_storage& operator=(memory_storage&& other) noexcept {
        if (this != &other) {
            std::scoped_lock lock(mutex_, other.mutex_);
            entries_ = std::move(other.entries_);
        }
        return *this;
    }

    read_result read(key const& k, std::string& out, std::size_t max_size) noexcept {
        out.clear();
        try {
            std::shared_lock<std::shared_mutex> lock(mutex_);
            auto it = entries_.find(k);
            if (it == entries_.end()) return {read_status::absent, {}};
            if (it->second.size() > max_size) return {read_status::too_large, {}};
            out.assign(it->second);
            return {read_status::found, {}};
        } catch (std::bad_alloc const&) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::not_enough_memory)};
        } catch (std::system_error const& e) {
            out.clear();
            return {read_status::error, e.code()};
        } catch (...) {
            out.clear();
            return {read_status::error, std::make_error_code(std::errc::io_error)};
        }
    }

    std::error_code write(key const& k, std::string_view bytes) noexcept {
        try {
            // Copy before locking: the allocation does not need to hold writers out.
            std::string copy(bytes);
            std::unique_lock<std::shared_mutex> lock(mutex_);
            entries_.insert_or_assign(k, std::move(copy));
            return {};
        } catch (std::bad_alloc const&) {
            return std::make_error_code(std::errc::not_enough_memory);
        } catch (std::system_error const& e) {
            return e.code();
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }

    std::error_code remove(key const& k) noexcept {
        try {
            std::unique_lock<std::shared_mutex> lock(mutex_);
            entries_.erase(k);
            return {};
        } catch (std::system_error const& e) {
            return e.code();
        } catch (...) {
            return std::make_error_code(std::errc::io_error);
        }
    }

    /// The number of entries held.
    std::size_t size() const {
        std::shared_lock<std::shared_mutex> lock(mutex_);
        return entries_.size();
    }

private:
    mutable std::shared_mutex mutex_;
    std::unordered_map<key, std::string> entries_;
};

} // namespace compile_cache

static_assert(compile_cache::check_storage<compile_cache::memory_storage>::value);
