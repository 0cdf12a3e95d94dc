#!/usr/bin/env bash
# The setup tinyk_remote.sh and tinyk_claims_rtt.sh share, sourced by them: a Release tinyk
# with LLVM and hiredis ($tinyk), a redis-server of the tests' fixture on 127.0.0.1 ($port),
# the fleet's secret ($work/secret.key) and the project's latency proxy in front of the
# server ($proxy_port: $rtt_ms round trip, half each way), all stopped and removed at exit.
# Expects $root, $rtt_ms and $bench_tag (the scratch folder's and the server's name).
# shellcheck disable=SC2154,SC2034 # (set by the sourcing script; used by it)
# shellcheck source=../scripts/setup.sh
source "$root/scripts/setup.sh"
ensure_packages "${COMPILE_CACHE_PACKAGES[@]}" "${COMPILE_CACHE_REDIS_PACKAGES[@]}" llvm-14-dev

build=${COMPILE_CACHE_BUILD_DIR:-$root/build}/bench-remote
echo "building tinyk (Release, with LLVM and hiredis) in $build ..." >&2
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_CACHE_BUILD_EXAMPLES=ON \
  -DCOMPILE_CACHE_BUILD_TESTS=OFF -DCOMPILE_CACHE_WITH_LLVM=ON >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target tinyk >/dev/null
tinyk=$build/examples/tinyk/tinyk

work=$(mktemp -d "${TMPDIR:-/tmp}/tinyk-$bench_tag.XXXXXX")
servers=$work/servers
bench_cleanup() {
  if [[ -n ${proxy_PID:-} ]]; then kill "$proxy_PID" 2>/dev/null || true; fi
  bash "$root/tests/redis/redis_fixture.sh" stop "$servers" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap bench_cleanup EXIT
port=$(bash "$root/tests/redis/redis_fixture.sh" server "$servers" "$bench_tag")
printf 'the benchmark fleet secret\n' >"$work/secret.key"
chmod 600 "$work/secret.key" # a secret any user may read is refused
# The latency proxy: a network's round trip on loopback (half of it each way).
c++ -std=c++17 -O2 -I"$root/tests" "$root/tests/redis/helpers/latency_proxy.cpp" -o "$work/latency_proxy" -pthread
coproc proxy { exec "$work/latency_proxy" "$port" "$((rtt_ms * 500))"; }
read -r proxy_port <&"${proxy[0]}"
bench_machine="$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), nproc $(nproc), $(uname -sr), $(redis-server --version | cut -d' ' -f1-3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
