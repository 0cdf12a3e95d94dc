// compile_cache: read-only mappings of entry files that survive the file changing
// under them: a SIGBUS on a registered mapping puts a page of zeros where the fault
// was and marks the mapping, and a write in place shows in the file's times, so that
// the reader takes the bytes as changed (a miss) and the host never crashes. Not part
// of the public interface. Linux/POSIX.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include <signal.h>
#include <sys/stat.h>

namespace compile_cache::detail::directory_storage_impl {

/// One mapping a reader may touch: [begin, end), and whether a fault was repaired in
/// it. begin 0: the slot is free; 1: being claimed.
struct mapping_slot {
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
    std::atomic<bool> faulted{false};
};

/// The mappings live in this process, looked up by the SIGBUS handler (lock-free,
/// async-signal-safe). A reader that finds every slot taken reads instead of mapping.
struct mapping_registry {
    static constexpr std::size_t slot_count = 64;
    mapping_slot slots[slot_count];
    /// 0: the handler is not installed yet; 2: a thread is installing it (a reader that
    /// finds this reads instead of mapping, never waits: a child forked meanwhile keeps
    /// 2 and never maps); 1: installed; -1: could not be installed (mapping is then
    /// never used).
    std::atomic<int> state{0};
    std::atomic<std::uintptr_t> page_size{4096};
};

/// The process's registry: constant-initialized, so the handler may use it at any time.
inline mapping_registry& the_mapping_registry() noexcept {
    static mapping_registry registry;
    return registry;
}

/// The SIGBUS action in place before ours (called for faults outside our mappings).
inline struct sigaction& previous_sigbus_action() noexcept {
    static struct sigaction action; // zero-initialized, no guard
    return action;
}

/// The handler: a fault inside a registered mapping maps a page of zeros over the
/// faulting page and marks the slot; any other SIGBUS goes to the previous action
/// (the default one ends the process, as it would have without this handler).
COMPILE_CACHE_DECL void on_sigbus(int signal, siginfo_t* info, void* context) noexcept;

/// Installs on_sigbus once per process (keeping the previous action) and says whether
/// it is SIGBUS's action now: false when it could not be installed, when something
/// installed another handler since (mapping is then not safe, and not used), or when
/// another thread is installing it at this moment (or was, in the parent of a forked
/// child). Never waits for anything.
COMPILE_CACHE_DECL bool sigbus_guard_ready() noexcept;

/// For tests: called by the thread that installs on_sigbus, before its sigaction calls
/// (so that a test can fork or read from another thread while the install is under way).
inline void (*during_sigbus_install_for_testing)() = nullptr;

/// For tests: called after a mapping is made and before its bytes are handed out,
/// with the entry's path (to truncate or replace it in between, for real).
inline thread_local void (*after_map_for_testing)(char const* path) = nullptr;

/// A read-only private mapping of a whole file, registered with the SIGBUS handler for
/// as long as it lives. Move-only.
class mapped_file {
public:
    mapped_file() noexcept = default;
    mapped_file(mapped_file const&) = delete;
    mapped_file& operator=(mapped_file const&) = delete;
    mapped_file(mapped_file&& other) noexcept { swap(other); }
    mapped_file& operator=(mapped_file&& other) noexcept {
        if (this != &other) {
            reset();
            swap(other);
        }
        return *this;
    }
    ~mapped_file() { reset(); }

    /// Maps the whole file open at `fd`, whose fstat is `st` (its st_size bytes: more
    /// would fault), keeping a descriptor of it for intact(). False, nothing mapped, when
    /// the guard is not ready, this thread blocks SIGBUS (a fault would then end the
    /// process: the kernel unblocks it and takes the default action), no slot is free,
    /// or the descriptor cannot be kept or mmap fails: the caller reads instead.
    COMPILE_CACHE_DECL bool map(int fd, struct stat const& st) noexcept;

    /// Unregisters, then unmaps.
    COMPILE_CACHE_DECL void reset() noexcept;

    std::string_view bytes() const noexcept { return {static_cast<char const*>(base_), size_}; }
    bool mapped() const noexcept { return base_ != nullptr; }
    /// False once the bytes may no longer be the file's as map() found it: a fault was
    /// repaired in the mapping (the file shrank: zeros from the fault on), or the file's
    /// size or modification time is not what map() was given (it was written in place:
    /// a private mapping shows such a write). True when nothing is mapped.
    COMPILE_CACHE_DECL bool intact() const noexcept;

private:
    void swap(mapped_file& other) noexcept {
        std::swap(base_, other.base_);
        std::swap(size_, other.size_);
        std::swap(slot_, other.slot_);
        std::swap(fd_, other.fd_);
        std::swap(mapped_stat_, other.mapped_stat_);
    }

    void* base_ = nullptr;
    std::size_t size_ = 0;
    mapping_slot* slot_ = nullptr;
    int fd_ = -1;              ///< the mapped file, for intact()'s fstat
    struct stat mapped_stat_ {}; ///< what map() was given
};

} // namespace compile_cache::detail::directory_storage_impl

#include <compile_cache/storage/directory/detail/impl/mapped_file.ipp>
