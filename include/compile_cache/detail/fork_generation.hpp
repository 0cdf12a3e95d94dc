// compile_cache: how many times this process descends by fork from the one that first
// asked, counted by a pthread_atfork handler rather than a system call per question.
#pragma once

#include <pthread.h>

#include <atomic>

namespace compile_cache::detail {

/// The count, one per process (an inline function's static is one in a program).
inline std::atomic<unsigned>& fork_generation_counter() noexcept {
    static std::atomic<unsigned> generation{0};
    return generation;
}
inline void count_fork_in_child() noexcept { fork_generation_counter().fetch_add(1, std::memory_order_relaxed); }

/// How many times this process is a forked child of a process that had called this (0 in
/// that one). What a process keeps in memory that a forked child must not use as its own
/// (a held batch, a descriptor, a socket, a lock) is tagged with the number when made, and
/// started afresh where the number differs. The first call registers the handler, so
/// state made after it is tagged right; a load, where glibc's getpid is a system call.
inline unsigned fork_generation() noexcept {
    static bool const registered = ::pthread_atfork(nullptr, nullptr, &count_fork_in_child) == 0;
    (void)registered;
    return fork_generation_counter().load(std::memory_order_relaxed);
}

} // namespace compile_cache::detail
