// Replaces the global operator new of the one program that includes this header, so that a
// test can make an allocation fail (std::bad_alloc) or park the thread making it.
//
// Include it in one translation unit of a program only: it defines operator new and
// delete. The fault and the park each concern the thread that arms them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include <unistd.h>

namespace compile_cache_test {

// The fault's state, on the thread that armed it.
inline thread_local bool allocation_fault_armed = false;
inline thread_local long allocation_fault_countdown = 0;
inline thread_local bool allocation_fault_fired = false;
inline thread_local bool allocation_fault_persistent = false;

/// While alive, on the thread that made it, the `nth` allocation from then throws
/// std::bad_alloc; with `persistent`, every later one too (memory exhausted) until
/// disarmed.
struct allocation_fault {
    allocation_fault(long nth, bool persistent) noexcept {
        allocation_fault_fired = false;
        allocation_fault_persistent = persistent;
        allocation_fault_countdown = nth;
        allocation_fault_armed = true;
    }
    ~allocation_fault() { disarm(); }
    allocation_fault(allocation_fault const&) = delete;
    allocation_fault& operator=(allocation_fault const&) = delete;
    static void disarm() noexcept {
        allocation_fault_armed = false;
        allocation_fault_persistent = false;
    }
    /// Whether an allocation failed since the last one was armed.
    static bool fired() noexcept { return allocation_fault_fired; }
};

// The park: on the thread that arms it, the next allocation waits (before it allocates
// anything) until released, so that the thread stays inside the call that allocated,
// holding what that call holds. allocation_park_state: 1 once parked, 2 to release.
inline thread_local bool allocation_park_armed = false;
inline std::atomic<int> allocation_park_state{0};
inline void park_if_armed() noexcept {
    if (!allocation_park_armed) return;
    allocation_park_armed = false;
    allocation_park_state.store(1);
    while (allocation_park_state.load() != 2) ::usleep(1000);
}

} // namespace compile_cache_test

// (Not inlined: GCC would see free() called on what `new` returned, -Wmismatched-new-delete.)
[[gnu::noinline]] void* operator new(std::size_t n) {
    using namespace compile_cache_test;
    park_if_armed();
    if (allocation_fault_armed && (allocation_fault_countdown <= 0 || --allocation_fault_countdown == 0)) {
        if (!allocation_fault_persistent) allocation_fault_armed = false;
        allocation_fault_fired = true;
        throw std::bad_alloc();
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow forms too, so that what they return is freed by the delete above (Catch2
// allocates with them; a sanitizer's own would not match the free, and ASan stops there).
[[gnu::noinline]] void* operator new(std::size_t n, std::nothrow_t const&) noexcept {
    try {
        return ::operator new(n);
    } catch (...) {
        return nullptr;
    }
}
[[gnu::noinline]] void operator delete(void* p, std::nothrow_t const&) noexcept { std::free(p); }
