#!/usr/bin/env bash
# Checks what scripts/demo.sh prints while it builds tinyk: its build_with_progress,
# run on a project of two small sources instead of tinyk, must print cmake's progress
# lines and then the time the build took, and show_build_progress must keep exactly
# the progress lines of a build's output (Makefiles' and Ninja's forms).
#
# usage: tests/demo_progress_test.sh [CXX]   exit 0 when so, 1 (with the output) otherwise
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cxx=${1:-c++}
work=$(mktemp -d "${TMPDIR:-/tmp}/demo-progress-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() { # WHAT OUTPUT-FILE
  echo "demo_progress_test: $1; the output was:" >&2
  cat "$2" >&2
  exit 1
}

# The demo's functions only (sourced, it returns before doing anything). A demo that
# lacks that would run here: with a tinyk that does not exist it stops at once.
# (Not followed by shellcheck: the demo's final exit would make the rest look unreachable.)
# shellcheck source=/dev/null
source "$repo/scripts/demo.sh" --tinyk "$work/no-such-tinyk"
declare -F build_with_progress show_build_progress >/dev/null ||
  { echo "demo_progress_test: scripts/demo.sh has no build_with_progress or show_build_progress" >&2; exit 1; }

# The filter alone: progress lines of both generators, indented; nothing else.
printf '%s\n' 'Consolidate compiler generated dependencies of target two' \
  '[ 50%] Building CXX object CMakeFiles/two.dir/a.cpp.o' 'cd /x && /usr/bin/c++ -c a.cpp' \
  '[2/3] Building CXX object CMakeFiles/two.dir/b.cpp.o' '[100%] Built target two' >"$work/build-output"
show_build_progress <"$work/build-output" >"$work/filtered"
printf '%s\n' '  [ 50%] Building CXX object CMakeFiles/two.dir/a.cpp.o' \
  '  [2/3] Building CXX object CMakeFiles/two.dir/b.cpp.o' '  [100%] Built target two' >"$work/expected"
cmp -s "$work/filtered" "$work/expected" || fail "show_build_progress kept other lines than the progress ones" "$work/filtered"

# A real build, through the same function the demo builds tinyk with.
mkdir "$work/src"
cat >"$work/src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(demo_progress CXX)
add_executable(two a.cpp b.cpp)
CMAKE
echo 'int b(); int main() { return b(); }' >"$work/src/a.cpp"
echo 'int b() { return 0; }' >"$work/src/b.cpp"
build_with_progress "$work/src" "$work/build" two -DCMAKE_CXX_COMPILER="$cxx" >"$work/out"
[ -x "$work/build/two" ] || fail "build_with_progress did not build the program" "$work/out"
grep -Eq '^  \[( *[0-9]+%|[0-9]+/[0-9]+)\] Building CXX object .*b\.cpp' "$work/out" ||
  fail "no progress line for b.cpp" "$work/out"
grep -Eq '^built two in [0-9]+ s$' "$work/out" || fail "no line with the time the build took" "$work/out"
echo "demo_progress_test: the demo's build step prints cmake's progress and its time"
