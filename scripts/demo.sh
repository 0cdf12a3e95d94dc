#!/usr/bin/env bash
# The demo: tinyk, the example host compiler, compiles a module of 40 kernels that
# call each other, twice, in fresh processes against a fresh cache directory: cold
# (everything compiled and stored), then warm (everything loaded). Prints each run's
# wall time, how many kernels it compiled and loaded, and the ratio.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" "${COMPILE_CACHE_LLVM_PACKAGES[@]}"

build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/demo
echo "building tinyk (Release) in $build ..."
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_EXAMPLES=ON \
  -DCOMPILE_CACHE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target tinyk >/dev/null

tinyk=$build/examples/tinyk/tinyk
program=$root/examples/tinyk/chain40.tk
work=$(mktemp -d "${TMPDIR:-/tmp}/tinyk-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
cache=$work/cache # does not exist yet: tinyk creates it on the first store

declare -A wall_ns compiled loaded results
run() { # LABEL: runs tinyk once in a fresh process, prints its wall time and what it compiled or loaded
  local label=$1 start end status=0
  start=$(date +%s%N)
  TINYK_CACHE_DIR=$cache "$tinyk" run -v "$program" --call main 1 >"$work/out" 2>"$work/err" || status=$?
  end=$(date +%s%N)
  if [ "$status" -ne 0 ]; then
    echo "demo: tinyk failed (exit $status) on the $label run:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  wall_ns[$label]=$((end - start))
  compiled[$label]=$(grep -c '^tinyk: compiled ' "$work/err" || true)
  loaded[$label]=$(grep -c '^tinyk: loaded ' "$work/err" || true)
  results[$label]=$(cat "$work/out")
  printf '%-5s main(1) = %s   %7.1f ms   compiled %2d, loaded %2d\n' "$label" "${results[$label]}" \
    "$(awk -v n="${wall_ns[$label]}" 'BEGIN { print n / 1e6 }')" "${compiled[$label]}" "${loaded[$label]}"
}

echo "tinyk: 40 kernels, each calling the previous one ($program)"
echo "cache directory: $cache (fresh); backend: ${TINYK_BACKEND:-tinyk's default (native when built with LLVM)}"
run cold
run warm
printf 'warm is %.1f times faster than cold\n' \
  "$(awk -v c="${wall_ns[cold]}" -v w="${wall_ns[warm]}" 'BEGIN { print c / w }')"

# What the demo is meant to show; anything else is a bug worth reporting.
[ "${results[cold]}" = "${results[warm]}" ] || { echo "demo: the warm result differs from the cold one" >&2; exit 1; }
[ "${compiled[cold]}" -eq 40 ] && [ "${loaded[warm]}" -eq 40 ] ||
  { echo "demo: expected 40 compiled cold and 40 loaded warm" >&2; exit 1; }
