// The clock-taking lock calls of glibc 2.30+ (std::timed_mutex and std::shared_timed_mutex
// wait with them) for test programs under ThreadSanitizer, whose GCC 12 runtime does not
// intercept them: a lock taken through one is unseen, and its unlock reported as an unlock
// of a mutex not held. Each waits as glibc's does, through the call with the same deadline
// on CLOCK_REALTIME, which the runtime intercepts. Linked into the tsan build alone.
#include <pthread.h>
#include <time.h>

namespace {

/// `deadline` on `clock`, as the same moment on CLOCK_REALTIME.
timespec on_realtime(clockid_t clock, timespec const* deadline) {
    timespec now_there{}, now_real{};
    ::clock_gettime(clock, &now_there);
    ::clock_gettime(CLOCK_REALTIME, &now_real);
    long long const left_ns = (static_cast<long long>(deadline->tv_sec) - now_there.tv_sec) * 1000000000LL +
                              (deadline->tv_nsec - now_there.tv_nsec);
    long long const at_ns = static_cast<long long>(now_real.tv_sec) * 1000000000LL + now_real.tv_nsec + left_ns;
    timespec r{};
    r.tv_sec = static_cast<time_t>(at_ns / 1000000000LL);
    r.tv_nsec = static_cast<long>(at_ns % 1000000000LL);
    return r;
}

} // namespace

extern "C" int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t clock, timespec const* deadline) {
    timespec const real = on_realtime(clock, deadline);
    return ::pthread_mutex_timedlock(m, &real);
}

extern "C" int pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t clock, timespec const* deadline) {
    timespec const real = on_realtime(clock, deadline);
    return ::pthread_rwlock_timedrdlock(l, &real);
}

extern "C" int pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t clock, timespec const* deadline) {
    timespec const real = on_realtime(clock, deadline);
    return ::pthread_rwlock_timedwrlock(l, &real);
}
