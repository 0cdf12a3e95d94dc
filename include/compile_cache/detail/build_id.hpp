// compile_cache: GNU build-ids read from the ELF notes of loaded modules: the running
// program's, so that rebuilding the host compiler re-keys everything it cached, or
// that of the module (program or shared library) containing an address, so that a
// host whose code generator is a library (LLVM's) is identified by that library.
#pragma once

#include <compile_cache/detail/made_once.hpp>

// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_BUILD_ID_HPP
#define COMPILE_CACHE_DETAIL_BUILD_ID_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__has_include) && !defined(COMPILE_CACHE_NO_LINUX_EXTENSIONS)
#if __has_include(<link.h>) && __has_include(<elf.h>)
#include <elf.h>
#include <link.h>
#define COMPILE_CACHE_HAS_DL_ITERATE_PHDR 1
#endif
#endif

namespace compile_cache::detail {

#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
/// Appends the lower-case hex of the module's NT_GNU_BUILD_ID note to `out`; false
/// when it has none.
inline bool read_build_id(dl_phdr_info const* info, std::string& out) {
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
        auto const& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_NOTE) continue;
        auto const* p = reinterpret_cast<unsigned char const*>(info->dlpi_addr + ph.p_vaddr);
        std::size_t left = ph.p_memsz;
        // Note fields are padded to the segment's alignment: 4, or 8 for segments
        // such as .note.gnu.property.
        std::size_t align = ph.p_align == 8 ? 8 : 4;
        while (left >= 12) {
            std::uint32_t namesz, descsz, type;
            std::memcpy(&namesz, p, 4);
            std::memcpy(&descsz, p + 4, 4);
            std::memcpy(&type, p + 8, 4);
            // The name follows the 12-byte header; the descriptor and the next note
            // start at the next multiple of the alignment.
            auto align_up = [align](std::size_t n) { return (n + align - 1) & ~(align - 1); };
            std::size_t desc_at = align_up(12 + std::size_t{namesz});
            std::size_t next = align_up(desc_at + std::size_t{descsz});
            if (desc_at + descsz > left) break;
            if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(p + 12, "GNU", 4) == 0) {
                static constexpr char digits[] = "0123456789abcdef";
                unsigned char const* d = p + desc_at;
                for (std::uint32_t j = 0; j < descsz; ++j) {
                    out.push_back(digits[d[j] >> 4]);
                    out.push_back(digits[d[j] & 15]);
                }
                return true;
            }
            if (next >= left) break;
            p += next;
            left -= next;
        }
    }
    return false;
}

inline int find_main_build_id(dl_phdr_info* info, std::size_t, void* data) {
    // The first object dl_iterate_phdr reports is the main program.
    read_build_id(info, *static_cast<std::string*>(data));
    return 1; // only the main program matters
}
#endif

/// Lower-case hex of the main program's NT_GNU_BUILD_ID note; empty when it has none
/// or the platform cannot tell.
inline std::string const& main_program_build_id() {
    // Never destroyed: a cache of static storage duration builds keys at exit too.
    static std::atomic<std::string const*> id{nullptr};
    return made_once(id, [] {
        auto s = std::make_unique<std::string>();
#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
        dl_iterate_phdr(&find_main_build_id, s.get());
#endif
        return std::unique_ptr<std::string const>(std::move(s));
    });
}

/// main_program_build_id, made as the program (or a library that includes this header)
/// starts: later, a child forked while another thread of its parent was in
/// dl_iterate_phdr would wait for ever for the loader's lock, which glibc (2.36) does
/// not reset in a child (docs/design.md, "Forks").
inline bool const main_program_build_id_made_at_start = [] {
    try {
        (void)main_program_build_id();
    } catch (...) { // (std::bad_alloc: made at the first use instead)
    }
    return true;
}();

/// A module (the main program or a shared library) loaded in this process.
struct loaded_module {
    bool found = false;       ///< false: no loaded module contains the address (or the platform cannot tell)
    bool main_program = false;
    std::string path;         ///< as the dynamic loader names it; empty for the main program
    std::uintptr_t base = 0;  ///< its load address: one value per module
    std::uintptr_t segment = 0; ///< the start of the loaded segment that contains the address
    std::string build_id;     ///< lower-case hex of its GNU build-id; empty when it has none
    /// dl_iterate_phdr's counts of the modules loaded and unloaded in the process when it was
    /// found: while neither changes, every module found stays the file mapped at its place.
    unsigned long long loads = 0, unloads = 0;
    bool counted = false; ///< false: the platform does not count them (loads and unloads are 0)
};

