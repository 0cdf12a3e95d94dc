#!/usr/bin/env bash
# Builds the libFuzzer target over the cache's load path (tests/fuzz/load_fuzzer.cpp)
# with clang 14, AddressSanitizer and UndefinedBehaviorSanitizer, and runs it.
#   scripts/fuzz.sh [SECONDS] [LIBFUZZER-FLAGS...]
# SECONDS: how long to fuzz (default 60). Further arguments go to libFuzzer, e.g.
#   scripts/fuzz.sh 0 -runs=10000000            # ten million executions, no time limit
# The seed corpus is tests/fuzz/corpus (read only); what the fuzzer finds is kept in
# $COMPILE_CACHE_BUILD_DIR/fuzz/corpus (default build/fuzz/corpus) for the next run, and
# a crashing input is written to build/fuzz/ and makes the script fail. Every run uses
# -malloc_limit_mb=64 (one allocation over 64 MiB is a failure: a payload must not make
# Boost allocate what it claims) and -rss_limit_mb=2048; leaks fail it too.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" clang-14 libclang-rt-14-dev

seconds=${1:-60}
[ $# -gt 0 ] && shift
build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/fuzz

echo "== build the load fuzzer (clang 14, -fsanitize=fuzzer,address,undefined)"
cmake -S "$root/tests/fuzz" -B "$build" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target load_fuzzer -j "$(nproc 2>/dev/null || echo 2)"

mkdir -p "$build/corpus"
echo "== fuzz for ${seconds}s (0: no time limit)"
cd "$build" # libFuzzer writes the logs of -jobs=N runs (fuzz-N.log) to the working directory
rm -f fuzz-*.log
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
set +e
"$build/load_fuzzer" -malloc_limit_mb=64 -rss_limit_mb=2048 -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$build/" "$@" "$build/corpus" "$root/tests/fuzz/corpus" 2>&1 | tee "$build/last-run.log"
status=${PIPESTATUS[0]}
set -e
# With -jobs=N the figures are in each job's log (the parent also prints them: count once).
logs=()
for log in fuzz-*.log; do [ -e "$log" ] && logs+=("$build/$log"); done
[ ${#logs[@]} -eq 0 ] && logs=("$build/last-run.log")
runs=$(cat "${logs[@]}" | grep -o 'stat::number_of_executed_units: *[0-9]*' | awk '{s += $2} END {print s + 0}')
rate=$(cat "${logs[@]}" | grep -o 'stat::average_exec_per_sec: *[0-9]*' | awk '{s += $2} END {print s + 0}')
echo "== load_fuzzer: $runs executions, $rate exec/s, exit status $status"
exit "$status"
