#!/usr/bin/env bash
# Build jj-cli (crates.io) into the per-machine cache scripts/jj-path.sh
# names, once per machine and version.  A long build (tens of minutes on two
# cores), so:
#   scripts/jj-build.sh               build now (nothing to do when cached)
#   scripts/jj-build.sh --background  start the build detached and return;
#                                     `make check` does this in setup and
#                                     builds and runs everything that does
#                                     not need jj meanwhile
#   scripts/jj-build.sh --wait        wait for a build in progress; exit 1
#                                     (with the log's tail) if jj is missing
# A lock (flock) keeps two builds from running at once; the binary appears
# in the cache only once complete (installed into a temporary root, then
# renamed).  JJ_BUILD_JOBS limits the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
JJ_VERSION=$(scripts/jj-path.sh --version)
jj_bin=$(scripts/jj-path.sh)
root=$(dirname "$(dirname "$jj_bin")")
cache=$(dirname "$root")
log=$root.log
lock=$root.lock
mkdir -p "$cache"

say() { printf 'jj-build: %s\n' "$*" >&2; }

build() {
  exec 9>"$lock"
  flock 9
  [ -x "$jj_bin" ] && return 0
  command -v cargo >/dev/null || { say "cargo (Rust) is required to build jj-cli $JJ_VERSION"; return 1; }
  local tmp=$root.tmp.$$
  rm -rf "$tmp"
  date +%s >"$root.start"
  say "building jj-cli $JJ_VERSION into $root (long; once per machine; log: $log)"
  # Optimised for build time: tests drive jj a few hundred times, so the
  # build is most of jj's cost here (opt-level 1, no debug info, many
  # codegen units).
  if CARGO_PROFILE_RELEASE_OPT_LEVEL=${JJ_OPT_LEVEL:-1} CARGO_PROFILE_RELEASE_DEBUG=0 \
     CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_INCREMENTAL=false \
     CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/jj-target} \
     nice -n 10 cargo install jj-cli --version "$JJ_VERSION" --locked \
       -j "${JJ_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}" --root "$tmp" >"$log" 2>&1; then
    rm -rf "$root"
    mv "$tmp" "$root"
    rm -rf "${CARGO_TARGET_DIR:-$cache/jj-target}"
    echo "rc=0 end=$(date +%s)" >>"$log"
    date +%s >"$root.end"
    say "jj-cli $JJ_VERSION built in $(( $(cat "$root.end") - $(cat "$root.start") )) s"
  else
    local rc=$?
    echo "rc=$rc end=$(date +%s)" >>"$log"
    rm -rf "$tmp"
    say "building jj-cli $JJ_VERSION failed (exit $rc); see $log"
    return 1
  fi
}

case "${1:-}" in
  --background)
    [ -x "$jj_bin" ] && exit 0
    nohup "$0" >/dev/null 2>&1 </dev/null &
    say "jj-cli $JJ_VERSION is building in the background (log: $log)"
    ;;
  --wait)
    if [ ! -x "$jj_bin" ]; then
      say "waiting for the jj-cli $JJ_VERSION build (log: $log)"
      exec 9>"$lock"
      flock 9
    fi
    if [ ! -x "$jj_bin" ]; then
      say "jj-cli $JJ_VERSION is missing at $jj_bin"
      tail -20 "$log" 2>/dev/null >&2 || true
      exit 1
    fi
    ;;
  "") build ;;
  *) echo "usage: $0 [--background|--wait]" >&2; exit 2 ;;
esac
