// compile_cache: a reader-writer lock that a fork takes first, for state a forked child
// must never wait on for ever (a registry's, a memory storage's: docs/design.md, "Forks").
#pragma once

#include <compile_cache/detail/config.hpp>
#include <compile_cache/detail/fork_handlers.hpp>
#include <compile_cache/detail/fork_list.hpp>

#include <chrono>
#include <cstddef>
#include <new>
#include <shared_mutex>
#include <type_traits>

namespace compile_cache::detail {

class fork_shared_mutex;
/// Every fork_shared_mutex alive.
COMPILE_CACHE_DECL fork_list<fork_shared_mutex>& the_fork_shared_mutex_list() noexcept;

/// A reader-writer lock (Lockable and SharedLockable) that a fork handles: the fork's
/// prepare (stage reader_writer_locks) takes every one alive shared, all within one
/// bound (fork_wait), so that no writer is inside one in a child. One that a writer held
/// through the bound is lost in the child: what it guards may be half changed there, so
/// its owner checks lost() (a load) before taking it, and then neither touches nor destroys
/// what it guards (abandonable). Lost stays lost in that process and its own children.
/// Neither copyable nor movable: it is one object's.
class fork_shared_mutex {
public:
    /// How long a fork waits at most for all of them together.
    static constexpr std::chrono::milliseconds fork_wait{250};

    COMPILE_CACHE_DECL fork_shared_mutex() noexcept;
    COMPILE_CACHE_DECL ~fork_shared_mutex();
    fork_shared_mutex(fork_shared_mutex const&) = delete;
    fork_shared_mutex& operator=(fork_shared_mutex const&) = delete;

    /// Whether this process is a child forked while another thread held this lock.
    bool lost() const noexcept { return lost_ || !the_fork_shared_mutex_list().current(*this); }

    void lock() { mutex_.lock(); }
    bool try_lock() { return mutex_.try_lock(); }
    void unlock() { mutex_.unlock(); }
    void lock_shared() { mutex_.lock_shared(); }
    bool try_lock_shared() { return mutex_.try_lock_shared(); }
    void unlock_shared() { mutex_.unlock_shared(); }

    /// The fork handlers, for every one alive.
    COMPILE_CACHE_DECL static void before_fork() noexcept;
    COMPILE_CACHE_DECL static void after_fork_in_parent() noexcept;
    COMPILE_CACHE_DECL static void after_fork_in_child() noexcept;

private:
    friend class fork_list<fork_shared_mutex>;
    std::shared_timed_mutex mutex_;
    fork_list_links<fork_shared_mutex> fork_links; ///< (not linked when the list's lock could not be had)
    bool lost_ = false;          ///< written only by the child's fork handler
    bool held_for_fork_ = false; ///< the fork under way took it
};

/// Makes a copy of `size` bytes, kept for the process's life where a leak checker sees it:
/// what an abandoned object points to then stays reachable. Nothing when memory is short.
COMPILE_CACHE_DECL void keep_abandoned_bytes(void const* bytes, std::size_t size) noexcept;

/// A T that its owner may leave undestroyed (abandon): what a lost fork_shared_mutex
/// guarded may be half changed, and destroying it could crash.
template <class T>
class abandonable {
public:
    abandonable() noexcept(std::is_nothrow_default_constructible_v<T>) { ::new (static_cast<void*>(storage_)) T(); }
    ~abandonable() {
        if (!abandoned_) get().~T();
    }
    abandonable(abandonable const&) = delete;
    abandonable& operator=(abandonable const&) = delete;

    T& get() noexcept { return *std::launder(reinterpret_cast<T*>(storage_)); }
    T const& get() const noexcept { return *std::launder(reinterpret_cast<T const*>(storage_)); }
    T* operator->() noexcept { return &get(); }
    T const* operator->() const noexcept { return &get(); }

    /// From now on, T is never destroyed (nor to be used).
    void abandon() noexcept {
        if (abandoned_) return;
        abandoned_ = true;
        keep_abandoned_bytes(storage_, sizeof(T));
    }

private:
    alignas(T) unsigned char storage_[sizeof(T)];
    bool abandoned_ = false;
};

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/fork_shared_mutex.ipp>
