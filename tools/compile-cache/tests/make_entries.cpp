// make_entries DIR COUNT [NAME]: writes COUNT real entries into the cache directory
// DIR through directory_storage and the library's envelope, for the tool's tests that
// need more entries than tinyk runs make quickly (the progress line's 10,001) or a
// kernel name no tinyk program can have. Entry i has key sha256("entry i"), kernel
// name NAME (default "kernel_i"), origin "generated.tk" line i, and one component.
#include <compile_cache/envelope.hpp>
#include <compile_cache/hasher/sha256.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
        std::fprintf(stderr, "usage: make_entries DIR COUNT [NAME]\n");
        return 2;
    }
    compile_cache::directory_storage storage(argv[1]);
    long const count = std::strtol(argv[2], nullptr, 10);
    std::string bytes;
    for (long i = 0; i < count; ++i) {
        std::string const id = "entry " + std::to_string(i);
        compile_cache::key const k(compile_cache::sha256_digest(id.data(), id.size()));
        compile_cache::entry_metadata m;
        m.name = argc == 4 ? std::string(argv[3]) : "kernel_" + std::to_string(i);
        m.origin_file = "generated.tk";
        m.origin_line = i + 1;
        m.format_id = "make_entries";
        m.created_ns = 1;
        m.compile_ns = 1000;
        m.components.push_back({"id", k});
        std::size_t const length_at = compile_cache::begin_envelope(bytes, k, m);
        bytes += "payload of " + id;
        compile_cache::seal_envelope(bytes, length_at);
        if (std::error_code const ec = storage.write(k, bytes)) {
            std::fprintf(stderr, "make_entries: cannot write entry %ld: %s\n", i, ec.message().c_str());
            return 1;
        }
    }
    return 0;
}
