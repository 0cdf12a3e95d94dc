#!/usr/bin/env bash
# The compile time of one translation unit that includes only (a) the umbrella header,
# (b) the Boost headers the umbrella's headers include, (c) those and every standard and
# system header they include, (d) compile_cache/key/builder.hpp, (e) cache.hpp with
# memory_storage.hpp (a host over a storage of its own), (f) nothing; (g) the umbrella
# under separate compilation (COMPILE_CACHE_SEPARATE_COMPILATION: declarations only),
# (h) the Boost headers it then includes (those of (b) outside impl/*.ipp files); and,
# each through a precompiled header built once beforehand, (i) the umbrella, (j) the
# Boost headers of (b), (k) the umbrella under separate compilation, (l) the Boost
# headers of (h). Measured RUNS times each, interleaved (a b c ... l a b ...) so that a
# shared machine's load falls on all alike; prints each median (seconds of user+sys CPU
# time, and wall time).
#   benchmarks/header_cost.sh [RUNS] [compiler flags...]     e.g. header_cost.sh 5 -O0
# INCLUDE_DIR=... measures the headers of another checkout (default: this one's include/).
set -euo pipefail
runs=${1:-5}
shift || true
flags=("$@")
[[ ${#flags[@]} -eq 0 ]] && flags=(-O0)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
include=${INCLUDE_DIR:-$root/include}
cxx=${CXX:-g++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo '#include <compile_cache/compile_cache.hpp>' >"$work/umbrella.cpp"
# Every Boost header the umbrella's headers include themselves.
grep -rh '^#include <boost/' "$include/compile_cache" --include='*.hpp' --include='*.ipp' \
    --exclude-dir=llvm --exclude-dir=testing --exclude='redis_*' --exclude='sqlite_*' |
    sort -u >"$work/boost_only.cpp"
# Those the headers include outside their impl/*.ipp files: what the umbrella includes
# under separate compilation, (h), the baseline of (g); through a precompiled header,
# (l) of (k).
grep -rh '^#include <boost/' "$include/compile_cache" --include='*.hpp' \
    --exclude-dir=llvm --exclude-dir=testing --exclude='redis_*' --exclude='sqlite_*' |
    sort -u >"$work/boost_only_separate.cpp"
# The same, and the standard and system headers (not ours; the ARM ones are behind #if in ours).
{
    cat "$work/boost_only.cpp"
    grep -rhE '^\s*#\s*include <[a-z_/0-9.]+>' "$include/compile_cache" --include='*.hpp' --include='*.ipp' \
        --exclude-dir=llvm --exclude-dir=testing --exclude='redis_*' --exclude='sqlite_*' |
        sed 's/^\s*#\s*/#/' | grep -v -e '<boost/' -e '<compile_cache/' -e '<arm_' | sort -u
} >"$work/boost_and_std.cpp"
echo '#include <compile_cache/key/builder.hpp>' >"$work/key_builder.cpp"
printf '#include <compile_cache/cache.hpp>\n#include <compile_cache/storage/memory_storage.hpp>\n' >"$work/cache_memory.cpp"
echo 'int main() { return 0; }' >"$work/nothing.cpp"
cp "$work/umbrella.cpp" "$work/umbrella_separate.cpp"
# A precompiled header is used when the TU's first line includes it (-include) and it
# was built with the same flags; -Winvalid-pch makes a mismatch an error, not a silent reparse.
declare -A extra=([umbrella_separate]=-DCOMPILE_CACHE_SEPARATE_COMPILATION
    [umbrella_separate_pch]=-DCOMPILE_CACHE_SEPARATE_COMPILATION)
for pch in umbrella_pch:umbrella boost_only_pch:boost_only umbrella_separate_pch:umbrella \
    boost_only_separate_pch:boost_only_separate; do
    tu=${pch%%:*}
    mkdir -p "$work/$tu"
    cp "$work/${pch#*:}.cpp" "$work/$tu/pch.hpp"
    # shellcheck disable=SC2086 # extra holds one flag or none
    "$cxx" -std=c++17 "${flags[@]}" ${extra[$tu]-} -I"$include" -x c++-header "$work/$tu/pch.hpp" -o "$work/$tu/pch.hpp.gch"
    echo 'int f();' >"$work/$tu.cpp"
    extra[$tu]+=" -Winvalid-pch -include $work/$tu/pch.hpp"
done

tus=(umbrella boost_only boost_and_std key_builder cache_memory nothing umbrella_separate
    boost_only_separate umbrella_pch boost_only_pch umbrella_separate_pch boost_only_separate_pch)
declare -A cpu wall
for ((i = 0; i < runs; ++i)); do
    for tu in "${tus[@]}"; do
        # shellcheck disable=SC2086 # extra holds flags split on blanks
        /usr/bin/time -f '%U %S %e' -o "$work/time" \
            "$cxx" -std=c++17 "${flags[@]}" ${extra[$tu]-} -I"$include" -c "$work/$tu.cpp" -o "$work/$tu.o"
        read -r user sys elapsed <"$work/time"
        cpu[$tu]+="$(echo "$user + $sys" | bc | xargs printf '%.2f') "
        wall[$tu]+="$elapsed "
    done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "$cxx ${flags[*]}, $runs runs, medians (cpu = user+sys s; wall s):"
for tu in "${tus[@]}"; do
    printf '  %-23s cpu %5s  wall %5s   (cpu runs: %s)\n' "$tu" "$(median <<<"${cpu[$tu]}")" \
        "$(median <<<"${wall[$tu]}")" "${cpu[$tu]% }"
done
