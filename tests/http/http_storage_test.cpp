// The HTTP storage (compile_cache/storage/http/http_storage.hpp) against real nginx
// servers (Debian's nginx-light with WebDAV; tests/http/nginx_fixture.sh): reads, writes,
// removals and listings in each layout, the conformance kit alone and behind a directory,
// TLS, basic and bearer authentication, the settings, and faults caused for real (a
// server absent, stopped, killed mid-response; 500, 403, redirects; bodies past the
// bound, announced or streamed). Every base URL is a folder of its own on the server.
#include "catch2_compat.hpp"
#include "support/conformance.hpp"
#include "support/latency_proxy.hpp"
#include "support/model.hpp"
#include "support/nginx_servers.hpp"
#include "support/posix.hpp"
#include "support/process.hpp"
#include "support/tier_machine.hpp"
#if COMPILE_CACHE_TEST_SIGNING
#include "support/signing_keys.hpp"
#endif

#include <compile_cache/compile_cache.hpp>
#include <compile_cache/storage/http/http_storage.hpp>
#include <compile_cache/storage/remote_by_url.hpp>
#include <compile_cache/storage/tiered_storage.hpp>
#include <compile_cache/testing/storage_conformance.hpp>

#include <boost/serialization/vector.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cc = compile_cache;
namespace cct = compile_cache::testing;
namespace fs = std::filesystem;
using compile_cache_test::failure_lines;

namespace {

using compile_cache_test::nginx::main_server;
using compile_cache_test::nginx::own_server;
using compile_cache_test::nginx::access_log_lines;
using compile_cache_test::nginx::fixture_dir;
using nginx_server = compile_cache_test::nginx::server;

/// A folder name no other test (or run) uses.
std::string unique_path(std::string const& tag) {
    static std::atomic<unsigned> counter{0};
    return "/" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "/";
}

cc::key key_of(unsigned seed) {
    std::array<unsigned char, 32> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(seed * 131 + i * 7 + 1);
    return cc::key(bytes.data(), bytes.size());
}

cc::http_storage storage_at(std::string url, cc::http_layout layout = cc::http_layout::flat) {
    cc::http_options o;
    o.url = std::move(url);
    o.layout = layout;
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    return cc::http_storage(std::move(o));
}

std::string file_text(fs::path const& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file(fs::path const& p, std::string const& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

cct::storage_conformance_options http_conformance_options() {
    cct::storage_conformance_options o;
    o.processes = 2;
    o.writes_per_process = 25;
    o.threads = 3;
    o.writes_per_thread = 40;
    o.process_timeout = std::chrono::seconds(60);
    return o;
}

/// The storage settings a cache hands its storage under `prefix`.
cc::storage_settings settings_for(std::string const& prefix, bool trusted, std::vector<std::string>* lines) {
    cc::settings_reader::reporter report;
    if (lines) report = [lines](std::string_view l) { lines->emplace_back(l); };
    cc::storage_settings s{cc::settings_reader(prefix, report), trusted, trusted, report, {}};
    return s;
}

} // namespace

// --- Reads, writes, removals, layouts -------------------------------------------------------

TEST_CASE("http_storage stores, reads and removes entries under each layout's names", "[http]") {
    std::string const path = unique_path("layouts");
    struct layout_case {
        cc::http_layout layout;
        std::string folder; ///< where the entry of key_of(1) is, under the base
    };
    std::string const hex = key_of(1).hex();
    for (layout_case const& c : {layout_case{cc::http_layout::flat, ""},
                                 layout_case{cc::http_layout::fanout, hex.substr(0, 2) + "/"},
                                 layout_case{cc::http_layout::bazel, "ac/"}}) {
        std::string const base = path + std::to_string(static_cast<int>(c.layout)) + "/";
        cc::http_storage s = storage_at(main_server().url("plain", base), c.layout);
        std::string out;
        CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::absent);
        CHECK_FALSE(s.write(key_of(1), "entry bytes\0with a zero"));
        fs::path const file = main_server().www() / base.substr(1) / c.folder / hex;
        CHECK(file_text(file) == std::string("entry bytes"));
        CHECK(s.entry_path(key_of(1)) == main_server().url("plain", base) + c.folder + hex);
        CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "entry bytes");
        CHECK(s.read(key_of(1), out, 5).status == cc::read_status::too_large);
        CHECK(out.empty());
        CHECK_FALSE(s.remove(key_of(1)));
        CHECK_FALSE(fs::exists(file));
        CHECK_FALSE(s.remove(key_of(1))); // absent: still a success
        CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::absent);
    }
}

TEST_CASE("a server without create_full_put_path gets the fan-out folder made (MKCOL), then the PUT again",
          "[http]") {
    fs::create_directories(main_server().www() / "nofull");
    for (cc::http_layout layout : {cc::http_layout::fanout, cc::http_layout::bazel}) {
        std::string const base = "/nofull" + unique_path("mkcol");
        cc::http_storage s = storage_at(main_server().url("plain", base), layout);
        REQUIRE_FALSE(s.write(key_of(7), "in a folder made first"));
        std::string out;
        REQUIRE(s.read(key_of(7), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "in a folder made first");
    }
    // Flat: the base must exist (nothing is made), so nginx's 500 is the answer.
    cc::http_storage flat = storage_at(main_server().url("plain", "/nofull" + unique_path("flat")));
    CHECK(flat.write(key_of(7), "x") == cc::http_errc::server_error);
}

TEST_CASE("http_storage lists what it stored through WebDAV PROPFIND, in every layout", "[http][list]") {
    for (cc::http_layout layout : {cc::http_layout::flat, cc::http_layout::fanout, cc::http_layout::bazel}) {
        std::string const base = unique_path("list");
        cc::http_storage s = storage_at(main_server().url("plain", base), layout);
        std::vector<cc::stored_entry> listed;
        CHECK_FALSE(s.list(listed)); // nothing stored yet: the folder does not exist
        CHECK(listed.empty());
        for (unsigned i = 0; i < 5; ++i) REQUIRE_FALSE(s.write(key_of(i), std::string(10 + i, 'x')));
        // A file that is not an entry's name is not listed.
        write_file(main_server().www() / base.substr(1) / "README", "not an entry");
        REQUIRE_FALSE(s.list(listed));
        REQUIRE(listed.size() == 5);
        std::sort(listed.begin(), listed.end(), [](auto const& a, auto const& b) { return a.size < b.size; });
        for (unsigned i = 0; i < 5; ++i) {
            CHECK(listed[i].k == key_of(i));
            CHECK(listed[i].size == 10 + i);
            std::int64_t const now = std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count();
            CHECK(listed[i].last_use_s > now - 86400); // the server's modification time: today
            CHECK(listed[i].last_use_s <= now + 60);
        }
    }
}

TEST_CASE("http_storage says the server cannot list when it offers no PROPFIND", "[http][list]") {
    cc::http_storage s = storage_at(main_server().url("plain", "/nodav/"));
    std::vector<cc::stored_entry> listed;
    std::error_code const e = s.list(listed);
    CHECK(e == cc::http_errc::cannot_list);
    CHECK(e == std::errc::operation_not_supported);
    CHECK(s.last_failure().text.find("offers no WebDAV listing") != std::string::npos);
}

TEST_CASE("http_storage passes the conformance kit on nginx WebDAV", "[http][conformance]") {
    std::string const url = main_server().url("plain", unique_path("conformance"));
    for (cc::http_layout layout : {cc::http_layout::flat, cc::http_layout::fanout}) {
        auto const failures = cct::check_storage_conformance(
            [&] { return storage_at(url + (layout == cc::http_layout::flat ? "flat/" : "fan/"), layout); },
            http_conformance_options());
        INFO(failure_lines(failures));
        CHECK(failures.empty());
    }
}

TEST_CASE("tiered_storage of a directory before an HTTP server passes the conformance kit",
          "[http][conformance][tiered]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    compile_cache_test::temp_dir dir;
    std::string const local = (dir.path() / "cache").string();
    std::string const url = main_server().url("plain", unique_path("tier-conformance"));
    auto const failures =
        cct::check_storage_conformance([&] { return tier(cc::directory_storage(local), storage_at(url)); },
                                       http_conformance_options());
    INFO(failure_lines(failures));
    CHECK(failures.empty());
}

TEST_CASE("remote_by_url holding an HTTP storage passes the conformance kit", "[http][conformance]") {
    std::string const url = main_server().url("plain", unique_path("by-url-conformance"));
    auto const failures = cct::check_storage_conformance(
        [&] { return cc::remote_by_url<cc::http_storage>(storage_at(url, cc::http_layout::fanout)); },
        http_conformance_options());
    INFO(failure_lines(failures));
    CHECK(failures.empty());
}

TEST_CASE("a second machine's tier loads from the server once, then locally with no request sent",
          "[http][tiered]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    own_server server("two-machines"); // its access log counts this test's requests alone
    compile_cache_test::temp_dir a_dir, b_dir;
    std::string const url = server.server().url("plain", unique_path("two-machines"));
    {
        tier a(cc::directory_storage((a_dir.path() / "cache").string()), storage_at(url));
        for (unsigned i = 0; i < 40; ++i) REQUIRE_FALSE(a.write(key_of(i), "entry " + std::to_string(i)));
        REQUIRE(a.wait_for_uploads(std::chrono::seconds(10))); // the uploads are sent in the background
    }
    tier b(cc::directory_storage((b_dir.path() / "cache").string()), storage_at(url));
    std::string out;
    for (unsigned i = 0; i < 40; ++i) {
        cc::read_result const answer = b.read(key_of(i), out, 1 << 20);
        REQUIRE(answer.status == cc::read_status::found);
        CHECK(out == "entry " + std::to_string(i));
        b.entry_checked(key_of(i), out, answer, cc::entry_check::sound); // as the cache does: copied locally
    }
    REQUIRE(b.wait_for_uploads(std::chrono::seconds(10))); // the copies are made in the background
    std::size_t const requests = access_log_lines(server.server());
    tier b_again(cc::directory_storage((b_dir.path() / "cache").string()), storage_at(url));
    for (unsigned i = 0; i < 40; ++i) REQUIRE(b_again.read(key_of(i), out, 1 << 20).status == cc::read_status::found);
    CHECK(access_log_lines(server.server()) == requests);
}

// --- Bounds ----------------------------------------------------------------------------------

TEST_CASE("a body past the bound is refused while it streams in, announced or not", "[http][bounds]") {
    std::string out;
    SECTION("16 MiB sent chunked, with no length announced") {
        cc::http_storage s = storage_at(main_server().url("plain", "/stream/"));
        CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::too_large);
        CHECK(out.empty());
        CHECK(out.capacity() <= (std::size_t{1} << 20)); // never more than the bound in memory
    }
    SECTION("16 MiB sent chunked, under a bound that is no power-of-two multiple of libcurl's pieces") {
        // The body grows by doubling from its first piece (16 KiB) to 1 MiB, then to the
        // bound: exactly, not to twice 1 MiB (std::string::reserve's own growth).
        cc::http_storage s = storage_at(main_server().url("plain", "/stream/"));
        std::size_t const bound = 1600000;
        CHECK(s.read(key_of(1), out, bound).status == cc::read_status::too_large);
        CHECK(out.empty());
        INFO("bound " << bound << ", capacity " << out.capacity());
        CHECK(out.capacity() <= bound);
    }
    SECTION("a file of 1 GiB, its length announced") {
        std::string const base = unique_path("huge");
        fs::path const file = main_server().www() / base.substr(1) / key_of(2).hex();
        fs::create_directories(file.parent_path());
        { std::ofstream(file, std::ios::binary) << ""; }
        fs::resize_file(file, std::uintmax_t{1} << 30); // sparse: costs no disk
        cc::http_storage s = storage_at(main_server().url("plain", base));
        CHECK(s.read(key_of(2), out, 1 << 20).status == cc::read_status::too_large);
        CHECK(out.capacity() <= (std::size_t{1} << 20));
        fs::remove(file);
    }
}

