#!/usr/bin/env bash
# Install what tether's build, demo and tests need.  One entry point, two
# modes; idempotent: each step checks first and does nothing when its result
# is already there.
#
#   scripts/setup.sh --demo   what building tether and running the quickstart
#                             need, and nothing else: the compiler, CMake,
#                             Ninja, pkg-config, git and the -dev libraries
#                             (Debian packages).  `make demo`.
#   scripts/setup.sh [--test] all of the above, and every test server, oracle
#                             and toolchain `make check` uses (the default).
#                             The long steps start in the background and
#                             return at once (their logs and exit status in
#                             .tmp/setup/); scripts/check.sh waits for each
#                             only before the stage that needs it.  Set
#                             TT_SETUP_FOREGROUND=1 to run them here instead.
#   scripts/setup.sh --wait STEP...   wait for background steps; exit 1 with
#                             the log's tail if one failed (`--wait all`)
#   scripts/setup.sh --step STEP      run one step now (what a background
#                             step runs)
#
# Steps of --test: the build's Debian packages and Python (here, first),
# then jj (jj-cli, its own background build: scripts/jj-build.sh), and in
# the background: apt-test (the tests' Debian packages; the steps using
# npm or Maven wait for it), duckdb-h, libduckdb,
# venv (.venv: the test oracles), venv-py, venv-py3.12, venv-py3.13 (the
# Python package's test venvs), toml-test, icechunk-js, azurite, go-servers
# (fake-gcs-server, then the dolt test server), seaweedfs (after them),
# neon-spec, iceberg-rest, spark-jars (after it), icechunk-py.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$top/.tmp/setup

say() { printf 'setup: %s\n' "$*" >&2; }
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

