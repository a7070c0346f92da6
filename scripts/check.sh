#!/usr/bin/env bash
# Build and run every test; print one closing "N passed, N failed" line.
#
# Stages (each adds its counts to the total):
#   1. release build with -Werror; unit tests (one executable per module)
#   2. the toml-test suite against our TOML decoder and encoder
#   3. end-to-end and compatibility tests (pytest driving the real binary)
#   4. fuzz targets for a bounded time (libFuzzer under clang)
#   5. ASan+UBSan build; unit and end-to-end tests again under it
# Set TT_CHECK_QUICK=1 to skip the sanitizer pass and fuzzing while iterating.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
export PATH="$top/.cache/bin:$PATH"
JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${TT_FUZZ_SECONDS:-60}
# The end-to-end tests spend most of their time waiting on git and the
# stores' libraries in child processes: one more worker than cores.
TEST_JOBS=${TT_TEST_JOBS:-$((JOBS + 1))}

total_pass=0
total_fail=0
failed_stages=()
logdir=$top/.tmp/check
rm -rf "$logdir"
mkdir -p "$logdir"

add() { # add PASSED FAILED STAGE
  total_pass=$((total_pass + $1))
  total_fail=$((total_fail + $2))
  if [ "$2" -gt 0 ]; then failed_stages+=("$3"); fi
  printf '== %-34s %5d passed, %d failed\n' "$3" "$1" "$2"
}

build() { # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >"$logdir/cmake-$(basename "$dir").log" 2>&1 &&
    ninja -C "$dir" -j "$JOBS" >"$logdir/ninja-$(basename "$dir").log" 2>&1
}

unit() { # unit BUILD_DIR LABEL
  local p=0 f=0 line
  for t in "$1"/test_*; do
    [ -x "$t" ] || continue
    local name; name=$(basename "$t")
    TETHER_SOURCE_DIR=$top "$t" >"$logdir/$2-$name.log" 2>&1
    local rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logdir/$2-$name.log" | tail -1)
    if [ -z "$line" ]; then
      echo "   $name: crashed (exit $rc); see $logdir/$2-$name.log"; tail -20 "$logdir/$2-$name.log"
      f=$((f + 1)); continue
    fi
    local a b; a=${line%% passed*}; b=${line#*, }; b=${b%% failed*}
    p=$((p + a)); f=$((f + b))
    if [ "$b" -gt 0 ] || [ $rc -ne 0 ]; then
      grep -E '^FAIL|^  ' "$logdir/$2-$name.log" | head -40
      [ "$b" -gt 0 ] || f=$((f + 1))
    fi
  done
  add $p $f "$2 unit tests"
}

e2e() { # e2e TETHER_BINARY LABEL [pytest args]
  local bin=$1 label=$2; shift 2
  local xml=$logdir/$label-pytest.xml
  TETHER_REQUIRE_JJ=1 TETHER_JJ=$(scripts/jj-path.sh) \
  TETHER_BIN=$bin TETHER_BUILD_DIR=$(dirname "$bin") .venv/bin/python -m pytest tests/e2e -q -p no:cacheprovider \
    -n "$TEST_JOBS" --junitxml="$xml" "$@" >"$logdir/$label-pytest.log" 2>&1
  local rc=$?
  if [ ! -f "$xml" ]; then
    tail -30 "$logdir/$label-pytest.log"; add 0 1 "$label end-to-end"; return
  fi
  local counts
  counts=$(.venv/bin/python - "$xml" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
suites = [r] if r.tag == "testsuite" else list(r)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
s = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - s, f, s)
PY
)
  read -r p f s <<<"$counts"
  if [ "$f" -gt 0 ] || { [ $rc -ne 0 ] && [ $rc -ne 5 ]; }; then
    grep -E '^(FAILED|ERROR)' "$logdir/$label-pytest.log" | head -40
    [ "$f" -gt 0 ] || f=1
  fi
  [ "$s" -gt 0 ] && echo "   ($s skipped: see $logdir/$label-pytest.log)"
  add "$p" "$f" "$label end-to-end"
}

