// compile_cache: SIGPIPE blocked on the calling thread for a scope, and one raised within
// it taken back, so that a write to a connection the peer closed never ends the host.
#pragma once

#include <signal.h>
#include <time.h>

namespace compile_cache::detail {

/// Blocks SIGPIPE on this thread while alive; at its end, takes a SIGPIPE raised for this
/// thread meanwhile (a library that writes to a closed socket without MSG_NOSIGNAL: an
/// older libcurl's TLS layer) unless the thread had blocked SIGPIPE itself (then one
/// pending stays the host's; none can be pending otherwise), and restores the thread's
/// mask. Two or three system calls; no member throws.
class sigpipe_blocked {
public:
    sigpipe_blocked() noexcept {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &before_) == 0;
    }
    ~sigpipe_blocked() {
        if (!blocked_) return;
        if (sigismember(&before_, SIGPIPE) != 1) {
            struct timespec const now {0, 0};
            while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &before_, nullptr);
    }
    sigpipe_blocked(sigpipe_blocked const&) = delete;
    sigpipe_blocked& operator=(sigpipe_blocked const&) = delete;

private:
    sigset_t pipe_{};
    sigset_t before_{};
    bool blocked_ = false;
};

} // namespace compile_cache::detail
