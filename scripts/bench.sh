#!/usr/bin/env bash
# Run the benchmarks (bench/run.py) against a Release build of tether.
#
#   scripts/bench.sh [BUILD_DIR] [run.py options...]     e.g. scripts/bench.sh build-bench --quick
#   make bench [BENCH_ARGS="--quick --only status-cached"]
#
# BUILD_DIR is used when it is (or is about to become) a Release tree;
# `make bench` passes its RelWithDebInfo tree, and then the figures come
# from a Release tree in build-bench instead, configured and built here when
# missing or out of date.  Options after BUILD_DIR, then $BENCH_ARGS, go to
# bench/run.py; its table is what docs/performance.md quotes.  DVC, the other
# peer, comes from .venv-bench (bench/requirements.txt), made here once.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

dir=build-bench
if [ $# -gt 0 ] && [[ $1 != -* ]]; then
  dir=$1
  shift
fi
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$dir/CMakeCache.txt" 2>/dev/null || true)
if [ -n "$type" ] && [ "$type" != Release ]; then
  echo "bench: $dir is a $type build; benchmarking a Release build in build-bench" >&2
  dir=build-bench
fi

log=$top/.tmp/bench
mkdir -p "$log"
if ! cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$log/cmake.log" 2>&1 ||
   ! ninja -C "$dir" tether_cli bench_listing_diff >"$log/ninja.log" 2>&1; then
  cat "$log/cmake.log" "$log/ninja.log" 2>/dev/null | tail -30 >&2
  echo "bench: building $dir failed (logs in .tmp/bench/)" >&2
  exit 1
fi

scripts/setup.sh --wait venv || exit 1   # (setup --test makes it in the background)
[ -x .venv/bin/python ] || { echo "bench: .venv missing; run scripts/setup.sh --test" >&2; exit 1; }
# DVC in the benchmark's own venv (bench/requirements.txt), once
want=$(sha256sum bench/requirements.txt | cut -d' ' -f1)
if [ "$(cat .venv-bench/.requirements.sha256 2>/dev/null)" != "$want" ]; then
  echo "bench: installing bench/requirements.txt into .venv-bench (DVC)" >&2
  { [ -x .venv-bench/bin/python ] || python3 -m venv .venv-bench; } &&
    .venv-bench/bin/python -m pip install -q --disable-pip-version-check -r bench/requirements.txt &&
    echo "$want" >.venv-bench/.requirements.sha256 ||
    echo "bench: could not install DVC; its column reports itself not measured" >&2
fi
export TETHER_BENCH_DVC=${TETHER_BENCH_DVC:-$top/.venv-bench/bin/dvc}
case $dir in /*) bin=$dir/tether ;; *) bin=$top/$dir/tether ;; esac
# shellcheck disable=SC2086 # BENCH_ARGS is a list of options
TETHER_BIN=$bin exec .venv/bin/python bench/run.py "$@" ${BENCH_ARGS:-}
