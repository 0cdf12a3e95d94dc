// Built by the consumer tests where SQLite3 is found, through the target
// compile_cache::sqlite: the optional SQLite storage compiles, links libsqlite3 and
// keeps a value in the file named on the command line.
//
// Usage: sqlite_consumer FILE   prints "sqlite: kept"; exit 0 when so, 1 otherwise.
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    compile_cache::sqlite_storage storage(argv[1]);
    unsigned char const digest[32] = {1};
    compile_cache::key const k(digest, sizeof digest);
    std::string out;
    bool const kept = !storage.write(k, "bytes") &&
                      storage.read(k, out, 1024).status == compile_cache::read_status::found && out == "bytes";
    std::printf("sqlite: %s\n", kept ? "kept" : "lost");
    return kept ? 0 : 1;
}
