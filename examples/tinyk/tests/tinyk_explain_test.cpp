// Issue 13's scenarios, in fresh processes: every recompile says why. Each step runs
// tinyk -v and reads its `tinyk: compiled NAME (absent: WHAT CHANGED)` lines; one step
// reads the library's own line (TINYK_CACHE_LOG=1), and one runs a tinyk relinked with
// another build-id. On the VM backend: the explanation does not depend on it.
#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include "tinyk_support.hpp"

#include <string>
#include <vector>

using namespace tinyk_test;

namespace {

std::string program(std::string const& k, std::string const& factor) {
    return "global K = " + k + ";\n"
           "\n"
           "kernel helper(x) {\n"
           "  return x * " + factor + ";\n"
           "}\n"
           "\n"
           "kernel main(x) {\n"
           "  return helper(x) + K;\n"
           "}\n"
           "\n"
           "kernel twice(x) {\n"
           "  return helper(helper(x));\n"
           "}\n";
}

#define REQUIRE_OK(r)           \
    do {                        \
        INFO((r).describe());   \
        REQUIRE((r).exited(0)); \
    } while (0)

} // namespace

TEST_CASE("tinyk explain: each recompile names the key components that changed") {
    scenario s("vm");
    s.write_program(program("5", "2"));
    auto r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.compiled() == names{"helper", "main", "twice"});
    CHECK(r.explanation("helper") == "new");
    CHECK(r.explanation("main") == "new");

    SECTION("a changed helper: ir for the helper, callee:helper for each caller") {
        s.write_program(program("5", "3"));
        r = s.run({"main", "1"});
        REQUIRE_OK(r);
        CHECK(r.out == "8\n");
        CHECK(r.reason("helper") == "absent");
        CHECK(r.explanation("helper") == "ir changed");
        CHECK(r.explanation("main") == "callee:helper changed");
        CHECK(r.explanation("twice") == "callee:helper changed");
    }
    SECTION("a changed global: const:NAME, and only for the kernel that reads it") {
        s.write_program(program("6", "2"));
        r = s.run({"main", "1"});
        REQUIRE_OK(r);
        CHECK(r.out == "8\n");
        CHECK(r.compiled() == names{"main"});
        CHECK(r.explanation("main") == "ir, const:K changed");
    }
    SECTION("another optimization level: options") {
        r = s.run({"main", "1"}, {"-O0"});
        REQUIRE_OK(r);
        CHECK(r.explanation("helper") == "pipeline, options changed");
        CHECK(r.explanation("main") == "callee:helper, pipeline, options changed");
    }
    SECTION("the library's own line with TINYK_CACHE_LOG=1") {
        s.write_program(program("5", "3"));
        r = s.run({"main", "1"}, {}, {"TINYK_CACHE_LOG=1"});
        REQUIRE_OK(r);
        std::vector<std::string> lines;
        for (auto const& l : r.other_err)
            if (l.rfind("compile_cache: miss ", 0) == 0) lines.push_back(l);
        CHECK(lines == std::vector<std::string>{
                           "compile_cache: miss helper (absent): changed ir; unchanged toolchain, kernel, dialects, "
                           "pipeline, options, file, backend",
                           "compile_cache: miss main (absent): changed callee:helper; unchanged toolchain, kernel, ir, "
                           "const:K, dialects, pipeline, options, file, backend",
                           "compile_cache: miss twice (absent): changed callee:helper; unchanged toolchain, kernel, "
                           "ir, dialects, pipeline, options, file, backend"});
    }
    SECTION("an entry removed from the directory: evicted, not new") {
        auto const entries = s.entries();
        std::string const main_entry = entry_of(entries, "main");
        REQUIRE(!main_entry.empty());
        fs::remove(s.cache_dir() / main_entry);
        r = s.run({"main", "1"});
        REQUIRE_OK(r);
        CHECK(r.compiled() == names{"main"});
        CHECK(r.explanation("main") == "evicted");
    }
#ifdef TINYK_RELINKED_EXECUTABLE
    SECTION("tinyk rebuilt with another flag: toolchain: host build-id") {
        r = s.run({"main", "1"}, {}, {}, {}, {}, TINYK_RELINKED_EXECUTABLE);
        REQUIRE_OK(r);
        CHECK(r.compiled() == names{"helper", "main", "twice"});
        CHECK(r.explanation("helper") == "toolchain: host build-id changed");
        CHECK(r.explanation("main") == "toolchain: host build-id, callee:helper changed");
    }
#endif
}

TEST_CASE("tinyk explain: TINYK_CACHE_VERIFY=1 compiles every hit again, and tinyk's keys are sound") {
    scenario s("vm");
    s.write_program(program("5", "2"));
    REQUIRE_OK(s.run({"main", "1"}));
    auto r = s.run({"main", "1"}, {"--stats"}, {"TINYK_CACHE_VERIFY=1"});
    REQUIRE_OK(r);
    CHECK(r.out == "7\n");
    CHECK(r.loaded() == names{"helper", "main", "twice"});
    INFO(r.stats());
    CHECK(r.stats().find(" verify=(verified 3 unsound 0 nondeterministic 0) ") != std::string::npos);

    // TINYK_CACHE_MIN_COMPILE_TIME: tinyk's kernels compile in well under a minute,
    // so none is stored, and every run compiles them.
    scenario cheap("vm");
    cheap.write_program(program("5", "2"));
    for (int run = 0; run < 2; ++run) {
        r = cheap.run({"main", "1"}, {"--stats"}, {"TINYK_CACHE_MIN_COMPILE_TIME=60000"});
        REQUIRE_OK(r);
        CHECK(r.compiled() == names{"helper", "main", "twice"});
        CHECK(r.stats().find(" store-skipped-cheap=3 ") != std::string::npos);
    }
    CHECK(cheap.entries().empty());
}
