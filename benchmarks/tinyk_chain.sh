#!/usr/bin/env bash
# tinyk, cold and warm processes: builds tinyk (Release) and runs the chain module of
# examples/tinyk/gen_chain.py at 10, 40 and 200 kernels, each `tinyk run --stats` a
# fresh process, on each backend tinyk has (its VM; LLVM native code when built with
# LLVM). Per backend, size and repetition: one run with the cache off, one cold run
# (a fresh cache directory: every kernel compiled and stored), one warm run (the same
# directory again: every kernel loaded). Prints the machine, the median wall times
# side by side (and that of `tinyk --version`, the floor of any tinyk process), and
# where the time goes inside tinyk from --stats: cold compile and store; warm parse
# and lower, keys, and the library's read, verify, deserialize+relink and relocate.
# Exits non-zero if a median warm run is not faster than the median cold run, or
# if the median difference between a cold run and the warm run after it is not > 0.
#
#   benchmarks/tinyk_chain.sh                 # 10 repetitions (a few minutes on 2 cores with native)
#   TINYK_BENCH_REPS=3 benchmarks/tinyk_chain.sh
#   TINYK_BENCH_SIZES="40 400" TINYK_BENCH_BACKENDS=vm benchmarks/tinyk_chain.sh
#
# Cache directories go under the build directory (a real disk, as a user's cache
# would be); set TINYK_BENCH_SCRATCH to put them elsewhere (e.g. a tmpfs).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../scripts/setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}"

build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/bench-tinyk
reps=${TINYK_BENCH_REPS:-10}
sizes=${TINYK_BENCH_SIZES:-10 40 200}
read -r -a size_list <<<"$sizes" # TINYK_BENCH_SIZES is a list of words
backends=${TINYK_BENCH_BACKENDS:-vm native}

echo "building tinyk (Release) in $build ..." >&2
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_EXAMPLES=ON \
  -DCOMPILE_CACHE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target tinyk >/dev/null

scratch=${TINYK_BENCH_SCRATCH:-$build/scratch}
mkdir -p "$scratch"
work=$(mktemp -d "$scratch/tinyk-chain.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "command: benchmarks/tinyk_chain.sh (TINYK_BENCH_REPS=$reps, sizes: $sizes)"
echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
  git -C "$root" diff --quiet HEAD -- examples include 2>/dev/null || echo ' (with uncommitted changes)')"
echo "machine: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), nproc $(nproc)," \
  "$(uname -sr), $(g++ --version | head -1), cache on $(df -T "$scratch" | awk 'NR == 2 { print $2 }')," \
  "load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"

PYTHONPATH="$root/benchmarks${PYTHONPATH:+:$PYTHONPATH}" python3 - "$build/examples/tinyk/tinyk" "$root/examples/tinyk/gen_chain.py" "$work" "$reps" "$backends" "${size_list[@]}" <<'PY'
import os, random, statistics, subprocess, sys, tempfile, time
from tinyk_stats import stats_fields  # benchmarks/tinyk_stats.py

tinyk, gen, work, reps, backends = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split()
sizes = [int(n) for n in sys.argv[6:]]

