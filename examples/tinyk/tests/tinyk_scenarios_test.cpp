// Issue 3's scenarios, each in fresh processes: every step runs the tinyk binary as a
// child against the scenario's own cache directory, and checks its `-v` lines, its
// result, its exit status and which entry files it wrote or rewrote. Each scenario
// runs on every backend this tinyk has (the VM, and LLVM native code when built in).
// Then issue 13's: every recompile says why (on the VM: the explanation does not
// depend on the backend), verify mode, and the compile-time threshold.
#include "catch2_compat.hpp"

#include "tinyk_support.hpp"

#include <string>
#include <vector>

using namespace tinyk_test;

namespace {

// The seed's program (Kirin PR 769's test): OFFSET = 5, helper returns x * 2, main
// returns helper(x) + OFFSET.
std::string seed_program(std::string const& offset, std::string const& factor) {
    return "global OFFSET = " + offset + ";\n"
           "\n"
           "kernel helper(x) {\n"
           "  return x * " + factor + ";\n"
           "}\n"
           "\n"
           "kernel main(x) {\n"
           "  return helper(x) + OFFSET;\n"
           "}\n";
}

#define REQUIRE_OK(r)                 \
    do {                              \
        INFO((r).describe());         \
        REQUIRE((r).exited(0));       \
    } while (0)

} // namespace

TEST_CASE("tinyk scenario 1: the seed's four runs recompile exactly what changed") {
    scenario s(each_backend());
    INFO("backend: " << s.backend());

    // 1. Empty cache: both compiled (the entries were absent), main(1) == 7.
    s.write_program(seed_program("5", "2"));
    auto before = s.entries();
    auto r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "7\n");
    CHECK(r.compiled() == names{"helper", "main"});
    CHECK(r.reason("helper") == "absent");
    CHECK(r.reason("main") == "absent");
    CHECK(r.loaded().empty());
    auto after = s.entries();
    CHECK(changes(before, after).written == names{"helper", "main"});
    CHECK(after.size() == 2);

    // 2. Nothing changed: nothing compiled, no entry written or rewritten.
    before = after;
    r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "7\n");
    CHECK(r.compiled().empty());
    CHECK(r.loaded() == names{"helper", "main"});
    after = s.entries();
    CHECK(changes(before, after).written.empty());
    CHECK(changes(before, after).removed == 0);

    // 3. helper multiplies by 10: helper changed and main calls it, so both are
    // compiled and stored under new keys; the old entries stay untouched.
    s.write_program(seed_program("5", "10"));
    before = after;
    r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "15\n");
    CHECK(r.compiled() == names{"helper", "main"});
    CHECK(r.loaded().empty());
    after = s.entries();
    CHECK(changes(before, after).written == names{"helper", "main"});
    CHECK(changes(before, after).removed == 0);
    CHECK(after.size() == 4);

    // 4. OFFSET = 7: only main reads it, so only main is compiled.
    s.write_program(seed_program("7", "10"));
    before = after;
    r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "17\n");
    CHECK(r.compiled() == names{"main"});
    CHECK(r.reason("main") == "absent");
    CHECK(r.loaded() == names{"helper"});
    after = s.entries();
    CHECK(changes(before, after).written == names{"main"});
    CHECK(after.size() == 5);
}

