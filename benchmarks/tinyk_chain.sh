#!/usr/bin/env bash
# tinyk, cold and warm processes: builds tinyk (Release) and runs the chain module of
# examples/tinyk/gen_chain.py at 10, 40 and 200 kernels, each `tinyk run --stats` a
# fresh process. Per size and repetition: one run with the cache off, one cold run
# (a fresh cache directory: every kernel compiled and stored), one warm run (the same
# directory again: every kernel loaded). Prints the median wall times side by side
# (and that of `tinyk --version`, the floor of any process),
# then where a median warm run spends its time inside tinyk from --stats (parse and
# lower, keys, and the library's read, verify, deserialize+relink, relocate), and
# the machine. Exits non-zero if the median warm run is not faster than the cold one.
#
#   benchmarks/tinyk_chain.sh              # 10 repetitions (about a minute on 2 cores, after the build)
#   TINYK_BENCH_REPS=3 benchmarks/tinyk_chain.sh
#   TINYK_BENCH_SIZES="40 400" benchmarks/tinyk_chain.sh
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

echo "building tinyk (Release) in $build ..." >&2
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_EXAMPLES=ON \
  -DCOMPILE_CACHE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target tinyk >/dev/null

scratch=${TINYK_BENCH_SCRATCH:-$build/scratch}
mkdir -p "$scratch"
work=$(mktemp -d "$scratch/tinyk-chain.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "command: benchmarks/tinyk_chain.sh (TINYK_BENCH_REPS=$reps, sizes: $sizes)"
echo "machine: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), nproc $(nproc)," \
  "$(uname -sr), $(g++ --version | head -1), cache on $(df -T "$scratch" | awk 'NR == 2 { print $2 }')"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"

python3 - "$build/examples/tinyk/tinyk" "$root/examples/tinyk/gen_chain.py" "$work" "$reps" $sizes <<'PY'
import os, random, re, statistics, subprocess, sys, tempfile, time

tinyk, gen, work, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sizes = [int(n) for n in sys.argv[5:]]

def stats_fields(line):
    """The numbers of `tinyk: stats: ...`: hits, misses, key-ms, load-ms, and the hit phases."""
    f = {}
    for name, value in re.findall(r"([a-z-]+)=([0-9.]+)", line):
        f.setdefault(name, float(value))
    m = re.search(r"hit-ms=\(read ([0-9.]+) verify ([0-9.]+) deserialize ([0-9.]+) relocate ([0-9.]+)\)", line)
    if m:
        f["read"], f["verify"], f["deserialize"], f["relocate"] = map(float, m.groups())
    return f

def run(program, cache):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C"}
    if cache:
        env["TINYK_CACHE_DIR"] = cache
    start = time.perf_counter_ns()
    p = subprocess.run([tinyk, "run", "--stats", program, "--call", "main", "1"], env=env,
                       capture_output=True, text=True)
    wall_ms = (time.perf_counter_ns() - start) / 1e6
    if p.returncode != 0:
        sys.exit(f"tinyk failed (exit {p.returncode}):\n{p.stderr}")
    stats = [l for l in p.stderr.splitlines() if l.startswith("tinyk: stats: ")]
    return wall_ms, p.stdout.strip(), stats_fields(stats[0] if stats else "")

programs = {}
for n in sizes:
    programs[n] = os.path.join(work, f"chain{n}.tk")
    with open(programs[n], "w") as f:
        subprocess.run([sys.executable, gen, str(n)], stdout=f, check=True)

def floor_ms():
    """A process that starts and exits without reading a file: `tinyk --version`."""
    start = time.perf_counter_ns()
    subprocess.run([tinyk, "--version"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, check=True)
    return (time.perf_counter_ns() - start) / 1e6

samples = {n: {"off": [], "cold": [], "warm": []} for n in sizes}
floors = []
for rep in range(reps):
    floors.append(floor_ms())
    order = list(sizes)
    random.shuffle(order)  # a noisy machine slows every size alike
    for n in order:
        cache = tempfile.mkdtemp(dir=work, prefix=f"cache{n}-") + "/cache"
        off = run(programs[n], None)
        cold = run(programs[n], cache)
        warm = run(programs[n], cache)
        assert off[1] == cold[1] == warm[1], f"results differ at {n} kernels: {off[1]} {cold[1]} {warm[1]}"
        assert cold[2].get("misses") == n and cold[2].get("stores") == n, f"cold run at {n}: {cold[2]}"
        assert warm[2].get("hits") == n, f"warm run at {n} did not load every kernel: {warm[2]}"
        for mode, r in (("off", off), ("cold", cold), ("warm", warm)):
            samples[n][mode].append(r)

def med(values):
    return statistics.median(values)

def col(rs, key):
    return med([r[2].get(key, 0.0) for r in rs])

print()
print(f"Wall time of one `tinyk run` process, median of {reps} (ms); a process that only starts and exits "
      f"(`tinyk --version`) takes {med(floors):.1f} ms:")
print()
print("| kernels | cache off | cold | warm | cold / warm | warm / off |")
print("|--:|--:|--:|--:|--:|--:|")
slower = []
for n in sizes:
    off, cold, warm = (med([r[0] for r in samples[n][m]]) for m in ("off", "cold", "warm"))
    print(f"| {n} | {off:.1f} | {cold:.1f} | {warm:.1f} | {cold / warm:.1f}x | {warm / off:.2f} |")
    if warm >= cold:
        slower.append(n)

print()
print(f"Inside tinyk, from --stats, median of {reps} (ms). Cold: what the cache adds to a compile. "
      "Warm: front = parse, check, lower (every run does it: keys are made from the lowered IR), "
      "key = call-graph components and every kernel's key, then the library's hit phases.")
print()
print("| kernels | cold: compile | cold: store | warm: front | warm: key | read | verify | deserialize+relink | relocate | warm: load total |")
print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for n in sizes:
    c, w = samples[n]["cold"], samples[n]["warm"]
    print(f"| {n} | {col(c, 'compile-ms'):.2f} | {col(c, 'store-ms'):.2f} | {col(w, 'front-ms'):.2f} | "
          f"{col(w, 'key-ms'):.2f} | {col(w, 'read'):.2f} | {col(w, 'verify'):.3f} | {col(w, 'deserialize'):.2f} | "
          f"{col(w, 'relocate'):.3f} | {col(w, 'load-ms'):.2f} |")

if slower:
    print(f"\nWARM IS NOT FASTER THAN COLD at {', '.join(map(str, slower))} kernels", file=sys.stderr)
    sys.exit(1)
PY
