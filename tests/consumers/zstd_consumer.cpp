// Built by the consumer tests where libzstd is found, through the target
// compile_cache::zstd: the optional zstd compression compiles, links libzstd and runs.
// A payload that compresses goes through zstd_compression and back, byte for byte.
//
// Usage: zstd_consumer   prints "zstd: round trip"; exit 0 when so, 1 otherwise.
#include <compile_cache/compression/zstd.hpp>

#include <cstdio>
#include <string>

int main() {
    std::string payload;
    for (int i = 0; i < 200; ++i) payload += "add r" + std::to_string(i % 8) + ", r1\n";
    std::string frame;
    bool ok = compile_cache::zstd_compression::compress(payload, compile_cache::zstd_compression::default_level, frame) &&
              frame.size() < payload.size();
    std::string back(payload.size(), '\0');
    ok = ok && compile_cache::zstd_compression::decompress(frame, back.data(), back.size()) && back == payload;
    std::printf("zstd: %s\n", ok ? "round trip" : "failed");
    return ok ? 0 : 1;
}
