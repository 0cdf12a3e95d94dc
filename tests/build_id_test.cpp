// Specification of the module identities a toolchain component can name: the loaded
// module (main program or shared library) that contains an address, its GNU build-id,
// and toolchain::of_code, which keys by the modules that hold a host's code generator.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/detail/build_id.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>

#if defined(COMPILE_CACHE_NO_BUILD_ID_MODULE)
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace cc = compile_cache;

// Where the loaded modules cannot be listed (COMPILE_CACHE_NO_LINUX_EXTENSIONS), only what
// toolchain::of_code falls back to.
#if defined(COMPILE_CACHE_HAS_DL_ITERATE_PHDR)
namespace {

int function_in_this_program(int x) { return x + 1; }

std::string readelf_build_id(std::string const& path) {
    if (std::system("command -v readelf >/dev/null 2>&1") != 0) return {};
    std::string const out = compile_cache_test::run_shell("readelf -n '" + path + "' 2>/dev/null").out;
    auto at = out.find("Build ID: ");
    return at == std::string::npos ? std::string() : out.substr(at + 10, out.find('\n', at) - at - 10);
}

cc::key key_of(cc::toolchain const& t) {
    cc::key_builder<cc::sha256> kb;
    kb.add("toolchain", t);
    return kb.finish().value();
}

} // namespace

TEST_CASE("an address in the program is in the main program, whose build-id it reads", "[build-id]") {
    cc::detail::loaded_module const m = cc::detail::module_containing(cc::code_address(&function_in_this_program));
    REQUIRE(m.found);
    CHECK(m.main_program);
    CHECK(m.path.empty());
    CHECK(m.build_id == cc::detail::main_program_build_id());
}

TEST_CASE("an address in a shared library is in that library, with the build-id its file has", "[build-id]") {
    // The FILE stdout points to is an object of the C library.
    cc::detail::loaded_module const m = cc::detail::module_containing(static_cast<void const*>(stdout));
    REQUIRE(m.found);
    CHECK_FALSE(m.main_program);
    INFO(m.path);
    CHECK(m.path.find("libc") != std::string::npos);
    std::string const printed = readelf_build_id(m.path);
    if (!printed.empty()) CHECK(m.build_id == printed);
    if (!m.build_id.empty()) CHECK(m.build_id != cc::detail::main_program_build_id());
}

TEST_CASE("an address in no loaded module is found in none, and identifies nothing", "[build-id]") {
    auto heap = std::make_unique<int>(1);
    CHECK_FALSE(cc::detail::module_containing(heap.get()).found);
    CHECK(cc::detail::module_identity({heap.get()}).empty());
}

#if defined(COMPILE_CACHE_NO_BUILD_ID_MODULE)
namespace {
/// Sets `path`'s modification time to `seconds` and `nanoseconds`.
void set_mtime(std::filesystem::path const& path, std::time_t seconds, long nanoseconds) {
    struct timespec const times[2] = {{seconds, 0}, {seconds, nanoseconds}};
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}
} // namespace

