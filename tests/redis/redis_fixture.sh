#!/usr/bin/env bash
# Real Redis servers for the Redis tests, on 127.0.0.1 only, without persistence, each
# in its own folder under DIR; ctest runs `start` before the tests and `stop` after them
# (FIXTURES_SETUP / FIXTURES_CLEANUP), and tests start servers of their own with
# `server` and `cluster`, so `stop` finds every server by its pid file under DIR.
#
#   redis_fixture.sh check                    exit 0 when redis-server and redis-cli are
#                                             installed; otherwise say so and exit 77 (skip),
#                                             or 1 under CI=true (CI must run the tests)
#   redis_fixture.sh start DIR                the shared server and cluster: writes
#                                             DIR/server.port and DIR/cluster.ports
#   redis_fixture.sh server DIR NAME [--port PORT] [ARG...]
#                                             one more server (extra redis-server ARGs), on
#                                             PORT if given; prints its port; DIR/NAME.pid
#                                             holds its pid
#   redis_fixture.sh cluster DIR NAME [ARG...] three masters NAME-1..3 made a cluster;
#                                             prints their ports, comma-separated
#   redis_fixture.sh stop DIR                 stops every server started under DIR
#
# A port is chosen by trying: a random one, and another when redis-server cannot bind it
# (or its cluster bus port, port + 10000). A server is ready once it answers PING and
# the socket listening on its port is its own: one that lost its port to another test's
# server lives a moment, while that server answers in its place.
set -euo pipefail

die() {
  echo "redis_fixture: $*" >&2
  exit 1
}

check() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    return 0
  fi
  if [ "${CI:-}" = "true" ]; then
    die "redis-server or redis-cli is not installed, and CI=true needs the Redis tests to run (scripts/setup.sh installs redis-server and redis-tools)"
  fi
  echo "redis_fixture: redis-server or redis-cli is not installed: the Redis tests are skipped (install redis-server and redis-tools)" >&2
  exit 77
}

# shellcheck source=../support/server_process.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/server_process.sh"

# wait_until_ready PORT PID: 0 once the server answers PING on PORT and the socket
# listening there is PID's own, 1 if the process died or did not within 5 s.
wait_until_ready() {
  local port=$1 pid=$2 i
  for i in $(seq 1 100); do
    if ! alive "$pid"; then return 1; fi
    case "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" in
      PONG | NOAUTH*) # (NOAUTH: a server with a password is up too)
        if listens "$pid" "$port"; then return 0; fi ;;
    esac
    sleep 0.05
  done
  kill "$pid" 2>/dev/null || true
  return 1
}

# start_server DIR NAME [--port PORT] [ARG...]: prints the port of a new server (PORT
# when given, as to restart a server where it was).
start_server() {
  local dir=$1 name=$2
  shift 2
  local home="$dir/$name" attempt attempts=20 port pid fixed=
  if [ "${1:-}" = "--port" ]; then
    fixed=$2
    attempts=3 # (a restart: the port of a server just killed may take a moment to be free)
    shift 2
  fi
  mkdir -p "$home"
  for attempt in $(seq 1 "$attempts"); do
    port=${fixed:-$((20000 + (RANDOM * 32768 + RANDOM) % 30000))}
    redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$home" \
      --logfile "$home/redis.log" --daemonize no "$@" >/dev/null 2>&1 &
    pid=$!
    echo "$pid" >"$dir/$name.pid"
    if wait_until_ready "$port" "$pid"; then
      echo "$port" >"$dir/$name.port"
      echo "$port"
      return 0
    fi
    wait "$pid" 2>/dev/null || true
    rm -f "$dir/$name.pid"
    if [ -n "$fixed" ]; then
      echo "redis_fixture: $name: port $port did not work (attempt $attempt of $attempts)" >&2
    else
      echo "redis_fixture: $name: port $port did not work (attempt $attempt), trying another" >&2
    fi
  done
  die "$name: could not start redis-server (see $home/redis.log)"
}

# start_cluster DIR NAME [ARG...]: prints the comma-separated ports of three masters.
start_cluster() {
  local dir=$1 name=$2
  shift 2
  local ports=() i
  for i in 1 2 3; do
    ports+=("$(start_server "$dir" "$name-$i" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-node-timeout 2000 "$@")")
  done
  redis-cli --cluster create "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" \
    --cluster-yes >"$dir/$name.create.log" 2>&1 || die "$name: redis-cli --cluster create failed (see $dir/$name.create.log)"
  # Every node must know every slot before a test asks it.
  for i in $(seq 1 100); do
    local ok=1 port
    for port in "${ports[@]}"; do
      redis-cli -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || ok=0
    done
    if [ "$ok" = 1 ]; then
      local IFS=,
      echo "${ports[*]}" | tee "$dir/$name.ports"
      return 0
    fi
    sleep 0.05
  done
  die "$name: the cluster did not become ready"
}

stop_all() {
  local dir=$1 pidfile pid
  [ -d "$dir" ] || return 0
  for pidfile in "$dir"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill -CONT "$pid" 2>/dev/null || true # a test may have stopped it
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

command=${1:-}
case "$command" in
  check) check ;;
  start)
    [ $# -eq 2 ] || die "usage: $0 start DIR"
    check
    stop_all "$2"
    rm -rf "$2"
    mkdir -p "$2"
    start_server "$2" server >/dev/null
    start_cluster "$2" cluster >/dev/null
    ;;
  server)
    [ $# -ge 3 ] || die "usage: $0 server DIR NAME [ARG...]"
    start_server "$2" "$3" "${@:4}"
    ;;
  cluster)
    [ $# -ge 3 ] || die "usage: $0 cluster DIR NAME [ARG...]"
    start_cluster "$2" "$3" "${@:4}"
    ;;
  stop)
    [ $# -eq 2 ] || die "usage: $0 stop DIR"
    stop_all "$2"
    ;;
  *) die "usage: $0 check|start DIR|server DIR NAME [ARG...]|cluster DIR NAME [ARG...]|stop DIR" ;;
esac
