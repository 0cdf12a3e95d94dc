#!/usr/bin/env bash
# Real nginx servers (Debian's nginx-light with its WebDAV modules) for the HTTP storage's
# tests, on 127.0.0.1 only, each in its own folder under DIR with its own configuration,
# certificates and password file made here; ctest runs `start` before the tests and `stop`
# after them (FIXTURES_SETUP / FIXTURES_CLEANUP), and a test starts a server of its own
# with `server` (to stop or kill it), so `stop` finds every server by its pid file.
#
#   nginx_fixture.sh check           exit 0 when nginx, its dav-ext and echo modules and
#                                    openssl are installed; otherwise say so and exit 77
#                                    (skip), or 1 under CI=true (CI must run the tests)
#   nginx_fixture.sh start DIR       the shared server `main`: writes DIR/main.ports
#   nginx_fixture.sh server DIR NAME one more server like main; prints its ports file;
#                                    DIR/NAME.pid holds its pid
#   nginx_fixture.sh stop DIR        stops every server started under DIR
#
# Each server listens on five ports, written to DIR/NAME.ports as `plain=P basic=P
# bearer=P tls=P h2=P`: plain WebDAV; WebDAV behind basic authentication (user cacheuser,
# password in DIR/basic.password); WebDAV behind a bearer token (DIR/bearer.token);
# WebDAV over TLS (certificate of DIR/tls/ca.pem for 127.0.0.1; DIR/tls/wrong-ca.pem is
# another CA; DIR/tls/client.pem and client.key a client certificate, which /mtls/ asks
# for; asked for the name localhost, it shows an expired certificate of the same CA);
# the same over TLS with HTTP/2 (h2, no client certificate, no expired one).
# Locations on each port: / WebDAV (PUT, DELETE, MKCOL, PROPFIND, create_full_put_path)
# on DIR/NAME/www; /nofull/ the same without create_full_put_path; /nodav/ static files
# only; /fail/ 500; /nocontent/ 204 (No Content); /partial/ 206 (Partial Content) with a
# body of 18 bytes; /forbidden/ 403; /reset/ nginx's 444 (the connection closed
# without an answer; over HTTP/2, the stream reset); /small/ WebDAV taking bodies of 1 KiB at most (413);
# /moved/X a 302 to /dav-target/X; /downgrade/X a 302 to http://127.0.0.1:PLAIN/dav-target/X
# (plain http); /stream/ 16 MiB sent chunked, with no length announced; /slow/ one line,
# then nothing for 60 s.
set -euo pipefail

PATH=$PATH:/usr/sbin:/sbin # nginx is in /usr/sbin, which a user's PATH may lack
modules=/usr/lib/nginx/modules
bearer_token="compile-cache-test-token-1"

die() {
  echo "nginx_fixture: $*" >&2
  exit 1
}

check() {
  if command -v nginx >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 &&
    [ -f "$modules/ngx_http_dav_ext_module.so" ] && [ -f "$modules/ngx_http_echo_module.so" ]; then
    return 0
  fi
  local what="nginx (nginx-light), libnginx-mod-http-dav-ext, libnginx-mod-http-echo, openssl or curl is not installed"
  if [ "${CI:-}" = "true" ]; then
    die "$what, and CI=true needs the HTTP tests to run (scripts/setup.sh installs them)"
  fi
  echo "nginx_fixture: $what: the HTTP tests are skipped" >&2
  exit 77
}

# shellcheck source=../support/server_process.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/server_process.sh"

