// compile_cache: an llvm::ObjectCache over a compile_cache cache, for any LLVM JIT
// that takes one (ORC's SimpleCompiler, TMOwningSimpleCompiler, ConcurrentIRCompiler;
// MCJIT). Optional: needs LLVM (written against LLVM 14); the umbrella header does
// not include it.
//
//   auto cache = compile_cache::default_cache::from_env("MYJIT_CACHE");
//   compile_cache::object_cache<compile_cache::default_cache> objects(cache, "myjit 1.2");
//   auto jit = llvm::orc::LLJITBuilder()
//       .setCompileFunctionCreator(objects.compile_function())
//       .create();
//
// A JIT with its own IRCompileLayer takes its compiler from the adapter too:
// IRCompileLayer layer(session, object_layer, objects.make_compiler(jtmb)). Either way
// one JITTargetMachineBuilder makes the code and is described in the key. A JIT that
// keeps its own compiler (a ConcurrentIRCompiler over &objects) must give the
// adapter the same builder (set_target, or the constructor's object_cache(cache, jtmb,
// ...)); what a module tells of its target (triple, data layout, target-cpu and
// target-features attributes) is checked against it, and a disagreement is a bypass,
// said once. Without a target nothing is cached: each compile is a counted bypass,
// said once (PREFIX_LOG).
//
// An object's key covers the module's bitcode as it reaches the code generator, the
// target machine, the LLVM version, the LLVM options that were set (set_llvm_arguments)
// and the toolchain, with the build-id of LLVM's code generator in place of the host's:
// a rebuilt host keeps its entries, a replaced libLLVM misses them. A loaded entry that
// does not parse as an object file of the target's architecture is not used. Nothing
// here throws into LLVM. docs/design.md ("LLVM: object code") has the reasons.
//
// RTTI: object_cache<Cache> needs RTTI (the cache does: Boost.Serialization and the
// registry use typeid). If your LLVM was built without RTTI, compile the code that
// derives from llvm::ObjectCache with -fno-rtti and use basic_object_cache, which
// takes an object_store made in a translation unit compiled with RTTI
// (compile_cache/llvm/object_store.hpp shows how).
#pragma once

// ---- inlined compile_cache/detail/config.hpp
// compile_cache: what the library needs from the compiler, said first. Every public
// header includes this before anything else, so that a translation unit compiled with
// the wrong flags (llvm-config --cxxflags gives -std=c++14 -fno-exceptions) stops at
// one sentence naming the flag, not at a page of errors from inside the library.
// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_CONFIG_HPP
#define COMPILE_CACHE_DETAIL_CONFIG_HPP

#if defined(_MSVC_LANG)
#define COMPILE_CACHE_CPLUSPLUS _MSVC_LANG
#else
#define COMPILE_CACHE_CPLUSPLUS __cplusplus
#endif

#if COMPILE_CACHE_CPLUSPLUS < 201703L
#error "compile_cache: needs C++17 or later (-std=c++17); with llvm-config --cxxflags, replace its -std=c++14"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "compile_cache: needs exceptions (drop -fno-exceptions; llvm-config --cxxflags adds it, LLVM's headers do not need it)"
#define COMPILE_CACHE_WRONG_FLAGS 1
#endif

// #error lets g++ and clang go on, into hundreds of errors from the library's code: a
// missing include is fatal to both, so compilation stops here, at the sentences.
#if defined(COMPILE_CACHE_WRONG_FLAGS)
#include <compile_cache: compilation stopped; fix the flags named above>
#endif

// Separate compilation (docs/design.md, "What including the library costs"): a host that
// defines COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit and includes
// <compile_cache/src.hpp> in exactly one gets the library's non-template functions
// compiled once, there, instead of parsed and instantiated in each translation unit.
// COMPILE_CACHE_DECL marks their declarations (inline in the default, header-only mode);
// their definitions are in impl/*.ipp files, compiled where COMPILE_CACHE_INCLUDE_IMPL is 1.
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#define COMPILE_CACHE_DECL
#if defined(COMPILE_CACHE_SOURCE)
#define COMPILE_CACHE_INCLUDE_IMPL 1
#else
#define COMPILE_CACHE_INCLUDE_IMPL 0
#endif
#else
#define COMPILE_CACHE_DECL inline
#define COMPILE_CACHE_INCLUDE_IMPL 1
#endif

// A build that mixes the modes, or has src.hpp in no translation unit or in two, is ill-formed
// (functions defined inline in some translation units and out of line in another, or not at
// all, or twice); it fails at link time with a symbol whose name says what to do:
// - every translation unit in separate-compilation mode references
//   compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit, which
//   src.hpp defines: "undefined reference" without src.hpp, "multiple definition" with two;
// - every header-only translation unit defines
//   compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none
//   in one COMDAT group (merged among them), and src.hpp defines it in another: "multiple
//   definition" when both kinds are linked together.
// (ELF, with GCC or Clang: the mark is a section-group directive of the assembler.)
#if defined(__GNUC__)
#if defined(COMPILE_CACHE_SEPARATE_COMPILATION)
extern "C" char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
namespace compile_cache::detail {
namespace {
[[maybe_unused]] __attribute__((used)) char const* const separate_compilation_mark =
    &compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
} // namespace
} // namespace compile_cache::detail
#elif defined(__ELF__)
__asm__(".pushsection .rodata.compile_cache_header_only_mark,\"aG\",@progbits,compile_cache_header_only_mark,comdat\n"
        ".globl compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none\n"
        "compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none:\n"
        ".byte 0\n"
        ".popsection\n");
#endif
#endif

// A function each module (the main program, each shared library) has its own copy of,
// called within the module without going to another's: an ELF symbol of hidden visibility.
#if defined(__GNUC__) && defined(__ELF__)
#define COMPILE_CACHE_MODULE_LOCAL __attribute__((visibility("hidden")))
#else
#define COMPILE_CACHE_MODULE_LOCAL
#endif

// RTTI is checked by detail/config_rtti.hpp, in the headers that need it: the LLVM
// adapter's no-RTTI side (compile_cache/llvm/object_store.hpp, object_cache.hpp) does not.

#endif // COMPILE_CACHE_DETAIL_CONFIG_HPP
// ---- end of compile_cache/detail/config.hpp

// ---- inlined compile_cache/detail/build_id.hpp
// compile_cache: GNU build-ids read from the ELF notes of loaded modules: the running
// program's, so that rebuilding the host compiler re-keys everything it cached, or
// that of the module (program or shared library) containing an address, so that a
// host whose code generator is a library (LLVM's) is identified by that library.

