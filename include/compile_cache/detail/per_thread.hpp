// compile_cache: the library's per-thread scratch objects, which answer nullptr once their
// thread's objects are destroyed, so that a cache used at exit does without them.
#pragma once

namespace compile_cache::detail {

/// Set on a thread once its per_thread<T, Tag> object is destroyed (a flag with no
/// destructor of its own, so it can still be read then).
template <class T, class Tag>
inline thread_local bool per_thread_gone = false;

/// This thread's object of type T (value-initialized on its first use), or nullptr once
/// it is destroyed: at the thread's end and, in the main thread, at exit, where objects
/// of thread storage duration go before those of static storage duration, from whose
/// destructors a host may still use a cache (one of static storage duration included).
/// A caller given nullptr does without: a local object, or nothing remembered. `Tag`
/// tells two objects of one type apart. T's default constructor must not throw.
template <class T, class Tag = T>
T* per_thread() noexcept {
    struct holder {
        T value{};
        ~holder() { per_thread_gone<T, Tag> = true; }
    };
    if (per_thread_gone<T, Tag>) return nullptr;
    thread_local holder h;
    return &h.value;
}

} // namespace compile_cache::detail
