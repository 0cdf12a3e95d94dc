// compile_cache: the definitions of detail/fork_shared_mutex.hpp's functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace compile_cache::detail {

/// Every fork_shared_mutex alive, for the fork handlers; never destroyed (a fork may come
/// at exit).
struct fork_shared_mutex_list {
    std::timed_mutex mutex; ///< held only to link, to unlink, and through a fork
    fork_shared_mutex* head = nullptr;
    bool held = false; ///< the fork under way took `mutex`
};
COMPILE_CACHE_DECL fork_shared_mutex_list& the_fork_shared_mutex_list() noexcept;
fork_shared_mutex_list& the_fork_shared_mutex_list() noexcept {
    static fork_shared_mutex_list* const list = [] {
        auto* l = new fork_shared_mutex_list;
        (void)install_fork_handlers(fork_stage::reader_writer_locks,
                                    {&fork_shared_mutex::before_fork, &fork_shared_mutex::after_fork_in_parent,
                                     &fork_shared_mutex::after_fork_in_child});
        return l;
    }();
    return *list;
}

fork_shared_mutex::fork_shared_mutex() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    // (Its holders are bounded: another link or unlink, or a fork's prepare.)
    std::lock_guard<std::timed_mutex> const lock(l.mutex);
    epoch_ = fork_shared_mutex_epoch();
    next_ = l.head;
    if (next_) next_->prev_ = this;
    l.head = this;
}

fork_shared_mutex::~fork_shared_mutex() {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    std::lock_guard<std::timed_mutex> const lock(l.mutex);
    if (epoch_ != fork_shared_mutex_epoch()) return; // (not in the list made anew in this child)
    if (prev_) prev_->next_ = next_;
    else l.head = next_;
    if (next_) next_->prev_ = prev_;
}

void fork_shared_mutex::before_fork() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    auto const until = std::chrono::steady_clock::now() + fork_wait;
    try {
        l.held = l.mutex.try_lock_until(until);
        if (!l.held) return;
        for (fork_shared_mutex* m = l.head; m; m = m->next_)
            m->held_for_fork_ = !m->lost() && m->mutex_.try_lock_until(until);
    } catch (...) { // (std::system_error: not taken)
    }
}

void fork_shared_mutex::after_fork_in_parent() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    if (!l.held) return;
    for (fork_shared_mutex* m = l.head; m; m = m->next_)
        if (m->held_for_fork_) {
            m->held_for_fork_ = false;
            m->mutex_.unlock();
        }
    l.held = false;
    l.mutex.unlock();
}

// Nothing here allocates. Each lock is made anew rather than unlocked: glibc tells a
// writer's unlock from a reader's by the thread id, which the child's one thread does not
// share with the thread that took it.
void fork_shared_mutex::after_fork_in_child() noexcept {
    fork_shared_mutex_list& l = the_fork_shared_mutex_list();
    if (!l.held) { // none was taken, and the list may be half changed: all are lost
        ++fork_shared_mutex_epoch();
        ::new (&l.mutex) std::timed_mutex;
        l.head = nullptr;
        return;
    }
    for (fork_shared_mutex* m = l.head; m; m = m->next_) {
        if (!m->held_for_fork_) m->lost_ = true; // its holder is not in this process
        m->held_for_fork_ = false;
        ::new (&m->mutex_) std::shared_timed_mutex;
    }
    l.held = false;
    l.mutex.unlock();
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
