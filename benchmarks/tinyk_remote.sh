#!/usr/bin/env bash
# tinyk (native backend, chain40) on "machines" sharing one redis-server on 127.0.0.1:
# each run a fresh `tinyk run` process. Per repetition (a fresh namespace on the server):
#   cold          a fresh directory, no remote: every kernel compiled
#   local warm    the same directory again, no remote: every kernel loaded from it
#   A cold        machine A, fresh directory, with the remote: compiled, stored there too
#   B remote      machine B, fresh directory, warm server: every kernel from the server
#   B local       machine B again: every kernel from its directory, 0 commands sent
#                 (the server's INFO commandstats, reset before the run)
# and the same three machines through the project's latency proxy (tests/support/
# latency_proxy.hpp, TINYK_BENCH_RTT_MS round trip, default 5: half each way) in front of
# the same server, in another namespace: `A cold rtt`, `B first rtt`, `B again rtt`
# (0 commands sent). tinyk prefetches every kernel's entry and identity record in one
# batch (basic_cache::prefetch) and uploads in the background.
# Prints the medians (wall and CPU ms) and the ratios of docs/benchmarks.md: cold /
# B remote (target >= 8x), B local / local warm (target: the same cost, ~1.0x), and at the
# round trip: A cold rtt / cold (goal <= 1.1x), B first rtt - local warm in round trips
# (goal <= 4), B again rtt's commands (goal 0).
# Exits non-zero when B local sends a command or loads fewer than all kernels.
#
#   benchmarks/tinyk_remote.sh                   # 7 repetitions
#   TINYK_BENCH_REPS=11 benchmarks/tinyk_remote.sh
#   TINYK_BENCH_SINGLE_FLIGHT=local benchmarks/tinyk_remote.sh   # passed as TINYK_CACHE_SINGLE_FLIGHT
#                                     # (local: no claims on the server, the uploads' share alone)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
reps=${TINYK_BENCH_REPS:-7}
rtt_ms=${TINYK_BENCH_RTT_MS:-5}
export TINYK_BENCH_SINGLE_FLIGHT=${TINYK_BENCH_SINGLE_FLIGHT:-}
bench_tag=remote
# shellcheck source=tinyk_rtt_setup.sh
source "$root/benchmarks/tinyk_rtt_setup.sh"

echo "command: benchmarks/tinyk_remote.sh (TINYK_BENCH_REPS=$reps${TINYK_BENCH_SINGLE_FLIGHT:+, TINYK_BENCH_SINGLE_FLIGHT=$TINYK_BENCH_SINGLE_FLIGHT})"
echo "machine: $bench_machine"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"

python3 - "$tinyk" "$root/examples/tinyk/chain40.tk" "$work" "$reps" "$port" "$proxy_port" "$rtt_ms" <<'PY'
import os, re, resource, shutil, statistics, subprocess, sys, time

tinyk, chain, work, reps, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
proxy_port, rtt_ms = sys.argv[6], float(sys.argv[7])
program = os.path.join(work, "chain40.tk")
shutil.copy(chain, program)

def redis(*args):
    return subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", port] + list(args),
                          capture_output=True, text=True, check=True).stdout

def run(cache, remote_ns=None, via=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C",
           "TINYK_BACKEND": "native", "TINYK_CACHE_DIR": cache}
    if os.environ.get("TINYK_BENCH_SINGLE_FLIGHT"):
        env["TINYK_CACHE_SINGLE_FLIGHT"] = os.environ["TINYK_BENCH_SINGLE_FLIGHT"]
    if remote_ns:
        env.update({"TINYK_CACHE_REMOTE": f"redis://127.0.0.1:{via or port}", "TINYK_CACHE_REMOTE_NAMESPACE": remote_ns,
                    "TINYK_CACHE_SECRET_FILE": os.path.join(work, "secret.key")})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter_ns()
    p = subprocess.run([tinyk, "run", "--stats", program, "--call", "main", "3"], env=env,
                       capture_output=True, text=True)
    wall = (time.perf_counter_ns() - start) / 1e6
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e3
    if p.returncode != 0:
        sys.exit(f"tinyk failed (exit {p.returncode}):\n{p.stderr}")
    stats = dict((k, float(v)) for k, v in re.findall(r" ([a-z.-]+)=([0-9.]+)", p.stderr))
    return wall, cpu, p.stdout.strip(), stats

def sent_since_reset():
    return int(sum(int(m) for m in re.findall(r"^cmdstat_(?!config|info)[a-z|]+:calls=([0-9]+)",
                                              redis("INFO", "commandstats"), re.M)))

columns = ["cold", "local warm", "A cold", "B remote", "B local", "cold again", "A cold rtt", "B first rtt",
           "B again rtt"]