TEST_CASE("tinyk scenario 2: lines added above main keep its entry and move its source positions") {
    scenario s(each_backend());
    INFO("backend: " << s.backend());
    // main's own assert fails for x == 13; helper's (inlined into main at -O1) for x >= 100.
    auto program = [](std::string const& above_main) {
        return "global OFFSET = 5;\n"
               "\n"
               "kernel helper(x) {\n"
               "  assert(x < 100);\n"
               "  return x * 2;\n"
               "}\n"
               "\n" +
               above_main +
               "kernel main(x) {\n"
               "  assert(x != 13);\n"
               "  return helper(x) + OFFSET;\n"
               "}\n";
    };
    std::string const before_text = program("");
    std::string const after_text = program("# three lines\n# added above\n# main\n");
    int const main_assert = line_of(before_text, "assert(x != 13)");
    int const helper_assert = line_of(before_text, "assert(x < 100)");
    REQUIRE(line_of(after_text, "assert(x != 13)") == main_assert + 3);
    REQUIRE(line_of(after_text, "assert(x < 100)") == helper_assert);
    std::string const file = s.program().string();

    s.write_program(before_text);
    auto r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "7\n");
    CHECK(r.compiled() == names{"helper", "main"});
    r = s.run({"main", "13"}); // loaded, and the assert reports the line it is on
    CHECK(r.exited(3));
    CHECK(r.loaded() == names{"helper", "main"});
    CHECK(r.err.find(file + ":" + std::to_string(main_assert) + ": assertion failed in main") != std::string::npos);

    s.write_program(after_text);
    auto before = s.entries();
    r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "7\n");
    CHECK(r.compiled().empty());
    CHECK(r.loaded() == names{"helper", "main"});
    CHECK(changes(before, s.entries()).written.empty());

    // A failing assert in the loaded main reports the line main's assert is on now.
    r = s.run({"main", "13"});
    INFO(r.describe());
    CHECK(r.exited(3));
    CHECK(r.out.empty());
    CHECK(r.compiled().empty());
    CHECK(r.err.find(file + ":" + std::to_string(main_assert + 3) + ": assertion failed in main") != std::string::npos);
    // helper did not move: its assert, inlined into main, still reports helper's line.
    r = s.run({"main", "200"});
    CHECK(r.exited(3));
    CHECK(r.compiled().empty());
    CHECK(r.err.find(file + ":" + std::to_string(helper_assert) + ": assertion failed in helper") !=
          std::string::npos);
    CHECK(changes(before, s.entries()).written.empty());
}

TEST_CASE("tinyk scenario 3: recursion and mutual recursion are cached, keyed per component") {
    scenario s(each_backend());
    INFO("backend: " << s.backend());
    auto program = [](std::string const& odd_base) {
        return "kernel fib(n) {\n"
               "  if (n < 2) { return n; }\n"
               "  return fib(n - 1) + fib(n - 2);\n"
               "}\n"
               "\n"
               "kernel even(n) {\n"
               "  if (n == 0) { return 1; }\n"
               "  return odd(n - 1);\n"
               "}\n"
               "\n"
               "kernel odd(n) {\n"
               "  if (n == 0) { return " + odd_base + "; }\n"
               "  return even(n - 1);\n"
               "}\n"
               "\n"
               "kernel main(n) {\n"
               "  return fib(n) * 10 + even(n);\n"
               "}\n";
    };
    s.write_program(program("0"));
    auto r = s.run({"main", "10"});
    REQUIRE_OK(r);
    CHECK(r.out == "551\n"); // fib(10) * 10 + even(10)
    CHECK(r.compiled() == names{"fib", "even", "odd", "main"});
    auto before = s.entries();
    CHECK(changes({}, before).written == names{"even", "fib", "main", "odd"});

    r = s.run({"main", "10"});
    REQUIRE_OK(r);
    CHECK(r.out == "551\n");
    CHECK(r.compiled().empty());
    CHECK(r.loaded() == names{"fib", "even", "odd", "main"});
    r = s.run({"odd", "7"});
    REQUIRE_OK(r);
    CHECK(r.out == "1\n");
    CHECK(r.compiled().empty());
    CHECK(changes(before, s.entries()).written.empty());

    // odd changes: its component (even, odd) and its caller main recompile; fib does not.
    s.write_program(program("5"));
    r = s.run({"main", "10"});
    REQUIRE_OK(r);
    CHECK(r.out == "551\n"); // even(10) ends at even(0) == 1: odd's base case is never reached
    CHECK(r.compiled() == names{"even", "odd", "main"});
    CHECK(r.loaded() == names{"fib"});
    CHECK(changes(before, s.entries()).written == names{"even", "main", "odd"});
    r = s.run({"odd", "7"});
    REQUIRE_OK(r);
    CHECK(r.out == "1\n");
    r = s.run({"even", "7"});
    REQUIRE_OK(r);
    CHECK(r.out == "5\n"); // now reaches odd(0)
    CHECK(r.compiled().empty());
}

