#!/usr/bin/env bash
# Install everything tether's build, demo and tests need.  Idempotent: each
# step checks first and does nothing when its result is already there.
#   - Debian packages (compiler, CMake/Ninja, the C libraries, git, clang for fuzzing)
#   - .venv: a Python virtualenv with the test oracles (pytest, tether-vcs, ...)
#   - .cache/bin: go-built tools (toml-test)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

say() { printf 'setup: %s\n' "$*" >&2; }

# --- Debian packages -------------------------------------------------------
APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libjansson-dev libb2-dev libssl-dev libzstd-dev zlib1g-dev libcurl4-openssl-dev
  libsqlite3-dev libpq-dev postgresql libmariadb-dev mariadb-server
  python3 python3-venv
  clang libclang-rt-14-dev
  # the shells whose completion scripts the tests load (tether completion zsh|fish)
  zsh fish
)
# the cached-status test proves with strace that no child process starts
APT_PACKAGES+=(strace)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- real jj (jj-cli from crates.io) for the jj tests -------------------------
# A long build, so the binary lives in a per-machine cache outside the
# checkout, keyed by version (scripts/jj-path.sh prints where): a fresh
# clone or a CI run on a machine that built it once reuses it.  With
# TT_JJ_BACKGROUND=1 (make check) the build runs detached while the rest of
# setup, the build and the tests that do not need jj go on; check.sh waits
# for it before the end-to-end tests.
if [ -n "${TETHER_JJ:-}" ] && [ -x "$TETHER_JJ" ]; then
  :
elif [ "${TT_JJ_BACKGROUND:-}" = 1 ]; then
  scripts/jj-build.sh --background
else
  scripts/jj-build.sh
fi

# --- Python virtualenv with the test oracles ---------------------------------
PY=${PYTHON:-python3}
req=tests/requirements.txt
stamp=.venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing Python test dependencies ($req)"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi

# --- Go tools ----------------------------------------------------------------
mkdir -p .cache/bin
if [ ! -x .cache/bin/toml-test ]; then
  command -v go >/dev/null || { say "go is required to build toml-test"; exit 1; }
  say "building toml-test"
  (cd tools/go && GOFLAGS=-mod=mod go build -o "$top/.cache/bin/toml-test" github.com/toml-lang/toml-test/cmd/toml-test)
fi

# --- real icechunk 2.x for spec-2 tests (npm, WASM build) --------------------
# The native addon needs a newer glibc than Debian 12's; the wasm32 build
# runs anywhere Node does.
ICECHUNK_JS_VERSION=2.2.2
icj=.cache/icechunk-js
if [ "$(cat "$icj/.version" 2>/dev/null)" != "$ICECHUNK_JS_VERSION" ]; then
  if ! command -v npm >/dev/null; then
    say "installing node and npm (Debian packages) for the icechunk 2.x tests"
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
  fi
  say "installing icechunk $ICECHUNK_JS_VERSION (npm, wasm32)"
  mkdir -p "$icj"
  [ -f "$icj/package.json" ] || echo '{"private": true}' > "$icj/package.json"
  (cd "$icj" && npm install -s --no-audit --no-fund "@earthmover/icechunk@$ICECHUNK_JS_VERSION" &&
    npm install -s --no-audit --no-fund --cpu=wasm32 "@earthmover/icechunk-wasm32-wasi@$ICECHUNK_JS_VERSION")
  echo "$ICECHUNK_JS_VERSION" > "$icj/.version"
fi

