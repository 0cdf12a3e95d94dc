#!/usr/bin/env bash
# The demo: tinyk, the example host compiler, compiles a module of 40 kernels that
# call each other, twice, in fresh processes against a fresh cache directory: cold
# (everything compiled and stored), then warm (everything loaded).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}"

build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/demo
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target tinyk >/dev/null

tinyk=$build/examples/tinyk/tinyk
program=$root/examples/tinyk/chain40.tk
cache=$(mktemp -d "${TMPDIR:-/tmp}/tinyk-demo.XXXXXX")
trap 'rm -rf "$cache"' EXIT

run() { # LABEL: runs tinyk once, prints wall time and what it compiled or loaded
  local label=$1 start end log result
  log=$(mktemp)
  start=$(date +%s%N)
  result=$(TINYK_CACHE_DIR=$cache "$tinyk" run -v "$program" --call main 1 2>"$log")
  end=$(date +%s%N)
  local ns=$((end - start))
  printf '%-5s main(1) = %s   %6.1f ms   compiled %2d, loaded %2d\n' "$label" "$result" \
    "$(awk -v n="$ns" 'BEGIN { print n / 1e6 }')" "$(grep -c '^tinyk: compiled' "$log" || true)" \
    "$(grep -c '^tinyk: loaded' "$log" || true)"
  rm -f "$log"
  echo "$ns" >"$cache.$label"
}

echo "tinyk: 40 kernels, each calling the previous one ($program)"
echo "cache directory: $cache (fresh)"
run cold
run warm
cold=$(cat "$cache.cold") warm=$(cat "$cache.warm")
rm -f "$cache.cold" "$cache.warm"
printf 'warm is %.1f times faster than cold\n' "$(awk -v c="$cold" -v w="$warm" 'BEGIN { print c / w }')"
