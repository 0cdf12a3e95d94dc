#!/usr/bin/env bash
# Builds and runs every test three times: the normal build (g++, C++17); the whole suite
# under AddressSanitizer and UndefinedBehaviorSanitizer (g++, C++20); and with clang
# against the single header alone, include/ off the test program's include path, with
# LLVM hidden from CMake, as on a machine without it (tinyk with its VM only). The clang
# suite builds the test program in C++20 and the programs that use the library as a host
# does (the tutorials, tinyk, the tool, and their tests) in C++17, and runs its
# compile-fail and concept-diagnostic tests under both: so g++ and clang each pass in
# both standards. The LLVM parts (adapter tests, tinyk's native backend) are built by
# the first two.
# Before any build, the committed single header must match what scripts/amalgamate.py
# makes from include/. Every build has -Werror on the project's own targets.
# First, shellcheck over every shell script; last, the README's demo (scripts/demo.sh)
# on the tinyk the release suite built and tested, so that the README's first command
# is proven too. Before it, scripts/test_arm64.sh: the platform-dependent test cases
# for arm64 under qemu-aarch64, entries across architectures, and the portable-only build.
# Exits non-zero on any failure; prints each suite's wall and CPU time at the end.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" "${COMPILE_CACHE_LLVM_PACKAGES[@]}" "${COMPILE_CACHE_REDIS_PACKAGES[@]}" "${COMPILE_CACHE_HTTP_PACKAGES[@]}" "${COMPILE_CACHE_SIGNING_PACKAGES[@]}" "${COMPILE_CACHE_ZSTD_PACKAGES[@]}" clang-14 libclang-rt-14-dev pkgconf doxygen shellcheck

build=${COMPILE_CACHE_BUILD_DIR:-$root/build}
jobs=$(nproc 2>/dev/null || echo 2)

# CPU seconds used by this script's finished children (user + system), from /proc:
# with the wall time it tells what a suite costs on a machine that others share too.
children_cpu() {
  local stat
  read -r -a stat </proc/$$/stat 2>/dev/null || { echo 0; return; }
  echo $(((stat[15] + stat[16]) / $(getconf CLK_TCK)))
}

timings=()
run_suite() { # NAME CMAKE-ARGS...
  local name=$1; shift
  local start=$SECONDS cpu
  cpu=$(children_cpu)
  echo "== $name"
  cmake -S "$root" -B "$build/$name" -DCOMPILE_CACHE_WARNINGS_AS_ERRORS=ON "$@" >/dev/null
  cmake --build "$build/$name" -j "$jobs"
  ctest --test-dir "$build/$name" --output-on-failure -j "$jobs"
  timings+=("$(printf '%-20s %5d s wall %6d s cpu' "$name" $((SECONDS - start)) $(($(children_cpu) - cpu)))")
}

echo "== shellcheck: every shell script"
mapfile -t shell_scripts < <(cd "$root" && find . -path './build*' -prune -o -path ./.git -prune -o -type f \
  \( -name '*.sh' -o -path ./.ci/run \) -print | sort)
(cd "$root" && shellcheck "${shell_scripts[@]}")
echo "   ${#shell_scripts[@]} scripts, no warnings"

echo "== single header is up to date"
python3 "$root/scripts/amalgamate.py" --check

# Each kind of real server's tests runs in one suite: those against real Redis servers
# (and a Redis Cluster) under the sanitizers, where the client's parsing of what a server
# sends is checked for memory errors too; those against real nginx servers in release.
# SQLite's many-process tests run in the two g++ suites; the tutorials' programs in release
# and clang's suite (their output is compared byte for byte; the library code they run is
# the test program's, which the sanitizers check). The compile-fail sentences are checked
# under C++17 with g++ in release and C++20 in the sanitizer suite, and with clang under
# both, so that each compiler is checked under both.
# Debug information as line tables only (-g1): a failure's stack still names files and
# lines, and the g++ suites compile about a third faster than with full -g.
# The test program is built in groups of files (COMPILE_CACHE_TEST_UNITY_BUILD: about a
# third less compile time) in every suite but the clang one, where each test file still
# compiles alone. In release, the programs only tests run (helper processes, tutorials)
# are compiled at -O0 (COMPILE_CACHE_TEST_PROGRAMS_UNOPTIMIZED: half their compile time);
# the test programs, tinyk and the tool keep -O2.
run_suite release -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  -DCOMPILE_CACHE_TEST_UNITY_BUILD=ON -DCOMPILE_CACHE_TEST_DIAGNOSTICS_STANDARDS=c++17 \
  -DCOMPILE_CACHE_TEST_PROGRAMS_UNOPTIMIZED=ON -DCOMPILE_CACHE_TEST_REDIS=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite sanitize-cxx20 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_CXX_STANDARD=20 -DCOMPILE_CACHE_SANITIZE=ON \
  -DCOMPILE_CACHE_TEST_CONSUMERS=OFF -DCOMPILE_CACHE_TEST_HTTP=OFF -DCOMPILE_CACHE_TEST_TUTORIALS=OFF \
  -DCOMPILE_CACHE_TEST_DIAGNOSTICS_STANDARDS=c++20 \
  -DCOMPILE_CACHE_TEST_UNITY_BUILD=ON -DCOMPILE_CACHE_TEST_SEPARATE_COMPILATION=ON
