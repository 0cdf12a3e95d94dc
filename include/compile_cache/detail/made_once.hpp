// compile_cache: a value made at its first use and kept for the process, without the guard
// of a function-local static that a forked child may find held for ever.
#pragma once
// An include guard as well: detail/build_id.hpp includes it, and the LLVM adapter's
// single-header copies inline both (scripts/amalgamate.py), as does the single header.
#ifndef COMPILE_CACHE_DETAIL_MADE_ONCE_HPP
#define COMPILE_CACHE_DETAIL_MADE_ONCE_HPP

#include <atomic>
#include <memory>
#include <utility>

namespace compile_cache::detail {

/// The object `make()` makes (a `std::unique_ptr<T>` to it), made at the first call with
/// `slot` and never destroyed (a cache of static storage duration works at exit too).
/// `slot` is a function-local `static std::atomic<T*>` (constant-initialised: no guard).
/// No caller waits for another: callers that meet before the first object is published
/// each make one, the first published is kept and the others are dropped. So a child
/// forked while a thread of its parent was making it makes its own at once, where a
/// function-local static's guard would stay held in the child for ever (docs/design.md,
/// "Forks"). What `make` throws is thrown.
template <class T, class Make>
T& made_once(std::atomic<T*>& slot, Make&& make) {
    if (T* const made = slot.load(std::memory_order_acquire)) return *made;
    std::unique_ptr<T> fresh = std::forward<Make>(make)();
    T* kept = nullptr;
    if (slot.compare_exchange_strong(kept, fresh.get(), std::memory_order_acq_rel, std::memory_order_acquire))
        return *fresh.release();
    return *kept;
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_DETAIL_MADE_ONCE_HPP
