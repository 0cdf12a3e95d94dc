#!/usr/bin/env bash
# tinyk's native backend, cold and warm: the chain module of examples/tinyk/gen_chain.py
# (40 kernels by default: examples/tinyk/chain40.tk) compiled to machine code through
# LLVM ORC, each run a fresh `tinyk run` process. Per repetition and backend: one cold
# run (a fresh cache directory: every kernel compiled and stored) and one warm run
# (the same directory: every kernel loaded). Prints the medians of wall time and of
# CPU time (user + system) side by side with the VM backend, the warm cost per
# kernel, and where a median warm native run spends its time: the process itself
# (`tinyk --version`), parsing and lowering, keys, the cache's read / verify /
# deserialize (with the object checks), and the native backend's target setup, JIT
# creation, adding objects, linking them and the call (TINYK_NATIVE_TIMING=1).
# Exits non-zero if warm is not faster than cold; says whether warm is 10x faster.
# Each size runs twice: the full chain and a light one (gen_chain.py --light: kernels a
# third the size, where the warm run's fixed costs weigh more); TINYK_BENCH_KINDS picks.
#
#   benchmarks/tinyk_native.sh                     # 10 repetitions
#   TINYK_BENCH_REPS=20 TINYK_BENCH_SIZES="40 200" TINYK_BENCH_KINDS=full benchmarks/tinyk_native.sh
#
# Cache directories go under the build directory; TINYK_BENCH_SCRATCH puts them elsewhere.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../scripts/setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" llvm-14-dev

build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/bench-native
reps=${TINYK_BENCH_REPS:-10}
sizes=${TINYK_BENCH_SIZES:-40}
kinds=${TINYK_BENCH_KINDS:-full light}
read -r -a size_list <<<"$sizes" # TINYK_BENCH_SIZES is a list of words
for kind in $kinds; do
  case $kind in full|light) ;; *) echo "tinyk_native.sh: TINYK_BENCH_KINDS: '$kind' is not full or light" >&2; exit 2 ;; esac
done

echo "building tinyk (Release, with LLVM) in $build ..." >&2
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_EXAMPLES=ON \
  -DCOMPILE_CACHE_BUILD_TESTS=OFF -DCOMPILE_CACHE_WITH_LLVM=ON >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target tinyk >/dev/null
tinyk=$build/examples/tinyk/tinyk
if ! "$tinyk" run --backend=native "$root/examples/tinyk/samples/seed.tk" --call main 1 >/dev/null 2>&1; then
  echo "tinyk_native.sh: this tinyk has no native backend (LLVM 14 not found at configure time)" >&2
  exit 1
fi

scratch=${TINYK_BENCH_SCRATCH:-$build/scratch}
mkdir -p "$scratch"
work=$(mktemp -d "$scratch/tinyk-native.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "command: benchmarks/tinyk_native.sh (TINYK_BENCH_REPS=$reps, sizes: $sizes, kinds: $kinds)"
echo "machine: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), nproc $(nproc)," \
  "$(uname -sr), $(g++ --version | head -1), LLVM $(/usr/lib/llvm-14/bin/llvm-config --version 2>/dev/null || echo 14)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"

PYTHONPATH="$root/benchmarks${PYTHONPATH:+:$PYTHONPATH}" python3 - "$tinyk" "$root/examples/tinyk/gen_chain.py" "$work" "$reps" "$kinds" "${size_list[@]}" <<'PY'
import os, resource, statistics, subprocess, sys, time
from tinyk_stats import stats_fields  # benchmarks/tinyk_stats.py

tinyk, gen, work, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
kinds = sys.argv[5].split()
sizes = [int(n) for n in sys.argv[6:]]

def run(args, cache=None, backend="native"):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C",
           "TINYK_BACKEND": backend, "TINYK_NATIVE_TIMING": "1"}
    if cache:
        env["TINYK_CACHE_DIR"] = cache
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter_ns()
    p = subprocess.run([tinyk] + args, env=env, capture_output=True, text=True)
    wall = (time.perf_counter_ns() - start) / 1e6
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e3
    if p.returncode != 0:
        sys.exit(f"tinyk failed (exit {p.returncode}):\n{p.stderr}")
    return wall, cpu, p.stdout.strip(), stats_fields(p.stderr)