TEST_CASE("a body read into a string with room already holds its announced length, not twice the room",
          "[http][bounds]") {
    // The caller's string keeps its capacity across read's clear(): growing it to the
    // announced length must not double it (std::string::reserve's own growth).
    cc::http_storage s = storage_at(main_server().url("plain", unique_path("room")));
    std::string const entry(150000, 'r');
    REQUIRE_FALSE(s.write(key_of(3), entry));
    std::string out;
    out.reserve(100000);
    REQUIRE(out.capacity() < entry.size());
    REQUIRE(s.read(key_of(3), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == entry);
    INFO("length " << entry.size() << ", capacity " << out.capacity());
    CHECK(out.capacity() <= entry.size() + 15); // (libc++ rounds an allocation up to 16 bytes)
}

namespace {

/// The hostile WebDAV server (hostile_webdav.py, beside the fixture's script) in `mode`,
/// on 127.0.0.1: a real server cannot be made to answer PROPFIND with crafted bodies, nor
/// to announce a body's length and close the connection after part of it. Killed when it goes.
class hostile_webdav {
public:
    explicit hostile_webdav(std::string const& mode) : process_({python3(), script(), mode}) {
        REQUIRE(process_.wait_for_line());
        std::string const& said = process_.output();
        REQUIRE(said.rfind("port ", 0) == 0);
        port_ = std::stoi(said.substr(5));
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

    /// Stops the server, and gives how many PROPFIND requests it answered.
    std::size_t stop_and_count_propfinds() {
        process_.kill();
        process_.wait();
        std::istringstream lines(process_.output());
        std::size_t n = 0;
        for (std::string line; std::getline(lines, line);) n += line.rfind("PROPFIND ", 0) == 0 ? 1 : 0;
        return n;
    }

private:
    static std::string python3() {
        for (char const* p : {"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"})
            if (::access(p, X_OK) == 0) return p;
        FAIL("python3 is needed for the hostile WebDAV server");
        return {};
    }
    static std::string script() {
        return (fs::path(COMPILE_CACHE_HTTP_FIXTURE_SCRIPT).parent_path() / "hostile_webdav.py").string();
    }

    compile_cache_test::child_process process_;
    int port_ = 0;
};

cc::http_options listing_options(std::string url) {
    cc::http_options o;
    o.url = std::move(url);
    o.layout = cc::http_layout::fanout;
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    return o;
}

} // namespace

TEST_CASE("a listing reads each fan-out folder once, however often a hostile server names it", "[http][list]") {
    hostile_webdav server("repeat"); // the base names ab/ 500 times; ab/ holds one entry
    cc::http_storage s(listing_options(server.url()));
    std::vector<cc::stored_entry> entries;
    REQUIRE_FALSE(s.list(entries));
    CHECK(entries.size() == 1); // not once per time the folder was named
    CHECK(server.stop_and_count_propfinds() == 2); // the base, then ab/ once
}

TEST_CASE("a listing's byte bound holds over all its answers, not over each alone", "[http][list][bounds]") {
    hostile_webdav server("wide"); // 256 folders: answers of at most 62 KiB, about 750 KiB in all
    cc::http_options o = listing_options(server.url());
    o.listing_max_bytes = 100000;
    cc::http_storage s(o);
    std::vector<cc::stored_entry> entries;
    std::error_code const e = s.list(entries);
    CHECK(e == cc::http_errc::listing_too_large);
    CHECK(e == std::errc::value_too_large);
    // What a host (the tool) prints: the listing's failure (no entry's), then what it passed.
    CHECK(e.message() == "the listing of the HTTP server's entries is larger than allowed "
                         "(http_options::listing_max_bytes, listing_max_items)");
    CHECK(s.last_failure().text.rfind("PROPFIND " + server.url(), 0) == 0);
    CHECK(s.last_failure().text.find("the listing passed 100000 bytes of answers in all") != std::string::npos);
    CHECK(server.stop_and_count_propfinds() < 257); // it stopped reading at the bound
    o.listing_max_bytes = 1 << 20; // room for all of it: the same listing passes
    hostile_webdav again("wide");
    o.url = again.url();
    entries.clear();
    REQUIRE_FALSE(cc::http_storage(o).list(entries));
    CHECK(entries.size() == 256);
}

TEST_CASE("a listing's item bound holds over all its answers, not over each alone", "[http][list][bounds]") {
    hostile_webdav server("wide"); // the base: 257 items; each folder: 2
    cc::http_options o = listing_options(server.url());
    o.listing_max_items = 300; // past it in the 22nd folder
    std::vector<cc::stored_entry> entries;
    cc::http_storage s(o);
    CHECK(s.list(entries) == cc::http_errc::listing_too_large);
    CHECK(entries.size() == 21);
    CHECK(s.last_failure().text.find("the listing passed 300 items in all") != std::string::npos);
    CHECK(server.stop_and_count_propfinds() == 23); // the base and 22 folders, then no more
}

// --- Statuses --------------------------------------------------------------------------------

TEST_CASE("HTTP statuses map to the reasons a tier counts", "[http][status]") {
    std::string out;
    SECTION("500 is a server error, which a tier backs off from") {
        cc::http_storage s = storage_at(main_server().url("plain", "/fail/"));
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        CHECK(r.status == cc::read_status::error);
        CHECK(r.error == cc::http_errc::server_error);
        CHECK(cc::remote_error_of(r.error) == cc::remote_error::protocol);
        CHECK(s.write(key_of(1), "x") == cc::http_errc::server_error);
        CHECK(s.last_failure().text == "PUT " + s.entry_path(key_of(1)) + ": HTTP 500");
    }
    SECTION("403 on every request is auth") {
        cc::http_storage s = storage_at(main_server().url("plain", "/forbidden/"));
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        CHECK(r.error == cc::http_errc::auth);
        CHECK(cc::remote_error_of(r.error) == cc::remote_error::auth);
    }
    SECTION("a redirect is an error unless the settings follow it") {
        std::string const base = unique_path("moved");
        write_file(main_server().www() / "dav-target" / base.substr(1) / key_of(3).hex(), "moved entry");
        cc::http_storage s = storage_at(main_server().url("plain", "/moved" + base));
        CHECK(s.read(key_of(3), out, 1 << 20).error == cc::http_errc::redirect);
        cc::http_options o = s.options();
        o.url = main_server().url("plain", "/moved" + base);
        o.follow_redirects = true;
        cc::http_storage follows(o);
        REQUIRE(follows.read(key_of(3), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "moved entry");
        // A store follows it too: the body sent again from its start (libcurl rewinds it).
        std::string const body(4096, 'r');
        CHECK_FALSE(follows.write(key_of(4), body));
        REQUIRE(follows.read(key_of(4), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == body);
    }
    SECTION("413: an entry larger than the server takes is too large") {
        cc::http_storage s = storage_at(main_server().url("plain", "/small" + unique_path("small")));
        CHECK_FALSE(s.write(key_of(1), std::string(512, 's')));
        std::error_code const e = s.write(key_of(2), std::string(4096, 'l'));
        CHECK(e == cc::http_errc::too_large);
        CHECK(cc::remote_error_of(e) == cc::remote_error::too_large);
    }
    SECTION("a server that does not take PUT") {
        cc::http_storage s = storage_at(main_server().url("plain", "/nodav/"));
        std::error_code const e = s.write(key_of(1), "x");
        CHECK(e);
        CHECK(e == std::errc::protocol_error);
    }
}

TEST_CASE("a GET answered 204 or 206 is a protocol error, never an entry, alone or in a batch", "[http][status]") {
    // An entry is found on 200 alone: a 204's empty body or a 206's part handed on as the
    // entry would be counted corrupt by a tier, where the server is at fault.
    for (char const* location : {"/nocontent/", "/partial/"}) {
        INFO(location);
        cc::http_storage s = storage_at(main_server().url("plain", location));
        std::string out = "left over";
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        CHECK(r.status == cc::read_status::error);
        CHECK(r.error == cc::http_errc::bad_status);
        CHECK(cc::remote_error_of(r.error) == cc::remote_error::protocol);
        CHECK(out.empty());
        CHECK(s.last_failure().text.find("GET " + s.entry_path(key_of(1)) + ": HTTP 20") == 0);
        std::vector<std::pair<cc::read_result, std::string>> got;
        s.read_many({key_of(1), key_of(2)}, 1 << 20, got);
        REQUIRE(got.size() == 2);
        for (auto const& [result, bytes] : got) {
            CHECK(result.status == cc::read_status::error);
            CHECK(result.error == cc::http_errc::bad_status);
            CHECK(bytes.empty());
        }
    }
}

// --- Answers no request asked for, on a kept-alive connection ----------------------------------

namespace {

/// An HTTP/1.1 server on 127.0.0.1, in the process, for what nginx cannot be made to do:
/// send an answer no request asked for. It keeps connections alive and answers each GET
/// of /<key hex> 200 with a body that starts as an entry for that key does (an envelope's
/// magic, version 3, flags, the key: entry_names_other_key reads that far) and ends
/// naming the key, or 206 when the key's first byte is 0xee; a PUT it keeps (stored)
/// and answers 201. As `duplicating` says, it sends its first answer on the first
/// connection, or on each, once more 100 ms later (a late duplicate), before it reads the
/// connection's next request.
class stray_answer_server {
public:
    enum class duplicating { first_connection, every_connection };

    explicit stray_answer_server(duplicating mode) : mode_(mode) {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(listener_ >= 0);
        int const one = 1;
        ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(listener_, 16) == 0);
        socklen_t len = sizeof a;
        REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_all(); });
    }
    stray_answer_server(stray_answer_server const&) = delete;
    stray_answer_server& operator=(stray_answer_server const&) = delete;
    ~stray_answer_server() {
        stop_ = true;
        ::shutdown(listener_, SHUT_RDWR);
        acceptor_.join();
        ::close(listener_);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (int fd : clients_) ::shutdown(fd, SHUT_RDWR); // (open until their threads end)
        }
        for (std::thread& t : serving_) t.join();
        for (int fd : clients_) ::close(fd);
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
    /// The body a GET of `k` is answered with.
    static std::string body_for(cc::key const& k) {
        std::string body("CCENTRY\n\x03\x00\x00\x00", 12);
        body += static_cast<char>(k.size());
        body.append(reinterpret_cast<char const*>(k.data()), k.size());
        return body + "entry for " + k.hex();
    }
    /// What `body` says in words: its text after the entry's header (the key's hex), or
    /// all of it when it is no answer of this server's.
    static std::string words(std::string const& body) {
        std::size_t const text = body.find("entry for ");
        return text == std::string::npos ? body : body.substr(text);
    }
    /// The body of the last PUT of `k`.
    std::string stored(cc::key const& k) {
        std::lock_guard<std::mutex> lock(mutex_);
        return stored_[k.hex()];
    }
    int connections() const { return connections_.load(); }
    int requests() const { return requests_.load(); }
    /// Waits (at most 5 s) until `n` duplicates were sent, then 50 ms more for them to
    /// arrive: an answer no request asked for then waits on the client's connection.
    void wait_for_duplicates(int n) const {
        for (int i = 0; i < 500 && duplicates_.load() < n; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        REQUIRE(duplicates_.load() >= n);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }

private:
    static void send_all(int fd, std::string const& s) {
        for (std::size_t off = 0; off < s.size();) {
            ssize_t const n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
            if (n <= 0) return;
            off += static_cast<std::size_t>(n);
        }
    }
    void accept_all() {
        for (;;) {
            int const c = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0 || stop_) {
                if (c >= 0) ::close(c);
                return;
            }
            int const number = connections_++;
            std::lock_guard<std::mutex> lock(mutex_);
            clients_.push_back(c);
            serving_.emplace_back([this, c, number] { serve(c, number); });
        }
    }
    void serve(int c, int number) {
        std::string buffer;
        bool duplicate = mode_ == duplicating::every_connection || number == 0;
        char chunk[4096];
        auto read_until = [&](auto&& enough) { // false: the connection ended
            while (!enough()) {
                ssize_t const n = ::recv(c, chunk, sizeof chunk, 0);
                if (n <= 0) return false;
                buffer.append(chunk, static_cast<std::size_t>(n));
            }
            return true;
        };
        for (;;) {
            if (!read_until([&] { return buffer.find("\r\n\r\n") != std::string::npos; })) break;
            std::size_t const end = buffer.find("\r\n\r\n");
            std::string const head = buffer.substr(0, end);
            buffer.erase(0, end + 4);
            std::size_t const length_at = head.find("Content-Length: ");
            std::size_t const length = length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 16));
            if (!read_until([&] { return buffer.size() >= length; })) break;
            std::string const request_body = buffer.substr(0, length);
            buffer.erase(0, length);
            ++requests_;
            std::size_t const path = head.find(" /") + 2;
            std::string const name = head.substr(path, head.find(' ', path) - path);
            std::optional<cc::key> const k = cc::key::from_hex(name);
            std::string body = k ? body_for(*k) : "no key";
            std::string status = !k ? "404 Not Found" : k->data()[0] == 0xee ? "206 Partial Content" : "200 OK";
            if (head.rfind("PUT ", 0) == 0) {
                std::lock_guard<std::mutex> lock(mutex_);
                stored_[name] = request_body;
                status = "201 Created";
                body.clear();
            }
            std::string const answer = "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
                                       "\r\n\r\n" + body;
            send_all(c, answer);
            if (duplicate) {
                duplicate = false;
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                send_all(c, answer); // (no request asked for this one)
                ++duplicates_;
            }
        }
        ::shutdown(c, SHUT_RDWR); // (closed when the server goes)
    }

    duplicating mode_;
    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> connections_{0};
    std::atomic<int> requests_{0};
    std::atomic<int> duplicates_{0};
    std::mutex mutex_; // guards clients_, serving_ and stored_
    std::map<std::string, std::string> stored_;
    std::vector<int> clients_;
    std::vector<std::thread> serving_;
    std::thread acceptor_;
};

