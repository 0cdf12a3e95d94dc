// compile_cache: the toolchain component of a key: everything outside the kernel's
// own inputs that can change what compiling it produces, or how an entry is read.
#pragma once

#include <compile_cache/detail/config.hpp>

#include <compile_cache/detail/build_id.hpp>
#include <compile_cache/key/detail/executable_digest.hpp>
#include <compile_cache/detail/platform.hpp>
#include <compile_cache/key/writer.hpp>
#include <compile_cache/version.hpp>

#include <boost/version.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace compile_cache {

/// The address of a function, for toolchain::of_code.
using detail::code_address;

/// \code
/// kb.add("toolchain", compile_cache::toolchain::current("mydsl 2.3", serializer::format_id()));
/// \endcode
/// basic_cache::make_key_builder() adds it for you.
struct toolchain {
    unsigned library_format = format_version;
    std::string compiler;        ///< compiler id and version the host was built with
    unsigned long boost_version = BOOST_VERSION;
    std::string serializer_format; ///< the Serializer's format_id(): archive kind, version, ABI
    unsigned pointer_size = sizeof(void*);
    bool little_endian = true;
    std::string host_version;    ///< the host's own version string
    /// The host program's GNU build-id (toolchain::of_code: its code generator's); when
    /// it has none (or it cannot be read, as with COMPILE_CACHE_NO_LINUX_EXTENSIONS),
    /// "exe-sha256:" and the SHA-256 of its executable file (hashed once per process);
    /// when that cannot be read either (an execute-only program), the program named for
    /// this process alone ("main program:not known, process ..."), on Linux always,
    /// elsewhere where there is a /proc/self/exe; empty only where there is none.
    std::string host_build_id;
    /// CPU architecture and operating system the host was compiled for, e.g.
    /// "x86_64-linux", "aarch64-linux": the compiler's version string and the pointer
    /// size do not tell a cross compiler's target apart.
    std::string platform = detail::compiled_platform();

    /// The toolchain of the running program.
    COMPILE_CACHE_DECL static toolchain current(std::string host_version = {}, std::string serializer_format = {});

    /// The toolchain of a compiler whose code generator is not (only) the main
    /// program: as current(), but host_build_id identifies the loaded modules (the
    /// program, shared libraries) that contain `code`, addresses of functions or
    /// static objects in them (code_address(&f)): each by its build-id, or, without one,
    /// by the SHA-256 of its file (read once per process and file; a module whose file
    /// cannot be read is named for this process alone: its entries miss in every other).
    /// So a host that generates code with a shared library keeps its entries when it is
    /// rebuilt, and loses them when the library is replaced. docs/design.md says how to
    /// choose. Where the loaded modules cannot be listed (no dl_iterate_phdr:
    /// COMPILE_CACHE_NO_LINUX_EXTENSIONS, other systems), as current(): the main
    /// program's identity, never none.
    COMPILE_CACHE_DECL static toolchain of_code(std::initializer_list<void const*> code,
                                                std::string host_version = {}, std::string serializer_format = {});

    COMPILE_CACHE_DECL static std::string compiler_id();

    friend void describe(key_writer& w, toolchain const& t) {
        w(t.library_format, t.compiler, t.boost_version, t.serializer_format, t.pointer_size,
          t.little_endian, t.host_version, t.host_build_id, t.platform);
    }
};

} // namespace compile_cache

#include <compile_cache/key/impl/toolchain.ipp>
