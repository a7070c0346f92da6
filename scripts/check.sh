#!/usr/bin/env bash
# Build and run every test; print one closing "N passed, N failed" line.
#
# Stages (each adds its counts to the total):
#   1. release build with -Werror; unit tests (one executable per module);
#      the conventions a program can check (scripts/style-check.py: tt_
#      globals, no kind-name tests outside src/backends/, file and
#      function sizes, each exception with its reason)
#   2. the toml-test suite against our TOML decoder and encoder
#   3. end-to-end and compatibility tests (pytest driving the real binary);
#      the Python package (python/) in its own virtualenv, .venv-py, and its
#      recipe test file again under tether-vcs (.venv); the package again on
#      Python 3.12 and 3.13 (.venv-py3.12, .venv-py3.13)
#   4. the release artifacts (scripts/dist.sh: the .deb, the tarball, the
#      wheels and sdist), each tested as a user gets it (tests/dist/)
#   5. fuzz targets for a bounded time (libFuzzer under clang), built and
#      run at the lowest priority beside the end-to-end tests of stages 3
#      and 6, counted last
#   6. ASan+UBSan build; unit and end-to-end tests again under it
# Set TT_CHECK_QUICK=1 to skip the sanitizer pass and fuzzing while iterating.
# What scripts/setup.sh --test left installing in the background is waited
# for (scripts/setup.sh --wait STEP) only before the stage that needs it;
# each stage line ends with the time since the start.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
export PATH="$top/.cache/bin:$PATH"
JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${TT_FUZZ_SECONDS:-120}
# Each target's corpus lives with the machine's tools, so every run goes on
# from what the runs before it found (a fresh clone keeps its coverage).
FUZZ_CORPUS=${TT_FUZZ_CORPUS:-${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools/fuzz-corpus}
# The end-to-end tests spend most of their time waiting on git and the
# stores' libraries in child processes: one more worker than cores.
TEST_JOBS=${TT_TEST_JOBS:-$((JOBS + 1))}

total_pass=0
total_fail=0
failed_stages=()
started=$(date +%s)
elapsed() { local t=$(( $(date +%s) - started )); printf '%d:%02d' $((t / 60)) $((t % 60)); }
logdir=$top/.tmp/check
rm -rf "$logdir"
mkdir -p "$logdir"

add() { # add PASSED FAILED STAGE
  total_pass=$((total_pass + $1))
  total_fail=$((total_fail + $2))
  if [ "$2" -gt 0 ]; then failed_stages+=("$3"); fi
  printf '== %-34s %5d passed, %d failed  [%s]\n' "$3" "$1" "$2" "$(elapsed)"
}

need() { # need STEP...: wait for scripts/setup.sh's background steps; a failed one fails the stage
  scripts/setup.sh --wait "$@" 2>>"$logdir/setup-wait.log" && return 0
  tail -25 "$logdir/setup-wait.log"; add 0 1 "setup: $*"; return 1
}

build() { # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >"$logdir/cmake-$(basename "$dir").log" 2>&1 &&
    ninja -C "$dir" -j "$JOBS" >"$logdir/ninja-$(basename "$dir").log" 2>&1
}

# The unit tests that start the object-store servers setup builds in the
# background (SeaweedFS, Azurite, fake-gcs-server): run last of the release
# tree's (server_units), so the SeaweedFS build overlaps everything before.
SERVER_UNITS=" test_azure test_gcs test_seaweedfs "
unit() { # unit BUILD_DIR LABEL [servers|no-servers]
  local p=0 f=0 line
  for t in "$1"/test_*; do
    [ -x "$t" ] || continue
    local name; name=$(basename "$t")
    local server=0; [[ $SERVER_UNITS == *" $name "* ]] && server=1
    case ${3:-all} in
      servers) [ $server = 1 ] || continue ;;
      no-servers) [ $server = 0 ] || continue ;;
    esac
    # (the storage tests' servers are installed by setup: their absence fails)
    TETHER_REQUIRE_TOOLS=1 TETHER_SOURCE_DIR=$top "$t" >"$logdir/$2-$name.log" 2>&1
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
  TETHER_REQUIRE_JJ=1 TETHER_REQUIRE_TOOLS=1 TETHER_JJ=$(scripts/jj-path.sh) \
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

