// compile_cache: object_store, the seam between an LLVM JIT's ObjectCache
// (compile_cache/llvm/object_cache.hpp) and a basic_cache composition
// (compile_cache/llvm/cache_object_store.hpp).
//
// It needs neither LLVM nor Boost nor RTTI: a plain value with function pointers.
// That is what lets a host whose LLVM was built without RTTI (a class derived from
// llvm::ObjectCache must then be compiled with -fno-rtti) keep the cache, which
// needs RTTI (Boost.Serialization, the registry's typeid), in another translation
// unit:
//
//   // store.cpp, compiled with RTTI
//   #include <compile_cache/llvm/cache_object_store.hpp>
//   compile_cache::object_store make_store(compile_cache::default_cache& c) {
//       return compile_cache::make_object_store(c, "myjit 1.2");
//   }
//   // jit.cpp, compiled with -fno-rtti
//   #include <compile_cache/llvm/object_cache.hpp>
//   compile_cache::basic_object_cache objects(make_store(cache));
//
// Where LLVM has RTTI (llvm-config --has-rtti says YES, as Debian's does), one
// translation unit can use compile_cache::object_cache<Cache> directly.
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

#include <chrono>
#include <string>
#include <string_view>
#include <utility>

namespace compile_cache {

/// What the key of an object file is made of: everything its machine code depends on.
/// basic_object_cache fills it in; make_object_store's key covers every field but
/// the three names.
struct object_key_inputs {
    std::string module_name;    ///< the module's identifier: the entry's origin, and diagnostics
    std::string source_file;    ///< the module's source file name: diagnostics only
    std::string bitcode_digest; ///< SHA-256 of the module's bitcode as it reached the code generator
    std::string target;         ///< describe_target(): triple, CPU, features, options, opt level, models
    std::string llvm_version;   ///< LLVM_VERSION_STRING of the LLVM that generates the code
    std::string entry_name{};   ///< what the module defines (its first defined function): the entry's name
    /// The build-ids of the loaded modules that hold the code generator (libLLVM.so, or
    /// the program LLVM is linked into): the toolchain's identity instead of the main
    /// program's. Empty: the main program's (toolchain::current).
    std::string code_generator{};
    /// LLVM's command-line options that were set (cl::getRegisteredOptions), with their
    /// values: describe_llvm_options().
    std::string llvm_options{};
};

/// Loads and stores object files by object_key_inputs. Move-only; owns what the
/// function that made it allocated (make_object_store), never the cache itself.
/// Every operation is noexcept: failures are misses, counted by the cache behind it.
class object_store {
public:
    struct operations {
        /// True and `object` filled on a hit.
        bool (*load)(void* impl, object_key_inputs const& in, std::string& object) noexcept;
        /// Stores `object` (a failure is counted and logged by the cache, not reported).
        void (*store)(void* impl, object_key_inputs const& in, std::string_view object,
                      std::chrono::nanoseconds compile_time) noexcept;
        /// One diagnostic line through the cache's logger.
        void (*log)(void* impl, std::string_view line) noexcept;
        bool (*enabled)(void const* impl) noexcept;
        void (*destroy)(void* impl) noexcept;
        /// Counts a compile that could not be keyed, with its reason (optional).
        void (*bypass)(void* impl, std::string const& reason) noexcept = nullptr;
        /// The cache's statistics as one line (statistics_snapshot::summary; optional).
        std::string (*summary)(void const* impl) noexcept = nullptr;
        /// Why `in` has no entry, as the cache explains an absent miss from the record
        /// of the entry's identity (miss_explanation::text: `changed bitcode; unchanged
        /// toolchain, ...`, `new`); empty when it cannot tell (optional).
        std::string (*explain_miss)(void* impl, object_key_inputs const& in) noexcept = nullptr;
    };

    /// A store that loads nothing and stores nothing.
    object_store() noexcept = default;
    object_store(void* impl, operations const* ops) noexcept : impl_(impl), ops_(ops) {}
    object_store(object_store&& o) noexcept : impl_(std::exchange(o.impl_, nullptr)), ops_(std::exchange(o.ops_, nullptr)) {}
    object_store& operator=(object_store&& o) noexcept {
        if (this != &o) {
            reset();
            impl_ = std::exchange(o.impl_, nullptr);
            ops_ = std::exchange(o.ops_, nullptr);
        }
        return *this;
    }
    object_store(object_store const&) = delete;
    object_store& operator=(object_store const&) = delete;
    ~object_store() { reset(); }

    bool enabled() const noexcept { return ops_ && ops_->enabled(impl_); }
    bool load(object_key_inputs const& in, std::string& object) noexcept {
        return ops_ && ops_->load(impl_, in, object);
    }
    void store(object_key_inputs const& in, std::string_view object, std::chrono::nanoseconds compile_time) noexcept {
        if (ops_) ops_->store(impl_, in, object, compile_time);
    }
    void log(std::string_view line) noexcept {
        if (ops_) ops_->log(impl_, line);
    }
    void bypass(std::string const& reason) noexcept {
        if (ops_ && ops_->bypass) ops_->bypass(impl_, reason);
    }
    /// Why `in` missed (operations::explain_miss); empty when the store cannot tell.
    std::string explain_miss(object_key_inputs const& in) noexcept {
        return ops_ && ops_->explain_miss ? ops_->explain_miss(impl_, in) : std::string();
    }
    /// The statistics of the cache behind the store, this process's: one line.
    std::string summary() const noexcept { return ops_ && ops_->summary ? ops_->summary(impl_) : std::string(); }

private:
    void reset() noexcept {
        if (ops_ && ops_->destroy) ops_->destroy(impl_);
        impl_ = nullptr;
        ops_ = nullptr;
    }

    void* impl_ = nullptr;
    operations const* ops_ = nullptr;
};

} // namespace compile_cache
