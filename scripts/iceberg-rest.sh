#!/usr/bin/env bash
# Apache Iceberg's REST catalog test server (iceberg-open-api test fixtures
# over a JDBC catalog on SQLite), fetched once per machine from Maven into a
# cache outside the checkout, keyed by version, with the small launcher in
# tests/servers/iceberg-rest/src compiled beside the jars:
#   scripts/iceberg-rest.sh path      the cache directory (lib/ and classes/)
#   scripts/iceberg-rest.sh version   the Iceberg version it is keyed by
#   scripts/iceberg-rest.sh install   fetch and compile unless present
# $TETHER_ICEBERG_REST_DIR overrides the directory.
set -euo pipefail
ICEBERG_REST_VERSION=1.10.0
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${TETHER_ICEBERG_REST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools/iceberg-rest-$ICEBERG_REST_VERSION}
case "${1:-}" in
  version) echo "$ICEBERG_REST_VERSION" ;;
  path) echo "$dir" ;;
  install)
    src="$top/tests/servers/iceberg-rest/src/TetherRestServer.java"
    sum=$(sha256sum "$src" | cut -d' ' -f1)
    if [ -d "$dir/lib" ] && [ -f "$dir/classes/org/apache/iceberg/rest/TetherRestServer.class" ]; then
      [ "$(cat "$dir/launcher.sha256" 2>/dev/null)" = "$sum" ] && exit 0
      # The jars are there; only the launcher changed: compile it again.
      rm -rf "$dir/classes.tmp"; mkdir -p "$dir/classes.tmp"
      nice -n 10 javac -d "$dir/classes.tmp" -cp "$dir/lib/*" "$src"
      rm -rf "$dir/classes"; mv "$dir/classes.tmp" "$dir/classes"
      echo "$sum" > "$dir/launcher.sha256"
      exit 0
    fi
    command -v mvn >/dev/null || { echo "mvn is required to fetch the Iceberg REST server" >&2; exit 1; }
    command -v javac >/dev/null || { echo "a JDK (javac) is required for the Iceberg REST server" >&2; exit 1; }
    tmp="$dir.tmp.$$"
    rm -rf "$tmp"; mkdir -p "$tmp/classes"
    nice -n 10 mvn -q -B -f "$top/tests/servers/iceberg-rest/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp/lib" >&2
    nice -n 10 javac -d "$tmp/classes" -cp "$tmp/lib/*" "$src"
    echo "$sum" > "$tmp/launcher.sha256"
    rm -rf "$dir"; mv "$tmp" "$dir"
    ;;
  *) echo "usage: $0 path|version|install" >&2; exit 2 ;;
esac
