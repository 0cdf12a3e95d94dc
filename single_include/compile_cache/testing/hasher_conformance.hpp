// compile_cache: a conformance kit for a Hasher of your own. Not included by
// compile_cache.hpp; include it from your tests. Framework-free: the check returns the
// list of what failed (empty: conforms), so any test framework, or a main, asserts it
// is empty and prints it otherwise:
//
//   auto failures = compile_cache::testing::check_hasher_conformance<my_hasher>(
//       {{"abc", "ba7816bf..."}});   // known vectors: message, key bytes in hex
//   for (auto const& f : failures) std::puts(f.c_str());
//
// It checks what a key needs of a Hasher: the same message gives the same digest;
// a message fed in pieces gives the digest of the whole; the empty message has a
// digest; different short messages differ; the digests of the vectors you give; and a
// key_builder over it makes keys. The hex of a vector is that of the key's bytes
// (key::hex()): a byte result in order, an integer result little-endian.
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

#include <compile_cache/compile_cache.hpp>

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

namespace compile_cache::testing {

/// A message and the hex of the key bytes its digest gives.
struct hasher_vector {
    std::string message;
    std::string key_hex;
};

namespace detail {
template <class H>
key digest_of_pieces(std::string const& message, std::vector<std::size_t> const& cuts) {
    H h;
    std::size_t at = 0;
    for (std::size_t cut : cuts) {
        compile_cache::detail::hasher_update(h, message.data() + at, cut - at);
        at = cut;
    }
    compile_cache::detail::hasher_update(h, message.data() + at, message.size() - at);
    return compile_cache::detail::hasher_key(h);
}

template <class H>
key digest_of(std::string const& message) {
    return digest_of_pieces<H>(message, {});
}
} // namespace detail

/// Runs every check on H; returns what failed, one line each ("check: what").
template <class H>
std::vector<std::string> check_hasher_conformance(std::vector<hasher_vector> const& vectors = {}) {
    static_assert(check_hasher<H>::value, "");
    std::vector<std::string> failures;
    auto expect = [&](bool ok, std::string const& check, std::string const& what) {
        if (!ok) failures.push_back(check + ": " + what);
    };
    try {
        std::string message(300, '\0');
        for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>((i * 37 + 11) & 0xff);
        key const whole = detail::digest_of<H>(message);

        expect(whole.size() == compile_cache::detail::digest_size<typename H::result_type>(), "digest size",
               "the key has " + std::to_string(whole.size()) + " bytes");
        expect(detail::digest_of<H>(message) == whole, "deterministic", "the same message gave two digests");

        bool split_ok = true;
        for (std::size_t cut = 0; cut <= message.size() && split_ok; ++cut)
            split_ok = detail::digest_of_pieces<H>(message, {cut}) == whole;
        expect(split_ok, "split updates", "a message fed in two pieces does not give the digest of the whole");
        std::vector<std::size_t> every_byte;
        for (std::size_t i = 1; i < message.size(); ++i) every_byte.push_back(i);
        expect(detail::digest_of_pieces<H>(message, every_byte) == whole, "split updates",
               "a message fed one byte at a time does not give the digest of the whole");
        expect(detail::digest_of_pieces<H>(message, {0, 0, 5, 5, 64, 64}) == whole, "split updates",
               "empty updates between pieces change the digest");

        H fresh;
        key const empty = compile_cache::detail::hasher_key(fresh);
        expect(detail::digest_of<H>(std::string()) == empty, "empty input",
               "update with no bytes changes the digest of the empty message");
        expect(!empty.empty(), "empty input", "the empty message has no digest");

        std::vector<std::string> const inputs = {"",  "a",  "b",   "ab",  "ba", std::string(1, '\0'),
                                                 std::string(2, '\0'), "abc", "abd", message};
        std::vector<key> keys;
        for (auto const& s : inputs) keys.push_back(detail::digest_of<H>(s));
        for (std::size_t i = 0; i < keys.size(); ++i)
            for (std::size_t j = i + 1; j < keys.size(); ++j)
                expect(keys[i] != keys[j], "different inputs",
                       "inputs " + std::to_string(i) + " and " + std::to_string(j) + " give the same digest");

        for (auto const& v : vectors) {
            std::string const got = detail::digest_of<H>(v.message).hex();
            expect(got == v.key_hex, "known vectors",
                   "message of " + std::to_string(v.message.size()) + " bytes gives " + got + ", expected " +
                       v.key_hex);
        }

        key_builder<H> kb;
        key_result const k1 = kb.add("ir", std::string("kernel")).finish();
        key_builder<H> kb2;
        key_result const k2 = kb2.add("ir", std::string("kernel")).finish();
        key_builder<H> kb3;
        key_result const k3 = kb3.add("ir", std::string("kernel2")).finish();
        expect(k1.ok() && k2.ok() && k3.ok(), "keys", "a key_builder over the Hasher bypasses");
        if (k1.ok() && k2.ok() && k3.ok())
            expect(k1.value() == k2.value() && k1.value() != k3.value(), "keys",
                   "equal components do not give equal keys, or different ones equal keys");
    } catch (std::exception const& e) {
        failures.push_back(std::string("no exceptions: the Hasher threw: ") + e.what());
    } catch (...) {
        failures.push_back("no exceptions: the Hasher threw");
    }
    return failures;
}

} // namespace compile_cache::testing
