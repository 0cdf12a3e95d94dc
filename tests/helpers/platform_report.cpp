// Prints, as one line of `name=value` fields, what this build of the library runs on
// and with: the platform the key's toolchain component names, the SHA-256 and CRC-32C
// implementations chosen in this process (COMPILE_CACHE_SHA256 and
// COMPILE_CACHE_CRC32C apply), and what identifies the host program in the key
// (build-id, exe-sha256, or none). For scripts/test_arm64.sh, which runs it natively
// and under emulation and checks what it prints.
//
// With `--ids`: instead, four lines `exe=`, `build-id=`, `file-id=` and `key-host-id=`:
// its executable's path (from /proc/self/exe; empty without one), its own GNU build-id,
// the SHA-256 identity of its executable, and what the key's toolchain component holds
// (for key_test.cpp, which checks them against the file: a small program hashes in a
// fraction of the time the test program takes under sanitizers).
#include <compile_cache/detail/build_id.hpp>
#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/key/detail/executable_digest.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char** argv) {
    namespace cc = compile_cache;
    cc::toolchain const t = cc::toolchain::current();
    if (argc > 1 && std::strcmp(argv[1], "--ids") == 0) {
        std::error_code ec;
        std::string const exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
        std::printf("exe=%s\nbuild-id=%s\nfile-id=%s\nkey-host-id=%s\n", exe.c_str(),
                    cc::detail::main_program_build_id().c_str(),
                    cc::detail::main_program_file_id().c_str(), t.host_build_id.c_str());
        return 0;
    }
    std::string host_id = "none";
    if (t.host_build_id.rfind("exe-sha256:", 0) == 0)
        host_id = "exe-sha256";
    else if (!t.host_build_id.empty())
        host_id = "build-id";
    std::printf("platform=%s sha256=%s crc32c=%s host-id=%s\n", t.platform.c_str(),
                cc::to_string(cc::sha256_implementation()), cc::to_string(cc::crc32c_implementation()),
                host_id.c_str());
    return 0;
}
