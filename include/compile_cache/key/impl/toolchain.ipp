// compile_cache: the definitions of key/toolchain.hpp's non-template functions; included by it alone
// (inline by default, compiled once in compile_cache/src.hpp under separate compilation).
#pragma once
#if COMPILE_CACHE_INCLUDE_IMPL
#include <cstring>

#include <sys/stat.h>

namespace compile_cache {

toolchain toolchain::current(std::string host_version, std::string serializer_format) {
    toolchain t;
    t.compiler = compiler_id();
    t.serializer_format = std::move(serializer_format);
    std::uint16_t probe = 1;
    unsigned char first;
    std::memcpy(&first, &probe, 1);
    t.little_endian = first == 1;
    t.host_version = std::move(host_version);
    t.host_build_id = detail::main_program_build_id();
    if (t.host_build_id.empty()) t.host_build_id = detail::main_program_file_id();
    if (t.host_build_id.empty()) {
        // Not known (an execute-only program cannot read its /proc/self/exe): named for this
        // process alone, on Linux always; elsewhere where there is a /proc/self/exe.
#if defined(__linux__)
        t.host_build_id = detail::main_program_for_this_process_alone();
#else
        struct ::stat link;
        if (::lstat("/proc/self/exe", &link) == 0) t.host_build_id = detail::main_program_for_this_process_alone();
#endif
    }
    return t;
}

toolchain toolchain::of_code(std::initializer_list<void const*> code, std::string host_version,
                             std::string serializer_format) {
    toolchain t = current(std::move(host_version), std::move(serializer_format));
    std::string modules = detail::module_identity(code, &detail::sha256_content_digests);
    if (!modules.empty()) t.host_build_id = std::move(modules);
    return t;
}

std::string toolchain::compiler_id() {
#if defined(__clang__)
    return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("gcc ") + __VERSION__;
#elif defined(_MSC_FULL_VER)
    return "msvc " + std::to_string(_MSC_FULL_VER);
#else
    return "unknown";
#endif
}

} // namespace compile_cache
#endif
