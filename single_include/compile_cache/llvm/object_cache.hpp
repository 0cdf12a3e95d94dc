// compile_cache: an llvm::ObjectCache over a compile_cache cache, for any LLVM JIT
// that takes one (ORC's SimpleCompiler, TMOwningSimpleCompiler, ConcurrentIRCompiler;
// MCJIT). Optional: needs LLVM (written against LLVM 14); the umbrella header does
// not include it.
//
//   auto cache = compile_cache::default_cache::from_env("MYJIT_CACHE");
//   compile_cache::object_cache<compile_cache::default_cache> objects(cache, "myjit 1.2");
//   auto jit = llvm::orc::LLJITBuilder()
//       .setCompileFunctionCreator([&](llvm::orc::JITTargetMachineBuilder jtmb)
//               -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
//           if (llvm::Error e = objects.set_target(jtmb)) return e;
//           return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(jtmb), &objects);
//       })
//       .create();
//
// A JIT with its own IRCompileLayer gives its JITTargetMachineBuilder to the
// constructor instead: object_cache<...> objects(cache, jtmb, "myjit 1.2"). Without a
// target nothing is cached: each compile is a counted bypass, said once (PREFIX_LOG).
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
#endif

#if !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && !defined(_CPPUNWIND)
#error "compile_cache: needs exceptions (drop -fno-exceptions; llvm-config --cxxflags adds it, LLVM's headers do not need it)"
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

// RTTI is checked by detail/config_rtti.hpp, in the headers that need it: the LLVM
// adapter's no-RTTI side (compile_cache/llvm/object_store.hpp, object_cache.hpp) does not.

#endif // COMPILE_CACHE_DETAIL_CONFIG_HPP
// ---- end of compile_cache/detail/config.hpp

// ---- inlined compile_cache/detail/build_id.hpp
// compile_cache: GNU build-ids read from the ELF notes of loaded modules: the running
// program's, so that rebuilding the host compiler re-keys everything it cached, or
// that of the module (program or shared library) containing an address, so that a
// host whose code generator is a library (LLVM's) is identified by that library.
// An include guard as well: the LLVM adapter's single-header copies inline this
// header (scripts/amalgamate.py), and so does the single header.
#ifndef COMPILE_CACHE_DETAIL_BUILD_ID_HPP
#define COMPILE_CACHE_DETAIL_BUILD_ID_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

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
    static std::string const id = [] {
        std::string s;
#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
        dl_iterate_phdr(&find_main_build_id, &s);
#endif
        return s;
    }();
    return id;
}

/// A module (the main program or a shared library) loaded in this process.
struct loaded_module {
    bool found = false;       ///< false: no loaded module contains the address (or the platform cannot tell)
    bool main_program = false;
    std::string path;         ///< as the dynamic loader names it; empty for the main program
    std::uintptr_t base = 0;  ///< its load address: one value per module
    std::string build_id;     ///< lower-case hex of its GNU build-id; empty when it has none
};

#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
struct module_search {
    std::uintptr_t address;
    bool first = true;
    loaded_module* out;
};

inline int find_module_containing(dl_phdr_info* info, std::size_t, void* data) {
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
        read_build_id(info, m.build_id);
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

/// What identifies the code of the modules containing `addresses`: for each module
/// (once, in the order first met), its build-id; for a module without one, its path,
/// size and modification time (the main program's through /proc/self/exe). Empty
/// when no address is in a loaded module.
inline std::string module_identity(std::initializer_list<void const*> addresses) {
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
        std::string const path = m.main_program ? std::string("/proc/self/exe") : m.path;
        struct ::stat st;
        if (!path.empty() && ::stat(path.c_str(), &st) == 0)
            id += (m.main_program ? std::string("main program") : m.path) + ":" + std::to_string(st.st_size) +
                  ":" + std::to_string(st.st_mtime);
        else
            id += m.main_program ? std::string("main program") : m.path;
    }
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
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>
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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
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

} // namespace llvm_detail

/// SHA-256 of the module's bitcode (without use-list order), 32 bytes.
inline std::string bitcode_digest(::llvm::Module const& m) {
    llvm_detail::sha256_ostream os;
    ::llvm::WriteBitcodeToFile(m, os);
    return os.digest();
}

/// Everything about a target machine that changes the code it generates: triple, CPU,
/// features, codegen opt level, the effective relocation and code models, and the
/// TargetOptions that affect code (floating point, sections, TLS, ...). Deterministic:
/// the same machine gives the same text in every process.
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
    ::llvm::TargetOptions const& o = tm.Options;
    // One digit per flag, in declaration order (LLVM 14's TargetOptions).
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
    append_field(s, "bb-sections", static_cast<long long>(o.BBSections));
    append_field(s, "abi", o.MCOptions.ABIName);
    append_field(s, "mc", std::string(o.MCOptions.MCRelaxAll ? "r" : "-") + (o.MCOptions.MCNoExecStack ? "x" : "-") +
                              (o.MCOptions.MCIncrementalLinkerCompatible ? "i" : "-"));
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

