#!/usr/bin/env bash
# What single flight's remote claims cost a lone cold run over a network (docs/benchmarks.md,
# "tinyk's chain40 over a 5 ms round trip"): tinyk (native backend, Release, chain40, fresh
# processes) as machine A, cold (a fresh directory and a fresh namespace each run) with the
# remote behind the project's latency proxy (TINYK_BENCH_RTT_MS round trip, default 5: half
# each way) in front of a redis-server on 127.0.0.1, with TINYK_CACHE_SINGLE_FLIGHT=local (no
# remote claim) and =both (the default: local and remote claims), and the same cold run with
# no remote, interleaved per repetition. With TINYK_BENCH_REF_TINYK (another build of tinyk,
# e.g. main's), its two remote runs are interleaved too, for a side-by-side comparison.
# Prints the medians (wall and CPU ms) and the medians of the per-repetition wall ratios.
#
#   benchmarks/tinyk_claims_rtt.sh                          # 9 repetitions
#   TINYK_BENCH_REPS=15 TINYK_BENCH_REF_TINYK=/path/to/main/tinyk benchmarks/tinyk_claims_rtt.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
reps=${TINYK_BENCH_REPS:-9}
rtt_ms=${TINYK_BENCH_RTT_MS:-5}
ref=${TINYK_BENCH_REF_TINYK:-}
bench_tag=claims
# shellcheck source=tinyk_rtt_setup.sh
source "$root/benchmarks/tinyk_rtt_setup.sh"
cp "$root/examples/tinyk/chain40.tk" "$work/chain40.tk"

echo "command: benchmarks/tinyk_claims_rtt.sh (TINYK_BENCH_REPS=$reps${ref:+, TINYK_BENCH_REF_TINYK=$ref})"
echo "machine: $bench_machine"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"

python3 - "$tinyk" "$work" "$reps" "$proxy_port" "$rtt_ms" "$ref" <<'PY'
import os, re, resource, statistics, subprocess, sys, time

tinyk, work, reps, proxy_port, rtt_ms, ref = sys.argv[1:7]
reps, rtt_ms = int(reps), float(rtt_ms)

def run(binary, cache, single_flight=None, ns=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C",
           "TINYK_BACKEND": "native", "TINYK_CACHE_DIR": cache}
    if single_flight:
        env.update({"TINYK_CACHE_REMOTE": f"redis://127.0.0.1:{proxy_port}", "TINYK_CACHE_REMOTE_NAMESPACE": ns,
                    "TINYK_CACHE_SECRET_FILE": os.path.join(work, "secret.key"),
                    "TINYK_CACHE_SINGLE_FLIGHT": single_flight})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter_ns()
    p = subprocess.run([binary, "run", "--stats", os.path.join(work, "chain40.tk"), "--call", "main", "3"],
                       env=env, capture_output=True, text=True)
    wall = (time.perf_counter_ns() - start) / 1e6
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"tinyk failed (exit {p.returncode}):\n{p.stderr}")
    stats = dict((k, float(v)) for k, v in re.findall(r" ([a-z.-]+)=([0-9.]+)", p.stderr))
    if stats.get("hits", 0) != 0:
        sys.exit("a cold run loaded a kernel")
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e3
    return wall, cpu, stats

builds = [("", tinyk)] + ([("ref ", ref)] if ref else [])
columns = ["no remote"] + [f"{name}{sf}" for name, _ in builds for sf in ("local", "both")]
results = {c: [] for c in columns}
for rep in range(reps):
    results["no remote"].append(run(tinyk, os.path.join(work, f"plain-{rep}")))
    for name, binary in builds:
        for sf in ("local", "both"):
            tag = f"{name.strip() or 'this'}-{sf}-{rep}"
            results[f"{name}{sf}"].append(run(binary, os.path.join(work, tag), sf, f"{tag}-{os.getpid()}"))

med = statistics.median
print(f"\nA cold, chain40, native backend, {reps} repetitions, {rtt_ms:g} ms round trip, medians:")
print(f"  {'run':12} {'wall ms':>9} {'CPU ms':>8}  {'claims-prefetched':>17}")
for c in columns:
    rs = results[c]
    print(f"  {c:12} {med([r[0] for r in rs]):9.1f} {med([r[1] for r in rs]):8.1f}  "
          f"{med([r[2].get('remote.claims-prefetched', 0) for r in rs]):17.0f}")
ratio = lambda a, b: med([x[0] / y[0] for x, y in zip(results[a], results[b])])
for name, _ in builds:
    both, local = f"{name}both", f"{name}local"
    extra = med([x[0] - y[0] for x, y in zip(results[both], results[local])])
    print(f"  {'reference' if name else 'this build'}: both vs local {ratio(both, local):.2f}x wall "
          f"(+{extra:.1f} ms = {extra / rtt_ms:.1f} round trips); both vs no remote {ratio(both, 'no remote'):.2f}x; "
          f"local vs no remote {ratio(local, 'no remote'):.2f}x (medians of the per-repetition ratios)")
PY
