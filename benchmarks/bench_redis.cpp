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

// --- Remote hits through the tier, and the tier over a round-trip time (issue 26) -------
//
// - tier_hit/<size>_<mode>: what a remote hit costs the host through
//   tiered_storage<directory_storage, redis_storage>, as basic_cache drives it: the read
//   (the local miss, then the remote's GETRANGE), the envelope check (HMAC-SHA256), and
//   entry_checked, which hands the local copy to the tier's worker (background) or writes
//   it, and fetches the kernel's identity record, before it returns (sync: the behaviour
//   before issue 26). Every iteration reads a key that is not local yet (fixed iteration
//   counts, one key each). Its floor, get_and_check/<size>: a bare hiredis GET of the same
//   entries on a connection of its own, and the same envelope check.
// - rtt_*: the same tier through the latency proxy (tests/support/latency_proxy.hpp,
//   2.5 ms each way: a 5 ms round trip): a store (rtt_store: the local write, then the
//   upload queued, or sent and waited for), and a remote hit (rtt_hit).
#include "../tests/support/latency_proxy.hpp"

#include <compile_cache/envelope.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>
#include <compile_cache/storage/tiered_storage.hpp>

#include <atomic>
#include <chrono>

namespace {

using bench_tier = cc::tiered_storage<cc::directory_storage, cc::redis_storage>;
constexpr char const* tier_bench_format = "bench_redis tier 1";

/// `count` sealed entries of `size` bytes of payload, under keys from `first` on, stored
/// on the server under namespace `ns` (a fresh one per benchmark run).
struct tier_bench_entries {
    cc::envelope_auth auth{"bench_redis secret"};
    std::vector<cc::key> keys;
    std::string ns;

    tier_bench_entries(std::string const& url, std::size_t size, std::size_t count) {
        static std::atomic<int> runs{0};
        ns = "bench_tier_" + std::to_string(::getpid()) + "_" + std::to_string(runs++);
        cc::redis_options o;
        o.url = url;
        o.name_space = ns;
        cc::redis_storage writer(o);
        std::string const payload = bench::random_string(size, 3);
        for (std::size_t i = 0; i < count; ++i) {
            cc::key const k = key_of(100000 + i);
            cc::entry_metadata m;
            m.name = "kernel" + std::to_string(i);
            m.origin_file = "bench.tk";
            m.format_id = tier_bench_format;
            std::string entry;
            cc::envelope_writer w(entry, k, m, auth);
            w.out() += payload;
            w.seal();
            if (writer.write(k, entry)) throw std::runtime_error("write failed");
            keys.push_back(k);
        }
    }
    cc::redis_storage remote(std::string const& url) const {
        cc::redis_options o;
        o.url = url;
        o.name_space = ns;
        return cc::redis_storage(o);
    }
};

std::string scratch_dir() {
    char pattern[] = "/tmp/compile_cache-bench-tier-XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp");
    return pattern;
}

/// One remote hit as basic_cache drives it: read, check, entry_checked. False when it was none.
bool remote_hit(bench_tier& tier, tier_bench_entries const& e, cc::key const& k, std::string& out) {
    cc::read_result const r = tier.read(k, out, entry_bound);
    cc::detail::envelope_fields const env = cc::detail::check_envelope(out, k, tier_bench_format, entry_bound, e.auth);
    if (r.status != cc::read_status::found || env.status != cc::envelope_status::ok) return false;
    cc::detail::tell_entry_checked(tier, k, out, r, env.status);
    return r.origin == bench_tier::from_remote;
}

