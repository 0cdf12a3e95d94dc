// compile_cache: how many times this process descends by fork from the program as it
// started, counted by a pthread_atfork handler rather than a system call per question.
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

/// The handler, registered as the program (or a library that includes this header)
/// starts, single-threaded: registered at a first call instead, under a static's guard, a
/// child forked by another thread meanwhile would wait on that guard for ever at its own
/// first call (docs/design.md, "Forks").
inline bool const fork_generation_counted = ::pthread_atfork(nullptr, nullptr, &count_fork_in_child) == 0;

/// How many times this process is a forked child (0 in the program as it started). What
/// a process keeps in memory that a forked child must not use as its own (a held batch, a
/// descriptor, a socket, a lock) is tagged with the number when made, and started afresh
/// where the number differs. A load, where glibc's getpid is a system call.
inline unsigned fork_generation() noexcept { return fork_generation_counter().load(std::memory_order_relaxed); }

} // namespace compile_cache::detail
