#!/usr/bin/env bash
# The Python API benchmark: the package on libtether (.venv-py, as
# scripts/check.sh builds it) against tether-vcs (.venv), same dataset, same
# run, with the CLI (build/tether, one process per call) for reference.
#   scripts/bench-python.sh [-n N]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
[ -x .venv-py/bin/python ] || { echo "bench-python: .venv-py missing; run scripts/check.sh once" >&2; exit 1; }
work=$top/.tmp/bench-python
rm -rf "$work"
mkdir -p "$work"
.venv-py/bin/python bench/python_api.py make "$work"
for py in .venv-py/bin/python .venv/bin/python; do
  (cd "$work" && "$top/$py" "$top/bench/python_api.py" time "$work" "$@")
done >"$work/results.jsonl"
[ -x build/tether ] && .venv/bin/python bench/python_api.py cli "$work" --bin "$top/build/tether" "$@" >>"$work/results.jsonl"
grep "^{" "$work/results.jsonl" >"$work/rows.jsonl"
.venv/bin/python - "$work/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cols = [k for k in rows[0] if isinstance(rows[0][k], dict)]
print("median ms".ljust(28) + "".join(r["impl"].rjust(14) for r in rows) + "   tether-vcs/libtether")
for c in cols:
    vals = [r[c]["median_ms"] for r in rows]
    print(c.ljust(28) + "".join(f"{v:14.2f}" for v in vals) + f"   {vals[1] / vals[0]:8.1f}x")
PY