cc::key numbered_key(unsigned char n) {
    std::array<unsigned char, 32> bytes{};
    bytes[0] = n;
    bytes[31] = 0x5a;
    return cc::key(bytes.data(), bytes.size());
}

cc::http_storage one_connection_storage(std::string url) {
    cc::http_options o;
    o.url = std::move(url);
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.batch_connections = 1;
    return cc::http_storage(std::move(o));
}

/// The local ports of this process's established TCP connections to 127.0.0.1:`port`
/// (/proc/net/tcp, the sockets among /proc/self/fd): the connections a storage keeps.
std::set<int> own_connections_to(int port) {
    std::set<std::string> inodes;
    for (auto const& e : fs::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        std::string const target = fs::read_symlink(e.path(), ec).string();
        if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
    }
    char remote_wanted[16];
    std::snprintf(remote_wanted, sizeof remote_wanted, "0100007F:%04X", static_cast<unsigned>(port));
    std::set<int> ports;
    std::ifstream tcp("/proc/net/tcp");
    std::string line;
    std::getline(tcp, line); // (the column names)
    while (std::getline(tcp, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
        fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
        if (state != "01" || remote != remote_wanted || !inodes.count(inode)) continue; // (01: established)
        ports.insert(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
    }
    return ports;
}

} // namespace

TEST_CASE("read: a stray answer waiting on the kept-alive connection is never taken for a later GET's",
          "[http][stray]") {
    // libcurl 7.88 sends the next request on such a connection, and reads the stray answer
    // as its own: key 2 would be answered with key 1's entry, key 3 with key 2's, and so on.
    stray_answer_server server(stray_answer_server::duplicating::first_connection);
    cc::http_storage s = one_connection_storage(server.url());
    std::string out;
    REQUIRE(s.read(numbered_key(1), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == stray_answer_server::body_for(numbered_key(1)));
    server.wait_for_duplicates(1);
    for (unsigned char n = 2; n <= 4; ++n) {
        INFO("key " << int(n));
        cc::read_result const r = s.read(numbered_key(n), out, 1 << 20);
        CHECK(r.status == cc::read_status::found);
        CHECK(stray_answer_server::words(out) == "entry for " + numbered_key(n).hex());
    }
    CHECK(server.connections() == 2); // the stray's connection left at once, the new one kept
    CHECK(server.requests() == 4);    // none sent twice: the GET was stopped before it went out
}

TEST_CASE("read_many: a stray answer waiting on a kept-alive connection is never taken for a later GET's",
          "[http][stray][batch]") {
    stray_answer_server server(stray_answer_server::duplicating::first_connection);
    cc::http_storage s = one_connection_storage(server.url());
    std::vector<std::pair<cc::read_result, std::string>> got;
    s.read_many({numbered_key(1)}, 1 << 20, got);
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].first.status == cc::read_status::found);
    server.wait_for_duplicates(1);
    s.read_many({numbered_key(2), numbered_key(3), numbered_key(4)}, 1 << 20, got);
    REQUIRE(got.size() == 3);
    for (unsigned char n = 2; n <= 4; ++n) {
        INFO("key " << int(n));
        CHECK(got[n - 2].first.status == cc::read_status::found);
        CHECK(stray_answer_server::words(got[n - 2].second) == "entry for " + numbered_key(n).hex());
    }
    CHECK(server.connections() == 2);
    CHECK(server.requests() == 4);
}

TEST_CASE("write: a PUT never goes out on a kept-alive connection holding a stray answer", "[http][stray]") {
    // Sent there, the PUT would be told "stored" by the stray answer, and the next GET
    // would be answered with the PUT's 201.
    stray_answer_server server(stray_answer_server::duplicating::first_connection);
    cc::http_storage s = one_connection_storage(server.url());
    std::string out;
    REQUIRE(s.read(numbered_key(1), out, 1 << 20).status == cc::read_status::found);
    server.wait_for_duplicates(1);
    CHECK_FALSE(s.write(numbered_key(9), "stored bytes"));
    CHECK(server.stored(numbered_key(9)) == "stored bytes");
    cc::read_result const r = s.read(numbered_key(2), out, 1 << 20);
    INFO("the GET after the PUT: " << s.last_failure().text);
    CHECK(r.status == cc::read_status::found);
    CHECK(stray_answer_server::words(out) == "entry for " + numbered_key(2).hex());
    CHECK(server.connections() == 2);
    CHECK(server.requests() == 3);
}

TEST_CASE("a GET answered on a kept-alive connection with another key's entry is sent again on a new one",
          "[http][stray][batch]") {
    // Here the late duplicate comes after the next GET was sent, which no look before the
    // request can see: the entry's key tells it, the connection is left, and the GET sent
    // again on a new connection (where the duplicate comes late again, and so on).
    stray_answer_server server(stray_answer_server::duplicating::every_connection);
    cc::http_storage s = one_connection_storage(server.url());
    std::string out;
    for (unsigned char n = 1; n <= 4; ++n) {
        INFO("read of key " << int(n));
        CHECK(s.read(numbered_key(n), out, 1 << 20).status == cc::read_status::found);
        CHECK(stray_answer_server::words(out) == "entry for " + numbered_key(n).hex());
    }
    std::vector<cc::key> keys;
    for (unsigned char n = 5; n <= 8; ++n) keys.push_back(numbered_key(n));
    std::vector<std::pair<cc::read_result, std::string>> got;
    s.read_many(keys, 1 << 20, got);
    REQUIRE(got.size() == keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
        INFO("read_many, key " << i + 5);
        CHECK(got[i].first.status == cc::read_status::found);
        CHECK(stray_answer_server::words(got[i].second) == "entry for " + keys[i].hex());
    }
}

TEST_CASE("the look at an answer's key reads the entries the cache writes, and nothing else", "[http][stray]") {
    // (The test server above writes the header by hand: this holds it to the real layout.)
    cc::key const k1 = key_of(1);
    cc::key const k2 = key_of(2);
    for (bool keyed : {false, true}) {
        INFO("keyed " << keyed);
        cc::envelope_auth const auth = keyed ? cc::envelope_auth("a secret of the test") : cc::envelope_auth();
        std::string entry;
        std::size_t const at = cc::begin_envelope(entry, k1, cc::entry_metadata{}, auth);
        entry += "payload";
        cc::seal_envelope(entry, at, auth);
        CHECK_FALSE(cc::detail::entry_names_other_key(entry, k1));
        CHECK(cc::detail::entry_names_other_key(entry, k2));
        std::size_t const header = 8 + 2 + 2 + 1 + k1.size(); // magic, version, flags, key size, key
        CHECK(cc::detail::entry_names_other_key(entry.substr(0, header), k2));
        CHECK_FALSE(cc::detail::entry_names_other_key(entry.substr(0, header - 1), k2)); // (the key cut short)
        std::string version_4 = entry;
        cc::detail::set_envelope_flags(version_4, cc::detail::envelope_flag_zstd);
        CHECK(cc::detail::entry_names_other_key(version_4, k2));
        std::string another_version = entry;
        another_version[8] = 9;
        CHECK_FALSE(cc::detail::entry_names_other_key(another_version, k2));
    }
    CHECK_FALSE(cc::detail::entry_names_other_key("entry for " + k1.hex(), k2));
    CHECK_FALSE(cc::detail::entry_names_other_key("", k2));
}

TEST_CASE("an answer that cannot be the request's leaves its connection, others keep it, on nginx",
          "[http][stray]") {
    // A 206 answers no GET the storage sends: over HTTP/1.1 the next request goes on a new
    // connection (over HTTP/2 the answer names its stream: the server's own). 200, 404 and
    // a PUT's 201 or 204 keep theirs (no request pays a new connection).
    std::string out;
    for (char const* kind : {"plain", "tls", "h2"}) {
        INFO(kind);
        int const port = main_server().ports.at(kind);
        cc::http_options o;
        o.url = main_server().url(kind, unique_path("keep"));
        if (std::string(kind) != "plain") o.ca_file = (fixture_dir() / "tls" / "ca.pem").string();
        o.connect_timeout = std::chrono::seconds(20); // (a loaded machine's TLS handshake)
        o.timeout = std::chrono::seconds(30);
        cc::http_storage s(o);
        REQUIRE_FALSE(s.write(key_of(1), "kept"));
        std::set<int> const first = own_connections_to(port);
        REQUIRE(first.size() == 1);
        for (int i = 0; i < 5; ++i) {
            CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
            CHECK(s.read(key_of(2), out, 1 << 20).status == cc::read_status::absent);
            CHECK_FALSE(s.write(key_of(3), "kept too"));
        }
        CHECK(own_connections_to(port) == first);
        o.url = main_server().url(kind, "/partial/");
        cc::http_storage partial(o);
        CHECK(partial.read(key_of(1), out, 1 << 20).error == cc::http_errc::bad_status);
        std::set<int> const after_one = own_connections_to(port);
        CHECK(partial.read(key_of(1), out, 1 << 20).error == cc::http_errc::bad_status);
        std::set<int> const after_two = own_connections_to(port);
        INFO("connections after one 206: " << after_one.size() << ", after two: " << after_two.size());
        CHECK(after_two.size() == 2); // s's, and partial's one
        if (std::string(kind) == "h2")
            CHECK(after_two == after_one);
        else
            CHECK(after_two != after_one); // partial's first connection was left
    }
}

// --- Faults ----------------------------------------------------------------------------------

TEST_CASE("a server absent, stopped or killed mid-response costs one bounded call", "[http][faults]") {
    std::string out;
    cc::http_options o;
    o.connect_timeout = std::chrono::milliseconds(200);
    o.timeout = std::chrono::milliseconds(500);
    SECTION("nothing listens: refused") {
        own_server gone("absent");
        o.url = gone.server().url("plain", "/x/");
        ::kill(gone.pid(), SIGKILL);
        compile_cache_test::run_shell("sleep 0.2");
        cc::http_storage s(o);
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        CHECK(r.status == cc::read_status::error);
        CHECK(r.error == cc::http_errc::refused);
        CHECK(s.write(key_of(1), "x") == cc::http_errc::refused);
    }
    SECTION("a name that does not resolve: refused") {
        o.url = "http://no-such-host.invalid/x/";
        cc::http_storage s(o);
        CHECK(s.read(key_of(1), out, 1 << 20).error == cc::http_errc::refused);
    }
    SECTION("stopped with SIGSTOP: a timeout, then it answers again once continued") {
        own_server stopped("stopped");
        o.url = stopped.server().url("plain", unique_path("stopped"));
        cc::http_storage s(o);
        REQUIRE_FALSE(s.write(key_of(1), "before"));
        REQUIRE(::kill(stopped.pid(), SIGSTOP) == 0);
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        CHECK(r.status == cc::read_status::error);
        CHECK(r.error == cc::http_errc::timeout);
        CHECK(s.write(key_of(2), "while stopped") == cc::http_errc::timeout);
        REQUIRE(::kill(stopped.pid(), SIGCONT) == 0);
        REQUIRE(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "before");
    }
    SECTION("killed in the middle of a response: the read fails, nothing half-read is found") {
        own_server killed("killed");
        o.url = killed.server().url("plain", "/slow/");
        o.timeout = std::chrono::milliseconds(5000);
        cc::http_storage s(o);
        pid_t const pid = killed.pid();
        std::thread killer([pid] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            ::kill(pid, SIGKILL);
        });
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        killer.join();
        CHECK(r.status == cc::read_status::error);
        CHECK((r.error == cc::http_errc::reset || r.error == cc::http_errc::timeout));
        CHECK(out.empty());
    }
}

TEST_CASE("a free loopback port is refused even when the kernel connects the client to itself", "[http][faults]") {
    int const port = compile_cache_test::free_port_a_client_may_take();
    REQUIRE(port > 0);
    cc::http_options o;
    o.url = "http://127.0.0.1:" + std::to_string(port) + "/x/";
    o.connect_timeout = std::chrono::milliseconds(200);
    o.timeout = std::chrono::milliseconds(500);
    cc::http_storage s(o);
    // Each refused connection moves the kernel's choice of source port on, so within one
    // pass over the ephemeral ports one connection is made to itself: the request would
    // come back as the answer. It must be refused like the others.
    std::string out;
    int attempts = 0, to_itself = 0;
    for (; attempts < 100000 && to_itself == 0; ++attempts) {
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        REQUIRE(r.status == cc::read_status::error);
        INFO("attempt " << attempts << ": " << s.last_failure().text);
        REQUIRE(r.error == cc::http_errc::refused);
        if (s.last_failure().text.find("to itself") != std::string::npos) ++to_itself;
    }
    INFO("attempts: " << attempts);
    CHECK(to_itself == 1);
}