// ---- inlined compile_cache/detail/made_once.hpp
// compile_cache: a value made at its first use and kept for the process, without the guard
// of a function-local static that a forked child may find held for ever.
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
// ---- end of compile_cache/detail/made_once.hpp

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
// ---- end of compile_cache/detail/build_id.hpp
#include <compile_cache/llvm/object_store.hpp>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/CodeGen/Passes.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/ObjectCache.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/IRCompileLayer.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#if defined(__GXX_RTTI) || defined(_CPPRTTI)
#include <compile_cache/llvm/cache_object_store.hpp>
#define COMPILE_CACHE_OBJECT_CACHE_HAS_RTTI 1
#else
#define COMPILE_CACHE_OBJECT_CACHE_HAS_RTTI 0
#endif

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <optional>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace compile_cache {

namespace llvm_detail {

/// A raw_ostream that hashes what is written to it (the bitcode is never kept).
class sha256_ostream final : public ::llvm::raw_ostream {
public:
    sha256_ostream() : ::llvm::raw_ostream(/*unbuffered=*/true) {}
    std::string digest() {
        flush();
        ::llvm::StringRef d = hash_.final();
        return std::string(d.data(), d.size());
    }

private:
    void write_impl(char const* p, std::size_t n) override {
        hash_.update(::llvm::StringRef(p, n));
        pos_ += n;
    }
    std::uint64_t current_pos() const override { return pos_; }

    ::llvm::SHA256 hash_;
    std::uint64_t pos_ = 0;
};

inline void append_field(std::string& out, char const* name, std::string_view value) {
    out += name;
    out += '=';
    out += std::to_string(value.size()); // length-prefixed: no value can pose as another field
    out += ':';
    out.append(value.data(), value.size());
    out += ';';
}

inline void append_field(std::string& out, char const* name, long long value) {
    append_field(out, name, std::to_string(value));
}

/// The binutils version an MCAsmInfo holds (LLVM 14 has no getter, only
/// binutilsIsAtLeast): the greatest (major, minor) it is at least, by bisection.
inline std::pair<long long, long long> binutils_version(::llvm::MCAsmInfo const& mai) {
    long long const lowest = std::numeric_limits<int>::min(), highest = std::numeric_limits<int>::max();
    auto greatest = [&](auto&& at_least) { // the greatest n in [lowest, highest] with at_least(n)
        long long lo = lowest, hi = highest;
        while (lo < hi) {
            long long const mid = lo + (hi - lo + 1) / 2;
            if (at_least(mid)) lo = mid;
            else hi = mid - 1;
        }
        return lo;
    };
    long long const major = greatest([&](long long m) {
        return mai.binutilsIsAtLeast(static_cast<int>(m), std::numeric_limits<int>::min());
    });
    long long const minor = greatest([&](long long m) {
        return mai.binutilsIsAtLeast(static_cast<int>(major), static_cast<int>(m));
    });
    return {major, minor};
}

/// The settings of a target machine's MCAsmInfo that change the object the code
/// generator writes, as the machine holds them (appended to `s`). LLVM makes the
/// MCAsmInfo once, with the machine (LLVMTargetMachine::initAsmInfo), from TargetOptions
/// fields then (ExceptionModel, RelaxELFRelocations, CompressDebugSections,
/// DisableIntegratedAS, BinutilsVersion, MCOptions.PreserveAsmComments, MCOptions for
/// the target's own MCAsmInfo) and from LLVM options then (-use-leb128-directives,
/// -dwarf-extended-loc, -x86-asm-syntax); the code generator reads them from here, not
/// from TargetMachine::Options, which a host may change afterwards.
inline void describe_asm_info(std::string& s, ::llvm::MCAsmInfo const& mai) {
    append_field(s, "asm-exceptions", static_cast<long long>(mai.getExceptionHandlingType()));
    append_field(s, "asm-compress-debug", static_cast<long long>(mai.compressDebugSections()));
    std::pair<long long, long long> const binutils = binutils_version(mai);
    append_field(s, "asm-binutils", std::to_string(binutils.first) + "." + std::to_string(binutils.second));
    append_field(s, "asm-code-pointer-size", static_cast<long long>(mai.getCodePointerSize()));
    append_field(s, "asm-callee-save-slot", static_cast<long long>(mai.getCalleeSaveStackSlotSize()));
    append_field(s, "asm-dialect", static_cast<long long>(mai.getAssemblerDialect()));
    append_field(s, "asm-min-inst-align", static_cast<long long>(mai.getMinInstAlignment()));
    append_field(s, "asm-text-align-fill", static_cast<long long>(mai.getTextAlignFillValue()));
    append_field(s, "asm-lcomm-align", static_cast<long long>(mai.getLCOMMDirectiveAlignmentType()));
    append_field(s, "asm-win-eh", static_cast<long long>(mai.getWinEHEncodingType()));
    append_field(s, "asm-private-global-prefix", mai.getPrivateGlobalPrefix().str());
    append_field(s, "asm-private-label-prefix", mai.getPrivateLabelPrefix().str());
    append_field(s, "asm-linker-private-prefix", mai.getLinkerPrivateGlobalPrefix().str());
    // One digit per flag.
    bool const flags[] = {mai.canRelaxRelocations(), mai.useIntegratedAssembler(),
                          mai.parseInlineAsmUsingAsmParser(), mai.preserveAsmComments(),
                          mai.hasLEB128Directives(), mai.supportsExtendedDwarfLocDirective(),
                          mai.isLittleEndian(), mai.isStackGrowthDirectionUp(),
                          mai.hasSubsectionsViaSymbols(), mai.supportsSignedData(),
                          mai.doesSupportDebugInformation(), mai.doesUseCFIForDebug(),
                          mai.usesCFIForEH(), mai.usesWindowsCFI(),
                          mai.doesDwarfUseRelocationsAcrossSections(), mai.doDwarfFDESymbolsUseAbsDiff(),
                          mai.useDwarfRegNumForCFI(), mai.usesDwarfFileAndLocDirectives(),
                          mai.needsDwarfSectionSizeInHeader(), mai.hasAggressiveSymbolFolding(),
                          mai.doesSetDirectiveSuppressReloc(), mai.hasFunctionAlignment(),
                          mai.hasDotTypeDotSizeDirective(), mai.hasIdentDirective(),
                          mai.hasNoDeadStrip(), mai.hasAltEntry(),
                          mai.hasWeakDefDirective(), mai.hasWeakDefCanBeHiddenDirective(),
                          mai.avoidWeakIfComdat(), mai.hasVisibilityOnlyWithLinkage(),
                          mai.hasCOFFAssociativeComdats(), mai.hasCOFFComdatConstants(),
                          mai.needsLocalForSize(), mai.useAssignmentForEHBegin(),
                          mai.doesSupportDataRegionDirectives(), mai.needsDwarfSectionOffsetDirective(),
                          mai.usesELFSectionDirectiveForBSS(), mai.needsFunctionDescriptors()};
    std::string bits;
    for (bool f : flags) bits += f ? '1' : '0';
    append_field(s, "asm-flags", bits);
}

} // namespace llvm_detail

/// SHA-256 of the module's bitcode (without use-list order), 32 bytes.
inline std::string bitcode_digest(::llvm::Module const& m) {
    llvm_detail::sha256_ostream os;
    ::llvm::WriteBitcodeToFile(m, os);
    return os.digest();
}

/// Everything about a target machine that changes the code it generates: triple, CPU,
/// features, codegen opt level, the effective relocation and code models, and every
/// field of LLVM 14's TargetOptions and MCTargetOptions (read field by field from
/// TargetOptions.h and MCTargetOptions.h; the ones that only name an output file are
/// keyed too: keying more only costs a miss). A memory buffer (the basic-block
/// sections list) is keyed by its content. And the machine's MCAsmInfo as it was made
/// with the machine (llvm_detail::describe_asm_info): an option LLVM copied into it
/// then and the host changed in TargetMachine::Options afterwards is keyed as the code
/// generator uses it. Deterministic: the same machine gives the same text in every
/// process. A field added by a later LLVM is not here: the LLVM version is a key field
/// of its own, and this header is written against LLVM 14.
inline std::string describe_target(::llvm::TargetMachine const& tm) {
    using llvm_detail::append_field;
    std::string s;
    append_field(s, "triple", tm.getTargetTriple().str());
    append_field(s, "cpu", std::string_view(tm.getTargetCPU().data(), tm.getTargetCPU().size()));
    append_field(s, "features",
                 std::string_view(tm.getTargetFeatureString().data(), tm.getTargetFeatureString().size()));
    append_field(s, "opt", static_cast<long long>(tm.getOptLevel()));
    append_field(s, "reloc", static_cast<long long>(tm.getRelocationModel()));
    append_field(s, "code", static_cast<long long>(tm.getCodeModel()));
    // A plain getter LLVM 14 did not mark const.
    append_field(s, "o0-fast-isel", const_cast<::llvm::TargetMachine&>(tm).getO0WantsFastISel() ? 1 : 0);
    append_field(s, "structured-cfg", tm.requiresStructuredCFG() ? 1 : 0);
    if (auto const& pgo = tm.getPGOOption()) {
        append_field(s, "pgo-profile", pgo->ProfileFile);
        append_field(s, "pgo-cs-profile-gen", pgo->CSProfileGenFile);
        append_field(s, "pgo-remapping", pgo->ProfileRemappingFile);
        append_field(s, "pgo-action", static_cast<long long>(pgo->Action));
        append_field(s, "pgo-cs-action", static_cast<long long>(pgo->CSAction));
        append_field(s, "pgo-debug-info", pgo->DebugInfoForProfiling ? 1 : 0);
        append_field(s, "pgo-pseudo-probe", pgo->PseudoProbeForProfiling ? 1 : 0);
    }
    ::llvm::TargetOptions const& o = tm.Options;
    // TargetOptions, in declaration order. One digit per one-bit flag.
    append_field(s, "binutils", std::to_string(o.BinutilsVersion.first) + "." + std::to_string(o.BinutilsVersion.second));
    unsigned const flags[] = {
        o.UnsafeFPMath, o.NoInfsFPMath, o.NoNaNsFPMath, o.NoTrappingFPMath, o.NoSignedZerosFPMath,
        o.ApproxFuncFPMath, o.EnableAIXExtendedAltivecABI, o.HonorSignDependentRoundingFPMathOption,
        o.NoZerosInBSS, o.GuaranteedTailCallOpt, o.StackSymbolOrdering, o.EnableFastISel, o.EnableGlobalISel,
        o.UseInitArray, o.DisableIntegratedAS, o.RelaxELFRelocations, o.FunctionSections, o.DataSections,
        o.IgnoreXCOFFVisibility, o.XCOFFTracebackTable, o.UniqueSectionNames, o.UniqueBasicBlockSectionNames,
        o.TrapUnreachable, o.NoTrapAfterNoreturn, o.EmulatedTLS, o.ExplicitEmulatedTLS, o.EnableIPRA,
        o.EmitStackSizeSection, o.EnableMachineOutliner, o.EnableMachineFunctionSplitter,
        o.SupportsDefaultOutlining, o.EmitAddrsig, o.EmitCallSiteInfo, o.SupportsDebugEntryValues,
        o.EnableDebugEntryValues, o.ValueTrackingVariableLocations, o.ForceDwarfFrameSection,
        o.XRayOmitFunctionIndex, o.DebugStrictDwarf, o.Hotpatch};
    std::string bits;
    for (unsigned f : flags) bits += f ? '1' : '0';
    append_field(s, "flags", bits);
    append_field(s, "global-isel-abort", static_cast<long long>(o.GlobalISelAbort));
    append_field(s, "swift-async-fp", static_cast<long long>(o.SwiftAsyncFramePointer));
    append_field(s, "compress-debug", static_cast<long long>(o.CompressDebugSections));
    append_field(s, "tls-size", static_cast<long long>(o.TLSSize));
    append_field(s, "bb-sections", static_cast<long long>(o.BBSections));
    if (o.BBSectionsFuncListBuf) {
        ::llvm::SHA256 list;
        list.update(o.BBSectionsFuncListBuf->getBuffer());
        ::llvm::StringRef const d = list.final();
        append_field(s, "bb-sections-list", std::string_view(d.data(), d.size()));
    } else {
        append_field(s, "bb-sections-list", std::string_view());
    }
    append_field(s, "stack-usage-output", o.StackUsageOutput);
    append_field(s, "loop-align", static_cast<long long>(o.LoopAlignment));
    append_field(s, "float-abi", static_cast<long long>(o.FloatABIType));
    append_field(s, "fp-fusion", static_cast<long long>(o.AllowFPOpFusion));
    append_field(s, "thread-model", static_cast<long long>(o.ThreadModel));
    append_field(s, "eabi", static_cast<long long>(o.EABIVersion));
    append_field(s, "debugger", static_cast<long long>(o.DebuggerTuning));
    append_field(s, "denormal", static_cast<long long>(o.getRawFPDenormalMode().Output) * 16 +
                                    static_cast<long long>(o.getRawFPDenormalMode().Input));
    append_field(s, "denormal-f32", static_cast<long long>(o.getRawFP32DenormalMode().Output) * 16 +
                                        static_cast<long long>(o.getRawFP32DenormalMode().Input));
    append_field(s, "exceptions", static_cast<long long>(o.ExceptionModel));
    append_field(s, "object-filename-for-debug", o.ObjectFilenameForDebug);
    // MCTargetOptions, in declaration order; the command line (Argv0, CommandLineArgs)
    // goes into CodeView's build information, and is keyed by its content.
    ::llvm::MCTargetOptions const& mc = o.MCOptions;
    bool const mc_flags[] = {mc.MCRelaxAll,        mc.MCNoExecStack,      mc.MCFatalWarnings,
                             mc.MCNoWarn,          mc.MCNoDeprecatedWarn, mc.MCNoTypeCheck,
                             mc.MCSaveTempLabels,  mc.MCUseDwarfDirectory, mc.MCIncrementalLinkerCompatible,
                             mc.ShowMCEncoding,    mc.ShowMCInst,         mc.AsmVerbose,
                             mc.PreserveAsmComments, mc.Dwarf64};
    std::string mc_bits;
    for (bool f : mc_flags) mc_bits += f ? '1' : '0';
    append_field(s, "mc-flags", mc_bits);
    append_field(s, "mc-dwarf-version", static_cast<long long>(mc.DwarfVersion));
    append_field(s, "abi", mc.ABIName);
    append_field(s, "mc-assembly-language", mc.AssemblyLanguage);
    append_field(s, "mc-split-dwarf-file", mc.SplitDwarfFile);
    append_field(s, "mc-argv0", mc.Argv0 ? std::string_view(mc.Argv0) : std::string_view());
    std::string list;
    for (std::string const& a : mc.CommandLineArgs) append_field(list, "arg", a);
    append_field(s, "mc-command-line", list);
    list.clear();
    for (std::string const& p : mc.IASSearchPaths) append_field(list, "path", p);
    append_field(s, "mc-ias-search-paths", list);
    // What the machine's MCAsmInfo holds, which the code generator reads (llvm_detail::
    // describe_asm_info): TargetOptions fields copied into it when the machine was made,
    // and LLVM options read then, are keyed as they took effect, not as they are now.
    if (::llvm::MCAsmInfo const* mai = tm.getMCAsmInfo()) llvm_detail::describe_asm_info(s, *mai);
    else append_field(s, "asm-info", "none");
    return s;
}

/// describe_target for the machine a JITTargetMachineBuilder makes (it makes one, to
/// read the effective settings: JITTargetMachineBuilder does not tell its opt level).
inline ::llvm::Expected<std::string> describe_target(::llvm::orc::JITTargetMachineBuilder jtmb) {
    auto tm = jtmb.createTargetMachine();
    if (!tm) return tm.takeError();
    return describe_target(**tm);
}

/// The identity of the code generator `tm` runs: the build-ids of the loaded modules
/// that hold its target (the registered llvm::Target) and LLVM's target-independent
/// code generator. libLLVM-14.so's when LLVM is a shared library, the program's when
/// it is linked in statically.
inline std::string code_generator_identity(::llvm::TargetMachine const& tm) {
    return detail::module_identity({static_cast<void const*>(&tm.getTarget()),
                                    detail::code_address(&::llvm::createAtomicExpandPass)});
}

namespace llvm_detail {

/// `-name`, `--name`, `-name=value`: the option name an argument gives, or empty.
inline std::string_view option_name(std::string_view arg) {
    if (arg.size() < 2 || arg[0] != '-') return {};
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    return arg.substr(0, arg.find('='));
}

/// The arguments of this process (Linux: /proc/self/cmdline), without the program name.
inline std::vector<std::string> process_arguments() {
    std::vector<std::string> args;
    std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
    if (!f) return args;
    std::string all;
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) all.append(buf, n);
    std::fclose(f);
    std::size_t at = all.find('\0'); // after the program name
    while (at != std::string::npos && at + 1 < all.size()) {
        std::size_t end = all.find('\0', at + 1);
        args.emplace_back(all.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1));
        at = end;
    }
    return args;
}

} // namespace llvm_detail

