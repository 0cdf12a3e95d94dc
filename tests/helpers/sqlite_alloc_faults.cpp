// Opens a sqlite_storage with its Nth allocation failing, for every N, and says whether an exception escaped.
//
// Usage: sqlite_alloc_faults FOLDER
//          For N = 1, 2, ... until an open sees no fault: opens FOLDER/new-N.db (a file
//          to make) and FOLDER/old.db (one made before), the Nth operator new from the
//          open's start throwing std::bad_alloc. Prints `escaped=E opens=O`, E the opens
//          that threw; exits 0 when E is 0.
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

namespace {

bool armed = false;
long countdown = 0;
bool fired = false;

/// Opens `file` with the `nth` allocation failing; whether an exception escaped.
bool escapes(std::string const& file, long nth) {
    compile_cache::sqlite_options options;
    options.logger = [](std::string_view) {};
    std::string path = file; // (the caller's allocation, made before the fault is armed)
    fired = false;
    countdown = nth;
    armed = true;
    try {
        compile_cache::sqlite_storage s(std::move(path), std::move(options));
        armed = false;
        return false;
    } catch (...) {
        armed = false;
        return true;
    }
}

} // namespace

// (Not inlined: GCC would see free() called on what `new` returned, -Wmismatched-new-delete.)
[[gnu::noinline]] void* operator new(std::size_t n) {
    if (armed && --countdown == 0) {
        armed = false;
        fired = true;
        throw std::bad_alloc();
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow form too, so that what it returns is freed by the delete above (a sanitizer's
// own would not match the free).
[[gnu::noinline]] void* operator new(std::size_t n, std::nothrow_t const&) noexcept {
    try {
        return ::operator new(n);
    } catch (...) {
        return nullptr;
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: sqlite_alloc_faults FOLDER\n");
        return 2;
    }
    std::string const folder = argv[1];
    {
        compile_cache::sqlite_storage made(folder + "/old.db");
        if (!made.usable() || made.write(compile_cache::testing::detail::conformance_key(1, 1), "value")) {
            std::printf("cannot make %s/old.db\n", folder.c_str());
            return 1;
        }
    }
    unsigned escaped = 0, opens = 0;
    for (long nth = 1; nth < 100000; ++nth) {
        bool any = false;
        for (std::string const& file : {folder + "/new-" + std::to_string(nth) + ".db", folder + "/old.db"}) {
            ++opens;
            if (escapes(file, nth)) ++escaped;
            any = any || fired;
        }
        if (!any) break;
    }
    std::printf("escaped=%u opens=%u\n", escaped, opens);
    return escaped == 0 ? 0 : 1;
}