TEST_CASE("a tier skips a stopped HTTP server after one bounded failure, counted", "[http][faults][tiered]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    own_server stopped("tier-stopped");
    compile_cache_test::temp_dir dir;
    cc::http_options o;
    o.url = stopped.server().url("plain", unique_path("tier-stopped"));
    o.timeout = std::chrono::milliseconds(300);
    std::vector<std::string> lines;
    cc::tier_options t;
    t.logger = [&](std::string_view l) { lines.emplace_back(l); };
    tier s(cc::directory_storage((dir.path() / "cache").string()), cc::http_storage(o), t);
    REQUIRE(::kill(stopped.pid(), SIGSTOP) == 0);
    std::string out;
    CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::absent);
    CHECK(s.read(key_of(2), out, 1 << 20).status == cc::read_status::absent);
    auto counters = s.storage_counters();
    auto count = [&](std::string const& name) {
        for (auto const& [n, v] : counters)
            if (n == name) return v;
        return std::uint64_t{0};
    };
    CHECK(count("remote.errors.timeout") == 1);
    CHECK(count("remote.skipped") >= 1);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("HTTP server " + stopped.server().url("plain", "")) != std::string::npos);
    ::kill(stopped.pid(), SIGCONT);
}

TEST_CASE("a tier meets refused credentials once: one line without them, then the back-off", "[http][auth][tiered]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    compile_cache_test::temp_dir dir;
    fs::path const token = dir.path() / "token";
    write_file(token, "a-refused-token-9\n");
    fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
    own_server server("tier-auth"); // its access log counts this test's requests alone
    cc::http_options o;
    o.url = server.server().url("bearer", unique_path("tier-auth"));
    o.token_file = token.string();
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.timeout = std::chrono::milliseconds(5000);
    std::vector<std::string> lines;
    cc::tier_options t;
    t.logger = [&](std::string_view l) { lines.emplace_back(l); };
    tier s(cc::directory_storage((dir.path() / "cache").string()), cc::http_storage(o), t);
    std::size_t const requests = access_log_lines(server.server());
    std::string out;
    for (unsigned i = 0; i < 5; ++i) CHECK(s.read(key_of(i), out, 1 << 20).status == cc::read_status::absent);
    CHECK(access_log_lines(server.server()) == requests + 1); // one request, then the back-off
    auto const counters = s.storage_counters();
    auto count = [&](std::string const& name) {
        for (auto const& [n, v] : counters)
            if (n == name) return v;
        return std::uint64_t{0};
    };
    CHECK(count("remote.errors.auth") == 1);
    CHECK(count("remote.skipped") == 4);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find(server.server().url("bearer", "")) != std::string::npos);
    CHECK(lines[0].find("401") != std::string::npos);
    CHECK(lines[0].find("a-refused-token-9") == std::string::npos);
}

// --- TLS -------------------------------------------------------------------------------------

TEST_CASE("http/2: a stream the server resets is a reset, which puts a tier's remote in back-off, as a "
          "connection closed without an answer is over HTTP/1.1",
          "[http][tls][tiered]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    // (Without HTTP/2 in libcurl the h2 port would be spoken to in HTTP/1.1: nothing shown.)
    REQUIRE((curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_HTTP2) != 0);
    for (char const* kind : {"h2", "tls"}) { // (nginx's 444: HTTP/2 resets the stream, HTTP/1.1 closes)
        INFO(kind);
        compile_cache_test::temp_dir dir;
        cc::http_options o;
        o.url = main_server().url(kind, "/reset/");
        o.ca_file = (fixture_dir() / "tls" / "ca.pem").string();
        o.connect_timeout = std::chrono::seconds(20); // (a loaded machine's TLS handshake: never a timeout)
        o.timeout = std::chrono::seconds(30);
        std::string out;
        cc::http_storage alone(o);
        cc::read_result const r = alone.read(key_of(1), out, 1 << 20);
        INFO(alone.last_failure().text);
        CHECK(r.status == cc::read_status::error);
        CHECK(r.error == cc::http_errc::reset);
        cc::tier_options t;
        t.logger = [](std::string_view) {};
        tier s(cc::directory_storage((dir.path() / "cache").string()), cc::http_storage(o), t);
        for (unsigned i = 0; i < 5; ++i) CHECK(s.read(key_of(i), out, 1 << 20).status == cc::read_status::absent);
        std::map<std::string, std::uint64_t> counts;
        std::string shown; // (all of them, for a failure's message)
        for (auto const& [n, v] : s.storage_counters()) {
            counts[n] = v;
            if (v != 0) shown += n + "=" + std::to_string(v) + " ";
        }
        INFO(shown);
        CHECK(counts["remote.errors.refused"] == 1); // (a reset counts as refused: the back-off)
        CHECK(counts["remote.skipped"] == 4);
    }
}

TEST_CASE("a server on 127.0.0.1 or localhost is never reached through a proxy", "[http][proxy]") {
    // The proxy is another nginx: asked for the main server's URL, it answers with its own
    // file of that path, as a proxy reaches its own machine's port 127.0.0.1:P.
    own_server const proxy("proxy");
    std::string const base = unique_path("proxy");
    cc::key const k = key_of(71);
    write_file(main_server().www() / base.substr(1) / k.hex(), "the entry of this machine's server");
    write_file(proxy.server().www() / base.substr(1) / k.hex(), "another server's file");
    std::string const proxy_url = "http://127.0.0.1:" + std::to_string(proxy.server().ports.at("plain"));
    compile_cache_test::env_var const no_proxy("no_proxy", nullptr), no_proxy_upper("NO_PROXY", nullptr);
    compile_cache_test::env_var const all_proxy("all_proxy", nullptr), all_proxy_upper("ALL_PROXY", nullptr);
    cc::http_options o;
    o.connect_timeout = std::chrono::milliseconds(3000); // a TLS handshake on a loaded test machine
    o.timeout = std::chrono::milliseconds(5000);
    std::string out;
    SECTION("http_proxy, to 127.0.0.1, localhost, names under it and short forms: this machine's entry") {
        compile_cache_test::env_var const http_proxy("http_proxy", proxy_url);
        std::vector<std::string> hosts{"127.0.0.1", "localhost", "127.1", "2130706433"};
        if (curl_version_info(CURLVERSION_NOW)->version_num >= 0x075500) // (libcurl resolves names under localhost)
            hosts.push_back("cache.localhost");
        for (std::string const& host : hosts) {
            o.url = "http://" + host + ":" + std::to_string(main_server().ports.at("plain")) + base;
            cc::http_storage s(o);
            cc::read_result const r = s.read(k, out, 1 << 20);
            INFO(host << ": " << s.last_failure().text);
            CHECK(r.status == cc::read_status::found);
            CHECK(out == "the entry of this machine's server");
        }
    }
    SECTION("all_proxy: this machine's entry") {
        compile_cache_test::env_var const all("all_proxy", proxy_url), all_upper("ALL_PROXY", proxy_url);
        o.url = main_server().url("plain", base);
        cc::http_storage s(o);
        CHECK(s.read(k, out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "the entry of this machine's server");
    }
    SECTION("https_proxy: the TLS server is reached, not a tunnel the proxy refuses") {
        compile_cache_test::env_var const https_proxy("https_proxy", proxy_url),
            https_proxy_upper("HTTPS_PROXY", proxy_url);
        o.url = main_server().url("tls", base);
        o.ca_file = (fixture_dir() / "tls" / "ca.pem").string();
        cc::http_storage s(o);
        cc::read_result const r = s.read(k, out, 1 << 20);
        INFO(s.last_failure().text);
        CHECK(r.status == cc::read_status::found);
        CHECK(out == "the entry of this machine's server");
    }
}

TEST_CASE("https: the server's certificate is verified against the CA file, or refused", "[http][tls]") {
    fs::path const tls = fixture_dir() / "tls";
    std::string const base = unique_path("tls");
    std::string out;
    cc::http_options o;
    o.url = main_server().url("tls", base);
    o.connect_timeout = std::chrono::milliseconds(3000); // a TLS handshake on a loaded test machine
    o.timeout = std::chrono::milliseconds(5000);
    SECTION("the right CA") {
        o.ca_file = (tls / "ca.pem").string();
        cc::http_storage s(o);
        REQUIRE_FALSE(s.write(key_of(1), "over TLS"));
        REQUIRE(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "over TLS");
    }
    SECTION("another CA: a TLS error, nothing read, nothing written") {
        o.ca_file = (tls / "wrong-ca.pem").string();
        cc::http_storage s(o);
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        CHECK(r.status == cc::read_status::error);
        CHECK(r.error == cc::http_errc::tls);
        CHECK(s.write(key_of(1), "x") == cc::http_errc::tls);
    }
    SECTION("an expired certificate of the right CA: a TLS error") {
        o.url = "https://localhost:" + std::to_string(main_server().ports.at("tls")) + base;
        o.ca_file = (tls / "ca.pem").string();
        cc::http_storage s(o);
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        CHECK(r.status == cc::read_status::error);
        CHECK(r.error == cc::http_errc::tls);
        CHECK(s.last_failure().text.find("expired") != std::string::npos);
    }
    SECTION("no CA file: the system's CAs do not know the test CA") {
        cc::http_storage s(o);
        CHECK(s.read(key_of(1), out, 1 << 20).error == cc::http_errc::tls);
    }
    SECTION("the insecure setting connects anyway, and says so in one line") {
        o.tls_insecure = true;
        cc::http_storage s(o);
        std::vector<std::string> lines;
        s.set_logger([&](std::string_view l) { lines.emplace_back(l); });
        s.set_logger([&](std::string_view l) { lines.emplace_back(l); });
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find("TLS certificate verification is off") != std::string::npos);
        CHECK_FALSE(s.write(key_of(1), "insecure"));
        CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
    }
    SECTION("a client certificate where the server asks for one") {
        o.url = main_server().url("tls", "/mtls" + base);
        o.ca_file = (tls / "ca.pem").string();
        CHECK(cc::http_storage(o).write(key_of(1), "x") == cc::http_errc::auth);
        o.cert_file = (tls / "client.pem").string();
        o.key_file = (tls / "client.key").string();
        cc::http_storage s(o);
        CHECK_FALSE(s.write(key_of(1), "with a client certificate"));
        REQUIRE(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "with a client certificate");
    }
}

// --- Authentication --------------------------------------------------------------------------

TEST_CASE("basic authentication: the URL's user, the password from the settings' file", "[http][auth]") {
    std::string const base = unique_path("basic");
    std::string out;
    cc::http_options o;
    o.url = "http://cacheuser@127.0.0.1:" + std::to_string(main_server().ports.at("basic")) + base;
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.timeout = std::chrono::milliseconds(5000);
    SECTION("the right password") {
        o.password = "pass-word-42";
        cc::http_storage s(o);
        REQUIRE_FALSE(s.write(key_of(1), "authenticated"));
        REQUIRE(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "authenticated");
    }
    SECTION("a wrong password: auth, and neither the password nor the user's in any text") {
        o.password = "wrong-password-7";
        cc::http_storage s(o);
        std::error_code const e = s.write(key_of(1), "x");
        CHECK(e == cc::http_errc::auth);
        std::string const text = s.last_failure().text + e.message() + s.describe() + s.entry_path(key_of(1));
        CHECK(text.find("wrong-password-7") == std::string::npos);
        CHECK(text.find("cacheuser") == std::string::npos);
        CHECK(text.find("HTTP 401") != std::string::npos);
    }
}

