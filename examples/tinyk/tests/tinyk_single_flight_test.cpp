// tinyk with single flight (docs/design.md, "Single flight"): 8 fresh tinyk processes
// start chain40 at the same moment on one empty cache directory; each kernel is compiled
// about once across all of them (each waits for the process that claimed it), and every
// process prints the right result.
#include "tinyk_support.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using namespace tinyk_test;

namespace {

/// `n` tinyk runs of `program` (calling main 1) started together, each a fresh process
/// with `env` added; their results in start order.
std::vector<tinyk_result> run_together(int n, fs::path const& root, fs::path const& program,
                                       std::vector<std::string> const& env) {
    std::vector<tinyk_result> results(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            tinyk_run r;
            r.args = {"run", "-v", "--stats", program.string(), "--call", "main", "1"};
            r.home = (root / "home").string();
            r.cwd = root.string();
            r.extra_env = env;
            results[static_cast<std::size_t>(i)] = r();
        });
    for (auto& t : threads) t.join();
    return results;
}

/// The number in `name=N` of --stats' line; -1 when absent.
long long stat_of(tinyk_result const& r, std::string const& name) {
    std::string const s = r.stats();
    std::size_t const at = s.find(" " + name + "=");
    if (at == std::string::npos) return -1;
    return std::stoll(s.substr(at + name.size() + 2));
}

} // namespace

TEST_CASE("tinyk single flight: 8 processes start chain40 at once on one empty directory, compile each kernel "
          "about once, and print the right result") {
    temp_dir root{"tinyk-flight"};
    fs::create_directories(root.path() / "home");
    fs::path const program = root.path() / "chain40.tk";
    write_file(program, read_file(TINYK_CHAIN40));

    // The right result: one run with no cache.
    tinyk_run plain;
    plain.args = {"run", program.string(), "--call", "main", "1"};
    plain.home = (root.path() / "home").string();
    plain.cwd = root.str();
    tinyk_result const expected = plain();
    REQUIRE(expected.exited(0));
    REQUIRE_FALSE(expected.out.empty());

    fs::path const cache = root.path() / "cache";
    std::vector<tinyk_result> const runs = run_together(8, root.path(), program, {"TINYK_CACHE_DIR=" + cache.string()});
    std::size_t compiles = 0, loads = 0;
    long long waited = 0;
    for (auto const& r : runs) {
        INFO(r.describe());
        REQUIRE(r.exited(0));
        CHECK(r.out == expected.out);
        CHECK(r.compiled().size() + r.loaded().size() == 40);
        compiles += r.compiled().size();
        loads += r.loaded().size();
        waited += std::max(0LL, stat_of(r, "waited")); // (--stats leaves out waited=0: absent is none)
    }
    INFO("compiles " << compiles << ", loads " << loads << ", waited " << waited);
    CHECK(compiles <= 48); // without single flight: up to 8 x 40 = 320
    CHECK(waited > 0);
    std::vector<std::string> left;
    for (auto const& f : everything_under(cache))
        if (f.size() > 6 && f.compare(f.size() - 6, 6, ".claim") == 0) left.push_back(f);
    CHECK(left.empty()); // every claim released
}
