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
  libsqlite3-dev libpq-dev postgresql
  python3 python3-venv
  clang libclang-rt-14-dev
)
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

# --- real jj (jj-cli from crates.io) for the colocated-jj tests ---------------
# A long build (tens of minutes on two cores), so the binary lives in a
# per-machine cache outside the checkout, keyed by version: a fresh clone or
# a CI run on a machine that built it once reuses it.  The tests find it
# through $TETHER_JJ or this path (scripts/jj-path.sh prints it).
JJ_VERSION=${JJ_VERSION:-$(scripts/jj-path.sh --version)}
jj_bin=$(scripts/jj-path.sh)
if [ ! -x "$jj_bin" ]; then
  command -v cargo >/dev/null || { say "cargo (Rust) is required to build jj-cli $JJ_VERSION"; exit 1; }
  say "building jj-cli $JJ_VERSION into $(dirname "$(dirname "$jj_bin")") (long; once per machine)"
  nice -n 10 cargo install jj-cli --version "$JJ_VERSION" --locked -j "${JJ_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}" \
    --root "$(dirname "$(dirname "$jj_bin")")" >&2
fi

# --- object-store servers for the storage tests (Azurite, fake-gcs-server) ---
# Each is installed once per machine into ${XDG_CACHE_HOME:-~/.cache}/tether-tools/<name>-<version>
# (scripts/objstore-tools.sh says where; the tests find them there).
for tool in azurite fake-gcs-server; do
  if [ ! -x "$(scripts/objstore-tools.sh path "$tool")" ]; then
    say "installing $tool $(scripts/objstore-tools.sh version "$tool") (once per machine)"
    scripts/objstore-tools.sh install "$tool"
  fi
done
