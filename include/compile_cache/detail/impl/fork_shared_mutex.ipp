// compile_cache: the definitions of detail/fork_shared_mutex.hpp's functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace compile_cache::detail {

/// Every fork_shared_mutex alive, for the fork handlers. Constant-initialised and trivially
/// destructible: no static's guard (which a child forked while another thread made the
/// first one would find held for ever), no allocation, and usable at exit.
struct fork_shared_mutex_list {
    std::atomic<bool> locked{false}; ///< held only to link, to unlink, and through a fork
    fork_shared_mutex* head = nullptr;
    bool held = false; ///< the fork under way took `locked`
    std::atomic<bool> handlers_installed{false};
};
COMPILE_CACHE_DECL fork_shared_mutex_list& the_fork_shared_mutex_list() noexcept;
fork_shared_mutex_list& the_fork_shared_mutex_list() noexcept {
    static fork_shared_mutex_list list;
    return list;
}

/// Takes `l`'s lock, by `until` at the latest (else false). Its holders are bounded: a
/// link, an unlink, a fork's prepare (fork_wait); a child made it anew.
COMPILE_CACHE_DECL bool lock_fork_shared_mutex_list(fork_shared_mutex_list& l,
                                                    std::chrono::steady_clock::time_point until) noexcept;
bool lock_fork_shared_mutex_list(fork_shared_mutex_list& l, std::chrono::steady_clock::time_point until) noexcept {
    for (int spins = 0;; ++spins) {
        if (!l.locked.exchange(true, std::memory_order_acquire)) return true;
        if (spins < 64) continue;
        if (std::chrono::steady_clock::now() >= until) return false;
        ::usleep(100);
    }
}

fork_shared_mutex::fork_shared_mutex() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    if (!l.handlers_installed.exchange(true, std::memory_order_acq_rel))
        (void)install_fork_handlers(fork_stage::reader_writer_locks,
                                    {&fork_shared_mutex::before_fork, &fork_shared_mutex::after_fork_in_parent,
                                     &fork_shared_mutex::after_fork_in_child});
    // Past 2 s (longer than any holder), lost from the start: not in the list, misses.
    if (!lock_fork_shared_mutex_list(l, std::chrono::steady_clock::now() + std::chrono::seconds(2))) {
        lost_ = true;
        return;
    }
    epoch_ = fork_shared_mutex_epoch();
    next_ = l.head;
    if (next_) next_->prev_ = this;
    l.head = this;
    linked_ = true;
    l.locked.store(false, std::memory_order_release);
}

fork_shared_mutex::~fork_shared_mutex() {
    if (!linked_) return;
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    // (Not left linked: the list would point at freed memory. Every holder is bounded.)
    while (!lock_fork_shared_mutex_list(l, std::chrono::steady_clock::now() + std::chrono::seconds(2))) {
    }
    if (epoch_ == fork_shared_mutex_epoch()) { // (else not in the list made anew in this child)
        if (prev_) prev_->next_ = next_;
        else l.head = next_;
        if (next_) next_->prev_ = prev_;
    }
    l.locked.store(false, std::memory_order_release);
}

// Each is taken shared: a fork must only keep out a writer, whose change the child could
// find half made; readers change nothing. (Taken exclusively, a stream of short reads kept
// the fork waiting its whole bound, glibc letting new readers in before a waiting writer,
// and the child then lost the object.)
void fork_shared_mutex::before_fork() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    auto const until = std::chrono::steady_clock::now() + fork_wait;
    l.held = lock_fork_shared_mutex_list(l, until);
    if (!l.held) return;
    for (fork_shared_mutex* m = l.head; m; m = m->next_) {
        m->held_for_fork_ = false;
        try {
            m->held_for_fork_ = !m->lost() && m->mutex_.try_lock_shared_until(until);
        } catch (...) { // (std::system_error: not taken)
        }
    }
}

void fork_shared_mutex::after_fork_in_parent() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    if (!l.held) return;
    for (fork_shared_mutex* m = l.head; m; m = m->next_)
        if (m->held_for_fork_) {
            m->held_for_fork_ = false;
            m->mutex_.unlock_shared();
        }
    l.held = false;
    l.locked.store(false, std::memory_order_release);
}

// Nothing here allocates. Each lock is made anew rather than unlocked: the readers the
// parent had are not in the child, and glibc tells whose unlock it is by the thread id,
// which the child's one thread does not share with the thread that took it.
void fork_shared_mutex::after_fork_in_child() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    if (!l.held) { // none was taken, and the list may be half changed: all are lost
        ++fork_shared_mutex_epoch();
        l.head = nullptr;
        l.locked.store(false, std::memory_order_release);
        return;
    }
    for (fork_shared_mutex* m = l.head; m; m = m->next_) {
        if (!m->held_for_fork_) m->lost_ = true; // a writer, or a lost one: not usable here
        m->held_for_fork_ = false;
        ::new (&m->mutex_) std::shared_timed_mutex;
    }
    l.held = false;
    l.locked.store(false, std::memory_order_release);
}

/// The copies keep_abandoned_bytes made, each block starting with the address of the one
/// before.
inline std::atomic<void*>& abandoned_bytes_head() noexcept {
    static std::atomic<void*> head{nullptr};
    return head;
}

void keep_abandoned_bytes(void const* bytes, std::size_t size) noexcept {
    void* const block = std::malloc(sizeof(void*) + size);
    if (!block) return;
    std::memcpy(static_cast<unsigned char*>(block) + sizeof(void*), bytes, size);
    std::atomic<void*>& head = abandoned_bytes_head();
    void* old = head.load(std::memory_order_relaxed);
    do std::memcpy(block, &old, sizeof(void*));
    while (!head.compare_exchange_weak(old, block, std::memory_order_release, std::memory_order_relaxed));
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_INCLUDE_IMPL
