// The compile-cache tool on a real nginx WebDAV server (the ctest fixture of tests/http):
// a directory that tinyk filled copied to the server and back byte for byte, listed,
// shown, verified and cleared there, over plain HTTP, basic authentication and TLS; zero
// refused with the reason; and a fresh tinyk loading every kernel from what came back.
#include "tool_test_support.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

using namespace tinyk_test;
using namespace compile_cache_tool_test;

namespace {

char const* const http_program = "kernel square(x) {\n"
                                 "  return x * x;\n"
                                 "}\n"
                                 "\n"
                                 "kernel main(x) {\n"
                                 "  return square(x) + 1.0;\n"
                                 "}\n";

fs::path fixture_dir() {
    char const* d = std::getenv("COMPILE_CACHE_HTTP_FIXTURE_DIR");
    REQUIRE(d != nullptr);
    return d;
}

/// The fixture's shared server's ports: plain, basic, bearer, tls, h2.
std::map<std::string, int> server_ports() {
    std::map<std::string, int> ports;
    std::ifstream in(fixture_dir() / "main.ports");
    std::string word;
    while (in >> word) {
        std::size_t const eq = word.find('=');
        ports[word.substr(0, eq)] = std::stoi(word.substr(eq + 1));
    }
    REQUIRE(ports.size() == 5);
    return ports;
}

/// A base URL on the server no other test or run uses.
std::string fresh_url(std::string const& kind, std::string const& tag) {
    static std::atomic<unsigned> counter{0};
    return std::string(kind == "tls" ? "https" : "http") + "://127.0.0.1:" + std::to_string(server_ports().at(kind)) +
           "/" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "/";
}

/// A directory tinyk filled: two kernels, their entries and identity records (in a pack).
struct filled {
    scenario s;
    filled() {
        s.write_program(http_program);
        tinyk_result const cold = s.run({"main", "3"});
        REQUIRE_EXIT(cold, 0);
        REQUIRE(cold.out == "10\n");
        REQUIRE(entry_files(s.cache_dir()).size() == 2); // the kernels' entries
        REQUIRE(pack_files(s.cache_dir()).size() == 1);   // and one pack of their identity records
    }
};

} // namespace

TEST_CASE("compile-cache copy from a directory to an HTTP server and back, byte for byte, and tinyk loads every kernel "
          "from what came back",
          "[compile-cache][http]") {
    filled c;
    for (std::string const layout : {"flat", "fanout"}) {
        INFO(layout);
        std::string const url = fresh_url("plain", "tool-" + layout);
        process_result const up = tool({"copy", c.s.cache_dir().string(), url, "--layout", layout});
        REQUIRE_EXIT(up, 0);
        CHECK(up.out.rfind("copied 2 entries and 2 identity records (", 0) == 0);
        CHECK(up.out.find(" to " + url + ";") != std::string::npos);

        process_result const stats = tool({"stats", url, "--layout", layout, "--json"});
        REQUIRE_EXIT(stats, 0);
        CHECK(json_query(stats.out, "(d['storage'], d['entries'], d['identity_records'])") ==
              "('" + url + "', 2, 2)");
        process_result const listed = tool({"list", url, "--layout", layout, "--json"});
        REQUIRE_EXIT(listed, 0);
        CHECK(json_query(listed.out, "sorted((e['name'], e['status']) for e in d['entries'])") ==
              "[('main', 'sound'), ('square', 'sound')]");
        std::string const key = json_query(listed.out, "[e['key'] for e in d['entries'] if e['name'] == 'main'][0]");
        process_result const shown = tool({"show", url, key.substr(0, 12), "--layout", layout});
        REQUIRE_EXIT(shown, 0);
        CHECK(line_starting(shown.out, "name") == "main");
        process_result const verified = tool({"verify", url, "--layout", layout});
        REQUIRE_EXIT(verified, 0);
        CHECK(verified.out == "checked 2 entries (CRC-32C): 2 sound, 0 bad; 2 identity records: 2 sound, 0 bad\n");

        // Idempotent: nothing written again.
        process_result const again = tool({"copy", c.s.cache_dir().string(), url, "--layout", layout, "--json"});
        REQUIRE_EXIT(again, 0);
        CHECK(json_query(again.out, "(d['copied'], d['already_there'])") == "(0, 4)");

        // Back into an empty directory: the same bytes, and a fresh tinyk loads everything.
        fs::path const back = c.s.root() / ("back-" + layout);
        process_result const down = tool({"copy", url, back.string(), "--layout", layout});
        REQUIRE_EXIT(down, 0);
        CHECK(entry_files(back) == entry_files(c.s.cache_dir()));
        tinyk_result const warm = c.s.run({"main", "3"}, {}, {"TINYK_CACHE_DIR=" + back.string()});
        REQUIRE_EXIT(warm, 0);
        CHECK(warm.out == "10\n");
        CHECK(warm.loaded() == names{"square", "main"});

        // zero: the server keeps no counters; clear empties it.
        process_result const zero = tool({"zero", url, "--layout", layout});
        REQUIRE_EXIT(zero, 2);
        CHECK(zero.err == "compile-cache: zero: " + url.substr(0, url.size() - 1) +
                              " keeps no counters to zero: hosts record theirs in their local cache directory (the "
                              "tier's local one, PREFIX_DIR), so zero that: compile-cache zero DIR\n");
        process_result const cleared = tool({"clear", url, "--layout", layout});
        REQUIRE_EXIT(cleared, 0);
        CHECK(cleared.out.rfind("removed 2 entries (", 0) == 0);
        CHECK(json_query(tool({"stats", url, "--layout", layout, "--json"}).out, "d['entries']") == "0");
    }
}

