// compile_cache: the definitions of detail/fork_handlers.hpp's functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <pthread.h>

#include <atomic>

namespace compile_cache::detail {

/// The handlers installed, by stage. Trivially destructible: a fork may come at exit.
struct fork_handler_table {
    fork_handlers handlers[fork_stage_count] = {};
    std::atomic<bool> installed[fork_stage_count] = {};
};
COMPILE_CACHE_DECL fork_handler_table& the_fork_handler_table() noexcept;
fork_handler_table& the_fork_handler_table() noexcept {
    static fork_handler_table table;
    return table;
}

COMPILE_CACHE_DECL void run_fork_prepare() noexcept;
void run_fork_prepare() noexcept {
    fork_handler_table& t = the_fork_handler_table();
    for (unsigned i = 0; i < fork_stage_count; ++i)
        if (t.installed[i].load(std::memory_order_acquire)) t.handlers[i].prepare();
}

COMPILE_CACHE_DECL void run_fork_parent() noexcept;
void run_fork_parent() noexcept {
    fork_handler_table& t = the_fork_handler_table();
    for (unsigned i = fork_stage_count; i-- > 0;)
        if (t.installed[i].load(std::memory_order_acquire)) t.handlers[i].parent();
}

COMPILE_CACHE_DECL void run_fork_child() noexcept;
void run_fork_child() noexcept {
    fork_handler_table& t = the_fork_handler_table();
    for (unsigned i = fork_stage_count; i-- > 0;)
        if (t.installed[i].load(std::memory_order_acquire)) t.handlers[i].child();
}

bool install_fork_handlers(fork_stage stage, fork_handlers handlers) noexcept {
    static bool const installed = ::pthread_atfork(&run_fork_prepare, &run_fork_parent, &run_fork_child) == 0;
    if (!installed) return false;
    fork_handler_table& t = the_fork_handler_table();
    auto const i = static_cast<unsigned>(stage);
    if (t.installed[i].load(std::memory_order_acquire)) return true;
    t.handlers[i] = handlers;
    t.installed[i].store(true, std::memory_order_release);
    return true;
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_INCLUDE_IMPL
