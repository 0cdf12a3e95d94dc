#!/usr/bin/env bash
# Builds and runs every test: the normal build, then the whole suite again under
# AddressSanitizer and UndefinedBehaviorSanitizer. Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}"

build=${COMPILE_CACHE_BUILD_DIR:-$root/build}
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() { # NAME CMAKE-ARGS...
  local name=$1; shift
  echo "== $name"
  cmake -S "$root" -B "$build/$name" -DCOMPILE_CACHE_WARNINGS_AS_ERRORS=ON "$@" >/dev/null
  cmake --build "$build/$name" -j "$jobs"
  ctest --test-dir "$build/$name" --output-on-failure -j "$jobs"
}

run_suite release -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite sanitize -DCMAKE_BUILD_TYPE=Debug -DCOMPILE_CACHE_SANITIZE=ON
echo "== all suites passed"
