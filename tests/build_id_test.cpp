// Specification of the module identities a toolchain component can name: the loaded
// module (main program or shared library) that contains an address, its GNU build-id,
// and toolchain::of_code, which keys by the modules that hold a host's code generator.
#include "catch2_compat.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/default_cache.hpp>
#include <compile_cache/detail/build_id.hpp>
#include <compile_cache/key/builder.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#if defined(COMPILE_CACHE_NO_BUILD_ID_MODULE)
#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
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

/// `bytes` with the last letter of its one `marker` changed to `letter`: another build
/// of the same size.
std::string with_marker(std::string bytes, std::string const& marker, char letter) {
    std::size_t const at = bytes.find(marker);
    REQUIRE(at != std::string::npos);
    REQUIRE(bytes.find(marker, at + 1) == std::string::npos);
    bytes[at + marker.size() - 1] = letter;
    return bytes;
}

std::string const library_marker = "compile_cache no-build-id marker A";

/// The no-build-id module's file with its marker ending in `letter`.
std::string library_build(char letter) {
    return with_marker(compile_cache_test::read_file(COMPILE_CACHE_NO_BUILD_ID_MODULE), library_marker, letter);
}

/// "sha256:" and the SHA-256 of the file at `path`, as a library's identity holds it.
std::string sha256_of(std::filesystem::path const& path) {
    std::string const id = cc::detail::file_sha256_id(path.c_str());
    REQUIRE(id.rfind("exe-sha256:", 0) == 0);
    return id.substr(4);
}
} // namespace

TEST_CASE("a library without a build-id is known by its file's content, and once replaced on disk, by the "
          "file it was loaded from",
          "[build-id]") {
    compile_cache_test::temp_dir dir;
    std::filesystem::path const lib = dir.path() / "libno_build_id.so";
    // Every build here has the same size and modification time: only contents and inodes differ.
    std::time_t const second = 1700000000;
    compile_cache_test::write_file(lib, library_build('A'));
    set_mtime(lib, second, 100);
    std::string const first_file = lib.string() + ":" + sha256_of(lib);
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* code = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(code != nullptr);
    cc::detail::loaded_module const m = cc::detail::module_containing(code);
    REQUIRE(m.found);
    CHECK(m.build_id.empty());
    CHECK(m.path == lib.string());
    std::string const loaded = cc::detail::module_identity({code});
    CHECK(loaded == first_file);
    // (The digests executable_digest.hpp registers; with none, its content is not known.)
    CHECK(cc::detail::module_identity({code}, &cc::detail::sha256_content_digests) == first_file);
    CHECK(cc::detail::module_identity({code}, nullptr).find(":not known, process ") != std::string::npos);
    CHECK(cc::detail::module_identity({code}) == first_file);

    // Replaced in place, as an install does it: another build renamed over the path, of
    // the same size and time. The running code is still the old file's, and so is its name.
    compile_cache_test::write_file(dir.path() / "next.so", library_build('B'));
    set_mtime(dir.path() / "next.so", second, 100);
    std::filesystem::rename(dir.path() / "next.so", lib);
    std::string const new_file = lib.string() + ":" + sha256_of(lib); // what a process loading it names
    CHECK(new_file != first_file);
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

    // Unloaded, rewritten in place (the same inode, as cp over it does) with a third build
    // given the same time again, loaded again: the rewritten file is named, not the one
    // first named at that inode.
    ::dlclose(handle);
    if (cc::detail::module_containing(reloaded).found) {
        WARN("the library stayed loaded after dlclose: its rewrite is not checked");
        return;
    }
    compile_cache_test::write_file(lib, library_build('C')); // (truncates and writes: the same inode)
    set_mtime(lib, second, 100);
    handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* rewritten = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(rewritten != nullptr);
    std::string const third_file = lib.string() + ":" + sha256_of(lib);
    CHECK(third_file != new_file);
    CHECK(cc::detail::module_identity({rewritten}) == third_file);
    ::dlclose(handle);
}