# --- libduckdb (DuckDB's C library) for DuckDB-file DuckLake catalogs -------
# The same DuckDB version as the ducklake extension the tests write catalogs
# with.  The library comes from DuckDB's npm node-bindings package, duckdb.h
# from the libduckdb-sys crate's bundled source; both land in a per-machine
# cache outside the checkout (scripts/libduckdb-path.sh prints it), found by
# CMake and loaded at run time.
LIBDUCKDB_VERSION=$(scripts/libduckdb-path.sh --version)
LIBDUCKDB_NPM=@duckdb/node-bindings-linux-x64@${LIBDUCKDB_VERSION}-r.5
LIBDUCKDB_CRATE=1.10505.0   # libduckdb-sys's numbering of DuckDB 1.5.5
duck_dir=$(scripts/libduckdb-path.sh)
if [ ! -f "$duck_dir/libduckdb.so" ] || [ ! -f "$duck_dir/include/duckdb.h" ]; then
  command -v npm >/dev/null || { say "npm is required to fetch libduckdb $LIBDUCKDB_VERSION"; exit 1; }
  command -v cargo >/dev/null || { say "cargo is required to fetch duckdb.h $LIBDUCKDB_VERSION"; exit 1; }
  say "fetching libduckdb $LIBDUCKDB_VERSION into $duck_dir (npm + crates.io; once per machine)"
  duck_tmp=$(mktemp -d)
  (cd "$duck_tmp" && npm pack -s "$LIBDUCKDB_NPM" >/dev/null && tar xzf ./*.tgz package/libduckdb.so)
  mkdir -p "$duck_tmp/crate/src"
  printf '[package]\nname = "fetch-duckdb-h"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nlibduckdb-sys = { version = "=%s", default-features = false }\n' \
    "$LIBDUCKDB_CRATE" > "$duck_tmp/crate/Cargo.toml"
  : > "$duck_tmp/crate/src/lib.rs"
  (cd "$duck_tmp/crate" && cargo vendor -q vendor >/dev/null)
  tar xzf "$duck_tmp/crate/vendor/libduckdb-sys/duckdb.tar.gz" -C "$duck_tmp" duckdb/src/include/duckdb.h
  mkdir -p "$duck_dir/include"
  cp "$duck_tmp/duckdb/src/include/duckdb.h" "$duck_dir/include/duckdb.h"
  cp "$duck_tmp/package/libduckdb.so" "$duck_dir/libduckdb.so.tmp" && mv "$duck_dir/libduckdb.so.tmp" "$duck_dir/libduckdb.so"
  rm -rf "$duck_tmp"
fi

# --- object-store servers for the storage tests (Azurite, fake-gcs-server, SeaweedFS) ---
# Each is installed once per machine into ${XDG_CACHE_HOME:-~/.cache}/tether-tools/<name>-<version>
# (scripts/objstore-tools.sh says where; the tests find them there).  SeaweedFS
# is built from the Go module proxy: about 10 min of CPU (9m32s user measured),
# once per machine.
for tool in azurite fake-gcs-server seaweedfs; do
  if [ ! -x "$(scripts/objstore-tools.sh path "$tool")" ]; then
    say "installing $tool $(scripts/objstore-tools.sh version "$tool") (once per machine)"
    scripts/objstore-tools.sh install "$tool"
  fi
done

# --- the dolt backend's test server (go-mysql-server + Dolt's SQL surface) ---
# Built from tests/servers/dolt once per machine into
# ${XDG_CACHE_HOME:-~/.cache}/tether-tools/dolt-test-server-<hash of sources+go>
# (scripts/dolt-test-server.sh path says where); the dolt tests start it.
if command -v go >/dev/null; then
  scripts/dolt-test-server.sh build
else
  say "go not installed: the dolt tests build their test server when they can"
fi

# --- Neon's published OpenAPI spec, for the neon backend's fake API tests ---
# The npm package @neondatabase/api-client ships public-v2-for-users.gen.yaml;
# it is unpacked once per machine (scripts/neon-spec-path.sh says where).
neon_spec=$(scripts/neon-spec-path.sh)
neon_ver=$(scripts/neon-spec-path.sh --version)
if [ ! -f "$neon_spec" ]; then
  command -v npm >/dev/null || { say "npm is required to fetch Neon's API spec"; exit 1; }
  say "fetching @neondatabase/api-client $neon_ver (Neon's API spec; once per machine)"
  neon_tmp=$(mktemp -d)
  (cd "$neon_tmp" && npm pack -s "@neondatabase/api-client@$neon_ver" >/dev/null && tar xzf ./*.tgz)
  spec_src=$(find "$neon_tmp/package" -name public-v2-for-users.gen.yaml | head -1)
  [ -n "$spec_src" ] || { say "public-v2-for-users.gen.yaml not found in the npm package"; exit 1; }
  mkdir -p "$(dirname "$neon_spec")"
  cp "$spec_src" "$neon_spec.tmp" && mv "$neon_spec.tmp" "$neon_spec"
  rm -rf "$neon_tmp"
fi

# --- Iceberg REST catalog server for the iceberg REST tests (Maven + a JDK) ---
# Installed once per machine into ${XDG_CACHE_HOME:-~/.cache}/tether-tools/iceberg-rest-<version>.
if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
  say "installing a JDK and Maven for the Iceberg REST server"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
fi
if ! scripts/iceberg-rest.sh install; then
  say "could not install the Iceberg REST server (needs mvn and a JDK)"; exit 1
fi

# --- icechunk 2.x from PyPI (Python 3.12 venv) for the s3:// icechunk tests ---
# The real writer and reader of tests/e2e/test_icechunk_s3.py; ~15 s, once per machine.
if [ ! -x "$(scripts/objstore-tools.sh path icechunk-py)" ]; then
  say "installing icechunk $(scripts/objstore-tools.sh version icechunk-py) for Python 3.12 (once per machine)"
  scripts/objstore-tools.sh install icechunk-py
fi
