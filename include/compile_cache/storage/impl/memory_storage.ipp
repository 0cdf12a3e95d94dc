// compile_cache: the definitions of storage/memory_storage.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <exception>
#include <new>
#include <utility>

namespace compile_cache {

memory_storage::~memory_storage() {
    if (mutex_.lost()) entries_.abandon(); // (possibly half changed by a thread this process lacks)
}

memory_storage::memory_storage(memory_storage&& other) noexcept {
    if (other.mutex_.lost()) return;
    std::unique_lock<detail::fork_shared_mutex> lock(other.mutex_);
    entries_.get() = std::move(other.entries_.get());
}

memory_storage& memory_storage::operator=(memory_storage&& other) noexcept {
    if (this != &other && !mutex_.lost() && !other.mutex_.lost()) {
        std::scoped_lock lock(mutex_, other.mutex_);
        entries_.get() = std::move(other.entries_.get());
    }
    return *this;
}

read_result memory_storage::read(key const& k, std::string& out, std::size_t max_size) noexcept {
    out.clear();
    if (k.empty() || mutex_.lost()) return {read_status::absent, {}}; // (the empty key names no entry: key.hpp)
    try {
        std::shared_lock<detail::fork_shared_mutex> lock(mutex_);
        auto it = entries_->find(k);
        if (it == entries_->end()) return {read_status::absent, {}};
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

std::error_code memory_storage::write(key const& k, std::string_view bytes) noexcept {
    if (k.empty()) return std::make_error_code(std::errc::invalid_argument);
    if (mutex_.lost()) return std::make_error_code(std::errc::state_not_recoverable);
    try {
        // Copy before locking: the allocation does not need to hold writers out.
        std::string copy(bytes);
        std::unique_lock<detail::fork_shared_mutex> lock(mutex_);
        entries_->insert_or_assign(k, std::move(copy));
        return {};
    } catch (std::bad_alloc const&) {
        return std::make_error_code(std::errc::not_enough_memory);
    } catch (std::system_error const& e) {
        return e.code();
    } catch (...) {
        return std::make_error_code(std::errc::io_error);
    }
}

std::error_code memory_storage::remove(key const& k) noexcept {
    if (k.empty() || mutex_.lost()) return {};
    try {
        std::unique_lock<detail::fork_shared_mutex> lock(mutex_);
        entries_->erase(k);
        return {};
    } catch (std::system_error const& e) {
        return e.code();
    } catch (...) {
        return std::make_error_code(std::errc::io_error);
    }
}

} // namespace compile_cache

#endif // COMPILE_CACHE_INCLUDE_IMPL
