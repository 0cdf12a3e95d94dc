# shellcheck shell=bash
# Sourced by the other scripts: installs the Debian packages a script needs when
# they are missing, so that each README command works on a fresh machine.
# Usage: ensure_packages NAME...
# A NAME of the form PACKAGE:ARCH (e.g. libboost-serialization-dev:arm64) is a foreign
# architecture's package (Debian multiarch): ARCH is added to dpkg's architectures first,
# once, before the package lists are updated.
ensure_packages() {
  local missing=() foreign=()
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
  for pkg in "${missing[@]}"; do
    [[ $pkg == *:* ]] && foreign+=("${pkg##*:}")
  done
  local arch
  for arch in "${foreign[@]}"; do
    if [ "$arch" != "$(dpkg --print-architecture)" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
      echo "setup: adding the $arch architecture to dpkg (multiarch)" >&2
      "${sudo[@]}" dpkg --add-architecture "$arch"
    fi
  done
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What the library, its tests and tinyk need on every machine (libsqlite3-dev: the
# optional SQLite storage, compile_cache::sqlite, and its tests). The lists are used
# by the scripts that source this file.
# shellcheck disable=SC2034
COMPILE_CACHE_PACKAGES=(cmake g++ make libboost-serialization-dev libboost-dev catch2 python3 binutils libsqlite3-dev)
# The optional LLVM parts (tinyk's native backend, the ObjectCache adapter's tests);
# zlib and terminfo for linking LLVM's static libraries.
# shellcheck disable=SC2034
COMPILE_CACHE_LLVM_PACKAGES=(llvm-14-dev zlib1g-dev libtinfo-dev)
# The optional Redis storage: hiredis (found by pkg-config) to build it, redis-server
# and redis-cli (redis-tools) for its tests and benchmark, which start real servers.
# shellcheck disable=SC2034
COMPILE_CACHE_REDIS_PACKAGES=(libhiredis-dev redis-server redis-tools pkgconf)
# The optional HTTP storage: libcurl (found by pkg-config) to build it; nginx with its
# WebDAV (dav-ext) and echo modules, openssl and curl for its tests, which start real servers.
# shellcheck disable=SC2034
COMPILE_CACHE_HTTP_PACKAGES=(libcurl4-openssl-dev nginx-light libnginx-mod-http-dav-ext libnginx-mod-http-echo openssl curl pkgconf)
# The optional signed entries (compile_cache::signing): libsodium, found by pkg-config.
# shellcheck disable=SC2034
COMPILE_CACHE_SIGNING_PACKAGES=(libsodium-dev pkgconf)
# The optional compressed entries (compile_cache::zstd): libzstd, found by pkg-config.
# shellcheck disable=SC2034
COMPILE_CACHE_ZSTD_PACKAGES=(libzstd-dev pkgconf)
# The arm64 step of scripts/test.sh (scripts/test_arm64.sh): the cross compiler, the
# arm64 Boost it links against (multiarch) and the user-mode emulator that runs the result.
# shellcheck disable=SC2034
COMPILE_CACHE_ARM64_PACKAGES=(g++-aarch64-linux-gnu libboost-serialization-dev:arm64 qemu-user)
