// compile_cache: the definitions of detail/fork_shared_mutex.hpp's functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace compile_cache::detail {

fork_list<fork_shared_mutex>& the_fork_shared_mutex_list() noexcept {
    static fork_list<fork_shared_mutex> list; // (constant-initialised: fork_list)
    return list;
}

fork_shared_mutex::fork_shared_mutex() noexcept {
    fork_list<fork_shared_mutex>& l = the_fork_shared_mutex_list();
    (void)l.install(fork_stage::reader_writer_locks, {&fork_shared_mutex::before_fork,
                                                      &fork_shared_mutex::after_fork_in_parent,
                                                      &fork_shared_mutex::after_fork_in_child});
    if (!l.link(*this)) lost_ = true; // (past link_wait: lost from the start, misses)
}

fork_shared_mutex::~fork_shared_mutex() { the_fork_shared_mutex_list().unlink(*this); }

// Each is taken shared: a fork must only keep out a writer, whose change the child could
// find half made; readers change nothing. (Taken exclusively, a stream of short reads kept
// the fork waiting its whole bound, glibc letting new readers in before a waiting writer,
// and the child then lost the object.)
void fork_shared_mutex::before_fork() noexcept {
    fork_list<fork_shared_mutex>& l = the_fork_shared_mutex_list();
    auto const until = std::chrono::steady_clock::now() + fork_wait;
    l.held_for_fork = l.lock(until);
    if (!l.held_for_fork) return;
    for (fork_shared_mutex* m = l.head(); m; m = m->fork_links.next) {
        m->held_for_fork_ = false;
        try {
            m->held_for_fork_ = !m->lost() && m->mutex_.try_lock_shared_until(until);
        } catch (...) { // (std::system_error: not taken)
        }
    }
}

void fork_shared_mutex::after_fork_in_parent() noexcept {
    fork_list<fork_shared_mutex>& l = the_fork_shared_mutex_list();
    if (!l.held_for_fork) return;
    for (fork_shared_mutex* m = l.head(); m; m = m->fork_links.next)
        if (m->held_for_fork_) {
            m->held_for_fork_ = false;
            m->mutex_.unlock_shared();
        }
    l.held_for_fork = false;
    l.unlock();
}

// Nothing here allocates. Each lock is made anew rather than unlocked: the readers the
// parent had are not in the child, and glibc tells whose unlock it is by the thread id,
// which the child's one thread does not share with the thread that took it.
void fork_shared_mutex::after_fork_in_child() noexcept {
    fork_list<fork_shared_mutex>& l = the_fork_shared_mutex_list();
    if (!l.held_for_fork) { // none was taken, and the list may be half changed: all are lost
        l.forget_all();
        return;
    }
    for (fork_shared_mutex* m = l.head(); m; m = m->fork_links.next) {
        if (!m->held_for_fork_) m->lost_ = true; // a writer, or a lost one: not usable here
        m->held_for_fork_ = false;
        ::new (&m->mutex_) std::shared_timed_mutex;
    }
    l.held_for_fork = false;
    l.unlock();
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
