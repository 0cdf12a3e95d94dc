// Verify mode (cache_options::verify_fraction, PREFIX_VERIFY): a hit is also compiled
// and the bytes compared. A key that misses an input is caught as unsound and the fresh
// kernel is used; a host whose compile is not reproducible is nondeterministic, not
// unsound. And min_compile_time: kernels cheaper to compile than to keep are not stored.
#include "catch2_compat.hpp"
#include "support/process.hpp"

#include <compile_cache/cache.hpp>
#include <compile_cache/storage/memory_storage.hpp>

#include <boost/serialization/string.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <cstdint>
#include <utility>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

namespace cc = compile_cache;
using cache_type = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, cc::memory_storage>;

cache_type make_cache(double verify_fraction, std::vector<std::string>* lines = nullptr) {
    cc::cache_options o;
    o.verify_fraction = verify_fraction;
    if (lines) o.logger = [lines](std::string_view l) { lines->emplace_back(l); };
    return cache_type(cc::memory_storage(), o);
}

/// A host whose key leaves out the global `scale` that its compile reads.
struct broken_host {
    int scale = 2;
    int compiles = 0;
    cc::key_result key(cache_type const& c) const { return c.make_key_builder("broken 1").add("ir", "x * scale").finish(); }
    cc::cached<std::string> get(cache_type& c) {
        return c.get_or_compile<std::string>(key(c), {"main", "prog.dsl", 1}, [this] {
            ++compiles;
            return "mul x, " + std::to_string(scale);
        });
    }
};

} // namespace

TEST_CASE("verify mode: a key that misses an input is unsound, named, and the fresh kernel is used", "[verify]") {
    std::vector<std::string> lines;
    cache_type cache = make_cache(1, &lines);
    broken_host h;
    REQUIRE(h.get(cache).outcome == cc::outcome::compiled);
    h.scale = 3; // the input the key does not cover
    cc::cached<std::string> r = h.get(cache);
    CHECK(r.value == "mul x, 3"); // right, not the stale "mul x, 2"
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(r.reason == "unsound");
    CHECK(r.unsound);
    CHECK(h.compiles == 3); // the first, then two fresh ones to judge the difference
    CHECK(cache.stats().unsound == 1);
    CHECK(cache.stats().verified == 0);
    REQUIRE(!lines.empty());
    std::string const& line = lines.back();
    CHECK(line.find("verify main: UNSOUND") == 0);
    CHECK(line.find(h.key(cache).value().hex()) != std::string::npos);
    CHECK(line.find("the key misses an input") != std::string::npos);
    CHECK(line.find("docs/explain.md") != std::string::npos);
}

TEST_CASE("verify mode: a hit equal to a fresh compile is counted verified and loaded", "[verify]") {
    cache_type cache = make_cache(1);
    broken_host h;
    h.get(cache);
    cc::cached<std::string> r = h.get(cache);
    CHECK(r.outcome == cc::outcome::loaded);
    CHECK(r.value == "mul x, 2");
    CHECK(cache.stats().verified == 1);
    CHECK(cache.stats().unsound == 0);
    CHECK(h.compiles == 2);
    CHECK(cache.stats().summary().find("verify=(verified 1 unsound 0 nondeterministic 0)") != std::string::npos);
}

TEST_CASE("verify mode: a compile that is not reproducible is nondeterministic, not unsound", "[verify]") {
    std::vector<std::string> lines;
    cache_type cache = make_cache(1, &lines);
    auto const key = cache.make_key_builder("stamped 1").add("ir", "x").finish();
    auto stamped = [] { // an artifact that carries the time it was made
        return "ret x ; built at " +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    };
    cache.get_or_compile<std::string>(key, {"stamped", "prog.dsl", 1}, stamped);
    cc::cached<std::string> r = cache.get_or_compile<std::string>(key, {"stamped", "prog.dsl", 1}, stamped);
    CHECK(r.outcome == cc::outcome::loaded);
    CHECK_FALSE(r.unsound);
    CHECK(cache.stats().nondeterministic == 1);
    CHECK(cache.stats().unsound == 0);
    REQUIRE(!lines.empty());
    CHECK(lines.back().find("verify stamped: nondeterministic") == 0);
}

