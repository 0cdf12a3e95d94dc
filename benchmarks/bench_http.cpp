// http_storage against its floor, a bare libcurl GET of the same URL on a reused
// connection, on a real nginx (WebDAV) on 127.0.0.1, over plain HTTP and over TLS.
//
// - read/<size>/http_storage: http_storage::read of a value of that size (the handle's
//   reset and options, the bound, the status mapping) vs
// - read/<size>/bare_libcurl: curl_easy_perform of the same URL on an easy handle kept
//   for the whole run, the body appended to a std::string the same way.
// Sizes 4 KiB and 1 MiB; wall time (the round trip is the cost on loopback).
// - read_new_connection/<size>/bare_libcurl: the same GET on a new connection each time
//   (CURLOPT_FRESH_CONNECT and FORBID_REUSE): what the storage's kept-alive connection saves.
// - read_40/<scheme>/reads vs /read_many: 40 entries of 4 KiB read one after the other
//   with http_storage::read, or in one http_storage::read_many (concurrent GETs, the
//   cache's prefetch); /rtt_http: the same through a latency proxy of 2.5 ms one way
//   (a 5 ms round trip, as bench_redis's rtt_ figures), where the round trips are the cost.
//
// The server is started with tests/http/nginx_fixture.sh (start) in a scratch folder and
// stopped at the end.
#include "bench_common.hpp"

#include "../tests/support/latency_proxy.hpp"

#include <compile_cache/storage/http/http_storage.hpp>

#include <benchmark/benchmark.h>

#include <curl/curl.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cc = compile_cache;

namespace {

std::string run(std::string const& command) {
    std::FILE* p = ::popen(command.c_str(), "r");
    if (!p) throw std::runtime_error("cannot run " + command);
    std::string out;
    char buffer[256];
    while (std::size_t n = std::fread(buffer, 1, sizeof buffer, p)) out.append(buffer, n);
    if (::pclose(p) != 0) throw std::runtime_error(command + " failed");
    return out;
}

/// The server, started once, stopped at exit.
struct server {
    std::string dir;
    std::map<std::string, int> ports;