TEST_CASE("tinyk scenario 4: adding or removing an unrelated kernel recompiles nothing else") {
    scenario s(each_backend());
    INFO("backend: " << s.backend());
    auto program = [](bool with_unrelated) {
        return std::string("global OFFSET = 5;\n"
                           "\n"
                           "kernel helper(x) {\n"
                           "  return x * 2;\n"
                           "}\n"
                           "\n") +
               (with_unrelated ? "kernel unrelated(x) {\n"
                                 "  var y = x * x;\n"
                                 "  return y - OFFSET;\n"
                                 "}\n"
                                 "\n"
                               : "") +
               "kernel main(x) {\n"
               "  return helper(x) + OFFSET;\n"
               "}\n";
    };
    s.write_program(program(false));
    auto r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.compiled() == names{"helper", "main"});

    s.write_program(program(true));
    auto before = s.entries();
    r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "7\n");
    CHECK(r.compiled() == names{"unrelated"});
    CHECK(r.loaded() == names{"helper", "main"}); // main moved down five lines: relocated, not recompiled
    CHECK(changes(before, s.entries()).written == names{"unrelated"});
    r = s.run({"unrelated", "3"});
    REQUIRE_OK(r);
    CHECK(r.out == "4\n");
    CHECK(r.compiled().empty());

    s.write_program(program(false));
    before = s.entries();
    r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.out == "7\n");
    CHECK(r.compiled().empty());
    CHECK(r.loaded() == names{"helper", "main"});
    CHECK(changes(before, s.entries()).written.empty());
}

TEST_CASE("tinyk scenario 5: a truncated entry is compiled again, and --stats says it was corrupt") {
    for (std::string const& backend : backends()) {
        INFO("backend: " << backend);
        // Cut helper's entry to nothing, to a few bytes, to half, and by its last byte.
        for (int cut : {0, 1, 2, 3}) {
            scenario s(backend);
            s.write_program(seed_program("5", "2"));
            auto r = s.run({"main", "1"});
            REQUIRE_OK(r);
            auto before = s.entries();
            std::string const path = entry_of(before, "helper");
            REQUIRE(!path.empty());
            std::uintmax_t const full = before.at(path).size;
            std::uintmax_t const size = cut == 0 ? 0 : cut == 1 ? 12 : cut == 2 ? full / 2 : full - 1;
            INFO("helper's entry cut from " << full << " to " << size << " bytes");
            fs::resize_file(s.cache_dir() / path, size);
            before = s.entries();

            r = s.run({"main", "1"}, {"--stats"});
            REQUIRE_OK(r);
            CHECK(r.out == "7\n");
            CHECK(r.compiled() == names{"helper"});
            CHECK(r.reason("helper") == "corrupt");
            CHECK(r.loaded() == names{"main"}); // main references helper's key, which did not change
            INFO(r.stats());
            CHECK(r.stats().find(" misses=1 (corrupt=1) ") != std::string::npos);
            CHECK(r.stats().find("hits=1 ") != std::string::npos);
            CHECK(r.stats().find(" stores=1 ") != std::string::npos);
            // The damaged entry, and only it, was rewritten whole.
            auto after = s.entries();
            auto c = changes(before, after);
            CHECK(c.written == names{"helper"});
            CHECK(c.paths == names{path});
            CHECK(after.at(path).size == full);

            r = s.run({"main", "1"});
            REQUIRE_OK(r);
            CHECK(r.compiled().empty());
        }
    }
}