TEST_CASE("verify mode: a verify compile that throws leaves the hit's value, counted verify-failed and logged once",
          "[verify]") {
    std::vector<std::string> lines;
    cache_type cache = make_cache(1, &lines);
    cc::key_result const k = cache.make_key_builder("throwing 1").add("ir", "x").finish();
    cc::entry_info const info{"thrower", "prog.dsl", 1};
    REQUIRE(cache.get_or_compile<std::string>(k, info, [] { return std::string("kernel"); }).outcome ==
            cc::outcome::compiled);
    int compiles = 0;
    auto throwing = [&compiles]() -> std::string {
        ++compiles;
        throw std::runtime_error("host compile failed");
    };
    for (int i = 0; i < 3; ++i) {
        cc::cached<std::string> r = cache.get_or_compile<std::string>(k, info, throwing);
        CHECK(r.value == "kernel");
        CHECK(r.outcome == cc::outcome::loaded);
        CHECK(!r.unsound);
    }
    CHECK(compiles == 3);
    CHECK(cache.stats().verify_failed == 3);
    CHECK(cache.stats().verified == 0);
    CHECK(cache.stats().summary().find(" verify-failed=3") != std::string::npos);
    auto const failed_lines = std::count_if(lines.begin(), lines.end(), [](std::string const& l) {
        return l.find("verify thrower: verify-failed") == 0 && l.find("host compile failed") != std::string::npos;
    });
    CHECK(failed_lines == 1);
}

TEST_CASE("verify mode: a second verify compile that throws also leaves the hit's value", "[verify]") {
    cache_type cache = make_cache(1);
    cc::key_result const k = cache.make_key_builder("throwing 2").add("ir", "x").finish();
    cc::entry_info const info{"flaky", "prog.dsl", 1};
    cache.get_or_compile<std::string>(k, info, [] { return std::string("kernel"); });
    int compiles = 0;
    cc::cached<std::string> r = cache.get_or_compile<std::string>(k, info, [&compiles]() -> std::string {
        if (++compiles == 2) throw 42; // not even a std::exception
        return "different";
    });
    CHECK(r.value == "kernel");
    CHECK(r.outcome == cc::outcome::loaded);
    CHECK(compiles == 2);
    CHECK(cache.stats().verify_failed == 1);
}

TEST_CASE("verify mode off: a hit runs no compile", "[verify]") {
    cache_type cache = make_cache(0);
    broken_host h;
    h.get(cache);
    h.scale = 3;
    CHECK(h.get(cache).value == "mul x, 2"); // the broken key's stale hit, unchecked
    CHECK(h.compiles == 1);
    CHECK(cache.stats().verified + cache.stats().unsound + cache.stats().nondeterministic == 0);
}

TEST_CASE("verify mode with a fraction checks about that share of hits", "[verify]") {
    cache_type cache = make_cache(0.5);
    broken_host h;
    h.get(cache);
    for (int i = 0; i < 400; ++i) h.get(cache);
    auto const verified = cache.stats().verified;
    CHECK(verified > 120); // 200 expected; outside (120, 280) with probability < 1e-14
    CHECK(verified < 280);
    CHECK(h.compiles == static_cast<int>(verified) + 1);
}

namespace {
// Which of 64 hits verify mode (fraction 0.5) checked, as a string of 0s and 1s.
std::string verified_pattern(cache_type& cache, broken_host& h) {
    std::string pattern;
    for (int i = 0; i < 64; ++i) {
        auto const before = cache.stats().verified;
        h.get(cache);
        pattern += cache.stats().verified != before ? '1' : '0';
    }
    return pattern;
}
} // namespace

TEST_CASE("verify mode in a forked worker checks other hits than in its parent", "[verify][processes]") {
    cache_type cache = make_cache(0.5);
    broken_host h;
    h.get(cache);
    h.get(cache); // this thread's generator is seeded before the fork
    std::string const from_child = compile_cache_test::run_in_child([&] { return verified_pattern(cache, h); });
    std::string const parent = verified_pattern(cache, h);
    REQUIRE(from_child.size() == 64);
    // Independent draws agree on all 64 hits with probability 2^-64; a generator copied
    // by fork() and not reseeded always does.
    CHECK(from_child != parent);
}

