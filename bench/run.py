#!/usr/bin/env python3
"""Benchmarks: our `tether` against tether-vcs's, on the same data, in one run.

    .venv/bin/python bench/run.py [--quick] [--only NAME]... [--reps N] [--strict]

For each benchmark the data is prepared once in a temporary directory; both
implementations are first run once and their outputs compared (a benchmark
whose outputs differ, or that one side cannot run, is reported as skipped
with the reason, never timed).  Then N repetitions of each side are timed,
alternating which side goes first, with `time.perf_counter` around
`subprocess.run` (output captured the same way for both).  One row per
benchmark: median and minimum wall time of ours and of tether-vcs, and the
ratio of the medians, reference / ours.  Ratios are the claim; absolute
times depend on the machine.

Our binary is $TETHER_BIN (default build-bench/tether, else build/tether);
the reference is the `tether` beside this Python ($TETHER_REF_BIN to
override).  The `file` backend benchmarks (file-*, status-snapshot-vs-dvc,
listing-diff-*) build their trees once under .tmp/bench/ (bench/filedata.py;
about 6.5 GB at full size) and also report derived figures: GB/s against
OpenSSL's SHA-256, µs per file, peak RSS, `dvc status`, and the library's
listing diff alone (bench/listing_diff.c, the CMake target bench_listing_diff
of our binary's build tree).  DVC (the `add` and `status-snapshot-vs-dvc`
rows' DVC column) is the benchmark venv's, .venv-bench/bin/dvc
(scripts/bench.sh installs bench/requirements.txt there; $TETHER_BENCH_DVC
names another).  The rows of stores behind a server start their
own on 127.0.0.1 (SeaweedFS, fake-gcs-server, Azurite, the Dolt test server or
a real `dolt sql-server` named by $TETHER_BENCH_DOLT, the Neon API fake on
PostgreSQL 15) and give both sides the same one.  Results also go to
.tmp/bench/results-<time>.json and .tmp/bench/latest.json.  `--quick` runs
fewer repetitions on smaller data.  Every row and derived figure that could
not be measured is listed at the end; `--strict` makes that exit 1.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import filedata  # noqa: E402  (bench/filedata.py)

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".tmp" / "bench"
# Bumped whenever the shape of a cached dataset changes.
HISTORY_FORMAT = "1"
DATASET_ID = "0b3c4d5e"


def default_ours() -> Path:
    if os.environ.get("TETHER_BIN"):
        return Path(os.environ["TETHER_BIN"]).resolve()
    for cand in (ROOT / "build-bench" / "tether", ROOT / "build" / "tether"):
        if cand.exists():
            return cand
    return ROOT / "build-bench" / "tether"


def default_ref() -> Path:
    if os.environ.get("TETHER_REF_BIN"):
        return Path(os.environ["TETHER_REF_BIN"])
    return Path(sys.executable).parent / "tether"


class Skip(Exception):
    """A benchmark that cannot be measured honestly; the message says why."""


# --------------------------------------------------------------------------- #
# Running things
# --------------------------------------------------------------------------- #
def isolated_env(home: Path) -> dict[str, str]:
    """The environment both sides run in: no developer git/tether config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "TETHER_"))}
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
        LC_ALL="C.UTF-8",
    )
    return env


def run(argv: list[str], cwd: Path, env: dict[str, str], check: bool = True
        ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in argv], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(str(a) for a in argv)} exited {proc.returncode} in {cwd}\n"
            f"stdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}")
    return proc


def git(*args: str, cwd: Path, env: dict[str, str]) -> str:
    return run(["git", *args], cwd, env).stdout


def new_git_repo(path: Path, env: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path, env=env)
    (path / "README").write_text("bench dataset\n")
    git("add", "README", cwd=path, env=env)
    git("commit", "-q", "-m", "start", cwd=path, env=env)
    return path


def first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else "(no output)"


# --------------------------------------------------------------------------- #
# Benchmarks
# --------------------------------------------------------------------------- #
@dataclass
class Sides:
    ours: Path
    ref: Path

    def exe(self, side: str) -> Path:
        return self.ours if side == "ours" else self.ref


@dataclass
class Bench:
    """One benchmark.

    prepare(tmp, sides) builds the data once and returns a context;
    check(ctx) runs both sides once and compares them (raises Skip);
    before(ctx, side) resets what a repetition consumes (untimed);
    commands(ctx, side) are the (argv, cwd) runs timed together as one sample.
    """
    id: str
    name: str
    reps: int
    what: str
    prepare: Callable[[Path, Sides], dict]
    check: Callable[[dict], str]
    commands: Callable[[dict, str], list[tuple[list, Path]]]
    before: Callable[[dict, str], None] | None = None
    available: Callable[[Sides], None] | None = None
    # summarize(ctx, result) -> text: derived figures (throughput, per-file
    # cost, peak memory, a third tool), run after the timing; may fill
    # result.extra, which goes to the JSON.
    summarize: Callable[[dict, "Result"], str] | None = None


# -- status-cached ------------------------------------------------------------ #
def object_lines(text: str) -> list[str]:
    """The per-object lines of `tether status` (not the header with its age)."""
    return [ln for ln in text.splitlines()
            if ln.startswith("  ") and "[" in ln and not ln.lstrip().startswith("states ")]


def prep_status(n: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        env["TETHER_MEMORY_STORE"] = str(tmp / "memory-store.json")
        ds = new_git_repo(tmp / "ds", env)
        ours = sides.ours
        run([ours, "init", "--dataset-id", DATASET_ID], ds, env)
        for k in range(1, n + 1):
            run([ours, "add", f"m{k}", f"sys{k}", "--kind", "memory"], ds, env)
        run([ours, "commit", "-m", f"{n} memory objects"], ds, env)
        run([ours, "snapshot"], ds, env)  # the cached states status shows
        return {"ds": ds, "env": env, "sides": sides, "n": n}
    return prepare


def check_status(ctx: dict) -> str:
    ds, env, sides = ctx["ds"], ctx["env"], ctx["sides"]
    out = {}
    for side in ("ours", "ref"):
        exe = sides.exe(side)
        text = run([exe, "status"], ds, env, check=False)
        js = run([exe, "status", "--json"], ds, env, check=False)
        for p, what in ((text, "status"), (js, "status --json")):
            if p.returncode != 0:
                who = "our tether" if side == "ours" else "tether-vcs"
                raise Skip(f"{who} `{what}` exited {p.returncode}: {first_line(p.stderr)}")
        out[side] = (object_lines(text.stdout), json.loads(js.stdout))
    (lo, jo), (lr, jr) = out["ours"], out["ref"]
    if len(lo) != ctx["n"] or lo != lr:
        raise Skip(f"object lines differ: ours {lo[:2]}... vs tether-vcs {lr[:2]}...")
    if jo["manifest_hash"] != jr["manifest_hash"]:
        raise Skip(f"manifest_hash differs: ours {jo['manifest_hash'][:12]}, "
                   f"tether-vcs {jr['manifest_hash'][:12]}")
    if jo["objects"] != jr["objects"]:
        raise Skip("status --json objects differ")
    clean = sum(o["state"] == "clean" for o in jo["objects"])
    return (f"same {len(lo)} object lines ({clean} clean, pinned) and manifest_hash "
            f"{jo['manifest_hash'][:12]} on both sides")


def cmds_status(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "status"], ctx["ds"])]


# -- status-vs-git ------------------------------------------------------------ #
def prep_status_mixed(n: int, commits: int):
    """A dataset of n objects of mixed kinds (memory, file, git) with a
    history of `commits` dataset commits, its snapshot cached."""
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        env["TETHER_MEMORY_STORE"] = str(tmp / "memory-store.json")
        ds = new_git_repo(tmp / "ds", env)
        ours = sides.ours
        run([ours, "init", "--dataset-id", DATASET_ID], ds, env)
        stores = tmp / "stores"
        for k in range(n):
            kind = ("memory", "file", "git")[k % 3]
            if kind == "memory":
                run([ours, "add", f"o{k}", f"sys{k}", "--kind", "memory"], ds, env)
                continue
            path = stores / f"s{k}"
            if kind == "file":
                path.mkdir(parents=True)
                for i in range(20):
                    (path / f"f{i}.bin").write_bytes(bytes([i]) * (100 + i))
            else:
                new_git_repo(path, env)
            run([ours, "add", f"o{k}", str(path), "--kind", kind], ds, env)
            if k % 7 == 0:
                run([ours, "commit", "-m", f"objects to o{k}"], ds, env)
        run([ours, "commit", "-m", f"{n} objects"], ds, env)
        have = int(git("rev-list", "--count", "HEAD", cwd=ds, env=env))
        for i in range(max(0, commits - have)):
            (ds / "NOTES").write_text(f"note {i}\n")
            git("add", "NOTES", cwd=ds, env=env)
            git("commit", "-q", "-m", f"note {i}", cwd=ds, env=env)
        run([ours, "snapshot"], ds, env)
        return {"ds": ds, "env": env, "sides": sides, "n": n}
    return prepare


def check_status_mixed(ctx: dict) -> str:
    ds, env, sides = ctx["ds"], ctx["env"], ctx["sides"]
    out = {}
    for side in ("ours", "ref"):
        p = run([sides.exe(side), "status", "--json"], ds, env, check=False)
        if p.returncode != 0:
            raise Skip(f"{who(side)} `status --json` exited {p.returncode}: {first_line(p.stderr)}")
        out[side] = json.loads(p.stdout)
    if out["ours"]["objects"] != out["ref"]["objects"] or len(out["ours"]["objects"]) != ctx["n"]:
        raise Skip("status --json objects differ")
    if out["ours"]["manifest_hash"] != out["ref"]["manifest_hash"]:
        raise Skip("manifest_hash differs")
    commits = git("rev-list", "--count", "HEAD", cwd=ds, env=env).strip()
    kinds = sorted({o["kind"] for o in out["ours"]["objects"]})
    return (f"same {ctx['n']} objects ({', '.join(kinds)}) and manifest_hash on both sides; "
            f"{commits} dataset commits")


def sum_status_git(ctx: dict, res: "Result") -> str:
    """`git status` in the same dataset, timed the same way, and whether our
    cached status starts any child process (strace)."""
    reps = len(res.times["ours"])
    t = timed(["git", "status"], ctx["ds"], ctx["env"], reps)
    g = statistics.median(t)
    res.extra.update(git_status_median_s=g, git_status_min_s=min(t),
                     ours_over_git_status=res.med("ours") / g)
    text = (f"`git status` in the same dataset: {g * 1e3:.1f} / {min(t) * 1e3:.1f} ms "
            f"(median / min); ours is {res.med('ours') / g:.2f}× git status")
    if shutil.which("strace"):
        trace = ctx["ds"].parent / "trace"
        run(["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace),
             str(ctx["sides"].ours), "status"], ctx["ds"], ctx["env"])
        execs = [ln for ln in trace.read_text().splitlines() if "execve(" in ln and "ENOENT" not in ln]
        res.extra["ours_child_processes"] = len(execs) - 1
        text += f"; child processes of our status: {len(execs) - 1} (strace -f -e trace=execve)"
    return text


# -- backends ----------------------------------------------------------------- #
def prep_backends(tmp: Path, sides: Sides) -> dict:
    home = tmp / "home"
    home.mkdir()
    return {"cwd": tmp, "env": isolated_env(home), "sides": sides}


def check_backends(ctx: dict) -> str:
    got = {}
    for side in ("ours", "ref"):
        p = run([ctx["sides"].exe(side), "backends", "--json"], ctx["cwd"], ctx["env"],
                check=False)
        if p.returncode != 0:
            raise Skip(f"{side} `backends --json` exited {p.returncode}: {first_line(p.stderr)}")
        got[side] = json.loads(p.stdout)
    strip = lambda rows: [{k: r[k] for k in ("kind", "maturity", "tier", "capabilities")}
                          for r in rows]
    if strip(got["ours"]) != strip(got["ref"]):
        raise Skip("backends differ in kind/maturity/tier/capabilities")
    built = [r["kind"] for r in got["ours"] if r["installed"]]
    return (f"same {len(got['ours'])} kinds, tiers and capabilities "
            f"(ours has {len(built)} built: {', '.join(built)})")


def cmds_backends(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "backends", "--json"], ctx["cwd"])]


# -- add ---------------------------------------------------------------------- #
def prep_add(n: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        template = new_git_repo(tmp / "template", env)
        run([sides.ours, "init", "--dataset-id", DATASET_ID], template, env)
        dirs = []
        for k in range(1, n + 1):
            d = tmp / "stores" / f"d{k}"
            d.mkdir(parents=True)
            (d / "part-0.csv").write_text(f"id,value\n{k},{k * k}\n")
            dirs.append(d)
        ctx = {"tmp": tmp, "template": template, "env": env, "sides": sides,
               "dirs": dirs, "ds": tmp / "work" / "ds", "dvc": None, "dvc_why": dvc_missing(),
               "dvc_env": dvc_env(env, tmp)}
        if dvc_exe().exists():
            # DVC tracks data inside its repository: the same directories,
            # hard-linked in (dvc add moves each file into its cache and
            # links it back, so every repetition starts from a fresh copy)
            dvc_template = new_git_repo(tmp / "dvc-template", env)
            run([dvc_exe(), "init", "-q"], dvc_template, ctx["dvc_env"])
            git("add", "-A", cwd=dvc_template, env=env)
            git("commit", "-q", "-m", "dvc init", cwd=dvc_template, env=env)
            for d in dirs:
                filedata.hardlink_copy(d, dvc_template / d.name)
            ctx.update(dvc=dvc_exe(), dvc_template=dvc_template, dvc_repo=tmp / "dvc-work" / "repo")
        return ctx
    return prepare


def before_add_dvc(ctx: dict) -> None:
    work = ctx["dvc_repo"].parent
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    shutil.copytree(ctx["dvc_template"], ctx["dvc_repo"], symlinks=True)


def sum_add_dvc(ctx: dict, res: "Result") -> str:
    """The DVC column: n × `dvc add dK` (the same directories, inside a fresh
    copy of a `dvc init` repository each repetition), the same loop.  Not the
    same work: dvc add also hashes every file and moves it into its cache,
    where tether's add records the locator and fingerprints at commit."""
    if not ctx["dvc"]:
        return unmeasured(res, "dvc column", ctx["dvc_why"])
    cmds = [([ctx["dvc"], "add", "-q", d.name], ctx["dvc_repo"]) for d in ctx["dirs"]]
    before_add_dvc(ctx)  # warm-up, checked
    sample(cmds, ctx["dvc_env"])
    made = sorted(p.name for p in ctx["dvc_repo"].glob("*.dvc") if p.is_file())
    if made != sorted(f"{d.name}.dvc" for d in ctx["dirs"]):
        return unmeasured(res, "dvc column", f"dvc add wrote {made[:5]}")
    ours, t = paired_with_ours(ctx, res, cmds_add, cmds, before_ours=before_add,
                               before_dvc=lambda c: before_add_dvc(c))
    ratio = record_dvc(res, ours, t, dvc_version(ctx))
    return (f"{len(cmds)} × `dvc add dK` (dvc {res.extra['dvc_version']}; also hashes and caches the "
            f"files) {ms(statistics.median(t))} / {ms(min(t))} ms, ours beside it {ms(statistics.median(ours))} "
            f"/ {ms(min(ours))} ms: ours {ratio_text(ratio)} than dvc")


def before_add(ctx: dict, side: str) -> None:
    work = ctx["ds"].parent
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    shutil.copytree(ctx["template"], ctx["ds"], symlinks=True)


def cmds_add(ctx: dict, side: str):
    exe = ctx["sides"].exe(side)
    return [([exe, "add", f"d{k}", str(d), "--kind", "file"], ctx["ds"])
            for k, d in enumerate(ctx["dirs"], 1)]


def check_add(ctx: dict) -> str:
    manifests = {}
    for side in ("ours", "ref"):
        before_add(ctx, side)
        for argv, cwd in cmds_add(ctx, side):
            p = run(argv, cwd, ctx["env"], check=False)
            if p.returncode != 0:
                who = "our tether" if side == "ours" else "tether-vcs"
                raise Skip(f"{who} `add` exited {p.returncode}: {first_line(p.stderr)}")
        objs = ctx["ds"] / ".tether" / "objects"
        manifests[side] = {f.name: f.read_bytes() for f in sorted(objs.iterdir())}
    if manifests["ours"] != manifests["ref"]:
        diff = sorted(k for k in set(manifests["ours"]) | set(manifests["ref"])
                      if manifests["ours"].get(k) != manifests["ref"].get(k))
        raise Skip(f"manifests differ: {', '.join(diff[:5])}")
    return f"byte-identical manifests for all {len(manifests['ours'])} objects"


# -- plan-previews ------------------------------------------------------------ #
# The previews every planned command runs through one driver: a commit plan
# of n moved git objects and the gc plan of their history.
PREVIEWS = (["commit", "-m", "preview", "--dry-run", "--json"], ["gc", "--json"])


def prep_previews(n: int):
    """n git objects with two dataset commits, every repository moved on
    since the second."""
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        ds = new_git_repo(tmp / "ds", env)
        ours = sides.ours
        run([ours, "init", "--dataset-id", DATASET_ID], ds, env)
        repos = []
        for k in range(1, n + 1):
            r = new_git_repo(tmp / "stores" / f"r{k}", env)
            repos.append(r)
            run([ours, "add", f"r{k}", str(r), "--kind", "git"], ds, env)
        for round_ in (1, 2):
            run([ours, "commit", "-m", f"round {round_}"], ds, env)
            for r in repos:
                git("commit", "-q", "--allow-empty", "-m", f"round {round_}", cwd=r, env=env)
        return {"ds": ds, "env": env, "sides": sides, "n": n}
    return prepare


def plan_body(text: str) -> dict:
    plan = json.loads(text)
    for volatile in ("created_at", "digest", "tether_version"):
        plan.pop(volatile, None)
    return plan


def check_previews(ctx: dict) -> str:
    ds, env, sides = ctx["ds"], ctx["env"], ctx["sides"]
    seen = {}
    for side in ("ours", "ref"):
        for argv in PREVIEWS:
            p = run([sides.exe(side), *argv], ds, env, check=False)
            if p.returncode != 0:
                raise Skip(f"{side} `{' '.join(argv)}` exited {p.returncode}: {first_line(p.stderr)}")
            seen[side, argv[0]] = plan_body(p.stdout)
    for argv in PREVIEWS:
        if seen["ours", argv[0]] != seen["ref", argv[0]]:
            raise Skip(f"the {argv[0]} plans differ")
    writes = len(seen["ours", "commit"]["actions"])
    return f"identical commit ({writes} actions) and gc plans"


def cmds_previews(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), *argv], ctx["ds"]) for argv in PREVIEWS]


