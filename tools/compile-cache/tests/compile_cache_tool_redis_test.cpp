// The compile-cache tool on a real redis-server (the ctest fixture of tests/redis) that a
// real cache (fill_cache) filled: what it lists, shows, verifies and clears in one
// namespace, and that a password never shows.
#include "support/redis_servers.hpp"
#include "tool_test_support.hpp"

#include <string>
#include <vector>

using namespace compile_cache_tool_test;
using compile_cache_test::redis::fixture;
using compile_cache_test::redis::unique_name;

TEST_CASE("compile-cache on a Redis server lists, shows, verifies and clears the entries of its namespace only",
          "[compile-cache][redis]") {
    std::string const url = "redis://127.0.0.1:" + std::to_string(fixture::get().server_port());
    std::string const ns = unique_name("tool");
    std::vector<std::string> const keys = lines_of(fill_cache({url, "3", ns}));
    REQUIRE(keys.size() == 3);
    fill_cache({url, "1", ns + "-other"}); // another namespace: never counted

    process_result const stats = tool({"stats", url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['storage'], d['entries'], d['identity_records'], d['newest_use'] is not None)") ==
          "('" + url + " (namespace " + ns + ")', 3, 3, True)");
    process_result const listed = tool({"list", url, "--namespace=" + ns, "--json"});
    REQUIRE_EXIT(listed, 0);
    CHECK(json_query(listed.out, "sorted((e['name'], e['status'], e['origin_line']) for e in d['entries'])") ==
          "[('kernel_0', 'sound', 1), ('kernel_1', 'sound', 2), ('kernel_2', 'sound', 3)]");
    process_result const shown = tool({"show", url, keys[2].substr(0, 12), "--namespace", ns});
    REQUIRE_EXIT(shown, 0);
    CHECK(line_starting(shown.out, "name") == "kernel_2");

    REQUIRE_EXIT(tool({"verify", url, "--namespace", ns}), 0);
    fill_cache({"--corrupt", url, keys[0], ns});
    process_result const found = tool({"verify", url, "--namespace", ns, "--remove"});
    REQUIRE_EXIT(found, 1);
    CHECK(found.out.find("bad: " + keys[0] + ": corrupt") != std::string::npos);
    CHECK(found.out.find("5 sound, 1 bad, 1 removed") != std::string::npos);

    process_result const cleared = tool({"clear", url, "--namespace", ns});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.rfind("removed 5 entries (", 0) == 0);
    process_result const empty = tool({"stats", url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(empty, 0);
    CHECK(json_query(empty.out, "(d['entries'], d['identity_records'])") == "(0, 0)");
    process_result const other = tool({"stats", url, "--namespace", ns + "-other", "--json"});
    REQUIRE_EXIT(other, 0);
    CHECK(json_query(other.out, "d['entries']") == "1");
    REQUIRE_EXIT(tool({"clear", url, "--namespace", ns + "-other"}), 0);
}

TEST_CASE("compile-cache explain works on a Redis server, and on a machine whose entries all came from it",
          "[compile-cache][redis]") {
    std::string const url = "redis://127.0.0.1:" + std::to_string(fixture::get().server_port());
    std::string const ns = unique_name("tool-explain");
    temp_dir m1{"compile-cache-m1"}, m2{"compile-cache-m2"};
    // Machine 1 compiles two versions of two kernels: the server has both, and the records.
    CHECK(lines_of(fill_cache({"--tier", m1.path().string(), url, "2", ns, "1"})) ==
          std::vector<std::string>{"compiled", "compiled"});
    CHECK(lines_of(fill_cache({"--tier", m1.path().string(), url, "2", ns, "2"})) ==
          std::vector<std::string>{"compiled", "compiled"});
    // Machine 2 compiles nothing: every entry is loaded from the server and copied here.
    CHECK(lines_of(fill_cache({"--tier", m2.path().string(), url, "2", ns, "2"})) ==
          std::vector<std::string>{"loaded", "loaded"});

    process_result const here = tool({"explain", m2.path().string(), "kernel_0"});
    REQUIRE_EXIT(here, 0);
    CHECK(here.out.rfind("kernel_0 (fill.tk): 2 entries recorded, newest first\n", 0) == 0);
    CHECK(here.out.find("     since 2: changed ir; unchanged toolchain\n") != std::string::npos);
    CHECK(count_lines(here.out, "  present") == "1"); // version 2 is here, version 1 only on the server

    process_result const remote = tool({"explain", url, "kernel_1", "--namespace", ns});
    REQUIRE_EXIT(remote, 0);
    CHECK(remote.out.rfind("kernel_1 (fill.tk): 2 entries recorded, newest first\n", 0) == 0);
    CHECK(count_lines(remote.out, "  present") == "2");
    process_result const j = tool({"explain", url, "kernel_1", "--namespace", ns, "--json"});
    REQUIRE_EXIT(j, 0);
    CHECK(json_query(j.out, "(d['storage'], d['kernels'][0]['entries'][0]['changes_from_previous']['changed'])") ==
          "('" + url + " (namespace " + ns + ")', ['ir'])");
    REQUIRE_EXIT(tool({"clear", url, "--namespace", ns}), 0);
}

TEST_CASE("compile-cache explain on a Redis cluster", "[compile-cache][redis]") {
    std::string const url = "redis+cluster://127.0.0.1:" + std::to_string(fixture::get().cluster_ports()[0]);
    std::string const ns = unique_name("tool-cluster-explain");
    REQUIRE(lines_of(fill_cache({url, "3", ns})).size() == 3);
    process_result const r = tool({"explain", url, "kernel_2", "--namespace", ns});
    REQUIRE_EXIT(r, 0);
    CHECK(r.out.rfind("kernel_2 (fill.tk): 1 entry recorded, newest first\n", 0) == 0);
    REQUIRE_EXIT(tool({"clear", url, "--namespace", ns}), 0);
}

TEST_CASE("compile-cache on a Redis cluster sees the entries on every master", "[compile-cache][redis]") {
    std::string const url = "redis+cluster://127.0.0.1:" + std::to_string(fixture::get().cluster_ports()[0]);
    std::string const ns = unique_name("tool-cluster");
    REQUIRE(lines_of(fill_cache({url, "12", ns})).size() == 12);
    process_result const stats = tool({"stats", url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['entries'], d['identity_records'])") == "(12, 12)");
    process_result const verified = tool({"verify", url, "--namespace", ns});
    REQUIRE_EXIT(verified, 0);
    CHECK(verified.out.find(": 24 sound, 0 bad") != std::string::npos);
    process_result const cleared = tool({"clear", url, "--namespace", ns});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.rfind("removed 24 entries (", 0) == 0);
}

TEST_CASE("compile-cache never prints a Redis password, and a server that does not answer is exit 3",
          "[compile-cache][redis]") {
    process_result const bad = tool({"stats", "redis://user:s3cret-word@127.0.0.1:notaport"});
    REQUIRE_EXIT(bad, 2);
    CHECK(bad.err.find("s3cret-word") == std::string::npos);
    CHECK(bad.err.find("***") != std::string::npos);
    // Nothing listens on port 1 of the loopback address.
    process_result const down = tool({"list", "redis://user:s3cret-word@127.0.0.1:1"});
    REQUIRE_EXIT(down, 3);
    CHECK(down.err.find("s3cret-word") == std::string::npos);
    CHECK(down.err.find("127.0.0.1:1") != std::string::npos);
}