/// The LLVM options that were set (cl::getRegisteredOptions(), those with an
/// occurrence), in name order, each with its number of occurrences and the arguments
/// among `arguments` that give it a value (`-name=value`, or `-name` and the argument
/// after it): LLVM keeps no text of an option's value. `unknown` gets the names of
/// set options that no argument names (their value cannot be told).
inline std::string describe_llvm_options(std::vector<std::string> const& arguments, std::string& unknown) {
    using llvm_detail::append_field;
    std::vector<std::pair<std::string, int>> set;
    for (auto& entry : ::llvm::cl::getRegisteredOptions())
        if (entry.getValue() && entry.getValue()->getNumOccurrences() > 0)
            set.emplace_back(entry.getKey().str(), entry.getValue()->getNumOccurrences());
    std::sort(set.begin(), set.end());
    std::string s;
    unknown.clear();
    for (auto const& [name, occurrences] : set) {
        std::string given;
        for (std::size_t i = 0; i < arguments.size(); ++i) {
            if (llvm_detail::option_name(arguments[i]) != name) continue;
            append_field(given, "arg", arguments[i]);
            if (arguments[i].find('=') == std::string::npos && i + 1 < arguments.size())
                append_field(given, "next", arguments[i + 1]);
        }
        if (given.empty()) unknown += (unknown.empty() ? "-" : " -") + name;
        append_field(s, "option", name);
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
        if (::llvm::Error e = set_target(jtmb))
            target_error_ = "the JITTargetMachineBuilder makes no target machine: " + ::llvm::toString(std::move(e));
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
        std::string description = describe_target(tm);
        std::string generator = code_generator_identity(tm);
        std::lock_guard<std::mutex> lock(mutex_);
        target_ = std::move(description);
        code_generator_ = std::move(generator);
        arch_ = tm.getTargetTriple().getArch();
        target_error_.clear();
    }
    /// The same from a JITTargetMachineBuilder (builds a TargetMachine to describe it).
    ::llvm::Error set_target(::llvm::orc::JITTargetMachineBuilder const& jtmb) {
        auto copy = jtmb;
        auto tm = copy.createTargetMachine();
        if (!tm) return tm.takeError();
        set_target(**tm);
        return ::llvm::Error::success();
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

    std::unique_ptr<::llvm::MemoryBuffer> getObject(::llvm::Module const* m) override {
        try {
            if (!m || !store_.enabled()) return nullptr;
            auto start = std::chrono::steady_clock::now();
            object_key_inputs in;
            ::llvm::Triple::ArchType arch;
            std::vector<std::string> arguments;
            std::string target_error;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                in.target = target_;
                in.code_generator = code_generator_;
                arch = arch_;
                if (!arguments_given_ && !process_arguments_read_) {
                    arguments_ = llvm_detail::process_arguments();
                    process_arguments_read_ = true;
                }
                arguments = arguments_;
                target_error = target_error_;
            }
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
            std::string unknown;
            in.llvm_options = describe_llvm_options(arguments, unknown);
            if (!unknown.empty()) {
                bypass(unknown_options_logged_, "LLVM options of unknown value",
                       "llvm object cache: bypass '" + in.entry_name + "': LLVM option(s) " + unknown +
                           " set, but no argument gives their value: pass the arguments given to "
                           "cl::ParseCommandLineOptions to set_llvm_arguments; nothing is cached");
                return nullptr;
            }
            in.bitcode_digest = bitcode_digest(*m);
            in.llvm_version = LLVM_VERSION_STRING;
            std::string bytes;
            bool hit = store_.load(in, bytes);
            if (hit && !is_object_for(bytes, arch, in.module_name)) {
                ++rejected_;
                hit = false;
            }
            if (hit) {
                ++hits_;
                if (log_hits_) store_.log("llvm object cache: hit '" + in.entry_name + "' (module '" + in.module_name + "')");
                return ::llvm::MemoryBuffer::getMemBufferCopy(bytes, in.module_name);
            }
            ++misses_;
            store_.log("llvm object cache: miss '" + in.entry_name + "' (module '" + in.module_name + "'): compiling");
            std::lock_guard<std::mutex> lock(mutex_);
            pending_[m] = pending{std::move(in), start};
            return nullptr;
        } catch (...) {
            return nullptr;
        }
    }

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
    std::string target_;
    std::string target_error_;
    std::string code_generator_;
    ::llvm::Triple::ArchType arch_ = ::llvm::Triple::UnknownArch;
    std::vector<std::string> arguments_;
    bool arguments_given_ = false;
    bool process_arguments_read_ = false;
    std::unordered_map<::llvm::Module const*, pending> pending_;
    std::atomic<std::uint64_t> hits_{0}, misses_{0}, rejected_{0}, notified_{0}, bypassed_{0}, compile_ns_{0};
    std::atomic<bool> no_target_logged_{false}, unknown_options_logged_{false};
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