# The clang suite builds without optimisation or debug info (no build type): it is about
# the standard, the compiler and the header, and compiles much faster so. Its tests are
# built in separate-compilation mode (the single header's compile_cache/src.hpp), as the
# sanitizer suite's are (where it also saves compiling the library's functions under the
# sanitizers in every file); the release suite's are header-only. It also compiles each
# of include/'s headers alone (tests/headers), and links the wrong mixes of the two modes
# (tests/link_fail) against the single header. (It merges what were two clang suites,
# one on the single header in C++17, one with LLVM hidden in C++20: CI time.)
# The consumer projects (CMake packaging: find_package, add_subdirectory, FetchContent,
# pkg-config, the single header) are built in release alone: what they check is CMake's.
run_suite clang14-cxx20-single-header -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CXX_STANDARD=20 \
  -DCOMPILE_CACHE_TEST_SINGLE_HEADER=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON -DCOMPILE_CACHE_TEST_REDIS=OFF \
  -DCOMPILE_CACHE_TEST_HTTP=OFF -DCOMPILE_CACHE_TEST_SQLITE_PROCESSES=OFF "-DCOMPILE_CACHE_TEST_DIAGNOSTICS_STANDARDS=c++17;c++20" \
  -DCOMPILE_CACHE_TEST_SEPARATE_COMPILATION=ON -DCOMPILE_CACHE_TEST_HOSTS_CXX_STANDARD=17
# ...and hidden it was: that tinyk refuses the native backend.
if "$build/clang14-cxx20-single-header/examples/tinyk/tinyk" run --backend=native "$root/examples/tinyk/chain40.tk" \
  --call main 1 >/dev/null 2>&1; then
  echo "the clang14-cxx20-single-header suite found LLVM: it was to be hidden" >&2
  exit 1
fi

# ThreadSanitizer over the thread-safe parts (memory_storage, statistics, registry, a
# shared cache): only their test program, to stay within CI time.
tsan_start=$SECONDS
echo "== tsan [concurrency]"
cmake -S "$root" -B "$build/tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOMPILE_CACHE_WARNINGS_AS_ERRORS=ON \
  -DCOMPILE_CACHE_BUILD_EXAMPLES=OFF -DCOMPILE_CACHE_TEST_CONSUMERS=OFF -DCOMPILE_CACHE_WITH_LLVM=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$build/tsan" -j "$jobs" --target compile_cache_concurrency_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$build/tsan/tests/compile_cache_concurrency_tests" "[concurrency]"
timings+=("$(printf '%-20s %5d s wall' tsan $((SECONDS - tsan_start)))")

# Beyond x86-64 Linux: the platform-dependent test cases cross-built for arm64 and run
# under qemu-aarch64 (ARMv8 SHA-2/CRC32, then the portable code), an x86-64 and an arm64
# host on one cache directory, and a native build with COMPILE_CACHE_NO_LINUX_EXTENSIONS=ON
# (scripts/test_arm64.sh: two builds of compile_cache_platform_tests, g++ C++17).
arm64_start=$SECONDS
arm64_cpu=$(children_cpu)
echo "== arm64 under qemu, across architectures, portable-only (scripts/test_arm64.sh)"
bash "$root/scripts/test_arm64.sh" "$build"
timings+=("$(printf '%-20s %5d s wall %6d s cpu' arm64-portable $((SECONDS - arm64_start)) $(($(children_cpu) - arm64_cpu)))")

# The libFuzzer target over the whole load path: a minute of fuzzing, as two jobs of 30
# seconds at once (one per core: a single job leaves the other core idle for the minute).
# scripts/fuzz.sh builds it with clang 14; the long run and its figures are in
# docs/reliability.md.
fuzz_start=$SECONDS
echo "== load fuzzer, two jobs of 30 s"
"$root/scripts/fuzz.sh" 30 -jobs=2 -workers=2
timings+=("$(printf '%-20s %5d s wall' fuzz-2x30s $((SECONDS - fuzz_start)))")

# The README's first command, on the tinyk the release suite built and tested: it
# fails when a run fails, a result differs, or the warm run does not load all 40.
demo_start=$SECONDS
echo "== demo (scripts/demo.sh on the release suite's tinyk)"
bash "$root/scripts/demo.sh" --tinyk "$build/release/examples/tinyk/tinyk"
timings+=("$(printf '%-20s %5d s wall' demo $((SECONDS - demo_start)))")

echo "== time per suite ($jobs jobs)"
printf '   %s\n' "${timings[@]}"
echo "== all suites passed"