TEST_CASE("compile-cache on an HTTP server behind basic authentication and TLS: the password from a file, the CA "
          "given, a refusal said in one line with exit 3",
          "[compile-cache][http]") {
    filled c;
    std::string const dir = c.s.cache_dir().string();
    std::string const password = (fixture_dir() / "basic.password").string();
    std::string const basic = fresh_url("basic", "tool-auth");
    std::string const user = "http://cacheuser@" + basic.substr(std::string("http://").size());

    process_result const refused = tool({"stats", user});
    REQUIRE_EXIT(refused, 3);
    CHECK(refused.err.find("give the password of the URL's user with --password-file FILE") != std::string::npos);
    CHECK(lines_of(refused.err).size() == 1);
    REQUIRE_EXIT(tool({"copy", dir, user, "--password-file", password}), 0);
    process_result const verified = tool({"verify", user, "--password-file", password});
    REQUIRE_EXIT(verified, 0);
    CHECK(verified.out.rfind("checked 2 entries (CRC-32C): 2 sound", 0) == 0);
    CHECK(verified.out.find("pass-word") == std::string::npos);
    process_result const in_url = tool({"stats", "http://cacheuser:pass-word-42@127.0.0.1:1/"});
    REQUIRE_EXIT(in_url, 2);
    CHECK(in_url.err.find("holds a password") != std::string::npos);
    CHECK(in_url.err.find("pass-word-42") == std::string::npos);

    std::string const tls = fresh_url("tls", "tool-tls");
    std::string const ca = (fixture_dir() / "tls" / "ca.pem").string();
    process_result const unverified = tool({"stats", tls});
    REQUIRE_EXIT(unverified, 3);
    CHECK(unverified.err.find("TLS failed") != std::string::npos);
    REQUIRE_EXIT(tool({"copy", dir, tls, "--ca-file", ca}), 0);
    process_result const listed = tool({"stats", tls, "--ca-file", ca, "--json"});
    REQUIRE_EXIT(listed, 0);
    CHECK(json_query(listed.out, "d['entries']") == "2");
    REQUIRE_EXIT(tool({"clear", tls, "--ca-file", ca}), 0);
    REQUIRE_EXIT(tool({"clear", user, "--password-file", password}), 0);

    // HTTP options elsewhere, and a server that cannot list, are one line each.
    process_result const misplaced = tool({"stats", dir, "--layout", "fanout"});
    REQUIRE_EXIT(misplaced, 2);
    CHECK(misplaced.err.rfind("compile-cache: --layout is an option for an HTTP cache\n", 0) == 0);
    std::string const plain = "http://127.0.0.1:" + std::to_string(server_ports().at("plain"));
    std::string const nodav = plain + "/nodav/";
    process_result const cannot_list = tool({"stats", nodav});
    REQUIRE_EXIT(cannot_list, 3);
    CHECK(cannot_list.err.find("offers no WebDAV PROPFIND") != std::string::npos);
    // ...but such a server can be copied into (here one that takes 1 KiB at most: the
    // identity records go in, the entries are refused, exit 3).
    std::string const small = plain + "/small" + fresh_url("plain", "tool-small").substr(plain.size());
    process_result const into = tool({"copy", dir, small});
    REQUIRE_EXIT(into, 3);
    CHECK(into.out.rfind("copied 0 entries and 2 identity records (", 0) == 0);
    CHECK(into.out.find(", 2 entries refused by the destination (the destination cannot list its entries, so none "
                        "was taken as already there)\n") != std::string::npos);
    CHECK(into.err.find(": refused 2 entries: the entry is larger than allowed\n") != std::string::npos);
}

TEST_CASE("compile-cache config with an HTTP URL lists the HTTP remote's settings", "[compile-cache][http]") {
    process_spec spec;
    spec.argv = {COMPILE_CACHE_TOOL, "config", "--prefix", "TINYK_CACHE", "https://cache.example/tinyk/", "--json"};
    spec.env = tool_environment();
    spec.env.push_back("TINYK_CACHE_REMOTE_PASSWORD_FILE=/etc/tinyk/password");
    spec.env.push_back("TINYK_CACHE_REMOTE_LAYOUT=fanout");
    process_result const r = run_process(spec);
    REQUIRE_EXIT(r, 0);
    CHECK(json_query(r.out, "d['storage']") == "directory and http");
    CHECK(json_query(r.out, "[(s['value'], s['from']) for s in d['settings'] if s['name'] == "
                            "'TINYK_CACHE_REMOTE_LAYOUT']") == "[('fanout', 'environment')]");
    CHECK(json_query(r.out, "'TINYK_CACHE_REMOTE_TOKEN_FILE' in [s['name'] for s in d['settings']]") == "True");
}