TEST_CASE("tinyk scenario 6: other environments, directories and address-space layouts write no new entries") {
    scenario s(each_backend());
    INFO("backend: " << s.backend());
    std::string const program = "global OFFSET = 5.0;\n"
                                "global SCALE = OFFSET * 2.0;\n"
                                "\n"
                                "kernel helper(x) {\n"
                                "  return x * 2.0;\n"
                                "}\n"
                                "\n"
                                "kernel even(n) {\n"
                                "  if (n <= 0) { return 1; }\n"
                                "  return odd(n - 1);\n"
                                "}\n"
                                "\n"
                                "kernel odd(n) {\n"
                                "  if (n <= 0) { return 0; }\n"
                                "  return even(n - 1);\n"
                                "}\n"
                                "\n"
                                "kernel main(x) {\n"
                                "  var y = helper(x) + OFFSET;\n"
                                "  if (y > 10.0) { y = y - 1.0; } else { y = y + 0.5; }\n"
                                "  var i = 0.0;\n"
                                "  while (i < 3.0) { y = y + i + even(i); i = i + 1.0; }\n"
                                "  assert(y == y);\n"
                                "  return min(y * SCALE / SCALE, sqrt(abs(y)) * 100);\n"
                                "}\n";
    s.write_program(program);
    auto r = s.run({"main", "1"});
    REQUIRE_OK(r);
    std::string const result = r.out;
    CHECK(result == "12.5\n");
    CHECK(r.compiled() == names{"helper", "even", "odd", "main"});
    auto const first = s.entries();
    REQUIRE(first.size() == 4);

    auto same = [&](tinyk_result const& run, char const* what) {
        INFO(what << "\n" << run.describe());
        CHECK(run.exited(0));
        CHECK(run.out == result);
        CHECK(run.compiled().empty());
        CHECK(run.loaded() == names{"helper", "even", "odd", "main"});
        auto c = changes(first, s.entries());
        CHECK(c.written.empty());
        CHECK(c.removed == 0);
    };

    // More and larger environment variables (the stack starts elsewhere), another
    // locale and time zone, and the heap perturbed.
    std::vector<std::string> env = {"TINYK_TEST_PADDING=" + std::string(5000, 'x'), "LANG=C.UTF-8", "TZ=Asia/Tokyo",
                                    "MALLOC_PERTURB_=165", "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096",
                                    "OLDPWD=/nonexistent", "TINYK_UNRELATED=1"};
    same(s.run({"main", "1"}, {}, env), "more environment");

    // Another working directory, with the program given by a relative path.
    {
        tinyk_run t;
        t.args = {"run", "-v", "prog.tk", "--call", "main", "1"};
        t.home = s.home().string();
        t.extra_env = s.environment();
        t.cwd = s.program().parent_path().string();
        same(t(), "relative path from the program's directory");
    }
    same(s.run({"main", "1"}, {}, {}, "/"), "working directory /");

    // Address-space randomisation off (one fixed layout) against the randomised runs above.
    auto setarch = setarch_no_randomization();
    if (setarch.empty()) {
        WARN("setarch -R is not available here (no setarch, or personality(2) refused): "
             "the run without address-space randomisation is skipped");
    } else {
        same(s.run({"main", "1"}, {}, env, "/", setarch), "setarch -R");
        same(s.run({"main", "1"}, {}, {}, {}, setarch), "setarch -R, again");
    }
}

TEST_CASE("tinyk scenario 7: -O0 and -O1 keep separate entries") {
    scenario s(each_backend());
    INFO("backend: " << s.backend());
    s.write_program("global OFFSET = 5.0;\n"
                    "global SCALE = OFFSET * 2.0;\n"
                    "\n"
                    "kernel helper(x) {\n"
                    "  return x * 2.0;\n"
                    "}\n"
                    "\n"
                    "kernel main(x) {\n"
                    "  var y = helper(x) + OFFSET;\n"
                    "  if (y > 10.0) { y = y - 1.0; } else { y = y + 0.5; }\n"
                    "  var i = 0.0;\n"
                    "  while (i < 3.0) { y = y + i; i = i + 1.0; }\n"
                    "  assert(y == y);\n"
                    "  return y * SCALE / SCALE;\n"
                    "}\n");
    auto r = s.run({"main", "1"}, {"-O1"});
    REQUIRE_OK(r);
    CHECK(r.out == "10.5\n");
    CHECK(r.compiled() == names{"helper", "main"});
    auto o1 = s.entries();
    CHECK(o1.size() == 2);

    r = s.run({"main", "1"}, {"-O0"});
    REQUIRE_OK(r);
    CHECK(r.out == "10.5\n");
    CHECK(r.compiled() == names{"helper", "main"});
    CHECK(r.reason("main") == "absent");
    auto both = s.entries();
    CHECK(changes(o1, both).written == names{"helper", "main"});
    CHECK(both.size() == 4);

    for (char const* level : {"-O1", "-O0", "-O1"}) {
        INFO(level);
        r = s.run({"main", "1"}, {level});
        REQUIRE_OK(r);
        CHECK(r.out == "10.5\n");
        CHECK(r.compiled().empty());
        CHECK(r.loaded() == names{"helper", "main"});
    }
    // The default is -O1: it loads -O1's entries.
    r = s.run({"main", "1"});
    CHECK(r.compiled().empty());
    CHECK(changes(both, s.entries()).written.empty());
}

