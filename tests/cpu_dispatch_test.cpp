// Specification of the CPU-dispatched functions (SHA-256's block function, CRC-32C), one
// conformance test instantiated per function: the portable implementation is always
// there and can be forced, the automatic choice is the fastest this CPU runs, and an
// implementation the CPU lacks is refused. What each finds in /proc/cpuinfo is in
// hasher_test.cpp and crc32c_test.cpp.
#include "catch2_compat.hpp"
#include "support/cpu_backends.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"

#include <compile_cache/detail/crc32c.hpp>
#include <compile_cache/hasher/sha256.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

namespace {

std::string quoted(std::string const& s) { return "'" + s + "'"; }

} // namespace

TEMPLATE_TEST_CASE("a CPU-dispatched function has the portable implementation everywhere, forced by its setting",
                   "[cpu-dispatch]", compile_cache::sha256_backend, compile_cache::crc32c_backend) {
    using dispatch = compile_cache_test::cpu_dispatch<TestType>;
    auto const available = compile_cache_test::available_backends<TestType>();
    REQUIRE(!available.empty());
    CHECK(available.front() == TestType::portable); // always there
    CHECK(dispatch::choose("portable") == TestType::portable);
}

TEMPLATE_TEST_CASE("a CPU-dispatched function takes the fastest implementation this CPU runs unless told otherwise",
                   "[cpu-dispatch]", compile_cache::sha256_backend, compile_cache::crc32c_backend) {
    using dispatch = compile_cache_test::cpu_dispatch<TestType>;
    auto const available = compile_cache_test::available_backends<TestType>();
    REQUIRE(!available.empty());
    CHECK(dispatch::choose(nullptr) == available.back());
    CHECK(dispatch::choose("") == available.back());
    CHECK(dispatch::choose("auto") == available.back());
    // The process's choice is one of the available ones, and stays until set.
    auto const now = dispatch::current();
    CHECK(dispatch::available(now));
    CHECK(dispatch::current() == now);
}

TEMPLATE_TEST_CASE("a CPU-dispatched function's setting names any implementation this CPU runs, and no other",
                   "[cpu-dispatch]", compile_cache::sha256_backend, compile_cache::crc32c_backend) {
    using dispatch = compile_cache_test::cpu_dispatch<TestType>;
    auto const fastest = compile_cache_test::available_backends<TestType>().back();
    for (auto b : dispatch::all) {
        INFO("backend " << compile_cache::to_string(b));
        bool not_understood = dispatch::available(b); // (the opposite of what choose must say)
        TestType const chosen = dispatch::choose(compile_cache::to_string(b), &not_understood);
        if (dispatch::available(b)) { // named by to_string's name: that one
            CHECK(chosen == b);
            CHECK_FALSE(not_understood);
        } else { // one this CPU lacks (or this build leaves out): the fastest, and one line
            CHECK(chosen == fastest);
            CHECK(not_understood);
        }
    }
    bool not_understood = false;
    CHECK(dispatch::choose("x86", &not_understood) == fastest);
    CHECK(not_understood);
}

TEMPLATE_TEST_CASE("a CPU-dispatched function refuses an implementation this CPU lacks and keeps its choice",
                   "[cpu-dispatch]", compile_cache::sha256_backend, compile_cache::crc32c_backend) {
    using dispatch = compile_cache_test::cpu_dispatch<TestType>;
    auto const before = dispatch::current();
    for (auto b : dispatch::all) {
        if (dispatch::available(b)) continue;
        INFO("backend " << compile_cache::to_string(b));
        CHECK(!dispatch::set(b));
        CHECK(dispatch::current() == before);
    }
}

// The switches COMPILE_CACHE_SHA256 and COMPILE_CACHE_CRC32C, read once per process:
// in a fresh process (the helper of cache_test.cpp).
#ifdef COMPILE_CACHE_HELPER_cache_fresh_process_helper
TEST_CASE("a process-wide switch with a value it does not know is one line each, and the fastest code",
          "[cpu-dispatch][configuration]") {
    compile_cache_test::temp_dir dir;
    std::filesystem::path const root = dir.path() / "cache";
    std::filesystem::path const err = dir.path() / "stderr.txt";
    std::string const helper = COMPILE_CACHE_HELPER_cache_fresh_process_helper;
    compile_cache_test::process_result const r =
        compile_cache_test::run_shell("CCFRESH_LOG= COMPILE_CACHE_SHA256=sha-ni COMPILE_CACHE_CRC32C=fast " +
                                      quoted(helper) + " store " + quoted(root.string()) + " 2>" + quoted(err.string()));
    INFO(r.out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("enabled=1 outcome=compiled") != std::string::npos);
    std::string const printed = compile_cache_test::read_file(err);
    // The names this CPU runs, fastest first: what the line offers instead (the reverse of
    // support/cpu_backends.hpp's `all` order, which lists them slowest first).
    auto const names = [](auto backends) {
        std::string out;
        for (auto it = backends.rbegin(); it != backends.rend(); ++it)
            out += (out.empty() ? "" : ", ") + std::string(compile_cache::to_string(*it));
        return out;
    };
    std::string const sha256_names = names(compile_cache_test::available_backends<compile_cache::sha256_backend>());
    std::string const crc32c_names = names(compile_cache_test::available_backends<compile_cache::crc32c_backend>());
    CHECK(printed.find("compile_cache: COMPILE_CACHE_SHA256=\"sha-ni\" is not understood (auto, or one this CPU runs: " +
                       sha256_names + "); using the fastest implementation this CPU runs\n") != std::string::npos);
    CHECK(printed.find("compile_cache: COMPILE_CACHE_CRC32C=\"fast\" is not understood (auto, or one this CPU runs: " +
                       crc32c_names + "); using the fastest implementation this CPU runs\n") != std::string::npos);
    CHECK(std::count(printed.begin(), printed.end(), '\n') == 2);

    // The same digests as any other choice: the next process, with no switch, loads it.
    compile_cache_test::process_result const next =
        compile_cache_test::run_shell("CCFRESH_LOG= " + quoted(helper) + " load " + quoted(root.string()));
    CHECK(next.out.find("outcome=loaded") != std::string::npos);
}
#endif
