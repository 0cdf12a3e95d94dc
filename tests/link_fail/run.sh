#!/bin/sh
# Link-fail tests of separate compilation (compile_cache/src.hpp, detail/config.hpp): a
# host's translation units built in both modes, linked in each wrong mix, must fail with a
# linker error naming the symbol that says what to do; the right builds (all header-only;
# all separate with src.hpp in exactly one) link and run.
#
# Usage: run.sh [--libs "LIBRARIES"] <c++ compiler> [include dir]...
#   --libs: what a host links besides its objects (default -lboost_serialization); CMake
#   passes Boost.Serialization's library file.
set -u

libs=-lboost_serialization
if [ "${1-}" = --libs ]; then
    libs=${2-}
    shift 2
fi
if [ $# -lt 1 ]; then
    echo "usage: $0 [--libs \"LIBRARIES\"] <c++ compiler> [include dir]..." >&2
    exit 2
fi
cxx=$1
shift
includes=
for dir in "$@"; do includes="$includes -I$dir"; done

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
needs_src=compile_cache_separate_compilation_needs_src_hpp_in_exactly_one_translation_unit
same_mode=compile_cache_define_COMPILE_CACHE_SEPARATE_COMPILATION_in_every_translation_unit_or_in_none

# compile <source> <object> [flags]
compile() {
    # shellcheck disable=SC2086  # $includes and $3 are lists of words on purpose
    if ! "$cxx" -std=c++17 -O1 $includes ${3-} -c "$here/$1" -o "$work/$2" 2>"$work/compile.log"; then
        echo "FAIL cannot compile $1 ${3-}:"
        cat "$work/compile.log"
        exit 1
    fi
}

compile user_a.cpp a_header.o
compile user_b.cpp b_header.o
compile main.cpp main.o
compile user_a.cpp a_separate.o -DCOMPILE_CACHE_SEPARATE_COMPILATION
compile user_b.cpp b_separate.o -DCOMPILE_CACHE_SEPARATE_COMPILATION
compile source.cpp source.o -DCOMPILE_CACHE_SEPARATE_COMPILATION
cp "$work/source.o" "$work/source2.o"

# links <name> <objects>: a right build, which must link and run
links() {
    name=$1
    shift
    objects=
    for o in "$@"; do objects="$objects $work/$o"; done
    # shellcheck disable=SC2086  # $objects and $libs are lists of words on purpose
    if "$cxx" $objects $libs -o "$work/host" >"$work/link.log" 2>&1 && "$work/host"; then
        echo "ok   $name: links and runs"
    else
        echo "FAIL $name: expected to link and run, got:"
        cat "$work/link.log"
        failures=$((failures + 1))
    fi
}

# fails <name> <error> <objects>: a wrong build, whose link must fail with <error> (the
# linker's words and the symbol's name)
fails() {
    name=$1
    symbol=$2
    shift 2
    objects=
    for o in "$@"; do objects="$objects $work/$o"; done
    # shellcheck disable=SC2086  # $objects and $libs are lists of words on purpose
    if "$cxx" $objects $libs -o "$work/host" >"$work/link.log" 2>&1; then
        echo "FAIL $name: linked, expected the link error: $symbol"
        failures=$((failures + 1))
    elif grep -qF "$symbol" "$work/link.log"; then
        echo "ok   $name: $symbol"
    else
        echo "FAIL $name: no link error says: $symbol; got:"
        cat "$work/link.log"
        failures=$((failures + 1))
    fi
}

links "header-only" a_header.o b_header.o main.o
links "separate, src.hpp in one translation unit" a_separate.o b_separate.o main.o source.o
fails "separate, src.hpp in none" "undefined reference to \`$needs_src'" a_separate.o b_separate.o main.o
fails "separate, src.hpp in two" "multiple definition of \`$needs_src'" a_separate.o b_separate.o main.o source.o source2.o
fails "one header-only translation unit among separate ones" "multiple definition of \`$same_mode'" a_header.o b_separate.o main.o source.o
fails "header-only translation units and src.hpp" "multiple definition of \`$same_mode'" a_header.o b_header.o main.o source.o

echo "$failures failed"
[ "$failures" -eq 0 ]
