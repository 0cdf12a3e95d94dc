#!/bin/sh
# Compile-fail tests: each *.cpp here names, in a `// expect: <text>` comment, either
# `success` (a control that must compile) or a substring of the one diagnostic it must
# produce. A file that must fail has to fail with exactly one error, the first line
# naming an error holding that substring: a policy check gives one sentence, not a page
# of template errors. Every file is compiled as C++17 and as C++20 (when the compiler
# knows it): the sentence must come first and alone under both.
#
# Usage: run.sh [--standards "c++17 c++20"] [--shard K/N] <c++ compiler> [include dir]...
#   e.g. tests/compile_fail/run.sh g++ include
# --standards: the standards to compile under (default: c++17, and c++20 when the
# compiler knows it); CMake passes COMPILE_CACHE_TEST_DIAGNOSTICS_STANDARDS.
# --shard K/N: only the files whose place in the sorted list, counted from 0, is K
# modulo N (CMake runs N shards as N tests, which ctest runs side by side).
set -u

standards=
shard=0
shards=1
while :; do
    case ${1-} in
    --standards)
        standards=${2-}
        shift 2
        ;;
    --shard)
        shard=${2%/*}
        shards=${2#*/}
        shift 2
        ;;
    *) break ;;
    esac
done
case $shard/$shards in
*[!0-9/]* | /* | */) echo "$0: --shard takes K/N, as 0/4" >&2; exit 2 ;;
esac
if [ "$shards" -lt 1 ] || [ "$shard" -ge "$shards" ]; then
    echo "$0: --shard K/N needs 0 <= K < N" >&2
    exit 2
fi
if [ $# -lt 1 ]; then
    echo "usage: $0 [--standards \"c++17 c++20\"] [--shard K/N] <c++ compiler> [include dir]..." >&2
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

if [ -z "$standards" ]; then
    standards=c++17
    if echo 'int main() {}' | "$cxx" -std=c++20 -fsyntax-only -x c++ - >/dev/null 2>&1; then
        standards="c++17 c++20"
    fi
fi

place=-1
for source in "$here"/*.cpp; do
    place=$((place + 1))
    [ $((place % shards)) -eq "$shard" ] || continue
    name=$(basename "$source")
    expect=$(sed -n 's|^// expect: ||p' "$source" | head -n 1)
    if [ -z "$expect" ]; then
        echo "FAIL $name: no '// expect: ' line"
        failures=$((failures + 1))
        continue
    fi
    for std in $standards; do
        count=$((count + 1))
        # shellcheck disable=SC2086  # $includes is a list of words on purpose
        if "$cxx" -std="$std" -fsyntax-only $includes "$source" >"$log" 2>&1; then
            if [ "$expect" = success ]; then
                echo "ok   $name -std=$std (compiles)"
            else
                echo "FAIL $name -std=$std: compiled, expected an error containing: $expect"
                failures=$((failures + 1))
            fi
            continue
        fi
        if [ "$expect" = success ]; then
            echo "FAIL $name -std=$std: expected to compile, got:"
            cat "$log"
            failures=$((failures + 1))
            continue
        fi
        errors=$(grep -c 'error:' "$log")
        first=$(grep -m 1 'error:' "$log")
        case $first in
        *"$expect"*) first_ok=1 ;;
        *) first_ok=0 ;;
        esac
        if [ "$first_ok" -ne 1 ]; then
            echo "FAIL $name -std=$std: the first error does not contain: $expect; got:"
            cat "$log"
            failures=$((failures + 1))
        elif [ "$errors" -ne 1 ]; then
            echo "FAIL $name -std=$std: expected exactly one error, got $errors:"
            cat "$log"
            failures=$((failures + 1))
        else
            echo "ok   $name -std=$std"
        fi
    done
done

echo "$count compilations, $failures failed"
[ "$failures" -eq 0 ]
