#!/bin/sh
# Compile-fail tests: each *.cpp here names, in a `// expect: <text>` comment, either
# `success` (a control that must compile) or a substring of the one diagnostic it must
# produce. A file that must fail has to fail with exactly one error, the first line
# naming an error holding that substring: a policy check gives one sentence, not a page
# of template errors. Every file is compiled as C++17 and as C++20 (when the compiler
# knows it): the sentence must come first and alone under both.
#
# Usage: run.sh [--standards "c++17 c++20"] [--shard K/N] [--pch-dir DIR] <c++ compiler> [include dir]...
#   e.g. tests/compile_fail/run.sh g++ include
# --standards: the standards to compile under (default: c++17, and c++20 when the
# compiler knows it); CMake passes COMPILE_CACHE_TEST_DIAGNOSTICS_STANDARDS.
# --shard K/N: only the files whose place in the sorted list, counted from 0, is K
# modulo N (CMake runs N shards as N tests, which ctest runs side by side).
# --pch-dir: where the umbrella header was precompiled before (DIR/STD/umbrella.pch, by
# tests/support/precompile_umbrella.sh), for every shard; without one there, made here.
set -u

standards=
pch_dir=
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
    --pch-dir)
        pch_dir=${2-}
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
    echo "usage: $0 [--standards \"c++17 c++20\"] [--shard K/N] [--pch-dir DIR] <c++ compiler> [include dir]..." >&2
    exit 2
fi
cxx=$1
shift
includes=
for dir in "$@"; do includes="$includes -I$dir"; done

here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
pch=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$pch"' EXIT
trap 'exit 130' INT # (so that dash runs the EXIT trap when stopped)
trap 'exit 143' TERM
failures=0
count=0
precompiled=0

# With clang, the umbrella header is parsed once per standard into a precompiled header
# (tests/support/precompile_umbrella.sh) put first in each file that only includes
# headers and then declares: its diagnostics are the same. A file that defines a macro,
# includes a header after code, or includes src.hpp (which must come first) is compiled
# as it is; so is every file with g++, or when clang cannot make it.
pch_path() { # STD: prints the precompiled umbrella's path, or nothing
    if [ -n "$pch_dir" ] && [ -f "$pch_dir/$1/umbrella.pch" ]; then
        echo "$pch_dir/$1/umbrella.pch"
        return
    fi
    if [ ! -f "$pch/$1.path" ]; then
        # shellcheck disable=SC2086  # $includes is a list of words on purpose
        sh "$here/../support/precompile_umbrella.sh" "$pch" "$1" "$cxx" $includes >"$pch/$1.path"
    fi
    cat "$pch/$1.path"
}
# Whether FILE may have the umbrella put first: includes, then code, and nothing else.
takes_umbrella_first() {
    awk '/^[ \t]*#[ \t]*(define|undef|if)/ || /compile_cache\/src\.hpp/ { bad = 1 }
         /^[ \t]*(\/\/.*)?$/ { next }
         /^[ \t]*#[ \t]*include/ { if (code) bad = 1; next }
         { code = 1 }
         END { exit bad }' "$1"
}

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
    umbrella_first=no
    if takes_umbrella_first "$source"; then umbrella_first=yes; fi
    for std in $standards; do
        count=$((count + 1))
        set -- # the flags that put the precompiled umbrella first, if any
        if [ "$umbrella_first" = yes ]; then
            pch_file=$(pch_path "$std")
            if [ -n "$pch_file" ]; then
                set -- -include-pch "$pch_file"
                precompiled=$((precompiled + 1))
            fi
        fi
        # shellcheck disable=SC2086  # $includes is a list of words on purpose
        if "$cxx" -std="$std" -fsyntax-only "$@" $includes "$source" >"$log" 2>&1; then
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

echo "$count compilations ($precompiled with the umbrella header precompiled), $failures failed"
[ "$failures" -eq 0 ]
