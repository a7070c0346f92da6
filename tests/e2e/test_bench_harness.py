"""bench/run.py's own machinery on tiny data: the checks that decide whether a
row is timed at all, and the helper a derived figure is measured with.  A row
whose check cannot pass is reported as not measured, never timed, so a check
that drifts from what either implementation prints silently drops the row;
these tests run the real checks against our binary and tether-vcs.  (The
timings themselves are the benchmark's business, never asserted here.)"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from conftest import REF_TETHER, ROOT, TETHER_BIN

_spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_run"] = bench
_spec.loader.exec_module(bench)


def sides():
    return bench.Sides(TETHER_BIN, REF_TETHER)


def small_tree(path, n=20):
    path.mkdir(parents=True)
    for i in range(n):
        (path / f"f{i:03d}.bin").write_bytes(bytes([i]) * (100 + i))
    return path


def test_first_fingerprint_check_compares_what_both_sides_record(tmp_path):
    tree = small_tree(tmp_path / "tree")
    ds, env = bench.file_dataset(tmp_path, sides(), tree, commit=False)
    ctx = {"ds": ds, "env": env, "sides": sides()}
    note = bench.check_first(ctx)  # raises Skip when the two sides' outputs differ
    ours = json.loads(subprocess.run([str(TETHER_BIN), "snapshot", "--json"], cwd=ds, env=env,
                                     capture_output=True, text=True, check=True).stdout)
    assert ours["d"]["count"] == 20 and ours["d"]["digest"] in note
    # the timed command is the compared one, and it runs the same way
    (argv, cwd), = bench.cmds_first(ctx, "ours")
    assert argv[1:] == ["snapshot", "--json"] and cwd == ds


def test_listing_helper_is_built_in_the_binarys_tree_and_diffs_two_listings(tmp_path):
    helper = bench.build_listing_helper(TETHER_BIN)
    assert helper.parent == TETHER_BIN.parent and helper.name == "bench_listing_diff"
    # two commits of a versioned directory object that differ in 5 files
    tree = small_tree(tmp_path / "tree")
    home = tmp_path / "home"
    home.mkdir()
    env = bench.isolated_env(home)
    ds = bench.new_git_repo(tmp_path / "ds", env)
    tether = str(TETHER_BIN)
    bench.run([tether, "init", "--dataset-id", bench.DATASET_ID], ds, env)
    bench.run([tether, "add", "d", str(tree), "--kind", "file", "--file", "versioned"], ds, env)
    bench.run([tether, "commit", "-m", "A"], ds, env)
    a = bench.git("rev-parse", "HEAD", cwd=ds, env=env).strip()
    files = sorted(tree.iterdir())
    for f in files[:3]:
        f.write_bytes(b"changed\n")
    files[3].unlink()
    (tree / "added.bin").write_bytes(b"new\n")
    bench.run([tether, "pull"], ds, env)
    b = bench.git("rev-parse", "HEAD", cwd=ds, env=env).strip()
    assert a != b
    la, lb = bench.listing_files({"ds": ds, "env": env, "a": a, "b": b})
    p = subprocess.run([str(helper), str(la), str(lb), "3"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["reps"] == 3 and got["summary"] == "+1 -1 ~3 files"
    assert 0 <= got["min_ms"] <= got["median_ms"]


def test_child_peak_rss_is_the_childs_not_the_benchmark_process(tmp_path):
    # Linux starts a program's high-water mark at the RSS of the process that
    # spawned it: the benchmark, grown by building a tree, must not be
    # reported as the peak of every child it measures.
    ballast = bytearray(256 << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    kib, cpu = bench.child_usage(["true"])
    assert kib < 64 << 10, kib  # `true` itself is a few MiB
    assert cpu >= 0
    kib, _ = bench.child_usage([str(TETHER_BIN), "backends", "--json"], cwd=tmp_path)
    assert kib < 64 << 10, kib
    del ballast
