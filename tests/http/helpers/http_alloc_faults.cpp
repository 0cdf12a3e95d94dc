// Calls each member of an http_storage with every allocation failing, in a process whose first HTTP error it is.
//
// Usage: http_alloc_faults
//          Makes an http_storage of http://127.0.0.1:9/ (nothing is sent: each call fails
//          at its first allocation), then, with every operator new throwing std::bad_alloc,
//          calls read, read_many, write, write_many, remove and list, each of which answers
//          an error of http_category() (http_errc::other), the process's first: none may throw
//          or end the process. Prints one line per call, `CALL ERROR-VALUE`, then `done`;
//          exits 0 when every call answered http_errc::other.
#include "support/allocation_faults.hpp"

#include <compile_cache/storage/http/http_storage.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>
#include <vector>

int main() {
    namespace cc = compile_cache;
    cc::http_storage s(std::string("http://127.0.0.1:9/"));
    unsigned char const bytes[32] = {1, 2, 3};
    cc::key const k(bytes, sizeof bytes);
    std::vector<cc::key> const keys{k};
    std::vector<std::pair<cc::key, std::string_view>> const entries{{k, "entry"}};
    std::string out;
    std::vector<std::pair<cc::read_result, std::string>> read_out;
    std::vector<cc::stored_entry> listed;
    std::error_code errors[6];
    std::vector<std::error_code> write_out;
    write_out.reserve(1); // (write_many assigns into it)
    read_out.reserve(1);
    compile_cache_test::allocation_fault every(1, true); // from here, every allocation fails
    errors[0] = s.read(k, out, 100).error;
    s.read_many(keys, 100, read_out);
    errors[1] = read_out.empty() ? cc::make_error_code(cc::http_errc::other) : read_out[0].first.error;
    errors[2] = s.write(k, "entry");
    s.write_many(entries, write_out);
    errors[3] = write_out.empty() ? cc::make_error_code(cc::http_errc::other) : write_out[0];
    errors[4] = s.remove(k);
    errors[5] = s.list(listed);
    compile_cache_test::allocation_fault::disarm();
    char const* const names[] = {"read", "read_many", "write", "write_many", "remove", "list"};
    bool all = true;
    for (int i = 0; i < 6; ++i) {
        std::printf("%s %d\n", names[i], errors[i].value());
        all = all && errors[i] == cc::http_errc::other;
    }
    std::printf("done\n");
    return all ? 0 : 1;
}