TEST_CASE("credentials sent over plain http:// to another machine are said in one line, once", "[http][auth]") {
    // The line is said when the storage is made or given its logger: no request is sent,
    // so the hosts of another machine here (names under .invalid, which never resolve)
    // are never reached.
    SECTION("the hosts that are this machine for certain, and those that are not") {
        for (char const* host : {"127.0.0.1", "127.3.2.1", "localhost", "LocalHost", "[::1]", "[::ffff:127.0.0.1]"}) {
            INFO(host);
            CHECK(cc::detail::http_host_is_loopback(host));
        }
        // A name is not, whatever it resolves to (localhost.localdomain included); nor a
        // short form of an address (127.1) that inet_pton does not read.
        for (char const* host : {"localhost.localdomain", "cache.invalid", "10.0.0.1", "128.0.0.1", "[::2]",
                                 "127.0.0.1.invalid", "127.1", "[::ffff:10.0.0.1]", ""}) {
            INFO(host);
            CHECK_FALSE(cc::detail::http_host_is_loopback(host));
        }
    }
    std::vector<std::string> lines;
    auto logger = [&](std::string_view l) { lines.emplace_back(l); };
    cc::http_options o;
    SECTION("basic authentication to another machine: one line, without the user or the password") {
        o.url = "http://cacheuser@cache.invalid:8080/cache/";
        o.password = "pass-word-42";
        cc::http_storage s(o);
        CHECK(s.sends_credentials_in_clear());
        s.set_logger(logger);
        s.set_logger(logger); // once per storage
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find("HTTP server http://cache.invalid:8080/cache/") == 0);
        CHECK(lines[0].find("the password of the URL's user goes in clear text over http://") != std::string::npos);
        CHECK(lines[0].find("pass-word-42") == std::string::npos);
        CHECK(lines[0].find("cacheuser") == std::string::npos);
    }
    SECTION("a bearer token to another machine: one line") {
        o.url = "http://cache.invalid/";
        o.token_file = (fixture_dir() / "bearer.token").string();
        cc::http_storage s(o);
        s.set_logger(logger);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find("the bearer token goes in clear text over http://") != std::string::npos);
    }
    SECTION("from the settings: one line among the settings' lines") {
        std::string const prefix = "CCHTTPCLEAR";
        compile_cache_test::env_var url(prefix + "_REMOTE", "http://cacheuser@cache.invalid/cache/");
        std::string const password_file = (fixture_dir() / "basic.password").string();
        compile_cache_test::env_var password(prefix + "_REMOTE_PASSWORD_FILE", password_file);
        auto r = cc::http_storage::from_env(settings_for(prefix, true, &lines));
        REQUIRE(r);
        r->set_logger(logger); // not said again
        CHECK(std::count_if(lines.begin(), lines.end(), [](std::string const& l) {
                  return l.find("goes in clear text over http://") != std::string::npos;
              }) == 1);
    }
    SECTION("no line over https, without credentials, or to this machine (which is reached)") {
        for (char const* url : {"https://cacheuser@cache.invalid/", "http://cache.invalid/"}) {
            o.url = url;
            cc::http_storage s(o);
            CHECK_FALSE(s.sends_credentials_in_clear());
            s.set_logger(logger);
        }
        std::string const base = unique_path("clear-loopback");
        o.url = "http://cacheuser@127.0.0.1:" + std::to_string(main_server().ports.at("basic")) + base;
        o.password = "pass-word-42";
        o.timeout = std::chrono::milliseconds(5000);
        o.connect_timeout = std::chrono::milliseconds(2000);
        cc::http_storage s(o);
        CHECK_FALSE(s.sends_credentials_in_clear());
        s.set_logger(logger);
        CHECK_FALSE(s.write(key_of(1), "over loopback"));
        std::string out;
        CHECK(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(lines.empty());
    }
}

TEST_CASE("a bearer token is read again from its file when the file changes", "[http][auth]") {
    compile_cache_test::temp_dir dir;
    fs::path const token = dir.path() / "token";
    write_file(token, "an-old-token\n");
    fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
    cc::http_options o;
    o.url = main_server().url("bearer", unique_path("bearer"));
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.timeout = std::chrono::milliseconds(5000);
    o.token_file = token.string();
    cc::http_storage s(o);
    std::error_code const refused = s.write(key_of(1), "x");
    CHECK(refused == cc::http_errc::auth);
    CHECK(s.last_failure().text.find("an-old-token") == std::string::npos);
    write_file(token, file_text(fixture_dir() / "bearer.token")); // rotated
    CHECK_FALSE(s.write(key_of(1), "with the new token"));
    std::string out;
    REQUIRE(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "with the new token");
    fs::remove(token);
    CHECK(s.read(key_of(1), out, 1 << 20).error == cc::http_errc::credentials);
}

TEST_CASE("a token file that is not one line of printable ASCII is refused, never sent as header lines",
          "[http][auth]") {
    compile_cache_test::temp_dir dir;
    fs::path const token = dir.path() / "token";
    cc::http_options o;
    o.url = main_server().url("bearer", unique_path("bearer-lines"));
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.timeout = std::chrono::milliseconds(5000);
    o.token_file = token.string();
    cc::http_storage s(o);
    std::string good = file_text(fixture_dir() / "bearer.token");
    while (!good.empty() && good.back() == '\n') good.pop_back();
    std::string const given = GENERATE_COPY(as<std::string>{}, good + "\r\nX-Injected: 1\n", good + "\n\n",
                                            good + " extra\n", std::string("\n"));
    write_file(token, given);
    fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
    CHECK(s.write(key_of(7), "x") == cc::http_errc::credentials);
    CHECK(s.last_failure().text.find("is not one line of printable ASCII") != std::string::npos);
    write_file(token, good + "\n"); // (and the file mended, it is used)
    CHECK_FALSE(s.write(key_of(7), "x"));
}

#if defined(COMPILE_CACHE_HELPER_http_alloc_faults)
TEST_CASE("out of memory at a process's first HTTP error: each call answers an error, the host lives on",
          "[http][faults]") {
    // A fresh process: http_category() is first used there, by the calls' own error.
    compile_cache_test::process_spec spec;
    spec.argv = {COMPILE_CACHE_HELPER_http_alloc_faults};
    spec.env = compile_cache_test::this_environment();
    compile_cache_test::process_result const r = compile_cache_test::run_process(spec);
    INFO(r.describe() << "\n" << r.out << r.err);
    CHECK(r.exited(0));
    CHECK(r.out.find("done\n") != std::string::npos);
}
#endif

TEST_CASE("a SIGPIPE raised while a request runs is taken back, and a host that blocks SIGPIPE keeps its own",
          "[http][signals]") {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    {
        cc::detail::sigpipe_blocked const guard;
        REQUIRE(pthread_kill(pthread_self(), SIGPIPE) == 0); // (as a write to a closed socket raises it)
    }
    sigset_t pending;
    REQUIRE(sigpending(&pending) == 0);
    CHECK(sigismember(&pending, SIGPIPE) == 0); // alive, and nothing left pending
    sigset_t mask;
    REQUIRE(pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0);
    CHECK(sigismember(&mask, SIGPIPE) == 0); // the mask as it was
    // A host that blocks SIGPIPE itself keeps the one raised for it, pending.
    sigset_t before;
    REQUIRE(pthread_sigmask(SIG_BLOCK, &pipe, &before) == 0);
    REQUIRE(pthread_kill(pthread_self(), SIGPIPE) == 0);
    {
        cc::detail::sigpipe_blocked const guard;
    }
    REQUIRE(sigpending(&pending) == 0);
    CHECK(sigismember(&pending, SIGPIPE) == 1);
    struct timespec const now {0, 0};
    CHECK(sigtimedwait(&pipe, nullptr, &now) == SIGPIPE);
    REQUIRE(pthread_sigmask(SIG_SETMASK, &before, nullptr) == 0);
}

// --- Addresses and settings ------------------------------------------------------------------

TEST_CASE("http_address parses http and https URLs and refuses a password in one", "[http][address]") {
    std::string why;
    auto a = cc::http_address::parse("https://user@cache.example:8443/a/b", why);
    REQUIRE(a);
    CHECK(a->tls);
    CHECK(a->user == "user");
    CHECK(a->host == "cache.example");
    CHECK(a->port == 8443);
    CHECK(a->base() == "https://cache.example:8443/a/b/");
    a = cc::http_address::parse("HTTP://[::1]/", why);
    REQUIRE(a);
    CHECK(a->port == 80);
    CHECK(a->base() == "http://[::1]/");
    CHECK_FALSE(cc::http_address::parse("https://user:hunter2@cache.example/", why));
    CHECK(why.find("password") != std::string::npos);
    CHECK(why.find("hunter2") == std::string::npos);
    for (char const* bad : {"https://", "http://host:0/", "http://host:99999/", "http://host/a?b", "ftp://host/",
                            "http://ho st/", "http://@host/"}) {
        INFO(bad);
        CHECK_FALSE(cc::http_address::parse(bad, why));
        CHECK_FALSE(why.empty());
    }
    CHECK_THROWS_AS(cc::http_storage("https://u:p@host/"), std::invalid_argument);
}

TEST_CASE("http_storage::from_env reads its settings and answers with itself or why it is off", "[http][settings]") {
    std::string const prefix = "CCHTTPTEST";
    compile_cache_test::env_var remote(prefix + "_REMOTE", main_server().url("plain", unique_path("from-env")));
    compile_cache_test::env_var layout(prefix + "_REMOTE_LAYOUT", "fanout");
    compile_cache_test::env_var connect_timeout(prefix + "_REMOTE_CONNECT_TIMEOUT", "3s");
    compile_cache_test::env_var timeout(prefix + "_REMOTE_TIMEOUT", "5s");
    std::vector<std::string> lines;
    SECTION("trusted: the storage, working") {
        auto r = cc::http_storage::from_env(settings_for(prefix, true, &lines));
        REQUIRE(r);
        CHECK(r->options().layout == cc::http_layout::fanout);
        CHECK(r->options().timeout == std::chrono::milliseconds(5000));
        CHECK_FALSE(r->write(key_of(1), "from the environment"));
        std::string out;
        CHECK(r->read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(lines.empty());
    }
    SECTION("no secret and no insecure setting: off, with the settings' reason") {
        cc::storage_settings const settings = settings_for(prefix, false, &lines);
        auto r = cc::http_storage::from_env(settings);
        CHECK_FALSE(r);
        CHECK(r.why_off() == settings.untrusted_remote_reason());
    }
    SECTION("another remote's URL, or none: not configured") {
        compile_cache_test::env_var redis(prefix + "_REMOTE", "redis://127.0.0.1:6379");
        auto r = cc::http_storage::from_env(settings_for(prefix, true, &lines));
        CHECK_FALSE(r);
        CHECK(r.why_off().empty());
        compile_cache_test::env_var off(prefix + "_REMOTE", "off");
        CHECK(cc::http_storage::from_env(settings_for(prefix, true, &lines)).why_off().empty());
    }
    SECTION("a password in the URL: off, with a sentence that does not show it") {
        compile_cache_test::env_var creds(prefix + "_REMOTE", "https://user:s3cret-pw@127.0.0.1/");
        auto r = cc::http_storage::from_env(settings_for(prefix, true, &lines));
        CHECK_FALSE(r);
        CHECK(r.why_off().find("password") != std::string::npos);
        CHECK(r.why_off().find("s3cret-pw") == std::string::npos);
        CHECK(r.why_off().find(prefix + "_REMOTE") != std::string::npos);
    }
    SECTION("a password file and a bad layout") {
        compile_cache_test::env_var url(prefix + "_REMOTE", "http://cacheuser@127.0.0.1:" +
                                                               std::to_string(main_server().ports.at("basic")) +
                                                               unique_path("from-env-basic"));
        compile_cache_test::env_var password(prefix + "_REMOTE_PASSWORD_FILE", (fixture_dir() / "basic.password").string());
        compile_cache_test::env_var bad_layout(prefix + "_REMOTE_LAYOUT", "sideways");
        auto r = cc::http_storage::from_env(settings_for(prefix, true, &lines));
        REQUIRE(r);
        CHECK(r->options().layout == cc::http_layout::flat);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find("sideways") != std::string::npos);
        CHECK_FALSE(r->write(key_of(1), "basic from the environment"));
    }
    SECTION("TLS settings: a CA file, and the insecure one said in one line") {
        compile_cache_test::env_var url(prefix + "_REMOTE", main_server().url("tls", unique_path("from-env-tls")));
        compile_cache_test::env_var ca(prefix + "_REMOTE_CA_FILE", (fixture_dir() / "tls" / "ca.pem").string());
        auto r = cc::http_storage::from_env(settings_for(prefix, true, &lines));
        REQUIRE(r);
        CHECK_FALSE(r->write(key_of(1), "tls from the environment"));
        CHECK(lines.empty());
        compile_cache_test::env_var insecure(prefix + "_REMOTE_TLS_INSECURE", "1");
        compile_cache_test::env_var no_ca(prefix + "_REMOTE_CA_FILE", nullptr);
        auto i = cc::http_storage::from_env(settings_for(prefix, true, &lines));
        REQUIRE(i);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find(prefix + "_REMOTE_TLS_INSECURE") != std::string::npos);
        CHECK_FALSE(i->write(key_of(1), "insecure from the environment"));
    }
    SECTION("a certificate without its key, or a missing file: off") {
        compile_cache_test::env_var cert(prefix + "_REMOTE_CERT_FILE", (fixture_dir() / "tls" / "client.pem").string());
        CHECK(cc::http_storage::from_env(settings_for(prefix, true, &lines)).why_off().find("_REMOTE_KEY_FILE") !=
              std::string::npos);
        compile_cache_test::env_var token(prefix + "_REMOTE_TOKEN_FILE", "/no/such/token");
        CHECK(cc::http_storage::from_env(settings_for(prefix, true, &lines)).why_off().find("/no/such/token") !=
              std::string::npos);
    }
    CHECK(cc::http_storage::environment_settings(prefix).size() == 12);
}

// --- Review fixes: one deadline, safe redirects, fork --------------------------------------