namespace llvm_detail {

/// The texts LLVM prints for an option's value (print_option_values), and what the walk
/// read: a string option's value exactly (`string_value`, `string_at_default`: false
/// without a default), since its padded print is not its value (option_value_text::padded).
struct printed_option {
    std::string differs;
    std::string value;
    bool read = false;        ///< a class the walk reads (visit_read_option): the texts are its value's
    bool is_string = false;   ///< read, and a string option
    std::string string_value; ///< is_string: the value
    bool string_at_default = false;
    bool enum_read = false;       ///< an enum's option whose value has a name (read_enum_option)
    std::string enum_name;        ///< enum_read: the value's name
    bool enum_at_default = false; ///< enum_read, it has a default, and the value is it
    bool kinds_read = false;      ///< -x86-align-branch, read (read_align_branch_option)
    std::string kinds;            ///< kinds_read: the kinds it holds (`jcc+ret`), empty for none
};

/// The mangled name of the class of `o` (as std::type_info::name gives it), read from the
/// type_info pointer that precedes the address point of its virtual table in the Itanium
/// C++ ABI; null when that pointer is null (a class compiled without RTTI: Polly's options
/// in Debian's libLLVM-14.so, every option of an LLVM built without RTTI) or the ABI is
/// another. Read directly, not through typeid or dynamic_cast: those dereference a null
/// type_info pointer (a crash on Polly's options), and a translation unit compiled with
/// -fno-rtti (basic_object_cache's, where LLVM has no RTTI) cannot use them.
/// Tests set it to make option_class_name answer null, as it does for every option of an
/// LLVM built without RTTI.
inline thread_local bool option_class_names_hidden_for_testing = false;
inline char const* option_class_name(::llvm::cl::Option const& o) noexcept {
    if (option_class_names_hidden_for_testing) return nullptr;
#if defined(__GXX_ABI_VERSION)
    void const* const* const vtable = *reinterpret_cast<void const* const* const*>(&o);
    if (!vtable) return nullptr;
    auto const* const type = static_cast<std::type_info const*>(vtable[-1]);
    return type ? type->name() : nullptr;
#else
    (void)o;
    return nullptr;
#endif
}

/// A value type whose options print_option_values reads: the Itanium ABI's code for it in
/// a mangled name, and how that name refers to it again (a substitution, for a class).
template <class T>
struct read_option_type;
#define COMPILE_CACHE_LLVM_READ_OPTION_TYPE(T, code, again)                                                        \
    template <>                                                                                                    \
    struct read_option_type<T> {                                                                                   \
        static constexpr char const* first = code;                                                                 \
        static constexpr char const* repeated = again;                                                             \
    };
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(bool, "b", "b")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(::llvm::cl::boolOrDefault, "NS0_13boolOrDefaultE", "S2_")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(int, "i", "i")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(long, "l", "l")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(long long, "x", "x")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(unsigned, "j", "j")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(unsigned long, "m", "m")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(unsigned long long, "y", "y")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(double, "d", "d")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(float, "f", "f")
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(char, "c", "c")
#if defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
// libstdc++'s std::string; another library's std::string options are not read.
COMPILE_CACHE_LLVM_READ_OPTION_TYPE(std::string, "NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE", "S7_")
#define COMPILE_CACHE_LLVM_READS_STRING_OPTIONS 1
#else
#define COMPILE_CACHE_LLVM_READS_STRING_OPTIONS 0
#endif
#undef COMPILE_CACHE_LLVM_READ_OPTION_TYPE

/// The mangled name of cl::opt<T, External, cl::parser<T>> (tests compare it with typeid's).
template <class T, bool External>
std::string read_option_class_name() {
    return std::string("N4llvm2cl3optI") + read_option_type<T>::first + (External ? "Lb1E" : "Lb0E") +
           "NS0_6parserI" + read_option_type<T>::repeated + "EEEE";
}

// The option reads' casts name a cl::opt class other than the object's own where the
// layout is the same (another parser; a probe enum of the value's size): UBSan's vptr
// check, which a host may build with, would stop at them, so it is off for those functions.
#if defined(__GNUC__) || defined(__clang__)
#define COMPILE_CACHE_LLVM_NO_VPTR_CHECK __attribute__((no_sanitize("vptr")))
#else
#define COMPILE_CACHE_LLVM_NO_VPTR_CHECK
#endif

/// The storage of `o`, a cl::opt<T, External, P> for any parser class P: its base
/// cl::opt_storage, which holds the value and the default. The storage base follows the
/// cl::Option base whatever P is (bases are laid out before the members, P's among them;
/// Itanium C++ ABI), so that it is reached through cl::opt<T, External, cl::parser<T>>.
template <class T, bool External>
COMPILE_CACHE_LLVM_NO_VPTR_CHECK ::llvm::cl::opt_storage<T, External, std::is_class<T>::value> const&
read_option_storage(::llvm::cl::Option const& o) {
    using storage = ::llvm::cl::opt_storage<T, External, std::is_class<T>::value>;
    return static_cast<storage const&>(static_cast<::llvm::cl::opt<T, External, ::llvm::cl::parser<T>> const&>(o));
}

template <class T>
struct read_type_tag {
    using type = T;
};

/// Calls `f(read_type_tag<T>{}, std::bool_constant<External>{})` when `class_name` (the
/// name of `o`'s class, option_class_name) is that of a cl::opt<T, External, P>, T one of
/// the read_option_types and P any parser (LLVM's own cl::parser<T>, or a class of the
/// host's); false, nothing called, otherwise. A name that starts as cl::opt<T, External,
/// ...>'s is that of such a class: cl::opt has no nested classes.
template <class F, class T, class... More>
bool visit_read_option(char const* class_name, F&& f) {
    static std::string const* const prefixes =
        new std::string[2]{std::string("N4llvm2cl3optI") + read_option_type<T>::first + "Lb0E",
                           std::string("N4llvm2cl3optI") + read_option_type<T>::first + "Lb1E"};
    for (int external = 0; external < 2; ++external) {
        std::string const& prefix = prefixes[external];
        if (std::strncmp(class_name, prefix.c_str(), prefix.size()) != 0) continue;
        if (external)
            f(read_type_tag<T>{}, std::true_type{});
        else
            f(read_type_tag<T>{}, std::false_type{});
        return true;
    }
    if constexpr (sizeof...(More) > 0)
        return visit_read_option<F, More...>(class_name, std::forward<F>(f));
    else
        return false;
}
#if defined(__linux__) && defined(__GNUC__)
// The virtual tables, as weak references: null when the program has none (another
// ABI's mangling, an LLVM without them); a match is exact, a miss only costs a key.
extern char const opt_bool_vtable[] __asm__("_ZTVN4llvm2cl3optIbLb0ENS0_6parserIbEEEE") __attribute__((weak));
extern char const opt_char_vtable[] __asm__("_ZTVN4llvm2cl3optIcLb0ENS0_6parserIcEEEE") __attribute__((weak));
extern char const opt_int_vtable[] __asm__("_ZTVN4llvm2cl3optIiLb0ENS0_6parserIiEEEE") __attribute__((weak));
extern char const opt_unsigned_vtable[] __asm__("_ZTVN4llvm2cl3optIjLb0ENS0_6parserIjEEEE") __attribute__((weak));
#if defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
#define COMPILE_CACHE_LLVM_OPT_STRING_VTABLES 1
extern char const opt_string_vtable[] __asm__(
    "_ZTVN4llvm2cl3optINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEELb0ENS0_6parserIS7_EEEE")
    __attribute__((weak));
extern char const opt_string_location_vtable[] __asm__(
    "_ZTVN4llvm2cl3optINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEELb1ENS0_6parserIS7_EEEE")
    __attribute__((weak));
#endif

/// Whether `o`'s virtual table pointer is `vtable`'s address point (after the offset to
/// the top and the type information). cl::Option is the first, non-virtual base of a
/// cl::opt, so that the pointer is the object's first word.
inline bool has_vtable(::llvm::cl::Option const* o, char const* vtable) {
    if (vtable == nullptr) return false;
    void const* vptr = nullptr;
    std::memcpy(&vptr, static_cast<void const*>(o), sizeof vptr);
    return vptr == static_cast<void const*>(vtable + 2 * sizeof(void*));
}
#endif

/// The same for the option `o`, by the name of its class (option_class_name); without one
/// (a class compiled without RTTI: every option of an LLVM built without it), by its
/// virtual table when it is one of the cl::opt classes LLVM instantiates in its own
/// library (bool, char, int, unsigned and std::string, with cl::parser<T>): those options
/// are read whether LLVM has RTTI or not.
template <class F>
bool visit_read_option(::llvm::cl::Option const& o, F&& f) {
    char const* const class_name = option_class_name(o);
    if (!class_name) {
#if defined(__linux__) && defined(__GNUC__)
        if (has_vtable(&o, opt_bool_vtable)) return f(read_type_tag<bool>{}, std::false_type{}), true;
        if (has_vtable(&o, opt_char_vtable)) return f(read_type_tag<char>{}, std::false_type{}), true;
        if (has_vtable(&o, opt_int_vtable)) return f(read_type_tag<int>{}, std::false_type{}), true;
        if (has_vtable(&o, opt_unsigned_vtable)) return f(read_type_tag<unsigned>{}, std::false_type{}), true;
#if COMPILE_CACHE_LLVM_OPT_STRING_VTABLES
        if (has_vtable(&o, opt_string_vtable)) return f(read_type_tag<std::string>{}, std::false_type{}), true;
        if (has_vtable(&o, opt_string_location_vtable))
            return f(read_type_tag<std::string>{}, std::true_type{}), true;
#endif
#endif
        return false;
    }
    return visit_read_option<F, bool, ::llvm::cl::boolOrDefault, int, long, long long, unsigned, unsigned long,
                             unsigned long long, double, float, char
#if COMPILE_CACHE_LLVM_READS_STRING_OPTIONS
                             ,
                             std::string
#endif
                             >(class_name, std::forward<F>(f));
}

/// Enums of each size an enum option's value may have: the layouts of cl::opt<P, External,
/// cl::parser<P>> for these locate the parts of an enum's option (read_enum_option).
enum class enum_probe_1 : std::uint8_t {};
enum class enum_probe_2 : std::uint16_t {};
enum class enum_probe_4 : std::uint32_t {};
enum class enum_probe_8 : std::uint64_t {};

/// Where the parts of an option are if it is a cl::opt<E, External, cl::parser<E>> with
/// sizeof(E) == `size`: offsets from the option's address, as the compiler lays out that
/// class for an enum of that size (enum_layout).
struct enum_option_layout {
    std::size_t size = 0;
    std::ptrdiff_t parser = 0;        ///< the cl::parser<E>, at its generic_parser_base
    std::ptrdiff_t value = 0;         ///< the value; External: the pointer to it (cl::location)
    std::ptrdiff_t default_value = 0; ///< the OptionValue<E> default, at its GenericOptionValue
    std::ptrdiff_t value_in_option_value = 0; ///< where an OptionValue<E> holds the value (its Valid flag follows)
};

/// enum_option_layout for an enum of P's size, computed from `o`'s address (address
/// arithmetic: nothing is read).
template <class P, bool External>
COMPILE_CACHE_LLVM_NO_VPTR_CHECK enum_option_layout enum_layout(::llvm::cl::Option const& o) {
    using opt = ::llvm::cl::opt<P, External, ::llvm::cl::parser<P>>;
    using generic_value = ::llvm::cl::GenericOptionValue;
    auto at = [](void const* p) { return reinterpret_cast<char const*>(p); };
    auto& as_probe = const_cast<opt&>(static_cast<opt const&>(o));
    auto const& storage = read_option_storage<P, External>(o);
    enum_option_layout l;
    l.size = sizeof(P);
    l.parser = at(static_cast<::llvm::cl::generic_parser_base const*>(&as_probe.getParser())) - at(&o);
    if constexpr (External)
        l.value = at(&storage) - at(&o); // opt_storage's first member, Location
    else
        l.value = at(&storage.Value) - at(&o);
    l.default_value = at(static_cast<generic_value const*>(&storage.getDefault())) - at(&o);
    ::llvm::cl::OptionValue<P> const one(P{});
    l.value_in_option_value = at(&one.getValue()) - at(static_cast<generic_value const*>(&one));
    return l;
}

/// An OptionValue<E> made of bytes, as OptionValueCopy<E>::compare reads its argument (the
/// value, then its Valid flag): zeros but for the value's `size` bytes and the flag, both
/// where `l` says; never used through its (zero) virtual table pointer.
struct probe_option_value {
    alignas(16) unsigned char bytes[64] = {};
    probe_option_value(enum_option_layout const& l, unsigned char const* value) {
        std::memcpy(bytes + l.value_in_option_value, value, l.size);
        bytes[l.value_in_option_value + static_cast<std::ptrdiff_t>(l.size)] = 1;
    }
    ::llvm::cl::GenericOptionValue const& get() const {
        return *reinterpret_cast<::llvm::cl::GenericOptionValue const*>(bytes);
    }
};

/// Reads `o` when it is a cl::opt<E, External, cl::parser<E>> of an enum E (LLVM's generic
/// parser, with its table of names and values), with or without a cl::location, and fills
/// `printed` as print_read_option does: `value` and `differs` are the lines LLVM's
/// printOptionValue prints (generic_parser_base::printGenericOptionDiff: the name of the
/// first table entry equal to the value, padded to 8 columns, and the name of the first
/// equal to the default; `*unknown option value*` when none is), `enum_read` and
/// `enum_name` the value's name when it has one. Values are compared by LLVM's own
/// GenericOptionValue::compare for E, never read as numbers or pointers: the name is the
/// key, the same in every process. Needs `o`'s class name (RTTI: option_class_name) and the
/// Itanium C++ ABI. Every step is checked against the object (the parser's reference to its
/// option, the parser's class name, E's size by LLVM's compare); false, `printed` untouched,
/// when one does not check out, or the option has no table or a cl::location not set.
/// Reads nothing outside `o`, its parser's table and the cl::location's E.
inline bool read_enum_option(::llvm::cl::Option const& o, std::size_t width, printed_option& printed) {
#if defined(__GXX_ABI_VERSION)
    using ::llvm::cl::GenericOptionValue;
    char const* const class_name = option_class_name(o);
    if (!class_name) return false;
    // cl::opt<X, External, cl::parser<X>>: N4llvm2cl3optI <X> Lb<0|1>E NS0_6parserI S<seq>_ EEEE
    std::string_view const name(class_name);
    std::string_view const prefix = "N4llvm2cl3optI", end = "EEEE";
    if (name.size() <= prefix.size() + end.size() || name.substr(0, prefix.size()) != prefix ||
        name.substr(name.size() - end.size()) != end)
        return false;
    std::string_view const inner = name.substr(prefix.size(), name.size() - prefix.size() - end.size());
    std::string_view const parser_arg = "ENS0_6parserIS";
    std::size_t const arg = inner.rfind(parser_arg);
    if (arg == std::string_view::npos || arg < 4) return false;
    std::string_view const seq = inner.substr(arg + parser_arg.size());
    if (seq.empty() || seq.back() != '_') return false;
    for (std::size_t i = 0; i + 1 < seq.size(); ++i)
        if (!((seq[i] >= '0' && seq[i] <= '9') || (seq[i] >= 'A' && seq[i] <= 'Z'))) return false;
    std::string_view const literal = inner.substr(arg - 3, 3); // Lb0 or Lb1
    if (literal != "Lb0" && literal != "Lb1") return false;
    bool const external = literal == "Lb1";
    std::string_view const x = inner.substr(0, arg - 3);
    // A named type (an enum or a class; a class's OptionValue compares equal to nothing, so
    // that no size checks out for it): not a builtin, pointer, vector or function type.
    if (x.empty() || !(x[0] == 'N' || x[0] == 'Z' || x[0] == 'S' || (x[0] >= '0' && x[0] <= '9'))) return false;

    enum_option_layout const layouts[] = {
        external ? enum_layout<enum_probe_1, true>(o) : enum_layout<enum_probe_1, false>(o),
        external ? enum_layout<enum_probe_2, true>(o) : enum_layout<enum_probe_2, false>(o),
        external ? enum_layout<enum_probe_4, true>(o) : enum_layout<enum_probe_4, false>(o),
        external ? enum_layout<enum_probe_8, true>(o) : enum_layout<enum_probe_8, false>(o)};
    char const* const base = reinterpret_cast<char const*>(&o);
    // Nothing lies in the cl::Option base's tail padding (a 1-byte value follows it), so
    // that an E of each probe's size, whatever its alignment (at most its size), is where the
    // probe's is.
    std::ptrdiff_t const after_option = static_cast<std::ptrdiff_t>(sizeof(::llvm::cl::Option));
    if (enum_layout<enum_probe_1, false>(o).value != after_option) return false;
    // Every cl::opt<X, b, P>, whatever X and P, holds after its cl::Option an opt_storage of
    // at least an OptionValue's virtual table pointer, a P of at least a byte, and its
    // std::function Callback: at least this many bytes. What is read before the class is
    // confirmed (a parser's virtual table pointer and its reference to the option) lies
    // within them.
    using callback = std::function<void(int const&)>;
    std::size_t const before_callback = sizeof(::llvm::cl::Option) + sizeof(void*) + 1;
    std::size_t const least_size =
        (before_callback + alignof(callback) - 1) / alignof(callback) * alignof(callback) + sizeof(callback);
    // The parser: where a probe's parser refers back to `o` (generic_parser_base: a virtual
    // table pointer, then Option& Owner).
    static_assert(sizeof(::llvm::cl::generic_parser_base) == 2 * sizeof(void*), "generic_parser_base: vptr, Owner");
    std::ptrdiff_t parser = -1;
    for (enum_option_layout const& l : layouts) {
        if (l.parser < 0 || static_cast<std::size_t>(l.parser) + 2 * sizeof(void*) > least_size) return false;
        void const* owner = nullptr;
        std::memcpy(&owner, base + l.parser + sizeof(void*), sizeof owner);
        if (owner != static_cast<void const*>(&o)) continue;
        if (parser >= 0 && parser != l.parser) return false; // two places cannot both be it
        parser = l.parser;
    }
    if (parser < 0) return false;
    // The parser's class: cl::parser<X>, X as the option's class names it.
    void const* const* parser_vtable = nullptr;
    std::memcpy(&parser_vtable, base + parser, sizeof parser_vtable);
    if (!parser_vtable) return false;
    auto const* const parser_type = static_cast<std::type_info const*>(parser_vtable[-1]);
    if (!parser_type) return false;
    std::string_view const parser_name = parser_type->name();
    if (parser_name != std::string("N4llvm2cl6parserI") + std::string(x) + "EE") return false;
    // Now known: `o` is a cl::opt<X, external, cl::parser<X>>.
    auto const& table = *reinterpret_cast<::llvm::cl::generic_parser_base const*>(base + parser);
    unsigned const entries = table.getNumOptions();
    if (entries == 0) return false;
    // X's size: the probe whose value LLVM's compare for X reads. An OptionValue<X> lies
    // between the value (or cl::location) and the parser, so that compare reads no more of
    // a probe_option_value than that.
    if (parser - after_option > static_cast<std::ptrdiff_t>(sizeof(probe_option_value::bytes))) return false;
    GenericOptionValue const& first = table.getOptionValue(0);
    enum_option_layout const* layout = nullptr;
    for (enum_option_layout const& l : layouts) {
        if (l.parser != parser) continue;
        // Read as this size, one of two values is not the entry's; read as another size,
        // the flag LLVM reads is a zero byte: compare says "equal" to both.
        unsigned char const zero[8] = {}, one[8] = {1};
        if (!first.compare(probe_option_value(l, zero).get()) && !first.compare(probe_option_value(l, one).get()))
            continue;
        if (layout) return false;
        layout = &l;
    }
    if (!layout) return false;
    unsigned char value[8] = {};
    if (external) {
        unsigned char const* location = nullptr;
        std::memcpy(&location, base + layout->value, sizeof location);
        if (!location) return false; // no cl::location yet
        std::memcpy(value, location, layout->size);
    } else {
        std::memcpy(value, base + layout->value, layout->size);
    }
    probe_option_value const current(*layout, value);
    auto const& default_value = *reinterpret_cast<GenericOptionValue const*>(base + layout->default_value);
    // printGenericOptionDiff's names: the first entry equal to the value (compare: false),
    // and the first equal to the default (the first entry when there is no default).
    unsigned named = entries;
    for (unsigned i = 0; i < entries && named == entries; ++i)
        if (!table.getOptionValue(i).compare(current.get())) named = i;
    std::string line;
    {
        ::llvm::raw_string_ostream out(line);
        ::llvm::StringRef const arg_str = o.ArgStr;
        out << "    " << (arg_str.size() <= 1 ? "-" : "--") << arg_str; // "  ", then PrintArg's own padding
        out.indent(static_cast<unsigned>(width > arg_str.size() ? width - arg_str.size() : 0));
        if (named == entries) {
            out << "= *unknown option value*\n";
        } else {
            ::llvm::StringRef const value_name = table.getOption(named);
            out << "= " << value_name;
            out.indent(static_cast<unsigned>(value_name.size() < 8 ? 8 - value_name.size() : 0)) << " (default: ";
            for (unsigned j = 0; j < entries; ++j) {
                if (default_value.compare(table.getOptionValue(j))) continue;
                out << table.getOption(j);
                break;
            }
            out << ")\n";
        }
    }
    printed.value = line;
    if (default_value.compare(current.get())) printed.differs = std::move(line);
    if (named < entries) {
        printed.enum_read = true;
        printed.enum_name = table.getOption(named).str();
        unsigned char const zero[8] = {}, one[8] = {1};
        // With a default (cl::init, or an own storage's E()), it differs from one of two values.
        bool const has_default = default_value.compare(probe_option_value(*layout, zero).get()) ||
                                 default_value.compare(probe_option_value(*layout, one).get());
        printed.enum_at_default = has_default && printed.differs.empty();
    }
    return true;
#else
    (void)o;
    (void)width;
    (void)printed;
    return false;
#endif
}

/// Reads `o` when it is LLVM 14's `-x86-align-branch` (X86AsmBackend.cpp: a cl::opt<
/// X86AlignBranchKind, true, cl::parser<std::string>> whose cl::location is a class of one
/// uint8_t, the kinds of branch to align as X86::AlignBranchBoundaryKind bits), and sets
/// `printed.kinds_read` and `printed.kinds` to the kinds it holds, named as the option takes
/// them (`jcc+ret`; empty: none, its default). Its parser ORs each value parsed into the
/// kinds held, and cl::ResetAllOptionOccurrences does not clear them (the class has no
/// default to reset to): a host that parses options again in one process holds the kinds
/// of every parse, which its arguments do not tell. Needs `o`'s class name (RTTI:
/// option_class_name) and libstdc++'s std::string; false, nothing set, otherwise.
inline bool read_align_branch_option(::llvm::cl::Option const& o, printed_option& printed) {
#if LLVM_VERSION_MAJOR == 14 && COMPILE_CACHE_LLVM_READS_STRING_OPTIONS
    char const* const class_name = option_class_name(o);
    if (!class_name ||
        std::strcmp(class_name, "N4llvm2cl3optIN12_GLOBAL__N_118X86AlignBranchKindELb1ENS0_6parserINSt7__cxx1112"
                                "basic_stringIcSt11char_traitsIcESaIcEEEEEEE") != 0)
        return false;
    struct kinds { // X86AlignBranchKind's layout
        std::uint8_t bits;
    };
    using opt = ::llvm::cl::opt<kinds, true, ::llvm::cl::parser<std::string>>;
    using storage = ::llvm::cl::opt_storage<kinds, true, true>;
    // opt_storage's first member: the pointer to the cl::location.
    auto const* const location_at = reinterpret_cast<unsigned char const*>(
        &static_cast<storage const&>(static_cast<opt const&>(o)));
    unsigned char const* location = nullptr;
    std::memcpy(&location, location_at, sizeof location);
    if (!location) return false;
    unsigned const bits = *location;
    // X86::AlignBranchBoundaryKind, in LLVM 14's order; a bit it does not name, by number.
    static char const* const names[] = {"fused", "jcc", "jmp", "call", "ret", "indirect"};
    std::string text;
    for (unsigned bit = 0; bit < 8; ++bit) {
        if (!(bits & (1U << bit))) continue;
        if (!text.empty()) text += '+';
        text += bit < 6 ? std::string(names[bit]) : std::to_string(1U << bit);
    }
    printed.kinds_read = true;
    printed.kinds = std::move(text);
    return true;
#else
    (void)o;
    (void)printed;
    return false;
#endif
}

/// The line Option::printOptionValue(width, Force=true) prints for `o`, a cl::opt<T,
/// External, cl::parser<T>> (parser<T>::printOptionDiff: the name, `= `, the value padded
/// to 8 columns, ` (default: D)` or ` (default: *no default*)`, each value written by
/// raw_ostream's operator<< for T, as LLVM writes it), and whether LLVM says its value
/// differs from its default (printOptionValue with Force off prints it only then). For a
/// cl::opt<T, External, P> of another parser P, the same text: parser<T>'s, whatever P
/// prints.
template <class T, bool External>
void print_read_option(::llvm::cl::Option const& o, std::size_t width, printed_option& printed) {
    auto const& option = read_option_storage<T, External>(o);
    std::string line;
    {
        ::llvm::raw_string_ostream out(line);
        ::llvm::StringRef const name = o.ArgStr;
        out << "  " << (name.size() == 1 ? "-" : "--") << name;
        out.indent(static_cast<unsigned>(width > name.size() ? width - name.size() : 0));
        std::string value;
        {
            ::llvm::raw_string_ostream v(value);
            v << option.getValue();
        }
        out << "= " << value;
        out.indent(static_cast<unsigned>(value.size() < 8 ? 8 - value.size() : 0)) << " (default: ";
        if (option.getDefault().hasValue())
            out << option.getDefault().getValue();
        else
            out << "*no default*";
        out << ")\n";
    }
    printed.value = line;
    if (option.getDefault().compare(option.getValue())) printed.differs = std::move(line);
    printed.read = true;
    if constexpr (std::is_same<T, std::string>::value) {
        printed.is_string = true;
        printed.string_value = option.getValue();
        printed.string_at_default =
            option.getDefault().hasValue() && option.getDefault().getValue() == printed.string_value;
    }
}

/// What each of `options` prints through Option::printOptionValue, twice: `differs`,
/// without Force (LLVM prints only an option whose value differs from its cl::init
/// default), and `value`, with Force; computed, never printed. printOptionValue writes to
/// llvm::outs() only, a stream without a lock, which the host may be writing to on
/// another thread while its JIT compiles (two writers tear its buffer: a crash); so an
/// option is read here only when its class is a cl::opt of a value type LLVM prints
/// (bool, cl::boolOrDefault, int, long, long long, unsigned, unsigned long, unsigned long
/// long, double, float, char, std::string; its own storage or a cl::location; LLVM's
/// parser or another), and its texts are the bytes LLVM's parser would print; or an
/// enum's cl::opt with LLVM's cl::parser<E> (read_enum_option: the texts LLVM's generic
/// parser prints, and the value's name); or -x86-align-branch (read_align_branch_option:
/// the kinds it holds, no texts). Any other option (a pass registry's, cl::list,
/// cl::bits, cl::alias, another class, an enum's of another parser, or a class without
/// RTTI other than LLVM's own cl::opt of bool, char, int, unsigned and std::string,
/// visit_read_option) gets two empty texts, as an option that prints nothing (a
/// cl::list) does: describe_llvm_options keys it by its occurrences and arguments. Never
/// writes to a stream or a file descriptor, so any number of walks may run at once, with
/// any thread of the host.
inline void print_option_values(std::vector<::llvm::cl::Option*> const& options,
                                 std::vector<printed_option>& printed) {
    std::size_t width = 0;
    for (::llvm::cl::Option const* o : options) width = std::max(width, o->ArgStr.size());
    width += 2; // printOptionValue indents by width minus the name's length
    printed.assign(options.size(), printed_option{});
    for (std::size_t i = 0; i < options.size(); ++i)
        if (!visit_read_option(*options[i], [&](auto type, auto external) {
                using T = typename decltype(type)::type;
                print_read_option<T, decltype(external)::value>(*options[i], width, printed[i]);
            }))
            if (!read_enum_option(*options[i], width, printed[i]))
                (void)read_align_branch_option(*options[i], printed[i]);
}

/// Whether `value` is printed as LLVM prints a float or double option (`%e`: six digits
/// after the point, `1.000000e-01`, or inf or nan): text that keeps 7 significant
/// digits, so that two values can print alike.
inline bool printed_as_floating(std::string const& value) {
    std::string v = value;
    if (!v.empty() && (v[0] == '-' || v[0] == '+')) v.erase(0, 1);
    if (v == "inf" || v == "nan" || v == "INF" || v == "NAN") return true;
    auto digit = [&](std::size_t i) { return i < v.size() && v[i] >= '0' && v[i] <= '9'; };
    if (!digit(0) || v.size() < 12 || v[1] != '.') return false;
    for (std::size_t i = 2; i < 8; ++i)
        if (!digit(i)) return false;
    if (v[8] != 'e' || (v[9] != '+' && v[9] != '-')) return false;
    for (std::size_t i = 10; i < v.size(); ++i)
        if (!digit(i)) return false;
    return true;
}

/// What a printed value says: the text after the option's name (`= 8        (default:
/// 0)`), whether it names its default, and whether that default is the value. A value
/// printed as a float or double is not readable (printed_as_floating: its text is not
/// the value), so that such an option is keyed by its arguments, as an unprintable one.
struct option_value_text {
    std::string text;        ///< after `= `, without the line end; empty: nothing printed
    bool readable = false;   ///< a value and a default LLVM could print
    bool at_default = false; ///< readable, and the value's text is the default's (never without a default)
    /// Readable, but the value's text fills LLVM's 8-column value field and ends in a
    /// space: LLVM pads a shorter value with spaces, so a string value's own trailing
    /// spaces cannot be told from the padding ("prof" and "prof " print alike). Such
    /// a text is the value only for an option read that holds no string (printed_option).
    bool padded = false;
};
inline option_value_text read_option_value(std::string const& printed) {
    option_value_text v;
    std::size_t const eq = printed.find("= ");
    if (eq == std::string::npos) return v;
    v.text = printed.substr(eq + 2);
    while (!v.text.empty() && (v.text.back() == '\n' || v.text.back() == ' ')) v.text.pop_back();
    std::string const tag = " (default: ";
    std::size_t const d = v.text.rfind(tag);
    if (d == std::string::npos || v.text.back() != ')' || v.text.find('\n') != std::string::npos) return v;
    std::string value = v.text.substr(0, d);
    // printOptionDiff's field: the value, then spaces up to 8 columns (MaxOptWidth).
    bool const padded = !value.empty() && value.size() <= 8 && value.back() == ' ';
    while (!value.empty() && value.back() == ' ') value.pop_back();
    std::string const def = v.text.substr(d + tag.size(), v.text.size() - d - tag.size() - 1);
    if (!value.empty() && value[0] == '*') return v; // *cannot print option value*, *unknown option value*
    if (printed_as_floating(value)) return v;
    v.readable = true;
    v.padded = padded;
    // Without a default (no cl::init), the value is keyed whatever it is.
    v.at_default = def != "*no default*" && value == def;
    return v;
}

/// The arguments LLVM's command-line parser sees among `arguments`: a driver's
/// wrapping of an LLVM argument (`-mllvm X`, `--mllvm X`, `-Xllvm X`, and the joined
/// `-mllvm=X`, `--mllvm=X`, `-Xllvm=X`) is X; every other argument is kept as it is.
inline std::vector<std::string> unwrapped_llvm_arguments(std::vector<std::string> const& arguments) {
    static char const* const wrappers[] = {"-mllvm", "--mllvm", "-Xllvm"};
    std::vector<std::string> out;
    out.reserve(arguments.size());
    for (std::size_t a = 0; a < arguments.size(); ++a) {
        std::string const& arg = arguments[a];
        bool unwrapped = false;
        for (char const* w : wrappers) {
            std::string_view const wrapper(w);
            if (arg == wrapper && a + 1 < arguments.size()) {
                out.push_back(arguments[++a]);
                unwrapped = true;
            } else if (arg.size() > wrapper.size() && arg.compare(0, wrapper.size(), wrapper) == 0 &&
                       arg[wrapper.size()] == '=') {
                out.push_back(arg.substr(wrapper.size() + 1));
                unwrapped = true;
            }
            if (unwrapped) break;
        }
        if (!unwrapped) out.push_back(arg);
    }
    return out;
}

} // namespace llvm_detail