def environment(backend, cache=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C", "TINYK_BACKEND": backend}
    if cache:
        env["TINYK_CACHE_DIR"] = cache
    return env

def run(program, backend, cache):
    start = time.perf_counter_ns()
    p = subprocess.run([tinyk, "run", "--stats", program, "--call", "main", "1"],
                       env=environment(backend, cache), capture_output=True, text=True)
    wall_ms = (time.perf_counter_ns() - start) / 1e6
    if p.returncode != 0:
        sys.exit(f"tinyk ({backend}) failed (exit {p.returncode}):\n{p.stderr}")
    stats = [l for l in p.stderr.splitlines() if l.startswith("tinyk: stats: ")]
    return wall_ms, p.stdout.strip(), stats_fields(stats[0] if stats else "")

def floor_ms():
    """A tinyk process that starts and exits without reading a file: `tinyk --version`."""
    start = time.perf_counter_ns()
    subprocess.run([tinyk, "--version"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, check=True)
    return (time.perf_counter_ns() - start) / 1e6

programs = {}
for n in sizes:
    programs[n] = os.path.join(work, f"chain{n}.tk")
    with open(programs[n], "w") as f:
        subprocess.run([sys.executable, gen, str(n)], stdout=f, check=True)

# A backend this tinyk refuses as unavailable (built without LLVM) is left out.
available = []
for b in backends:
    p = subprocess.run([tinyk, "run", programs[sizes[0]], "--call", "main", "1"], env=environment(b),
                       capture_output=True, text=True)
    if p.returncode == 0:
        available.append(b)
    else:
        print(f"(backend {b} left out: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode})")

samples = {(b, n): {"off": [], "cold": [], "warm": []} for b in available for n in sizes}
floors = []
for rep in range(reps):
    floors.append(floor_ms())
    order = [(b, n) for b in available for n in sizes]
    random.shuffle(order)  # a noisy machine slows every case alike
    for b, n in order:
        cache = tempfile.mkdtemp(dir=work, prefix=f"cache-{b}{n}-") + "/cache"
        off = run(programs[n], b, None)
        cold = run(programs[n], b, cache)
        warm = run(programs[n], b, cache)
        assert off[1] == cold[1] == warm[1], f"{b}, {n} kernels: results differ: {off[1]} {cold[1]} {warm[1]}"
        assert cold[2].get("misses") == n and cold[2].get("stores") == n, f"{b}, cold at {n}: {cold[2]}"
        assert warm[2].get("hits") == n, f"{b}, warm at {n} did not load every kernel: {warm[2]}"
        for mode, r in (("off", off), ("cold", cold), ("warm", warm)):
            samples[(b, n)][mode].append(r)

med = statistics.median
floor = med(floors)

def col(rs, key):
    return med([r[2].get(key, 0.0) for r in rs])

def rest(r):
    """What --stats does not account for in a warm run: wall - floor - front - key - load."""
    s = r[2]
    return r[0] - floor - s.get("front-ms", 0) - s.get("key-ms", 0) - s.get("load-ms", 0)

print()
print(f"Wall time of one `tinyk run` process, median of {reps} (ms); `tinyk --version` (start and exit) "
      f"takes {floor:.1f} ms:")
print()
print("| backend | kernels | cache off | cold | warm | cold / warm | warm / off | cold - warm, paired |")
print("|--|--:|--:|--:|--:|--:|--:|--:|")
slower = []
for b in available:
    for n in sizes:
        off, cold, warm = (med([r[0] for r in samples[(b, n)][m]]) for m in ("off", "cold", "warm"))
        # Each cold run and its warm run are back to back: the median of their
        # differences is what a busy machine disturbs least.
        paired = med([c[0] - w[0] for c, w in zip(samples[(b, n)]["cold"], samples[(b, n)]["warm"])])
        print(f"| {b} | {n} | {off:.1f} | {cold:.1f} | {warm:.1f} | {cold / warm:.1f}x | {warm / off:.2f} | "
              f"{paired:.1f} |")
        if warm >= cold or paired <= 0:
            slower.append(f"{b} at {n} kernels")

print()
print(f"Inside tinyk, from --stats, median of {reps} (ms). Cold: the compile, and what storing adds. "
      "Warm: front = parse, check, lower (every run does it: keys are made from the lowered IR); "
      "key = call-graph components and every kernel's key; then the library's phases of the hits; "
      "rest = wall - start/exit floor - front - key - load (running main, and for native, LLVM's JIT linking).")
print()
print("| backend | kernels | cold: compile | cold: store | warm: front | key | read | verify | "
      "deserialize+relink | relocate | load total | rest |")
print("|--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for b in available:
    for n in sizes:
        c, w = samples[(b, n)]["cold"], samples[(b, n)]["warm"]
        print(f"| {b} | {n} | {col(c, 'compile-ms'):.2f} | {col(c, 'store-ms'):.2f} | {col(w, 'front-ms'):.2f} | "
              f"{col(w, 'key-ms'):.2f} | {col(w, 'read'):.2f} | {col(w, 'verify'):.3f} | "
              f"{col(w, 'deserialize'):.2f} | {col(w, 'relocate'):.3f} | {col(w, 'load-ms'):.2f} | "
              f"{med([rest(r) for r in w]):.1f} |")
print()
print(f"entry bytes per kernel: " + ", ".join(
    f"{b} {med([r[2].get('bytes-written', 0) for r in samples[(b, sizes[-1])]['cold']]) / sizes[-1]:.0f}"
    for b in available))

if slower:
    print(f"\nWARM IS NOT FASTER THAN COLD: {', '.join(slower)}", file=sys.stderr)
    sys.exit(1)
PY
