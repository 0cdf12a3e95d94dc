#!/usr/bin/env bash
# Builds the benchmarks (Release) into build/bench, runs them all — each one's cases
# side by side in one process, repetitions interleaved at random so that a noisy
# machine slows every side alike — counts the system calls of a hit and a store with
# strace, and prints the ratios against the targets of docs/benchmarks.md.
#
#   scripts/bench.sh                      # everything (about 10 minutes on 2 cores)
#   BENCH_REPS=3 BENCH_MIN_TIME=0.05 COMPILE_CACHE_BENCH_COUNTS=1000 scripts/bench.sh   # quick
#
# Results: build/bench/results/*.json (Google Benchmark) and build/bench/results/summary.txt.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" "${COMPILE_CACHE_REDIS_PACKAGES[@]}" "${COMPILE_CACHE_HTTP_PACKAGES[@]}" libbenchmark-dev libssl-dev llvm-14-dev strace

build=${COMPILE_CACHE_BENCH_BUILD_DIR:-$root/build/bench}
results=$build/results
reps=${BENCH_REPS:-9}
min_time=${BENCH_MIN_TIME:-0.2}
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_BENCHMARKS=ON \
  -DCOMPILE_CACHE_BUILD_TESTS=OFF -DCOMPILE_CACHE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target bench_sha256 bench_integrity bench_storage bench_hit bench_key

mkdir -p "$results"
export COMPILE_CACHE_BENCH_DIR=$build/scratch # a real disk, like a cache directory
export COMPILE_CACHE_BENCH_KEEP=1             # removed at the end: see benchmarks/bench_common.hpp
rm -rf "$COMPILE_CACHE_BENCH_DIR"
mkdir -p "$COMPILE_CACHE_BENCH_DIR"
trap 'rm -rf "$COMPILE_CACHE_BENCH_DIR"' EXIT

run() { # PROGRAM RESULT-NAME [extra benchmark flags...]
  local program=$1 name=$2; shift 2
  echo "== $name" >&2
  "$build/benchmarks/$program" --benchmark_repetitions="$reps" --benchmark_min_time="$min_time" \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    --benchmark_out="$results/$name.json" --benchmark_out_format=json "$@" >"$results/$name.txt"
}

