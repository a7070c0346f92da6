#!/usr/bin/env bash
# The dolt backend's test server (tests/servers/dolt: go-mysql-server plus
# Dolt's versioning surface), built once per machine into
#   ${XDG_CACHE_HOME:-~/.cache}/tether-tools/dolt-test-server-<key>/doltserver
# where <key> hashes the server's sources and the Go version, so an edit to
# the server or a new Go rebuilds it and an unchanged one is reused.
#   dolt-test-server.sh path    print where the binary is (built or not)
#   dolt-test-server.sh build   build it unless present (under a lock, so
#                               racing callers build it once)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src="$here/tests/servers/dolt"
key() {
  { (cd "$src" && cat go.mod go.sum ./*.go); go version 2>/dev/null || echo no-go; } | sha256sum | cut -c1-16
}
dir="${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools/dolt-test-server-$(key)"
bin="$dir/doltserver"
case "${1:-path}" in
  path) echo "$bin" ;;
  build)
    [ -x "$bin" ] && exit 0
    command -v go >/dev/null || { echo "dolt-test-server: go is not installed" >&2; exit 1; }
    mkdir -p "$dir"
    exec 9>"$dir.lock"
    flock 9
    [ -x "$bin" ] && exit 0
    echo "dolt-test-server: building into $dir (once per machine)" >&2
    (cd "$src" && GOFLAGS=-mod=mod nice -n 10 go build -o "$bin.tmp" .) && mv "$bin.tmp" "$bin"
    ;;
  *) echo "usage: $0 path|build" >&2; exit 2 ;;
esac