/// The LLVM options whose value is not their default (cl::getRegisteredOptions()), in
/// name order, each with the value LLVM prints for it (read, never printed: safe while
/// host threads write to llvm::outs(); print_option_values), however it was set: by
/// cl::ParseCommandLineOptions, by cl::opt::setValue, or through a cl::location. An
/// option counts as set when LLVM says it differs from its default, when it has no
/// default to compare with (no cl::init), or when its printed value is not its printed
/// default. An enum's option read (print_option_values) is keyed by its value's name,
/// when it is not its default; -x86-align-branch by the kinds it holds, when it holds
/// any. An option whose value is not read (a pass registry's, an enum's not read, one of
/// a class without RTTI: print_option_values) is handled as one LLVM cannot print. An
/// option whose value LLVM cannot print (a cl::list, cl::bits, a value of another type
/// than its parser's) is keyed by the arguments among `arguments` that name it when it
/// occurred on a command line or LLVM says it differs from its default (`-name=value`, or
/// `-name` and the argument after it, once a driver's wrapping is undone: `-mllvm X` is
/// X, unwrapped_llvm_arguments); `unknown` gets the names of those that no argument
/// names, and of those that need a value and have another option or nothing after
/// `-name` (their value cannot be told: a bypass). A value printed within LLVM's 8-column
/// padding and ending in a space (option_value_text::padded) is read exactly for a
/// cl::opt<std::string>, taken as printed for a cl::opt of bool, char, int or unsigned,
/// and otherwise handled as an option LLVM cannot print. Such an option changed without
/// a command line (setValue on an enum's option not read, push_back on a cl::list) is
/// not seen.
inline std::string describe_llvm_options(std::vector<std::string> const& arguments, std::string& unknown) {
    using llvm_detail::append_field;
    unknown.clear();
    std::vector<std::pair<std::string, ::llvm::cl::Option*>> named;
    for (auto& entry : ::llvm::cl::getRegisteredOptions())
        if (entry.getValue()) named.emplace_back(entry.getKey().str(), entry.getValue());
    std::sort(named.begin(), named.end(),
              [](auto const& a, auto const& b) { return a.first < b.first; });
    // An option registered under several names (an enum's values as flags) once, under its first.
    std::unordered_set<::llvm::cl::Option const*> seen;
    std::vector<std::pair<std::string, ::llvm::cl::Option*>> options;
    for (auto const& n : named)
        if (seen.insert(n.second).second) options.push_back(n);
    std::vector<::llvm::cl::Option*> walk;
    walk.reserve(options.size());
    for (auto const& o : options) walk.push_back(o.second);
    std::vector<llvm_detail::printed_option> printed;
    llvm_detail::print_option_values(walk, printed);
    std::vector<std::string> const llvm_arguments = llvm_detail::unwrapped_llvm_arguments(arguments);
    std::string s;
    for (std::size_t i = 0; i < options.size(); ++i) {
        std::string const& name = options[i].first;
        ::llvm::cl::Option const* const option = options[i].second;
        int const occurrences = option->getNumOccurrences();
        llvm_detail::option_value_text const v = llvm_detail::read_option_value(printed[i].value);
        llvm_detail::printed_option const& p = printed[i];
        if (p.kinds_read) { // -x86-align-branch: the kinds it holds
            if (p.kinds.empty()) continue;
            append_field(s, "option", name);
            append_field(s, "kinds", p.kinds);
            continue;
        }
        if (p.enum_read) { // its value's name, as LLVM prints it
            if (p.differs.empty() && p.enum_at_default) continue;
            append_field(s, "option", name);
            append_field(s, "enum", p.enum_name);
            continue;
        }
        if (v.readable && v.padded && p.is_string) { // its value exactly, not its padded print
            if (p.differs.empty() && p.string_at_default) continue;
            append_field(s, "option", name);
            append_field(s, "string", p.string_value);
            continue;
        }
        if (v.readable && (!v.padded || p.read)) {
            if (p.differs.empty() && v.at_default) continue;
            append_field(s, "option", name);
            append_field(s, "value", v.text);
            continue;
        }
        // Unprintable, or printed alike for other values: counted as set when it
        // occurred, or when LLVM says it differs (or it has no default to compare with).
        if (occurrences == 0 && p.differs.empty() && !(v.readable && !v.at_default)) continue;
        // `-name=value`, or `-name` and the argument after it. An option that needs a
        // value takes the next argument, so one that starts with `-` is no value seen
        // here (a wrapper not unwrapped, an option of the host's own), nor is none.
        bool const needs_value = option->getValueExpectedFlag() == ::llvm::cl::ValueRequired;
        bool value_unseen = false;
        std::string given;
        for (std::size_t a = 0; a < llvm_arguments.size(); ++a) {
            std::string const& arg = llvm_arguments[a];
            if (llvm_detail::option_name(arg) != name) continue;
            append_field(given, "arg", arg);
            if (arg.find('=') != std::string::npos) continue;
            if (a + 1 < llvm_arguments.size()) {
                std::string const& next = llvm_arguments[a + 1];
                append_field(given, "next", next);
                if (needs_value && !next.empty() && next[0] == '-') value_unseen = true;
            } else if (needs_value) {
                value_unseen = true;
            }
        }
        if (given.empty() || value_unseen) unknown += (unknown.empty() ? "-" : " -") + name;
        append_field(s, "option", name);
        append_field(s, "printed", v.text);
        append_field(s, "occurrences", occurrences);
        append_field(s, "given", given);
    }
    return s;
}

