// Built by the consumer tests where hiredis is found, through the target
// compile_cache::redis: the optional Redis storage compiles, links hiredis and runs.
// It asks a Unix socket that does not exist, so it needs no server: the read must
// fail as `refused`, within the command timeout, without throwing.
//
// Usage: redis_consumer   prints "redis: refused"; exit 0 when so, 1 otherwise.
#include <compile_cache/storage/redis/redis_storage.hpp>

#include <cstdio>
#include <string>

int main() {
    compile_cache::redis_options options;
    options.url = "unix:///nonexistent/compile_cache_consumer.sock";
    compile_cache::redis_storage storage(options);
    unsigned char const digest[32] = {1};
    std::string out;
    compile_cache::read_result const r = storage.read(compile_cache::key(digest, sizeof digest), out, 1024);
    bool const refused = r.status == compile_cache::read_status::error && r.error == compile_cache::redis_errc::refused;
    std::printf("redis: %s\n", refused ? "refused" : r.error.message().c_str());
    return refused ? 0 : 1;
}