# Fuzzing runs beside the end-to-end tests, at the lowest priority: those
# tests wait on git, the stores' libraries and their servers part of their
# time, and the fuzzers take that idle time instead of a stage of their own
# (which cost 7 minutes of both cores).  They start with the release
# end-to-end stage and are counted at the end, after the sanitizer pass;
# each target runs FUZZ_SECONDS, and how much it got done in them is in its
# line below (at the lowest priority, from a sixteenth to all of what a core
# of its own does in the same time, as measured; the corpus kept between runs
# makes up for it).
fuzz_start() { # the fuzz build and the targets, in the background; fuzz_report counts them
  [ -n "${TT_CHECK_QUICK:-}" ] && return 0
  if ! command -v clang >/dev/null; then echo "   clang missing: fuzzing skipped"; return; fi
  (renice -n 19 -p "$BASHPID" >/dev/null; fuzz_targets >"$logdir/fuzz.log" 2>&1; echo $? >"$logdir/fuzz.rc") &
  echo "   fuzzing in the background from here (counted at the end)"
  fuzz_pid=$!
}
fuzz_targets() { # (in the background) build build-fuzz, then every target, one per core at a time
  if ! CC=clang build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_FUZZ=ON -DTETHER_SANITIZE=ON; then
    return 3
  fi
  local running=0
  for fz in build-fuzz/fuzz_*; do
    [ -x "$fz" ] || continue
    local name; name=$(basename "$fz")
    local corpus=$FUZZ_CORPUS/$name seeds=fuzz/corpus/${name#fuzz_}
    mkdir -p "$corpus"
    local args=("$corpus"); [ -d "$seeds" ] && args+=("$seeds")
    # (-timeout: a hang, not a slow input on a core the tests hold)
    ( "$fz" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$logdir/$name-" "${args[@]}" >"$logdir/$name.log" 2>&1
      echo $? >"$logdir/$name.rc" ) &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
}
fuzz_report() {
  [ -n "${fuzz_pid:-}" ] || return 0
  wait "$fuzz_pid"
  if [ "$(cat "$logdir/fuzz.rc" 2>/dev/null)" = 3 ]; then
    tail -20 "$logdir/ninja-build-fuzz.log"; add 0 1 "fuzz build"; return
  fi
  local p=0 f=0 name
  for fz in build-fuzz/fuzz_*; do
    [ -x "$fz" ] || continue
    name=$(basename "$fz")
    if [ "$(cat "$logdir/$name.rc" 2>/dev/null)" = 0 ]; then
      p=$((p + 1)); echo "   $name: $(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$logdir/$name.log" | awk '{print $2}') runs, no findings"
    else
      f=$((f + 1)); echo "   $name: FINDING"; grep -A15 -E 'ERROR|runtime error' "$logdir/$name.log" | head -30
    fi
  done
  add $p $f "fuzz (${FUZZ_SECONDS}s per target, beside the tests)"
}