# -- verify --all-history ------------------------------------------------------ #
def ref_version() -> str:
    try:
        from importlib.metadata import version
        return version("tether-vcs")
    except Exception:  # pragma: no cover - reported, not fatal
        return "unknown"


def verify_available(sides: Sides) -> None:
    p = subprocess.run([str(sides.ours), "verify", "--help"], capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip(f"our tether has no `verify` yet (`tether verify --help` exits "
                   f"{p.returncode}: {first_line(p.stderr or p.stdout)})")


def history_dataset(commits: int, objects: int, ref: Path) -> Path:
    """A dataset with `commits` tether commits over `objects` local file objects,
    built by tether-vcs and cached under .tmp/bench/ (keyed by a version string).

    tether-vcs records a changed file object with `pull` (for a system without
    branches the object itself is the upstream; `commit` leaves it `behind`),
    so: `add` with `--file versioned` (drift accepted rather than refused),
    `commit -m` once, then one file changes and `pull` commits it, repeatedly.
    """
    key = f"history-v{HISTORY_FORMAT}-tether-vcs-{ref_version()}-{commits}x{objects}"
    base = CACHE / key
    stamp = base / "READY"
    if stamp.exists() and stamp.read_text() == f"{key}\n{base}\n":
        return base
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    home = base / "home"
    home.mkdir()
    env = isolated_env(home)
    ds = new_git_repo(base / "ds", env)
    run([ref, "init", "--dataset-id", DATASET_ID], ds, env)
    for k in range(1, objects + 1):
        d = base / "stores" / f"d{k}"
        d.mkdir(parents=True)
        (d / "data.txt").write_text("v0\n")
        run([ref, "add", f"f{k}", str(d), "--kind", "file", "--file", "versioned"], ds, env)
    run([ref, "commit", "-m", "c0"], ds, env)
    t0 = time.perf_counter()
    for n in range(1, commits):
        d = base / "stores" / f"d{(n - 1) % objects + 1}"
        (d / "data.txt").write_text(f"v{n}\n")
        run([ref, "pull"], ds, env)
        if n % 25 == 0 or n == commits - 1:
            print(f"  building {key}: {n + 1}/{commits} commits "
                  f"({time.perf_counter() - t0:.0f}s)", file=sys.stderr, flush=True)
    count = int(git("rev-list", "--count", "HEAD", cwd=ds, env=env))
    if count != commits + 1:  # plus the initial "start" commit
        raise RuntimeError(f"history has {count - 1} tether commits, wanted {commits}")
    stamp.write_text(f"{key}\n{base}\n")
    return base


def prep_verify(commits: int, objects: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        base = history_dataset(commits, objects, sides.ref)
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        ds = tmp / "ds"
        shutil.copytree(base / "ds", ds, symlinks=True)  # stores stay in the cache
        return {"ds": ds, "env": env, "sides": sides}
    return prepare


def check_verify(ctx: dict) -> str:
    got = {}
    for side in ("ours", "ref"):
        p = run([ctx["sides"].exe(side), "verify", "--all-history", "--json"], ctx["ds"],
                ctx["env"], check=False)
        try:
            got[side] = (p.returncode, json.loads(p.stdout))
        except json.JSONDecodeError:
            raise Skip(f"{side} `verify --all-history --json` exited {p.returncode} "
                       f"without JSON: {first_line(p.stderr)}") from None
    if got["ours"] != got["ref"]:
        raise Skip(f"verify --all-history differs: ours exit {got['ours'][0]} with "
                   f"{len(got['ours'][1])} reports, tether-vcs exit {got['ref'][0]} with "
                   f"{len(got['ref'][1])}")
    rc, reports = got["ref"]
    if not reports:
        return (f"both exit {rc} with no reports: every record is a local file object, "
                "Observed (recoverable = false), which --all-history skips; this "
                "measures the history walk and manifest reading")
    by = {}
    for r in reports.values():
        by[r["status"]] = by.get(r["status"], 0) + 1
    return f"both exit {rc}, same {len(reports)} reports: {by}"


def cmds_verify(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "verify", "--all-history"], ctx["ds"])]


# -- export (the registry tables) ---------------------------------------------- #
EXPORT_FORMAT = "1"


def manifest_text(key: str, uri: str, n: int) -> str:
    """A committed file-object manifest as tether-vcs writes it (version n)."""
    digest = f"{n:08x}{zlib.crc32(key.encode()):08x}".ljust(32, "0")[:32]
    return (f'key = "{key}"\nkind = "file"\nrecoverable = false\n'
            f'captured_at = "2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000000+00:00"\n\n'
            f'[locator]\nuri = "{uri}"\n\n[policy]\nfile = "versioned"\npin = "native"\n\n'
            f'[state]\ntype = "dir"\ncount = 1\nsize = {n + 3}\ndigest = "{digest}"\n')


def export_dataset(commits: int, objects: int, ref: Path) -> Path:
    """`commits` dataset commits over `objects` file objects, each commit
    re-recording one object.  tether-vcs inits the dataset; the manifests
    are written as it writes them and committed with git directly (building
    this through `pull` would take the reference hours), cached under
    .tmp/bench/."""
    key = f"export-v{EXPORT_FORMAT}-tether-vcs-{ref_version()}-{commits}x{objects}"
    base = CACHE / key
    stamp = base / "READY"
    if stamp.exists() and stamp.read_text() == f"{key}\n{base}\n":
        return base
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    home = base / "home"
    home.mkdir()
    env = isolated_env(home)
    ds = new_git_repo(base / "ds", env)
    run([ref, "init", "--dataset-id", DATASET_ID], ds, env)
    objdir = ds / ".tether" / "objects"
    objdir.mkdir(parents=True, exist_ok=True)
    for k in range(1, objects + 1):
        (objdir / f"f{k}.toml").write_text(manifest_text(f"f{k}", str(base / "stores" / f"d{k}"), 0))
    git("add", "-A", cwd=ds, env=env)
    git("commit", "-q", "-m", "c0", cwd=ds, env=env)
    for n in range(1, commits):
        k = (n - 1) % objects + 1
        (objdir / f"f{k}.toml").write_text(manifest_text(f"f{k}", str(base / "stores" / f"d{k}"), n))
        git("commit", "-q", "-am", f"c{n}", cwd=ds, env=env)
    stamp.write_text(f"{key}\n{base}\n")
    return base


def prep_export(commits: int, objects: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        base = export_dataset(commits, objects, sides.ref)
        home = tmp / "home"
        home.mkdir()
        ds = tmp / "ds"
        shutil.copytree(base / "ds", ds, symlinks=True)
        return {"ds": ds, "env": isolated_env(home), "sides": sides, "out": tmp / "out"}
    return prepare


def export_rows(path: Path) -> dict:
    import sqlite3
    con = sqlite3.connect(path)
    out = {}
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        rows = con.execute(f"SELECT * FROM {name}").fetchall()
        if name == "tether_meta":
            rows = [r for r in rows if r[0] not in ("exported_at", "tether_version")]
        out[name] = sorted(rows, key=repr)
    con.close()
    return out


def check_export(ctx: dict) -> str:
    got = {}
    ctx["out"].mkdir(exist_ok=True)
    for side in ("ours", "ref"):
        target = ctx["out"] / f"check-{side}.sqlite"
        p = run([ctx["sides"].exe(side), "export", str(target)], ctx["ds"], ctx["env"], check=False)
        if p.returncode != 0:
            raise Skip(f"{who(side)} `export` exited {p.returncode}: {first_line(p.stderr)}")
        got[side] = export_rows(target)
    if got["ours"] != got["ref"]:
        differ = [t for t in got["ref"] if got["ours"].get(t) != got["ref"][t]]
        raise Skip(f"the exported tables differ: {', '.join(differ)}")
    return (f"same rows: {len(got['ref']['commits'])} commits, {len(got['ref']['objects'])} "
            f"objects, {len(got['ref']['object_states'])} object states")


def cmds_export(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "export", str(ctx["out"] / f"{side}.sqlite")], ctx["ds"])]



# --------------------------------------------------------------------------- #
# The `file` backend on local directories (data from bench/filedata.py)
# --------------------------------------------------------------------------- #
def who(side: str) -> str:
    return "our tether" if side == "ours" else "tether-vcs"


def file_dataset(tmp: Path, sides: Sides, tree: Path, commit: bool) -> tuple[Path, dict]:
    """A dataset in tmp with one `file` object `d` on `tree`; committed (by
    ours, which also fills the hash cache) when `commit`."""
    home = tmp / "home"
    home.mkdir()
    env = isolated_env(home)
    ds = new_git_repo(tmp / "ds", env)
    run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
    run([sides.ours, "add", "d", str(tree), "--kind", "file"], ds, env)
    if commit:
        run([sides.ours, "commit", "-m", "tree"], ds, env)
    return ds, env


def hash_cache(ds: Path) -> Path:
    return ds / ".tether" / "cache" / "file-hashes.json"


def same_output(ctx: dict, argv_tail: list[str], before: Callable[[dict, str], None] | None
                = None, strip: Callable[[str], object] = lambda t: t) -> dict[str, object]:
    """Run both sides once (the warm-up) and demand the same output."""
    got = {}
    for side in ("ours", "ref"):
        if before:
            before(ctx, side)
        p = run([ctx["sides"].exe(side), *argv_tail], ctx["ds"], ctx["env"], check=False)
        if p.returncode != 0:
            raise Skip(f"{who(side)} `{' '.join(argv_tail)}` exited {p.returncode}: "
                       f"{first_line(p.stderr)}")
        got[side] = strip(p.stdout)
    if got["ours"] != got["ref"]:
        raise Skip(f"`{' '.join(argv_tail)}` differs: ours {str(got['ours'])[:200]!r} vs "
                   f"tether-vcs {str(got['ref'])[:200]!r}")
    return got


def status_objects(text: str) -> list:
    return json.loads(text)["objects"]


