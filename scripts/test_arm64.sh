#!/usr/bin/env bash
# Beyond x86-64 Linux (called by scripts/test.sh; runs alone too):
#   bash scripts/test_arm64.sh [BUILD-DIR]     (default: $COMPILE_CACHE_BUILD_DIR or build/)
# Two builds of compile_cache_platform_tests (tests/CMakeLists.txt,
# COMPILE_CACHE_PLATFORM_TESTS): the test files of the areas with platform-dependent
# code (SHA-256, CRC-32C, envelopes, key and host identity, directory storage, cache),
# not the whole suite, whose other areas have none and would only add build time.
# 1. arm64: cross-built with g++-aarch64-linux-gnu against Debian's arm64 Boost
#    (cmake/toolchains/), C++17, no build type, run under qemu-aarch64, whose default
#    CPU has the ARMv8 SHA-2 and CRC32 extensions: every test case with the ARMv8
#    implementations, and beside that run, with the portable ones forced
#    (COMPILE_CACHE_SHA256=portable COMPILE_CACHE_CRC32C=portable), the cases that hash,
#    less [processes] (many emulated processes, whose Linux calls the other run makes)
#    and [scale] (100,000 entries). Which implementations ran is printed and checked.
# 2. Entries across architectures: the x86-64 and the arm64 builds of one small host
#    program on one cache directory, each way round: the other's entry is a clean miss
#    (absent: another key, since the key's toolchain component names the platform),
#    never an error or a load, and both entries then live side by side.
# 3. The portable fallbacks: a native build with COMPILE_CACHE_NO_LINUX_EXTENSIONS=ON (no
#    renameat2, getrandom, getauxval or dl_iterate_phdr build-id) passes the storage
#    (processes included), key and cache test cases.
# The first run of 1, the longest (every test case under emulation, one process), runs
# beside the runs of 1, 2 and 3 after it: two cores, and this part's output printed after
# theirs. Every run is bounded (timeout): one that does not finish fails the step and says
# which. Emulation tests the instructions and the Linux calls, not an arm64 machine's
# memory ordering (qemu runs guest threads on the host's). Exits non-zero on any
# failure; prints each part's wall time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" "${COMPILE_CACHE_ARM64_PACKAGES[@]}"

build=${1:-${COMPILE_CACHE_BUILD_DIR:-$root/build}}
jobs=$(nproc 2>/dev/null || echo 2)
arm=$build/arm64
native=$build/portable-only
# Only what these builds are for: the platform tests, one compiler, C++17, no LLVM.
common=(-DCMAKE_BUILD_TYPE= -DCMAKE_CXX_STANDARD=17 -DCOMPILE_CACHE_WARNINGS_AS_ERRORS=ON
  -DCOMPILE_CACHE_PLATFORM_TESTS=ON -DCOMPILE_CACHE_BUILD_EXAMPLES=OFF -DCOMPILE_CACHE_BUILD_TOOLS=OFF
  -DCOMPILE_CACHE_WITH_LLVM=OFF -DCOMPILE_CACHE_INSTALL=OFF -DCOMPILE_CACHE_TEST_CONSUMERS=OFF
  -DCOMPILE_CACHE_TEST_UNITY_BUILD=ON)
portable_forced_tests='~[processes]~[scale]'
fallback_tests='[storage],[key],[cache]'
# The loader and C library of libc6:arm64, not -L /usr/aarch64-linux-gnu (see the toolchain file).
emulate=(qemu-aarch64)
timings=()
start=$SECONDS