/// An llvm::ObjectCache over an object_store. Needs no RTTI of its own (see the
/// header comment); object_cache<Cache> is the convenient form.
///
/// It needs the target the JIT generates code for: give it to the constructor, or
/// call set_target before the first compile. Until then every compile is a bypass,
/// counted (here, and in the cache's statistics) and logged once.
class basic_object_cache : public ::llvm::ObjectCache {
public:
    /// What happened so far in this process (also counted, with reasons, by the cache
    /// behind the store: summary()).
    struct counters {
        std::uint64_t hits = 0;      ///< getObject returned a cached object
        std::uint64_t misses = 0;    ///< getObject found nothing usable (the JIT compiled)
        std::uint64_t rejected = 0;  ///< of the misses: an entry that was not an object of the target
        std::uint64_t notified = 0;  ///< notifyObjectCompiled calls (objects handed to the store)
        std::uint64_t bypassed = 0;  ///< no key: no target, unknown LLVM option values, or no hash of the module
        std::uint64_t compile_ns = 0; ///< time from a miss to its object (the code generator's work)
    };

    /// Without a target: call set_target before the JIT compiles.
    explicit basic_object_cache(object_store store) : store_(std::move(store)) {}
    /// For the target `jtmb` makes (the JIT's own JITTargetMachineBuilder). If it
    /// cannot make one, the error is logged and every compile is a bypass.
    basic_object_cache(object_store store, ::llvm::orc::JITTargetMachineBuilder const& jtmb)
        : store_(std::move(store)) {
        current_ = keyed_target_of(jtmb);
    }