#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
struct module_search {
    std::uintptr_t address;
    bool first = true;
    loaded_module* out;
};

inline int find_module_containing(dl_phdr_info* info, std::size_t size, void* data) {
    auto& search = *static_cast<module_search*>(data);
    bool const first = std::exchange(search.first, false);
    for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
        auto const& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        std::uintptr_t const from = info->dlpi_addr + ph.p_vaddr;
        if (search.address < from || search.address - from >= ph.p_memsz) continue;
        loaded_module& m = *search.out;
        m.found = true;
        m.main_program = first;
        m.path = first || !info->dlpi_name ? std::string() : std::string(info->dlpi_name);
        m.base = info->dlpi_addr;
        m.segment = from;
        read_build_id(info, m.build_id);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
            m.loads = static_cast<unsigned long long>(info->dlpi_adds);
            m.unloads = static_cast<unsigned long long>(info->dlpi_subs);
            m.counted = true;
        }
        return 1;
    }
    return 0;
}
#endif

/// The loaded module whose segments contain `address` (of a function, or of an object
/// with static storage duration): the main program or a shared library.
inline loaded_module module_containing(void const* address) {
    loaded_module m;
#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
    module_search search{reinterpret_cast<std::uintptr_t>(address), true, &m};
    dl_iterate_phdr(&find_module_containing, &search);
#else
    (void)address;
#endif
    return m;
}

/// The inode of the file mapped at `address`, as /proc/self/maps lists it: the file the
/// loader mapped, which its path may no longer name. False where there is no such list
/// (not Linux) or no file mapped there.
inline bool mapped_inode_at(std::uintptr_t address, unsigned long& inode) {
#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR) && defined(__linux__)
    std::FILE* maps = std::fopen("/proc/self/maps", "re");
    if (!maps) return false;
    bool found = false;
    char line[4096 + 128];
    while (!found && std::fgets(line, sizeof line, maps)) {
        unsigned long from = 0, to = 0;
        if (std::sscanf(line, "%lx-%lx %*s %*s %*s %lu", &from, &to, &inode) == 3 && address >= from &&
            address < to && inode != 0)
            found = true;
        // (A line longer than the buffer continues on the next read: its tail parses as no line.)
    }
    std::fclose(maps);
    return found;
#else
    (void)address, (void)inode;
    return false;
#endif
}

/// How module_identity reads the content of a module without a build-id. build_id.hpp sits
/// below the hasher and cannot include it: toolchain::of_code gives the library's SHA-256
/// (key/detail/executable_digest.hpp), which that header also registers while a module that
/// includes it is loaded (content_digests_registration), for the callers that cannot include
/// it (the LLVM adapter's side built without RTTI: its side built with RTTI includes it).
/// Without digests, such a module's identity is unknown: it is named for this process alone.
struct content_digests {
    /// The running program's executable file (/proc/self/exe: the file that runs, even if
    /// its path names another since), read once per process; empty when it cannot be read.
    std::string const& (*main_program)() noexcept;
    /// The content of the open file `fd` from its first byte to its end (its offset is
    /// left anywhere); empty when it cannot be read to its end.
    std::string (*file)(int fd) noexcept;
};

/// The digests registered (one module's at a time; null while none are), and the calls
/// using them: the id of the process counting in the high 32 bits, their count in the low
/// (a child forked while a thread of its parent used them starts with none).
struct content_digests_registry {
    std::atomic<content_digests const*> digests{nullptr};
    std::atomic<std::uint64_t> users{0};
};

/// The registry: the process's where the modules share this function's definition (the
/// first loaded that exports it), else one of each module's own.
inline content_digests_registry& registered_content_digests() noexcept {
    static content_digests_registry registry; // constant-initialised
    return registry;
}

/// `users` counting in this process, as content_digests_registry holds it.
inline std::uint64_t content_digests_users_here() noexcept {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(::getpid())) << 32;
}