fail() { echo "test_arm64: $*" >&2; exit 1; }
bounded_end() { # STATUS SECONDS WHAT: fails the step unless a bounded command's STATUS is 0
  case $1 in
  0) ;;
  124 | 137) fail "$3 did not finish in $2 s (stopped)" ;;
  *) fail "$3 failed (exit $1)" ;;
  esac
}
bounded() { # SECONDS WHAT COMMAND...: runs COMMAND; fails the step when it does not finish in time
  local limit=$1 what=$2 status=0; shift 2
  timeout -k 10 "$limit" "$@" || status=$?
  bounded_end "$status" "$limit" "$what"
}
expect() { # WHAT TEXT PATTERN...: fails unless TEXT contains every PATTERN
  local what=$1 text=$2; shift 2
  local pattern
  for pattern in "$@"; do
    [[ $text == *"$pattern"* ]] || fail "$what: expected '$pattern' in: $text"
  done
  echo "   $what: $text"
}
part_done() { timings+=("$(printf '%-34s %4d s' "$1" $((SECONDS - part)))"); }

part=$SECONDS
echo "== arm64: cross build (g++-aarch64-linux-gnu, C++17)"
cmake -S "$root" -B "$arm" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  "${common[@]}" >/dev/null
cmake --build "$arm" -j "$jobs" --target compile_cache_platform_tests
# The ELF header's e_machine: 183 is EM_AARCH64.
[ "$(od -An -tu2 -j18 -N2 "$arm/tests/compile_cache_platform_tests" | tr -d ' ')" = 183 ] ||
  fail "the arm64 build made no aarch64 program"
part_done 'arm64 build'

part=$SECONDS
echo "== native build with COMPILE_CACHE_NO_LINUX_EXTENSIONS=ON"
cmake -S "$root" -B "$native" -DCOMPILE_CACHE_NO_LINUX_EXTENSIONS=ON "${common[@]}" >/dev/null
cmake --build "$native" -j "$jobs" --target compile_cache_platform_tests
part_done 'portable-only build'

# The longest run, every test case under emulation (one process, one core), runs beside
# the three parts after it; its output is printed, and its end checked, after them.
scratch=$(mktemp -d)
armv8_pid=
armv8_limit=420
stop_armv8() { # on exit: a run still going is stopped (timeout passes the signal on), its output so far shown
  if [ -n "$armv8_pid" ]; then
    kill "$armv8_pid" 2>/dev/null || true
    wait "$armv8_pid" 2>/dev/null || true
    echo "test_arm64: the arm64 tests (ARMv8), stopped if still running; their last lines:" >&2
    tail -n 20 "$scratch/armv8.log" >&2 || true
  fi
  rm -rf "$scratch"
}
trap stop_armv8 EXIT
armv8_start=$SECONDS
echo "== arm64 under qemu-aarch64: ARMv8 SHA-2 and CRC32, every platform test case (beside the next parts)"
report=$(bounded 60 platform_report "${emulate[@]}" "$arm/tests/platform_report")
expect "arm64 implementations" "$report" platform=aarch64-linux sha256=arm-sha2 crc32c=arm-crc host-id=build-id
timeout -k 10 "$armv8_limit" "${emulate[@]}" "$arm/tests/compile_cache_platform_tests" >"$scratch/armv8.log" 2>&1 &
armv8_pid=$!

part=$SECONDS
echo "== arm64 under qemu-aarch64: portable SHA-256 and CRC-32C forced ($portable_forced_tests)"
export COMPILE_CACHE_SHA256=portable COMPILE_CACHE_CRC32C=portable
report=$(bounded 60 platform_report "${emulate[@]}" "$arm/tests/platform_report")
expect "arm64 implementations" "$report" platform=aarch64-linux sha256=portable crc32c=portable
bounded 300 "the arm64 tests (portable forced)" "${emulate[@]}" "$arm/tests/compile_cache_platform_tests" \
  "$portable_forced_tests"
unset COMPILE_CACHE_SHA256 COMPILE_CACHE_CRC32C
part_done 'arm64 tests, portable forced'

part=$SECONDS
echo "== portable fallbacks, native ($fallback_tests)"
report=$(bounded 60 platform_report "$native/tests/platform_report")
expect "portable-only build" "$report" platform=x86_64-linux host-id=exe-sha256
bounded 300 "the portable-only tests" "$native/tests/compile_cache_platform_tests" "$fallback_tests"
part_done 'portable-only tests'