TEST_CASE("a library without a build-id is known by its file, and once replaced on disk, by the file it was "
          "loaded from",
          "[build-id]") {
    compile_cache_test::temp_dir dir;
    std::filesystem::path const lib = dir.path() / "libno_build_id.so";
    std::filesystem::copy_file(COMPILE_CACHE_NO_BUILD_ID_MODULE, lib);
    std::time_t const second = 1700000000; // every file here gets this second: only nanoseconds and inodes differ
    set_mtime(lib, second, 100);
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* code = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(code != nullptr);
    cc::detail::loaded_module const m = cc::detail::module_containing(code);
    REQUIRE(m.found);
    CHECK(m.build_id.empty());
    CHECK(m.path == lib.string());
    std::string const size = std::to_string(std::filesystem::file_size(lib));
    std::string const loaded = cc::detail::module_identity({code});
    CHECK(loaded == lib.string() + ":" + size + ":1700000000.100");

    // Replaced in place, as an install does it: another file renamed over the path, of
    // the same size and second. The running code is still the old file's, and so is its name.
    std::filesystem::copy_file(COMPILE_CACHE_NO_BUILD_ID_MODULE, dir.path() / "next.so");
    set_mtime(dir.path() / "next.so", second, 200);
    std::filesystem::rename(dir.path() / "next.so", lib);
    std::string const new_file = lib.string() + ":" + size + ":1700000000.200"; // what a process loading it names
    CHECK(cc::detail::module_identity({code}) == loaded);

    // Unloaded and loaded again: now the new file runs, and is named so.
    ::dlclose(handle);
    if (cc::detail::module_containing(code).found) {
        WARN("the library stayed loaded after dlclose: its reload is not checked");
        return;
    }
    handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* reloaded = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(reloaded != nullptr);
    CHECK(cc::detail::module_identity({reloaded}) == new_file);

    // Unloaded, rewritten in place (the same inode, as cp over it does), loaded again: the
    // rewritten file is named, not the one first named at that inode.
    ::dlclose(handle);
    if (cc::detail::module_containing(reloaded).found) {
        WARN("the library stayed loaded after dlclose: its rewrite is not checked");
        return;
    }
    std::string const bytes = compile_cache_test::read_file(lib);
    compile_cache_test::write_file(lib, bytes); // (truncates and writes: the same inode)
    set_mtime(lib, second, 300);
    handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* rewritten = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(rewritten != nullptr);
    CHECK(cc::detail::module_identity({rewritten}) == lib.string() + ":" + size + ":1700000000.300");
    ::dlclose(handle);
}

TEST_CASE("a library without a build-id replaced on disk before it was first named is named for its process alone",
          "[build-id]") {
    compile_cache_test::temp_dir dir;
    std::filesystem::path const lib = dir.path() / "libno_build_id_early.so";
    std::filesystem::copy_file(COMPILE_CACHE_NO_BUILD_ID_MODULE, lib);
    set_mtime(lib, 1700000000, 100);
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* code = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(code != nullptr);
    std::filesystem::copy_file(COMPILE_CACHE_NO_BUILD_ID_MODULE, dir.path() / "next.so");
    set_mtime(dir.path() / "next.so", 1700000000, 200);
    std::filesystem::rename(dir.path() / "next.so", lib);

    // Neither file's name: the size and time on disk are the new file's, the old one's are gone.
    std::string const size = std::to_string(std::filesystem::file_size(lib));
    std::string const named = cc::detail::module_identity({code});
    INFO(named);
    CHECK(named.find(":not the file its path names, process " + std::to_string(::getpid())) != std::string::npos);
    CHECK(named != lib.string() + ":" + size + ":1700000000.100");
    CHECK(named != lib.string() + ":" + size + ":1700000000.200");
    CHECK(cc::detail::module_identity({code}) == named); // the same for the rest of the process
    ::dlclose(handle);
}
#endif

TEST_CASE("toolchain::of_code names each module once, and another code generator is another key", "[build-id]") {
    void const* program = cc::code_address(&function_in_this_program);
    void const* library = stdout;
    std::string const both = cc::detail::module_identity({program, library, program});
    CHECK(both == cc::detail::module_identity({program, library}));
    CHECK(cc::toolchain::of_code({program}).host_build_id == cc::detail::module_identity({program}));

    cc::toolchain const by_library = cc::toolchain::of_code({library}, "host 1.0", "boost_binary 19");
    cc::toolchain const by_program = cc::toolchain::of_code({program}, "host 1.0", "boost_binary 19");
    CHECK(by_library.host_version == "host 1.0");
    CHECK(by_library.compiler == cc::toolchain::compiler_id());
    CHECK(key_of(by_library) != key_of(by_program));
    CHECK(key_of(by_library) == key_of(cc::toolchain::of_code({library}, "host 1.0", "boost_binary 19")));
}

TEST_CASE("toolchain::of_code with an address in no loaded module identifies the host as current() does",
          "[build-id]") {
    auto heap = std::make_unique<int>(1);
    CHECK(cc::toolchain::of_code({heap.get()}).host_build_id == cc::toolchain::current().host_build_id);
}
#else
TEST_CASE("without a list of loaded modules, toolchain::of_code identifies the host as current() does",
          "[build-id]") {
    std::string const host = cc::toolchain::current().host_build_id;
    CHECK_FALSE(host.empty()); // the executable's digest: there is a /proc/self/exe here
    CHECK(cc::toolchain::of_code({static_cast<void const*>(stdout)}).host_build_id == host);
}
#endif
