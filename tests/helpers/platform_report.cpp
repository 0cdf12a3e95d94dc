// Prints, as one line of `name=value` fields, what this build of the library runs on
// and with: the platform the key's toolchain component names, the SHA-256 and CRC-32C
// implementations chosen in this process (COMPILE_CACHE_SHA256 and
// COMPILE_CACHE_CRC32C apply), and what identifies the host program in the key
// (build-id, exe-sha256, or none). For scripts/test_arm64.sh, which runs it natively
// and under emulation and checks what it prints.
#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/key/toolchain.hpp>

#include <cstdio>
#include <string>

int main() {
    namespace cc = compile_cache;
    cc::toolchain const t = cc::toolchain::current();
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
