#!/usr/bin/env bash
# The long reliability runs behind docs/reliability.md, too slow for every CI run:
#   1. 500 writers killed with SIGKILL at random moments of their stores;
#   2. the time of a store with 1,000 entries and with 100,000 entries in the cache,
#      on the disk under $TMPDIR (or /tmp) and in memory (/dev/shm) when there is one;
#   3. the cost of each durability setting (none, file, full) on that disk.
# Prints the figures; exits non-zero if a run fails.
# Usage: scripts/reliability.sh [KILLED_WRITERS (500)] [ENTRIES (100000)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}"

kills=${1:-500}
entries=${2:-100000}
build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/reliability
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOMPILE_CACHE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target compile_cache_tests storage_bench storage_worker >/dev/null

scratch=$(mktemp -d "${TMPDIR:-/tmp}/compile_cache-reliability-XXXXXX")
trap 'rm -rf "$scratch" ${shm:+"$shm"}' EXIT
shm=""

echo "== $kills writers killed mid-store"
COMPILE_CACHE_KILLED_WRITERS=$kills "$build/tests/compile_cache_tests" \
  "writers killed mid-store leave no partial entry; their temp files are swept" | grep -E "^killed-writers|passed|failed"

echo "== store time at 1,000 and $entries entries"
echo "disk ($(df -T "$scratch" | awk 'NR==2 {print $2}') under ${TMPDIR:-/tmp}):"
"$build/tests/storage_bench" scale "$scratch/scale" "$entries"
rm -rf "$scratch/scale"
if [ -w /dev/shm ]; then
  shm=$(mktemp -d /dev/shm/compile_cache-reliability-XXXXXX)
  echo "memory (tmpfs at /dev/shm):"
  "$build/tests/storage_bench" scale "$shm/scale" "$entries"
  rm -rf "$shm"
  shm=""
fi

echo "== durability settings (disk under ${TMPDIR:-/tmp})"
"$build/tests/storage_bench" durability "$scratch/durability" 300 4096
"$build/tests/storage_bench" durability "$scratch/durability" 100 262144
echo "== reliability runs passed"
