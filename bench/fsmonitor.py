#!/usr/bin/env python3
"""Benchmark: `tether status --snapshot` of one `file` object on a tree of
10^6 small files with the file watcher on (`[file] fsmonitor = "watchman"`),
against references measured in the same run on the same tree:

  - the bare getdents64 + fstatat walk of the tree (bench/walk_floor.c, on
    one thread and on every core; the faster is the reference);
  - our own `status --snapshot` walking (TETHER_FSMONITOR=none), cache warm;
  - `git status` with its fsmonitor, on a git index of the same tree: git's
    hook-based fsmonitor with the query-watchman hook git ships
    (core.fsmonitor; git's builtin daemon is not available on Linux), plus
    core.untrackedCache, and `git status` without it.

Then 100 files spread over the tree are rewritten and the watched refresh,
the walk and git are timed again (each run once untimed first: the hashing
of the changed files and the writes of the caches are not what is timed),
and the files are put back.

    .venv/bin/python bench/fsmonitor.py [--shard-files N] [--shards N] [--reps N] [--changed N]

The tree is bench/filedata.py's `small_tree` (shared with run.py's
file-cached-refresh-1M row), under $TETHER_BENCH_CACHE (default
.tmp/bench/); the git index of it is cached beside it (its git directory
lives outside the tree: core.worktree points at it).  Watchman is the
user's own server (`watchman get-sockname`, which git's hook also uses);
the watches this run adds are removed at its end.  The states of the
watched and the walked refresh are compared before anything is timed (a
mismatch stops the run).  Prints medians and minima and the ratios of the
medians to the bare walk; writes fsmonitor-<time>.json beside the trees.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import filedata  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("TETHER_BENCH_CACHE") or ROOT / ".tmp" / "bench")
HOOK_SAMPLE = Path("/usr/share/git-core/templates/hooks/fsmonitor-watchman.sample")


def say(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


def run(argv, cwd=None, env=None, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} exited {p.returncode}: {p.stderr.strip()[:400]}")
    return p


def timed(argv, cwd, env, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run(argv, cwd, env)
        out.append(time.perf_counter() - t0)
    return out


def walk_floor(tree: Path) -> dict:
    exe = CACHE / "walk_floor"
    src = ROOT / "bench" / "walk_floor.c"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        run(["cc", "-std=c11", "-O2", "-pthread", src, "-o", exe])
    got = {}
    for threads in sorted({1, os.cpu_count() or 1}):
        n, secs = run([exe, tree, "3", threads]).stdout.split()
        got[threads] = (int(n), float(secs))
    best = min(got.values(), key=lambda v: v[1])
    return {"entries": best[0], "seconds": best[1], "by_threads": {str(k): v[1] for k, v in got.items()}}


def git_index(tree: Path, key: str, env: dict) -> Path:
    """A git directory (outside the tree) whose index and HEAD hold the
    tree, built once."""
    gd = CACHE / f"git-{key}"
    stamp = gd / "READY"
    if stamp.exists() and stamp.read_text() == f"{key}\n":
        return gd
    if gd.exists():
        shutil.rmtree(gd)
    say(f"building a git index of {tree} (once)")
    run(["git", "init", "-q", "--bare", gd], env=env)
    genv = dict(env, GIT_DIR=str(gd), GIT_WORK_TREE=str(tree))
    run(["git", "config", "core.bare", "false"], env=genv)
    run(["git", "config", "core.worktree", str(tree)], env=genv)
    run(["git", "config", "gc.auto", "0"], env=genv)  # no repack running beside the timings
    run(["git", "add", "-A"], cwd=tree, env=genv)
    run(["git", "commit", "-q", "-m", "tree"], cwd=tree, env=genv)
    stamp.write_text(f"{key}\n")
    return gd


def med(xs):
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shard-files", type=int, default=100_000)
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--changed", type=int, default=100)
    ap.add_argument("--tether", default=os.environ.get("TETHER_BIN") or str(ROOT / "build" / "tether"))
    a = ap.parse_args()
    ours = Path(a.tether).resolve()
    if not shutil.which("watchman"):
        raise SystemExit("watchman is not installed (Debian: apt-get install watchman)")
    n_files = a.shard_files * a.shards
    tree = filedata.small_tree(CACHE, a.shard_files, a.shards)
    key = f"{tree.parent.name}-{a.shards}"

    tmp = Path(tempfile.mkdtemp(prefix="tt-fsmonitor-"))
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "TETHER_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.com", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@example.com", LC_ALL="C.UTF-8")
    ds = tmp / "ds"
    ds.mkdir()
    run(["git", "init", "-q"], ds, env)
    run([ours, "init"], ds, env)
    run([ours, "add", "d", tree, "--kind", "file"], ds, env)
    # Not committed: `status` reports it "new" before and after the changes
    # (a committed immutable object that drifted is an error), and
    # `snapshot --json` prints its state.  The first snapshot fills the hash cache.
    say(f"hashing {n_files} files (fills the hash cache)")
    run([ours, "snapshot"], ds, env)
    secrets = ds / ".tether" / "secrets.toml"
    secrets.write_text('[file]\nfsmonitor = "watchman"\n')
    secrets.chmod(0o600)
    watched = dict(env)                          # the checkout's secrets.toml opts in
    walked = dict(env, TETHER_FSMONITOR="none")  # the environment wins: walk

    changed = [tree / f"s{k % a.shards}" / f"a{(j // 10000):02d}" / f"b{(j // 100) % 100:02d}" / f"f{j:07d}.txt"
               for k, j in ((i, (i * 7919) % a.shard_files) for i in range(a.changed))]
    originals = {p: p.read_bytes() for p in changed}
    watches = []
    results: dict = {"files": n_files, "changed": a.changed, "reps": a.reps}
    try:
        say("first watched refresh (Watchman crawls the tree; tether walks and stores its rows)")
        watches.append(tree)
        for _ in range(10):  # until Watchman has crawled the tree and a clock is stored
            p = run([ours, "snapshot", "--json"], ds, dict(watched, TETHER_TRACE="1"))
            say(p.stderr.strip())
            if "Watchman: 0 path(s) changed" in p.stderr:
                break
        else:
            raise SystemExit("the watched refresh never used Watchman")
        w_state = json.loads(p.stdout)
        b_state = json.loads(run([ours, "snapshot", "--json"], ds, walked).stdout)
        if w_state != b_state:
            raise SystemExit(f"watched and walked states differ: {w_state} vs {b_state}")

        gd = git_index(tree, key, env)
        genv = dict(env, GIT_DIR=str(gd))
        hook = gd / "hooks" / "query-watchman"
        hook.parent.mkdir(exist_ok=True)
        shutil.copy(HOOK_SAMPLE, hook)
        hook.chmod(0o755)
        git_plain = ["git", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "status", "--porcelain"]
        git_fsm = ["git", "-c", f"core.fsmonitor={hook}", "-c", "core.untrackedCache=true", "status", "--porcelain"]
        for argv in (git_fsm, git_fsm):  # the first records Watchman's clock in the index
            run(argv, tree, genv)
        got = run(git_fsm, tree, genv).stdout
        if got != "":
            raise SystemExit(f"git status with fsmonitor is not clean: {got[:200]}")

        def block(label: str) -> dict:
            say(f"timing ({label})")
            r = {"bare_walk": walk_floor(tree)}
            r["ours_watched"] = timed([ours, "status", "--snapshot"], ds, watched, a.reps)
            r["ours_walked"] = timed([ours, "status", "--snapshot"], ds, walked, max(3, a.reps // 2))
            r["git_fsmonitor"] = timed(git_fsm, tree, genv, a.reps)
            r["git_plain"] = timed(git_plain, tree, genv, max(3, a.reps // 2))
            return r

        results["unchanged"] = block("unchanged tree")
        for p_ in changed:
            filedata.replace_file(p_, p_.read_bytes() + b"changed\n")
        time.sleep(2.5)  # past the hash cache's racy window, as a user's next command is
        p = run([ours, "snapshot", "--json"], ds, dict(watched, TETHER_TRACE="1"))
        # each file is replaced through a temporary beside it (os.replace), so
        # Watchman also names the temporaries and their directories
        if "Watchman: " not in p.stderr or "walking" in p.stderr:
            raise SystemExit(f"the watched refresh after the changes did not use Watchman: {p.stderr[:400]}")
        w_state = json.loads(p.stdout)
        if w_state == b_state:
            raise SystemExit("the changes did not change the state")
        if w_state != json.loads(run([ours, "snapshot", "--json"], ds, walked).stdout):
            raise SystemExit("watched and walked states differ after the changes")
        for argv in (git_fsm, git_fsm):
            run(argv, tree, genv)
        results["changed_files"] = block(f"{a.changed} files changed")
    finally:
        for p_, data in originals.items():
            if p_.read_bytes() != data:
                filedata.replace_file(p_, data)
        for w in watches:
            run(["watchman", "watch-del", w], check=False)
        shutil.rmtree(tmp, ignore_errors=True)

    lines = []
    for label, r in (("unchanged", results["unchanged"]), (f"{a.changed} changed", results["changed_files"])):
        bare = r["bare_walk"]["seconds"]
        lines.append(f"{label}: bare walk {bare * 1e3:.0f} ms "
                     f"({', '.join(f'{k} thread(s) {v * 1e3:.0f} ms' for k, v in r['bare_walk']['by_threads'].items())})")
        for name in ("ours_watched", "ours_walked", "git_fsmonitor", "git_plain"):
            if name in r:
                xs = r[name]
                lines.append(f"  {name:14s} median {med(xs) * 1e3:7.1f} ms  min {min(xs) * 1e3:7.1f} ms  "
                             f"{med(xs) / bare:.3f}× the bare walk")
        if "git_fsmonitor" in r:
            lines.append(f"  ours_watched / git_fsmonitor: {med(r['ours_watched']) / med(r['git_fsmonitor']):.2f}")
    print("\n".join(lines))
    load = os.getloadavg()
    results.update(when=datetime.now(timezone.utc).isoformat(timespec="seconds"), load=load,
                   nproc=os.cpu_count(), machine=platform.machine(),
                   commit=run(["git", "rev-parse", "--short", "HEAD"], ROOT).stdout.strip())
    out = CACHE / f"fsmonitor-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"load average {load[0]:.1f}; results in {out}")


if __name__ == "__main__":
    main()
