#!/usr/bin/env bash
# What the server fixtures (redis_fixture.sh, nginx_fixture.sh) ask of a server they
# started: whether it still runs, and whether the port that answers is its own. Sourced.

# alive PID: the process exists and has not exited (a child that exited is a zombie
# until waited for, and kill -0 would still find it).
alive() {
  local stat state
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1 # (gone, even between two looks)
  state=${stat##*) }                                            # (after the name, which may hold ") ")
  [ "${state%% *}" != Z ]
}

# listens PID PORT...: 0 when process PID holds the socket listening on 127.0.0.1:PORT or
# 0.0.0.0:PORT, for every PORT (IPv4 only: the fixtures' servers bind 127.0.0.1). A server
# that could not bind its port (another test's server took it first) may live a moment
# before it gives up, while that other server answers on the port: answering alone does
# not tell that the server is ours. Reads /proc/net/tcp and the pid's descriptors once.
listens() {
  local pid=$1 port fd link local_address state inode
  shift
  local -A ours=() missing=()
  for fd in /proc/"$pid"/fd/*; do
    link=$(readlink "$fd" 2>/dev/null) || continue
    [[ $link == "socket:["*"]" ]] && ours[${link:8:-1}]=1
  done
  for port in "$@"; do missing[$(printf '%04X' "$port")]=1; done
  while read -r _ local_address _ state _ _ _ _ _ inode _; do
    [ "$state" = 0A ] || continue # LISTEN
    case "$local_address" in
      0100007F:* | 00000000:*) ;;
      *) continue ;;
    esac
    [ -z "${ours[$inode]-}" ] || unset "missing[${local_address#*:}]"
  done </proc/net/tcp
  [ "${#missing[@]}" -eq 0 ]
}