void tier_hit(benchmark::State& state, std::size_t size, cc::remote_upload mode, bool over_rtt) {
    std::size_t const n = static_cast<std::size_t>(state.max_iterations);
    std::unique_ptr<compile_cache_test::latency_proxy> proxy;
    std::string url = servers::get().server_url;
    if (over_rtt) {
        proxy = std::make_unique<compile_cache_test::latency_proxy>(servers::get().server_port,
                                                                    std::chrono::microseconds(2500));
        proxy->start();
        url = proxy->url();
    }
    tier_bench_entries const e(servers::get().server_url, size, n);
    std::string const dir = scratch_dir();
    std::uint64_t copies_dropped = 0;
    {
        cc::tier_options t;
        t.upload = mode;
        t.upload_drain = std::chrono::seconds(30);
        bench_tier tier(cc::directory_storage(dir), e.remote(url), t);
        std::string out;
        std::size_t i = 0;
        for (auto _ : state) {
            if (!remote_hit(tier, e, e.keys[i++], out)) return state.SkipWithError("not a remote hit");
            benchmark::DoNotOptimize(out.data());
        }
        for (auto const& [name, v] : tier.storage_counters())
            if (name == "remote.copies-dropped") copies_dropped = v;
    } // (the copies are drained here, untimed)
    run("rm -rf " + dir);
    state.counters["copies_dropped"] = static_cast<double>(copies_dropped);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

void get_and_check(benchmark::State& state, std::size_t size) {
    std::size_t const n = static_cast<std::size_t>(state.max_iterations);
    tier_bench_entries const e(servers::get().server_url, size, n);
    cc::redis_storage const names = e.remote(servers::get().server_url);
    redisContext* c = redisConnect("127.0.0.1", servers::get().server_port);
    if (!c || c->err) return state.SkipWithError("connect failed");
    std::string out;
    std::size_t i = 0;
    for (auto _ : state) {
        cc::key const& k = e.keys[i++];
        std::string const name = names.redis_key(k);
        auto* reply = static_cast<redisReply*>(redisCommand(c, "GET %b", name.data(), name.size()));
        if (!reply || reply->type != REDIS_REPLY_STRING) return state.SkipWithError("GET failed");
        out.assign(reply->str, reply->len);
        freeReplyObject(reply);
        if (cc::detail::check_envelope(out, k, tier_bench_format, entry_bound, e.auth).status !=
            cc::envelope_status::ok)
            return state.SkipWithError("check failed");
    }
    redisFree(c);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
}

void rtt_store(benchmark::State& state, cc::remote_upload mode) {
    compile_cache_test::latency_proxy proxy(servers::get().server_port, std::chrono::microseconds(2500));
    proxy.start();
    tier_bench_entries const e(servers::get().server_url, 4096, 0);
    std::string const dir = scratch_dir();
    {
        cc::tier_options t;
        t.upload = mode;
        t.upload_drain = std::chrono::seconds(30);
        bench_tier tier(cc::directory_storage(dir), e.remote(proxy.url()), t);
        std::string const value = bench::random_string(4096, 4);
        std::uint64_t i = 0;
        for (auto _ : state)
            if (tier.write(key_of(200000 + i++), value)) return state.SkipWithError("write failed");
        (void)tier.wait_for_uploads(std::chrono::seconds(30)); // (untimed: after the loop)
    }
    run("rm -rf " + dir);
}

} // namespace

BENCHMARK_CAPTURE(tier_hit, 4k_background, 4096, cc::remote_upload::background, false)->Iterations(2000)->UseRealTime();
BENCHMARK_CAPTURE(tier_hit, 4k_sync, 4096, cc::remote_upload::sync, false)->Iterations(2000)->UseRealTime();
BENCHMARK_CAPTURE(get_and_check, 4k, 4096)->Iterations(2000)->UseRealTime();
BENCHMARK_CAPTURE(tier_hit, 1m_background, 1u << 20, cc::remote_upload::background, false)->Iterations(64)->UseRealTime();
BENCHMARK_CAPTURE(tier_hit, 1m_sync, 1u << 20, cc::remote_upload::sync, false)->Iterations(64)->UseRealTime();
BENCHMARK_CAPTURE(get_and_check, 1m, 1u << 20)->Iterations(64)->UseRealTime();
BENCHMARK_CAPTURE(tier_hit, rtt_hit_4k_background, 4096, cc::remote_upload::background, true)
    ->Iterations(100)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(tier_hit, rtt_hit_4k_sync, 4096, cc::remote_upload::sync, true)
    ->Iterations(100)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(rtt_store, 4k_background, cc::remote_upload::background)->Iterations(200)->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(rtt_store, 4k_sync, cc::remote_upload::sync)->Iterations(200)->UseRealTime()
    ->Unit(benchmark::kMillisecond);
