#!/bin/sh
# The first error a translation unit gets when compiled with flags the library cannot
# work with: one sentence from compile_cache/detail/config.hpp, before anything else,
# and nothing but the library's sentences after it (compilation stops there).
# llvm-config --cxxflags gives -std=c++14 -fno-exceptions, and LLVM's own builds use
# -fno-rtti: each is tried on the umbrella header, a key header or the LLVM adapter's
# headers, and a control checks that the adapter's seam compiles without RTTI.
#
# Usage: flags.sh <c++ compiler> <LLVM include dir, or ""> [include dir]...
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 <c++ compiler> <llvm include dir or \"\"> [include dir]..." >&2
    exit 2
fi
cxx=$1
llvm_include=$2
shift 2
includes=
for dir in "$@"; do includes="$includes -I$dir"; done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
count=0

# check <header> <flags> <expected text of the first error, or "success">
check() {
    header=$1
    flags=$2
    expect=$3
    count=$((count + 1))
    printf '#include <%s>\nint main() { return 0; }\n' "$header" >"$work/tu.cpp"
    # shellcheck disable=SC2086  # $flags and $includes are lists of words on purpose
    if "$cxx" $flags -fsyntax-only $includes "$work/tu.cpp" >"$work/log" 2>&1; then
        if [ "$expect" = success ]; then
            echo "ok   $header with $flags (compiles)"
        else
            echo "FAIL $header with $flags: compiled, expected the first error to say: $expect"
            failures=$((failures + 1))
        fi
        return
    fi
    first=$(grep -m 1 'error' "$work/log")
    if [ "$expect" = success ]; then
        echo "FAIL $header with $flags: expected to compile, got:"
        cat "$work/log"
        failures=$((failures + 1))
    elif ! printf '%s' "$first" | grep -qF -- "$expect"; then
        echo "FAIL $header with $flags: the first error does not say '$expect'; it is:"
        echo "$first"
        failures=$((failures + 1))
    elif others=$(grep 'error' "$work/log" | grep -v -e 'compile_cache: ' -e 'errors\{0,1\} generated'); then
        # Compilation stops at the library's sentences: no error of anything else after them.
        echo "FAIL $header with $flags: errors after the library's sentences ($(printf '%s\n' "$others" | wc -l) lines), the first:"
        printf '%s\n' "$others" | head -n 3
        failures=$((failures + 1))
    else
        echo "ok   $header with $flags: $first"
    fi
}

cxx17="compile_cache: needs C++17"
exceptions="compile_cache: needs exceptions"
rtti="compile_cache: needs RTTI"

# Each case costs seconds (a failing umbrella header still parses): one of each kind.
check compile_cache/compile_cache.hpp "-std=c++14" "$cxx17"
check compile_cache/compile_cache.hpp "-std=c++17 -fno-rtti" "$rtti"
check compile_cache/key/key.hpp "-std=c++14 -fno-exceptions" "$cxx17"
check compile_cache/key/key.hpp "-std=c++17 -fno-exceptions" "$exceptions"
check compile_cache/llvm/object_store.hpp "-std=c++17 -fno-exceptions" "$exceptions"
check compile_cache/llvm/object_store.hpp "-std=c++17 -fno-rtti" success

if [ -n "$llvm_include" ]; then
    # What a JIT gets with llvm-config --cxxflags as they are, and with the two changes
    # README's LLVM section gives.
    includes="$includes -I$llvm_include"
    # (That the no-RTTI side compiles with -fno-rtti, tests/llvm's helper shows.)
    check compile_cache/llvm/object_cache.hpp "-std=c++14 -fno-exceptions" "$cxx17"
    check compile_cache/llvm/object_cache.hpp "-std=c++17 -fno-exceptions" "$exceptions"
fi

echo "$count checks, $failures failed"
[ "$failures" -eq 0 ]