TEST_CASE("an https server's redirect to plain http is refused even where redirects are followed",
          "[http][status][tls]") {
    std::string const base = unique_path("downgrade");
    write_file(main_server().www() / "dav-target" / base.substr(1) / key_of(4).hex(), "in the clear");
    cc::http_options o;
    o.url = main_server().url("tls", "/downgrade" + base);
    o.ca_file = (fixture_dir() / "tls" / "ca.pem").string();
    o.connect_timeout = std::chrono::milliseconds(3000);
    o.timeout = std::chrono::milliseconds(5000);
    o.follow_redirects = true;
    cc::http_storage s(o);
    std::string out;
    cc::read_result const r = s.read(key_of(4), out, 1 << 20);
    CHECK(r.status == cc::read_status::error);
    CHECK(r.error == cc::http_errc::redirect);
    CHECK(out.empty());
    CHECK(s.last_failure().text.find("302") != std::string::npos);
    // The same redirect from a plain http server is followed (http to http).
    o.url = main_server().url("plain", "/downgrade" + base);
    o.ca_file.clear();
    cc::http_storage plain(o);
    REQUIRE(plain.read(key_of(4), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "in the clear");
}

TEST_CASE("a store's MKCOLs and second PUT share the store's one deadline", "[http][faults]") {
    // Every exchange takes a 160 ms round trip through the proxy: the PUT (500: no folder),
    // two MKCOLs and the PUT again would take 640 ms, past the 450 ms timeout.
    fs::create_directories(main_server().www() / "nofull");
    compile_cache_test::latency_proxy proxy(main_server().ports.at("plain"), std::chrono::milliseconds(80));
    proxy.start();
    cc::http_options o;
    o.url = "http://127.0.0.1:" + std::to_string(proxy.port()) + "/nofull" + unique_path("deadline");
    o.layout = cc::http_layout::fanout;
    o.connect_timeout = std::chrono::milliseconds(400);
    o.timeout = std::chrono::milliseconds(450);
    cc::http_storage s(o);
    CHECK(s.write(key_of(1), "late") == cc::http_errc::timeout);
    // With the time for all four, it is stored.
    o.timeout = std::chrono::milliseconds(5000);
    cc::http_storage patient(o);
    std::error_code const e = patient.write(key_of(2), "in time");
    INFO(patient.last_failure().text);
    CHECK_FALSE(e);
}

TEST_CASE("a forked child makes a connection of its own: parent and child read side by side, each its own answers",
          "[http][fork]") {
    cc::http_options o;
    o.url = main_server().url("plain", unique_path("fork"));
    o.connect_timeout = std::chrono::milliseconds(3000);
    o.timeout = std::chrono::milliseconds(5000);
    cc::http_storage s(o);
    std::string const parents(3000, 'p'), childs(5000, 'c');
    REQUIRE_FALSE(s.write(key_of(1), parents));
    REQUIRE_FALSE(s.write(key_of(2), childs));
    std::string out;
    REQUIRE(s.read(key_of(1), out, 1 << 20).status == cc::read_status::found); // the connection is open
    // Both read at once, 300 times: on one shared connection, each would read the other's
    // answers (wrong bytes) or a broken stream.
    std::fflush(nullptr);
    pid_t const child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int wrong = 0;
        std::string bytes;
        for (int i = 0; i < 300; ++i)
            if (s.read(key_of(2), bytes, 1 << 20).status != cc::read_status::found || bytes != childs) ++wrong;
        ::_exit(wrong == 0 ? 0 : 1);
    }
    int wrong = 0;
    for (int i = 0; i < 300; ++i)
        if (s.read(key_of(1), out, 1 << 20).status != cc::read_status::found || out != parents) ++wrong;
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(wrong == 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a tier over HTTP in a child forked while the parent's uploads were queued uses the server, on a "
          "connection of its own, and the uploads of both reach it",
          "[http][fork][tiered]") {
    // The HTTP storage says that a forked child makes handles of its own (a tier and
    // remote_by_url read it): the tier then uses it in such a child.
    CHECK(cc::detail::remote_reconnects_after_fork<cc::http_storage>());
    CHECK(cc::detail::remote_reconnects_after_fork<cc::remote_by_url<cc::http_storage>>());
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    // Every exchange takes a 40 ms round trip: the parent's six uploads take a quarter of a
    // second, and most are still queued when it forks.
    compile_cache_test::latency_proxy proxy(main_server().ports.at("plain"), std::chrono::milliseconds(20));
    proxy.start();
    std::string const base = unique_path("fork-tier");
    cc::http_storage direct = storage_at(main_server().url("plain", base));
    REQUIRE_FALSE(direct.write(key_of(100), "on the server")); // in no local directory
    cc::http_options o;
    o.url = "http://127.0.0.1:" + std::to_string(proxy.port()) + base;
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    compile_cache_test::temp_dir dir;
    tier s(cc::directory_storage((dir.path() / "cache").string()), cc::http_storage(o));
    for (unsigned i = 0; i < 6; ++i) REQUIRE_FALSE(s.write(key_of(i), "parent's " + std::to_string(i)));

    std::string const child = compile_cache_test::run_in_child([&]() -> std::string {
        std::string out;
        cc::read_result const r = s.read(key_of(100), out, 1 << 20);
        if (r.status != cc::read_status::found || out != "on the server")
            return "the child did not read the server's entry (status " + std::to_string(static_cast<int>(r.status)) +
                   ")";
        if (s.write(key_of(50), "the child's")) return "the child's store failed";
        if (!s.wait_for_uploads(std::chrono::milliseconds(5000))) return "the child's upload did not go out";
        return "ok";
    });
    CHECK(child == "ok");
    CHECK(s.wait_for_uploads(std::chrono::milliseconds(5000)));
    std::string out;
    CHECK(direct.read(key_of(50), out, 1 << 20).status == cc::read_status::found);
    CHECK(out == "the child's");
    for (unsigned i = 0; i < 6; ++i) {
        INFO(i);
        CHECK(direct.read(key_of(i), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "parent's " + std::to_string(i));
    }
}

// --- Batched reads ---------------------------------------------------------------------------

TEST_CASE("read_many answers each key as read would, with concurrent GETs", "[http][batch]") {
    std::string const base = unique_path("batch");
    cc::http_options o;
    o.url = main_server().url("plain", base);
    o.layout = cc::http_layout::fanout;
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.batch_connections = 3;
    cc::http_storage s(o);
    std::vector<cc::key> keys;
    for (unsigned i = 0; i < 20; ++i) {
        keys.push_back(key_of(i));
        if (i % 4 != 3) REQUIRE_FALSE(s.write(key_of(i), "entry " + std::to_string(i) + std::string(i * 100, 'x')));
    }
    keys.push_back(key_of(1)); // twice
    std::vector<std::pair<cc::read_result, std::string>> got;
    for (int round = 0; round < 2; ++round) { // the second on the kept connections
        s.read_many(keys, 1000, got);
        REQUIRE(got.size() == keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
            INFO(i);
            std::string one;
            cc::read_result const alone = s.read(keys[i], one, 1000);
            CHECK(got[i].first.status == alone.status);
            CHECK(got[i].first.error == alone.error);
            CHECK(got[i].second == one);
        }
    }
    CHECK(got[0].first.status == cc::read_status::found);
    CHECK(got[3].first.status == cc::read_status::absent);
    CHECK(got[18].first.status == cc::read_status::too_large); // 1808 bytes, past 1000
    CHECK(got[20].second == "entry 1" + std::string(100, 'x'));
    std::vector<std::pair<cc::read_result, std::string>> none;
    s.read_many({}, 1000, none);
    CHECK(none.empty());
}

TEST_CASE("read_many takes no more than batch_max_bytes in all: the keys past it are errors", "[http][batch]") {
    cc::http_options o;
    o.url = main_server().url("plain", unique_path("batch-bound"));
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.batch_connections = 1; // one at a time: which keys pass the bound is then known
    o.batch_max_bytes = 2500;
    cc::http_storage s(o);
    std::vector<cc::key> keys;
    for (unsigned i = 0; i < 4; ++i) {
        keys.push_back(key_of(i));
        REQUIRE_FALSE(s.write(key_of(i), std::string(1000, static_cast<char>('a' + i))));
    }
    std::vector<std::pair<cc::read_result, std::string>> got;
    s.read_many(keys, 1 << 20, got);
    REQUIRE(got.size() == 4);
    CHECK(got[0].first.status == cc::read_status::found);
    CHECK(got[1].first.status == cc::read_status::found);
    CHECK(got[2].first.status == cc::read_status::error);
    CHECK(got[2].first.error == cc::http_errc::too_large);
    CHECK(got[2].second.empty());
    CHECK(got[3].first.status == cc::read_status::error);
}

TEST_CASE("read_many counts the bodies still streaming in against batch_max_bytes, so that the bound holds",
          "[http][batch][bounds]") {
    cc::http_options o;
    o.url = main_server().url("plain", unique_path("batch-in-flight"));
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.batch_connections = 4; // room for every GET at once, were the bound not counted
    o.batch_max_bytes = 2500;
    cc::http_storage s(o);
    std::vector<cc::key> large, small; // bodies of 1000 and of 600 bytes
    for (unsigned i = 0; i < 4; ++i) {
        large.push_back(key_of(i));
        REQUIRE_FALSE(s.write(key_of(i), std::string(1000, static_cast<char>('a' + i))));
        small.push_back(key_of(10 + i));
        REQUIRE_FALSE(s.write(key_of(10 + i), std::string(600, static_cast<char>('k' + i))));
    }
    std::vector<std::pair<cc::read_result, std::string>> got;
    auto held = [&] {
        std::size_t n = 0;
        for (auto const& g : got) n += g.second.size();
        return n;
    };
    SECTION("four GETs at once share the bound: bodies past a share (625) are errors (too_large), none held") {
        s.read_many(large, 1000, got);
        REQUIRE(got.size() == 4);
        for (std::size_t i = 0; i < 4; ++i) {
            INFO(i);
            CHECK(got[i].first.status == cc::read_status::error);
            CHECK(got[i].first.error == cc::http_errc::too_large);
        }
        CHECK(held() == 0);
    }
    SECTION("bodies within their share are all found, together within the bound") {
        s.read_many(small, 1000, got);
        REQUIRE(got.size() == 4);
        for (std::size_t i = 0; i < 4; ++i) {
            INFO(i);
            CHECK(got[i].first.status == cc::read_status::found);
            CHECK(got[i].second == std::string(600, static_cast<char>('k' + i)));
        }
        CHECK(held() <= o.batch_max_bytes);
    }
    SECTION("a batch of two uses two connections: each has half the bound (1250) and its body is found") {
        s.read_many({large[0], large[1]}, 2000, got);
        REQUIRE(got.size() == 2);
        for (auto const& [result, bytes] : got) {
            CHECK(result.status == cc::read_status::found);
            CHECK(bytes.size() == 1000);
        }
    }
    SECTION("an entry over the entry bound itself is too_large, not an error of the batch") {
        s.read_many({large[0]}, 999, got);
        REQUIRE(got.size() == 1);
        CHECK(got[0].first.status == cc::read_status::too_large);
    }
}

TEST_CASE("read_many: a body cut short holds no memory after it fails, so the batch's bound holds over all",
          "[http][batch][bounds][faults]") {
    // The hostile server announces 600,000 bytes for the cc... entry, sends 1,000 and closes
    // the connection; every other entry is 100,000 bytes. The announced length is reserved
    // as the body starts: were it kept after the failure, the ten bodies found after it
    // (1,000,000 bytes, within the bound alone) would hold 1.6 MB against a bound of 1 MiB.
    hostile_webdav server("cut");
    cc::http_options o;
    o.url = server.url();
    o.layout = cc::http_layout::flat;
    o.timeout = std::chrono::milliseconds(5000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    o.batch_connections = 1; // one GET at a time: the cut one first
    o.batch_max_bytes = std::size_t{1} << 20;
    cc::http_storage s(o);
    std::vector<cc::key> keys{*cc::key::from_hex("cc" + std::string(62, '0'))};
    for (unsigned i = 0; i < 10; ++i) keys.push_back(key_of(i));
    for (cc::key const& k : keys) REQUIRE((k.hex().rfind("cc", 0) == 0) == (&k == &keys[0]));
    std::vector<std::pair<cc::read_result, std::string>> got;
    s.read_many(keys, std::size_t{1} << 20, got);
    REQUIRE(got.size() == keys.size());
    CHECK(got[0].first.status == cc::read_status::error);
    CHECK(got[0].first.error == cc::http_errc::reset);
    CHECK(got[0].second.empty());
    CHECK(got[0].second.capacity() <= std::string().capacity()); // its 600,000 bytes given back
    std::size_t held = 0; // the memory the batch's answers hold
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO(i);
        held += got[i].second.capacity();
        if (i > 0) {
            CHECK(got[i].first.status == cc::read_status::found);
            CHECK(got[i].second == std::string(100000, 'k'));
        }
    }
    CHECK(held <= o.batch_max_bytes);
}

namespace {

/// A storage's options on `server`'s plain location (a fresh path named after `name`)
/// whose calls give up within 400 ms, 200 ms of it to connect: the stopped-server cases.
cc::http_options short_timeouts_on(own_server& server, std::string const& name) {
    cc::http_options o;
    o.url = server.server().url("plain", unique_path(name));
    o.timeout = std::chrono::milliseconds(400);
    o.connect_timeout = std::chrono::milliseconds(200);
    return o;
}

} // namespace

TEST_CASE("read_many on a stopped server: every key an error within the one timeout", "[http][batch][faults]") {
    own_server stopped("batch-stopped");
    cc::http_storage s(short_timeouts_on(stopped, "batch-stopped"));
    REQUIRE_FALSE(s.write(key_of(1), "before"));
    REQUIRE(::kill(stopped.pid(), SIGSTOP) == 0);
    std::vector<cc::key> keys;
    for (unsigned i = 0; i < 30; ++i) keys.push_back(key_of(i));
    std::vector<std::pair<cc::read_result, std::string>> got;
    s.read_many(keys, 1 << 20, got);
    REQUIRE(got.size() == keys.size());
    for (auto const& g : got) {
        CHECK(g.first.status == cc::read_status::error);
        CHECK(g.first.error == cc::http_errc::timeout);
        CHECK(g.second.empty());
    }
    REQUIRE(::kill(stopped.pid(), SIGCONT) == 0);
    s.read_many({key_of(1)}, 1 << 20, got);
    REQUIRE(got[0].first.status == cc::read_status::found);
    CHECK(got[0].second == "before");
}

TEST_CASE("write_many stores each entry as write would, with concurrent PUTs, making a fan-out layout's folders",
          "[http][batch]") {
    for (cc::http_layout const layout : {cc::http_layout::flat, cc::http_layout::fanout}) {
        INFO(static_cast<int>(layout));
        cc::http_options o;
        o.url = main_server().url("plain", unique_path("batch-write"));
        o.layout = layout;
        o.timeout = std::chrono::milliseconds(5000);
        o.connect_timeout = std::chrono::milliseconds(2000);
        o.batch_connections = 3;
        cc::http_storage s(o);
        std::vector<std::string> values;
        std::vector<std::pair<cc::key, std::string_view>> entries;
        for (unsigned i = 0; i < 20; ++i) values.push_back("entry " + std::to_string(i) + std::string(i * 100, 'x'));
        for (unsigned i = 0; i < 20; ++i) entries.emplace_back(key_of(i), values[i]);
        std::vector<std::error_code> out;
        s.write_many(entries, out);
        REQUIRE(out.size() == entries.size());
        for (unsigned i = 0; i < 20; ++i) {
            INFO(i);
            CHECK_FALSE(out[i]);
            std::string bytes;
            CHECK(s.read(key_of(i), bytes, 1 << 20).status == cc::read_status::found);
            CHECK(bytes == values[i]);
        }
        // Again, on the kept connections: the entries replaced.
        std::string const replaced = "replaced";
        for (auto& e : entries) e.second = replaced;
        s.write_many(entries, out);
        REQUIRE(out.size() == entries.size());
        for (unsigned i = 0; i < 20; ++i) {
            CHECK_FALSE(out[i]);
            std::string bytes;
            CHECK(s.read(key_of(i), bytes, 1 << 20).status == cc::read_status::found);
            CHECK(bytes == replaced);
        }
        s.write_many({}, out);
        CHECK(out.empty());
    }
}

namespace {
/// What a host's reads gave while write_many held one of the storage's upload lanes.
struct reads_during_uploads {
    cc::http_storage* storage = nullptr;
    cc::key stored;
    std::vector<std::string> lanes_held; ///< the upload lanes held, in turn
    std::vector<std::string> answers;    ///< for each: "read <status>, read_many <status>"
};
reads_during_uploads* during_uploads = nullptr;

/// write_many's thread has just taken an upload lane: a host thread reads the stored
/// entry alone and in a batch (each within the storage's timeout), and this one waits
/// for it before using the lane.
void read_while_uploading(char const* lane) {
    std::string const name = lane;
    if (name != "uploads" && name != "upload calls") return;
    reads_during_uploads& d = *during_uploads;
    d.lanes_held.push_back(name);
    std::thread host([&d] {
        std::string bytes;
        cc::read_result const one = d.storage->read(d.stored, bytes, 1 << 20);
        std::vector<std::pair<cc::read_result, std::string>> many;
        d.storage->read_many({d.stored}, 1 << 20, many);
        bool const found_one = one.status == cc::read_status::found && bytes == "stored before";
        bool const found_many = many.size() == 1 && many[0].first.status == cc::read_status::found &&
                                many[0].second == "stored before";
        d.answers.push_back(std::string("read ") + (found_one ? "found" : "not found") + ", read_many " +
                            (found_many ? "found" : "not found"));
    });
    host.join();
}
} // namespace

TEST_CASE("a host's read and read_many never wait behind write_many's uploads or their follow-ups",
          "[http][batch]") {
    fs::create_directories(main_server().www() / "nofull");
    cc::http_options o;
    o.url = main_server().url("plain", "/nofull" + unique_path("lanes")); // no folder made by a PUT
    o.layout = cc::http_layout::fanout;
    o.timeout = std::chrono::milliseconds(1000); // what a read waiting behind the upload would wait, then fail
    o.connect_timeout = std::chrono::milliseconds(1000);
    cc::http_storage s(o);
    REQUIRE_FALSE(s.write(key_of(1), "stored before"));
    // key_of(2) is in another fan-out folder, not made yet: its PUT is answered 409 or 500,
    // and write_many follows it up (MKCOLs, the PUT again) on the lane of its follow-ups.
    REQUIRE(key_of(2).hex().substr(0, 2) != key_of(1).hex().substr(0, 2));
    reads_during_uploads d;
    d.storage = &s;
    d.stored = key_of(1);
    during_uploads = &d;
    cc::detail::http_lane_held_for_testing = read_while_uploading;
    std::vector<std::error_code> out;
    s.write_many({{key_of(2), std::string_view("uploaded")}}, out);
    cc::detail::http_lane_held_for_testing = nullptr;
    during_uploads = nullptr;
    REQUIRE_FALSE(d.answers.empty());
    for (std::string const& answer : d.answers) CHECK(answer == "read found, read_many found");
    REQUIRE(out.size() == 1);
    CHECK_FALSE(out[0]);
    REQUIRE(d.lanes_held.size() >= 2);
    CHECK(d.lanes_held.front() == "uploads");
    CHECK(d.lanes_held.back() == "upload calls");
    std::string bytes;
    CHECK(s.read(key_of(2), bytes, 1 << 20).status == cc::read_status::found);
    CHECK(bytes == "uploaded");
}

TEST_CASE("write_many on a stopped server: every entry an error within the one timeout", "[http][batch][faults]") {
    own_server stopped("batch-write-stopped");
    cc::http_storage s(short_timeouts_on(stopped, "batch-write-stopped"));
    REQUIRE_FALSE(s.write(key_of(1), "before"));
    REQUIRE(::kill(stopped.pid(), SIGSTOP) == 0);
    std::vector<std::pair<cc::key, std::string_view>> entries;
    for (unsigned i = 0; i < 30; ++i) entries.emplace_back(key_of(i), "after");
    std::vector<std::error_code> out;
    s.write_many(entries, out);
    REQUIRE(out.size() == entries.size());
    for (auto const& e : out) CHECK(e == cc::http_errc::timeout);
    REQUIRE(::kill(stopped.pid(), SIGCONT) == 0);
    std::string bytes;
    REQUIRE(s.read(key_of(1), bytes, 1 << 20).status == cc::read_status::found);
}

TEST_CASE("a tier's worker sends the uploads queued while the server was stopped as one batch of concurrent PUTs",
          "[http][batch][tiered]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    own_server paused("batch-upload");
    compile_cache_test::temp_dir dir;
    std::string const base = unique_path("batch-upload");
    cc::http_options o;
    o.url = paused.server().url("plain", base);
    o.timeout = std::chrono::milliseconds(10000);
    o.connect_timeout = std::chrono::milliseconds(2000);
    tier t(cc::directory_storage((dir.path() / "local").string()), cc::http_storage(o));
    // The server takes nothing: the worker's first call waits for it, the host queues the rest.
    REQUIRE(::kill(paused.pid(), SIGSTOP) == 0);
    for (unsigned i = 0; i < 40; ++i) CHECK_FALSE(t.write(key_of(i), "entry " + std::to_string(i)));
    CHECK_FALSE(t.wait_for_uploads(std::chrono::milliseconds(0)));
    REQUIRE(::kill(paused.pid(), SIGCONT) == 0);
    REQUIRE(t.wait_for_uploads(std::chrono::seconds(20)));
    std::map<std::string, std::uint64_t> c;
    for (auto const& [name, n] : t.storage_counters()) c[name] = n;
    CHECK(c["remote.uploads-sent"] == 40);
    CHECK(c["remote.stores"] == 40);
    CHECK(c["remote.upload-batches"] >= 1);
    CHECK(c["remote.upload-batches"] < 40);
    cc::http_storage reader(o);
    for (unsigned i = 0; i < 40; ++i) {
        std::string bytes;
        CHECK(reader.read(key_of(i), bytes, 1 << 20).status == cc::read_status::found);
        CHECK(bytes == "entry " + std::to_string(i));
    }
}

// --- The remote chosen by URL ----------------------------------------------------------------

TEST_CASE("remote_by_url gives an http:// PREFIX_REMOTE to the HTTP storage, through the tier", "[http][settings][tiered]") {
    using remote = cc::remote_by_url<cc::http_storage>;
    using tier = cc::tiered_storage<cc::directory_storage, remote>;
    std::string const prefix = "CCHTTPBYURL";
    compile_cache_test::temp_dir dir;
    compile_cache_test::env_var local(prefix + "_DIR", (dir.path() / "cache").string());
    compile_cache_test::env_var url(prefix + "_REMOTE", main_server().url("plain", unique_path("by-url")));
    compile_cache_test::env_var insecure(prefix + "_REMOTE_INSECURE", "1");
    std::vector<std::string> lines;
    SECTION("http: the tier's remote is the HTTP storage") {
        auto t = tier::from_env(settings_for(prefix, true, &lines));
        REQUIRE(t);
        REQUIRE(t->has_remote());
        REQUIRE(t->remote().get<cc::http_storage>() != nullptr);
        CHECK(t->remote().describe().find("HTTP server http://127.0.0.1:") == 0);
        REQUIRE_FALSE(t->write(key_of(1), "through the tier"));
        REQUIRE(t->wait_for_uploads(std::chrono::seconds(10)));
        std::string out;
        CHECK(t->remote().read(key_of(1), out, 1 << 20).status == cc::read_status::found);
        CHECK(out == "through the tier");
        std::vector<std::pair<cc::read_result, std::string>> got;
        t->remote().read_many({key_of(1), key_of(2)}, 1 << 20, got);
        CHECK(got[0].second == "through the tier");
        CHECK(got[1].first.status == cc::read_status::absent);
    }
    SECTION("a scheme no alternative has: the remote is off with a line naming only the scheme") {
        compile_cache_test::env_var redis(prefix + "_REMOTE", "redis://:hunter2@127.0.0.1:6379");
        auto t = tier::from_env(settings_for(prefix, true, &lines));
        REQUIRE(t);
        CHECK_FALSE(t->has_remote());
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].find("\"redis\"") != std::string::npos);
        CHECK(lines[0].find(prefix + "_REMOTE") != std::string::npos);
        CHECK(lines[0].find("hunter2") == std::string::npos);
    }
    CHECK(remote::handles_url("HTTPS://host/"));
    CHECK_FALSE(remote::handles_url("redis://host"));
}

