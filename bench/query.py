#!/usr/bin/env python3
"""Benchmark: `tether query` of one aggregate over a 10^6-row Delta table at
a past version, against the same query in DuckDB alone (Python, the view
written by hand over delta_scan at that version, the same DuckDB 1.5.5 and
delta extension) and against tether-vcs's way (open the handle in Python at
the revision, query its Delta table with duckdb).

    .venv/bin/python bench/query.py [--rows N] [--reps N]

Each side is a fresh process per repetition (what a user runs), timed with
time.perf_counter around subprocess.run; the three answers are compared
first (a mismatch stops the run).  Prints the median and minimum of each
side and the ratios of the medians against `tether query`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SQL = "SELECT count(*) AS n, sum(id) AS s, sum(length(v)) AS l FROM sales"


def sh(argv, cwd, env):
    return subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    ours = Path(os.environ.get("TETHER_BIN") or ROOT / "build" / "tether")
    ref = Path(PY).parent / "tether"
    import duckdb
    import pyarrow as pa
    from deltalake import write_deltalake

    site = Path(duckdb.__file__).resolve().parents[1]
    tmp = Path(tempfile.mkdtemp(prefix="tether-bench-query-"))
    home = tmp / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), TETHER_DUCKDB_EXTENSIONS=str(site), GIT_AUTHOR_NAME="b",
               GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    table = tmp / "sales.delta"
    n = a.rows
    write_deltalake(str(table), pa.table({"id": pa.array(range(n), pa.int64()),
                                          "v": pa.array([f"r{i % 1000}" for i in range(n)])}))
    ds = tmp / "ds"
    ds.mkdir()
    sh(["git", "init", "-q", "-b", "main"], ds, env)
    sh(["git", "commit", "-q", "--allow-empty", "-m", "s"], ds, env)
    sh([str(ours), "init", "--dataset-id", "b0e0c0de"], ds, env)
    sh([str(ours), "add", "sales", str(table), "--kind", "delta"], ds, env)
    sh([str(ours), "commit", "-m", "one"], ds, env)
    write_deltalake(str(table), pa.table({"id": pa.array(range(n, n + 10), pa.int64()),
                                          "v": pa.array(["x"] * 10)}), mode="append")
    sh([str(ours), "pull"], ds, env)
    hand = (f"import duckdb, json\ncon = duckdb.connect()\n"
            f"con.execute(\"LOAD '{site}/duckdb_extension_delta/extensions/v1.5.5/delta.duckdb_extension'\")\n"
            f"con.execute(\"CREATE VIEW sales AS SELECT * FROM delta_scan('{table}', version => 0)\")\n"
            f"print(json.dumps([dict(zip(['n','s','l'], con.execute({SQL!r}).fetchone()))]))\n")
    vcs = (f"import duckdb, json, tether\nh = tether.Repo.find({str(ds)!r}).open('sales', rev='HEAD~1')\n"
           f"sales = h.table.to_pyarrow_dataset()\n"
           f"print(json.dumps([dict(zip(['n','s','l'], duckdb.sql({SQL!r}).fetchone()))]))\n")
    sides = {
        "tether query": [str(ours), "query", "-r", "HEAD~1", SQL, "--json"],
        "duckdb alone (Python, view by hand)": [PY, "-c", hand],
        "tether-vcs open + duckdb": [PY, "-c", vcs],
    }
    answers = {k: json.loads(sh(v, ds, env)) for k, v in sides.items()}
    first = answers["tether query"]
    assert first[0]["n"] == n, first
    for k, v in answers.items():
        assert v == first, (k, v, first)
    times: dict[str, list[float]] = {k: [] for k in sides}
    for r in range(a.reps):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for k in order:
            t = time.perf_counter()
            subprocess.run(sides[k], cwd=ds, env=env, check=True, capture_output=True)
            times[k].append(time.perf_counter() - t)
    base = statistics.median(times["tether query"])
    print(f"query-delta-past-version: {n} rows, {a.reps} reps, answer {first[0]}")
    print(f"{'side':40} {'median s':>9} {'min s':>9} {'ratio':>7}")
    for k, ts in times.items():
        med = statistics.median(ts)
        print(f"{k:40} {med:9.3f} {min(ts):9.3f} {med / base:7.2f}")
    print("ratio: that side's median / tether query's (above 1: tether query is faster)")


if __name__ == "__main__":
    main()
