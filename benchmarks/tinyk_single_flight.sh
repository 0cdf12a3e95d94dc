#!/usr/bin/env bash
# Single flight on tinyk's chain40 (docs/benchmarks.md, "Single flight"): 8 fresh tinyk
# processes started at the same moment on one empty cache directory, with single flight
# (TINYK_CACHE_SINGLE_FLIGHT=both, the default) and without (=0), rounds interleaved:
# per round the CPU time (user + system) summed over the 8, the slowest one's wall time,
# and the compiles summed (the `-v` lines), and the slowest with single flight against one
# cold process alone run after each round. Then the cost a claim adds to a lone cold
# run: one process on an empty directory, with and without, interleaved, median wall
# and CPU time and their difference.
#
#   benchmarks/tinyk_single_flight.sh                       # builds tinyk (Release)
#   TINYK_BENCH_TINYK=build/examples/tinyk/tinyk benchmarks/tinyk_single_flight.sh
#   TINYK_BENCH_REPS=5 TINYK_BENCH_LONE_REPS=20 TINYK_BENCH_BACKEND=vm benchmarks/tinyk_single_flight.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

reps=${TINYK_BENCH_REPS:-5}
lone_reps=${TINYK_BENCH_LONE_REPS:-20}
backend=${TINYK_BENCH_BACKEND:-vm}
tinyk=${TINYK_BENCH_TINYK:-}
if [[ -z $tinyk ]]; then
  build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/bench-tinyk
  echo "building tinyk (Release) in $build ..." >&2
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_EXAMPLES=ON \
    -DCOMPILE_CACHE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target tinyk >/dev/null
  tinyk=$build/examples/tinyk/tinyk
fi

scratch=${TINYK_BENCH_SCRATCH:-${COMPILE_CACHE_BUILD_DIR:-$root/build}/scratch}
mkdir -p "$scratch"
work=$(mktemp -d "$scratch/tinyk-flight.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "command: benchmarks/tinyk_single_flight.sh (TINYK_BENCH_REPS=$reps, TINYK_BENCH_LONE_REPS=$lone_reps," \
  "backend $backend, tinyk $tinyk)"
echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "machine: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), nproc $(nproc)," \
  "$(uname -sr), cache on $(df -T "$scratch" | awk 'NR == 2 { print $2 }')," \
  "load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"

python3 - "$tinyk" "$root/examples/tinyk/chain40.tk" "$work" "$reps" "$lone_reps" "$backend" <<'PY'
import os, shutil, statistics, subprocess, sys, time

tinyk, program, work, reps, lone_reps, backend = sys.argv[1:7]
reps, lone_reps = int(reps), int(lone_reps)

def start(cache, flight):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C",
           "TINYK_BACKEND": backend, "TINYK_CACHE_DIR": cache, "TINYK_CACHE_SINGLE_FLIGHT": flight}
    return subprocess.Popen([tinyk, "run", "-v", program, "--call", "main", "1"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

def round_of(n, flight, tag):
    cache = os.path.join(work, tag)
    shutil.rmtree(cache, ignore_errors=True)
    began = time.monotonic()
    procs = [start(cache, flight) for _ in range(n)]
    walls, cpu, compiles = [], 0.0, 0
    pending = {p.pid: p for p in procs}
    errs = {p.pid: p.stderr for p in procs}
    while pending:
        pid, status, usage = os.wait4(-1, 0)
        if pid not in pending:
            continue
        walls.append(time.monotonic() - began)
        cpu += usage.ru_utime + usage.ru_stime
        if status != 0:
            sys.exit("tinyk failed: " + errs[pid].read())
        compiles += sum(1 for line in errs[pid].read().splitlines() if line.startswith("tinyk: compiled "))
        del pending[pid]
    for p in procs:
        p.returncode = 0  # (reaped above)
    return max(walls), cpu, compiles

def med(xs):
    return statistics.median(xs)

rows = {"both": [], "0": []}
alone = []  # one cold process alone with single flight, run after each round's pair
for r in range(reps):
    for flight in (("both", "0") if r % 2 == 0 else ("0", "both")):
        rows[flight].append(round_of(8, flight, "eight-" + flight))
    alone.append(round_of(1, "both", "alone"))
print()
print("8 simultaneous cold processes, chain40 (%s), %d rounds each, medians:" % (backend, reps))
print("| single flight | CPU summed over 8 (s) | slowest wall (s) | compiles summed |")
print("|---|---|---|---|")
for flight, name in (("0", "off (=0)"), ("both", "on (both)")):
    w = med([x[0] for x in rows[flight]]); c = med([x[1] for x in rows[flight]])
    k = [x[2] for x in rows[flight]]
    print("| %s | %.3f | %.3f | %d (min %d, max %d) |" % (name, c, w, med(k), min(k), max(k)))
off_c, on_c = med([x[1] for x in rows["0"]]), med([x[1] for x in rows["both"]])
off_w, on_w = med([x[0] for x in rows["0"]]), med([x[0] for x in rows["both"]])
print("ratio on/off: CPU %.2f, slowest wall %.2f" % (on_c / off_c, on_w / off_w))
pairs = [eight[0] / one[0] for eight, one in zip(rows["both"], alone)]
print("slowest of 8 with single flight vs one cold process alone (its round's, wall): %.2fx, median of %d rounds "
      "(min %.2f, max %.2f; goal at most 1.3x); the one alone: %.3f s" %
      (med(pairs), len(pairs), min(pairs), max(pairs), med([x[0] for x in alone])))

lone = {"both": [], "0": []}
for r in range(lone_reps):
    for flight in (("both", "0") if r % 2 == 0 else ("0", "both")):
        lone[flight].append(round_of(1, flight, "lone-" + flight))
print()
print("one cold process alone, chain40 (%s), %d runs each, medians:" % (backend, lone_reps))
print("| single flight | wall (s) | CPU (s) |")
print("|---|---|---|")
for flight, name in (("0", "off (=0)"), ("both", "on (both)")):
    print("| %s | %.4f | %.4f |" % (name, med([x[0] for x in lone[flight]]), med([x[1] for x in lone[flight]])))
dw = med([x[0] for x in lone["both"]]) - med([x[0] for x in lone["0"]])
dc = med([x[1] for x in lone["both"]]) - med([x[1] for x in lone["0"]])
print("claims' cost on a lone cold run: wall %+.2f%%, CPU %+.2f%% (goal: at most 2%%)" %
      (100 * dw / med([x[0] for x in lone["0"]]), 100 * dc / med([x[1] for x in lone["0"]])))
PY
