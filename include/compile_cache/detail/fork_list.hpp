// compile_cache: the list of the objects of one kind alive in the process, which that
// kind's fork handlers walk.
#pragma once

#include <compile_cache/detail/fork_generation.hpp>
#include <compile_cache/detail/fork_handlers.hpp>

#include <atomic>
#include <chrono>

#include <unistd.h>

namespace compile_cache::detail {

/// What a fork_list<T> keeps in each T (as a member named `fork_links`).
template <class T>
struct fork_list_links {
    T* prev = nullptr;
    T* next = nullptr;
    unsigned generation = 0; ///< the list's generation when it was linked
    bool linked = false;
};

/// The objects of type T alive (intrusive: linking never allocates, so never fails but
/// for its bound), for the fork handlers of their kind. Constant-initialised and
/// trivially destructible: a function-local static one has no guard, which a child forked
/// while another thread made it would find held for ever; it is usable at exit and in a
/// fork's handlers. Its lock is held only to link, to unlink, and through a fork (taken
/// in the prepare handler, within that handler's bound); every wait for it is bounded.
/// The lock names its holder's process by fork_generation(): one found held by a thread of
/// an ancestor (a fork that ran none of this list's handlers: they were being installed)
/// is taken over, and the list, which that thread may have left half changed, forgotten.
template <class T>
class fork_list {
public:
    using clock = std::chrono::steady_clock;
    /// The longest a link waits for the lock: longer than any holder.
    static constexpr std::chrono::seconds link_wait{2};

    constexpr fork_list() noexcept = default;

    /// Installs `handlers` for `stage`, once per list; false when the library's fork
    /// handlers could not be installed (install_fork_handlers).
    bool install(fork_stage stage, fork_handlers handlers) noexcept {
        int seen = 0;
        if (installed_.compare_exchange_strong(seen, 1, std::memory_order_acq_rel)) {
            seen = install_fork_handlers(stage, handlers) ? 2 : 3;
            installed_.store(seen, std::memory_order_release);
        }
        return seen != 3; // (one under way in another thread: it will be there for the next fork)
    }

    /// Takes the lock by `until` at the latest (else false).
    bool lock(clock::time_point until) noexcept {
        unsigned const mine = fork_generation() + 1; // (0: not held)
        for (int spins = 0;; ++spins) {
            unsigned held_by = 0;
            if (locked_.compare_exchange_strong(held_by, mine, std::memory_order_acquire)) return true;
            if (held_by != mine) { // held in an ancestor process only
                if (!locked_.compare_exchange_strong(held_by, mine, std::memory_order_acquire)) continue;
                forget_members();
                return true;
            }
            if (spins < 64) continue;
            if (clock::now() >= until) return false;
            ::usleep(100);
        }
    }
    void unlock() noexcept { locked_.store(0, std::memory_order_release); }

    /// Links `t`; false (and not linked) when the lock could not be had within link_wait.
    bool link(T& t) noexcept {
        if (!lock(clock::now() + link_wait)) return false;
        fork_list_links<T>& l = t.fork_links;
        l.prev = nullptr;
        l.next = head_;
        if (head_) head_->fork_links.prev = &t;
        head_ = &t;
        l.generation = generation_.load(std::memory_order_relaxed);
        l.linked = true;
        unlock();
        return true;
    }

    /// Unlinks `t` if linked in this list's current generation. Waits for the lock
    /// however long it takes (every holder is bounded): left linked, the list would
    /// point at freed memory.
    void unlink(T& t) noexcept {
        fork_list_links<T>& l = t.fork_links;
        if (!l.linked) return;
        while (!lock(clock::now() + link_wait)) {
        }
        if (l.generation == generation_.load(std::memory_order_relaxed)) {
            if (l.prev) l.prev->fork_links.next = l.next;
            else head_ = l.next;
            if (l.next) l.next->fork_links.prev = l.prev;
        }
        l.linked = false;
        unlock();
    }

    /// Whether `t` is in this list's current generation (false in a child whose fork
    /// could not take the list: see forget_all).
    bool current(T const& t) const noexcept {
        return t.fork_links.linked && t.fork_links.generation == generation_.load(std::memory_order_relaxed);
    }

    /// The first one linked, then `t->fork_links.next`; only while holding the lock.
    T* head() const noexcept { return head_; }

    /// In a child whose fork could not take the lock (the list may be half changed):
    /// forgets every one linked, which stay out of it for their life, and frees the lock.
    /// Only in the child's fork handler, while the child has one thread.
    void forget_all() noexcept {
        forget_members();
        unlock();
    }

    /// The fork under way took the lock: set by the prepare handler, read after the fork.
    bool held_for_fork = false;

private:
    void forget_members() noexcept {
        head_ = nullptr;
        generation_.fetch_add(1, std::memory_order_relaxed);
    }

    std::atomic<unsigned> locked_{0}; ///< 0, or the holder's fork_generation() + 1
    std::atomic<int> installed_{0}; ///< 0 not yet, 1 under way, 2 done, 3 failed
    T* head_ = nullptr;
    std::atomic<unsigned> generation_{0}; ///< (read by current() on any thread)
};

} // namespace compile_cache::detail