# Each build's own entry, and a clean miss on the other's: the same small host program
# (tests/helpers/cache_fresh_process_helper.cpp) built for x86-64 (the portable-only
# build: the host identified by its executable's digest) and for arm64 (by build-id).
part=$SECONDS
echo "== entries across architectures: one cache directory, x86-64 and arm64"
x86_helper=$native/tests/cache_fresh_process_helper
arm_helper=$arm/tests/emulated/cache_fresh_process_helper
export CCFRESH_LOG='' # the helper's cache comes from CCFRESH_*: no log lines
cross=$scratch/cross
mkdir "$cross"
# Kernel entries are named by their 32-byte key (64 hex digits); the kernel's identity
# record (explain.hpp: its history, which only explains misses) has a 33-byte key ending
# in 1d, one per identity whatever the architecture, and is kept in packs of records
# (33-byte keys ending in 1e: docs/design.md, "Identity records in packs").
entries() { find "$1" -type f -regextype posix-extended -regex ".*/[0-9a-f]{64}\$" | wc -l; }
# The distinct identity records the packs under DIR hold (each pack: its record count, a
# little-endian u32 at byte 8, then a 56-byte slot per record starting at byte 16, each
# slot starting with the record's 33-byte key).
records() {
  local pack count i
  find "$1" -type f -regextype posix-extended -regex '.*/[0-9a-f]{64}1e$' | while read -r pack; do
    count=$(od -An -tu4 -j8 -N4 "$pack" | tr -d ' ')
    for ((i = 0; i < count; i++)); do
      od -An -tx1 -j$((16 + 56 * i)) -N33 "$pack" | tr -d ' \n'
      echo
    done
  done | sort -u | grep -c . || true
}
cross_way() { # FIRST-NAME FIRST-HELPER SECOND-NAME SECOND-HELPER DIR
  local first=$1 first_helper=$2 second=$3 second_helper=$4 dir=$5 out
  out=$(bounded 60 "$first store" "$first_helper" store "$dir")
  expect "$first stores" "$out" "enabled=1 outcome=compiled"
  out=$(bounded 60 "$second load" "$second_helper" load "$dir")
  expect "$second loads" "$out" "outcome=miss" "misses=1 (absent=1)" "store-failures=0"
  out=$(bounded 60 "$second store" "$second_helper" store "$dir")
  expect "$second stores" "$out" "outcome=compiled" "misses=1 (absent=1)"
  out=$(bounded 60 "$first load" "$first_helper" load "$dir")
  expect "$first loads" "$out" "outcome=loaded" "callee_live=1"
  out=$(bounded 60 "$second load" "$second_helper" load "$dir")
  expect "$second loads" "$out" "outcome=loaded" "callee_live=1"
  [ "$(entries "$dir")" -eq 2 ] || fail "expected 2 entries (one per architecture) in $dir, found $(entries "$dir")"
  # One kernel, one identity record (in the packs), whichever architecture stored.
  [ "$(records "$dir")" -eq 1 ] || fail "expected 1 identity record in $dir, found $(records "$dir")"
}
cross_way x86-64 "$x86_helper" arm64 "$arm_helper" "$cross/x86-first"
cross_way arm64 "$arm_helper" x86-64 "$x86_helper" "$cross/arm64-first"
part_done 'across architectures'

echo "== arm64 under qemu-aarch64: ARMv8 SHA-2 and CRC32, every platform test case (its output)"
armv8_status=0
wait "$armv8_pid" || armv8_status=$?
armv8_pid=
cat "$scratch/armv8.log"
bounded_end "$armv8_status" "$armv8_limit" "the arm64 tests (ARMv8)"
timings+=("$(printf '%-34s %4d s' 'arm64 tests, ARMv8 (beside those)' $((SECONDS - armv8_start)))")

echo "== time per part"
printf '   %s\n' "${timings[@]}"
echo "   total $((SECONDS - start)) s"
