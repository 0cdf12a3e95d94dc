// redis_storage against its floor, a bare hiredis GET, on a real redis-server on
// 127.0.0.1, and one server against a three-master Redis Cluster for 1,000 keys.
//
// - read_4k: redis_storage::read of a 4 KiB value (GETRANGE key 0 bound, with the
//   deadline, poll and bound checks) vs `redisCommand(c, "GET %b")` of the same key
//   on a connection of its own. Both are one round trip on loopback; wall time
//   (the round trip is the cost, the client's CPU is a small part of it).
// - keys_1000: read (and write) 1,000 keys of 4 KiB, one call each, on one server
//   and on the cluster (each key to the node of its slot).
//
// - batch_40/{read_many,reads}_{server,cluster}: 40 keys of 4 KiB (tinyk's chain40 warming
//   from a server) in one read_many call (pipelined GETRANGEs, one exchange per node)
//   vs 40 reads, one round trip each (issue 26, part 3).
// - processes_8/{storage,hiredis}: 8 processes (fork) each reading the same 4 KiB value
//   2,000 times, one call after another, through redis_storage or a bare blocking
//   hiredis connection: the throughput one server gives both clients, and the median of
//   the processes' 99th percentile call time (p99_us) (issue 26, part 5).
//
// The servers are started with tests/redis/redis_fixture.sh (start: one server and a
// cluster) in a scratch folder and stopped at the end.
#include "bench_common.hpp"

#include <compile_cache/storage/redis/redis_storage.hpp>

#include <benchmark/benchmark.h>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <fstream>
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

std::string first_line(std::string const& path) {
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    return line;
}

/// The servers, started once, stopped at exit.
struct servers {
    std::string dir;
    std::string server_url, cluster_url;
    int server_port = 0;

    servers() {
        char pattern[] = "/tmp/compile_cache-bench-redis-XXXXXX";
        if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp");
        dir = std::string(pattern) + "/servers";
        run("bash " COMPILE_CACHE_REDIS_FIXTURE_SCRIPT " start " + dir);
        server_port = std::stoi(first_line(dir + "/server.port"));
        server_url = "redis://127.0.0.1:" + std::to_string(server_port);
        std::string const ports = first_line(dir + "/cluster.ports");
        cluster_url = "redis+cluster://127.0.0.1:" + ports.substr(0, ports.find(','));
    }
    ~servers() {
        try {
            run("bash " COMPILE_CACHE_REDIS_FIXTURE_SCRIPT " stop " + dir);
            run("rm -rf " + dir.substr(0, dir.rfind('/')));
        } catch (...) {
        }
    }
    static servers& get() {
        static servers s;
        return s;
    }
};

cc::key key_of(std::uint64_t n) {
    unsigned char digest[32] = {};
    for (int i = 0; i < 8; ++i) digest[i] = static_cast<unsigned char>(n >> (8 * i));
    digest[31] = 0x42;
    return cc::key(digest, sizeof digest);
}

constexpr std::size_t entry_bound = 64u << 20; // the cache's default entry bound

void read_4k_redis_storage(benchmark::State& state) {
    cc::redis_storage storage(servers::get().server_url);
    std::string const value = bench::random_string(4096, 1);
    if (storage.write(key_of(1), value)) return state.SkipWithError("write failed");
    std::string out;
    for (auto _ : state) {
        cc::read_result const r = storage.read(key_of(1), out, entry_bound);
        if (r.status != cc::read_status::found) return state.SkipWithError("read failed");
        benchmark::DoNotOptimize(out.data());
    }
    if (out != value) state.SkipWithError("wrong bytes");
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 4096);
}

void read_4k_hiredis_get(benchmark::State& state) {
    cc::redis_storage storage(servers::get().server_url);
    std::string const value = bench::random_string(4096, 1);
    if (storage.write(key_of(1), value)) return state.SkipWithError("write failed");
    std::string const name = storage.redis_key(key_of(1));
    redisContext* c = redisConnect("127.0.0.1", servers::get().server_port);
    if (!c || c->err) return state.SkipWithError("connect failed");
    std::string out;
    for (auto _ : state) {
        auto* reply = static_cast<redisReply*>(redisCommand(c, "GET %b", name.data(), name.size()));
        if (!reply || reply->type != REDIS_REPLY_STRING) return state.SkipWithError("GET failed");
        out.assign(reply->str, reply->len); // the bytes in the caller's buffer, as the storage leaves them
        freeReplyObject(reply);
        benchmark::DoNotOptimize(out.data());
    }
    redisFree(c);
    if (out != value) state.SkipWithError("wrong bytes");
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 4096);
}