def med(xs):
    return statistics.median(xs) if xs else float("nan")

ok = True
for n, kind in [(n, kind) for n in sizes for kind in kinds]:
    light = kind == "light"
    program = os.path.join(work, f"chain{n}{'-light' if light else ''}.tk")
    with open(program, "w") as f:
        subprocess.run([sys.executable, gen] + (["--light"] if light else []) + [str(n)], stdout=f, check=True)
    args = ["run", "--stats", program, "--call", "main", "3"]
    results = {}
    floor = []
    for rep in range(reps):
        floor.append(run(["--version"])[:2])
        for backend in ("native", "vm"):
            cache = os.path.join(work, f"cache-{n}-{kind}-{backend}-{rep}")
            cold = run(args, cache, backend)
            warm = run(args, cache, backend)
            if cold[2] != warm[2]:
                sys.exit(f"cold and warm results differ: {cold[2]} / {warm[2]}")
            if warm[3].get("hits") != n:
                sys.exit(f"warm run did not load all {n} kernels: {warm[3]}")
            results.setdefault(backend, []).append((cold, warm))

    what = "light chain (kernels a third the size)" if light else "chain"
    print(f"\n{what} of {n} kernels, {reps} repetitions, medians (wall ms / CPU ms):")
    print(f"  {'backend':8} {'cold wall':>10} {'warm wall':>10} {'ratio':>6}   {'cold CPU':>9} {'warm CPU':>9} {'ratio':>6}")
    for backend, rs in results.items():
        cw, ww = med([c[0] for c, _ in rs]), med([w[0] for _, w in rs])
        cc, wc = med([c[1] for c, _ in rs]), med([w[1] for _, w in rs])
        print(f"  {backend:8} {cw:10.1f} {ww:10.1f} {cw / ww:6.1f}   {cc:9.1f} {wc:9.1f} {cc / wc:6.1f}")
        if backend == "native":
            native_ratio = cw / ww
            if ww >= cw:
                ok = False
    fw, fc = med([f[0] for f in floor]), med([f[1] for f in floor])
    print(f"  {'floor':8} {'':10} {fw:10.1f} {'':6}   {'':9} {fc:9.1f}      (tinyk --version: start and exit)")

    warm_native = [w for _, w in results["native"]]
    ww = med([w[0] for w in warm_native])
    print(f"  warm native per kernel: {ww / n:.3f} ms wall, {(ww - fw) / n:.3f} ms above the process floor")
    print(f"  target (warm >= 10x faster than cold): {'met' if native_ratio >= 10 else 'NOT met'} ({native_ratio:.1f}x)")
    share = med([w[3].get("load-ms", 0.0) + w[3].get("key-ms", 0.0) for w in warm_native])
    print(f"  the cache's own part of a warm native run (keys and loading): {share:.3f} ms, {100 * share / ww:.0f}%")

    keys = [("front-ms", "parse, check, lower (front-ms)"), ("key-ms", "keys (key-ms)"),
            ("read", "cache: read"), ("verify", "cache: verify envelope"),
            ("deserialize", "cache: deserialize + relink + object checks"),
            ("validate-ms", "  of which object checks (validate)"),
            ("setup-ms", "native: host CPU, features, toolchain"), ("jit-ms", "native: create the JIT"),
            ("add-ms", "native: add objects to the JIT"), ("link-ms", "native: link (resolve symbols)"),
            ("run-ms", "native: the call")]
    print(f"  where a warm native run spends its time (medians, ms):")
    print(f"    {'process start and exit (floor)':44} {fw:7.3f}")
    accounted = fw
    for k, label in keys:
        v = med([w[3].get(k, 0.0) for w in warm_native])
        if not label.startswith("  "):
            accounted += v
        print(f"    {label:44} {v:7.3f}")
    print(f"    {'rest (libraries, exit, scheduling)':44} {ww - accounted:7.3f}")
    print(f"    {'total (wall)':44} {ww:7.3f}")

sys.exit(0 if ok else 1)
PY
