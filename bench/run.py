#!/usr/bin/env python3
"""Benchmarks: our `tether` against tether-vcs's, on the same data, in one run.

    .venv/bin/python bench/run.py [--quick] [--only NAME]... [--reps N]

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
override).  Results also go to .tmp/bench/results-<time>.json and
.tmp/bench/latest.json.  `--quick` runs fewer repetitions on smaller data.
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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

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
        return {"tmp": tmp, "template": template, "env": env, "sides": sides,
                "dirs": dirs, "ds": tmp / "work" / "ds"}
    return prepare


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


def benchmarks(quick: bool) -> list[Bench]:
    n_status = 20
    n_add = 10 if quick else 20
    commits, objects = (20, 5) if quick else (200, 5)
    reps = (lambda full: 3) if quick else (lambda full: full)
    return [
        Bench("status-cached", f"status-cached-{n_status}", reps(15),
              f"`tether status` on {n_status} committed memory objects, from the cached snapshot",
              prep_status(n_status), check_status, cmds_status),
        Bench("backends", "backends", reps(15), "`tether backends --json` (startup cost)",
              prep_backends, check_backends, cmds_backends),
        Bench("add", f"add-{n_add}", reps(5),
              f"{n_add} × `tether add dK DIR --kind file` into a fresh dataset, whole loop",
              prep_add(n_add), check_add, cmds_add, before=before_add),
        Bench("verify-all-history", f"verify-all-history-{commits}x{objects}", reps(5),
              f"`tether verify --all-history` over {commits} dataset commits × "
              f"{objects} file objects (history built by tether-vcs)",
              prep_verify(commits, objects), check_verify, cmds_verify,
              available=verify_available),
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
            res.note = bench.check(ctx)  # also the warm-up run of each side
            res.reps = reps or bench.reps
            res.times = {"ours": [], "ref": []}
            for i in range(res.reps):
                order = ("ours", "ref") if i % 2 == 0 else ("ref", "ours")
                for side in order:
                    if bench.before:
                        bench.before(ctx, side)
                    res.times[side].append(sample(bench.commands(ctx, side), ctx["env"]))
    except Skip as exc:
        res.skipped = str(exc)
    except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as exc:
        # A run that broke (not a known limitation): reported, and the exit status says so.
        res.skipped = f"failed: {first_line(str(exc))}"
        res.failed = True
        print(f"    {exc}", file=sys.stderr)
    return res


def ms(s: float) -> str:
    v = s * 1000
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def ratio_text(r: float) -> str:
    if r >= 1:
        return f"×{r:.1f} faster" if r < 10 else f"×{r:.0f} faster"
    inv = 1 / r
    return f"×{inv:.1f} slower" if inv < 10 else f"×{inv:.0f} slower"


def table(results: list[Result]) -> str:
    rows = ["| benchmark | ours, ms (median / min) | tether-vcs, ms (median / min) | ratio |",
            "|---|---:|---:|---|"]
    for r in results:
        if r.skipped:
            rows.append(f"| {r.name} | — | — | not measured: {r.skipped} |")
        else:
            rows.append(f"| {r.name} | {ms(r.med('ours'))} / {ms(r.min('ours'))} | "
                        f"{ms(r.med('ref'))} / {ms(r.min('ref'))} | {ratio_text(r.ratio())} |")
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
        results.append(r)

    try:
        hw["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        print(f"\n# load after: {' '.join(hw['loadavg_after'])}")
    except OSError:
        pass
    print()
    print(table(results))

    CACHE.mkdir(parents=True, exist_ok=True)
    out = {**head, "results": [
               {"name": r.name, "what": r.what, "reps": r.reps, "note": r.note,
                "skipped": r.skipped, "failed": r.failed,
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
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
