// The compile-cache tool on a real redis-server (the ctest fixture of tests/redis) that a
// real cache (fill_cache) filled: what it lists, shows, verifies and clears in one
// namespace, and that a password never shows.
#include "support/redis_servers.hpp"
#include "tool_test_support.hpp"

#include <map>
#include <string>
#include <vector>

#include <sys/stat.h>

using namespace compile_cache_tool_test;
using compile_cache_test::redis::admin;
using compile_cache_test::redis::fixture;
using compile_cache_test::redis::server;
using compile_cache_test::redis::unique_name;

namespace {

/// compile-cache clear URL --namespace NS, run once (REQUIRE_EXIT runs an expression it is given
/// twice, and a second clear finds the namespace empty: exit 2); requires exit 0.
void clear_namespace(std::string const& url, std::string const& ns) {
    process_result const r = tool({"clear", url, "--namespace", ns});
    REQUIRE_EXIT(r, 0);
}

} // namespace

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
    // A scheme in capitals names the same server, as it does in PREFIX_REMOTE (not the
    // directory "REDIS:").
    process_result const capitals = tool({"stats", "REDIS" + url.substr(5), "--namespace", ns, "--json"});
    REQUIRE_EXIT(capitals, 0);
    CHECK(json_query(capitals.out, "d['entries']") == "3");
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
    // Identity records are no entries: 3 kernels' entries, and their 3 records apart.
    CHECK(found.out.find("checked 3 entries (CRC-32C): 2 sound, 1 bad, 1 removed; 3 identity records: 3 sound, 0 bad, "
                         "0 removed") != std::string::npos);

    process_result const cleared = tool({"clear", url, "--namespace", ns});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.rfind("removed 2 entries (", 0) == 0);
    process_result const empty = tool({"stats", url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(empty, 0);
    CHECK(json_query(empty.out, "(d['entries'], d['identity_records'])") == "(0, 0)");
    process_result const other = tool({"stats", url, "--namespace", ns + "-other", "--json"});
    REQUIRE_EXIT(other, 0);
    CHECK(json_query(other.out, "d['entries']") == "1");
    clear_namespace(url, ns + "-other");
}

TEST_CASE("compile-cache clear: a Redis --namespace that holds nothing is exit 2 and no such namespace",
          "[compile-cache][redis]") {
    std::string const url = "redis://127.0.0.1:" + std::to_string(fixture::get().server_port());
    std::string const ns = unique_name("tool-typo");
    REQUIRE(lines_of(fill_cache({url, "1", ns})).size() == 1);
    // A typo of the namespace: it said "removed 0 entries" and exited 0, as if the cache were emptied.
    process_result const typo = tool({"clear", url, "--namespace", ns + "-typo"});
    REQUIRE_EXIT(typo, 2);
    CHECK(typo.out.empty());
    CHECK(typo.err.find("(namespace " + ns + "-typo): no such namespace: no key on the server is \"" + ns +
                        "-typo:\" and a key; nothing was removed") != std::string::npos);
    process_result const kept = tool({"stats", url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(kept, 0);
    CHECK(json_query(kept.out, "(d['entries'], d['identity_records'])") == "(1, 1)");
    clear_namespace(url, ns);
    process_result const again = tool({"clear", url, "--namespace", ns, "--json"}); // emptied: nothing there either
    REQUIRE_EXIT(again, 2);
    CHECK(again.out.empty());
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
    clear_namespace(url, ns);
}

TEST_CASE("compile-cache explain on a Redis cluster", "[compile-cache][redis]") {
    std::string const url = "redis+cluster://127.0.0.1:" + std::to_string(fixture::get().cluster_ports()[0]);
    std::string const ns = unique_name("tool-cluster-explain");
    REQUIRE(lines_of(fill_cache({url, "3", ns})).size() == 3);
    process_result const r = tool({"explain", url, "kernel_2", "--namespace", ns});
    REQUIRE_EXIT(r, 0);
    CHECK(r.out.rfind("kernel_2 (fill.tk): 1 entry recorded, newest first\n", 0) == 0);
    clear_namespace(url, ns);
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
    CHECK(verified.out.find("checked 12 entries (CRC-32C): 12 sound, 0 bad; 12 identity records: 12 sound, 0 bad") !=
          std::string::npos);
    process_result const cleared = tool({"clear", url, "--namespace", ns});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.rfind("removed 12 entries (", 0) == 0);
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
    // Nor any other form: a password alone before @, with ? or @ in it, percent-encoded.
    for (char const* url : {"redis://S3cretPW@127.0.0.1:1", "redis://:Sec?retPW@127.0.0.1:1",
                                   "redis://u:p@ss?w0rd@127.0.0.1:notaport", "redis://u:%53ecr%45t@127.0.0.1:1",
                                   "redis://127.0.0.1:1/0?password=Qu3ry"}) {
        process_result const r = tool({"list", url});
        INFO(url << ": " << r.describe());
        CHECK((r.exited(2) || r.exited(3)));
        for (char const* secret : {"S3cret", "Sec", "retPW", "ss?w0rd", "w0rd", "SecrEt", "%53ecr", "Qu3ry"})
            CHECK(r.err.find(secret) == std::string::npos);
    }
}

TEST_CASE("compile-cache reads a Redis password from --password-file, and a refused one says how to give it",
          "[compile-cache][redis]") {
    server guarded("--requirepass pass-w0rd-in-a-file");
    std::string const url = "redis://127.0.0.1:" + std::to_string(guarded.port());
    std::string const ns = unique_name("tool-password");
    REQUIRE(lines_of(fill_cache({"redis://:pass-w0rd-in-a-file@127.0.0.1:" + std::to_string(guarded.port()), "2", ns}))
                .size() == 2);
    compile_cache_test::temp_dir dir;
    std::string const file = (dir.path() / "redis.pw").string();
    compile_cache_test::write_file(file, "pass-w0rd-in-a-file\n");

    process_result const read = tool({"stats", url, "--namespace", ns, "--password-file", file, "--json"});
    REQUIRE_EXIT(read, 0);
    CHECK(json_query(read.out, "(d['entries'], d['identity_records'])") == "(2, 2)");
    CHECK(read.out.find("pass-w0rd") == std::string::npos);

    process_result const refused = tool({"list", url, "--namespace", ns});
    REQUIRE_EXIT(refused, 3);
    CHECK(refused.err.find("refused the credentials") != std::string::npos);
    CHECK(refused.err.find("--password-file") != std::string::npos);
    compile_cache_test::write_file(dir.path() / "wrong.pw", "not-it");
    process_result const wrong =
        tool({"verify", url, "--namespace", ns, "--password-file", (dir.path() / "wrong.pw").string()});
    REQUIRE_EXIT(wrong, 3);
    CHECK(wrong.err.find("--password-file") != std::string::npos);
    CHECK(wrong.err.find("not-it") == std::string::npos);

    // Read as a secret is: a file any user could have written is refused.
    REQUIRE(::chmod(file.c_str(), 0666) == 0);
    process_result const writable = tool({"stats", url, "--namespace", ns, "--password-file", file});
    REQUIRE_EXIT(writable, 2);
    CHECK(writable.err.find("any user can write it") != std::string::npos);
    process_result const not_redis = tool({"stats", dir.path().string(), "--password-file", file});
    REQUIRE_EXIT(not_redis, 2);
}

TEST_CASE("compile-cache runs as the tool user docs/remote.md gives, and a reader without SCAN hears what it may not "
          "run",
          "[compile-cache][redis]") {
    server acl;
    admin a(acl.port());
    std::string const ns = "compile_cache"; // the namespace the documented users are restricted to
    std::string const host = "127.0.0.1:" + std::to_string(acl.port());
    REQUIRE(lines_of(fill_cache({"redis://" + host, "2", ns})).size() == 2);
    // As docs/remote.md gives them (its "Users and permissions" block).
    REQUIRE(a({"ACL", "SETUSER", "tool", "on", ">tool-password", "~compile_cache:*", "+scan", "+object|idletime",
               "+strlen", "+getrange", "+del", "+cluster|slots", "+asking", "+select"}) == "OK");
    REQUIRE(a({"ACL", "SETUSER", "dev", "on", ">dev-password", "~compile_cache:*", "+getrange", "+cluster|slots",
               "+asking", "+select"}) == "OK");
    compile_cache_test::temp_dir dir;
    compile_cache_test::write_file(dir.path() / "tool.pw", "tool-password");
    std::string const password = "--password-file=" + (dir.path() / "tool.pw").string();
    std::string const url = "redis://tool@" + host;
    process_result const stats = tool({"stats", url, password, "--json"});
    REQUIRE_EXIT(stats, 0);
    CHECK(json_query(stats.out, "(d['entries'], d['identity_records'])") == "(2, 2)");
    REQUIRE_EXIT(tool({"list", url, password}), 0);
    REQUIRE_EXIT(tool({"verify", url, password}), 0);
    process_result const dev = tool({"list", "redis://dev:dev-password@" + host});
    REQUIRE_EXIT(dev, 3);
    CHECK(dev.err.find("'scan'") != std::string::npos); // what the server said it may not run
    process_result const cleared = tool({"clear", url, password});
    REQUIRE_EXIT(cleared, 0);
    CHECK(cleared.out.rfind("removed 2 entries (", 0) == 0);
    CHECK(a({"DBSIZE"}) == "0");
}

TEST_CASE("compile-cache on a Redis user that may list but not read: list, show, verify and explain exit 3",
          "[compile-cache][redis]") {
    server acl;
    admin a(acl.port());
    std::string const host = "127.0.0.1:" + std::to_string(acl.port());
    std::vector<std::string> const keys = lines_of(fill_cache({"redis://" + host, "2", "compile_cache"}));
    REQUIRE(keys.size() == 2);
    // The tool user of docs/remote.md without GETRANGE: every read is refused (NOPERM).
    REQUIRE(a({"ACL", "SETUSER", "lister", "on", ">lister-password", "~compile_cache:*", "+scan", "+object|idletime",
               "+strlen", "+cluster|slots", "+asking", "+select"}) == "OK");
    compile_cache_test::temp_dir dir;
    compile_cache_test::write_file(dir.path() / "lister.pw", "lister-password");
    std::string const password = "--password-file=" + (dir.path() / "lister.pw").string();
    std::string const url = "redis://lister@" + host;
    process_result const listed = tool({"list", url, password});
    REQUIRE_EXIT(listed, 3);
    CHECK(listed.err.find("could not read 2 entries") != std::string::npos);
    REQUIRE_EXIT(tool({"show", url, keys[0].substr(0, 12), password}), 3);
    REQUIRE_EXIT(tool({"verify", url, password, "--allow-unchecked"}), 3);
    // Whether a record it could not read names kernel_0 is not known: not "no record names it" (exit 2).
    process_result const explained = tool({"explain", url, "kernel_0", password});
    REQUIRE_EXIT(explained, 3);
    CHECK(explained.err.find("could not read 2 identity records") != std::string::npos);
}

TEST_CASE("compile-cache copy from a Redis server to a directory, a SQLite file and a Redis cluster and back, byte for "
          "byte",
          "[compile-cache][redis]") {
    std::string const url = "redis://127.0.0.1:" + std::to_string(fixture::get().server_port());
    std::string const cluster = "redis+cluster://127.0.0.1:" + std::to_string(fixture::get().cluster_ports()[0]);
    std::string const ns = unique_name("tool-copy");
    REQUIRE(lines_of(fill_cache({url, "3", ns})).size() == 3);
    compile_cache_test::temp_dir root;
    fs::path const first = root.path() / "first", second = root.path() / "second";
    std::string const file = (root.path() / "cache.db").string();

    process_result const from_server = tool({"copy", url, first.string(), "--namespace", ns});
    REQUIRE_EXIT(from_server, 0);
    CHECK(from_server.out.rfind("copied 3 entries and 3 identity records (", 0) == 0);
    CHECK(entry_files(first).size() == 3); // the entries, and the records in one pack
    CHECK(pack_files(first).size() == 1);
    REQUIRE_EXIT(tool({"copy", first.string(), "sqlite:" + file}), 0);
    process_result const to_cluster = tool({"copy", "sqlite:" + file, cluster, "--namespace", ns});
    REQUIRE_EXIT(to_cluster, 0);
    CHECK(to_cluster.out.rfind("copied 3 entries and 3 identity records (", 0) == 0);
    process_result const verified = tool({"verify", cluster, "--namespace", ns});
    REQUIRE_EXIT(verified, 0);
    CHECK(verified.out.find("checked 3 entries (CRC-32C): 3 sound, 0 bad; 3 identity records: 3 sound, 0 bad") !=
          std::string::npos);
    process_result const back = tool({"copy", cluster, second.string(), "--namespace", ns});
    REQUIRE_EXIT(back, 0);
    CHECK(entry_files(second) == entry_files(first));
    // Idempotent on a server too.
    process_result const again = tool({"copy", second.string(), url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(again, 0);
    CHECK(json_query(again.out, "(d['copied'], d['already_there'])") == "(0, 6)");

    // zero: a server keeps no counters (hosts record theirs in their local directory).
    for (std::string const& server : {url, cluster}) {
        process_result const zero = tool({"zero", server});
        REQUIRE_EXIT(zero, 2);
        CHECK(zero.err.find(" keeps no counters to zero: hosts record theirs in their local cache directory") !=
              std::string::npos);
    }
    clear_namespace(cluster, ns);
    clear_namespace(url, ns);
    process_result const no_redis = tool({"copy", first.string(), second.string(), "--namespace", ns});
    REQUIRE_EXIT(no_redis, 2);
}

TEST_CASE("compile-cache copy from a Redis server never copies a signer's local copy, which anyone who writes there "
          "can make",
          "[compile-cache][redis]") {
    // A signer's copy is sealed by the local mode alone (here a CRC-32C), naming a signer a
    // host trusts: a host never takes one from a remote, but would load it from its directory.
    std::string const url = "redis://127.0.0.1:" + std::to_string(fixture::get().server_port());
    std::string const ns = unique_name("tool-copies");
    temp_dir root{"compile-cache-copies"};
    process_result const ci_key = tool({"keygen", (root.path() / "ci.key").string(), "--json"});
    if (ci_key.exited(2) && ci_key.err.find("without libsodium") != std::string::npos) return; // built without signing
    REQUIRE_EXIT(ci_key, 0);
    fs::path const trusted = root.path() / "trusted.pub";
    write_file(trusted, json_query(ci_key.out, "d['public_key']") + "\n");
    fs::path const laptop = root.path() / "laptop";
    process_spec spec;
    spec.argv = {MAKE_ENTRIES, laptop.string(), "2"};
    spec.env = tool_environment();
    spec.env.push_back("MAKE_ENTRIES_SIGNING_KEY_FILE=" + (root.path() / "ci.key").string());
    spec.env.push_back("MAKE_ENTRIES_SIGNER_COPIES=1");
    REQUIRE_EXIT(run_process(spec), 0);
    // Whoever may write the server puts them there (here: copied from a reader's directory).
    process_result const up = tool({"copy", laptop.string(), url, "--namespace", ns, "--json"});
    INFO(up.out << up.err);
    REQUIRE(json_query(up.out, "d['copied']") == "2");

    for (bool const keys : {false, true}) {
        INFO("--trusted-keys-file " << keys);
        fs::path const back = root.path() / (keys ? "back-keys" : "back");
        std::vector<std::string> argv = {"copy", url, back.string(), "--namespace", ns, "--json"};
        if (keys) argv.insert(argv.end(), {"--trusted-keys-file", trusted.string()});
        process_result const down = tool(argv);
        INFO(down.out << down.err);
        REQUIRE_EXIT(down, 4);
        CHECK(json_query(down.out, "d['copied']") == "0");
    }
    process_result const down_text = tool({"copy", url, (root.path() / "back").string(), "--namespace", ns});
    CHECK(down_text.out.find("signers' local copies in a cache others can write: "
                             "only signed entries are taken from it") != std::string::npos);
}

TEST_CASE("compile-cache verify --trusted-keys-file, a signing machine's Redis server: sound by signature, "
          "and with the key rotated out reported untrusted and kept by --remove",
          "[compile-cache][redis]") {
    std::string const url = "redis://127.0.0.1:" + std::to_string(fixture::get().server_port());
    std::string const ns = unique_name("tool-signed");
    temp_dir root{"compile-cache-signed"};
    process_result const ci_key = tool({"keygen", (root.path() / "ci.key").string(), "--json"});
    if (ci_key.exited(2) && ci_key.err.find("without libsodium") != std::string::npos) return; // built without signing
    REQUIRE_EXIT(ci_key, 0);
    process_result const new_key = tool({"keygen", (root.path() / "ci-next.key").string(), "--json"});
    REQUIRE_EXIT(new_key, 0);
    std::string const ci_id = json_query(ci_key.out, "d['key_id']");
    fs::path const trusted = root.path() / "trusted.pub", rotated = root.path() / "rotated.pub";
    write_file(trusted, json_query(ci_key.out, "d['public_key']") + "\n");
    write_file(rotated, json_query(new_key.out, "d['public_key']") + "\n");
    for (fs::path const& f : {trusted, rotated}) ::chmod(f.c_str(), 0644);

    // A CI machine that signs compiles two kernels: their entries and records on the server are signed.
    process_spec spec;
    spec.argv = {FILL_CACHE, "--tier", (root.path() / "ci").string(), url, "2", ns};
    spec.env = tool_environment();
    spec.env.push_back("FILL_CACHE_SIGNING_KEY_FILE=" + (root.path() / "ci.key").string());
    process_result const filled = run_process(spec);
    REQUIRE_EXIT(filled, 0);
    REQUIRE(lines_of(filled.out) == std::vector<std::string>{"compiled", "compiled"});

    process_result const blind = tool({"verify", url, "--namespace", ns});
    REQUIRE_EXIT(blind, 4);
    CHECK(blind.out.find("give --trusted-keys-file") != std::string::npos);

    process_result const sound = tool({"verify", url, "--namespace", ns, "--trusted-keys-file", trusted.string()});
    REQUIRE_EXIT(sound, 0);
    CHECK(sound.out == "checked 2 entries (Ed25519 signatures): 2 sound, 0 bad; 2 identity records: 2 sound, 0 bad\n");

    // CI's key rotated out: reported and counted as an untrusted signer's, kept by --remove.
    process_result const untrusted =
        tool({"verify", url, "--namespace", ns, "--trusted-keys-file", rotated.string(), "--remove", "--json"});
    REQUIRE_EXIT(untrusted, 4);
    CHECK(json_query(untrusted.out, "(d['sound'], len(d['bad']), d['removed'], len(d['untrusted_signer']), "
                                    "len(d['untrusted_signer_identity_records']), "
                                    "sorted(set(e['signer_key_id'] for e in d['untrusted_signer'])))") ==
          "(0, 0, 0, 2, 2, ['" + ci_id + "'])");
    process_result const left = tool({"stats", url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(left, 0);
    CHECK(json_query(left.out, "(d['entries'], d['identity_records'])") == "(2, 2)");

    // show on the server: the signer's key id, and the trusted key's name.
    process_result const listed = tool({"list", url, "--namespace", ns, "--json"});
    REQUIRE_EXIT(listed, 0);
    std::string const first = json_query(listed.out, "sorted(e['key'] for e in d['entries'])[0]");
    process_result const shown =
        tool({"show", url, first.substr(0, 12), "--namespace", ns, "--trusted-keys-file", trusted.string()});
    REQUIRE_EXIT(shown, 0);
    CHECK(line_starting(shown.out, "signer") == "key id " + ci_id + " (trusted key ci, signature verified)");
    clear_namespace(url, ns);
}
