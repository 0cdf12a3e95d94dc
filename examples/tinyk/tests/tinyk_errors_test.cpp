// tinyk's error paths and its opt-in cache, in fresh processes: errors in the
// program (exit 2, FILE:LINE:COL), failed asserts (exit 3, FILE:LINE), no cache
// directory (nothing written anywhere), and --help listing what the library reads.
#include "catch2_compat.hpp"

#include "tinyk_support.hpp"

#include <string>
#include <vector>

using namespace tinyk_test;

TEST_CASE("tinyk errors: a syntax error is FILE:LINE:COL on stderr, exit 2, and nothing cached") {
    scenario s;
    s.write_program("global OFFSET = 5;\n"
                    "\n"
                    "kernel main(x) {\n"
                    "  var y = x * ;\n"
                    "  return y;\n"
                    "}\n");
    auto r = s.run({"main", "1"});
    INFO(r.describe());
    CHECK(r.exited(2));
    CHECK(r.out.empty());
    CHECK(r.lines.empty());
    // `;` is where an expression was expected: line 4, column 15.
    CHECK(r.err.rfind(s.program().string() + ":4:15: error: ", 0) == 0);
    CHECK(list_entries(s.cache_dir()).empty());
}

TEST_CASE("tinyk errors: every error in a program is FILE:LINE:COL with exit 2") {
    struct bad {
        char const* text;
        char const* where; // LINE:COL
        char const* says;
    };
    bad const cases[] = {
        {"kernel main(x) {\n  return x + z;\n}\n", "2:14", "unknown name 'z'"},
        {"kernel helper(a, b) { return a + b; }\nkernel main(x) {\n  return helper(x);\n}\n", "3:10",
         "wrong number of arguments"},
        {"kernel main(x) { return x; }\n\nkernel main(y) { return y; }\n", "3:1", "duplicate kernel 'main'"},
        {"global A = 1;\nglobal A = 2;\nkernel main(x) { return x + A; }\n", "2:8", "duplicate global 'A'"},
        {"kernel main(x) {\n  if (x > 0) { return 1; }\n}\n", "3:1", "missing return"},
    };
    for (auto const& c : cases) {
        scenario s;
        s.write_program(c.text);
        auto r = s.run({"main", "1"});
        INFO(c.text << r.describe());
        CHECK(r.exited(2));
        CHECK(r.out.empty());
        CHECK(r.err.rfind(s.program().string() + ":" + c.where + ": error: ", 0) == 0);
        CHECK(r.err.find(c.says) != std::string::npos);
        CHECK(list_entries(s.cache_dir()).empty());
    }
}

TEST_CASE("tinyk errors: a failed assert is FILE:LINE and exit 3, cold and warm") {
    scenario s(each_backend());
    INFO("backend: " << s.backend());
    s.write_program("# main(x) fails its assert when x is negative\n"
                    "kernel check_positive(x) {\n"
                    "  assert(x >= 0);\n"
                    "  return x;\n"
                    "}\n"
                    "\n"
                    "kernel main(x) {\n"
                    "  var y = check_positive(x) + 1;\n"
                    "  assert(y > 0.5);\n"
                    "  return sqrt(y);\n"
                    "}\n");
    for (char const* level : {"-O1", "-O0"}) {
        for (int run = 0; run < 2; ++run) { // compiled, then loaded
            INFO(level << (run ? " warm" : " cold"));
            auto r = s.run({"main", "-2"}, {level});
            INFO(r.describe());
            CHECK(r.exited(3));
            CHECK(r.out.empty());
            CHECK(r.err.find(s.program().string() + ":3: assertion failed in check_positive\n") != std::string::npos);
            CHECK((run ? r.loaded() : r.compiled()) == names{"check_positive", "main"});
            auto ok = s.run({"main", "1"}, {level});
            CHECK(ok.exited(0));
            CHECK(ok.out == "1.4142135623730951\n");
        }
    }
}