namespace {

// Issue 13: every recompile says why (`tinyk: compiled NAME (absent: WHAT CHANGED)`).
// The seed's program and a second caller of helper.
std::string explain_program(std::string const& offset, std::string const& factor) {
    return seed_program(offset, factor) + "\nkernel twice(x) {\n  return helper(helper(x));\n}\n";
}

} // namespace

TEST_CASE("tinyk explain: each recompile names the key components that changed") {
    scenario s("vm");
    s.write_program(explain_program("5", "2"));
    auto r = s.run({"main", "1"});
    REQUIRE_OK(r);
    CHECK(r.compiled() == names{"helper", "main", "twice"});
    CHECK(r.explanation("helper") == "new");
    CHECK(r.explanation("main") == "new");

    SECTION("a changed helper: ir for the helper, callee:helper for each caller") {
        s.write_program(explain_program("5", "3"));
        r = s.run({"main", "1"});
        REQUIRE_OK(r);
        CHECK(r.out == "8\n");
        CHECK(r.reason("helper") == "absent");
        CHECK(r.explanation("helper") == "ir changed");
        CHECK(r.explanation("main") == "callee:helper changed");
        CHECK(r.explanation("twice") == "callee:helper changed");
    }
    SECTION("a changed global: const:NAME, and only for the kernel that reads it") {
        s.write_program(explain_program("6", "2"));
        r = s.run({"main", "1"});
        REQUIRE_OK(r);
        CHECK(r.out == "8\n");
        CHECK(r.compiled() == names{"main"});
        CHECK(r.explanation("main") == "ir, const:OFFSET changed");
    }
    SECTION("another optimization level: options") {
        r = s.run({"main", "1"}, {"-O0"});
        REQUIRE_OK(r);
        CHECK(r.explanation("helper") == "pipeline, options changed");
        CHECK(r.explanation("main") == "callee:helper, pipeline, options changed");
    }
    SECTION("the library's own line with TINYK_CACHE_LOG=1") {
        s.write_program(explain_program("5", "3"));
        r = s.run({"main", "1"}, {}, {"TINYK_CACHE_LOG=1"});
        REQUIRE_OK(r);
        std::vector<std::string> lines;
        for (auto const& l : r.other_err)
            if (l.rfind("compile_cache: miss ", 0) == 0) lines.push_back(l);
        CHECK(lines == std::vector<std::string>{
                           "compile_cache: miss helper (absent): changed ir; unchanged toolchain, kernel, dialects, "
                           "pipeline, options, file, backend",
                           "compile_cache: miss main (absent): changed callee:helper; unchanged toolchain, kernel, ir, "
                           "const:OFFSET, dialects, pipeline, options, file, backend",
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
    s.write_program(explain_program("5", "2"));
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
    cheap.write_program(explain_program("5", "2"));
    for (int run = 0; run < 2; ++run) {
        r = cheap.run({"main", "1"}, {"--stats"}, {"TINYK_CACHE_MIN_COMPILE_TIME=60000"});
        REQUIRE_OK(r);
        CHECK(r.compiled() == names{"helper", "main", "twice"});
        CHECK(r.stats().find(" store-skipped-cheap=3 ") != std::string::npos);
    }
    CHECK(cheap.entries().empty());
}