toml_suite() { # toml_suite BUILD_DIR
  local p=0 f=0
  for mode in decoder encoder; do
    local flag=; [ $mode = encoder ] && flag=-encoder
    toml-test $flag -toml 1.0.0 -- "$1/toml_$mode" >"$logdir/toml-test-$mode.log" 2>&1
    local lines
    lines=$(grep -E 'tests: +[0-9]+ passed, +[0-9]+ failed' "$logdir/toml-test-$mode.log")
    if [ -z "$lines" ]; then f=$((f + 1)); tail -20 "$logdir/toml-test-$mode.log"; continue; fi
    while read -r l; do
      local a b
      a=$(sed -E 's/.*tests: *([0-9]+) passed.*/\1/' <<<"$l")
      b=$(sed -E 's/.*passed, *([0-9]+) failed.*/\1/' <<<"$l")
      p=$((p + a)); f=$((f + b))
      echo "   toml-test $mode: ${l#"${l%%[![:space:]]*}"}"
    done <<<"$lines"
    grep -E '^FAIL' "$logdir/toml-test-$mode.log" | head -20
  done
  add $p $f "toml-test (valid + invalid)"
}

fuzz() {
  if ! command -v clang >/dev/null; then echo "   clang missing: fuzzing skipped"; return; fi
  if ! CC=clang build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_FUZZ=ON -DTETHER_SANITIZE=ON; then
    tail -20 "$logdir/ninja-build-fuzz.log"; add 0 1 "fuzz build"; return
  fi
  # One target per core at a time; each writes its exit status beside its log.
  local running=0 names=()
  for fz in build-fuzz/fuzz_*; do
    [ -x "$fz" ] || continue
    local name; name=$(basename "$fz")
    names+=("$name")
    local corpus=.cache/corpus/$name seeds=fuzz/corpus/${name#fuzz_}
    mkdir -p "$corpus"
    local args=("$corpus"); [ -d "$seeds" ] && args+=("$seeds")
    ( "$fz" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$logdir/$name-" "${args[@]}" >"$logdir/$name.log" 2>&1
      echo $? >"$logdir/$name.rc" ) &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
  local p=0 f=0
  for name in "${names[@]}"; do
    if [ "$(cat "$logdir/$name.rc" 2>/dev/null)" = 0 ]; then
      p=$((p + 1)); echo "   $name: $(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$logdir/$name.log" | awk '{print $2}') runs, no findings"
    else
      f=$((f + 1)); echo "   $name: FINDING"; grep -A15 -E 'ERROR|runtime error' "$logdir/$name.log" | head -30
    fi
  done
  add $p $f "fuzz (${FUZZ_SECONDS}s per target)"
}

install_check() { # the installed library and its pkg-config file build a program
  local prefix=$top/.tmp/install
  rm -rf "$prefix"
  if cmake --install build --prefix "$prefix" >"$logdir/install.log" 2>&1 &&
     PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig \
       cc -std=c11 -Wall -Werror examples/backends.c $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig pkg-config --cflags --libs libtether) \
       -Wl,-rpath,"$prefix/lib" -o "$logdir/backends" >>"$logdir/install.log" 2>&1 &&
     "$logdir/backends" | grep -q '^memory' ; then
    add 1 0 "install + pkg-config example"
  else
    tail -20 "$logdir/install.log"; add 0 1 "install + pkg-config example"
  fi
}

echo "== release build (-Werror)"
if build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_WERROR=ON; then
  unit build release
  toml_suite build
  e2e "$top/build/tether" release
  install_check
else
  tail -40 "$logdir/ninja-build.log"; add 0 1 "release build"
fi

if [ -z "${TT_CHECK_QUICK:-}" ]; then
  fuzz
  echo "== ASan+UBSan build"
  if build build-asan -DCMAKE_BUILD_TYPE=Debug -DTETHER_SANITIZE=ON -DTETHER_WERROR=ON; then
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    unit build-asan asan
    e2e "$top/build-asan/tether" asan
  else
    tail -40 "$logdir/ninja-build-asan.log"; add 0 1 "asan build"
  fi
fi

echo
if ((${#failed_stages[@]})); then echo "failing: ${failed_stages[*]}"; fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
