#!/usr/bin/env bash
# The demo: tinyk, the example host compiler, compiles a module of 40 kernels that
# call each other, twice, in fresh processes against a fresh cache directory: cold
# (everything compiled and stored), then warm (everything loaded). It does so for each
# backend this tinyk has (the bytecode VM, then native code when built with LLVM) and
# prints each run's wall time, how many kernels it compiled and loaded, and the ratio,
# beside it the floor (the wall time of `tinyk --version`: a process that starts and
# exits) and the cache's own part of the warm run (computing keys and loading entries,
# from --stats), so that what the cache costs and what the host costs can be told apart.
# Exits non-zero when a run fails, the warm result differs from the cold one, or the
# warm run did not load all 40 kernels.
#
# usage: scripts/demo.sh [--tinyk PATH]
#   --tinyk PATH   use this tinyk binary instead of building one (scripts/test.sh
#                  passes the one its release suite built and tested); without it,
#                  tinyk is built first, showing cmake's progress and the time it took
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Copies the progress lines of a build's standard output to standard output, indented,
# as they come: cmake's own, `[ 42%] Building CXX object ...` (Makefiles) or
# `[12/80] Building CXX object ...` (Ninja); drops the rest (the commands, make's
# chatter). The build's warnings and errors are on its standard error, not read here.
show_build_progress() {
  local line
  while IFS= read -r line; do
    case $line in '['*) printf '  %s\n' "$line" ;; esac
  done
}

# Configures SOURCE in BUILD with CMAKE-ARGS and builds TARGET there, saying what it
# does at each step, the build's progress lines, and at the end the time it all took.
# Fails (under set -e) when either step fails; their error output goes to stderr as is.
build_with_progress() { # SOURCE BUILD TARGET [CMAKE-ARGS...]
  local source=$1 build=$2 target=$3 start=$SECONDS
  shift 3
  echo "configuring $build ..."
  cmake -S "$source" -B "$build" "$@" >/dev/null
  echo "building $target (a first build takes minutes):"
  cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "$target" | show_build_progress
  echo "built $target in $((SECONDS - start)) s"
}

# Sourced (tests/demo_progress_test.sh): the functions above only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

tinyk=
while [ $# -gt 0 ]; do
  case $1 in
    --tinyk) [ $# -ge 2 ] || { echo "demo: --tinyk needs a path" >&2; exit 2; }; tinyk=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument '$1' (scripts/demo.sh --help)" >&2; exit 2 ;;
  esac
done

if [ -z "$tinyk" ]; then
  # shellcheck source=setup.sh
  source "$root/scripts/setup.sh"
  ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" "${COMPILE_CACHE_LLVM_PACKAGES[@]}"
  build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/demo
  echo "building tinyk (Release) for the demo"
  build_with_progress "$root" "$build" tinyk -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_EXAMPLES=ON \
    -DCOMPILE_CACHE_BUILD_TESTS=OFF
  tinyk=$build/examples/tinyk/tinyk
fi
[ -x "$tinyk" ] || { echo "demo: no tinyk at $tinyk" >&2; exit 2; }

program=$root/examples/tinyk/chain40.tk
kernels=40
work=$(mktemp -d "${TMPDIR:-/tmp}/tinyk-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The backends this tinyk has: `tinyk --version` names them.
backends=(vm)
case $("$tinyk" --version) in *native*) backends+=(native) ;; esac

# Per backend and run (e.g. "native cold"): wall time, kernels compiled and loaded, result.
declare -A wall_ns compiled loaded result cache_ms
run() { # BACKEND LABEL: tinyk once, in a fresh process, on BACKEND's cache directory
  local backend=$1 label=$2 start end status=0
  start=$(date +%s%N)
  TINYK_CACHE_DIR=$work/cache-$backend "$tinyk" run -v --stats --backend="$backend" "$program" --call main 1 \
    >"$work/out" 2>"$work/err" || status=$?
  end=$(date +%s%N)
  if [ "$status" -ne 0 ]; then
    echo "demo: tinyk failed (exit $status) on the $backend $label run:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  local id="$backend $label"
  wall_ns[$id]=$((end - start))
  compiled[$id]=$(grep -c '^tinyk: compiled ' "$work/err" || true)
  loaded[$id]=$(grep -c '^tinyk: loaded ' "$work/err" || true)
  result[$id]=$(cat "$work/out")
  # The library's part: keys (key-ms) and loading (load-ms: read, verify, deserialize).
  cache_ms[$id]=$(sed -n 's/^tinyk: stats: .*load-ms=\([0-9.]*\).* key-ms=\([0-9.]*\).*/\1 \2/p' "$work/err" |
    awk '{ printf "%.2f", $1 + $2 }')
  printf '  %-5s main(1) = %s   %7.1f ms   compiled %2d, loaded %2d\n' "$label" "${result[$id]}" \
    "$(awk -v n="${wall_ns[$id]}" 'BEGIN { print n / 1e6 }')" "${compiled[$id]}" "${loaded[$id]}"
}

# The floor: the median wall time of 5 runs of `tinyk --version`, in ns.
floor_ns=$(for _ in 1 2 3 4 5; do
  start=$(date +%s%N)
  "$tinyk" --version >/dev/null
  echo $(($(date +%s%N) - start))
done | sort -n | sed -n 3p)

echo "tinyk: $kernels kernels, each calling the previous one ($program)"
echo "each backend: a fresh cache directory, a cold run, then a warm run, each a fresh process"
failed=0
for backend in "${backends[@]}"; do
  echo "backend $backend:"
  run "$backend" cold
  run "$backend" warm
  printf '  warm is %.1f times faster than cold\n' \
    "$(awk -v c="${wall_ns[$backend cold]}" -v w="${wall_ns[$backend warm]}" 'BEGIN { print c / w }')"
  printf '  beside it: the floor (tinyk --version) %.1f ms; the cache'"'"'s own part of the warm run\n' \
    "$(awk -v n="$floor_ns" 'BEGIN { print n / 1e6 }')"
  printf '  (keys and loading) %s ms, %.0f%% of it\n' "${cache_ms[$backend warm]:-?}" \
    "$(awk -v c="${cache_ms[$backend warm]:-0}" -v w="${wall_ns[$backend warm]}" 'BEGIN { print 100 * c * 1e6 / w }')"
  # What the demo is meant to show; anything else is a bug worth reporting.
  if [ "${result[$backend cold]}" != "${result[$backend warm]}" ]; then
    echo "demo: $backend: the warm result differs from the cold one" >&2
    failed=1
  fi
  if [ "${compiled[$backend cold]}" -ne "$kernels" ] || [ "${loaded[$backend warm]}" -ne "$kernels" ]; then
    echo "demo: $backend: expected $kernels compiled cold and $kernels loaded warm" >&2
    failed=1
  fi
done
[ ${#backends[@]} -eq 2 ] || echo "(this tinyk was built without LLVM: the VM backend only)"
exit "$failed"