/// The digests registered, for one call: while it lives, the registration it read is not
/// withdrawn past it (the module that registered them is not unloaded under it). Null
/// digests when none are registered.
class registered_content_digests_use {
public:
    registered_content_digests_use() noexcept {
        auto& r = registered_content_digests();
        std::uint64_t const here = content_digests_users_here();
        std::uint64_t users = r.users.load();
        while (!r.users.compare_exchange_weak(users, (users >> 32 << 32) == here ? users + 1 : here | 1)) {
        }
        digests_ = r.digests.load();
        if (!digests_) r.users.fetch_sub(1); // (none to keep)
    }
    ~registered_content_digests_use() {
        if (digests_) registered_content_digests().users.fetch_sub(1);
    }
    registered_content_digests_use(registered_content_digests_use const&) = delete;
    registered_content_digests_use& operator=(registered_content_digests_use const&) = delete;

    content_digests const* get() const noexcept { return digests_; }

private:
    content_digests const* digests_ = nullptr;
};

/// Makes `d` the digests module_identity uses without digests given, unless some are
/// registered already, for as long as it lives: destroyed (when the module that holds it
/// is unloaded, or exits), it withdraws them, after the calls that are using them return,
/// waiting for them 10 s at most (a call reads a file: one stalled past that, by a disk or
/// a thread that never runs again, is not waited for; at an exit the code stays mapped).
/// `d` and its functions must stay until then. Without a registration, module_identity
/// names each module without a build-id for this process alone.
class content_digests_registration {
public:
    explicit content_digests_registration(content_digests const* d) noexcept {
        content_digests const* none = nullptr;
        if (registered_content_digests().digests.compare_exchange_strong(none, d)) d_ = d;
    }
    ~content_digests_registration() {
        if (!d_) return;
        auto& r = registered_content_digests();
        content_digests const* mine = d_;
        if (!r.digests.compare_exchange_strong(mine, nullptr)) return;
        std::uint64_t const here = content_digests_users_here();
        for (int waited_ms = 0; waited_ms < 10000; ++waited_ms) { // (every call that read `d_` counted itself first)
            std::uint64_t const users = r.users.load();
            if ((users >> 32 << 32) != here || (users & 0xffffffffu) == 0) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    content_digests_registration(content_digests_registration const&) = delete;
    content_digests_registration& operator=(content_digests_registration const&) = delete;

private:
    content_digests const* d_ = nullptr;
};

/// `shown` named for this process alone: an identity no other process gives, for a module
/// whose content is unknown, so that keys built on it miss in every other process.
inline std::string for_this_process_alone(std::string const& shown) {
    return shown + ":not known, process " + std::to_string(::getpid()) + " at " +
           std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
}

/// The main program named for this process alone (for_this_process_alone), when its content
/// cannot be read: one name for the rest of the process (and its forks, which run the same file).
inline std::string const& main_program_for_this_process_alone() {
    static std::atomic<std::string const*> alone{nullptr};
    return made_once(alone, [] { return std::make_unique<std::string const>(for_this_process_alone("main program")); });
}

/// What tells one version of a file from another without reading it: the device, inode,
/// size, modification and status-change times (the last set by every write and every
/// change of the other times, and by no call a user makes).
struct file_version {
    unsigned long long device = 0, inode = 0;
    long long size = -1;
    long long mtime = 0, mtime_ns = 0, ctime = 0, ctime_ns = 0;

    static file_version of(struct ::stat const& st) {
        file_version v;
        v.device = static_cast<unsigned long long>(st.st_dev);
        v.inode = static_cast<unsigned long long>(st.st_ino);
        v.size = static_cast<long long>(st.st_size);
        v.mtime = static_cast<long long>(st.st_mtime);
        v.ctime = static_cast<long long>(st.st_ctime);
#if defined(__linux__)
        v.mtime_ns = st.st_mtim.tv_nsec;
        v.ctime_ns = st.st_ctim.tv_nsec;
#endif
        return v;
    }
    friend bool operator==(file_version const& a, file_version const& b) {
        return a.device == b.device && a.inode == b.inode && a.size == b.size && a.mtime == b.mtime &&
               a.mtime_ns == b.mtime_ns && a.ctime == b.ctime && a.ctime_ns == b.ctime_ns;
    }
};

/// A library without a build-id, by the content of the file the loader mapped: its path
/// and the digest of that file (`digests`->file), read once per file
/// version and process, only after the file the path names is found to be the one mapped
/// there (the inode /proc/self/maps lists for the address); the name is then kept for
/// as long as that file stays mapped there while its path names another (an install
/// renamed another over it), so that it still names the code that runs, never the new
/// file. A file rewritten in place (the same inode) is named anew. Where the content of
/// the file mapped cannot be read (the path named another file when first seen, no
/// /proc/self/maps to tell, the file unreadable, no `digests`, the file changing
/// while read), the library is named for this process alone: its entries miss in every
/// other; so is any library while the names are not to be had within 1 s (a child forked
/// while another thread held them). Inodes only are compared with the maps (an overlay
/// file system shows another device there than stat does). A name is given again without
/// the maps read again only while the path names the version it named and no module was
/// loaded or unloaded in the process since the file mapped was found (loaded_module's
/// counts): another file loaded at that place since, from the path while it named another,
/// is never given the first file's name. Files are read outside the lock.
inline std::string library_file_identity(loaded_module const& m, content_digests const* digests) {
    struct named_file {
        std::uintptr_t base;
        std::string path;
        unsigned long inode;     ///< of the file mapped when named; 0: not known
        file_version on_disk;    ///< what the path named when named
        std::string digest;      ///< of the file mapped, when read; empty: not known
        std::string identity;
        bool counted;            ///< the module's loads and unloads were counted (loaded_module)
        unsigned long long loads, unloads; ///< when `inode` was found mapped (or found not to be known)
    };
    static std::atomic<std::timed_mutex*> the_mutex{nullptr};
    static std::atomic<std::vector<named_file>*> the_named{nullptr};
    std::timed_mutex& mutex = made_once(the_mutex, [] { return std::make_unique<std::timed_mutex>(); });
    std::vector<named_file>& named = made_once(the_named, [] { return std::make_unique<std::vector<named_file>>(); });
    if (!digests) return for_this_process_alone(m.path); // (not remembered: a later call may have them)
    // Within a bound: a child forked while another thread held it would wait forever.
    auto const lock_named = [&mutex] { return std::unique_lock<std::timed_mutex>(mutex, std::chrono::seconds(1)); };
    // The name remembered for this module (its place and path); named.end() when none.
    auto const named_here = [&] {
        return std::find_if(named.begin(), named.end(),
                            [&](named_file const& f) { return f.base == m.base && f.path == m.path; });
    };
    struct ::stat st;
    bool const stated = ::stat(m.path.c_str(), &st) == 0;
    file_version const on_disk = stated ? file_version::of(st) : file_version{};
    {
        std::unique_lock<std::timed_mutex> lock = lock_named();
        if (!lock.owns_lock()) return for_this_process_alone(m.path);
        auto it = named_here();
        // Unchanged: the path names the version it named, and no module was loaded or unloaded
        // since the file mapped was found (so it is still mapped here: not another file,
        // loaded here since from a path that names the first again).
        if (it != named.end() && stated && on_disk == it->on_disk && m.counted && it->counted &&
            m.loads == it->loads && m.unloads == it->unloads)
            return it->identity;
    }
    unsigned long inode = 0;
    bool const mapped = mapped_inode_at(m.segment, inode);
    std::string digest;
    bool read = false; // `digest` is of the file mapped
    {
        std::unique_lock<std::timed_mutex> lock = lock_named();
        if (!lock.owns_lock()) return for_this_process_alone(m.path);
        auto it = named_here();
        // The file named is still the one mapped: the path names the version it named, or
        // names another (renamed over it) while no module was loaded or unloaded since it was
        // found (else the inode mapped may be a new file's, given the first one's freed
        // number). The name stands, from now on checked against these counts.
        bool const path_names_mapped = stated && static_cast<unsigned long>(st.st_ino) == inode;
        bool const unchanged_since = m.counted && it != named.end() && it->counted && m.loads == it->loads &&
                                     m.unloads == it->unloads;
        if (it != named.end() && mapped && inode == it->inode &&
            (path_names_mapped ? on_disk == it->on_disk : unchanged_since)) {
            it->counted = m.counted, it->loads = m.loads, it->unloads = m.unloads;
            return it->identity;
        }
    }
    // First seen here, another file loaded at this place since, or the named one rewritten
    // in place. Read through a descriptor whose file is checked to be the one mapped.
    file_version opened;
    int const fd = mapped ? ::open(m.path.c_str(), O_RDONLY | O_CLOEXEC) : -1;
    struct ::stat before;
    if (fd >= 0 && ::fstat(fd, &before) == 0 && static_cast<unsigned long>(before.st_ino) == inode) {
        opened = file_version::of(before);
        {
            std::unique_lock<std::timed_mutex> lock = lock_named();
            if (lock.owns_lock()) { // a version of this file read before (another load of it)
                auto same = std::find_if(named.begin(), named.end(), [&](named_file const& f) {
                    return !f.digest.empty() && f.path == m.path && f.on_disk == opened;
                });
                if (same != named.end()) digest = same->digest, read = true;
            }
        }
        if (!read) {
            digest = digests->file(fd);
            struct ::stat after;
            // Changed while read: what was read may be of neither version.
            read = !digest.empty() && ::fstat(fd, &after) == 0 && file_version::of(after) == opened;
        }
    }
    if (fd >= 0) ::close(fd);
    std::string const identity = read ? m.path + ":" + digest : for_this_process_alone(m.path);
    std::unique_lock<std::timed_mutex> lock = lock_named();
    if (!lock.owns_lock()) return identity; // (not remembered)
    auto it = named_here();
    // Remembered with what the path named when checked (the file read, when it was read):
    // while the path names that version, it is not checked again.
    named_file f{m.base, m.path, mapped ? inode : 0, read ? opened : on_disk, read ? digest : std::string(),
                 identity, m.counted, m.loads, m.unloads};
    if (it != named.end())
        *it = std::move(f);
    else
        named.push_back(std::move(f));
    return identity;
}

/// What identifies the code of the modules containing `addresses`: for each module
/// (once, in the order first met), its build-id; for a module without one, the content
/// of its file, read with `digests`: the main program's by content_digests::main_program
/// (which reads the file running, through /proc/self/exe: "exe-sha256:" and its SHA-256,
/// as toolchain::current() names it), a library's by library_file_identity. A module whose
/// content cannot be read (or when `digests` is null) is named for this process alone
/// (for_this_process_alone), never by less than its content. Empty when no address is in
/// a loaded module.
inline std::string module_identity(std::initializer_list<void const*> addresses, content_digests const* digests) {
    std::string id;
    std::vector<std::uintptr_t> seen;
    for (void const* a : addresses) {
        loaded_module m = module_containing(a);
        if (!m.found || std::find(seen.begin(), seen.end(), m.base) != seen.end()) continue;
        seen.push_back(m.base);
        if (!id.empty()) id += ' ';
        if (!m.build_id.empty()) {
            id += m.build_id;
            continue;
        }
        if (!m.main_program) {
            id += library_file_identity(m, digests);
            continue;
        }
        std::string const program = digests ? digests->main_program() : std::string();
        id += program.empty() ? main_program_for_this_process_alone() : program;
    }
    return id;
}

/// module_identity with the digests registered (content_digests_registration), for a caller
/// that cannot include key/detail/executable_digest.hpp (the LLVM adapter's side without RTTI).
inline std::string module_identity(std::initializer_list<void const*> addresses) {
    registered_content_digests_use const digests;
    return module_identity(addresses, digests.get());
}

/// What identifies the code of the one module containing `address`, as module_identity
/// does, but without the path a library without a build-id is named with there: one build
/// of a library is named alike wherever it is installed (a fleet's machines, a per-job
/// directory), so that keys built on it are shared. Named for this process alone, as there,
/// when its file cannot be read again (loaded by a relative path, the working directory
/// changed since). Empty when no module contains it.
inline std::string module_code_identity(void const* address, content_digests const* digests) {
    loaded_module const m = module_containing(address);
    if (!m.found) return {};
    if (!m.build_id.empty() || m.main_program) return module_identity({address}, digests);
    std::string id = library_file_identity(m, digests);
    if (id.size() > m.path.size() && id.compare(0, m.path.size(), m.path) == 0 && id[m.path.size()] == ':')
        id.erase(0, m.path.size() + 1);
    return id;
}

/// The address of a function, for module_containing and module_identity (a function
/// pointer is not a `void const*` in standard C++; it is on every platform that has
/// dl_iterate_phdr).
template <class R, class... Args>
void const* code_address(R (*function)(Args...)) noexcept {
    return reinterpret_cast<void const*>(function);
}

} // namespace compile_cache::detail

#endif // COMPILE_CACHE_DETAIL_BUILD_ID_HPP