TEST_CASE("tinyk errors: command line mistakes exit 2") {
    scenario s;
    s.write_program("kernel main(x) { return x; }\n");
    std::string const file = s.program().string();
    std::vector<std::vector<std::string>> bad = {
        {"run", file},                               // no --call
        {"run", file, "--call"},                     // no kernel name
        {"run", file, "--call", "main", "one"},      // not a number
        {"run", file, "--call", "main"},             // too few arguments
        {"run", file, "--call", "nope", "1"},        // no such kernel
        {"run", "--bogus", file, "--call", "main", "1"},
        {"run", (s.root() / "missing.tk").string(), "--call", "main", "1"},
        {"frobnicate"},
    };
    for (auto const& args : bad) {
        tinyk_run t;
        t.args = args;
        t.home = s.home().string();
        t.cwd = s.root().string();
        auto r = t();
        INFO(r.describe());
        CHECK(r.exited(2));
        CHECK(r.out.empty());
        CHECK(r.err.find("error") != std::string::npos);
    }
    // Negative arguments are numbers, and options may come anywhere before --call.
    tinyk_run t;
    t.args = {"run", "-O0", file, "-v", "--call", "main", "-2.5"};
    t.home = s.home().string();
    t.cwd = s.root().string();
    auto r = t();
    CHECK(r.exited(0));
    CHECK(r.out == "-2.5\n");
}

TEST_CASE("tinyk cache off: without TINYK_CACHE_DIR nothing is written anywhere") {
    temp_dir program_dir("tinyk-program");
    temp_dir empty("tinyk-empty"); // HOME, TMPDIR and the working directory
    fs::path const program = program_dir.path() / "prog.tk";
    write_file(program, "global OFFSET = 5;\n"
                        "kernel helper(x) { return x * 2; }\n"
                        "kernel main(x) { return helper(x) + OFFSET; }\n");
    // Unset, then each value that means off.
    std::vector<std::vector<std::string>> settings = {
        {}, {"TINYK_CACHE_DIR="}, {"TINYK_CACHE_DIR=0"}, {"TINYK_CACHE_DIR=off"}, {"TINYK_CACHE_DIR=FALSE"},
        {"TINYK_CACHE_DIR=no", "TINYK_CACHE_LOG=1", "TINYK_CACHE_MAX_SIZE=1M"}};
    for (auto const& extra : settings) {
        for (int run = 0; run < 2; ++run) {
            tinyk_run t;
            t.args = {"run", "-v", "--stats", program.string(), "--call", "main", "1"};
            t.home = empty.str();
            t.extra_env = extra;
            t.extra_env.push_back("XDG_CACHE_HOME=" + empty.str() + "/.cache");
            t.cwd = empty.str();
            auto r = t();
            INFO((extra.empty() ? std::string("TINYK_CACHE_DIR unset") : extra.front()) << "\n" << r.describe());
            CHECK(r.exited(0));
            CHECK(r.out == "7\n");
            CHECK(r.compiled() == names{"helper", "main"});
            CHECK(r.reason("helper") == "disabled");
            CHECK(r.loaded().empty());
            CHECK(r.stats().find("cache disabled") != std::string::npos);
        }
    }
    CHECK(everything_under(empty.path()).empty());
    CHECK(everything_under(program_dir.path()) == names{"prog.tk"});
}

TEST_CASE("tinyk --help lists every setting the library reads from TINYK_CACHE_*") {
    temp_dir home;
    tinyk_run t;
    t.args = {"--help"};
    t.home = home.str();
    auto r = t();
    INFO(r.describe());
    REQUIRE(r.exited(0));
    auto settings = compile_cache::default_cache::environment_settings("TINYK_CACHE");
    REQUIRE(settings.size() >= 2);
    for (auto const& setting : settings) {
        INFO(setting.name);
        auto at = r.out.find("\n  " + setting.name);
        REQUIRE(at != std::string::npos);
        char after = r.out[at + 3 + setting.name.size()];
        CHECK((after == ' ' || after == '\n'));
        // Its description follows (wrapped): its first word, before the next setting.
        std::string first_word = setting.description.substr(0, setting.description.find(' '));
        CHECK(r.out.find(first_word, at) < r.out.find("\n  TINYK_CACHE_", at + 1));
    }
}
