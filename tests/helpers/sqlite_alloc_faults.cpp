// Opens a sqlite_storage with its Nth allocation failing, for every N, and says whether an exception escaped.
//
// Usage: sqlite_alloc_faults FOLDER
//          First opens FOLDER/first.db, the process's first storage, its 2nd allocation
//          failing. For N = 1, 2, ... until an open sees no fault: opens FOLDER/new-N.db (a file
//          to make) and FOLDER/old.db (one made before), the Nth operator new from the
//          open's start throwing std::bad_alloc. Prints `escaped=E opens=O`, E the opens
//          that threw. Then, for every N, a storage of FOLDER/old.db whose file was replaced
//          reopens it in a store with the Nth allocation failing; a read must then find the
//          entry. Prints `escaped=E opens=O stuck=S`, S the storages whose reads then failed;
//          exits 0 when E and S are 0.
#include "support/allocation_faults.hpp"

#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

namespace {

using compile_cache_test::allocation_fault;

/// Opens `file` with the `nth` allocation failing; whether an exception escaped.
bool escapes(std::string const& file, long nth) {
    compile_cache::sqlite_options options;
    options.logger = [](std::string_view) {};
    std::string path = file; // (the caller's allocation, made before the fault is armed)
    allocation_fault fault(nth, false);
    try {
        compile_cache::sqlite_storage s(std::move(path), std::move(options));
        allocation_fault::disarm();
        return false;
    } catch (...) {
        allocation_fault::disarm();
        return true;
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: sqlite_alloc_faults FOLDER\n");
        return 2;
    }
    std::string const folder = argv[1];
    unsigned escaped = 0, opens = 1;
    // This process's first storage, with its second allocation failing (the first makes its
    // state; the second was the registry of storages a fork handles).
    if (escapes(folder + "/first.db", 2)) ++escaped;
    {
        compile_cache::sqlite_storage made(folder + "/old.db");
        if (!made.usable() || made.write(compile_cache::testing::detail::conformance_key(1, 1), "value")) {
            std::printf("cannot make %s/old.db\n", folder.c_str());
            return 1;
        }
    }
    for (long nth = 1; nth < 100000; ++nth) {
        bool any = false;
        for (std::string const& file : {folder + "/new-" + std::to_string(nth) + ".db", folder + "/old.db"}) {
            ++opens;
            if (escapes(file, nth)) ++escaped;
            any = any || allocation_fault::fired();
        }
        if (!any) break;
    }
    unsigned stuck = 0;
    auto const k = compile_cache::testing::detail::conformance_key(1, 1);
    for (long nth = 1; nth < 100000; ++nth) {
        compile_cache::sqlite_options options;
        options.logger = [](std::string_view) {};
        compile_cache::sqlite_storage s(folder + "/old.db", std::move(options));
        std::string out;
        if (s.read(k, out, 1 << 20).status != compile_cache::read_status::found) {
            std::printf("cannot read %s/old.db\n", folder.c_str());
            return 1;
        }
        // Another file put at the path (as a user may): the next store reopens.
        std::filesystem::copy_file(folder + "/old.db", folder + "/copy.db",
                                   std::filesystem::copy_options::overwrite_existing);
        std::filesystem::rename(folder + "/copy.db", folder + "/old.db");
        {
            allocation_fault fault(nth, false);
            (void)s.write(compile_cache::testing::detail::conformance_key(1, 2), "more");
        }
        if (s.read(k, out, 1 << 20).status != compile_cache::read_status::found) ++stuck;
        if (!allocation_fault::fired()) break;
    }
    std::printf("escaped=%u opens=%u stuck=%u\n", escaped, opens, stuck);
    return escaped == 0 && stuck == 0 ? 0 : 1;
}