TEST_CASE("a library without a build-id replaced on disk before it was first named is named for its process alone",
          "[build-id]") {
    compile_cache_test::temp_dir dir;
    std::filesystem::path const lib = dir.path() / "libno_build_id_early.so";
    compile_cache_test::write_file(lib, library_build('A'));
    set_mtime(lib, 1700000000, 100);
    std::string const loaded_file = lib.string() + ":" + sha256_of(lib);
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* code = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(code != nullptr);
    compile_cache_test::write_file(dir.path() / "next.so", library_build('B'));
    set_mtime(dir.path() / "next.so", 1700000000, 100);
    std::filesystem::rename(dir.path() / "next.so", lib);

    // Neither file's name: the path names the new file, the old one cannot be read.
    std::string const named = cc::detail::module_identity({code});
    INFO(named);
    CHECK(named.find(":not known, process " + std::to_string(::getpid())) != std::string::npos);
    CHECK(named != loaded_file);
    CHECK(named != lib.string() + ":" + sha256_of(lib));
    CHECK(cc::detail::module_identity({code}) == named); // the same for the rest of the process
    ::dlclose(handle);
}

TEST_CASE("a library without a build-id loaded anew where another was is not named as that one when its path "
          "names that one again",
          "[build-id]") {
    // Two builds of one size and time in two folders: `cur/libswap.so` names either as the
    // folders are renamed, which changes neither file, not even its status-change time (as a
    // file system that does not set it on a rename leaves a file renamed over the path).
    compile_cache_test::temp_dir dir;
    std::filesystem::path const a = dir.path() / "a", b = dir.path() / "b", cur = dir.path() / "cur";
    std::filesystem::create_directory(a);
    std::filesystem::create_directory(b);
    compile_cache_test::write_file(a / "libswap.so", library_build('A'));
    compile_cache_test::write_file(b / "libswap.so", library_build('B'));
    set_mtime(a / "libswap.so", 1700000000, 100);
    set_mtime(b / "libswap.so", 1700000000, 100);
    std::filesystem::path const lib = cur / "libswap.so";
    std::filesystem::rename(a, cur);
    std::string const first_file = lib.string() + ":" + sha256_of(lib);
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* code = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(code != nullptr);
    CHECK(cc::detail::module_identity({code}) == first_file);
    std::uintptr_t const first_base = cc::detail::module_containing(code).base;
    ::dlclose(handle);
    if (cc::detail::module_containing(code).found) {
        WARN("the library stayed loaded after dlclose: another loaded in its place is not checked");
        return;
    }

    // The second build loaded from the path, which then names the first again, unchanged.
    std::filesystem::rename(cur, a);
    std::filesystem::rename(b, cur);
    handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    void const* second = ::dlsym(handle, "compile_cache_test_no_build_id");
    REQUIRE(second != nullptr);
    std::filesystem::rename(cur, b);
    std::filesystem::rename(a, cur);
    CHECK(lib.string() + ":" + sha256_of(lib) == first_file);
    if (cc::detail::module_containing(second).base != first_base) {
        WARN("the second build was loaded at another place: its name was never the first's to give");
    }
    // The path names another file than the one mapped: neither file's name.
    std::string const named = cc::detail::module_identity({second});
    INFO(named);
    CHECK(named != first_file);
    CHECK(named.find(":not known, process " + std::to_string(::getpid())) != std::string::npos);
    ::dlclose(handle);
}

TEST_CASE("a library without a build-id whose file cannot be read is named for its process alone", "[build-id]") {
    compile_cache_test::temp_dir dir;
    for (bool const deleted : {true, false}) {
        if (!deleted && compile_cache_test::running_as_root()) {
            WARN("root reads a file of mode 0: a library unreadable is not checked");
            continue;
        }
        std::filesystem::path const lib = dir.path() / (deleted ? "libdeleted.so" : "libunreadable.so");
        compile_cache_test::write_file(lib, library_build('A'));
        void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
        REQUIRE(handle != nullptr);
        void const* code = ::dlsym(handle, "compile_cache_test_no_build_id");
        REQUIRE(code != nullptr);
        if (deleted)
            std::filesystem::remove(lib);
        else
            std::filesystem::permissions(lib, std::filesystem::perms::none);
        std::string const named = cc::detail::module_identity({code});
        INFO(named);
        CHECK(named.find(":not known, process " + std::to_string(::getpid())) != std::string::npos);
        ::dlclose(handle);
    }
}