// --- Through the cache: a planted file, the tier's modes ---------------------------------

TEST_CASE("a file planted at an entry's URL is a counted miss: the kernel compiles, nothing is copied or overwritten",
          "[http][tiered][faults]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::http_storage>;
    using cache = cc::basic_cache<cc::sha256, cc::boost_binary, cc::registry, tier>;
    using compile_cache_test::model::code_kernel;
    compile_cache_test::temp_dir dir;
    std::string const base = unique_path("planted");
    cc::tier_options sync;
    sync.upload = cc::remote_upload::sync;
    cc::cache_options o;
    o.secret = "one secret";
    cache c(tier(cc::directory_storage((dir.path() / "cache").string()), storage_at(main_server().url("plain", base)), sync),
            o);
    cc::key_result const kr = c.make_key_builder("http_storage_test").add("ir", "planted").finish();
    REQUIRE(kr);
    write_file(main_server().www() / base.substr(1) / kr.value().hex(), "not an entry, planted on the server");
    auto r = c.get_or_compile<code_kernel>(kr, {"planted", "f.tk", 1}, [] { return code_kernel{{1, 2}}; });
    CHECK(r.outcome == cc::outcome::compiled);
    CHECK(r.value.code == std::vector<int>{1, 2});
    auto count = [&](std::string const& name) {
        for (auto const& [n, v] : c.stats().storage_counters)
            if (n == name) return v;
        return std::uint64_t{0};
    };
    INFO(c.stats().summary());
    // Under a secret, bytes that are no entry of it do not authenticate: counted so, and
    // the store that follows leaves the server's file alone (as another secret's entry).
    CHECK(count("remote.errors.unauthenticated") == 1);
    CHECK(count("remote.hits") == 0);
    CHECK(count("remote.store-skipped.foreign") == 1);
    CHECK(c.stats().total_misses() == 1);
}