TEST_CASE("a kernel that compiles faster than min_compile_time is not stored", "[verify]") {
    cc::cache_options o;
    o.min_compile_time = std::chrono::milliseconds(20);
    cache_type cache(cc::memory_storage(), o);
    auto const key = cache.make_key_builder().add("ir", "cheap").finish();
    auto cheap = [] { return std::string("cheap"); };
    CHECK(cache.get_or_compile<std::string>(key, {"cheap", "p", 1}, cheap).outcome == cc::outcome::compiled);
    CHECK(cache.get_or_compile<std::string>(key, {"cheap", "p", 1}, cheap).outcome == cc::outcome::compiled);
    CHECK(cache.stats().stores_skipped_cheap == 2);
    CHECK(cache.stats().stores == 0);

    auto const slow_key = cache.make_key_builder().add("ir", "slow").finish();
    auto slow = [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        return std::string("slow");
    };
    CHECK(cache.get_or_compile<std::string>(slow_key, {"slow", "p", 1}, slow).outcome == cc::outcome::compiled);
    CHECK(cache.get_or_compile<std::string>(slow_key, {"slow", "p", 1}, slow).outcome == cc::outcome::loaded);
    CHECK(cache.stats().stores == 1);
    // The hit saved the compile time its entry recorded (at least the 30 ms slept).
    CHECK(cache.stats().hit_compile_ns >= 30000000u);
    // And the counters a directory keeps have them by name.
    auto const counters = cache.stats().counters();
    CHECK(std::count(counters.begin(), counters.end(), std::make_pair(std::string("store-skipped.cheap"), std::uint64_t{2})) == 1);
}

#ifdef COMPILE_CACHE_HELPER_verify_host_helper
#include "support/posix.hpp"
#include "support/process.hpp"

namespace {

struct process_output {
    int status = -1;
    std::string out;
    std::string err;
};

/// Runs the helper in a fresh process with the given environment assignments.
process_output run_helper(std::string const& env, std::string const& args, std::filesystem::path const& err_file) {
    compile_cache_test::process_result const r = compile_cache_test::run_shell(
        env + " '" COMPILE_CACHE_HELPER_verify_host_helper "' " + args + " 2>'" + err_file.string() + "'");
    return {r.exit_code, r.out, compile_cache_test::read_file(err_file)};
}

} // namespace

TEST_CASE("verify mode in a fresh process catches a host whose key leaves out a global it reads", "[verify]") {
    compile_cache_test::temp_dir dir;
    std::string const env = "VERIFYHOST_DIR='" + (dir.path() / "cache").string() + "' VERIFYHOST_LOG=";
    auto const err = dir.path() / "stderr.txt";
    process_output const first = run_helper(env, "broken 2", err);
    REQUIRE(first.status == 0);
    CHECK(first.out.find("result=ret x * 2 outcome=compiled") == 0);

    // Without verify mode, the next process with another scale gets the stale kernel:
    // the bug verify mode exists to find.
    process_output const stale = run_helper(env, "broken 3", err);
    CHECK(stale.out.find("result=ret x * 2 outcome=loaded") == 0);

    process_output const checked = run_helper(env + " VERIFYHOST_VERIFY=1", "broken 3", err);
    REQUIRE(checked.status == 0);
    CHECK(checked.out == "result=ret x * 3 outcome=compiled reason=unsound verified=0 unsound=1 nondeterministic=0\n");
    INFO(checked.err);
    CHECK(checked.err.find("compile_cache: verify scaled: UNSOUND: the entry under key ") == 0);
    CHECK(checked.err.find("the key misses an input") != std::string::npos);
}

TEST_CASE("verify mode in a fresh process calls a host with a timestamp in its artifact nondeterministic",
          "[verify]") {
    compile_cache_test::temp_dir dir;
    std::string const env = "VERIFYHOST_DIR='" + (dir.path() / "cache").string() + "' VERIFYHOST_LOG=1";
    auto const err = dir.path() / "stderr.txt";
    REQUIRE(run_helper(env, "stamped", err).status == 0);
    process_output const checked = run_helper(env + " VERIFYHOST_VERIFY=1", "stamped", err);
    REQUIRE(checked.status == 0);
    CHECK(checked.out.find("outcome=loaded reason= verified=0 unsound=0 nondeterministic=1\n") != std::string::npos);
    CHECK(checked.err.find("compile_cache: verify stamped: nondeterministic: two fresh compiles differ") !=
          std::string::npos);
    CHECK(checked.err.find("UNSOUND") == std::string::npos);
}
#endif
