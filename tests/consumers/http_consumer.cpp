// Built by the consumer tests where libcurl is found, through the target
// compile_cache::http: the optional HTTP storage compiles, links libcurl and runs.
// It asks a port of 127.0.0.1 where nothing listens (port 1), so it needs no server:
// the read must fail as `refused`, within the timeouts, without throwing.
//
// Usage: http_consumer   prints "http: refused"; exit 0 when so, 1 otherwise.
#include <compile_cache/storage/http/http_storage.hpp>

#include <cstdio>
#include <string>

int main() {
    compile_cache::http_storage storage("http://127.0.0.1:1/compile_cache_consumer/");
    unsigned char const digest[32] = {1};
    std::string out;
    compile_cache::read_result const r = storage.read(compile_cache::key(digest, sizeof digest), out, 1024);
    bool const refused = r.status == compile_cache::read_status::error && r.error == compile_cache::http_errc::refused;
    std::printf("http: %s\n", refused ? "refused" : r.error.message().c_str());
    return refused ? 0 : 1;
}
