// compile_cache: the definitions of storage/directory/detail/mapped_file.hpp's non-template functions; included by it
// alone (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL

#include <cerrno>

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace compile_cache::detail::directory_storage_impl {

void on_sigbus(int signal, siginfo_t* info, void* context) noexcept {
    int const saved_errno = errno;
    mapping_registry& r = the_mapping_registry();
    auto const address = reinterpret_cast<std::uintptr_t>(info != nullptr ? info->si_addr : nullptr);
    std::uintptr_t const page = r.page_size.load(std::memory_order_relaxed);
    for (mapping_slot& s : r.slots) {
        std::uintptr_t const begin = s.begin.load(std::memory_order_acquire);
        if (begin <= 1 || address < begin || address >= s.end.load(std::memory_order_acquire)) continue;
        // The file shrank under the mapping: a private page of zeros where the fault
        // was lets the instruction complete; the reader sees the mark and misses.
        void* const at = reinterpret_cast<void*>(address & ~(page - 1));
        if (::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            s.faulted.store(true, std::memory_order_release);
            errno = saved_errno;
            return;
        }
        break; // could not repair: as if it were not ours
    }
    struct sigaction const& previous = previous_sigbus_action();
    // (SIG_DFL and SIG_IGN first: either may come with SA_SIGINFO set, and is no function.)
    bool const handler = previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN;
    if (handler && (previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
        previous.sa_sigaction(signal, info, context);
    } else if (handler && previous.sa_handler != nullptr) {
        previous.sa_handler(signal);
    } else if (previous.sa_handler == SIG_IGN && (info == nullptr || info->si_code <= 0)) {
        // Sent (kill, raise), not a fault, to a process that ignored SIGBUS: ignored still.
        // (A fault is never ignored: the kernel would have ended the process without us,
        // and the fallback below does.)
    } else {
        // What would have happened without this handler: the default action, on the
        // fault repeated when this returns (or on the signal raised again).
        struct sigaction fallback {};
        fallback.sa_handler = SIG_DFL;
        sigemptyset(&fallback.sa_mask);
        ::sigaction(SIGBUS, &fallback, nullptr);
        if (info == nullptr || info->si_code <= 0) ::raise(signal); // sent, not a fault
    }
    errno = saved_errno;
}

bool sigbus_guard_ready() noexcept {
    mapping_registry& r = the_mapping_registry();
    int state = r.state.load(std::memory_order_acquire);
    // One thread installs (0 -> 2 -> 1 or -1); the others, and a child forked meanwhile,
    // read instead of mapping, and never wait (docs/design.md).
    if (state == 0 && r.state.compare_exchange_strong(state, 2, std::memory_order_acq_rel)) {
        if (during_sigbus_install_for_testing != nullptr) during_sigbus_install_for_testing();
        long const page = ::sysconf(_SC_PAGESIZE);
        if (page > 0) r.page_size.store(static_cast<std::uintptr_t>(page), std::memory_order_relaxed);
        struct sigaction ours {};
        ours.sa_sigaction = &on_sigbus;
        ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&ours.sa_mask);
        // The previous action is saved before ours can run (the handler reads it).
        if (page > 0 && ::sigaction(SIGBUS, nullptr, &previous_sigbus_action()) == 0 &&
            ::sigaction(SIGBUS, &ours, nullptr) == 0)
            state = 1;
        else
            state = -1;
        r.state.store(state, std::memory_order_release);
    }
    if (state != 1) return false;
    // A host (or a library) that set its own SIGBUS handler since: ours no longer runs.
    struct sigaction now {};
    if (::sigaction(SIGBUS, nullptr, &now) != 0) return false;
    return (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == &on_sigbus;
}

bool mapped_file::map(int fd, struct stat const& st) noexcept {
    reset();
    if (st.st_size <= 0 || !sigbus_guard_ready()) return false;
    auto const size = static_cast<std::size_t>(st.st_size);
    // A thread that blocks SIGBUS reads (docs/design.md, "Mapped hits").
    sigset_t blocked;
    sigemptyset(&blocked);
    if (::pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0 || sigismember(&blocked, SIGBUS) != 0) return false;
    int const kept = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (kept < 0) return false;
    mapping_registry& r = the_mapping_registry();
    mapping_slot* slot = nullptr;
    for (mapping_slot& s : r.slots) {
        std::uintptr_t expected = 0;
        if (s.begin.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
            slot = &s;
            break;
        }
    }
    if (slot == nullptr) {
        ::close(kept);
        return false;
    }
    // Not MAP_POPULATE: measured slower here up to a few MiB (docs/benchmarks.md).
    void* const base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
        slot->begin.store(0, std::memory_order_release);
        ::close(kept);
        return false;
    }
    std::uintptr_t const page = r.page_size.load(std::memory_order_relaxed);
    auto const begin = reinterpret_cast<std::uintptr_t>(base);
    slot->faulted.store(false, std::memory_order_relaxed);
    slot->end.store(begin + ((size + page - 1) & ~(page - 1)), std::memory_order_release);
    slot->begin.store(begin, std::memory_order_release);
    base_ = base;
    size_ = size;
    slot_ = slot;
    fd_ = kept;
    mapped_stat_ = st;
    return true;
}

bool mapped_file::intact() const noexcept {
    if (slot_ == nullptr) return true;
    if (slot_->faulted.load(std::memory_order_acquire)) return false;
    // Size and modification time, not the change time (docs/design.md, "Mapped hits").
    struct stat now;
    if (::fstat(fd_, &now) != 0) return false;
    return now.st_size == mapped_stat_.st_size && now.st_mtim.tv_sec == mapped_stat_.st_mtim.tv_sec &&
           now.st_mtim.tv_nsec == mapped_stat_.st_mtim.tv_nsec;
}

void mapped_file::reset() noexcept {
    if (base_ == nullptr) return;
    // Unregistered first: once unmapped, the addresses may be mapped again by anyone.
    slot_->begin.store(1, std::memory_order_release);
    slot_->end.store(0, std::memory_order_release);
    slot_->faulted.store(false, std::memory_order_relaxed);
    ::munmap(base_, size_);
    slot_->begin.store(0, std::memory_order_release);
    ::close(fd_);
    base_ = nullptr;
    size_ = 0;
    slot_ = nullptr;
    fd_ = -1;
}

} // namespace compile_cache::detail::directory_storage_impl

#endif // COMPILE_CACHE_INCLUDE_IMPL
