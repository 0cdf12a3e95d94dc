// compile_cache: what the library needs from the compiler, said first. Every public
// header includes this before anything else, so that a translation unit compiled with
// the wrong flags (llvm-config --cxxflags gives -std=c++14 -fno-exceptions) stops at
// one sentence naming the flag, not at a page of errors from inside the library.
#pragma once
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