install_check() { # the installed library: only the public API exported; pkg-config builds programs on it
  local prefix=$top/.tmp/install pc
  rm -rf "$prefix"
  pc=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig
  local ok=0 n=0
  if cmake --install build --prefix "$prefix" >"$logdir/install.log" 2>&1; then
    for ex in backends status commit; do
      cc -std=c11 -Wall -Werror "examples/$ex.c" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs libtether) \
        -Wl,-rpath,"$prefix/lib" -o "$logdir/$ex" >>"$logdir/install.log" 2>&1 || { echo "   examples/$ex.c does not build"; }
    done
    # 1. the example lists the kinds
    n=$((n + 1)); "$logdir/backends" | grep -q '^memory' && ok=$((ok + 1)) || echo "   examples/backends gave no kinds"
    # 2. a status through the public API equals the CLI's
    local ds=$logdir/example-ds
    rm -rf "$ds"; mkdir -p "$ds/data" && echo x >"$ds/data/x"
    n=$((n + 1))
    if (cd "$ds" && git init -q -b main && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m start &&
        "$top/build/tether" init >/dev/null && "$top/build/tether" add data "$ds/data" --kind file >/dev/null) \
        >>"$logdir/install.log" 2>&1 &&
       [ "$(cd "$ds" && "$logdir/status" | python3 -c 'import json,sys; print(sorted((o["key"], o["state"]) for o in json.load(sys.stdin)["objects"]))')" = \
         "$(cd "$ds" && "$top/build/tether" status --json | python3 -c 'import json,sys; print(sorted((o["key"], o["state"]) for o in json.load(sys.stdin)["objects"]))')" ]; then
      ok=$((ok + 1))
    else
      echo "   examples/status disagrees with tether status"; tail -5 "$logdir/install.log"
    fi
    # 3. a planned command in the API's one form (examples/commit.c): its
    # previewed plan applied as saved makes one VCS commit that records the object
    n=$((n + 1))
    local head_before head_after
    head_before=$(git -C "$ds" rev-parse HEAD 2>/dev/null)
    if (cd "$ds" && GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t \
          "$logdir/commit" . "through the public API") >"$logdir/example-commit.json" 2>>"$logdir/install.log" &&
       head_after=$(git -C "$ds" rev-parse HEAD) && [ "$head_after" != "$head_before" ] &&
       python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["vcs_commit"] == sys.argv[2] and "data" in list(r["pinned"]) + r["unrecoverable"], r' \
         "$logdir/example-commit.json" "$head_after" 2>>"$logdir/install.log"; then
      ok=$((ok + 1))
    else
      echo "   examples/commit did not commit its previewed plan"; tail -5 "$logdir/install.log"
    fi
    # 4. libtether.so exports the public API and nothing else
    n=$((n + 1))
    local lib; lib=$(ls "$prefix"/lib*/libtether.so "$prefix"/lib/*/libtether.so 2>/dev/null | head -1)
    local extra; extra=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^tt_' || true)
    local decl; decl=$(grep -ho 'tt_[a-z_0-9]*(' include/tether/*.h | tr -d '(' | sort -u)
    local exported; exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep '^tt_' | sort -u)
    if [ -n "$lib" ] && [ -z "$extra" ] && [ "$decl" = "$exported" ]; then
      ok=$((ok + 1))
    else
      echo "   libtether.so exports beyond its public headers: ${extra:-} $(comm -3 <(echo "$decl") <(echo "$exported") | tr -s ' \n\t' ' ')"
    fi
    # 5. the CLI is built on the public API: its sources include <tether/...>, their own
    # cli/ headers and the shared util/ helpers only, and its objects link against
    # libtether.so (tether_cli_boundary, built with everything else)
    n=$((n + 1))
    local inner; inner=$(grep -Hn '^#include "' src/cli/*.[ch] | grep -Ev '#include "(cli|util)/' || true)
    if [ -z "$inner" ] && [ -x build/tether_cli_boundary ] &&
       ldd build/tether_cli_boundary | grep 'libtether\.so' >/dev/null; then  # (not -q: under pipefail an early exit can SIGPIPE ldd)
      ok=$((ok + 1))
    else
      echo "   the CLI reaches past the public API: ${inner:-tether_cli_boundary missing or not on libtether.so}"
    fi
  else
    tail -20 "$logdir/install.log"; n=1
  fi
  add $ok $((n - ok)) "install, exports, pkg-config examples, CLI on the public API"
}

style() { # the conventions of docs/conventions.md a program can check, one count per rule
  python3 scripts/style-check.py --lib build/libtether.a >"$logdir/style.log" 2>&1
  local p f
  p=$(grep -c '^== style .* ok ' "$logdir/style.log")
  f=$(grep -c '^== style .* FAILED ' "$logdir/style.log")
  if [ "$f" -gt 0 ] || [ "$p" -eq 0 ]; then
    grep -E '^style: ' "$logdir/style.log" | head -40
    [ "$f" -gt 0 ] || { tail -5 "$logdir/style.log"; f=1; }
  fi
  add "$p" "$f" "style (scripts/style-check.py)"
}

junit_counts() { # junit_counts XML -> "passed failed skipped"
  .venv/bin/python - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
suites = [r] if r.tag == "testsuite" else list(r)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
s = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - s, f, s)
PY
}

pytest_stage() { # pytest_stage PYTHON LABEL PATH -- pytest PATH under PYTHON, counted
  local py=$1 label=$2 path=$3 slug=${2// /-}
  local xml=$logdir/$slug-pytest.xml
  TETHER_BIN=$top/build/tether "$py" -m pytest "$path" -q -p no:cacheprovider --junitxml="$xml" \
    >"$logdir/$slug-pytest.log" 2>&1
  local rc=$?
  if [ ! -f "$xml" ]; then tail -30 "$logdir/$slug-pytest.log"; add 0 1 "$label"; return; fi
  local p f s
  read -r p f s <<<"$(junit_counts "$xml")"
  if [ "$f" -gt 0 ] || { [ $rc -ne 0 ] && [ $rc -ne 5 ]; }; then
    grep -E '^(FAILED|ERROR)' "$logdir/$slug-pytest.log" | head -40
    [ "$f" -gt 0 ] || f=1
  fi
  [ "$s" -gt 0 ] && echo "   ($s skipped: see $logdir/$slug-pytest.log)"
  add "$p" "$f" "$label"
}

python_pkg() { # the Python package on libtether, in .venv-py (idempotent: deps once, the package each run)
  local venv=$top/.venv-py req=python/tests/requirements.txt log=$logdir/venv-py.log
  local want; want=$(sha256sum "$req" | cut -d' ' -f1)
  if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" >"$log" 2>&1; then
    tail -20 "$log"; add 0 1 "python package"; return
  fi
  if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >>"$log" 2>&1; then
      tail -20 "$log"; add 0 1 "python package"; return
    fi
    echo "$want" >"$venv/.requirements.sha256"
  fi
  # Link the release build's libtether.a (pip install ./python alone builds its own);
  # setuptools' own build tree would keep an extension linked against an older one.
  rm -rf python/build
  if ! TETHER_LIBTETHER_DIR=$top/build "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      --no-deps --no-build-isolation --force-reinstall ./python >>"$log" 2>&1; then
    tail -30 "$log"; add 0 1 "python package"; return
  fi
  pytest_stage "$venv/bin/python" "python package" python/tests
  pytest_stage .venv/bin/python "python recipes on tether-vcs" python/tests/recipes
}

# The package on the other Pythons it supports (3.12, 3.13 from pyenv), each
# in its own .venv-py<X.Y> with only the runner (the store libraries' tests
# skip there; they run under .venv-py).  Installs one after the other, then
# the suites side by side: the venvs are built once (about 25 s each), then
# the stage adds about a minute on two cores (three when other work shares
# them: measured 1m02 and 3m05).
PY_VERSIONS=${TT_PY_VERSIONS:-3.12.1 3.13.0}
python_versions() {
  local req=python/tests/requirements-min.txt want v xy venv log pids=() ok=()
  want=$(sha256sum "$req" | cut -d' ' -f1)
  for v in $PY_VERSIONS; do
    xy=${v%.*}; venv=$top/.venv-py$xy; log=$logdir/venv-py$xy.log
    if [ ! -x "$venv/bin/python" ] && ! PYENV_VERSION=$v "python$xy" -m venv "$venv" >"$log" 2>&1; then
      tail -5 "$log"; add 0 1 "python package on $xy"; continue
    fi
    if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
      if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >>"$log" 2>&1; then
        tail -5 "$log"; add 0 1 "python package on $xy"; continue
      fi
      echo "$want" >"$venv/.requirements.sha256"
    fi
    rm -rf python/build
    if ! TETHER_LIBTETHER_DIR=$top/build "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        --no-deps --no-build-isolation --force-reinstall ./python >>"$log" 2>&1; then
      tail -20 "$log"; add 0 1 "python package on $xy"; continue
    fi
    ok+=("$xy")
  done
  for xy in "${ok[@]}"; do
    # pytest_stage's counting, its output held until all have run.  The
    # lifecycle and recipe files drive the engine, not the C boundary that
    # differs between Pythons: left to .venv-py.
    (PYTEST_ADDOPTS="--ignore=python/tests/test_lifecycle.py --ignore=python/tests/recipes" \
      pytest_stage "$top/.venv-py$xy/bin/python" "python package on $xy" python/tests >"$logdir/stage-py$xy.out") &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for xy in "${ok[@]}"; do
    local line; line=$(grep -E '^== python package on' "$logdir/stage-py$xy.out")
    grep -v '^== ' "$logdir/stage-py$xy.out"
    local a b; a=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line"); b=$(sed -E 's/.*passed, ([0-9]+) failed.*/\1/' <<<"$line")
    add "${a:-0}" "${b:-1}" "python package on $xy"
  done
}