    ~basic_object_cache() override {
        try {
            counters const c = statistics();
            if (c.hits + c.misses + c.bypassed > 0)
                store_.log("llvm object cache: " + summary());
        } catch (...) {
        }
    }

    /// The target the JIT generates code for; until one is set, nothing is cached.
    void set_target(::llvm::TargetMachine const& tm) {
        keyed_target t = keyed_target_of(tm);
        std::lock_guard<std::mutex> lock(mutex_);
        current_ = std::move(t);
    }
    /// The same from a JITTargetMachineBuilder (builds a TargetMachine to describe it).
    ::llvm::Error set_target(::llvm::orc::JITTargetMachineBuilder const& jtmb) {
        auto copy = jtmb;
        auto tm = copy.createTargetMachine();
        if (!tm) return tm.takeError();
        set_target(**tm);
        return ::llvm::Error::success();
    }

    /// The IR compiler for a JIT's IRCompileLayer: an ORC ConcurrentIRCompiler for
    /// `jtmb` whose objects are cached here, keyed by `jtmb`'s own target whatever
    /// compilers are made here later, so that the machine that compiles an object is the
    /// one its key describes. `jtmb` also becomes the target set here (set_target), for a
    /// JIT that uses this object cache itself. If `jtmb` makes no target machine, the
    /// error is logged and every compile is a bypass (the compiler then reports the same
    /// error to the JIT).
    ///
    ///   llvm::orc::IRCompileLayer layer(session, object_layer, objects.make_compiler(jtmb));
    std::unique_ptr<::llvm::orc::IRCompileLayer::IRCompiler> make_compiler(::llvm::orc::JITTargetMachineBuilder jtmb) {
        ::llvm::ObjectCache* const cache = compiler_cache_for(keyed_target_of(jtmb));
        return std::make_unique<::llvm::orc::ConcurrentIRCompiler>(std::move(jtmb), cache);
    }

