// compile_cache: the definitions of detail/fork_handlers.hpp's functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace compile_cache::detail {

/// The handlers installed, by stage. Trivially destructible: a fork may come at exit.
struct fork_handler_table {
    fork_handlers handlers[fork_stage_count] = {};
    std::atomic<bool> installed[fork_stage_count] = {};
    /// The stages whose prepare the fork under way ran: only theirs run after it (one
    /// installed meanwhile by another thread has nothing to give back). Forks run their
    /// handlers one at a time (pthread_atfork).
    unsigned prepared = 0;
};
COMPILE_CACHE_DECL fork_handler_table& the_fork_handler_table() noexcept;
fork_handler_table& the_fork_handler_table() noexcept {
    static fork_handler_table table;
    return table;
}

COMPILE_CACHE_DECL void run_fork_prepare() noexcept;
void run_fork_prepare() noexcept {
    fork_handler_table& t = the_fork_handler_table();
    t.prepared = 0;
    for (unsigned i = 0; i < fork_stage_count; ++i)
        if (t.installed[i].load(std::memory_order_acquire)) {
            t.handlers[i].prepare();
            t.prepared |= 1u << i;
        }
}

COMPILE_CACHE_DECL void run_fork_parent() noexcept;
void run_fork_parent() noexcept {
    fork_handler_table& t = the_fork_handler_table();
    for (unsigned i = fork_stage_count; i-- > 0;)
        if (t.prepared & (1u << i)) t.handlers[i].parent();
}

COMPILE_CACHE_DECL void run_fork_child() noexcept;
void run_fork_child() noexcept {
    fork_handler_table& t = the_fork_handler_table();
    for (unsigned i = fork_stage_count; i-- > 0;)
        if (t.prepared & (1u << i)) t.handlers[i].child();
}

bool install_fork_handlers(fork_stage stage, fork_handlers handlers) noexcept {
    // The one pthread_atfork: 0 not yet, 1 under way, 2 done, 3 failed. No static's guard,
    // which a child forked just after the call (glibc lets a fork in once it returns) would
    // find held for ever; a caller meeting one under way waits 1 s at most.
    static std::atomic<int> state{0};
    int seen = 0;
    if (state.compare_exchange_strong(seen, 1, std::memory_order_acq_rel)) {
        seen = ::pthread_atfork(&run_fork_prepare, &run_fork_parent, &run_fork_child) == 0 ? 2 : 3;
        state.store(seen, std::memory_order_release);
    }
    for (int waited_ms = 0; seen == 1 && waited_ms < 1000; ++waited_ms) {
        ::usleep(1000);
        seen = state.load(std::memory_order_acquire);
    }
    if (seen != 2) return false;
    fork_handler_table& t = the_fork_handler_table();
    auto const i = static_cast<unsigned>(stage);
    if (t.installed[i].load(std::memory_order_acquire)) return true;
    t.handlers[i] = handlers;
    t.installed[i].store(true, std::memory_order_release);
    return true;
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_INCLUDE_IMPL