# The package build (build-dist) starts in the background once the release
# build is done: the unit and Python tests before the artifacts' stage run
# one process at a time and leave a core to it.
dist_build_start() {
  (nice -n 10 scripts/dist.sh build >"$logdir/dist-build.log" 2>&1; echo $? >"$logdir/dist-build.rc") &
  dist_build_pid=$!
}
dist() { # the release artifacts from a package build (build-dist), each tested as a user gets it
  rm -rf dist
  [ -n "${dist_build_pid:-}" ] && wait "$dist_build_pid" # (its failure shows again below)
  if ! TT_WHEEL_PYTHONS="$top/.venv-py/bin/python $top/.venv-py3.12/bin/python $top/.venv-py3.13/bin/python" \
       scripts/dist.sh all >"$logdir/dist.log" 2>&1; then
    tail -30 "$logdir/dist.log"; add 0 1 "release artifacts (scripts/dist.sh)"; return
  fi
  pytest_stage .venv/bin/python "deb package" tests/dist/test_deb.py
  pytest_stage .venv/bin/python "release tarball" tests/dist/test_tarball.py
  PYTEST_ADDOPTS="-n 2" pytest_stage .venv/bin/python "wheels and sdist" tests/dist/test_wheel.py
}

echo "== release build (-Werror)"
need duckdb-h # (CMake looks for duckdb.h)
if build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTETHER_WERROR=ON; then
  dist_build_start
  # (unit tests run the stores' own Python writers and moto from .venv, and load libduckdb)
  need venv libduckdb
  unit build release no-servers
  style
  need toml-test && toml_suite build
  install_check
  # (the tests' Debian packages from here on: man-db for the .deb, the
  # database servers, the shells, clang for fuzzing)
  if need apt-test venv venv-py venv-py3.12 venv-py3.13; then
    python_pkg
    python_versions
    dist
  fi
  need apt-test venv go-servers azurite icechunk-py iceberg-rest spark-jars icechunk-js neon-spec
  fuzz_start # (clang, from apt-test)
  if [ -x "$(scripts/jj-path.sh)" ]; then
    e2e "$top/build/tether" release
  else
    # jj is still building in the background (make check's setup started it):
    # everything that does not drive jj first, then, once it is built, the rest.
    e2e "$top/build/tether" release -m "not needs_jj"
    scripts/jj-build.sh --wait
    e2e "$top/build/tether" release-jj -m needs_jj
  fi
  release_built=1
else
  tail -40 "$logdir/ninja-build.log"; add 0 1 "release build"
fi

# SeaweedFS, the longest build, is needed by these unit tests alone (and the
# ASan pass's): they come as late as they can, so it builds meanwhile.
server_units() {
  [ -n "${release_built:-}" ] || return 0
  need go-servers azurite seaweedfs && unit build "release (servers)" servers
}
if [ -z "${TT_CHECK_QUICK:-}" ]; then
  echo "== ASan+UBSan build"
  # (-O1, as AddressSanitizer's own documentation advises: the checks are the
  # same, the binary faster than at -O0, and the frame pointers
  # kept for whole stack traces; assertions stay on in Debug)
  if build build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1" -DTETHER_SANITIZE=ON -DTETHER_WERROR=ON; then
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    server_units
    unit build-asan asan
    e2e "$top/build-asan/tether" asan
  else
    tail -40 "$logdir/ninja-build-asan.log"; add 0 1 "asan build"
    server_units
  fi
else
  server_units
fi

fuzz_report

echo
echo "(make check: $(elapsed) after setup)"
if ((${#failed_stages[@]})); then echo "failing: ${failed_stages[*]}"; fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
