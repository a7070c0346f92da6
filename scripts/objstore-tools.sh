#!/usr/bin/env bash
# The object-store servers the tests start on 127.0.0.1, each built or
# downloaded once per machine into a cache outside the checkout, keyed by
# version:
#   scripts/objstore-tools.sh path NAME     where NAME's binary lives
#   scripts/objstore-tools.sh version NAME  the version the cache is keyed by
#   scripts/objstore-tools.sh install NAME  build/download it unless present
# NAME: fake-gcs-server (Go module proxy), azurite (npm), seaweedfs (Go
# module proxy), icechunk-py (icechunk 2.x from PyPI in a Python 3.12
# venv: the real writer the s3:// icechunk tests run; 2.x needs >= 3.12).
# $TETHER_<NAME>_BIN (upper case, '-' as '_') overrides
# the path.
set -euo pipefail
FAKE_GCS_SERVER_VERSION=1.55.1
AZURITE_VERSION=3.35.0
# SeaweedFS tags no semver releases in its module; pinned by pseudo-version (a commit).
SEAWEEDFS_VERSION=0.0.0-20261109003541-7506e5f91cd6
ICECHUNK_PY_VERSION=2.2.2
ICECHUNK_PY_PYTHON=3.12
# pyenv's python3.12 shim needs a 3.12 selected; the newest one it has
pyenv_version() {
  command -v pyenv >/dev/null || return 0
  pyenv versions --bare 2>/dev/null | grep -E "^$ICECHUNK_PY_PYTHON\.[0-9]+$" | sort -V | tail -1
}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools

version() {
  case "$1" in
    fake-gcs-server) echo "$FAKE_GCS_SERVER_VERSION" ;;
    azurite) echo "$AZURITE_VERSION" ;;
    seaweedfs) echo "$SEAWEEDFS_VERSION" ;;
    icechunk-py) echo "$ICECHUNK_PY_VERSION" ;;
    *) echo "unknown tool: $1" >&2; exit 2 ;;
  esac
}

path() {
  local var="TETHER_$(echo "$1" | tr 'a-z-' 'A-Z_')_BIN"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  local dir="$cache/$1-$(version "$1")"
  case "$1" in
    fake-gcs-server) echo "$dir/bin/fake-gcs-server" ;;
    azurite) echo "$dir/node_modules/.bin/azurite-blob" ;;
    seaweedfs) echo "$dir/bin/weed" ;;
    icechunk-py) echo "$dir/bin/python" ;;
  esac
}

install() {
  local bin dir ver start
  bin=$(path "$1")
  [ -x "$bin" ] && return 0
  ver=$(version "$1")
  dir="$cache/$1-$ver"
  start=$(date +%s)
  mkdir -p "$dir"
  case "$1" in
    fake-gcs-server)
      command -v go >/dev/null || { echo "go is required to build fake-gcs-server" >&2; exit 1; }
      GOBIN="$dir/bin" nice -n 10 go install "github.com/fsouza/fake-gcs-server@v$ver" >&2 ;;
    azurite)
      command -v npm >/dev/null || { echo "npm is required to install azurite" >&2; exit 1; }
      [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
      (cd "$dir" && npm install -s --no-audit --no-fund "azurite@$ver") >&2 ;;
    seaweedfs)
      command -v go >/dev/null || { echo "go is required to build seaweedfs" >&2; exit 1; }
      # its go.mod has replace directives, which `go install pkg@version`
      # refuses: fetch the module from the proxy and build inside it.
      local src
      src=$(go mod download -json "github.com/seaweedfs/seaweedfs@v$ver" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
      [ -d "$src" ] || { echo "could not download seaweedfs v$ver" >&2; exit 1; }
      (cd "$src" && nice -n 10 go build -o "$dir/bin/weed" ./weed) >&2 ;;
    icechunk-py)
      # pyenv's python3.12 (or any on PATH); a failed install leaves nothing
      local py; py=$(command -v "python$ICECHUNK_PY_PYTHON") ||
        { echo "python$ICECHUNK_PY_PYTHON is required for icechunk $ver" >&2; exit 1; }
      rm -rf "$dir"
      if ! { PYENV_VERSION=$(pyenv_version) "$py" -m venv "$dir" &&
             nice -n 10 "$dir/bin/python" -m pip install -q --disable-pip-version-check \
               "icechunk==$ver"; } >&2; then
        rm -rf "$dir"; echo "could not install icechunk $ver" >&2; exit 1
      fi ;;
  esac
  echo "$1 $ver: $(( $(date +%s) - start )) s" >&2
}

cmd=${1:-}; shift || true
case "$cmd" in
  path|version|install) "$cmd" "$@" ;;
  *) echo "usage: $0 path|version|install NAME" >&2; exit 2 ;;
esac