void keys_1000(benchmark::State& state, bool cluster, bool write) {
    cc::redis_storage storage(cluster ? servers::get().cluster_url : servers::get().server_url);
    std::string const value = bench::random_string(4096, 2);
    for (std::uint64_t i = 0; i < 1000; ++i)
        if (storage.write(key_of(1000 + i), value)) return state.SkipWithError("write failed");
    std::string out;
    for (auto _ : state) {
        for (std::uint64_t i = 0; i < 1000; ++i) {
            if (write) {
                if (storage.write(key_of(1000 + i), value)) return state.SkipWithError("write failed");
            } else if (storage.read(key_of(1000 + i), out, entry_bound).status != cc::read_status::found) {
                return state.SkipWithError("read failed");
            }
        }
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}

/// 40 keys of 4 KiB: one read_many, or 40 reads.
void batch_40(benchmark::State& state, bool cluster, bool batch) {
    cc::redis_storage storage(cluster ? servers::get().cluster_url : servers::get().server_url);
    std::string const value = bench::random_string(4096, 4);
    std::vector<cc::key> keys;
    for (std::uint64_t i = 0; i < 40; ++i) {
        keys.push_back(key_of(5000 + i));
        if (storage.write(keys.back(), value)) return state.SkipWithError("write failed");
    }
    std::vector<std::pair<cc::read_result, std::string>> results;
    std::string out;
    for (auto _ : state) {
        if (batch) {
            storage.read_many(keys, entry_bound, results);
            for (auto const& r : results)
                if (r.first.status != cc::read_status::found) return state.SkipWithError("read_many failed");
        } else {
            for (cc::key const& k : keys)
                if (storage.read(k, out, entry_bound).status != cc::read_status::found)
                    return state.SkipWithError("read failed");
        }
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 40);
}

/// 8 processes, each `reads` reads of one 4 KiB value on a connection of its own, through
/// redis_storage (`storage`) or bare hiredis; the iteration ends when all have exited.
void processes_8(benchmark::State& state, bool storage_client) {
    constexpr int processes = 8;
    constexpr int reads = 2000;
    std::string const value = bench::random_string(4096, 3);
    {
        cc::redis_storage storage(servers::get().server_url);
        if (storage.write(key_of(7), value)) return state.SkipWithError("write failed");
    }
    std::string const url = servers::get().server_url;
    int const port = servers::get().server_port;
    int p99_pipe[2];
    if (::pipe(p99_pipe) != 0) return state.SkipWithError("pipe failed");
    std::vector<double> p99s;
    for (auto _ : state) {
        std::vector<pid_t> children;
        for (int p = 0; p < processes; ++p) {
            pid_t const pid = ::fork();
            if (pid < 0) return state.SkipWithError("fork failed");
            if (pid == 0) {
                bool ok = true;
                std::string out;
                std::vector<double> took(reads, 0.0); // µs per call
                auto const timed = [&](int i, auto&& call) {
                    auto const start = std::chrono::steady_clock::now();
                    ok = call();
                    took[static_cast<std::size_t>(i)] =
                        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
                };
                if (storage_client) {
                    cc::redis_storage storage(url);
                    for (int i = 0; i < reads && ok; ++i)
                        timed(i, [&] {
                            return storage.read(key_of(7), out, entry_bound).status == cc::read_status::found &&
                                   out.size() == value.size();
                        });
                } else {
                    redisContext* c = redisConnect("127.0.0.1", port);
                    std::string const name = "compile_cache:" + key_of(7).hex();
                    ok = c && !c->err;
                    for (int i = 0; i < reads && ok; ++i)
                        timed(i, [&] {
                            auto* reply = static_cast<redisReply*>(redisCommand(c, "GET %b", name.data(), name.size()));
                            bool const good = reply && reply->type == REDIS_REPLY_STRING && reply->len == value.size();
                            if (reply) out.assign(reply->str, reply->len), freeReplyObject(reply);
                            return good;
                        });
                    if (c) redisFree(c);
                }
                std::sort(took.begin(), took.end());
                double const p99 = took[took.size() * 99 / 100];
                ok = ok && ::write(p99_pipe[1], &p99, sizeof p99) == static_cast<ssize_t>(sizeof p99);
                ::_exit(ok ? 0 : 1);
            }
            children.push_back(pid);
        }
        bool ok = true;
        for (pid_t pid : children) {
            int status = 0;
            ok = ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
            double p99 = 0;
            ok = ok && ::read(p99_pipe[0], &p99, sizeof p99) == static_cast<ssize_t>(sizeof p99);
            p99s.push_back(p99);
        }
        if (!ok) return state.SkipWithError("a process failed");
    }
    ::close(p99_pipe[0]);
    ::close(p99_pipe[1]);
    // The median over processes and iterations of each process's 99th percentile call time.
    std::sort(p99s.begin(), p99s.end());
    state.counters["p99_us"] = p99s.empty() ? 0.0 : p99s[p99s.size() / 2];
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * processes * reads);
}

} // namespace

BENCHMARK(read_4k_redis_storage)->UseRealTime();
BENCHMARK(read_4k_hiredis_get)->UseRealTime();
BENCHMARK_CAPTURE(keys_1000, read_server, false, false)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(keys_1000, read_cluster, true, false)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(keys_1000, write_server, false, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(keys_1000, write_cluster, true, true)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(batch_40, read_many_server, false, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(batch_40, reads_server, false, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(batch_40, read_many_cluster, true, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(batch_40, reads_cluster, true, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(processes_8, storage, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(processes_8, hiredis, false)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