def openssl_sha256(procs: int = 1) -> float:
    """SHA-256 bytes/s by `openssl speed` (1 MiB blocks, 3 s): one process, or
    `procs` processes at once (`-multi`, their total)."""
    multi = ["-multi", str(procs)] if procs > 1 else []
    p = subprocess.run(["openssl", "speed", *multi, "-evp", "sha256", "-seconds", "3",
                        "-bytes", "1048576"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        parts = line.split()
        if parts and parts[0].lower() == "sha256" and parts[-1].endswith("k"):
            return float(parts[-1][:-1]) * 1000  # "in 1000s of bytes per second"
    raise Skip(f"cannot parse `openssl speed` (exit {p.returncode}): "
               f"{first_line(p.stdout + p.stderr)}")


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def peak_rss_kib(argv: list, cwd: Path, env: dict[str, str]) -> int | None:
    """The peak resident set size of one run, in KiB (the child's rusage)."""
    return child_usage(argv, cwd, env)[0]


# Spawns argv (output to /dev/null) and prints "exit maxrss_kib cpu_seconds"
# from the rusage wait4 gives for it.
_RUSAGE_TRAMPOLINE = (
    "import os, sys\n"
    "null = os.open(os.devnull, os.O_WRONLY)\n"
    "pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ,\n"
    "                      file_actions=[(os.POSIX_SPAWN_DUP2, null, 1),\n"
    "                                    (os.POSIX_SPAWN_DUP2, null, 2)])\n"
    "_, status, ru = os.wait4(pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), ru.ru_maxrss, ru.ru_utime + ru.ru_stime)\n")


def child_usage(argv: list, cwd: Path | None = None, env: dict[str, str] | None = None
                ) -> tuple[int, float]:
    """One run of argv as a child: its peak RSS in KiB and its CPU seconds
    (user + system), from the rusage wait4 returns for that child alone.

    Linux starts a new program's high-water mark at the RSS of the process
    it was spawned from, so argv is spawned by a fresh, small interpreter
    (`python -I -S`, a few MiB) rather than by this process, whose own RSS
    (hundreds of MiB after building a tree) would otherwise be reported as
    the child's peak."""
    p = subprocess.run([sys.executable, "-I", "-S", "-c", _RUSAGE_TRAMPOLINE,
                        *[str(a) for a in argv]], cwd=cwd, env=env, capture_output=True,
                       text=True)
    fields = p.stdout.split()
    if p.returncode != 0 or len(fields) != 3:
        raise Skip(f"measuring {Path(str(argv[0])).name} failed: "
                   f"{first_line(p.stderr or p.stdout)}")
    if fields[0] != "0":
        raise Skip(f"{Path(str(argv[0])).name} exited {fields[0]}")
    return int(fields[1]), float(fields[2])


def unmeasured(res: "Result", what: str, why: str) -> str:
    """A derived figure that could not be had: recorded (the JSON's
    extra.not_measured, the run's closing list, --strict's exit status)
    and said in the summary."""
    res.extra.setdefault("not_measured", []).append(f"{what}: {why}")
    return f"{what} not measured: {why}"


def timed(argv: list, cwd: Path, env: dict[str, str], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run(argv, cwd, env)
        out.append(time.perf_counter() - t0)
    return out


# -- file-first-fingerprint ------------------------------------------------------ #
def prep_first(nfiles: int, size: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        tree, total = filedata.big_tree(CACHE, nfiles, size)
        filedata.warm_page_cache(tree)
        ds, env = file_dataset(tmp, sides, tree, commit=False)
        return {"ds": ds, "env": env, "sides": sides, "tree": tree, "bytes": total,
                "files": nfiles, "sha_1core": openssl_sha256(), "cores": cpu_count(),
                "sha_all": openssl_sha256(cpu_count()), "ceiling": read_sha_ceiling(tree)}
    return prepare


def read_sha_ceiling(tree: Path) -> dict | None:
    """bench/read_sha.c on the tree: one thread's read()+SHA-256 rate from the
    page cache with nothing else, the most any file fingerprint gets per core.
    None when the helper cannot be built."""
    src = ROOT / "bench" / "read_sha.c"
    out = CACHE / "read_sha"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        p = subprocess.run(["cc", "-std=c11", "-O2", str(src), "-lcrypto", "-o", str(out)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return None
    files = "".join(f"{f}\n" for f in sorted(map(str, tree.rglob("*"))) if Path(f).is_file())
    p = subprocess.run([str(out), "3"], input=files, capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else None


def before_first(ctx: dict, side: str) -> None:
    hash_cache(ctx["ds"]).unlink(missing_ok=True)


def check_first(ctx: dict) -> str:
    got = same_output(ctx, ["snapshot", "--json"], before_first, strip=json.loads)
    return f"same state from `snapshot --json` on both sides: {json.dumps(got['ours']['d'])}"


def cmds_first(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "snapshot", "--json"], ctx["ds"])]


def sum_first(ctx: dict, res: "Result") -> str:
    gb = ctx["bytes"] / 1e9
    ours, ref = gb / res.med("ours"), gb / res.med("ref")
    best = gb / res.min("ours")
    one = ctx["sha_1core"] / 1e9
    bound = one * ctx["cores"]
    together = ctx["sha_all"] / 1e9
    res.extra.update(bytes=ctx["bytes"], files=ctx["files"], ours_gbps=ours, ours_best_gbps=best,
                     ref_gbps=ref, openssl_sha256_1core_gbps=one, cores=ctx["cores"],
                     reference_gbps=bound, fraction_of_reference=ours / bound,
                     openssl_sha256_all_cores_gbps=together,
                     fraction_of_all_cores=ours / together)
    return (f"ours {ours:.2f} GB/s (best {best:.2f}), tether-vcs {ref:.2f} GB/s; reference "
            f"OpenSSL SHA-256 {one:.2f} GB/s × {ctx['cores']} cores = {bound:.2f} GB/s: ours is "
            f"{100 * ours / bound:.0f} % of it (best rep {100 * best / bound:.0f} %); "
            f"`openssl speed -multi {ctx['cores']}` itself reaches {together:.2f} GB/s "
            f"({100 * together / bound:.0f} % of the product), ours is "
            f"{100 * ours / together:.0f} % of that" + ceiling_text(ctx, res, one, ours))


def ceiling_text(ctx: dict, res: "Result", one: float, ours: float) -> str:
    c = ctx.get("ceiling")
    if not c:
        return "; " + unmeasured(res, "read+SHA-256 ceiling", "bench/read_sha.c did not build")
    best = c["best_gbps"]
    res.extra.update(read_sha_1thread_gbps=best, read_sha_fraction_of_openssl=best / one)
    return (f"; one thread reading the same files with read() and hashing them, nothing else "
            f"(bench/read_sha.c, best of 3): {best:.2f} GB/s = {100 * best / one:.0f} % of "
            f"OpenSSL's in-memory rate, so × {ctx['cores']} cores the ceiling is "
            f"{100 * best / one:.0f} % of the product; ours reaches "
            f"{100 * ours / (best * ctx['cores']):.0f} % of that ceiling")


# -- file-cached-refresh ---------------------------------------------------------- #
def prep_refresh(shard_files: int, shards: int, rss: bool):
    def prepare(tmp: Path, sides: Sides) -> dict:
        if shards == 1:
            tree = filedata.small_shard(CACHE, shard_files, 0)
        else:
            tree = filedata.small_tree(CACHE, shard_files, shards)
        ds, env = file_dataset(tmp, sides, tree, commit=True)  # our commit fills the cache
        return {"ds": ds, "env": env, "sides": sides, "files": shard_files * shards, "tree": tree,
                "rss": rss}
    return prepare


def check_refresh(ctx: dict) -> str:
    got = same_output(ctx, ["status", "--snapshot", "--json"], strip=status_objects)
    states = [o["state"] for o in got["ours"]]
    if states != ["clean"]:
        raise Skip(f"expected one clean object, got {states}")
    binary = hash_cache(ctx["ds"]).with_suffix(".bin")
    return (f"both `status --snapshot --json`: the same one object, clean; hash cache "
            f"{hash_cache(ctx['ds']).stat().st_size / 1e6:.0f} MB"
            + (f", its binary copy {binary.stat().st_size / 1e6:.0f} MB" if binary.exists() else ""))


def cmds_refresh(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "status", "--snapshot"], ctx["ds"])]


def before_refresh_after_other(ctx: dict, side: str) -> None:
    """An untimed refresh by `side` when the last one was the other side's.
    At 10^6 files the run right after the other side's (tether-vcs: a
    minute and 2 GiB) waits off the CPU for seconds (8.9 s of wall time for
    3.0 s of CPU, against 1.4 s when it follows one of ours): that measures
    the machine recovering from the other process, not a refresh with the
    cache warm, which is what the row times.  Both sides get the same."""
    # check_refresh, the warm-up, ran ours and then tether-vcs
    if ctx.get("last_side", "ref") != side:
        for argv, cwd in cmds_refresh(ctx, side):
            run(argv, cwd, ctx["env"], check=False)
    ctx["last_side"] = side


def stat_walk_floor(tree: Path) -> float | None:
    """Seconds for `find` to walk the tree and stat every file (the fields
    the hash cache compares), best of 3; None without GNU find."""
    argv = ["find", str(tree), "-type", "f", "-printf", "%s %T@ %C@ %i\n"]
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if p.returncode != 0:
            return None
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best


def build_walk_floor() -> Path:
    """bench/walk_floor.c: the bare getdents64 + fstatat walk (no library)."""
    src = ROOT / "bench" / "walk_floor.c"
    out = CACHE / "walk_floor"
    if out.exists() and out.stat().st_mtime > src.stat().st_mtime:
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["cc", "-std=c11", "-O2", "-pthread", str(src), "-o", str(out)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip(f"cc bench/walk_floor.c failed: {first_line(p.stderr)}")
    return out


def bare_walk_floor(tree: Path) -> dict | None:
    """The floor of a cached refresh, measured in this run: seconds of the
    best of 3 bare walks of the same tree (bench/walk_floor.c), on one
    thread and on every core; None when the helper cannot be built."""
    try:
        exe = build_walk_floor()
    except Skip:
        return None
    got = {}
    for threads in sorted({1, cpu_count()}):
        p = subprocess.run([str(exe), str(tree), "3", str(threads)], capture_output=True, text=True)
        if p.returncode != 0:
            return None
        n, secs = p.stdout.split()
        got[threads] = (int(n), float(secs))
    best = min(got.values(), key=lambda v: v[1])
    # CPU time of one single-threaded walk (the least of 3 runs of one walk).
    cpu = min(child_usage([exe, tree, "1", "1"])[1] for _ in range(3))
    return {"entries": best[0], "seconds": best[1], "cpu_seconds": cpu,
            "by_threads": {str(k): v[1] for k, v in got.items()}}


def sum_refresh(ctx: dict, res: "Result") -> str:
    n = ctx["files"]
    per = {s: res.med(s) / n * 1e6 for s in ("ours", "ref")}
    res.extra.update(files=n, ours_us_per_file=per["ours"], ref_us_per_file=per["ref"],
                     ours_best_us_per_file=res.min("ours") / n * 1e6)
    text = (f"ours {per['ours']:.2f} µs/file (best {res.min('ours') / n * 1e6:.2f}), "
            f"tether-vcs {per['ref']:.2f} µs/file")
    floor = stat_walk_floor(ctx["tree"])
    if floor is not None:
        res.extra["find_stat_walk_us_per_file"] = floor / n * 1e6
        text += (f"; for scale, `find -printf` of the same stat fields (one thread, walk and "
                 f"stat only, best of 3) takes {floor / n * 1e6:.2f} µs/file")
    bare = bare_walk_floor(ctx["tree"])
    if bare is not None:
        res.extra["bare_walk"] = bare
        res.extra["ours_over_bare_walk"] = res.med("ours") / bare["seconds"]
        text += (f"; the bare getdents64+fstatat walk of the same tree (bench/walk_floor.c, "
                 f"best of 3, {', '.join(f'{k} thread(s) {v * 1e3:.0f} ms' for k, v in bare['by_threads'].items())}) "
                 f"takes {bare['seconds'] * 1e3:.0f} ms, {bare['seconds'] / bare['entries'] * 1e6:.2f} µs/entry: "
                 f"ours is {res.med('ours') / bare['seconds']:.2f}× the floor")
        # The same comparison in CPU time (user + system of the child, the
        # least of 3), which load on the machine moves far less than wall.
        cpu = min(child_usage([ctx["sides"].exe("ours"), "status", "--snapshot"], ctx["ds"],
                              ctx["env"])[1] for _ in range(3))
        res.extra["ours_cpu_seconds"] = cpu
        res.extra["ours_cpu_over_bare_walk_cpu"] = cpu / bare["cpu_seconds"]
        text += (f"; in CPU time ours {cpu * 1e3:.0f} ms, the bare walk on one thread "
                 f"{bare['cpu_seconds'] * 1e3:.0f} ms: {cpu / bare['cpu_seconds']:.2f}×")
    if ctx["rss"]:
        for side in ("ours", "ref"):
            kib = peak_rss_kib([ctx["sides"].exe(side), "status", "--snapshot"], ctx["ds"],
                               ctx["env"])
            res.extra[f"{side}_peak_rss_mib"] = kib / 1024 if kib else None
        o, r = res.extra["ours_peak_rss_mib"], res.extra["ref_peak_rss_mib"]
        if o is None:
            text += "; " + unmeasured(res, "peak memory", "no rusage of the child")
        else:
            text += f"; peak RSS ours {o:.0f} MiB, tether-vcs {r:.0f} MiB"
    return text


# -- status-snapshot-vs-dvc ---------------------------------------------------------- #
def dvc_exe() -> Path:
    """DVC from the benchmark's own venv (.venv-bench, bench/requirements.txt,
    made by scripts/bench.sh), never the test venv; $TETHER_BENCH_DVC names another."""
    if os.environ.get("TETHER_BENCH_DVC"):
        return Path(os.environ["TETHER_BENCH_DVC"])
    return ROOT / ".venv-bench" / "bin" / "dvc"


def dvc_missing() -> str:
    return (f"dvc is not installed at {dvc_exe()} (scripts/bench.sh installs bench/requirements.txt "
            "into .venv-bench; $TETHER_BENCH_DVC names another dvc)")


def dvc_env(env: dict[str, str], tmp: Path) -> dict[str, str]:
    return {**env, "DVC_NO_ANALYTICS": "1", "DVC_SITE_CACHE_DIR": str(tmp / "dvc-site")}


def dvc_version(ctx: dict) -> str:
    return first_line(run([ctx["dvc"], "--version"], ctx["tmp"], ctx["dvc_env"]).stdout)


def paired_with_ours(ctx: dict, res: "Result", bench_cmds, dvc_cmds, before_ours=None, before_dvc=None
                     ) -> tuple[list[float], list[float]]:
    """DVC's samples, each taken right beside one more sample of ours (the
    order alternating), so the DVC ratio compares runs under the same load
    as each other, not against the tether-vcs timing run minutes earlier."""
    ours, dvc = [], []
    for i in range(res.reps):
        for who in (("ours", "dvc") if i % 2 == 0 else ("dvc", "ours")):
            if who == "ours":
                if before_ours:
                    before_ours(ctx, "ours")
                ours.append(sample(bench_cmds(ctx, "ours"), ctx["env"]))
            else:
                if before_dvc:
                    before_dvc(ctx)
                dvc.append(sample(dvc_cmds, ctx["dvc_env"]))
    return ours, dvc


def record_dvc(res: "Result", ours: list[float], dvc: list[float], version: str) -> float:
    ratio = statistics.median(dvc) / statistics.median(ours)
    res.extra.update(dvc_ms={"median": statistics.median(dvc) * 1e3, "min": min(dvc) * 1e3,
                             "samples": [x * 1e3 for x in dvc]},
                     dvc_paired_ours_ms={"median": statistics.median(ours) * 1e3, "min": min(ours) * 1e3,
                                         "samples": [x * 1e3 for x in ours]},
                     dvc_ratio=ratio, dvc_version=version)
    return ratio


def prep_dvc(nfiles: int, size: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        src = filedata.mid_tree(CACHE, nfiles, size)
        home = tmp / "home"
        home.mkdir()
        env = dvc_env(isolated_env(home), tmp)
        repo = new_git_repo(tmp / "dvcrepo", env)
        data = repo / "data"
        filedata.hardlink_copy(src, data)  # dvc add copies into its cache, never writes these
        ctx = {"env": env, "sides": sides, "files": nfiles, "bytes": nfiles * size,
               "dvcrepo": repo, "dvc": None, "dvc_why": "", "tmp": tmp, "dvc_env": env}
        if dvc_exe().exists():
            run([dvc_exe(), "init", "-q"], repo, env)
            run([dvc_exe(), "add", "-q", "data"], repo, env)
            git("add", "-A", cwd=repo, env=env)
            git("commit", "-q", "-m", "dvc add data", cwd=repo, env=env)
            ctx["dvc"] = dvc_exe()
        else:
            ctx["dvc_why"] = dvc_missing()
        ds = new_git_repo(tmp / "ds", env)
        run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
        run([sides.ours, "add", "d", str(data), "--kind", "file"], ds, env)
        run([sides.ours, "commit", "-m", "tree"], ds, env)
        ctx["ds"] = ds
        return ctx
    return prepare


def sum_dvc(ctx: dict, res: "Result") -> str:
    if not ctx["dvc"]:
        return unmeasured(res, "dvc column", ctx["dvc_why"])
    p = run([ctx["dvc"], "status"], ctx["dvcrepo"], ctx["env"])  # warm-up
    if "up to date" not in p.stdout:
        return unmeasured(res, "dvc column", f"`dvc status` is not clean: {first_line(p.stdout)}")
    ours, t = paired_with_ours(ctx, res, cmds_refresh, [([ctx["dvc"], "status"], ctx["dvcrepo"])])
    ratio = record_dvc(res, ours, t, dvc_version(ctx))
    return (f"`dvc status` (dvc {res.extra['dvc_version']}, up to date) {ms(statistics.median(t))} / "
            f"{ms(min(t))} ms, ours beside it {ms(statistics.median(ours))} / {ms(min(ours))} ms: "
            f"{ratio_text(ratio)} than dvc")


# -- listing-diff ---------------------------------------------------------------------- #
def listing_history(n: int, ref: Path) -> tuple[Path, str, str, str]:
    """A dataset with two commits of one `file` object on an n-file directory
    (a hard-linked copy of small shard 0) that differ in 5 files: 3 changed,
    1 added, 1 removed.  Built by tether-vcs (`add --file versioned`,
    `commit`, change, `pull`), cached.  Returns (base, rev A, rev B, what)."""
    key = f"listing-v{filedata.FILEDATA_FORMAT}-tether-vcs-{ref_version()}-{n}"
    base = CACHE / key
    stamp = base / "READY"
    if not (stamp.exists() and stamp.read_text().startswith(f"{key}\n")):
        src = filedata.small_shard(CACHE, n, 0)
        if base.exists():
            shutil.rmtree(base)
        base.mkdir(parents=True)
        tree = base / "tree"
        filedata.hardlink_copy(src, tree)
        home = base / "home"
        home.mkdir()
        env = isolated_env(home)
        ds = new_git_repo(base / "ds", env)
        run([ref, "init", "--dataset-id", DATASET_ID], ds, env)
        run([ref, "add", "d", str(tree), "--kind", "file", "--file", "versioned"], ds, env)
        run([ref, "commit", "-m", "A"], ds, env)
        a = git("rev-parse", "HEAD", cwd=ds, env=env).strip()
        files = sorted(p for p in (tree / "a00" / "b00").iterdir())
        for f in files[:3]:
            filedata.replace_file(f, b"changed\n")
        (files[3]).unlink()
        filedata.replace_file(tree / "a00" / "b00" / "added.txt", b"new file\n")
        run([ref, "pull"], ds, env)
        b = git("rev-parse", "HEAD", cwd=ds, env=env).strip()
        if a == b:
            raise RuntimeError("`tether pull` recorded no commit for the changed directory")
        stamp.write_text(f"{key}\n{a}\n{b}\n")
    _, a, b = stamp.read_text().split()
    return base, a, b, "3 changed, 1 added, 1 removed"


def prep_listing(n: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        base, a, b, what = listing_history(n, sides.ref)
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        ds = tmp / "ds"
        shutil.copytree(base / "ds", ds, symlinks=True)  # with .tether/listings
        return {"ds": ds, "env": env, "sides": sides, "a": a, "b": b, "what": what, "n": n}
    return prepare


def check_listing(ctx: dict) -> str:
    got = same_output(ctx, ["diff", "--content", ctx["a"], ctx["b"], "--json"],
                      strip=json.loads)
    same_output(ctx, ["diff", "--content", ctx["a"], ctx["b"]])
    return (f"same `diff --content` (text and --json) on both sides, A..B {ctx['what']}: "
            f"{json.dumps(got['ours'])[:160]}")


def cmds_listing(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "diff", "--content", ctx["a"], ctx["b"]], ctx["ds"])]


def sum_listing(ctx: dict, res: "Result") -> str:
    """The listing diff's own cost: `diff --content` less `diff` (the same
    command without reading and comparing the listings)."""
    out = {}
    for side in ("ours", "ref"):
        t = timed([ctx["sides"].exe(side), "diff", ctx["a"], ctx["b"]], ctx["ds"], ctx["env"],
                  res.reps)
        out[side] = statistics.median(t)
        res.extra[f"{side}_plain_diff_ms"] = {"median": out[side] * 1e3, "min": min(t) * 1e3}
    own = res.med("ours") - out["ours"]
    ref_own = res.med("ref") - out["ref"]
    res.extra.update(ours_listing_diff_ms=own * 1e3, ref_listing_diff_ms=ref_own * 1e3)
    text = (f"`diff A B` without --content: ours {ms(out['ours'])} ms, tether-vcs "
            f"{ms(out['ref'])} ms; so --content adds ≈ {own * 1e3:.1f} ms ours, "
            f"≈ {ref_own * 1e3:.0f} ms tether-vcs (difference of medians)")
    try:
        helper = build_listing_helper(ctx["sides"].ours)
        la, lb = listing_files(ctx)
        p = run([helper, la, lb, max(res.reps, 21)], ctx["ds"], ctx["env"])
        got = json.loads(p.stdout)
    except (Skip, RuntimeError, OSError, ValueError) as exc:
        return text + "; " + unmeasured(res, "the library's listing diff alone",
                                        first_line(str(exc)))
    res.extra["ours_library_listing_diff_ms"] = got
    return text + (f"; the library's listing diff alone (bench/listing_diff.c, {got['reps']} "
                   f"calls on the two stored listings): median {got['median_ms']:.1f} ms, "
                   f"min {got['min_ms']:.1f} ms ({got['summary']})")


def listing_files(ctx: dict) -> tuple[Path, Path]:
    """The stored listings of A and B: the one A's tree holds, the one B adds."""
    def names(rev: str) -> set[str]:
        return set(git("ls-tree", "--name-only", rev, ".tether/listings/", cwd=ctx["ds"],
                       env=ctx["env"]).split())
    a, b = names(ctx["a"]), names(ctx["b"])
    new = b - a
    if len(a) != 1 or len(new) != 1:
        raise Skip(f"expected one listing at A and one more at B, found {len(a)} and {len(new)}")
    return ctx["ds"] / a.pop(), ctx["ds"] / new.pop()


def build_listing_helper(ours: Path) -> Path:
    """bench/listing_diff.c as the CMake target `bench_listing_diff` of the
    build tree our binary comes from (linked against the static library
    with the library's own dependencies, as the tests are), brought up to
    date there."""
    tree = ours.parent
    if not (tree / "CMakeCache.txt").exists():
        raise Skip(f"{tree} is not a CMake build tree (bench_listing_diff is built there)")
    p = subprocess.run(["cmake", "--build", str(tree), "--target", "bench_listing_diff"],
                       capture_output=True, text=True)
    out = tree / "bench_listing_diff"
    if p.returncode != 0 or not out.exists():
        lines = [ln for ln in (p.stdout + p.stderr).splitlines() if "error" in ln.lower()]
        raise Skip(f"building bench_listing_diff in {tree} failed: "
                   f"{(lines or [first_line(p.stdout + p.stderr)])[0]}")
    return out


# -- delta: fingerprint and log of a long transaction log ------------------- #
def delta_table(path: Path, commits: int, checkpoint_at: int) -> None:
    """A Delta table whose log has `commits` appends (v0 written by deltalake,
    the rest as delta-rs writes them, one tiny add each) and a checkpoint at
    `checkpoint_at`, made by deltalake."""
    import warnings
    warnings.simplefilter("ignore")
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    write_deltalake(str(path), pa.table({"id": [0]}))
    log = path / "_delta_log"
    t0 = 1_700_000_000_000
    def write(v: int) -> None:
        info = {"commitInfo": {"timestamp": t0 + v * 1000, "operation": "WRITE",
                               "operationParameters": {"mode": "Append"},
                               "operationMetrics": {"num_added_files": 1, "num_removed_files": 0,
                                                    "num_added_rows": 1, "num_partitions": 0}}}
        add = {"add": {"path": f"part-{v:05d}.parquet", "partitionValues": {}, "size": 500,
                       "modificationTime": t0 + v * 1000, "dataChange": True,
                       "stats": '{"numRecords":1}'}}
        (log / f"{v:020d}.json").write_text(json.dumps(info) + "\n" + json.dumps(add) + "\n")
    for v in range(1, checkpoint_at + 1):
        write(v)
    DeltaTable(str(path)).create_checkpoint()
    for v in range(checkpoint_at + 1, commits):
        write(v)


def prep_delta(commits: int, checkpoint_at: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        table = tmp / "stores" / "events.delta"
        delta_table(table, commits, checkpoint_at)
        ds = new_git_repo(tmp / "ds", env)
        run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
        run([sides.ours, "add", str(table), "--kind", "delta"], ds, env)
        run([sides.ours, "commit", "-m", "events"], ds, env)
        return {"ds": ds, "env": env, "sides": sides, "commits": commits}
    return prepare


def delta_available(sides: Sides) -> None:
    p = subprocess.run([str(sides.ours), "backends", "--json"], capture_output=True, text=True)
    rows = json.loads(p.stdout) if p.returncode == 0 else []
    if not any(r["kind"] == "delta" and r["installed"] for r in rows):
        raise Skip("our tether has no delta backend built in")
    try:
        import deltalake  # noqa: F401
    except ImportError:
        raise Skip("the deltalake package (which writes the table) is not installed")


def check_delta_fingerprint(ctx: dict) -> str:
    out = {}
    for side in ("ours", "ref"):
        p = run([ctx["sides"].exe(side), "status", "--snapshot", "--json"], ctx["ds"], ctx["env"],
                check=False)
        if p.returncode != 0:
            raise Skip(f"{who(side)} `status --snapshot` exited {p.returncode}: "
                       f"{first_line(p.stderr)}")
        out[side] = json.loads(p.stdout)["objects"]
    if out["ours"] != out["ref"]:
        raise Skip("status --snapshot objects differ")
    manifest = (ctx["ds"] / ".tether" / "objects" / "events.toml").read_text()
    version = [ln for ln in manifest.splitlines() if ln.startswith("version")][0]
    return f"same object state on both sides ({out['ours'][0]['state']}, recorded {version})"


def cmds_delta_fingerprint(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "status", "--snapshot"], ctx["ds"])]


def delta_log_argv(ctx: dict, side: str) -> list:
    return [ctx["sides"].exe(side), "log", "events", "-n", str(ctx["commits"]), "--json"]


def check_delta_log(ctx: dict) -> str:
    out = {}
    for side in ("ours", "ref"):
        p = run(delta_log_argv(ctx, side), ctx["ds"], ctx["env"], check=False)
        if p.returncode != 0:
            raise Skip(f"{who(side)} `log` exited {p.returncode}: {first_line(p.stderr)}")
        out[side] = json.loads(p.stdout)
    if out["ours"] != out["ref"]:
        bad = next(i for i, (a, b) in enumerate(zip(out["ours"], out["ref"])) if a != b) \
            if len(out["ours"]) == len(out["ref"]) else "length"
        raise Skip(f"log --json differs (first at entry {bad})")
    return f"identical `log --json` of {len(out['ours'])} entries on both sides"


def cmds_delta_log(ctx: dict, side: str):
    return [(delta_log_argv(ctx, side), ctx["ds"])]


# -- iceberg: fingerprint and log of a table with many snapshots -------------- #
def iceberg_table(tmp: Path, snapshots: int) -> tuple[str, str]:
    """A SQL-catalog (SQLite) table pyiceberg made with one append, whose
    metadata is then grown to `snapshots` appends in one chain (each
    snapshot as pyiceberg writes it, sharing the first's manifest list:
    fingerprint and log read metadata only).  (catalog uri, warehouse)."""
    import warnings
    warnings.simplefilter("ignore")
    import uuid
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    uri, wh = f"sqlite:///{tmp / 'catalog.db'}", f"file://{tmp / 'warehouse'}"
    (tmp / "warehouse").mkdir()
    cat = SqlCatalog("default", uri=uri, warehouse=wh)
    cat.create_namespace("ns")
    t = cat.create_table("ns.events", schema=pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [0]}, schema=pa.schema([("id", pa.int64())])))
    t = cat.load_table("ns.events")
    meta = json.loads(Path(t.metadata_location.removeprefix("file://")).read_text())
    first = meta["snapshots"][0]
    snaps, log, parent = [first], list(meta["snapshot-log"]), first["snapshot-id"]
    for i in range(1, snapshots):
        sid = 1_000_000_000_000 + i
        ts = first["timestamp-ms"] + i
        s = dict(first, **{"snapshot-id": sid, "parent-snapshot-id": parent,
                           "sequence-number": i + 1, "timestamp-ms": ts})
        s["summary"] = dict(first["summary"], **{"total-records": str(i + 1),
                                                 "total-data-files": str(i + 1)})
        snaps.append(s)
        log.append({"snapshot-id": sid, "timestamp-ms": ts})
        parent = sid
    meta.update({"snapshots": snaps, "snapshot-log": log, "current-snapshot-id": parent,
                 "last-sequence-number": snapshots, "last-updated-ms": snaps[-1]["timestamp-ms"],
                 "refs": {"main": {"snapshot-id": parent, "type": "branch"}}})
    old = t.metadata_location
    new = old.rsplit("/", 1)[0] + f"/00002-{uuid.uuid4()}.metadata.json"
    Path(new.removeprefix("file://")).write_text(json.dumps(meta))
    import sqlite3
    db = sqlite3.connect(str(tmp / "catalog.db"))
    db.execute("UPDATE iceberg_tables SET metadata_location = ? WHERE metadata_location = ?",
               (new, old))
    db.commit()
    db.close()
    return uri, wh


def prep_iceberg(snapshots: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        uri, wh = iceberg_table(tmp, snapshots)
        ds = new_git_repo(tmp / "ds", env)
        run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
        secrets = ds / ".tether" / "secrets.toml"
        secrets.write_text("[backends.iceberg]\n"
                           f'catalog = {{ type = "sql", uri = "{uri}", warehouse = "{wh}" }}\n')
        secrets.chmod(0o600)
        run([sides.ours, "add", "events", "--kind", "iceberg", "--table", "ns.events"], ds, env)
        run([sides.ours, "commit", "-m", "events"], ds, env)
        return {"ds": ds, "env": env, "sides": sides, "snapshots": snapshots}
    return prepare


def iceberg_available(sides: Sides) -> None:
    p = subprocess.run([str(sides.ours), "backends", "--json"], capture_output=True, text=True)
    rows = json.loads(p.stdout) if p.returncode == 0 else []
    if not any(r["kind"] == "iceberg" and r["installed"] for r in rows):
        raise Skip("our tether has no iceberg backend built in")
    try:
        import pyiceberg.catalog.sql  # noqa: F401
    except ImportError:
        raise Skip("pyiceberg (which writes the table, and tether-vcs reads it through) "
                   "is not installed")


def iceberg_argv(ctx: dict, side: str, what: str) -> list:
    exe = ctx["sides"].exe(side)
    if what == "fingerprint":
        return [exe, "status", "--snapshot", "--json"]
    return [exe, "log", "events", "-n", str(ctx["snapshots"]), "--json"]


def check_iceberg(what: str):
    def check(ctx: dict) -> str:
        out = {}
        for side in ("ours", "ref"):
            p = run(iceberg_argv(ctx, side, what), ctx["ds"], ctx["env"], check=False)
            if p.returncode != 0:
                raise Skip(f"{who(side)} `{what}` exited {p.returncode}: {first_line(p.stderr)}")
            data = json.loads(p.stdout)
            out[side] = data["objects"] if what == "fingerprint" else data
        if out["ours"] != out["ref"]:
            raise Skip(f"{what} output differs")
        if what == "fingerprint":
            return f"same object state on both sides ({out['ours'][0]['state']})"
        return f"identical `log --json` of {len(out['ours'])} entries on both sides"
    return check


def cmds_iceberg(what: str):
    def cmds(ctx: dict, side: str):
        argv = iceberg_argv(ctx, side, what)
        return [(argv[:-1] if what == "fingerprint" else argv, ctx["ds"])]
    return cmds


# -- lance ---------------------------------------------------------------------- #
def lance_table(versions: int) -> Path:
    """A Lance dataset with `versions` versions (one row appended each), made
    by pylance once under .tmp/bench/ and reused."""
    path = CACHE / f"lance-{versions}" / "t.lance"
    done = path.parent / "done"
    if done.exists():
        return path
    if path.parent.exists():
        shutil.rmtree(path.parent)
    path.parent.mkdir(parents=True)
    script = (
        "import sys, lance, pyarrow as pa\n"
        "p, n = sys.argv[1], int(sys.argv[2])\n"
        "t = lambda k: pa.table({'x': pa.array([k], pa.int64())})\n"
        "ds = lance.write_dataset(t(0), p)\n"
        "for k in range(1, n):\n"
        "    ds = lance.write_dataset(t(k), ds, mode='append')\n"
        "ds.tags.create('first', 1)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path), str(versions)], check=True,
                   timeout=3600)
    done.write_text("ok\n")
    return path


def lance_available(sides: Sides) -> None:
    try:
        import lance  # noqa: F401
    except ImportError as exc:
        raise Skip(f"pylance is not installed here ({exc})")


def prep_lance(versions: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        table = lance_table(versions)
        ds = new_git_repo(tmp / "ds", env)
        run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
        run([sides.ours, "add", "tbl", str(table), "--kind", "lance"], ds, env)
        return {"ds": ds, "env": env, "sides": sides, "versions": versions}
    return prepare


def lance_args(ctx: dict, what: str) -> list[str]:
    if what == "fingerprint":
        return ["snapshot", "--json"]
    return ["log", "tbl", "-n", str(ctx["versions"]), "--json"]


def check_lance(what: str):
    def check(ctx: dict) -> str:
        got = {}
        for side in ("ours", "ref"):
            p = run([ctx["sides"].exe(side), *lance_args(ctx, what)], ctx["ds"], ctx["env"],
                    check=False)
            if p.returncode != 0:
                raise Skip(f"{who(side)} `{' '.join(lance_args(ctx, what))}` exited "
                           f"{p.returncode}: {first_line(p.stderr)}")
            got[side] = json.loads(p.stdout)
        if got["ours"] != got["ref"]:
            raise Skip(f"{what} output differs between the two sides")
        if what == "fingerprint":
            return f"same state {got['ours']['tbl']} on both sides"
        return f"same {len(got['ours'])} log entries on both sides"
    return check


def cmds_lance(what: str):
    def cmds(ctx: dict, side: str):
        return [([ctx["sides"].exe(side), *lance_args(ctx, what)], ctx["ds"])]
    return cmds


# -- icechunk ------------------------------------------------------------------ #
ICECHUNK_BUILD = """
import sys
import icechunk as ic, zarr
repo = ic.Repository.create(ic.local_filesystem_storage(sys.argv[1]))
for k in range(int(sys.argv[2]) - 1):
    s = repo.writable_session("main")
    g = zarr.open_group(store=s.store, mode="a")
    g.attrs["k"] = k
    s.commit(f"commit {k}")
"""

ICECHUNK_COMMIT = """
import sys
import icechunk as ic, zarr
repo = ic.Repository.open(ic.local_filesystem_storage(sys.argv[1]))
s = repo.writable_session("main")
g = zarr.open_group(store=s.store, mode="a")
g.attrs["bench"] = sys.argv[2]
s.commit("bench " + sys.argv[2])
"""


def icechunk_repo(n: int) -> Path:
    """A spec-1 repository (icechunk 1.x, what tether-vcs drives here) with n
    snapshots on main, built once under .tmp/bench/."""
    path = CACHE / f"icechunk-{n}-v{HISTORY_FORMAT}"
    if not (path / "refs").is_dir():
        if path.exists():
            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ICECHUNK_LOG": "error"}
        subprocess.run([sys.executable, "-c", ICECHUNK_BUILD, str(path), str(n)], env=env,
                       check=True, capture_output=True, timeout=3600)
    return path


def prep_icechunk(n: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        env["ICECHUNK_LOG"] = "error"
        src = icechunk_repo(n)
        ctx = {"env": env, "sides": sides, "n": n, "reps": 0}
        for side in ("ours", "ref"):
            repo = tmp / side / "arr.icechunk"
            shutil.copytree(src, repo)
            ds = new_git_repo(tmp / side / "ds", env)
            exe = sides.exe(side)
            run([exe, "init", "--dataset-id", DATASET_ID], ds, env)
            run([exe, "add", "arr", str(repo), "--kind", "icechunk"], ds, env)
            run([exe, "commit", "-m", "first"], ds, env)
            ctx[side] = {"ds": ds, "repo": repo}
        return ctx
    return prepare


def check_icechunk_same(argv_tail: list[str]):
    def check(ctx: dict) -> str:
        out = {}
        for side in ("ours", "ref"):
            p = run([ctx["sides"].exe(side), *argv_tail, "--json"], ctx[side]["ds"], ctx["env"],
                    check=False)
            if p.returncode != 0:
                raise Skip(f"{who(side)} `{' '.join(argv_tail)}` exited {p.returncode}: "
                           f"{first_line(p.stderr)}")
            # each side pins its own copy of the repository (another path,
            # so another identity and pin id): pin names are compared by shape
            out[side] = json.loads(re.sub(r'"tether\.[0-9a-f]{8}\.[0-9a-f]{16}"', '"tether.<pin>"',
                                          p.stdout))
        if out["ours"] != out["ref"]:
            raise Skip(f"`{' '.join(argv_tail)} --json` differs")
        n = len(out["ours"]) if isinstance(out["ours"], list) else 1
        return f"same `{' '.join(argv_tail)} --json` on both sides ({n} entries)"
    return check


def cmds_icechunk(argv_tail: list[str]):
    def cmds(ctx: dict, side: str):
        return [([ctx["sides"].exe(side), *argv_tail], ctx[side]["ds"])]
    return cmds


def before_icechunk_pin(ctx: dict, side: str) -> None:
    ctx["reps"] += 1
    subprocess.run([sys.executable, "-c", ICECHUNK_COMMIT, str(ctx[side]["repo"]),
                    f"{side}-{ctx['reps']}"], env=ctx["env"], check=True, capture_output=True)


def check_icechunk_pin(ctx: dict) -> str:
    pins = {}
    for side in ("ours", "ref"):
        before_icechunk_pin(ctx, side)
        p = run([ctx["sides"].exe(side), "commit", "-m", "check", "--json"], ctx[side]["ds"],
                ctx["env"], check=False)
        if p.returncode != 0:
            raise Skip(f"{who(side)} `commit` exited {p.returncode}: {first_line(p.stderr)}")
        pins[side] = json.loads(p.stdout).get("pinned", {}).get("arr")
        if not pins[side]:
            raise Skip(f"{who(side)} pinned nothing")
        tag = ctx[side]["repo"] / "refs" / f"tag.{pins[side]}" / "ref.json"
        if not tag.is_file():
            raise Skip(f"{who(side)}'s pin {pins[side]} is not an icechunk tag")
    return "both sides pin the new head as an icechunk tag"


def cmds_icechunk_pin(ctx: dict, side: str):
    ctx["reps"] += 1
    return [([ctx["sides"].exe(side), "commit", "-m", f"rep {ctx['reps']}"], ctx[side]["ds"])]


# -- ducklake: fingerprint and log of a catalog with many snapshots ------- #
DUCKLAKE_EXTENSIONS = ("ducklake", "sqlite_scanner")

DUCKLAKE_BUILD = """
import sys, duckdb
con = duckdb.connect()
con.execute(f"SET extension_directory = '{sys.argv[3]}'")
for n in sys.argv[4].split(","):
    con.execute(f"LOAD {n}")
con.execute(f"ATTACH 'ducklake:sqlite:{sys.argv[1]}' AS lake (DATA_PATH '{sys.argv[1]}.files/')")
con.execute("CREATE TABLE lake.events (k BIGINT, v VARCHAR)")
for k in range(int(sys.argv[2]) - 2):
    con.execute(f"INSERT INTO lake.events VALUES ({k}, 'e{k}')")
con.execute("DETACH lake")
"""


def ducklake_install(home: Path) -> Path:
    """The ducklake + sqlite extensions, installed from their PyPI wheels
    into home's DuckDB extension directory (tether-vcs loads them there)."""
    import duckdb
    site = Path(duckdb.__file__).resolve().parents[1]
    ext = home / ".duckdb" / "extensions"
    con = duckdb.connect()
    con.execute(f"SET extension_directory = '{ext}'")
    for name in DUCKLAKE_EXTENSIONS:
        found = sorted(site.glob(f"duckdb_extension_{name}/extensions/*/{name}.duckdb_extension"))
        if not found:
            raise Skip(f"duckdb-extension-{name.split('_')[0]} is not installed here")
        con.execute(f"INSTALL '{found[0]}'")
    con.close()
    return ext


def ducklake_catalog(snapshots: int, ext: Path) -> Path:
    """A SQLite-backed DuckLake catalog with `snapshots` snapshots (schema,
    table, then one small insert each), written by DuckDB once under
    .tmp/bench/ and reused."""
    path = CACHE / f"ducklake-{snapshots}" / "meta.sqlite"
    done = path.parent / "done"
    if done.exists():
        return path
    if path.parent.exists():
        shutil.rmtree(path.parent)
    path.parent.mkdir(parents=True)
    subprocess.run([sys.executable, "-c", DUCKLAKE_BUILD, str(path), str(snapshots), str(ext),
                    ",".join(DUCKLAKE_EXTENSIONS)], check=True, timeout=3600)
    done.write_text("ok\n")
    return path


def ducklake_available(sides: Sides) -> None:
    p = subprocess.run([str(sides.ours), "backends", "--json"], capture_output=True, text=True)
    rows = json.loads(p.stdout) if p.returncode == 0 else []
    if not any(r["kind"] == "ducklake" and r["installed"] for r in rows):
        raise Skip("our tether has no ducklake backend built in")
    try:
        import duckdb  # noqa: F401
    except ImportError:
        raise Skip("duckdb (which writes the catalog) is not installed")


def prep_ducklake(snapshots: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        home = tmp / "home"
        home.mkdir()
        env = isolated_env(home)
        meta = ducklake_catalog(snapshots, ducklake_install(home))
        ds = new_git_repo(tmp / "ds", env)
        run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
        run([sides.ours, "add", "lake", f"sqlite:{meta}", "--kind", "ducklake"], ds, env)
        return {"ds": ds, "env": env, "sides": sides, "snapshots": snapshots}
    return prepare


def ducklake_args(ctx: dict, what: str) -> list[str]:
    if what == "fingerprint":
        return ["snapshot", "--json"]
    return ["log", "lake", "-n", str(ctx["snapshots"]), "--json"]


def check_ducklake(what: str):
    def check(ctx: dict) -> str:
        got = {}
        for side in ("ours", "ref"):
            p = run([ctx["sides"].exe(side), *ducklake_args(ctx, what)], ctx["ds"], ctx["env"],
                    check=False)
            if p.returncode != 0:
                raise Skip(f"{who(side)} `{' '.join(ducklake_args(ctx, what))}` exited "
                           f"{p.returncode}: {first_line(p.stderr)}")
            got[side] = json.loads(p.stdout)
        if got["ours"] != got["ref"]:
            raise Skip(f"{what} output differs between the two sides")
        if what == "fingerprint":
            return f"same state {got['ours']['lake']} on both sides"
        return f"same {len(got['ours'])} log entries on both sides"
    return check


def cmds_ducklake(what: str):
    def cmds(ctx: dict, side: str):
        return [([ctx["sides"].exe(side), *ducklake_args(ctx, what)], ctx["ds"])]
    return cmds


# -- s3-prefix: fingerprint of a large prefix on a local S3 server ---------- #
S3_AK, S3_SK, S3_BUCKET = "bench-ak", "bench-secret-key", "bench"


def seaweed_bin() -> Path:
    out = subprocess.run([str(ROOT / "scripts" / "objstore-tools.sh"), "path", "seaweedfs"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def s3_prefix_available(sides: Sides) -> None:
    if not seaweed_bin().exists():
        raise Skip("SeaweedFS is not installed (scripts/objstore-tools.sh install seaweedfs)")
    try:
        import boto3  # noqa: F401
    except ImportError as exc:
        raise Skip("boto3 is not installed (tests/requirements.txt)") from exc


def _low_port() -> int:
    """A free port p with p + 10000 (SeaweedFS's gRPC port) below 65536."""
    import socket
    for _ in range(200):
        with socket.socket() as so:
            so.bind(("127.0.0.1", 0))
            p = so.getsockname()[1]
        if 1024 < p < 50000:
            return p
    raise Skip("no free port below 50000 for SeaweedFS")


def _start_seaweed(tmp: Path) -> tuple[subprocess.Popen, str]:
    data, cfg = tmp / "weed-data", tmp / "s3.json"
    data.mkdir()
    cfg.write_text(json.dumps({"identities": [{"name": "bench", "credentials": [
        {"accessKey": S3_AK, "secretKey": S3_SK}], "actions": ["Admin", "Read", "List", "Write"]}]}))
    s3 = _low_port()
    argv = [str(seaweed_bin()), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
            f"-master.port={_low_port()}", f"-volume.port={_low_port()}", "-filer",
            f"-filer.port={_low_port()}", "-s3", f"-s3.port={s3}", f"-s3.config={cfg}", "-volume.max=8"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{s3}"
    import urllib.request
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError as exc:  # an HTTP error answer means it is up
            if hasattr(exc, "code"):
                break
            time.sleep(0.5)
    else:
        proc.kill()
        raise Skip("SeaweedFS did not start within 120 s")
    return proc, url


def _s3_client(url: str):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=S3_AK, aws_secret_access_key=S3_SK,
                        region_name="us-east-1", config=Config(max_pool_connections=32))


def _pb_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def _pb_int(num: int, v: int) -> bytes:
    return _pb_varint(num << 3) + _pb_varint(v)


def _pb_bytes(num: int, b: bytes) -> bytes:
    return _pb_varint(num << 3 | 2) + _pb_varint(len(b)) + b


def _weed_meta(path: Path, directory: str, names: list[str], body: Callable[[int], bytes]) -> None:
    """A file in SeaweedFS's `fs.meta.save` format (each record a 4-byte
    big-endian length and a filer_pb.FullEntry: dir = 1, entry = 2; Entry
    name = 1, attributes = 4, content = 9; FuseAttributes file_size = 1,
    mtime = 2, file_mode = 3, crtime = 6, md5 = 14) holding one regular file
    per name with its content inline, as the filer keeps small objects, and
    the MD5 that the S3 gateway answers as its ETag."""
    import hashlib
    import struct
    now = int(time.time())
    with open(path, "wb") as f:
        for i, name in enumerate(names):
            data = body(i)
            attrs = (_pb_int(1, len(data)) + _pb_int(2, now) + _pb_int(3, 0o660) + _pb_int(6, now)
                     + _pb_bytes(14, hashlib.md5(data).digest()))
            entry = _pb_bytes(1, name.encode()) + _pb_bytes(4, attrs) + (_pb_bytes(9, data) if data else b"")
            rec = _pb_bytes(1, directory.encode()) + _pb_bytes(2, entry)
            f.write(struct.pack(">I", len(rec)) + rec)


def _seed_seaweed(tmp: Path, proc: subprocess.Popen, client, n: int) -> None:
    """n keys big/NNNNNN of 0-6 bytes written into the bucket through the
    filer's bulk metadata load (`weed shell` `fs.meta.load`: about 12,000
    keys a second here, where S3 PUTs from 16 threads write about 240), then
    checked through the S3 gateway: a GET of sampled keys answers their
    bytes and their MD5 as ETag."""
    import hashlib
    width = max(6, len(str(n - 1)))
    names = [f"{i:0{width}d}" for i in range(n)]
    body = lambda i: b"x" * (i % 7)  # noqa: E731
    meta = tmp / "keys.meta"
    _weed_meta(meta, f"/buckets/{S3_BUCKET}/big", names, body)
    port = lambda flag: next(a.split("=", 1)[1] for a in proc.args if a.startswith(f"-{flag}.port="))  # noqa: E731
    p = subprocess.run([str(seaweed_bin()), "shell", f"-master=127.0.0.1:{port('master')}",
                        f"-filer=127.0.0.1:{port('filer')}"],
                       input=f"fs.meta.load -v=false -concurrency=64 {meta}\n", text=True,
                       capture_output=True, timeout=3600)
    if p.returncode != 0 or f"total 0 directories, {n} files" not in p.stdout:
        raise Skip(f"SeaweedFS fs.meta.load did not load the {n} keys: "
                   f"{first_line(p.stderr) or p.stdout.strip()[-200:]}")
    meta.unlink()
    for i in sorted({0, 1, n // 2, n - 1}):
        got = client.get_object(Bucket=S3_BUCKET, Key=f"big/{names[i]}")
        if got["Body"].read() != body(i) or got["ETag"].strip('"') != hashlib.md5(body(i)).hexdigest():
            raise Skip(f"SeaweedFS does not answer big/{names[i]} as loaded")


def _s3_datasets(tmp: Path, sides: Sides, url: str, ctx: dict) -> None:
    """Both sides' datasets, each tracking s3://bench/big/ at url."""
    home = tmp / "home"
    home.mkdir()
    env = isolated_env(home)
    ctx["env"] = env
    for side in ("ours", "ref"):
        ds = new_git_repo(tmp / f"ds-{side}", env)
        exe = sides.exe(side)
        run([exe, "init", "--dataset-id", DATASET_ID], ds, env)
        with open(ds / "tether.toml", "a") as f:
            f.write("\n[backends.file]\nstorage_options = { allow_http = true }\n")
        sec = ds / ".tether" / "secrets.toml"
        sec.write_text(f'[uris."s3://{S3_BUCKET}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
                       f'access_key_id = "{S3_AK}"\nsecret_access_key = "{S3_SK}"\n')
        sec.chmod(0o600)
        run([exe, "add", "big", f"s3://{S3_BUCKET}/big/", "--kind", "file"], ds, env)
        ctx[f"ds-{side}"] = ds


def prep_s3_prefix(n: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        proc, url = _start_seaweed(tmp)
        ctx = {"proc": proc, "url": url, "sides": sides, "n": n}
        try:
            client = _s3_client(url)
            deadline = time.time() + 60
            while True:  # the filer may come up after the S3 port answers
                try:
                    client.create_bucket(Bucket=S3_BUCKET)
                    break
                except Exception:  # noqa: BLE001 - retried until the deadline
                    if time.time() > deadline:
                        raise
                    time.sleep(1)
            _seed_seaweed(tmp, proc, client, n)
            _s3_datasets(tmp, sides, url, ctx)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        return ctx
    return prepare


def check_s3_prefix(ctx: dict) -> str:
    got = {}
    for side in ("ours", "ref"):
        p = run([ctx["sides"].exe(side), "snapshot", "--json"], ctx[f"ds-{side}"], ctx["env"], check=False)
        if p.returncode != 0:
            raise Skip(f"{who(side)} `snapshot --json` exited {p.returncode}: {first_line(p.stderr)}")
        got[side] = json.loads(p.stdout)
    def state(out):
        objs = out.get("objects", out) if isinstance(out, dict) else out
        return json.dumps(objs, sort_keys=True)
    if state(got["ours"]) != state(got["ref"]):
        raise Skip("the two sides' snapshots differ")
    return f"same snapshot of the {ctx['n']}-key prefix on both sides"


def cmds_s3_prefix(ctx: dict, side: str):
    return [([ctx["sides"].exe(side), "snapshot", "--json"], ctx[f"ds-{side}"])]


def sum_s3_prefix(ctx: dict, res: "Result") -> str:
    """A plain paged LIST of the same prefix with boto3 (the provider's SDK),
    timed the same way in the same run."""
    client = _s3_client(ctx["url"])
    times = []
    for _ in range(max(3, len(res.times["ours"]) // 2)):
        t0 = time.perf_counter()
        n = 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix="big/"):
            n += len(page.get("Contents", []))
        times.append(time.perf_counter() - t0)
    g = statistics.median(times)
    res.extra.update(plain_list_median_s=g, plain_list_min_s=min(times), ours_over_plain_list=res.med("ours") / g)
    return (f"plain paged LIST of the same {n} keys with boto3: {g * 1e3:.0f} / {min(times) * 1e3:.0f} ms "
            f"(median / min); ours is {res.med('ours') / g:.2f}× the plain LIST")


def _rusage_run(argv: list, cwd: Path, env: dict[str, str]) -> dict:
    """One run of argv with the child's own figures: wall, user+sys CPU
    seconds and peak RSS (MiB), from wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errs:
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(a) for a in argv], cwd=str(cwd), env=env, stdout=out, stderr=errs)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        errs.seek(0)
        text, etext = out.read().decode(), errs.read().decode(errors="replace")
    if proc.returncode != 0:
        raise Skip(f"`{' '.join(str(a) for a in argv[1:])}` exited {proc.returncode}: {first_line(etext)}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "rss_mib": ru.ru_maxrss / 1024,
            "stdout": text}


def responder_available(sides: Sides) -> None:
    try:
        import boto3  # noqa: F401
    except ImportError as exc:
        raise Skip("boto3 is not installed (tests/requirements.txt)") from exc


def prep_responder_prefix(n: int):
    """An s3:// prefix of n keys served by bench/list_responder.py (pages made
    once in memory, so the client is what is measured), both sides' datasets
    tracking it."""
    def prepare(tmp: Path, sides: Sides) -> dict:
        port = _low_port()
        log = tmp / "responder.log"
        proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "list_responder.py"), "--keys", str(n),
                                 "--bucket", S3_BUCKET, "--prefix", "big/", "--port", str(port)],
                                stdout=open(log, "w"), stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        ctx = {"proc": proc, "url": url, "sides": sides, "n": n}
        try:
            import urllib.request
            wait_for("the LIST responder", lambda: urllib.request.urlopen(
                f"{url}/{S3_BUCKET}?list-type=2&max-keys=1", timeout=2).status == 200, proc, log, 30)
            _s3_datasets(tmp, sides, url, ctx)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        return ctx
    return prepare


def check_responder_prefix(ctx: dict) -> str:
    """Both sides' snapshot once (the warm-up), with their CPU and peak RSS."""
    got = {}
    for side in ("ours", "ref"):
        r = _rusage_run([ctx["sides"].exe(side), "snapshot", "--json"], ctx[f"ds-{side}"], ctx["env"])
        ctx[f"rusage-{side}"] = r
        got[side] = json.dumps(json.loads(r["stdout"]), sort_keys=True)
    if got["ours"] != got["ref"]:
        raise Skip("the two sides' snapshots differ")
    return f"same snapshot of the {ctx['n']}-key prefix on both sides"


def _client_figures(ctx: dict, res: "Result") -> str:
    """Client CPU per 10^6 keys and peak RSS of each side (their check run)."""
    per = ctx["n"] / 1e6
    o, r = ctx["rusage-ours"], ctx["rusage-ref"]
    cpu_o, cpu_r = o["cpu_s"] / per, r["cpu_s"] / per
    res.extra.update(ours_cpu_s_per_1e6=cpu_o, ref_cpu_s_per_1e6=cpu_r, cpu_ratio=cpu_o / cpu_r,
                     ours_rss_mib=o["rss_mib"], ref_rss_mib=r["rss_mib"])
    return (f"client CPU per 10^6 keys: ours {cpu_o:.2f} s, tether-vcs {cpu_r:.2f} s "
            f"(ours/tether-vcs {cpu_o / cpu_r:.2f}); peak RSS ours {o['rss_mib']:.0f} MiB, "
            f"tether-vcs {r['rss_mib']:.0f} MiB")


def sum_responder_prefix(ctx: dict, res: "Result") -> str:
    """Each side's client figures, and a plain paged LIST with boto3 of 10^5
    of the keys (big/000), its wall scaled to the whole prefix (a paged LIST
    is linear in its pages; boto3 lists about 4,000 keys a second here, the
    whole prefix would take hours)."""
    n = ctx["n"]
    client = _s3_client(ctx["url"])
    t0 = time.perf_counter()
    k = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=S3_BUCKET, Prefix="big/000"):
        k += len(page.get("Contents", []))
    boto = (time.perf_counter() - t0) * n / k
    res.extra.update(boto3_list_s_scaled=boto, boto3_keys_listed=k, ours_over_boto3=res.med("ours") / boto)
    return (f"{_client_figures(ctx, res)}; boto3 paged LIST of {k} keys scaled to {n}: "
            f"{boto:.0f} s, ours is {res.med('ours') / boto:.3f}× that")


def sum_seaweed_prefix(ctx: dict, res: "Result") -> str:
    """Each side's client figures, and a plain paged LIST with boto3 of the
    whole prefix on the same server, timed the same way in the same run."""
    return f"{_client_figures(ctx, res)}; {sum_s3_prefix(ctx, res)}"


def installed_kind(sides: Sides, kind: str) -> None:
    """Skip unless our binary has `kind` built in."""
    p = subprocess.run([str(sides.ours), "backends", "--json"], capture_output=True, text=True)
    rows = json.loads(p.stdout) if p.returncode == 0 else []
    if not any(r["kind"] == kind and r["installed"] for r in rows):
        raise Skip(f"our tether has no {kind} backend built in")


def check_same_json(argv_tail: Callable[[dict], list[str]], ds_of: Callable[[dict, str], Path],
                    normalize: Callable[[object], object] = lambda v: v,
                    describe: Callable[[object], str] = lambda v: "") -> Callable[[dict], str]:
    """A check running `tether <argv_tail> ` (a --json command) on both
    sides, each in its dataset, demanding the same parsed output (after
    `normalize`)."""
    def check(ctx: dict) -> str:
        got = {}
        for side in ("ours", "ref"):
            argv = argv_tail(ctx)
            p = run([ctx["sides"].exe(side), *argv], ds_of(ctx, side), ctx["env"], check=False)
            if p.returncode != 0:
                raise Skip(f"{who(side)} `{' '.join(argv)}` exited {p.returncode}: "
                           f"{first_line(p.stderr)}")
            try:
                got[side] = normalize(json.loads(p.stdout))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise Skip(f"{who(side)} `{' '.join(argv)}`: unexpected output ({exc}): "
                           f"{p.stdout[:200]!r}") from None
        if got["ours"] != got["ref"]:
            raise Skip(f"`{' '.join(argv_tail(ctx))}` differs: ours {str(got['ours'])[:200]} vs "
                       f"tether-vcs {str(got['ref'])[:200]}")
        return f"same `{' '.join(argv_tail(ctx))}` on both sides{describe(got['ours'])}"
    return check


def cmds_json(argv_tail: Callable[[dict], list[str]], ds_of: Callable[[dict, str], Path]):
    def cmds(ctx: dict, side: str):
        return [([ctx["sides"].exe(side), *argv_tail(ctx)], ds_of(ctx, side))]
    return cmds


def one_ds(ctx: dict, side: str) -> Path:
    return ctx["ds"]


def side_ds(ctx: dict, side: str) -> Path:
    return ctx[f"ds-{side}"]


def wait_for(what: str, ready: Callable[[], bool], proc: subprocess.Popen | None,
             log: Path | None, seconds: float = 120) -> None:
    """Poll `ready` until it holds; Skip (with the log's tail) when the
    server exits or the time is up."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if ready():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            tail = log.read_text()[-400:] if log and log.exists() else ""
            raise Skip(f"{what} did not start: {tail.strip() or 'no output'}")
        time.sleep(0.2)


def free_port() -> int:
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- dolt: fingerprint and log of a database with many commits -------------- #
DOLT_USER, DOLT_PASSWORD, DOLT_DB = "bench", "bench-D0lt pw", "benchdb"


def real_dolt() -> Path | None:
    """The `dolt` binary to run a real `dolt sql-server` with: $TETHER_BENCH_DOLT,
    else `dolt` on PATH; None means the test server of tests/servers/dolt."""
    given = os.environ.get("TETHER_BENCH_DOLT") or shutil.which("dolt")
    return Path(given) if given else None


def dolt_available(sides: Sides) -> None:
    installed_kind(sides, "dolt")
    try:
        import pymysql  # noqa: F401
    except ImportError as exc:
        raise Skip("pymysql (which writes the commits) is not installed "
                   "(tests/requirements.txt)") from exc
    exe = real_dolt()
    if exe is not None and not os.access(exe, os.X_OK):
        raise Skip(f"TETHER_BENCH_DOLT={exe} is not an executable dolt")
    if exe is None:
        script = ROOT / "scripts" / "dolt-test-server.sh"
        p = subprocess.run([str(script), "build"], capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            raise Skip(f"the dolt test server could not be built: {first_line(p.stderr)}")


def _start_dolt(tmp: Path) -> tuple[subprocess.Popen, int, str]:
    """A Dolt server on 127.0.0.1 with database DOLT_DB and user DOLT_USER
    (password DOLT_PASSWORD): a real `dolt sql-server` or the test server.
    (process, port, what it is)."""
    import pymysql
    port = free_port()
    log = tmp / "dolt-server.log"
    exe = real_dolt()
    if exe is None:
        server = Path(subprocess.run([str(ROOT / "scripts" / "dolt-test-server.sh"), "path"],
                                     capture_output=True, text=True, check=True).stdout.strip())
        with open(log, "w") as out:
            proc = subprocess.Popen([str(server), "-addr", f"127.0.0.1:{port}", "-db", DOLT_DB,
                                     "-user", DOLT_USER, "-password", DOLT_PASSWORD],
                                    stdout=out, stderr=subprocess.STDOUT)
        wait_for("the dolt test server", lambda: pymysql.connect(
            host="127.0.0.1", port=port, user=DOLT_USER, password=DOLT_PASSWORD,
            database=DOLT_DB).close() is None, proc, log)
        return proc, port, "the test server of tests/servers/dolt"
    home, data = tmp / "dolt-home", tmp / "dolt-data"
    home.mkdir()
    data.mkdir()
    env = {**os.environ, "HOME": str(home), "DOLT_ROOT_PATH": str(home)}
    for key, value in (("user.name", "Bench"), ("user.email", "bench@example.com")):
        subprocess.run([str(exe), "config", "--global", "--add", key, value], env=env,
                       check=True, capture_output=True)
    with open(log, "w") as out:
        proc = subprocess.Popen([str(exe), "sql-server", "--host", "127.0.0.1", "--port",
                                 str(port), "--data-dir", str(data)], cwd=data, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for("dolt sql-server", lambda: pymysql.connect(
            host="127.0.0.1", port=port, user="root", password="").close() is None, proc, log)
        con = pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                              autocommit=True)
        with con.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DOLT_DB}")
            cur.execute(f"CREATE USER '{DOLT_USER}'@'%%' IDENTIFIED BY %s", (DOLT_PASSWORD,))
            cur.execute(f"GRANT ALL ON *.* TO '{DOLT_USER}'@'%'")
        con.close()
    except BaseException:
        stop(proc)
        raise
    version = first_line(subprocess.run([str(exe), "version"], capture_output=True, text=True,
                                        env=env).stdout)
    return proc, port, f"a real `dolt sql-server` ({version})"


def prep_dolt(commits: int, tag_every: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        import pymysql
        proc, port, what = _start_dolt(tmp)
        ctx = {"proc": proc, "sides": sides, "commits": commits, "server": what}
        try:
            con = pymysql.connect(host="127.0.0.1", port=port, user=DOLT_USER,
                                  password=DOLT_PASSWORD, database=DOLT_DB, autocommit=True)
            with con.cursor() as cur:
                cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))")
                made = 0
                while True:
                    cur.execute("SELECT COUNT(*) FROM dolt_log")
                    have = cur.fetchone()[0]
                    if have >= commits:
                        break
                    cur.execute("INSERT INTO t VALUES (%s, %s)", (made, f"row {made}"))
                    cur.execute("CALL DOLT_COMMIT('-A', '-m', %s)", (f"row {made}",))
                    made += 1
                    if made % tag_every == 0:
                        cur.execute("CALL DOLT_TAG(%s, 'main')", (f"v{made // tag_every}",))
            con.close()
            home = tmp / "home"
            home.mkdir()
            env = isolated_env(home)
            ds = new_git_repo(tmp / "ds", env)
            run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
            sec = ds / ".tether" / "secrets.toml"
            sec.write_text(f'[uris."mysql://127.0.0.1:{port}"]\nuser = "{DOLT_USER}"\n'
                           f'password = "{DOLT_PASSWORD}"\n')
            sec.chmod(0o600)
            run([sides.ours, "add", "db", "--kind", "dolt", "--database", DOLT_DB, "--host",
                 "127.0.0.1", "--port", str(port)], ds, env)
            ctx.update(ds=ds, env=env)
        except BaseException:
            stop(proc)
            raise
        return ctx
    return prepare


def dolt_args(what: str) -> Callable[[dict], list[str]]:
    if what == "fingerprint":
        return lambda ctx: ["snapshot", "--json"]
    return lambda ctx: ["log", "db", "-n", str(ctx["commits"]), "--json"]


def dolt_describe(what: str) -> Callable[[object], str]:
    if what == "fingerprint":
        return lambda v: f" (commit {v['db']['commit'][:12]})"
    return lambda v: (f" ({len(v)} entries, {sum(1 for e in v for r in e.get('refs', []) if r.startswith('v'))}"
                      " tags marked)")


def check_dolt(what: str) -> Callable[[dict], str]:
    inner = check_same_json(dolt_args(what), one_ds, describe=dolt_describe(what))
    return lambda ctx: inner(ctx) + f"; server: {ctx['server']}"


# -- neon: fingerprint through the API fake ---------------------------------- #
def neon_fake_module():
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import neon_fake  # noqa: E402  (tests/support/neon_fake.py)
    return neon_fake


def neon_available(sides: Sides) -> None:
    installed_kind(sides, "neon")
    try:
        nf = neon_fake_module()
        import openapi_core  # noqa: F401
    except ImportError as exc:
        raise Skip(f"the Neon API fake cannot run here ({exc}; tests/requirements.txt)") from exc
    if not nf.spec_path().exists():
        raise Skip(f"Neon's API spec is not installed: {nf.spec_path()} (scripts/setup.sh)")
    if not (nf.PG_BIN / "initdb").exists():
        raise Skip(f"PostgreSQL 15 is not installed in {nf.PG_BIN} (TETHER_PG_BIN)")


def prep_neon(rows: int, branches: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        nf = neon_fake_module()
        # its own directory under /tmp: PostgreSQL runs as another user
        # (the fake chowns it) and cannot enter the private tmp
        fake = nf.FakeNeon(Path(tempfile.mkdtemp(prefix="tether-bench-neon-")))
        ctx = {"close": fake.close, "sides": sides, "branches": branches}
        try:
            fake.psql("main", f"INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, {rows}) g")
            with fake.lock:
                for i in range(branches):
                    fake._create_branch({"branch": {"name": f"dev-{i}"}})
            home = tmp / "home"
            home.mkdir()
            env = isolated_env(home)
            env["NEON_API_KEY"] = fake.api_key
            ds = new_git_repo(tmp / "ds", env)
            run([sides.ours, "init", "--dataset-id", DATASET_ID], ds, env)
            sec = ds / ".tether" / "secrets.toml"
            sec.write_text(f'[backends.neon]\napi_url = "{fake.url}"\n')
            sec.chmod(0o600)
            run([sides.ours, "add", "db", "--kind", "neon", "--project-id", nf.PROJECT,
                 "--database", "app", "--role", nf.ROLE], ds, env)
            ctx.update(ds=ds, env=env, fake=fake)
        except BaseException:
            fake.close()
            raise
        return ctx
    return prepare


def check_neon(ctx: dict) -> str:
    inner = check_same_json(lambda c: ["snapshot", "--json"], one_ds,
                            describe=lambda v: f" (lsn {v['db']['lsn']}, commit_xid "
                                               f"{v['db']['commit_xid']}, branch {v['db']['branch']})")
    try:
        text = inner(ctx)
    except Skip:
        # The LSN is the WAL position each probe reads: a checkpoint between
        # the two sides' runs moves it.  Once more, back to back.
        text = inner(ctx)
    fake = ctx["fake"]
    fake.settle()
    if fake.violations:
        raise Skip(f"the Neon fake saw requests outside the API spec: {fake.violations[0]}")
    return text + f"; a project of {ctx['branches'] + 1} branches on the fake"


# -- gs:// and az:// prefixes on the emulators ------------------------------- #
GCS_BUCKET, AZ_CONTAINER = "bench-gcs", "bench-az"
AZ_ACCOUNT = "devstoreaccount1"
# Azurite's published development key (not a secret).
AZ_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def objstore_tool(name: str) -> Path:
    return Path(subprocess.run([str(ROOT / "scripts" / "objstore-tools.sh"), "path", name],
                               capture_output=True, text=True, check=True).stdout.strip())


def prefix_available(tool: str) -> Callable[[Sides], None]:
    def available(sides: Sides) -> None:
        if not os.access(objstore_tool(tool), os.X_OK):
            raise Skip(f"{tool} is not installed (scripts/objstore-tools.sh install {tool})")
        try:
            import obstore  # noqa: F401
        except ImportError as exc:
            raise Skip("obstore (tether-vcs's object-store extra) is not installed") from exc
    return available


def _put_many(n: int, put: Callable[[int], None]) -> None:
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(put, range(n)))


def prefix_datasets(tmp: Path, sides: Sides, env: dict[str, str], uri: str, ctx: dict) -> None:
    """A dataset per side (each side adds the object itself), reaching the
    emulator over http."""
    for side in ("ours", "ref"):
        ds = new_git_repo(tmp / f"ds-{side}", env)
        exe = sides.exe(side)
        run([exe, "init", "--dataset-id", DATASET_ID], ds, env)
        with open(ds / "tether.toml", "a") as f:
            f.write("\n[backends.file]\nstorage_options = { allow_http = true }\n")
        run([exe, "add", "big", uri, "--kind", "file"], ds, env)
        ctx[f"ds-{side}"] = ds


def prep_gcs_prefix(n: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        import urllib.parse
        import urllib.request
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [str(objstore_tool("fake-gcs-server")), "-backend", "memory", "-scheme", "http",
             "-host", "127.0.0.1", "-port", str(port), "-public-host", f"127.0.0.1:{port}",
             "-external-url", url, "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ctx = {"proc": proc, "sides": sides, "n": n}
        try:
            wait_for("fake-gcs-server", lambda: urllib.request.urlopen(
                f"{url}/storage/v1/b", timeout=2).status == 200, proc, None)
            req = urllib.request.Request(f"{url}/storage/v1/b", method="POST",
                                         data=json.dumps({"name": GCS_BUCKET}).encode(),
                                         headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req).read()

            def put(i: int) -> None:  # the JSON API (the emulator takes no XML PUT)
                q = urllib.parse.urlencode({"uploadType": "media", "name": f"big/{i:06d}"})
                r = urllib.request.Request(f"{url}/upload/storage/v1/b/{GCS_BUCKET}/o?{q}",
                                           method="POST", data=b"x" * (i % 7),
                                           headers={"Content-Type": "application/octet-stream"})
                urllib.request.urlopen(r).read()
            _put_many(n, put)
            home = tmp / "home"
            home.mkdir()
            env = isolated_env(home)
            sa = tmp / "gcs-emulator.json"
            sa.write_text(json.dumps({"gcs_base_url": url, "disable_oauth": True,
                                      "client_email": "", "private_key": "",
                                      "private_key_id": ""}))
            env["GOOGLE_SERVICE_ACCOUNT"] = str(sa)
            ctx["env"] = env
            prefix_datasets(tmp, sides, env, f"gs://{GCS_BUCKET}/big/", ctx)
        except BaseException:
            stop(proc)
            raise
        return ctx
    return prepare


def prep_az_prefix(n: int):
    def prepare(tmp: Path, sides: Sides) -> dict:
        port = free_port()
        proc = subprocess.Popen(
            [str(objstore_tool("azurite")), "--blobHost", "127.0.0.1", "--blobPort", str(port),
             "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        ctx = {"proc": proc, "sides": sides, "n": n}
        try:
            import socket
            wait_for("Azurite", lambda: socket.create_connection(("127.0.0.1", port),
                                                                 timeout=1).close() is None,
                     proc, None)
            home = tmp / "home"
            home.mkdir()
            env = isolated_env(home)
            # What the object-store libraries read to reach Azurite; both sides take these.
            env.update(AZURE_STORAGE_USE_EMULATOR="true",
                       AZURITE_BLOB_STORAGE_URL=f"http://127.0.0.1:{port}")
            _az_create_container(port)
            import obstore
            from obstore.store import AzureStore
            # obstore takes the emulator's address from the environment only
            saved = {k: os.environ.get(k) for k in ("AZURE_STORAGE_USE_EMULATOR",
                                                     "AZURITE_BLOB_STORAGE_URL")}
            os.environ.update({k: env[k] for k in saved})
            try:
                store = AzureStore(AZ_CONTAINER, client_options={"allow_http": True})
                _put_many(n, lambda i: obstore.put(store, f"big/{i:06d}", b"x" * (i % 7)))
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            ctx["env"] = env
            prefix_datasets(tmp, sides, env, f"az://{AZ_CONTAINER}/big/", ctx)
        except BaseException:
            stop(proc)
            raise
        return ctx
    return prepare


def _az_create_container(port: int) -> None:
    """PUT the container with Shared Key (Azurite checks it)."""
    import base64
    import email.utils
    import hashlib
    import hmac
    import urllib.request
    date = email.utils.formatdate(usegmt=True)
    sts = (f"PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:2021-08-06\n"
           f"/{AZ_ACCOUNT}/{AZ_ACCOUNT}/{AZ_CONTAINER}\nrestype:container")
    sig = base64.b64encode(hmac.new(base64.b64decode(AZ_KEY), sts.encode(), hashlib.sha256).digest())
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{AZ_ACCOUNT}/{AZ_CONTAINER}?restype=container", method="PUT",
        headers={"x-ms-date": date, "x-ms-version": "2021-08-06",
                 "Authorization": f"SharedKey {AZ_ACCOUNT}:{sig.decode()}"})
    urllib.request.urlopen(req).read()


def check_prefix(scheme: str) -> Callable[[dict], str]:
    inner = check_same_json(lambda c: ["snapshot", "--json"], side_ds)
    return lambda ctx: inner(ctx) + f" (the {ctx['n']}-key {scheme}:// prefix)"


def benchmarks(quick: bool) -> list[Bench]:
    n_status = 20
    n_add = 10 if quick else 20
    commits, objects = (20, 5) if quick else (200, 5)
    reps = (lambda full: 3) if quick else (lambda full: full)
    # file backend sizes: full / --quick
    big_n, big_size, big_label = (1024, 212992, "208MiB") if quick else (10240, 212992, "2GiB")
    small_n, small_label, large_label = (10000, "10k", "10x10k") if quick else (100000, "100k", "1M")
    mid_n, mid_size, mid_label = (2000, 20000, "2k-40MB") if quick else (10000, 20000, "10k-200MB")
    delta_n = 1000 if quick else 10000
    lance_versions = 100 if quick else 1000
    n_iceberg = 100 if quick else 1000
    n_ice = 200 if quick else 1000
    exp_commits, exp_objects = (20, 100) if quick else (200, 1000)
    n_lake = 100 if quick else 1000
    n_s3 = 10000 if quick else 100000
    n_obj = 2000 if quick else 20000
    n_resp = 100000 if quick else 10000000
    n_weed = 20000 if quick else 1000000
    n_dolt = 100 if quick else 1000
    tag_every = n_dolt // 10
    n_neon_branches = 2 if quick else 8
    return [
        Bench("status-cached", f"status-cached-{n_status}", reps(15),
              f"`tether status` on {n_status} committed memory objects, from the cached snapshot",
              prep_status(n_status), check_status, cmds_status),
        Bench("status-vs-git", f"status-vs-git-{n_status}x{commits}", reps(15),
              f"cached `tether status` on {n_status} objects of mixed kinds (memory, file, git) "
              f"with a {commits}-commit dataset history, against `git status` in the same "
              "repository",
              prep_status_mixed(n_status, commits), check_status_mixed, cmds_status,
              summarize=sum_status_git),
        Bench("backends", "backends", reps(15), "`tether backends --json` (startup cost)",
              prep_backends, check_backends, cmds_backends),
        Bench("plan-previews", f"plan-previews-{n_status}", reps(15),
              f"`tether commit --dry-run --json` with {n_status} moved git objects, then "
              "`tether gc --json` (its plan) over two commits: the planned-command driver's previews",
              prep_previews(n_status), check_previews, cmds_previews),
        Bench("add", f"add-{n_add}", reps(5),
              f"{n_add} × `tether add dK DIR --kind file` into a fresh dataset, whole loop "
              f"(and {n_add} × `dvc add dK` in a fresh DVC repository)",
              prep_add(n_add), check_add, cmds_add, before=before_add, summarize=sum_add_dvc),
        Bench("verify-all-history", f"verify-all-history-{commits}x{objects}", reps(5),
              f"`tether verify --all-history` over {commits} dataset commits × "
              f"{objects} file objects (history built by tether-vcs)",
              prep_verify(commits, objects), check_verify, cmds_verify,
              available=verify_available),
        Bench("export", f"export-{exp_commits}x{exp_objects}", reps(3),
              f"`tether export FILE.sqlite` of {exp_commits} dataset commits × {exp_objects} "
              "file objects (every table, SQLite)",
              prep_export(exp_commits, exp_objects), check_export, cmds_export),
        Bench("file-first-fingerprint", f"file-first-fingerprint-{big_label}", reps(5),
              f"`tether snapshot --json` of one file object on {big_n} files, {big_label} "
              "(page cache warm), with the hash cache deleted before each rep",
              prep_first(big_n, big_size), check_first, cmds_first, before=before_first,
              summarize=sum_first),
        Bench("file-cached-refresh-100k", f"file-cached-refresh-{small_label}", reps(10),
              f"`tether status --snapshot` on {small_n} small files, hash cache warm",
              prep_refresh(small_n, 1, rss=True), check_refresh, cmds_refresh,
              summarize=sum_refresh),
        Bench("file-cached-refresh-1M", f"file-cached-refresh-{large_label}", reps(3),
              f"`tether status --snapshot` on {small_n * 10} small files in nested "
              "directories, hash cache warm; peak RSS from the child's rusage",
              prep_refresh(small_n, 10, rss=True), check_refresh, cmds_refresh,
              before=before_refresh_after_other, summarize=sum_refresh),
        Bench("status-snapshot-vs-dvc", f"status-snapshot-vs-dvc-{mid_label}", reps(10),
              f"cached `tether status --snapshot` on {mid_n} files ({mid_label}) vs the "
              "same tree's cached `dvc status` after `dvc add`",
              prep_dvc(mid_n, mid_size), check_refresh, cmds_refresh, summarize=sum_dvc),
        Bench("lance-fingerprint", f"lance-fingerprint-{lance_versions}v", reps(10),
              f"`tether snapshot --json` of one Lance dataset with {lance_versions} versions "
              "(made by pylance)",
              prep_lance(lance_versions), check_lance("fingerprint"), cmds_lance("fingerprint"),
              available=lance_available),
        Bench("lance-log", f"lance-log-{lance_versions}v", reps(10),
              f"`tether log tbl -n {lance_versions} --json`: every version of that dataset, "
              "newest first, tags marked",
              prep_lance(lance_versions), check_lance("log"), cmds_lance("log"),
              available=lance_available),
        Bench("listing-diff-100k", f"listing-diff-{small_label}", reps(10),
              f"`tether diff --content A B`: two commits of a {small_n}-file directory "
              "that differ in 5 files (listings stored)",
              prep_listing(small_n), check_listing, cmds_listing, summarize=sum_listing),
        Bench("delta-fingerprint", f"delta-fingerprint-{delta_n}", reps(10),
              f"`tether status --snapshot` of one Delta table with {delta_n} commits, "
              f"a checkpoint at v{delta_n - 50}",
              prep_delta(delta_n, delta_n - 50), check_delta_fingerprint,
              cmds_delta_fingerprint, available=delta_available),
        Bench("delta-log", f"delta-log-{delta_n}", reps(5),
              f"`tether log KEY -n {delta_n} --json` of the same table (every commit)",
              prep_delta(delta_n, delta_n - 50), check_delta_log, cmds_delta_log,
              available=delta_available),
        # iceberg
        Bench("iceberg-fingerprint", f"iceberg-fingerprint-{n_iceberg}", reps(10),
              f"`tether status --snapshot` of one Iceberg table (SQLite SQL catalog) with "
              f"{n_iceberg} snapshots (tether-vcs through pyiceberg)",
              prep_iceberg(n_iceberg), check_iceberg("fingerprint"), cmds_iceberg("fingerprint"),
              available=iceberg_available),
        Bench("iceberg-log", f"iceberg-log-{n_iceberg}", reps(5),
              f"`tether log events -n {n_iceberg} --json`: the whole ancestry of that table",
              prep_iceberg(n_iceberg), check_iceberg("log"), cmds_iceberg("log"),
              available=iceberg_available),
        Bench("icechunk-fingerprint", f"icechunk-fingerprint-{n_ice}", reps(10),
              f"`tether snapshot` of one icechunk object, a spec-1 repository with {n_ice} "
              "snapshots (tether-vcs through the icechunk 1.x package)",
              prep_icechunk(n_ice), check_icechunk_same(["snapshot"]),
              cmds_icechunk(["snapshot"])),
        Bench("icechunk-pin", f"icechunk-pin-{n_ice}", reps(5),
              f"`tether commit` pinning a new head as an icechunk tag ({n_ice} snapshots; "
              "the icechunk commit before each rep is not timed)",
              prep_icechunk(n_ice), check_icechunk_pin, cmds_icechunk_pin,
              before=before_icechunk_pin),
        Bench("icechunk-log", f"icechunk-log-{n_ice}", reps(5),
              f"`tether log arr -n {n_ice}`: the whole ancestry of a {n_ice}-snapshot "
              "spec-1 repository",
              prep_icechunk(n_ice), check_icechunk_same(["log", "arr", "-n", str(n_ice)]),
              cmds_icechunk(["log", "arr", "-n", str(n_ice)])),
        # ducklake
        Bench("ducklake-fingerprint", f"ducklake-fingerprint-{n_lake}", reps(10),
              f"`tether snapshot --json` of a SQLite-backed DuckLake catalog with {n_lake} "
              "snapshots (written by DuckDB; tether-vcs attaches it through DuckDB)",
              prep_ducklake(n_lake), check_ducklake("fingerprint"), cmds_ducklake("fingerprint"),
              available=ducklake_available),
        Bench("ducklake-log", f"ducklake-log-{n_lake}", reps(5),
              f"`tether log lake -n {n_lake} --json`: every snapshot of that catalog with its "
              "changes",
              prep_ducklake(n_lake), check_ducklake("log"), cmds_ducklake("log"),
              available=ducklake_available),
        # dolt
        Bench("dolt-fingerprint", f"dolt-fingerprint-{n_dolt}", reps(10),
              f"`tether snapshot --json` of a Dolt database with {n_dolt} commits on main "
              "(over the MySQL protocol: a real `dolt sql-server` when $TETHER_BENCH_DOLT or "
              "`dolt` on PATH names one, else the test server)",
              prep_dolt(n_dolt, tag_every), check_dolt("fingerprint"),
              cmds_json(dolt_args("fingerprint"), one_ds), available=dolt_available),
        Bench("dolt-log", f"dolt-log-{n_dolt}", reps(5),
              f"`tether log db -n {n_dolt} --json`: every commit of that database, "
              f"a tag every {tag_every} commits marked",
              prep_dolt(n_dolt, tag_every), check_dolt("log"),
              cmds_json(dolt_args("log"), one_ds), available=dolt_available),
        # neon
        Bench("neon-fingerprint", f"neon-fingerprint-{n_neon_branches}b", reps(10),
              f"`tether snapshot --json` of a Neon database through the API fake "
              f"(tests/support/neon_fake.py: a project of {n_neon_branches + 1} branches on "
              "real PostgreSQL 15, every request checked against Neon's OpenAPI spec)",
              prep_neon(1000, n_neon_branches), check_neon,
              cmds_json(lambda c: ["snapshot", "--json"], one_ds), available=neon_available),
        # object stores
        Bench("s3-prefix-fingerprint", f"s3-prefix-fingerprint-{n_s3}", reps(10),
              f"`tether snapshot --json` of a file object on an s3:// prefix of {n_s3} keys on a local "
              "SeaweedFS (strict SigV4; tether-vcs lists through obstore), against a plain paged "
              "LIST of the same prefix with boto3",
              prep_s3_prefix(n_s3), check_s3_prefix, cmds_s3_prefix, available=s3_prefix_available,
              summarize=sum_s3_prefix),
        Bench("s3-prefix-seaweedfs", f"s3-prefix-seaweedfs-{n_weed}", reps(3),
              f"`tether snapshot --json` of a file object on an s3:// prefix of {n_weed} keys on a "
              "local SeaweedFS (keys loaded through the filer's bulk metadata path; tether-vcs lists "
              "through obstore), with each side's client CPU and peak RSS, against a plain paged LIST "
              "of the whole prefix with boto3",
              prep_s3_prefix(n_weed), check_responder_prefix, cmds_s3_prefix,
              available=s3_prefix_available, summarize=sum_seaweed_prefix),
        Bench("s3-prefix-responder", f"s3-prefix-responder-{n_resp}", reps(3),
              f"`tether snapshot --json` of a file object on an s3:// prefix of {n_resp} keys served "
              "by bench/list_responder.py (ListObjectsV2 pages made in memory, so the client is what "
              "is measured; tether-vcs lists through obstore), with each side's client CPU and peak "
              "RSS, against a plain paged LIST with boto3",
              prep_responder_prefix(n_resp), check_responder_prefix, cmds_s3_prefix,
              available=responder_available, summarize=sum_responder_prefix),
        Bench("gcs-prefix-fingerprint", f"gcs-prefix-fingerprint-{n_obj}", reps(10),
              f"`tether snapshot --json` of a file object on a gs:// prefix of {n_obj} keys "
              "on fake-gcs-server (tether-vcs lists through obstore)",
              prep_gcs_prefix(n_obj), check_prefix("gs"),
              cmds_json(lambda c: ["snapshot", "--json"], side_ds),
              available=prefix_available("fake-gcs-server")),
        Bench("az-prefix-fingerprint", f"az-prefix-fingerprint-{n_obj}", reps(10),
              f"`tether snapshot --json` of a file object on an az:// prefix of {n_obj} keys "
              "on Azurite (Shared Key; tether-vcs lists through obstore)",
              prep_az_prefix(n_obj), check_prefix("az"),
              cmds_json(lambda c: ["snapshot", "--json"], side_ds),
              available=prefix_available("azurite")),
    ]


# --------------------------------------------------------------------------- #
# Timing and reporting
# --------------------------------------------------------------------------- #
@dataclass
class Result:
    name: str
    what: str
    reps: int = 0
    note: str = ""
    skipped: str | None = None
    failed: bool = False
    times: dict[str, list[float]] = field(default_factory=dict)
    summary: str = ""
    extra: dict = field(default_factory=dict)

    def med(self, side: str) -> float:
        return statistics.median(self.times[side])

    def min(self, side: str) -> float:
        return min(self.times[side])

    def ratio(self) -> float:
        return self.med("ref") / self.med("ours")


def sample(cmds: list[tuple[list, Path]], env: dict[str, str]) -> float:
    procs = []
    t0 = time.perf_counter()
    for argv, cwd in cmds:
        procs.append(subprocess.run([str(a) for a in argv], cwd=str(cwd), env=env,
                                    capture_output=True, text=True))
    elapsed = time.perf_counter() - t0
    for (argv, _), p in zip(cmds, procs):
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, argv))} exited {p.returncode} while "
                               f"timing: {first_line(p.stderr)}")
    return elapsed


def measure(bench: Bench, sides: Sides, reps: int | None) -> Result:
    res = Result(bench.name, bench.what)
    try:
        if bench.available:
            bench.available(sides)
        with tempfile.TemporaryDirectory(prefix=f"tether-bench-{bench.id}-") as t:
            ctx = bench.prepare(Path(t), sides)
            try:
                measure_prepared(bench, sides, reps, res, ctx)
            finally:  # a server the benchmark started (object stores, dolt, neon)
                proc = ctx.get("proc")
                if isinstance(proc, subprocess.Popen) and proc.poll() is None:
                    proc.kill()
                    proc.wait()
                if ctx.get("close"):
                    ctx["close"]()
    except Skip as exc:
        res.skipped = str(exc)
    except Exception as exc:  # noqa: BLE001 - one broken row must not end the run
        # A run that broke (not a known limitation): reported, and the exit status says so.
        res.skipped = f"failed: {type(exc).__name__}: {first_line(str(exc))}"
        res.failed = True
        import traceback
        traceback.print_exc(file=sys.stderr)
    return res


def measure_prepared(bench: Bench, sides: Sides, reps: int | None, res: "Result", ctx: dict) -> None:
    res.note = bench.check(ctx)  # also the warm-up run of each side
    res.reps = reps or bench.reps
    res.times = {"ours": [], "ref": []}
    for i in range(res.reps):
        order = ("ours", "ref") if i % 2 == 0 else ("ref", "ours")
        for side in order:
            if bench.before:
                bench.before(ctx, side)
            res.times[side].append(sample(bench.commands(ctx, side), ctx["env"]))
    if bench.summarize:
        res.summary = bench.summarize(ctx, res)


def ms(s: float) -> str:
    v = s * 1000
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def ratio_text(r: float) -> str:
    if r >= 1:
        return f"×{r:.1f} faster" if r < 10 else f"×{r:.0f} faster"
    inv = 1 / r
    return f"×{inv:.1f} slower" if inv < 10 else f"×{inv:.0f} slower"


def table(results: list[Result]) -> str:
    """Both peers: tether-vcs on every row, DVC where a row measures it."""
    rows = ["| benchmark | ours, ms (median / min) | tether-vcs, ms (median / min) | ratio | "
            "DVC, ms (median / min) | ratio to DVC |",
            "|---|---:|---:|---|---:|---|"]
    for r in results:
        if r.skipped:
            rows.append(f"| {r.name} | — | — | not measured: {r.skipped} | — | — |")
            continue
        dvc = r.extra.get("dvc_ms")
        dvc_cols = (f"{ms(dvc['median'] / 1e3)} / {ms(dvc['min'] / 1e3)} | {ratio_text(r.extra['dvc_ratio'])}"
                    if dvc else "— | —")
        rows.append(f"| {r.name} | {ms(r.med('ours'))} / {ms(r.min('ours'))} | "
                    f"{ms(r.med('ref'))} / {ms(r.min('ref'))} | {ratio_text(r.ratio())} | {dvc_cols} |")
    return "\n".join(rows)


def hardware() -> dict:
    info = {"nproc": os.cpu_count(), "cpu": platform.processor() or "unknown",
            "ram": "unknown", "kernel": platform.release()}
    try:
        info["nproc"] = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout)
    except (OSError, ValueError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram"] = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
        info["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        pass
    return info


def tree_state() -> str:
    """The commit measured, and whether the work tree had changes on top."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"
    return (rev or "unknown") + (" (with uncommitted changes)" if dirty else "")


def version_of(exe: Path) -> str:
    try:
        return first_line(subprocess.run([str(exe), "--version"], capture_output=True,
                                         text=True).stdout)
    except OSError as exc:
        return f"unavailable ({exc})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, smaller data")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only this benchmark (its name or its name less the size); repeatable")
    ap.add_argument("--reps", type=int, help="repetitions per side (overrides the defaults)")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 unless every row and every derived figure was measured")
    args = ap.parse_args()

    sides = Sides(default_ours(), default_ref())
    for label, exe in (("our tether", sides.ours), ("tether-vcs", sides.ref)):
        if not exe.exists():
            print(f"error: {label} not found at {exe}", file=sys.stderr)
            return 1
    todo = benchmarks(args.quick)
    if args.only:
        wanted = {w for o in args.only for w in o.split(",") if w}
        unknown = wanted - {b.id for b in todo} - {b.name for b in todo}
        if unknown:
            print(f"error: no benchmark {', '.join(sorted(unknown))}; have: "
                  f"{', '.join(b.name for b in todo)}", file=sys.stderr)
            return 2
        todo = [b for b in todo if b.id in wanted or b.name in wanted]

    hw = hardware()
    started = datetime.now(timezone.utc)
    command = " ".join(["bench/run.py", *sys.argv[1:]])
    head = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "tree": tree_state(),
        "ours": f"{version_of(sides.ours)} ({sides.ours})",
        "reference": f"tether-vcs {ref_version()} ({sides.ref})",
        "hardware": hw,
        "mode": "quick" if args.quick else "full",
    }
    print(f"# {head['date']}; {hw['nproc']} CPUs ({hw['cpu']}), {hw['ram']} RAM; "
          f"load {' '.join(hw.get('loadavg_before', []))}")
    print(f"# ours: {head['ours']}, tree {head['tree']}\n# reference: {head['reference']}")
    print(f"# {command}")

    results = []
    for b in todo:
        print(f"- {b.name}: {b.what} ...", flush=True)
        r = measure(b, sides, args.reps)
        print(f"    {('skipped: ' + r.skipped) if r.skipped else r.note}", flush=True)
        if r.summary:
            print(f"    {r.summary}", flush=True)
        results.append(r)

    try:
        hw["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        print(f"\n# load after: {' '.join(hw['loadavg_after'])}")
    except OSError:
        pass
    print()
    print(table(results))
    derived = [r for r in results if r.summary and not r.skipped]
    if derived:
        print()
        for r in derived:
            print(f"- {r.name}: {r.summary}")

    missing = [f"{r.name}: {r.skipped}" for r in results if r.skipped] + \
        [f"{r.name}: {m}" for r in results for m in r.extra.get("not_measured", [])]
    if missing:
        print("\nnot measured:")
        for m in missing:
            print(f"- {m}")

    CACHE.mkdir(parents=True, exist_ok=True)
    out = {**head, "results": [
               {"name": r.name, "what": r.what, "reps": r.reps, "note": r.note,
                "skipped": r.skipped, "failed": r.failed,
                **({"summary": r.summary, "extra": r.extra} if r.summary else {}),
                **({} if r.skipped else {
                    "ours_ms": {"median": r.med("ours") * 1e3, "min": r.min("ours") * 1e3,
                                "samples": [t * 1e3 for t in r.times["ours"]]},
                    "ref_ms": {"median": r.med("ref") * 1e3, "min": r.min("ref") * 1e3,
                               "samples": [t * 1e3 for t in r.times["ref"]]},
                    "ratio": r.ratio()})}
               for r in results]}
    path = CACHE / f"results-{started.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    shutil.copyfile(path, CACHE / "latest.json")
    print(f"\nresults: {path.relative_to(ROOT)}")
    return 1 if any(r.failed for r in results) or (args.strict and missing) else 0


if __name__ == "__main__":
    sys.exit(main())