TEST_CASE("the tier's modes hold over HTTP: read-only stores nothing there, remote-only keeps nothing here",
          "[http][tiered][settings]") {
    using tier = cc::tiered_storage<cc::directory_storage, cc::remote_by_url<cc::http_storage>>;
    std::string const prefix = "CCHTTPMODES";
    compile_cache_test::temp_dir dir;
    std::string const base = unique_path("modes");
    compile_cache_test::env_var local(prefix + "_DIR", (dir.path() / "cache").string());
    compile_cache_test::env_var url(prefix + "_REMOTE", main_server().url("plain", base));
    compile_cache_test::env_var sync(prefix + "_REMOTE_UPLOAD", "sync");
    fs::path const on_server = main_server().www() / base.substr(1) / key_of(1).hex();
    std::vector<std::string> lines;
    SECTION("read-only") {
        compile_cache_test::env_var mode(prefix + "_REMOTE_MODE", "read-only");
        auto t = tier::from_env(settings_for(prefix, true, &lines));
        REQUIRE(t);
        REQUIRE(t->has_remote());
        CHECK_FALSE(t->write(key_of(1), "kept here"));
        CHECK(t->wait_for_uploads(std::chrono::seconds(10)));
        CHECK_FALSE(fs::exists(on_server));
        write_file(main_server().www() / base.substr(1) / key_of(2).hex(), "from the fleet");
        std::string out;
        CHECK(t->read(key_of(2), out, 1 << 20).status == cc::read_status::found);
    }
    SECTION("remote-only") {
        compile_cache_test::env_var only(prefix + "_REMOTE_ONLY", "1");
        auto t = tier::from_env(settings_for(prefix, true, &lines));
        REQUIRE(t);
        CHECK_FALSE(t->has_local());
        CHECK_FALSE(t->write(key_of(1), "kept there"));
        CHECK(t->wait_for_uploads(std::chrono::seconds(10)));
        CHECK(file_text(on_server) == "kept there");
        CHECK_FALSE(fs::exists(dir.path() / "cache"));
    }
}

// --- Name resolution -----------------------------------------------------------------------

namespace {
/// In this (forked) process: new user, mount and network namespaces, the loopback up, and
/// /etc/resolv.conf replaced by one naming a DNS server on 127.0.0.1:53 that never
/// answers (a UDP socket nobody reads). Empty, or why it could not be set up.
std::string with_a_dns_server_that_never_answers(std::string const& scratch) {
    uid_t const uid = ::getuid();
    gid_t const gid = ::getgid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0) return "unshare: " + std::string(std::strerror(errno));
    auto write_to = [](char const* path, std::string const& text) {
        int const fd = ::open(path, O_WRONLY);
        bool const ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        if (fd >= 0) ::close(fd);
        return ok;
    };
    write_to("/proc/self/setgroups", "deny");
    if (!write_to("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_to("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
        return "cannot map the user into its namespace";
    int const s = ::socket(AF_INET, SOCK_DGRAM, 0);
    ifreq lo{};
    std::strcpy(lo.ifr_name, "lo");
    if (s < 0 || ::ioctl(s, SIOCGIFFLAGS, &lo) != 0) return "cannot read the loopback's flags";
    lo.ifr_flags = static_cast<short>(lo.ifr_flags | IFF_UP);
    if (::ioctl(s, SIOCSIFFLAGS, &lo) != 0) return "cannot bring the loopback up";
    int const dns = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (dns < 0 || ::bind(dns, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "cannot listen on port 53";
    std::string const conf = scratch + "/resolv.conf";
    { std::ofstream(conf) << "nameserver 127.0.0.1\noptions timeout:5 attempts:2\n"; }
    if (::mount(conf.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0)
        return "cannot mount over /etc/resolv.conf: " + std::string(std::strerror(errno));
    return {};
}
} // namespace

TEST_CASE("a name whose DNS server never answers costs the connect timeout and not the resolver timeout",
          "[http][faults][dns]") {
    compile_cache_test::temp_dir dir;
    std::string const answer = compile_cache_test::run_in_child([&]() -> std::string {
        std::string const why = with_a_dns_server_that_never_answers(dir.path().string());
        if (!why.empty()) return "skip: " + why;
        cc::http_options o;
        o.url = "http://cache.compile-cache-test.example/x/";
        o.connect_timeout = std::chrono::milliseconds(200);
        o.timeout = std::chrono::milliseconds(400);
        cc::http_storage s(o);
        std::string out;
        auto const start = std::chrono::steady_clock::now();
        cc::read_result const r = s.read(key_of(1), out, 1 << 20);
        auto const took = std::chrono::steady_clock::now() - start;
        if (r.status != cc::read_status::error) return "the read did not fail";
        if (r.error != cc::http_errc::timeout) return "not a timeout: " + r.error.message() + ": " + s.last_failure().text;
        // The resolver would wait 2 x 5 s; the call ends near its 400 ms (a loaded machine: < 5 s).
        if (took > std::chrono::seconds(5)) return "the call waited for the resolver";
        return "ok";
    });
    if (answer.rfind("skip: ", 0) == 0) {
        WARN("no namespaces here to stand up a silent DNS server (" << answer << "): not checked");
        return;
    }
    CHECK(answer == "ok");
}

// --- Signed entries: CI writes, developers read (signing/signed_entries.hpp) ---------------

#if COMPILE_CACHE_TEST_SIGNING

namespace {

/// A machine before a WebDAV server: `signatures` a writer's or a reader's, local entries
/// under `secret` (support/tier_machine.hpp; the Redis signed tests use the same).
struct signed_machine : compile_cache_test::tier_machine<cc::http_storage> {
    signed_machine(fs::path const& local, std::string const& url, std::shared_ptr<cc::entry_signatures const> signatures,
                   std::string secret = {})
        : tier_machine(local.string(), storage_at(url), with_signatures(std::move(signatures), std::move(secret)),
                       sync_uploads(), "signed_http_test", true) {}
};

/// The server's access log lines from line `from` on (access_log_lines waits for it to settle).
std::vector<std::string> access_log_from(nginx_server const& s, std::size_t from) {
    access_log_lines(s);
    std::ifstream in(s.home / "access.log");
    std::vector<std::string> lines;
    std::string line;
    for (std::size_t i = 0; std::getline(in, line); ++i)
        if (i >= from) lines.push_back(line);
    return lines;
}

/// How many of `lines` are requests of `method` ("GET", "PUT", ...).
std::size_t requests_of(std::vector<std::string> const& lines, std::string const& method) {
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](std::string const& l) {
        return l.find("\"" + method + " ") != std::string::npos;
    }));
}

} // namespace

TEST_CASE("signed over HTTP: CI fills a WebDAV server through its tier, a reader with trusted keys only loads all 40, "
          "then locally with no request, and sends no write",
          "[http][tiered][signing]") {
    own_server server("signed"); // its access log counts this test's requests alone
    compile_cache_test::temp_dir dir;
    std::string const url = server.server().url("plain", unique_path("signed"));
    cc::ed25519_signer ci = compile_cache_test::new_signing_key("ci-2026");
    cc::trusted_keys const keys = compile_cache_test::trusting({ci.public_key()});
    {
        signed_machine writer(dir.path() / "ci", url, compile_cache_test::writer_of(std::move(ci)));
        for (int i = 0; i < 40; ++i) CHECK(writer.get(i) == cc::outcome::compiled);
        CHECK(writer.remote("stores") == 40);
    }
    std::size_t const before_reader = access_log_lines(server.server());
    {
        // Read-write by default: without a signing key the tier is read-only all the same.
        signed_machine dev(dir.path() / "dev", url, compile_cache_test::reader_of(keys), "dev secret");
        for (int i = 0; i < 40; ++i) CHECK(dev.get(i) == cc::outcome::loaded);
        CHECK(dev.remote("hits") == 40);
        CHECK(dev.get(1000) == cc::outcome::compiled); // its own kernel: kept locally, not sent
        CHECK(dev.remote("stores") == 0);
    }
    std::vector<std::string> const reader_requests = access_log_from(server.server(), before_reader);
    INFO(reader_requests.size() << " requests from the reader");
    CHECK(requests_of(reader_requests, "GET") >= 40);
    CHECK(requests_of(reader_requests, "PUT") == 0);
    CHECK(requests_of(reader_requests, "DELETE") == 0);
    CHECK(requests_of(reader_requests, "MKCOL") == 0);
    CHECK(requests_of(reader_requests, "GET") + requests_of(reader_requests, "HEAD") == reader_requests.size());

    std::size_t const before_again = access_log_lines(server.server());
    {
        signed_machine dev(dir.path() / "dev", url, compile_cache_test::reader_of(keys), "dev secret");
        for (int i = 0; i < 40; ++i) CHECK(dev.get(i) == cc::outcome::loaded);
        CHECK(dev.remote("hits") == 0); // every one from the local copy, resealed under the dev secret
    }
    CHECK(access_log_from(server.server(), before_again).empty());
}

TEST_CASE("signed over HTTP: what a reader plants on the server (HMAC-sealed with its secret, signed by its own key, "
          "one byte changed) never loads on another machine",
          "[http][tiered][signing][security]") {
    compile_cache_test::temp_dir dir;
    std::string const base = unique_path("signed-planted");
    std::string const url = main_server().url("plain", base);
    cc::ed25519_signer ci = compile_cache_test::new_signing_key("ci-2026");
    cc::trusted_keys const keys = compile_cache_test::trusting({ci.public_key()});
    signed_machine ci_machine(dir.path() / "ci", url, compile_cache_test::writer_of(std::move(ci)));
    for (int i = 0; i < 4; ++i) CHECK(ci_machine.get(i) == cc::outcome::compiled);

    // The thief holds a reader's HMAC secret and a key of its own that nobody trusts, and
    // the server lets it PUT.
    cc::http_storage raw = storage_at(url);
    auto const plant = [&](int n, std::string const& bytes) { REQUIRE_FALSE(raw.write(ci_machine.key(n).value(), bytes)); };
    {
        // 0: sealed with the reader's HMAC secret, as its local copies are.
        signed_machine thief(dir.path() / "thief", main_server().url("plain", unique_path("thief")), nullptr,
                             "dev secret");
        CHECK(thief.get(0) == cc::outcome::compiled);
        std::string bytes;
        REQUIRE(thief.cache.storage().local().read(thief.key(0).value(), bytes, 1 << 20).status ==
                cc::read_status::found);
        plant(0, bytes);
    }
    {
        // 1: signed by the reader's own key.
        signed_machine rogue(dir.path() / "rogue", main_server().url("plain", unique_path("rogue")),
                             compile_cache_test::writer_of(compile_cache_test::new_signing_key("laptop")));
        CHECK(rogue.get(1) == cc::outcome::compiled);
        std::string bytes;
        REQUIRE(rogue.cache.storage().remote().read(rogue.key(1).value(), bytes, 1 << 20).status ==
                cc::read_status::found);
        plant(1, bytes);
    }
    {
        // 2: CI's entry with one payload byte changed.
        std::string bytes;
        REQUIRE(raw.read(ci_machine.key(2).value(), bytes, 1 << 20).status == cc::read_status::found);
        bytes[bytes.size() - 80] = static_cast<char>(bytes[bytes.size() - 80] ^ 0x01);
        plant(2, bytes);
    }
    signed_machine third(dir.path() / "third", url, compile_cache_test::reader_of(keys), "third secret");
    for (int i = 0; i < 3; ++i) CHECK(third.get(i) == cc::outcome::compiled); // each value checked: never the planted
    CHECK(third.get(3) == cc::outcome::loaded);
    cc::statistics_snapshot const st = third.cache.stats();
    INFO(st.summary());
    CHECK(st.miss_count(cc::miss_reason::unauthenticated) == 2); // HMAC-sealed, one byte changed
    CHECK(st.miss_count(cc::miss_reason::untrusted_signer) == 1);
    CHECK(third.remote("hits") == 1);
    // Nothing planted was copied here: a fresh machine on this local directory, with the
    // server's copies still planted, loads the kernels it compiled itself.
    signed_machine third_again(dir.path() / "third", url, compile_cache_test::reader_of(keys), "third secret");
    for (int i = 0; i < 4; ++i) CHECK(third_again.get(i) == cc::outcome::loaded);
    CHECK(third_again.remote("hits") == 0);
}

#endif // COMPILE_CACHE_TEST_SIGNING