# The certificates, the password and the token every server of DIR shares (made once).
make_credentials() {
  local dir=$1 tls=$1/tls
  [ -f "$tls/done" ] && return 0
  mkdir -p "$tls"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 3 \
    -subj "/CN=compile_cache test CA" 2>/dev/null
  openssl req -x509 "${ec[@]}" -keyout "$tls/wrong-ca.key" -out "$tls/wrong-ca.pem" -days 3 \
    -subj "/CN=compile_cache wrong CA" 2>/dev/null
  openssl req "${ec[@]}" -keyout "$tls/server.key" -out "$tls/server.csr" -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$tls/server.ext"
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/server.pem" -days 3 -extfile "$tls/server.ext" 2>/dev/null
  openssl req "${ec[@]}" -keyout "$tls/client.key" -out "$tls/client.csr" -subj "/CN=compile_cache client" 2>/dev/null
  openssl x509 -req -in "$tls/client.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/client.pem" -days 3 2>/dev/null
  # An expired certificate (valid until a day before it was made) for the name localhost,
  # which the TLS port shows to a client that asks for that name (SNI).
  openssl req "${ec[@]}" -keyout "$tls/expired.key" -out "$tls/expired.csr" -subj "/CN=localhost" 2>/dev/null
  printf 'subjectAltName=DNS:localhost\n' >"$tls/expired.ext"
  openssl x509 -req -in "$tls/expired.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/expired.pem" -days -1 -extfile "$tls/expired.ext" 2>/dev/null
  chmod 600 "$tls"/*.key
  printf 'pass-word-42\n' >"$dir/basic.password"
  printf 'cacheuser:%s\n' "$(openssl passwd -apr1 'pass-word-42')" >"$dir/htpasswd"
  printf '%s\n' "$bearer_token" >"$dir/bearer.token"
  chmod 600 "$dir/basic.password" "$dir/bearer.token"
  touch "$tls/done"
}

# write_conf DIR HOME PLAIN BASIC BEARER TLS
write_conf() {
  local dir=$1 home=$2 plain=$3 basic=$4 bearer=$5 tls=$6 h2=$7
  cat >"$home/locations.conf" <<CONF
location / {
    dav_methods PUT DELETE MKCOL;
    dav_ext_methods PROPFIND OPTIONS;
    create_full_put_path on;
    dav_access user:rw group:r all:r;
}
location /nodav/ { }
location /nofull/ { dav_methods PUT DELETE MKCOL; dav_ext_methods PROPFIND OPTIONS; }
location /small/ { client_max_body_size 1k; dav_methods PUT DELETE; create_full_put_path on; }
location /fail/ { return 500; }
location /nocontent/ { return 204; }
location /partial/ { default_type application/octet-stream; return 206 "a part of an entry"; }
location /forbidden/ { return 403; }
location /reset/ { return 444; }
location ~ ^/moved/(.*)\$ { return 302 /dav-target/\$1; }
location ~ ^/downgrade/(.*)\$ { return 302 http://127.0.0.1:$plain/dav-target/\$1; }
location /stream/ { default_type application/octet-stream; echo_duplicate 1048576 "0123456789abcdef"; }
location /slow/ { default_type application/octet-stream; echo "first line"; echo_flush; echo_sleep 60; echo "never"; }
CONF
  cat >"$home/nginx.conf" <<CONF
load_module $modules/ngx_http_dav_ext_module.so;
load_module $modules/ngx_http_echo_module.so;
daemon off;
master_process off;
worker_processes 1;
pid $home/nginx.pid;
error_log $home/error.log warn;
events { worker_connections 256; }
http {
    access_log $home/access.log;
    client_body_temp_path $home/tmp/body;
    proxy_temp_path $home/tmp/proxy;
    fastcgi_temp_path $home/tmp/fastcgi;
    uwsgi_temp_path $home/tmp/uwsgi;
    scgi_temp_path $home/tmp/scgi;
    client_max_body_size 64m;
    sendfile on;
    keepalive_requests 100000;
    root $home/www;
    map \$http_authorization \$bearer_refused { "Bearer $bearer_token" 0; default 1; }
    server {
        listen 127.0.0.1:$plain;
        include $home/locations.conf;
    }
    server {
        listen 127.0.0.1:$basic;
        auth_basic "compile_cache";
        auth_basic_user_file $dir/htpasswd;
        include $home/locations.conf;
    }
    server {
        listen 127.0.0.1:$bearer;
        if (\$bearer_refused) { return 401; }
        include $home/locations.conf;
    }
    server {
        listen 127.0.0.1:$tls ssl;
        ssl_certificate $dir/tls/server.pem;
        ssl_certificate_key $dir/tls/server.key;
        ssl_client_certificate $dir/tls/ca.pem;
        ssl_verify_client optional;
        location /mtls/ {
            if (\$ssl_client_verify != SUCCESS) { return 403; }
            dav_methods PUT DELETE MKCOL;
            dav_ext_methods PROPFIND OPTIONS;
            create_full_put_path on;
        }
        include $home/locations.conf;
    }
    server {
        listen 127.0.0.1:$h2 ssl http2;
        ssl_certificate $dir/tls/server.pem;
        ssl_certificate_key $dir/tls/server.key;
        include $home/locations.conf;
    }
    server {
        listen 127.0.0.1:$tls ssl;
        server_name localhost;
        ssl_certificate $dir/tls/expired.pem;
        ssl_certificate_key $dir/tls/expired.key;
        include $home/locations.conf;
    }
}
CONF
}

# answers URL: whether a server answers at URL (any status), reached directly: a proxy
# of the environment (http_proxy, https_proxy) would reach its own machine's port.
answers() {
  curl -sk --noproxy '*' -o /dev/null "$1"
}

# start_server DIR NAME: prints DIR/NAME.ports once the server answers on every port and
# each of them is its own (listens).
start_server() {
  local dir=$1 name=$2 home=$1/$2 attempt pid
  make_credentials "$dir"
  mkdir -p "$home/www" "$home/tmp"
  for attempt in $(seq 1 20); do
    local base=$((20000 + (RANDOM * 32768 + RANDOM) % 30000))
    local plain=$base basic=$((base + 1)) bearer=$((base + 2)) tls=$((base + 3)) h2=$((base + 4))
    write_conf "$dir" "$home" "$plain" "$basic" "$bearer" "$tls" "$h2"
    nginx -p "$home" -c "$home/nginx.conf" -e "$home/error.log" </dev/null >/dev/null 2>&1 &
    pid=$!
    echo "$pid" >"$dir/$name.pid"
    for _ in $(seq 1 100); do
      alive "$pid" || break
      if answers "http://127.0.0.1:$plain/" && answers "http://127.0.0.1:$bearer/" &&
        answers "http://127.0.0.1:$basic/" && answers "https://127.0.0.1:$tls/" &&
        answers "https://127.0.0.1:$h2/" && listens "$pid" "$plain" "$basic" "$bearer" "$tls" "$h2"; then
        echo "plain=$plain basic=$basic bearer=$bearer tls=$tls h2=$h2" >"$dir/$name.ports"
        echo "$dir/$name.ports"
        return 0
      fi
      sleep 0.05
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$dir/$name.pid"
    echo "nginx_fixture: $name: ports from $base did not work (attempt $attempt), trying others" >&2
  done
  die "$name: could not start nginx (see $home/error.log)"
}

stop_all() {
  local dir=$1 pidfile pid
  [ -d "$dir" ] || return 0
  for pidfile in "$dir"/*.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      alive "$pid" || break
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

case "${1:-}" in
check) check ;;
start)
  [ $# -eq 2 ] || die "usage: $0 start DIR"
  check
  stop_all "$2"
  rm -rf "$2"
  mkdir -p "$2"
  start_server "$2" main >/dev/null
  ;;
server)
  [ $# -eq 3 ] || die "usage: $0 server DIR NAME"
  start_server "$2" "$3"
  ;;
stop)
  [ $# -eq 2 ] || die "usage: $0 stop DIR"
  stop_all "$2"
  ;;
*) die "usage: $0 check | start DIR | server DIR NAME | stop DIR" ;;
esac