rm -f "$results"/*.json
run bench_sha256 bench_sha256
run bench_integrity bench_integrity
run bench_hit bench_hit
run bench_key bench_key
# Storage: hits and misses side by side in one process; the stores of each entry size
# and directory size in a process of their own, because LLVM's store cost grows with
# the number of files its process has created (see benchmarks/bench_storage.cpp).
# Twice: on the disk of the build tree (ext4 here), and on tmpfs (/dev/shm), where
# file creation does not depend on what else the machine did to the file system
# lately (ext4's inode allocator skips recently deleted inodes, and on a shared
# machine that makes creating a file cost anything from 15 to 400 us).
IFS=, read -r -a bench_counts <<<"${COMPILE_CACHE_BENCH_COUNTS:-1000,100000}"
run_storage() { # TAG DIRECTORY
  local tag=$1
  COMPILE_CACHE_BENCH_DIR=$2 run bench_storage "bench_storage-$tag-lookups" --benchmark_filter='^(hit|miss)/'
  for count in "${bench_counts[@]}"; do
    for size in 1024 4096 65536; do
      [ "$size" = 65536 ] && [ "$count" -gt 1000 ] && continue
      COMPILE_CACHE_BENCH_DIR=$2 COMPILE_CACHE_BENCH_COUNTS=$count run bench_storage \
        "bench_storage-$tag-store-$size-$count" --benchmark_filter="^store/[a-z_]+/$size/$count/"
    done
  done
}
run_storage disk "$COMPILE_CACHE_BENCH_DIR"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  shm=$(mktemp -d /dev/shm/compile_cache-bench.XXXXXX)
  trap 'rm -rf "$COMPILE_CACHE_BENCH_DIR" "$shm"' EXIT
  COMPILE_CACHE_BENCH_KEEP=0 run_storage tmpfs "$shm"
fi

# System calls per hit and per store: strace -c over N operations and over none (the
# same set-up), the difference divided by N.
strace_counts() { # MODE N OUT
  strace -c -f -o "$3" "$build/benchmarks/bench_hit" "--strace-$1=$2" 2>/dev/null
}
n=1000
for mode in hit store; do
  strace_counts "$mode" 0 "$results/strace-$mode-0.txt"
  strace_counts "$mode" "$n" "$results/strace-$mode-$n.txt"
done

python3 - "$results" "$n" <<'EOF' | tee "$results/summary.txt"
import json, os, re, sys, platform, subprocess, datetime

results, n = sys.argv[1], int(sys.argv[2])

def load(name):
    with open(os.path.join(results, name + ".json")) as f:
        data = json.load(f)
    out = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        unit = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        out[re.sub(r"/iterations:\d+$", "", b["run_name"])] = {"cpu": b["cpu_time"] * unit, "real": b["real_time"] * unit,
                              "bps": b.get("bytes_per_second"), "label": b.get("label", "")}
    return out, data["context"]

def verdict(ok):
    return "met" if ok else "MISSED"

lines = []
def say(s=""):
    lines.append(s)
    print(s)

sha, ctx = load("bench_sha256")
cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"], capture_output=True, text=True).stdout.strip()
say(f"date: {datetime.date.today().isoformat()}; machine: {cpu}, {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz; "
    f"load average {' '.join(f'{x:.1f}' for x in ctx.get('load_avg', []))}")
say("medians of the repetitions; times are CPU time (user + system) per operation; benchmarks built as Release")
say()
say("SHA-256, bytes/s, compile_cache / OpenSSL EVP (fetched md, context reused)")
for size, target in ((64, 1.1), (1024, None), (65536, 0.95), (1048576, 0.95)):
    cc = sha.get(f"BM_sha256_compile_cache/{size}")
    ossl = sha.get(f"BM_sha256_openssl_evp/{size}")
    port = sha.get(f"BM_sha256_compile_cache_portable/{size}")
    legacy = sha.get(f"BM_sha256_openssl_evp_legacy_md/{size}")
    if not cc or not ossl:
        say(f"  {size:>8} B: OpenSSL not built in"); continue
    r = cc["bps"] / ossl["bps"]
    t = f"target >= {target}: {verdict(r >= target)}" if target else "no target"
    say(f"  {size:>8} B: {r:5.2f}  ({cc['bps']/1e9:.2f} vs {ossl['bps']/1e9:.2f} GB/s; {cc['cpu']:.0f} vs {ossl['cpu']:.0f} ns; "
        f"portable {port['bps']/ossl['bps']:.2f}; EVP_sha256() {legacy['bps']/ossl['bps']:.2f})  {t}")

integ, _ = load("bench_integrity")
say()
say("Envelope check: SHA-256 time / CRC-32C time (and CRC-32C bytes/s)")
for size in (1024, 4096, 65536):
    c, s, p, e = (integ[f"BM_check_crc32c/{size}"], integ[f"BM_check_sha256/{size}"],
                  integ[f"BM_check_crc32c_portable/{size}"], integ[f"BM_open_envelope/{size}"])
    say(f"  {size:>6} B: {s['cpu']/c['cpu']:5.1f}x  (CRC-32C {c['cpu']:.0f} ns = {c['bps']/1e9:.1f} GB/s, "
        f"portable {p['cpu']:.0f} ns; SHA-256 {s['cpu']:.0f} ns; open_envelope {e['cpu']:.0f} ns)")

hit, _ = load("bench_hit")
say()
load_, floor = hit["BM_hit_load"], hit["BM_hit_floor"]
r = load_["cpu"] / floor["cpu"]
say(f"Whole hit, default_cache::load / floor (open+read+close + Boost load from memory), {load_['label']}")
say(f"  {r:.2f}  ({load_['cpu']/1e3:.2f} vs {floor['cpu']/1e3:.2f} us; real time {load_['real']/floor['real']:.2f})  "
    f"target <= 1.3: {verdict(r <= 1.3)}")
say("  parts: read floor {:.2f} us, storage.read {:.2f} us, open_envelope {:.2f} us, deserialize {:.2f} us".format(
    hit["BM_part_read_floor"]["cpu"]/1e3, hit["BM_part_storage_read"]["cpu"]/1e3,
    hit["BM_part_open_envelope"]["cpu"]/1e3, hit["BM_part_deserialize"]["cpu"]/1e3))

key, _ = load("bench_key")
say()
k = key["BM_key_100_statements"]
say(f"Key of a 100-statement kernel: {k['cpu']/1e3:.1f} us per kernel ({k['label']}): canonical text "
    f"{key['BM_key_part_canonical_text']['cpu']/1e3:.1f} us, key_builder {key['BM_key_part_builder']['cpu']/1e3:.1f} us; "
    f"make_key_builder (toolchain) {key['BM_key_part_make_key_builder']['cpu']/1e3:.2f} us")

def storage_table(tag, title):
    st = {}
    for name in sorted(os.listdir(results)):
        if name.startswith(f"bench_storage-{tag}-") and name.endswith(".json"):
            st.update(load(name[:-5])[0])
    if not st:
        return
    say()
    say(f"Storage path on {title}, compile_cache (directory_storage + envelope) / llvm::localCache, CPU time per operation")
    rows = sorted({tuple(name.split("/")[2:4]) for name in st}, key=lambda t: (int(t[1]), int(t[0])))
    for size, count in rows:
        g = lambda what, who: st.get(f"{what}/{who}/{size}/{count}")
        cs, ls, ch, lh, lu, cm, lm = (g("store", "compile_cache"), g("store", "llvm"), g("hit", "compile_cache"),
                                      g("hit", "llvm"), g("hit", "llvm_untouched"), g("miss", "compile_cache"), g("miss", "llvm"))
        if not ls or not lh:
            say(f"  {size:>6} B x {count:>6}: LLVM not built in")
            continue
        rs, rh = cs["cpu"] / ls["cpu"], ch["cpu"] / lh["cpu"]
        say(f"  {size:>6} B x {count:>6}: store {rs:.2f} ({cs['cpu']/1e3:.1f} vs {ls['cpu']/1e3:.1f} us) <= 0.5 {verdict(rs <= 0.5)};"
            f" hit {rh:.2f} ({ch['cpu']/1e3:.2f} vs {lh['cpu']/1e3:.2f} us; vs untouched {ch['cpu']/lu['cpu']:.2f}) <= 1.0 {verdict(rh <= 1.0)};"
            f" miss {cm['cpu']/lm['cpu']:.2f} ({cm['cpu']/1e3:.2f} vs {lm['cpu']/1e3:.2f} us)")
    counts = sorted({int(c) for _, c in rows})
    if len(counts) > 1:
        lo, hi = counts[0], counts[-1]
        say(f"  scale, compile_cache at {hi} entries / at {lo} (target <= 1.2):")
        for size in sorted({int(s) for s, c in rows if int(c) == hi}):
            for what in ("store", "hit"):
                a, b = st[f"{what}/compile_cache/{size}/{hi}"], st[f"{what}/compile_cache/{size}/{lo}"]
                r = a["cpu"] / b["cpu"]
                say(f"    {what:>5} {size:>6} B: {r:.2f}  {verdict(r <= 1.2)}")

storage_table("disk", "the build tree's disk")
storage_table("tmpfs", "tmpfs")

def strace_calls(path):
    calls = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                calls[parts[-1]] = int(parts[3])
    return calls

say()
say(f"System calls per operation (strace -c -f, {n} operations minus none)")
for mode in ("hit", "store"):
    a, b = strace_calls(os.path.join(results, f"strace-{mode}-{n}.txt")), strace_calls(os.path.join(results, f"strace-{mode}-0.txt"))
    per = {k: (a.get(k, 0) - b.get(k, 0)) / n for k in set(a) | set(b)}
    per = {k: v for k, v in per.items() if abs(v) >= 0.01}
    say(f"  {mode}: " + ", ".join(f"{k} {v:g}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])) +
        f"  (total {sum(per.values()):g})")
EOF