    /// make_compiler as LLJITBuilder's compile function (LLJITBuilder::CompileFunctionCreator):
    ///
    ///   auto jit = llvm::orc::LLJITBuilder().setCompileFunctionCreator(objects.compile_function()).create();
    ///
    /// A builder that makes no target machine fails the JIT's creation, as without the cache.
    std::function<::llvm::Expected<std::unique_ptr<::llvm::orc::IRCompileLayer::IRCompiler>>(
        ::llvm::orc::JITTargetMachineBuilder)>
    compile_function() {
        return [this](::llvm::orc::JITTargetMachineBuilder jtmb)
                   -> ::llvm::Expected<std::unique_ptr<::llvm::orc::IRCompileLayer::IRCompiler>> {
            auto copy = jtmb;
            auto tm = copy.createTargetMachine();
            if (!tm) return tm.takeError();
            ::llvm::ObjectCache* const cache = compiler_cache_for(keyed_target_of(**tm));
            return std::make_unique<::llvm::orc::ConcurrentIRCompiler>(std::move(jtmb), cache);
        };
    }

    /// The arguments the host gave cl::ParseCommandLineOptions (or -mllvm), so that the
    /// values of the LLVM options they set are part of the key. Without them, the
    /// process's own arguments are searched; a set option that neither names makes
    /// every compile a bypass (its value is unknown), logged once.
    void set_llvm_arguments(std::vector<std::string> arguments) {
        std::lock_guard<std::mutex> lock(mutex_);
        arguments_ = std::move(arguments);
        arguments_given_ = true;
    }

    /// Log a line for every hit too (misses and stores always are, when the cache has a
    /// logger: PREFIX_LOG=1); hits are otherwise in the summary line at destruction.
    void log_hits(bool on) noexcept { log_hits_ = on; }

    counters statistics() const noexcept {
        counters c;
        c.hits = hits_.load();
        c.misses = misses_.load();
        c.rejected = rejected_.load();
        c.notified = notified_.load();
        c.bypassed = bypassed_.load();
        c.compile_ns = compile_ns_.load();
        return c;
    }

    /// This process's counts: the adapter's, then the cache's (statistics_snapshot::summary).
    std::string summary() const {
        counters const c = statistics();
        std::string s = "hits=" + std::to_string(c.hits) + " misses=" + std::to_string(c.misses) +
                        " rejected=" + std::to_string(c.rejected) + " stored=" + std::to_string(c.notified) +
                        " bypassed=" + std::to_string(c.bypassed) +
                        " compile-ms=" + std::to_string(c.compile_ns / 1000000) + "." +
                        std::to_string(c.compile_ns / 100000 % 10);
        std::string const cache = store_.summary();
        if (!cache.empty()) s += "; cache: " + cache;
        return s;
    }

    /// The object compiled for `m` before, for the target set here.
    std::unique_ptr<::llvm::MemoryBuffer> getObject(::llvm::Module const* m) override { return get_object(m, nullptr); }

    void notifyObjectCompiled(::llvm::Module const* m, ::llvm::MemoryBufferRef obj) override {
        try {
            pending p;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                auto it = pending_.find(m);
                // Without getObject first there is no digest of the IR as the code
                // generator got it; a digest taken now could differ and never hit.
                if (it == pending_.end()) return;
                p = std::move(it->second);
                pending_.erase(it);
            }
            ++notified_;
            auto const compile_time = std::chrono::steady_clock::now() - p.start;
            compile_ns_ += static_cast<std::uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(compile_time).count());
            store_.store(p.inputs, std::string_view(obj.getBufferStart(), obj.getBufferSize()), compile_time);
            store_.log("llvm object cache: stored '" + p.inputs.entry_name + "' (" +
                       std::to_string(obj.getBufferSize()) + " bytes, compiled in " +
                       std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(compile_time).count()) +
                       " us)");
        } catch (...) {
        }
    }