# --- Debian packages -------------------------------------------------------
# The demo's: building tether (every -dev library CMake looks for) and git.
APT_DEMO=(
  build-essential cmake ninja-build pkg-config git
  libjansson-dev libb2-dev libssl-dev libzstd-dev zlib1g-dev libcurl4-openssl-dev
  libsqlite3-dev libpq-dev libmariadb-dev
)
# The tests' on top.  Python for the venvs, installed with the build's
# packages (the venvs' pip installs start right after); the rest in the
# background (step apt-test; about 6 minutes of apt on a fresh Debian 12,
# most of it npm's few hundred packages) while duckdb.h, the build and the
# long Go and Rust builds go on: database servers, clang for fuzzing, the
# shells whose completion scripts the tests load (tether completion
# zsh|fish), strace (the cached-status test proves no child process
# starts), man-db (the .deb test reads `man tether-status`), watchman (the
# file watcher's tests; tether and the demo run without it: only a checkout
# that opts in asks it, and walks when it is missing), and Node, a JDK and
# Maven where their commands are missing.
APT_PY=(python3 python3-venv)
APT_TEST=(
  postgresql mariadb-server clang libclang-rt-14-dev
  zsh fish strace man-db watchman
)
apt_test_packages() {
  local extra=()
  command -v npm >/dev/null || extra+=(nodejs npm)
  { command -v javac >/dev/null && command -v mvn >/dev/null; } || extra+=(openjdk-17-jdk-headless maven)
  echo "${APT_TEST[@]}" "${extra[@]}"
}
# shellcheck disable=SC2046 # a list of package names
step_apt_test() { apt_install -- $(apt_test_packages); }
# shellcheck disable=SC2046
apt_test_ready() { [ -z "$(missing_packages $(apt_test_packages))" ]; }
missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
  done
}
apt_install() { # apt_install [apt-get options] -- PACKAGES: the missing ones, one apt-get call
  local opts=() missing
  while [ "$1" != -- ]; do opts+=("$1"); shift; done; shift
  mapfile -t missing < <(missing_packages "$@")
  ((${#missing[@]})) || return 0
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${opts[@]}" "${missing[@]}" >/dev/null
}

# --- background steps --------------------------------------------------------
# bg STEP: run `setup.sh --step STEP` detached, output in .tmp/setup/STEP.log,
# its exit status in .tmp/setup/STEP.rc once it ends.
bg() {
  local step=$1
  mkdir -p "$jobs"
  if [ "${TT_SETUP_FOREGROUND:-}" = 1 ]; then run_step "$step"; return; fi
  if [ -f "$jobs/$step.pid" ] && [ ! -f "$jobs/$step.rc" ] && kill -0 "$(cat "$jobs/$step.pid")" 2>/dev/null; then
    return 0 # already running
  fi
  rm -f "$jobs/$step.rc"
  date +%s >"$jobs/$step.start"
  nohup bash -c '"$1" --step "$2" >"$3.log" 2>&1; rc=$?; date +%s >"$3.end"; echo $rc >"$3.rc.tmp"; mv "$3.rc.tmp" "$3.rc"' \
    _ "$top/scripts/setup.sh" "$step" "$jobs/$step" </dev/null >/dev/null 2>&1 &
  echo $! >"$jobs/$step.pid"
  say "$step: started in the background (log: .tmp/setup/$step.log)"
}

wait_steps() {
  local step rc=0 names=("$@")
  if [ "${names[*]}" = all ]; then
    names=(); for f in "$jobs"/*.pid; do [ -e "$f" ] && names+=("$(basename "$f" .pid)"); done
  fi
  for step in "${names[@]}"; do
    [ -f "$jobs/$step.pid" ] || continue # never started here: nothing was missing
    if [ ! -f "$jobs/$step.rc" ]; then
      say "waiting for $step (log: .tmp/setup/$step.log)"
      while [ ! -f "$jobs/$step.rc" ]; do
        if ! kill -0 "$(cat "$jobs/$step.pid")" 2>/dev/null && [ ! -f "$jobs/$step.rc" ]; then
          sleep 1; [ -f "$jobs/$step.rc" ] || { say "$step: ended without an exit status"; echo 1 >"$jobs/$step.rc"; }
          break
        fi
        sleep 2
      done
    fi
    if [ "$(cat "$jobs/$step.rc")" != 0 ]; then
      say "$step failed (exit $(cat "$jobs/$step.rc")); the end of .tmp/setup/$step.log:"
      tail -20 "$jobs/$step.log" >&2
      rc=1
    fi
  done
  return $rc
}

# --- the steps ---------------------------------------------------------------
# Python virtualenv with the test oracles (.venv).
step_venv() {
  local PY=${PYTHON:-python3} req=tests/requirements.txt stamp=.venv/.requirements.sha256 want
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
}
venv_ready() { [ -x .venv/bin/python ] && [ "$(cat .venv/.requirements.sha256 2>/dev/null)" = "$(sha256sum tests/requirements.txt | cut -d' ' -f1)" ]; }

# The Python package's test venvs: .venv-py (CPython 3.11 and the store
# libraries, python/tests/requirements.txt) and .venv-py3.12 / .venv-py3.13
# (pyenv's, the runner alone: requirements-min.txt).  check.sh installs the
# package into them and builds the wheels with them.
PY_VERSIONS=${TT_PY_VERSIONS:-3.12.1 3.13.0}
pyvenv_spec() { # pyvenv_spec STEP -> "VENV REQ PYTHON PYENV_VERSION"
  case $1 in
    venv-py) echo ".venv-py python/tests/requirements.txt python3 -" ;;
    venv-py3.*) local xy=${1#venv-py} v
      for v in $PY_VERSIONS; do [ "${v%.*}" = "$xy" ] && { echo ".venv-py$xy python/tests/requirements-min.txt python$xy $v"; return; }; done
      echo ".venv-py$xy python/tests/requirements-min.txt python$xy -" ;;
  esac
}
pyvenv_ready() {
  local venv req py pv; read -r venv req py pv <<<"$(pyvenv_spec "$1")"
  [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" = "$(sha256sum "$req" | cut -d' ' -f1)" ]
}
step_pyvenv() {
  local venv req py pv want; read -r venv req py pv <<<"$(pyvenv_spec "$1")"
  want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ ! -x "$venv/bin/python" ]; then
    # (a symbolic link to a venv made elsewhere, not made yet: make it there)
    if [ -L "$venv" ] && [ ! -e "$venv" ]; then mkdir -p "$(readlink -m "$venv")"; fi
    if [ "$pv" = - ]; then "$py" -m venv "$venv"; else PYENV_VERSION=$pv "$py" -m venv "$venv"; fi
  fi
  if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    echo "$want" >"$venv/.requirements.sha256"
  fi
}

# toml-test (Go), into .cache/bin.
step_toml_test() {
  mkdir -p .cache/bin
  command -v go >/dev/null || { say "go is required to build toml-test"; return 1; }
  say "building toml-test"
  (cd tools/go && GOFLAGS=-mod=mod nice -n 10 go build -o "$top/.cache/bin/toml-test.tmp" github.com/toml-lang/toml-test/cmd/toml-test)
  mv .cache/bin/toml-test.tmp .cache/bin/toml-test
}

# real icechunk 2.x for spec-2 tests (npm, WASM build).  The native addon
# needs a newer glibc than Debian 12's; the wasm32 build runs anywhere Node does.
ICECHUNK_JS_VERSION=2.2.2
icj=.cache/icechunk-js
step_icechunk_js() {
  wait_steps apt-test || true
  say "installing icechunk $ICECHUNK_JS_VERSION (npm, wasm32)"
  mkdir -p "$icj"
  [ -f "$icj/package.json" ] || echo '{"private": true}' > "$icj/package.json"
  (cd "$icj" && npm install -s --no-audit --no-fund "@earthmover/icechunk@$ICECHUNK_JS_VERSION" &&
    npm install -s --no-audit --no-fund --cpu=wasm32 "@earthmover/icechunk-wasm32-wasi@$ICECHUNK_JS_VERSION")
  echo "$ICECHUNK_JS_VERSION" > "$icj/.version"
}

# libduckdb (DuckDB's C library) for DuckDB-file DuckLake catalogs.  The
# same DuckDB version as the ducklake extension the tests write catalogs
# with.  The library comes from DuckDB's npm node-bindings package, duckdb.h
# from the libduckdb-sys crate's bundled source; both land in a per-machine
# cache outside the checkout (scripts/libduckdb-path.sh prints it), found by
# CMake and loaded at run time.
LIBDUCKDB_VERSION=$(scripts/libduckdb-path.sh --version)
LIBDUCKDB_NPM=@duckdb/node-bindings-linux-x64@${LIBDUCKDB_VERSION}-r.5
LIBDUCKDB_CRATE=1.10505.0   # libduckdb-sys's numbering of DuckDB 1.5.5
duck_dir=$(scripts/libduckdb-path.sh)
# duckdb.h first (crates.io: all the build needs, so check.sh builds once it
# is there), then the library (npm, after apt-test brought npm; the tests
# load it).
step_duckdb_h() {
  command -v cargo >/dev/null || { say "cargo is required to fetch duckdb.h $LIBDUCKDB_VERSION"; return 1; }
  mkdir -p "$(dirname "$duck_dir")"
  exec 8>"$duck_dir.h.lock"; flock 8
  [ -f "$duck_dir/include/duckdb.h" ] && return 0
  say "fetching duckdb.h $LIBDUCKDB_VERSION into $duck_dir (crates.io; once per machine)"
  local duck_tmp; duck_tmp=$(mktemp -d)
  mkdir -p "$duck_tmp/crate/src"
  printf '[package]\nname = "fetch-duckdb-h"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nlibduckdb-sys = { version = "=%s", default-features = false }\n' \
    "$LIBDUCKDB_CRATE" > "$duck_tmp/crate/Cargo.toml"
  : > "$duck_tmp/crate/src/lib.rs"
  (cd "$duck_tmp/crate" && cargo vendor -q vendor >/dev/null)
  tar xzf "$duck_tmp/crate/vendor/libduckdb-sys/duckdb.tar.gz" -C "$duck_tmp" duckdb/src/include/duckdb.h
  mkdir -p "$duck_dir/include"
  cp "$duck_tmp/duckdb/src/include/duckdb.h" "$duck_dir/include/duckdb.h.tmp" &&
    mv "$duck_dir/include/duckdb.h.tmp" "$duck_dir/include/duckdb.h"
  rm -rf "$duck_tmp"
}
duckdb_h_ready() { [ -f "$duck_dir/include/duckdb.h" ]; }
step_libduckdb() {
  wait_steps apt-test || true
  command -v npm >/dev/null || { say "npm is required to fetch libduckdb $LIBDUCKDB_VERSION"; return 1; }
  mkdir -p "$(dirname "$duck_dir")"
  exec 8>"$duck_dir.lock"; flock 8
  [ -f "$duck_dir/libduckdb.so" ] && return 0
  say "fetching libduckdb $LIBDUCKDB_VERSION into $duck_dir (npm; once per machine)"
  local duck_tmp; duck_tmp=$(mktemp -d)
  (cd "$duck_tmp" && npm pack -s "$LIBDUCKDB_NPM" >/dev/null && tar xzf ./*.tgz package/libduckdb.so)
  mkdir -p "$duck_dir"
  cp "$duck_tmp/package/libduckdb.so" "$duck_dir/libduckdb.so.tmp" && mv "$duck_dir/libduckdb.so.tmp" "$duck_dir/libduckdb.so"
  rm -rf "$duck_tmp"
}
libduckdb_ready() { [ -f "$duck_dir/libduckdb.so" ]; }

# Object-store servers for the storage tests: each installed once per
# machine into ${XDG_CACHE_HOME:-~/.cache}/tether-tools/<name>-<version>
# (scripts/objstore-tools.sh says where; the tests find them there).
tool_ready() { [ -x "$(scripts/objstore-tools.sh path "$1")" ]; }
step_tool() {
  local tool=$1 cache lock
  cache=$(dirname "$(dirname "$(scripts/objstore-tools.sh path "$tool")")")
  mkdir -p "$cache"; lock="$cache/.$tool.lock"
  exec 8>"$lock"; flock 8   # another checkout's setup may be installing it
  tool_ready "$tool" && return 0
  say "installing $tool $(scripts/objstore-tools.sh version "$tool") (once per machine)"
  scripts/objstore-tools.sh install "$tool"
}
# The Go-built servers the end-to-end tests start, one after the other (each
# build takes both cores): fake-gcs-server (about a minute) and the dolt
# backend's test server (go-mysql-server + Dolt's SQL surface, from
# tests/servers/dolt, keyed by a hash of its sources:
# scripts/dolt-test-server.sh).
step_go_servers() {
  tool_ready fake-gcs-server || step_tool fake-gcs-server
  scripts/dolt-test-server.sh build
}
go_servers_ready() {
  tool_ready fake-gcs-server && [ -x "$(scripts/dolt-test-server.sh path)" ]
}
# SeaweedFS (about 10 min of CPU, 9m32s user measured), which only the unit
# tests' S3 conformance suite starts (check.sh runs it after the end-to-end
# tests): after the other Go builds, so it does not slow the ones needed first.
step_seaweedfs() {
  wait_steps go-servers || true
  tool_ready seaweedfs || step_tool seaweedfs
}

# Neon's published OpenAPI spec, for the neon backend's fake API tests: the
# npm package @neondatabase/api-client ships public-v2-for-users.gen.yaml,
# unpacked once per machine (scripts/neon-spec-path.sh says where).
neon_spec=$(scripts/neon-spec-path.sh)
step_neon_spec() {
  local neon_ver neon_tmp spec_src
  wait_steps apt-test || true
  neon_ver=$(scripts/neon-spec-path.sh --version)
  command -v npm >/dev/null || { say "npm is required to fetch Neon's API spec"; return 1; }
  say "fetching @neondatabase/api-client $neon_ver (Neon's API spec; once per machine)"
  neon_tmp=$(mktemp -d)
  (cd "$neon_tmp" && npm pack -s "@neondatabase/api-client@$neon_ver" >/dev/null && tar xzf ./*.tgz)
  spec_src=$(find "$neon_tmp/package" -name public-v2-for-users.gen.yaml | head -1)
  [ -n "$spec_src" ] || { say "public-v2-for-users.gen.yaml not found in the npm package"; return 1; }
  mkdir -p "$(dirname "$neon_spec")"
  cp "$spec_src" "$neon_spec.tmp" && mv "$neon_spec.tmp" "$neon_spec"
  rm -rf "$neon_tmp"
}

# Iceberg REST catalog server for the iceberg REST tests (Maven + a JDK),
# once per machine into ${XDG_CACHE_HOME:-~/.cache}/tether-tools/iceberg-rest-<version>.
step_iceberg_rest() {
  wait_steps apt-test || true
  local dir; dir=$(scripts/iceberg-rest.sh path)
  mkdir -p "$(dirname "$dir")"
  exec 8>"$dir.lock"; flock 8
  scripts/iceberg-rest.sh install || { say "could not install the Iceberg REST server (needs mvn and a JDK)"; return 1; }
}
iceberg_rest_ready() {
  local dir; dir=$(scripts/iceberg-rest.sh path)
  [ -d "$dir/lib" ] && [ "$(cat "$dir/launcher.sha256" 2>/dev/null)" = \
    "$(sha256sum tests/servers/iceberg-rest/src/TetherRestServer.java | cut -d' ' -f1)" ]
}

# The Spark connector jars the query tests run PySpark with (Delta and
# Iceberg readers, ~55 MB from Maven Central, once per machine:
# scripts/spark-jars.sh says where): after the Iceberg REST server's Maven
# build, so the two do not write Maven's local repository at once.
step_spark_jars() {
  wait_steps iceberg-rest || true
  scripts/spark-jars.sh install || { say "could not fetch the Spark connector jars (needs mvn)"; return 1; }
}
spark_jars_ready() {
  local j
  for j in $(scripts/spark-jars.sh classpath | tr , ' '); do [ -f "$j" ] || return 1; done
}

run_step() {
  case $1 in
    venv) step_venv ;;
    venv-py|venv-py3.*) step_pyvenv "$1" ;;
    toml-test) step_toml_test ;;
    icechunk-js) step_icechunk_js ;;
    apt-test) step_apt_test ;;
    duckdb-h) step_duckdb_h ;;
    libduckdb) step_libduckdb ;;
    azurite) wait_steps apt-test || true; step_tool "$1" ;; # (npm)
    icechunk-py) step_tool "$1" ;;
    go-servers) step_go_servers ;;
    seaweedfs) step_seaweedfs ;;
    neon-spec) step_neon_spec ;;
    iceberg-rest) step_iceberg_rest ;;
    spark-jars) step_spark_jars ;;
    *) say "unknown step: $1"; return 2 ;;
  esac
}

# --- the modes ---------------------------------------------------------------
mode=${1:---test}
case $mode in
  --step) shift; run_step "$1"; exit ;;
  --wait) shift; wait_steps "$@"; exit ;;
  --demo)
    # --no-install-recommends: the build needs none of them (nor of git's)
    apt_install --no-install-recommends -- "${APT_DEMO[@]}"
    exit 0 ;;
  --test) ;;
  *) echo "usage: $0 [--demo|--test|--wait STEP...|--step STEP]" >&2; exit 2 ;;
esac

# What earlier runs' background steps left (ended: their status and pid
# files) goes, so a step that failed then and has what it makes now is not
# waited on as failed; a step still running stays.
for f in "$jobs"/*.pid; do
  [ -e "$f" ] || continue
  kill -0 "$(cat "$f")" 2>/dev/null || rm -f "${f%.pid}.pid" "${f%.pid}.rc" "${f%.pid}.start" "${f%.pid}.end"
done

# --test: the build's Debian packages and Python here (one apt-get call),
# the tests' in the background (apt-test: a background apt-get needs root,
# or sudo without a password; else it runs here too).
apt_install -- "${APT_DEMO[@]}" "${APT_PY[@]}"
if ! apt_test_ready; then
  if [ -z "$SUDO" ] || sudo -n true 2>/dev/null; then bg apt-test; else step_apt_test; fi
fi

# real jj (jj-cli from crates.io) for the jj tests: its own long build into
# a per-machine cache keyed by version (scripts/jj-path.sh prints where), in
# the background (scripts/jj-build.sh --background; check.sh runs every test
# that does not drive jj meanwhile, then `scripts/jj-build.sh --wait`).
# TT_JJ_BACKGROUND=0 builds it here.
if [ -n "${TETHER_JJ:-}" ] && [ -x "$TETHER_JJ" ]; then
  :
elif [ "${TT_JJ_BACKGROUND:-1}" = 1 ] && [ "${TT_SETUP_FOREGROUND:-}" != 1 ]; then
  scripts/jj-build.sh --background
else
  scripts/jj-build.sh
fi

# The rest, each in the background when missing; the longest first.
go_servers_ready || bg go-servers
tool_ready seaweedfs || bg seaweedfs
tool_ready icechunk-py || bg icechunk-py
iceberg_rest_ready || bg iceberg-rest
spark_jars_ready || bg spark-jars
duckdb_h_ready || bg duckdb-h
libduckdb_ready || bg libduckdb
venv_ready || bg venv
for s in venv-py $(for v in $PY_VERSIONS; do echo "venv-py${v%.*}"; done); do
  pyvenv_ready "$s" || bg "$s"
done
[ -x .cache/bin/toml-test ] || bg toml-test
[ "$(cat "$icj/.version" 2>/dev/null)" = "$ICECHUNK_JS_VERSION" ] || bg icechunk-js
tool_ready azurite || bg azurite
[ -f "$neon_spec" ] || bg neon-spec
exit 0
