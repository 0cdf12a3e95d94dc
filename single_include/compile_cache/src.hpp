// compile_cache: the library's non-template functions, compiled once, for a host that
// builds with COMPILE_CACHE_SEPARATE_COMPILATION defined in every translation unit.
// Include this header in exactly one of the host's .cpp files, before any other
// compile_cache header; every other translation unit then parses only declarations
// (docs/design.md, "What including the library costs"). Without the macro the library
// is header-only, as by default, and this header is not needed. A build that breaks these
// rules fails to link with a symbol naming the rule (detail/config.hpp, README.md).
#pragma once

#if !defined(COMPILE_CACHE_SEPARATE_COMPILATION)
#error "compile_cache/src.hpp: define COMPILE_CACHE_SEPARATE_COMPILATION in every translation unit of the host, or do not include this header"
#endif
#if defined(COMPILE_CACHE_DETAIL_CONFIG_HPP)
#error "compile_cache/src.hpp: include it first in its translation unit, before any other compile_cache header"
#endif

#define COMPILE_CACHE_SOURCE
#include <compile_cache/compile_cache.hpp>

// The marks detail/config.hpp explains: the symbol every separate-compilation translation
// unit references, defined here once; and the one every header-only translation unit
// defines, defined here in another section group, so that linking both kinds fails.
extern "C" {
extern char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit;
char const compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit = 0;
}
#if defined(__GNUC__) && defined(__ELF__)
__asm__(".pushsection .rodata.compile_cache_separate_mark,\"aG\",@progbits,compile_cache_separate_mark,comdat\n"
        ".globl compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none\n"
        "compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none:\n"
        ".byte 0\n"
        ".popsection\n");
#endif