private:
    struct pending {
        object_key_inputs inputs;
        std::chrono::steady_clock::time_point start;
    };

    /// What a module can say of the target it was made for, to compare with the target
    /// set here (set_target).
    struct target_check {
        std::string triple;      ///< normalized
        std::string data_layout;
        std::string cpu;
        std::vector<std::string> features; ///< sorted, without empty items
    };

    /// A target as a compile is keyed by it: the one set here, or the one a compiler
    /// made here was made for.
    struct keyed_target {
        std::string description; ///< describe_target; empty: none (`error` says why, if known)
        std::string error;
        std::string code_generator;
        target_check check;
        ::llvm::Triple::ArchType arch = ::llvm::Triple::UnknownArch;
    };

    /// The object cache a compiler made here gets: this one, keyed by the target the
    /// compiler was made for (the one set here when it was made), not by whatever target
    /// is set here when it compiles: a JIT may make a compiler per tier (O0, then O3),
    /// each of which must store under its own options.
    class compiler_cache final : public ::llvm::ObjectCache {
    public:
        compiler_cache(basic_object_cache& owner, keyed_target target) : owner_(owner), target_(std::move(target)) {}
        std::unique_ptr<::llvm::MemoryBuffer> getObject(::llvm::Module const* m) override {
            return owner_.get_object(m, &target_);
        }
        void notifyObjectCompiled(::llvm::Module const* m, ::llvm::MemoryBufferRef obj) override {
            owner_.notifyObjectCompiled(m, obj);
        }

    private:
        basic_object_cache& owner_;
        keyed_target const target_;
    };

    /// `tm` as a compile is keyed by it.
    static keyed_target keyed_target_of(::llvm::TargetMachine const& tm) {
        keyed_target t;
        t.description = describe_target(tm);
        t.code_generator = code_generator_identity(tm);
        t.check.triple = tm.getTargetTriple().normalize();
        t.check.data_layout = tm.createDataLayout().getStringRepresentation();
        t.check.cpu = tm.getTargetCPU().str();
        t.check.features = feature_set(tm.getTargetFeatureString());
        t.arch = tm.getTargetTriple().getArch();
        return t;
    }
    /// The target `jtmb` makes; none, with the reason, when it makes no target machine.
    static keyed_target keyed_target_of(::llvm::orc::JITTargetMachineBuilder const& jtmb) {
        auto copy = jtmb;
        auto tm = copy.createTargetMachine();
        if (tm) return keyed_target_of(**tm);
        keyed_target none;
        none.error = "the JITTargetMachineBuilder makes no target machine: " + ::llvm::toString(tm.takeError());
        return none;
    }

    /// `t` made the target set here and a compiler_cache's, in one step (so that another
    /// thread's compiler made meanwhile cannot swap them); the compiler_cache is kept as
    /// long as this object (one per compiler made: a host that makes compilers without
    /// end grows this list without end).
    ::llvm::ObjectCache* compiler_cache_for(keyed_target t) {
        auto cache = std::make_unique<compiler_cache>(*this, t);
        std::lock_guard<std::mutex> lock(mutex_);
        current_ = std::move(t);
        compiler_caches_.push_back(std::move(cache));
        return compiler_caches_.back().get();
    }

    /// getObject's work, keyed by `bound` (a compiler's own target) or, when null, by
    /// the target set here.
    std::unique_ptr<::llvm::MemoryBuffer> get_object(::llvm::Module const* m, keyed_target const* bound) {
        try {
            if (!m) return nullptr;
            {
                // An earlier module at this address that missed and never compiled (its
                // compile failed) must not lend this one its key (notifyObjectCompiled).
                std::lock_guard<std::mutex> lock(mutex_);
                pending_.erase(m);
            }
            if (!store_.enabled()) return nullptr;
            auto start = std::chrono::steady_clock::now();
            object_key_inputs in;
            keyed_target target;
            std::vector<std::string> arguments;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                target = bound ? *bound : current_;
                if (!arguments_given_ && !process_arguments_read_) {
                    arguments_ = llvm_detail::process_arguments();
                    process_arguments_read_ = true;
                }
                arguments = arguments_;
            }
            in.target = target.description;
            in.code_generator = target.code_generator;
            target_check const& check = target.check;
            ::llvm::Triple::ArchType const arch = target.arch;
            std::string const& target_error = target.error;
            in.module_name = m->getModuleIdentifier();
            in.source_file = m->getSourceFileName();
            in.entry_name = defined_name(*m);
            if (in.target.empty()) {
                bypass(no_target_logged_, "no target",
                       "llvm object cache: bypass '" + in.entry_name + "' (module '" + in.module_name + "'): " +
                           (target_error.empty() ? "no target: call set_target(JITTargetMachineBuilder or "
                                                   "TargetMachine) before the JIT compiles, or construct the "
                                                   "object cache with the JIT's JITTargetMachineBuilder"
                                                 : target_error) +
                           "; nothing is cached");
                return nullptr;
            }
            std::string const disagreement = disagreement_with_target(*m, check);
            if (!disagreement.empty()) {
                bypass(other_target_logged_, "module for another target",
                       "llvm object cache: bypass '" + in.entry_name + "' (module '" + in.module_name + "'): " +
                           disagreement +
                           ": the JIT's compiler and the object cache disagree on the target (give the JIT "
                           "the object cache's make_compiler or compile_function); nothing is cached");
                return nullptr;
            }
            std::string unknown;
            in.llvm_options = describe_llvm_options(arguments, unknown);
            if (!unknown.empty()) {
                bypass(unknown_options_logged_, "LLVM options of unknown value",
                       "llvm object cache: bypass '" + in.entry_name + "': LLVM option(s) " + unknown +
                           " set, but no argument gives their value (`-name=value`, or `-name value`, "
                           "`-mllvm` unwrapped): pass the arguments given to cl::ParseCommandLineOptions "
                           "to set_llvm_arguments; nothing is cached");
                return nullptr;
            }
            in.bitcode_digest = bitcode_digest(*m);
            in.llvm_version = LLVM_VERSION_STRING;
            std::string bytes;
            bool hit = store_.load(in, bytes);
            bool rejected = false;
            if (hit && !is_object_for(bytes, arch, in.module_name)) {
                ++rejected_;
                hit = false;
                rejected = true; // said by is_object_for
            }
            if (hit) {
                ++hits_;
                if (log_hits_) store_.log("llvm object cache: hit '" + in.entry_name + "' (module '" + in.module_name + "')");
                return ::llvm::MemoryBuffer::getMemBufferCopy(bytes, in.module_name);
            }
            ++misses_;
            // Why, as the cache explains an absent miss (`compile-cache explain` too).
            std::string const why = rejected ? std::string() : store_.explain_miss(in);
            store_.log("llvm object cache: miss '" + in.entry_name + "' (module '" + in.module_name +
                       "'): " + (why.empty() ? std::string() : why + "; ") + "compiling");
            std::lock_guard<std::mutex> lock(mutex_);
            pending_[m] = pending{std::move(in), start};
            return nullptr;
        } catch (...) {
            return nullptr;
        }
    }

    static std::vector<std::string> feature_set(::llvm::StringRef features) {
        ::llvm::SmallVector<::llvm::StringRef, 64> items;
        features.split(items, ',', -1, /*KeepEmpty=*/false);
        std::vector<std::string> set;
        for (::llvm::StringRef f : items) set.push_back(f.trim().str());
        std::sort(set.begin(), set.end());
        set.erase(std::unique(set.begin(), set.end()), set.end());
        return set;
    }

    /// Empty when nothing the module tells disagrees with the target `t`: its triple
    /// and data layout (when it has them), and the `target-cpu` and `target-features`
    /// attributes of the functions it defines (when they have them). Otherwise what
    /// disagrees: a JIT whose own compiler was made for another target than the one
    /// given here would store that target's code under this one's key.
    static std::string disagreement_with_target(::llvm::Module const& m, target_check const& t) {
        std::string const& triple = m.getTargetTriple();
        if (!triple.empty() && ::llvm::Triple::normalize(triple) != t.triple)
            return "the module's triple '" + triple + "' is not the target's '" + t.triple + "'";
        std::string const& layout = m.getDataLayoutStr();
        if (!layout.empty() && layout != t.data_layout)
            return "the module's data layout '" + layout + "' is not the target's '" + t.data_layout + "'";
        for (::llvm::Function const& f : m.functions()) {
            if (f.isDeclaration()) continue;
            ::llvm::Attribute const cpu = f.getFnAttribute("target-cpu");
            if (cpu.isValid() && cpu.getValueAsString() != t.cpu)
                return "function '" + f.getName().str() + "' has target-cpu '" + cpu.getValueAsString().str() +
                       "', the target's CPU is '" + t.cpu + "'";
            ::llvm::Attribute const features = f.getFnAttribute("target-features");
            if (features.isValid() && feature_set(features.getValueAsString()) != t.features)
                return "function '" + f.getName().str() + "' has target-features '" +
                       features.getValueAsString().str() + "', not the target's";
        }
        return {};
    }

    /// The name of the first function the module defines, else of its first defined
    /// global, else the module's identifier.
    static std::string defined_name(::llvm::Module const& m) {
        for (::llvm::Function const& f : m.functions())
            if (!f.isDeclaration()) return f.getName().str();
        for (::llvm::GlobalVariable const& g : m.globals())
            if (!g.isDeclaration()) return g.getName().str();
        return m.getModuleIdentifier();
    }

    void bypass(std::atomic<bool>& logged, std::string const& reason, std::string const& line) {
        ++bypassed_;
        store_.bypass(reason);
        if (!logged.exchange(true)) store_.log(line);
    }

    bool is_object_for(std::string const& bytes, ::llvm::Triple::ArchType arch, std::string const& name) {
        auto obj = ::llvm::object::ObjectFile::createObjectFile(::llvm::MemoryBufferRef(bytes, name));
        if (!obj) {
            std::string why = ::llvm::toString(obj.takeError());
            store_.log("llvm object cache: entry for '" + name + "' is not an object file (" + why + "); compiling");
            return false;
        }
        if (arch != ::llvm::Triple::UnknownArch && (*obj)->getArch() != arch) {
            store_.log("llvm object cache: entry for '" + name + "' is for another architecture; compiling");
            return false;
        }
        return true;
    }

    object_store store_;
    std::mutex mutex_;
    keyed_target current_; ///< the target set here (set_target), which getObject keys by
    std::vector<std::string> arguments_;
    bool arguments_given_ = false;
    bool process_arguments_read_ = false;
    std::unordered_map<::llvm::Module const*, pending> pending_;
    std::vector<std::unique_ptr<compiler_cache>> compiler_caches_; ///< one per compiler made here
    std::atomic<std::uint64_t> hits_{0}, misses_{0}, rejected_{0}, notified_{0}, bypassed_{0}, compile_ns_{0};
    std::atomic<bool> no_target_logged_{false}, unknown_options_logged_{false},
        other_target_logged_{false};
    std::atomic<bool> log_hits_{false};
};

/// An llvm::ObjectCache over `cache`, any basic_cache composition (which must outlive
/// it). `host_version` goes into the toolchain component of every key.
template <class Cache>
class object_cache : public basic_object_cache {
public:
#if COMPILE_CACHE_OBJECT_CACHE_HAS_RTTI
    /// Without a target: call set_target before the JIT compiles.
    explicit object_cache(Cache& cache, std::string host_version = {})
        : basic_object_cache(make_object_store(cache, std::move(host_version))) {}
    /// For the target the JIT's `jtmb` makes.
    object_cache(Cache& cache, ::llvm::orc::JITTargetMachineBuilder const& jtmb, std::string host_version = {})
        : basic_object_cache(make_object_store(cache, std::move(host_version)), jtmb) {}
#else
    template <class C = Cache, class... Rest>
    explicit object_cache(C&, Rest&&...) : basic_object_cache(object_store{}) {
        static_assert(sizeof(C) == 0,
                      "compile_cache::object_cache<Cache> needs RTTI; with -fno-rtti use basic_object_cache "
                      "over an object_store made by make_object_store in a translation unit compiled with RTTI");
    }
#endif
};

} // namespace compile_cache
