# Sourced by the other scripts: installs the Debian packages a script needs when
# they are missing, so that each README command works on a fresh machine.
# Usage: ensure_packages NAME...
ensure_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}" >&2
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What the library, its tests and tinyk need on every machine.
# (libsqlite3-dev: the optional SQLite storage, compile_cache::sqlite, and its tests.)
COMPILE_CACHE_PACKAGES=(cmake g++ make libboost-serialization-dev libboost-dev catch2 python3 binutils libsqlite3-dev)
# The optional LLVM parts (tinyk's native backend, the ObjectCache adapter's tests);
# zlib and terminfo for linking LLVM's static libraries.
COMPILE_CACHE_LLVM_PACKAGES=(llvm-14-dev zlib1g-dev libtinfo-dev)
# The optional Redis storage: hiredis (found by pkg-config) to build it, redis-server
# and redis-cli (redis-tools) for its tests and benchmark, which start real servers.
COMPILE_CACHE_REDIS_PACKAGES=(libhiredis-dev redis-server redis-tools pkgconf)