#if defined(COMPILE_CACHE_HELPER_of_code_helper)
namespace {
/// The `name=value` lines `of_code_helper` prints when run as `program` with `argument`.
std::map<std::string, std::string> of_code_report(std::filesystem::path const& program,
                                                  std::string const& argument = {}) {
    auto const r = compile_cache_test::run_shell("'" + program.string() + "'" +
                                                 (argument.empty() ? "" : " '" + argument + "'"));
    INFO(r.describe());
    REQUIRE(r.exited(0));
    std::map<std::string, std::string> fields;
    for (std::string const& line : compile_cache_test::lines_of(r.out)) {
        std::size_t const eq = line.find('=');
        if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return fields;
}

std::string const program_marker = "compile_cache of_code helper marker A";
} // namespace

TEST_CASE("toolchain::of_code tells two builds of a program without a build-id of one size and time apart",
          "[build-id]") {
    // Two builds whose code differs, of the same size and modification time (a reproducible
    // build, SOURCE_DATE_EPOCH, Nix's mtime 1, cp -p), as a host with LLVM linked in has them.
    compile_cache_test::temp_dir dir;
    std::string const bytes = compile_cache_test::read_file(COMPILE_CACHE_HELPER_of_code_helper);
    if (bytes.compare(0, 4, "\x7f" "ELF") != 0) {
        WARN("the helper is a script that runs it under an emulator: its copies are not checked");
        return;
    }
    std::filesystem::path const builds[3] = {dir.path() / "a", dir.path() / "b", dir.path() / "a-copy"};
    compile_cache_test::write_file(builds[0], bytes);
    compile_cache_test::write_file(builds[1], with_marker(bytes, program_marker, 'B'));
    compile_cache_test::write_file(builds[2], bytes);
    for (auto const& b : builds) {
        std::filesystem::permissions(b, std::filesystem::perms::owner_all);
        set_mtime(b, 1767225600, 0);
    }
    set_mtime(builds[2], 1767225601, 0); // the same build, copied later
    REQUIRE(std::filesystem::file_size(builds[0]) == std::filesystem::file_size(builds[1]));
    auto a = of_code_report(builds[0]);
    auto b = of_code_report(builds[1]);
    auto copy = of_code_report(builds[2]);
    INFO("a: " << a["of_code"] << "\nb: " << b["of_code"]);
    REQUIRE(a["output"] != b["output"]); // they generate different code
    CHECK(a["current"] != b["current"]);
    CHECK(a["of_code"] != b["of_code"]);
    CHECK(a["key"] != b["key"]);
    // The program by its content, as current() names it: a copy of a build is that build.
    CHECK(a["of_code"] == a["current"]);
    CHECK(a["of_code"].rfind("exe-sha256:", 0) == 0);
    CHECK(copy["key"] == a["key"]);

    // A program that cannot read its own file is named for its process alone.
    if (!compile_cache_test::running_as_root()) {
        std::filesystem::permissions(builds[0], std::filesystem::perms::owner_exec);
        auto unreadable = of_code_report(builds[0]);
        CHECK(unreadable["of_code"].find("main program:not known, process ") == 0);
        CHECK(unreadable["key"] != a["key"]);
    }
}

namespace {
/// The `name=value` lines `program` prints run by a user who cannot read it: this process's,
/// or as root (who reads every file) the user nobody (65534), in a forked child; with
/// `skip=` and why, when it cannot be run so.
std::map<std::string, std::string> of_code_report_unreadable(std::filesystem::path const& program) {
    std::string const out = compile_cache_test::run_in_child([&]() -> std::string {
        if (compile_cache_test::running_as_root() &&
            (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
            return "skip=the user nobody cannot be taken\n";
        if (::access(program.c_str(), X_OK) != 0) return "skip=the user cannot run " + program.string() + "\n";
        if (::access(program.c_str(), R_OK) == 0) return "failed=the program can still be read\n";
        auto const r = compile_cache_test::run_shell("'" + program.string() + "'");
        return r.exited(0) ? r.out : "failed=" + r.describe() + "\n";
    });
    std::map<std::string, std::string> fields;
    for (std::string const& line : compile_cache_test::lines_of(out)) {
        std::size_t const eq = line.find('=');
        if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return fields;
}
} // namespace

TEST_CASE("toolchain::current() names a program without a build-id that cannot read its own file for its "
          "process alone",
          "[build-id]") {
    // Two builds of the program that differ, made execute-only: the version string is all
    // they share, and must not make one key.
    compile_cache_test::temp_dir dir;
    std::string const bytes = compile_cache_test::read_file(COMPILE_CACHE_HELPER_of_code_helper);
    if (bytes.compare(0, 4, "\x7f" "ELF") != 0) {
        WARN("the helper is a script that runs it under an emulator: its copies are not checked");
        return;
    }
    namespace fs = std::filesystem;
    fs::path const builds[2] = {dir.path() / "a", dir.path() / "b"};
    compile_cache_test::write_file(builds[0], bytes);
    compile_cache_test::write_file(builds[1], with_marker(bytes, program_marker, 'B'));
    fs::permissions(builds[0], fs::perms::owner_all);
    auto readable = of_code_report(builds[0]);
    REQUIRE(readable["current"].rfind("exe-sha256:", 0) == 0);
    for (auto const& b : builds)
        fs::permissions(b, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec);
    // (The way in for the user nobody.)
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    auto a = of_code_report_unreadable(builds[0]);
    if (!a["skip"].empty()) {
        WARN("an execute-only program is not checked: " << a["skip"]);
        return;
    }
    auto b = of_code_report_unreadable(builds[1]);
    auto a_again = of_code_report_unreadable(builds[0]);
    INFO("failed: " << a["failed"] << b["failed"] << a_again["failed"]);
    REQUIRE((a["failed"].empty() && b["failed"].empty() && a_again["failed"].empty()));
    INFO("a: " << a["current"] << "\nb: " << b["current"]);
    REQUIRE(a["output"] != b["output"]); // they generate different code
    // Not the version string alone, which every build shares: a name no other process gives,
    // the one of_code gives the program.
    CHECK(a["current"].rfind("main program:not known, process ", 0) == 0);
    CHECK(a["of_code"] == a["current"]);
    CHECK(a["current-key"] != b["current-key"]);
    CHECK(a["current-key"] != a_again["current-key"]);
    CHECK(a["current-key"] != readable["current-key"]);
}

TEST_CASE("toolchain::of_code tells two builds of a library without a build-id of one size and time apart",
          "[build-id]") {
    compile_cache_test::temp_dir dir;
    std::filesystem::path const lib = dir.path() / "libcodegen.so";
    compile_cache_test::write_file(lib, library_build('A'));
    set_mtime(lib, 1767225600, 0);
    auto a = of_code_report(COMPILE_CACHE_HELPER_of_code_helper, lib.string());
    // Another build installed over it, of the same size and time.
    compile_cache_test::write_file(dir.path() / "next.so", library_build('B'));
    set_mtime(dir.path() / "next.so", 1767225600, 0);
    std::filesystem::rename(dir.path() / "next.so", lib);
    auto b = of_code_report(COMPILE_CACHE_HELPER_of_code_helper, lib.string());
    REQUIRE(a["library-output"] != b["library-output"]);
    CHECK(a["library"] != b["library"]);
    CHECK(b["library"] == lib.string() + ":" + sha256_of(lib));
    // The first build again (another inode, another time): named as before.
    compile_cache_test::write_file(dir.path() / "again.so", library_build('A'));
    std::filesystem::rename(dir.path() / "again.so", lib);
    CHECK(of_code_report(COMPILE_CACHE_HELPER_of_code_helper, lib.string())["library"] == a["library"]);
}
#endif

#if defined(COMPILE_CACHE_HELPER_content_digests_helper) && defined(COMPILE_CACHE_REGISTERING_MODULE)
TEST_CASE("digests registered by a library are withdrawn when it is unloaded, never called after", "[build-id]") {
    // (LeakSanitizer, in the sanitize suite, would count the unloaded library's cached name of
    // the program: a function-local static of a module gone, freed by no one, by design.)
    auto const r = compile_cache_test::run_shell(
        "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" '" +
        std::string(COMPILE_CACHE_HELPER_content_digests_helper) + "' '" + COMPILE_CACHE_REGISTERING_MODULE + "'");
    INFO(r.describe());
    REQUIRE(r.exited(0)); // (a call into the library unloaded would kill it)
    std::map<std::string, std::string> fields;
    for (std::string const& line : compile_cache_test::lines_of(r.out)) {
        std::size_t const eq = line.find('=');
        if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
    }
    // The program registers none: while the library is loaded, its digests name the program.
    CHECK(fields["registered"].rfind("exe-sha256:", 0) == 0);
    if (fields["unloaded"] != "yes") {
        WARN("the library stayed loaded after dlclose: its digests' withdrawal is not checked");
        return;
    }
    CHECK(fields["after"].rfind("main program:not known, process ", 0) == 0);
}
#endif
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

#if defined(COMPILE_CACHE_CODEGEN_MODULE_A) && defined(COMPILE_CACHE_CODEGEN_MODULE_B)
TEST_CASE("make_key_builder called in a shared library names it: another build of it misses",
          "[build-id]") {
    // Two builds of one code generator, a shared library (a Python extension, a plugin), under one
    // main program and one host version string. The first is loaded as a library the program
    // links to is (global: the second's calls to the inline functions they share go to it).
    compile_cache_test::temp_dir dir;
    void* const a = ::dlopen(COMPILE_CACHE_CODEGEN_MODULE_A, RTLD_NOW | RTLD_GLOBAL);
    void* const b = ::dlopen(COMPILE_CACHE_CODEGEN_MODULE_B, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    using codegen = void (*)(char const*, char*, std::size_t);
    auto const by_a = reinterpret_cast<codegen>(::dlsym(a, "compile_cache_test_codegen"));
    auto const by_b = reinterpret_cast<codegen>(::dlsym(b, "compile_cache_test_codegen"));
    REQUIRE(by_a != nullptr);
    REQUIRE(by_b != nullptr);
    char made[64];
    by_a(dir.path().c_str(), made, sizeof made);
    CHECK(std::string(made) == "codegen A");
    by_b(dir.path().c_str(), made, sizeof made);
    CHECK(std::string(made) == "codegen B"); // (was "codegen A": B loaded what A compiled)
    by_a(dir.path().c_str(), made, sizeof made);
    CHECK(std::string(made) == "codegen A");
    ::dlclose(b);
    ::dlclose(a);

    // Called from the main program, the key is what it was: the main program names the compiler.
    cc::default_cache cache{cc::directory_storage(dir.path().string())};
    CHECK(cache.make_key_builder("codegen 1.0").add("ir", "k").finish().value() ==
          cc::key_builder<>()
              .add("toolchain", cc::toolchain::current("codegen 1.0", cc::default_cache::format_id()))
              .add("ir", "k")
              .finish()
              .value());
}

namespace {
/// A type of the same name as the library's, in this translation unit's unnamed namespace.
struct artifact {
    std::string text;
    template <class Archive>
    void serialize(Archive& ar, unsigned) {
        ar & text;
    }
};
} // namespace

TEST_CASE("an artifact type in an unnamed namespace never loads another one of its name", "[build-id]") {
    // Two translation units (here, the library's and this one) each with a type of their own
    // named `artifact`, stored under one key: each is its own kind of entry.
    compile_cache_test::temp_dir dir;
    void* const a = ::dlopen(COMPILE_CACHE_CODEGEN_MODULE_A, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(a != nullptr);
    auto const store = reinterpret_cast<void (*)(char const*)>(::dlsym(a, "compile_cache_test_codegen_store_artifact"));
    REQUIRE(store != nullptr);
    store(dir.path().c_str());
    cc::default_cache cache{cc::directory_storage(dir.path().string())};
    cc::key_result const k = cc::key_builder<>().add("ir", "k").finish();
    auto const r = cache.get_or_compile<artifact>(k, {}, [] { return artifact{"this program's artifact"}; });
    CHECK(r.value.text == "this program's artifact"); // (was the library's: the same typeid name)
    CHECK(r.outcome == cc::outcome::compiled);
    // Its own entries it loads.
    cc::default_cache again{cc::directory_storage(dir.path().string())};
    CHECK(again.get_or_compile<artifact>(k, {}, [] { return artifact{"compiled again"}; }).value.text ==
          "this program's artifact");
    ::dlclose(a);
}
#endif

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