results = {c: [] for c in columns}
ok = True
for rep in range(reps):
    ns = f"bench{rep}-{os.getpid()}"
    d = lambda name: os.path.join(work, f"{name}-{rep}")
    results["cold"].append(run(d("plain")))
    results["local warm"].append(run(d("plain")))
    results["A cold"].append(run(d("a"), ns))
    results["B remote"].append(run(d("b"), ns))
    redis("CONFIG", "RESETSTAT")
    results["B local"].append(run(d("b"), ns))
    sent = sent_since_reset()
    b_remote, b_local = results["B remote"][-1][3], results["B local"][-1][3]
    if b_remote.get("remote.hits") != 40 or b_local.get("hits") != 40 or b_local.get("remote.hits") != 0 or sent:
        print(f"rep {rep}: B remote {b_remote.get('remote.hits')} remote hits; B local {b_local.get('hits')} hits,"
              f" {sent} commands sent")
        ok = False
    # The same machines behind the round trip, in a namespace of their own.
    rns = ns + "-rtt"
    results["cold again"].append(run(d("plain-again"))) # A's baseline, run just before it
    results["A cold rtt"].append(run(d("ra"), rns, proxy_port))
    results["B first rtt"].append(run(d("rb"), rns, proxy_port))
    redis("CONFIG", "RESETSTAT")
    results["B again rtt"].append(run(d("rb"), rns, proxy_port))
    sent = sent_since_reset()
    b_first, b_again = results["B first rtt"][-1][3], results["B again rtt"][-1][3]
    if b_first.get("remote.hits") != 40 or b_again.get("hits") != 40 or sent:
        print(f"rep {rep}: B first rtt {b_first.get('remote.hits')} remote hits; B again rtt {b_again.get('hits')}"
              f" hits, {sent} commands sent")
        ok = False
    outs = {r[-1][2] for r in results.values()}
    if len(outs) != 1:
        sys.exit(f"results differ: {outs}")

med = lambda xs: statistics.median(xs)
print(f"\nchain40, native backend, {reps} repetitions, medians:")
print(f"  {'run':12} {'wall ms':>9} {'CPU ms':>8}  {'hits':>5} {'remote.hits':>11}")
for c in columns:
    rs = results[c]
    print(f"  {c:12} {med([r[0] for r in rs]):9.1f} {med([r[1] for r in rs]):8.1f}  "
          f"{med([r[3].get('hits', 0) for r in rs]):5.0f} {med([r[3].get('remote.hits', 0) for r in rs]):11.0f}")
cold, b_remote = med([r[0] for r in results["cold"]]), med([r[0] for r in results["B remote"]])
local, b_local = med([r[0] for r in results["local warm"]]), med([r[0] for r in results["B local"]])
cpu = lambda c: med([r[1] for r in results[c]])
print(f"  fresh machine, warm server vs cold: {cold / b_remote:.1f}x wall, {cpu('cold') / cpu('B remote'):.1f}x CPU "
      f"(target >= 8x: {'met' if min(cold / b_remote, cpu('cold') / cpu('B remote')) >= 8 else 'NOT met'})")
print(f"  after one remote hit, the next process: {b_local:.1f} ms vs a local warm run {local:.1f} ms "
      f"({b_local / local:.2f}x wall, {cpu('B local') / cpu('local warm'):.2f}x CPU), "
      f"0 commands sent: {'yes' if ok else 'NO'}")
a_rtt, b_first = med([r[0] for r in results["A cold rtt"]]), med([r[0] for r in results["B first rtt"]])
a_ratio = med([a[0] / c[0] for a, c in zip(results["A cold rtt"], results["cold again"])])
print(f"  at {rtt_ms:g} ms round trip: A cold with the remote vs without (the run just before it): "
      f"{a_ratio:.2f}x wall, median of the pairs; {cpu('A cold rtt') / cpu('cold again'):.2f}x CPU "
      f"(goal <= 1.1x: {'met' if a_ratio <= 1.1 else 'NOT met'})")
up = lambda name: med([r[3].get(name, 0) for r in results["A cold rtt"]])
print(f"  at {rtt_ms:g} ms round trip: A cold's uploads: {up('remote.uploads-sent'):.0f} sent in "
      f"{up('remote.upload-batches'):.0f} batches, {up('remote.write-ms'):.1f} ms writing (medians)")
extra = (b_first - local) / rtt_ms
b_loop = med([r[0] for r in results["B remote"]])
print(f"  at {rtt_ms:g} ms round trip: B's first run {b_first:.1f} ms vs the same at loopback {b_loop:.1f} ms: "
      f"{(b_first - b_loop) / rtt_ms:+.1f} round trips")
print(f"  at {rtt_ms:g} ms round trip: B's first run {b_first:.1f} ms vs B's local warm run {local:.1f} ms: "
      f"+{b_first - local:.1f} ms = {extra:.1f} round trips (goal <= 4: {'met' if extra <= 4 else 'NOT met'}); "
      f"B's second run: {med([r[0] for r in results['B again rtt']]):.1f} ms, 0 commands sent: "
      f"{'yes' if ok else 'NO'}")
sys.exit(0 if ok else 1)
PY
