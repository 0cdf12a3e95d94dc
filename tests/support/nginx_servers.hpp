// Real nginx servers for the HTTP tests (tests/http/): the shared server `main` that
// ctest's fixture started (tests/http/nginx_fixture.sh start, in
// COMPILE_CACHE_HTTP_FIXTURE_DIR), and servers of a test's own (to stop or kill), started
// by the same script under the same folder so that the fixture's cleanup stops them even
// when a test fails. Each server listens on 127.0.0.1 on five ports (plain, basic,
// bearer, tls, and h2: TLS with HTTP/2) and logs every request it answered. Needs COMPILE_CACHE_HTTP_FIXTURE_SCRIPT.
#pragma once

#include "catch2_compat.hpp"
#include "support/process.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>

#include <sys/types.h>
#include <unistd.h>

namespace compile_cache_test::nginx {

/// The fixture's folder (COMPILE_CACHE_HTTP_FIXTURE_DIR, which ctest sets).
inline std::filesystem::path fixture_dir() {
    char const* d = std::getenv("COMPILE_CACHE_HTTP_FIXTURE_DIR");
    REQUIRE(d != nullptr);
    return d;
}

/// A server of the fixture: its folder and its five ports.
struct server {
    std::filesystem::path home;
    std::map<std::string, int> ports;

    /// `path` on the port of `kind` (plain, basic, bearer: http; tls: https).
    std::string url(std::string const& kind, std::string const& path) const {
        bool const tls = kind == "tls" || kind == "h2";
        return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(ports.at(kind)) + path;
    }
    /// The folder its WebDAV root serves.
    std::filesystem::path www() const { return home / "www"; }

    /// How many requests of its access log use `method` ("GET", "PUT").
    std::size_t requests_of(std::string const& method) const {
        std::ifstream in(home / "access.log");
        std::size_t n = 0;
        for (std::string line; std::getline(in, line);)
            if (line.find("\"" + method + " ") != std::string::npos) ++n;
        return n;
    }
};

/// The lines of `s`'s access log once the log stops growing: nginx writes a request's
/// line after its answer is sent, so a client can be a little ahead of the log. Read until
/// two reads 100 ms apart agree (at most 5 s).
inline std::size_t access_log_lines(server const& s) {
    auto count = [&] {
        std::ifstream in(s.home / "access.log");
        return static_cast<std::size_t>(
            std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
    };
    std::size_t last = count();
    for (int i = 0; i < 50; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::size_t const now = count();
        if (now == last) break;
        last = now;
    }
    return last;
}

/// The server `name` of the fixture, from its ports file.
inline server read_server(std::string const& name) {
    server s;
    s.home = fixture_dir() / name;
    std::ifstream in(fixture_dir() / (name + ".ports"));
    std::string word;
    while (in >> word) {
        std::size_t const eq = word.find('=');
        s.ports[word.substr(0, eq)] = std::stoi(word.substr(eq + 1));
    }
    REQUIRE(s.ports.size() == 5);
    return s;
}

/// The shared server the fixture started.
inline server const& main_server() {
    static server const s = read_server("main");
    return s;
}

/// A server of the test's own (to stop or kill), killed when the object dies.
class own_server {
public:
    explicit own_server(std::string const& name) {
        process_result const r = run_shell(std::string("bash '" COMPILE_CACHE_HTTP_FIXTURE_SCRIPT "' server '") +
                                           fixture_dir().string() + "' " + name);
        REQUIRE(r.exited(0));
        server_ = read_server(name);
        std::ifstream in(fixture_dir() / (name + ".pid"));
        in >> pid_;
        REQUIRE(pid_ > 0);
    }
    own_server(own_server const&) = delete;
    own_server& operator=(own_server const&) = delete;
    ~own_server() {
        ::kill(pid_, SIGCONT);
        ::kill(pid_, SIGKILL);
    }
    nginx::server const& server() const noexcept { return server_; }
    pid_t pid() const noexcept { return pid_; }

private:
    nginx::server server_;
    pid_t pid_ = 0;
};

} // namespace compile_cache_test::nginx