    server() {
        char pattern[] = "/tmp/compile_cache-bench-http-XXXXXX";
        if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp");
        dir = std::string(pattern) + "/servers";
        run("bash " COMPILE_CACHE_HTTP_FIXTURE_SCRIPT " start " + dir);
        std::ifstream in(dir + "/main.ports");
        std::string word;
        while (in >> word) ports[word.substr(0, word.find('='))] = std::stoi(word.substr(word.find('=') + 1));
    }
    ~server() {
        try {
            run("bash " COMPILE_CACHE_HTTP_FIXTURE_SCRIPT " stop " + dir);
            run("rm -rf " + dir.substr(0, dir.rfind('/')));
        } catch (...) {
        }
    }
    static server& get() {
        static server s;
        return s;
    }
    cc::http_options options(bool tls) const {
        cc::http_options o;
        o.url = std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(ports.at(tls ? "tls" : "plain")) +
                "/bench/";
        if (tls) o.ca_file = dir + "/tls/ca.pem";
        o.connect_timeout = std::chrono::milliseconds(2000);
        o.timeout = std::chrono::milliseconds(10000);
        return o;
    }
};

cc::key key_of(std::uint64_t n) {
    unsigned char digest[32] = {};
    for (int i = 0; i < 8; ++i) digest[i] = static_cast<unsigned char>(n >> (8 * i));
    digest[31] = 0x42;
    return cc::key(digest, sizeof digest);
}

constexpr std::size_t entry_bound = 64u << 20; // the cache's default entry bound

void read_http_storage(benchmark::State& state, std::size_t size, bool tls) {
    cc::http_storage storage(server::get().options(tls));
    std::string const value = bench::random_string(size, 1);
    if (storage.write(key_of(size), value)) return state.SkipWithError("write failed");
    std::string out;
    for (auto _ : state) {
        cc::read_result const r = storage.read(key_of(size), out, entry_bound);
        if (r.status != cc::read_status::found) return state.SkipWithError("read failed");
        benchmark::DoNotOptimize(out.data());
    }
    if (out != value) state.SkipWithError("wrong bytes");
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

void read_bare_libcurl(benchmark::State& state, std::size_t size, bool tls) {
    cc::http_options const o = server::get().options(tls);
    cc::http_storage storage(o);
    std::string const value = bench::random_string(size, 1);
    if (storage.write(key_of(size), value)) return state.SkipWithError("write failed");
    std::string const url = storage.entry_path(key_of(size));
    CURL* h = curl_easy_init();
    std::string out;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &append_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    if (tls) curl_easy_setopt(h, CURLOPT_CAINFO, o.ca_file.c_str());
    for (auto _ : state) {
        out.clear();
        long status = 0;
        if (curl_easy_perform(h) != CURLE_OK || curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
            status != 200)
            return state.SkipWithError("GET failed");
        benchmark::DoNotOptimize(out.data());
    }
    curl_easy_cleanup(h);
    if (out != value) state.SkipWithError("wrong bytes");
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

void read_new_connection(benchmark::State& state, std::size_t size, bool tls) {
    cc::http_options const o = server::get().options(tls);
    cc::http_storage storage(o);
    std::string const value = bench::random_string(size, 1);
    if (storage.write(key_of(size), value)) return state.SkipWithError("write failed");
    std::string const url = storage.entry_path(key_of(size));
    CURL* h = curl_easy_init();
    std::string out;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &append_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    if (tls) curl_easy_setopt(h, CURLOPT_CAINFO, o.ca_file.c_str());
    for (auto _ : state) {
        out.clear();
        long status = 0;
        if (curl_easy_perform(h) != CURLE_OK || curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK ||
            status != 200)
            return state.SkipWithError("GET failed");
        benchmark::DoNotOptimize(out.data());
    }
    curl_easy_cleanup(h);
    if (out != value) state.SkipWithError("wrong bytes");
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

constexpr std::size_t batch_keys = 40;

std::vector<cc::key> batch_of_40(cc::http_storage& storage) {
    std::vector<cc::key> keys;
    for (std::size_t i = 0; i < batch_keys; ++i) {
        keys.push_back(key_of(1000 + i));
        if (storage.write(keys.back(), bench::random_string(4096, static_cast<unsigned>(i)))) return {};
    }
    return keys;
}

/// The storage's options, through `proxy` when there is one (plain http only).
cc::http_options options_via(bool tls, std::unique_ptr<compile_cache_test::latency_proxy>& proxy, bool rtt) {
    cc::http_options o = server::get().options(tls);
    if (rtt) {
        proxy = std::make_unique<compile_cache_test::latency_proxy>(server::get().ports.at("plain"),
                                                                    std::chrono::microseconds(2500));
        proxy->start();
        o.url = "http://127.0.0.1:" + std::to_string(proxy->port()) + "/bench/";
    }
    return o;
}

void read_40_reads(benchmark::State& state, bool tls, bool rtt) {
    std::unique_ptr<compile_cache_test::latency_proxy> proxy;
    cc::http_storage storage(options_via(tls, proxy, rtt));
    std::vector<cc::key> const keys = batch_of_40(storage);
    if (keys.empty()) return state.SkipWithError("write failed");
    std::string out;
    for (auto _ : state) {
        for (cc::key const& k : keys)
            if (storage.read(k, out, entry_bound).status != cc::read_status::found)
                return state.SkipWithError("read failed");
        benchmark::DoNotOptimize(out.data());
    }
}

void read_40_read_many(benchmark::State& state, bool tls, bool rtt) {
    std::unique_ptr<compile_cache_test::latency_proxy> proxy;
    cc::http_storage storage(options_via(tls, proxy, rtt));
    std::vector<cc::key> const keys = batch_of_40(storage);
    if (keys.empty()) return state.SkipWithError("write failed");
    std::vector<std::pair<cc::read_result, std::string>> out;
    for (auto _ : state) {
        storage.read_many(keys, entry_bound, out);
        for (auto const& o : out)
            if (o.first.status != cc::read_status::found) return state.SkipWithError("read_many failed");
        benchmark::DoNotOptimize(out.data());
    }
}

} // namespace

BENCHMARK_CAPTURE(read_http_storage, 4k_http, 4096, false)->UseRealTime();
BENCHMARK_CAPTURE(read_bare_libcurl, 4k_http, 4096, false)->UseRealTime();
BENCHMARK_CAPTURE(read_http_storage, 1m_http, 1u << 20, false)->UseRealTime();
BENCHMARK_CAPTURE(read_bare_libcurl, 1m_http, 1u << 20, false)->UseRealTime();
BENCHMARK_CAPTURE(read_http_storage, 4k_https, 4096, true)->UseRealTime();
BENCHMARK_CAPTURE(read_bare_libcurl, 4k_https, 4096, true)->UseRealTime();
BENCHMARK_CAPTURE(read_http_storage, 1m_https, 1u << 20, true)->UseRealTime();
BENCHMARK_CAPTURE(read_bare_libcurl, 1m_https, 1u << 20, true)->UseRealTime();

BENCHMARK_CAPTURE(read_new_connection, 4k_http, 4096, false)->UseRealTime();
BENCHMARK_CAPTURE(read_new_connection, 4k_https, 4096, true)->UseRealTime();
BENCHMARK_CAPTURE(read_40_reads, http, false, false)->UseRealTime();
BENCHMARK_CAPTURE(read_40_read_many, http, false, false)->UseRealTime();
BENCHMARK_CAPTURE(read_40_reads, https, true, false)->UseRealTime();
BENCHMARK_CAPTURE(read_40_read_many, https, true, false)->UseRealTime();
BENCHMARK_CAPTURE(read_40_reads, rtt_http, false, true)->UseRealTime()->Iterations(10);
BENCHMARK_CAPTURE(read_40_read_many, rtt_http, false, true)->UseRealTime()->Iterations(10);

BENCHMARK_MAIN();
