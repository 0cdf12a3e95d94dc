#!/bin/sh
# Compile-fail tests: each *.cpp here names, in a `// expect: <text>` comment, either
# `success` (a control that must compile) or a substring of the one diagnostic it must
# produce. A file that must fail has to fail with exactly one error, whose text holds
# that substring: a concept check gives one sentence, not a page of template errors.
#
# Usage: run.sh <c++ compiler> [include dir]...
#   e.g. tests/compile_fail/run.sh g++ include
set -u

if [ $# -lt 1 ]; then
    echo "usage: $0 <c++ compiler> [include dir]..." >&2
    exit 2
fi
cxx=$1
shift
includes=
for dir in "$@"; do includes="$includes -I$dir"; done

here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failures=0
count=0

for source in "$here"/*.cpp; do
    name=$(basename "$source")
    count=$((count + 1))
    expect=$(sed -n 's|^// expect: ||p' "$source" | head -n 1)
    if [ -z "$expect" ]; then
        echo "FAIL $name: no '// expect: ' line"
        failures=$((failures + 1))
        continue
    fi
    # shellcheck disable=SC2086  # $includes is a list of words on purpose
    if "$cxx" -std=c++17 -fsyntax-only $includes "$source" >"$log" 2>&1; then
        if [ "$expect" = success ]; then
            echo "ok   $name (compiles)"
        else
            echo "FAIL $name: compiled, expected an error containing: $expect"
            failures=$((failures + 1))
        fi
        continue
    fi
    if [ "$expect" = success ]; then
        echo "FAIL $name: expected to compile, got:"
        cat "$log"
        failures=$((failures + 1))
        continue
    fi
    errors=$(grep -c 'error:' "$log")
    if ! grep -qF -- "$expect" "$log"; then
        echo "FAIL $name: no error contains: $expect; got:"
        cat "$log"
        failures=$((failures + 1))
    elif [ "$errors" -ne 1 ]; then
        echo "FAIL $name: expected exactly one error, got $errors:"
        cat "$log"
        failures=$((failures + 1))
    else
        echo "ok   $name"
    fi
done

echo "$count files, $failures failed"
[ "$failures" -eq 0 ]
