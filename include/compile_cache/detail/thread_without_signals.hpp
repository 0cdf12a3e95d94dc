// compile_cache: starts a thread of the library's with every signal blocked, so that the
// host's signal handlers run on the host's threads only.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace compile_cache::detail {

/// A new thread running `f`, every signal blocked in it (a signal sent to the process is
/// handled on one of the host's threads, by the host's handler). The caller's signal mask
/// is as it was on return, and when this throws what std::thread's constructor throws.
template <class F>
std::thread thread_without_signals(F&& f) {
    sigset_t all;
    sigset_t before;
    ::sigfillset(&all);
    bool const masked = ::pthread_sigmask(SIG_SETMASK, &all, &before) == 0;
    struct restore {
        bool masked;
        sigset_t const& before;
        ~restore() {
            if (masked) ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
        }
    } const restored{masked, before};
    return std::thread(std::forward<F>(f));
}

} // namespace compile_cache::detail
