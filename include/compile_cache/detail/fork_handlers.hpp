// compile_cache: one pthread_atfork for the library's fork handlers, run in one order
// whichever of its parts a process used first.
#pragma once

#include <compile_cache/detail/config.hpp>

namespace compile_cache::detail {

/// The parts of the library with fork handlers, in the order their `prepare` runs before
/// a fork (`parent` and `child` run after it in the reverse order). A tier's worker comes
/// first: its `prepare` lets a job under way end, and that job may need the local
/// storage's mutexes (a directory's, a SQLite file's, a memory storage's), which theirs
/// then take. The registries' and memory storages' reader-writer locks come last: no
/// thread takes another lock while it holds one (docs/design.md, "Forks").
enum class fork_stage : unsigned {
    tier_workers = 0,
    directory_storages = 1,
    sqlite_storages = 2,
    reader_writer_locks = 3
};
inline constexpr unsigned fork_stage_count = 4;

/// One part's handlers; each must not throw.
struct fork_handlers {
    void (*prepare)() noexcept;
    void (*parent)() noexcept;
    void (*child)() noexcept;
};

/// Makes `handlers` run at every fork from now on, in `stage`'s place; called once per
/// stage. The first call installs the library's one pthread_atfork; false when that
/// failed (then no handler of the library runs at a fork).
COMPILE_CACHE_DECL bool install_fork_handlers(fork_stage stage, fork_handlers handlers) noexcept;

} // namespace compile_cache::detail

#include <compile_cache/detail/impl/fork_handlers.ipp>
