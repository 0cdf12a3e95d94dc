// compile_cache: a mutex no caller waits on for more than a bound, for state that a
// forked child may find held for ever (docs/design.md, "Forks").
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

namespace compile_cache::detail {

/// A mutex taken within a bound: a thread of the parent that held it when another thread
/// forked leaves it held for ever in the child, which has only the thread that forked.
/// Once a wait has run out, later callers only try it, without waiting, until one gets
/// it: a child whose copy is held for ever pays the bound once, not at every call.
/// A caller that does not get it goes on without what it guards (what it is for says how).
class bounded_mutex {
public:
    /// How long a caller waits at most.
    static constexpr std::chrono::milliseconds wait{250};

    /// The mutex, owned or not (then the caller must not touch what it guards).
    std::unique_lock<std::timed_mutex> lock() noexcept {
        std::unique_lock<std::timed_mutex> l(mutex_, std::defer_lock);
        try {
            if (ran_out_.load(std::memory_order_relaxed)) {
                if (l.try_lock()) ran_out_.store(false, std::memory_order_relaxed);
            } else if (!l.try_lock_for(wait)) {
                ran_out_.store(true, std::memory_order_relaxed);
            }
        } catch (...) { // (std::system_error: not owned)
        }
        return l;
    }

private:
    std::timed_mutex mutex_;
    std::atomic<bool> ran_out_{false};
};

} // namespace compile_cache::detail
