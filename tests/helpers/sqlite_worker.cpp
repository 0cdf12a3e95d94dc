// A process that works on a sqlite_storage, for sqlite_storage_test.cpp: many of
// them at once, or killed in the middle of a write.
//
// Usage: sqlite_worker mixed FILE ID OPS
//          OPS operations, in turn: write a shared key, write a key of its own, read
//          the shared key, read its own key back, remove it. Every value read must be
//          a whole value some worker wrote. Prints `ok writes=N reads=N errors=N torn=N`;
//          exits 0 only with no error and no torn value.
//        sqlite_worker forever FILE ID
//          Writes values of up to 20 KB under 16 keys of its own until it is killed; prints
//          `started` once it has written one.
//        sqlite_worker hold-lock FILE ID
//          Takes the database's write lock (BEGIN IMMEDIATE) through SQLite itself, prints
//          `locked`, and keeps it until killed: a writer stopped in its transaction.
//        sqlite_worker hold-open FILE ID
//          Opens the file through a storage and stores under (21, ID), prints `open`, then
//          waits for SIGUSR1 with its connection open; then stores "after" under
//          (21, ID + 1000) and prints `stored` or `failed: WHY`, and exits 0 when stored.
#include <compile_cache/storage/sqlite/sqlite_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <signal.h>
#include <unistd.h>

namespace {

namespace cc = compile_cache;
using cc::testing::detail::conformance_key;
using cc::testing::detail::conformance_value;
using cc::testing::detail::is_conformance_value;

int usage() {
    std::fprintf(stderr, "usage: sqlite_worker mixed FILE ID OPS | sqlite_worker forever FILE ID |\n"
                         "       sqlite_worker hold-lock FILE ID | sqlite_worker hold-open FILE ID\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 4) return usage();
    std::string const mode = argv[1];
    std::string const file = argv[2];
    auto const id = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
    if (mode == "hold-lock") {
        sqlite3* db = nullptr;
        if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK ||
            sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
            std::printf("failed %s\n", db ? sqlite3_errmsg(db) : "cannot open");
            return 1;
        }
        std::printf("locked\n");
        std::fflush(stdout);
        for (;;) ::pause();
    }
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    if (mode == "hold-open") sigprocmask(SIG_BLOCK, &usr1, nullptr); // (before the parent may send it)
    cc::sqlite_options options;
    options.busy_timeout = std::chrono::milliseconds(10000);
    cc::sqlite_storage storage(file, options);
    if (!storage.usable()) {
        std::printf("unusable %s\n", storage.why_unusable().c_str());
        return 1;
    }
    if (mode == "mixed" && argc == 5) {
        unsigned long const ops = std::strtoul(argv[4], nullptr, 10);
        unsigned long writes = 0, reads = 0, errors = 0, torn = 0;
        cc::key const shared = conformance_key(9, 0);
        std::string out;
        for (unsigned long i = 0; i < ops; ++i) {
            auto const seq = static_cast<std::uint32_t>(i);
            auto const round = static_cast<std::uint32_t>(i / 5);
            cc::key const own = conformance_key(9, 1 + id * 100000u + round % 50u);
            switch (i % 5) {
            case 0:
                ++writes;
                if (storage.write(shared, conformance_value(id, seq))) ++errors;
                break;
            case 1:
                ++writes;
                if (storage.write(own, conformance_value(id, round))) ++errors;
                break;
            case 2: {
                ++reads;
                auto const r = storage.read(shared, out, 1 << 20);
                if (r.status == cc::read_status::error) ++errors;
                if (r.status == cc::read_status::found && !is_conformance_value(out)) ++torn;
                break;
            }
            case 3: {
                ++reads;
                auto const r = storage.read(own, out, 1 << 20);
                // Written one step before by this process alone: found, and exactly that.
                if (r.status != cc::read_status::found || out != conformance_value(id, round)) ++torn;
                break;
            }
            default:
                if (storage.remove(own)) ++errors;
                break;
            }
        }
        std::printf("ok writes=%lu reads=%lu errors=%lu torn=%lu\n", writes, reads, errors, torn);
        return errors == 0 && torn == 0 ? 0 : 1;
    }
    if (mode == "hold-open") {
        if (std::error_code const ec = storage.write(conformance_key(21, id), "before")) {
            std::printf("failed: %s\n", ec.message().c_str());
            return 1;
        }
        std::printf("open\n");
        std::fflush(stdout);
        int signal = 0;
        sigwait(&usr1, &signal);
        std::error_code const ec = storage.write(conformance_key(21, id + 1000), "after");
        if (ec)
            std::printf("failed: %s\n", ec.message().c_str());
        else
            std::printf("stored\n");
        return ec ? 1 : 0;
    }
    if (mode == "forever") {
        for (std::uint32_t i = 0;; ++i) {
            // Values of 24 bytes to 20 KB: many span several pages of the database.
            storage.write(conformance_key(10, id * 16u + i % 16u), conformance_value(id, i));
            if (i == 0) {
                std::printf("started\n");
                std::fflush(stdout);
            }
        }
    }
    return usage();
}
