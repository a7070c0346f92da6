"""examples/ci: the data pull request recipe, run as a CI would run it.

Each step of examples/ci/tether-pr.sh runs in a fresh clone of the dataset's
repository (a bare "origin" here), as each CI job checks it out, against a
dataset of git, Icechunk, Lance, Delta, Iceberg (SQL catalog), DuckLake,
Dolt (the test server) and Neon (the fake) objects: open -> write on the
forks -> commit (with the markdown review) -> a failing check refuses the
landing -> a passing check lands it -> close; and a pull request never
closed, swept once its TTL passed.  Afterwards no store holds a
tether.ws.* branch or a pin no trunk commit names.  The workflow files
parse, and call the script's steps on the events they say.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
import tomllib
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, TETHER_BIN, git
from dolt import dolt  # noqa: F401  (the fixture)
from test_dolt_backend import add as add_dolt, seed
from test_iceberg_backend import rows as ice_rows
from test_neon_backend import add as add_neon, names as neon_names, neon  # noqa: F401  (the fixture)
from test_query import Stores, table

SCRIPT = ROOT / "examples" / "ci" / "tether-pr.sh"
DS = "c1c1c1c1"


def ws(bm: str) -> str:
    return f"tether.ws.{DS}.{bm}"


def make_code(path: Path, env) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path, env=env)
    (path / "model.py").write_text("weights = 1\n")
    git("add", ".", cwd=path, env=env)
    git("commit", "-q", "-m", "initial", cwd=path, env=env)
    git("checkout", "-q", "--detach", cwd=path, env=env)  # a server's repository: no branch checked out
    return path


def git_write(code: Path, branch: str, env, text: str) -> str:
    """A commit on the store's branch, as a pipeline's job would push it."""
    wt = code.parent / f"wt-{branch}"
    git("worktree", "add", "-q", str(wt), branch, cwd=code, env=env)
    (wt / "model.py").write_text(text)
    git("commit", "-q", "-am", "pipeline", cwd=wt, env=env)
    sha = git("rev-parse", "HEAD", cwd=wt, env=env).strip()
    git("worktree", "remove", "--force", str(wt), cwd=code, env=env)
    return sha


class Origin:
    """The dataset's remote repository and the CI jobs that run the script in
    fresh clones of it."""

    secrets = ""

    def __init__(self, tmp: Path, env):
        self.tmp, self.env, self.jobs = tmp, env, 0
        self.origin = tmp / "origin.git"
        git("init", "-q", "--bare", "-b", "main", str(self.origin), cwd=tmp, env=env)

    def clone(self, name: str) -> Path:
        path = self.tmp / "jobs" / name
        path.parent.mkdir(exist_ok=True)
        git("clone", "-q", str(self.origin), str(path), cwd=self.tmp, env=self.env)
        return path

    def job(self) -> Path:
        """A fresh CI job: a new clone, the stores' credentials written from secrets."""
        self.jobs += 1
        ds = self.clone(f"job{self.jobs}")
        self.write_secrets(ds)
        return ds

    def write_secrets(self, ds: Path) -> None:
        if self.secrets and (ds / ".tether").is_dir():
            s = ds / ".tether" / "secrets.toml"
            s.write_text(self.secrets)
            s.chmod(0o600)

    def step(self, ds: Path, step: str, check: bool = True, **env) -> subprocess.CompletedProcess:
        e = {**self.env, "TETHER": str(TETHER_BIN), **env}
        proc = subprocess.run(["sh", str(SCRIPT), step], cwd=ds, env=e, capture_output=True, text=True,
                              timeout=600)
        if check and proc.returncode != 0:
            raise AssertionError(f"tether-pr.sh {step} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def remote_heads(self) -> dict[str, str]:
        out = git("ls-remote", "--heads", str(self.origin), cwd=self.tmp, env=self.env)
        return {ref.removeprefix("refs/heads/"): sha for sha, ref in (l.split() for l in out.splitlines())}

    def seed_git_dataset(self, tether, stores: dict[str, Path]) -> None:
        """The trunk of a dataset of git objects, pushed."""
        ds = self.clone("seed")
        git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=self.env)
        tether("init", "--dataset-id", DS, cwd=ds)
        for key, repo in stores.items():
            tether("add", key, str(repo), "--kind", "git", "--set", "ref=main", cwd=ds)
        tether("commit", "-m", "the stores", cwd=ds)
        git("push", "-q", "origin", "main", cwd=ds, env=self.env)


class World(Origin):
    """The dataset of every kind, its stores and the CI jobs that run the recipe."""

    def __init__(self, tmp: Path, tether, env, dolt, neon, oracle):
        super().__init__(tmp, env)
        self.tether, self.dolt, self.neon, self.o = tether, dolt, neon, oracle
        self.st = Stores(tmp / "stores", Path(env["HOME"]))
        self.st.first()
        self.code = make_code(tmp / "stores" / "code", env)
        self.arr = tmp / "stores" / "arr.icechunk"
        oracle("create", str(self.arr))
        oracle("commit", str(self.arr), "main", "a1")
        seed(dolt)
        neon.psql("main", "INSERT INTO t VALUES (1, 'one')")
        self.secrets = (self.st.secrets() + dolt.secrets() + f'[backends.neon]\napi_url = "{neon.url}"\n')
        ds = self.clone("seed")
        git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
        tether("init", "--dataset-id", DS, cwd=ds)
        self.write_secrets(ds)
        tether("add", "code", str(self.code), "--kind", "git", "--set", "ref=main", cwd=ds)
        tether("add", "arr", str(self.arr), "--kind", "icechunk", cwd=ds)
        tether("add", "vecs", str(self.st.lance), "--kind", "lance", cwd=ds)
        tether("add", "sales", str(self.st.delta), "--kind", "delta", cwd=ds)
        tether("add", "ev", "--kind", "iceberg", "--set", "identifier=ns.ev", cwd=ds)
        tether("add", "lake", f"sqlite:{self.st.lake_meta}", "--kind", "ducklake", "--set",
               f"data_path={self.st.lake_data}/", cwd=ds)
        add_dolt(tether, ds, dolt)
        add_neon(tether, ds, "pg")
        tether("commit", "-m", "the dataset", cwd=ds)
        git("push", "-q", "origin", "main", cwd=ds, env=env)

    # ---- every store's branches and pins -----------------------------------------------
    def branches(self) -> dict[str, set[str]]:
        import lance
        cat = self.st.catalog().load_table("ns.ev")
        return {
            "code": set(git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=self.code,
                            env=self.env).split()),
            "arr": set(self.o("branches", str(self.arr))["names"]),
            "vecs": set(lance.dataset(str(self.st.lance)).branches.list()),
            "ev": {n for n, r in cat.refs().items() if str(r.snapshot_ref_type) != "tag"},
            "db": set(self.dolt.branches()),
            "pg": {n for n in neon_names(self.neon) if not n.startswith(f"tether.{DS}.")},
        }

    def pins(self) -> dict[str, set[str]]:
        import lance
        cat = self.st.catalog().load_table("ns.ev")
        return {
            "code": set(git("for-each-ref", "--format=%(refname:short)", "refs/tags", cwd=self.code,
                            env=self.env).split()),
            "arr": set(self.o("tags", str(self.arr))["names"]),
            "vecs": set(lance.dataset(str(self.st.lance)).tags.list()),
            "ev": {n for n, r in cat.refs().items() if str(r.snapshot_ref_type) == "tag"},
            "db": set(self.dolt.tags()),
            "pg": {n for n in neon_names(self.neon) if n.startswith(f"tether.{DS}.")},
        }

    def trunk_pins(self) -> dict[str, set[str]]:
        """The pins every commit of the remote's trunk names, per object."""
        view = self.clone(f"view{time.monotonic_ns()}")
        out: dict[str, set[str]] = {}
        for rev in git("rev-list", "main", cwd=view, env=self.env).split():
            for path in git("ls-tree", "--name-only", rev, ".tether/objects/", cwd=view, env=self.env).split():
                m = tomllib.loads(git("show", f"{rev}:{path}", cwd=view, env=self.env))
                pin = (m.get("pin") or {}).get("ref")
                if pin:
                    out.setdefault(m["key"] if "key" in m else Path(path).stem, set()).add(pin)
        return out


@pytest.fixture
def world(tmp_path, tether, env, dolt, neon):
    from test_icechunk_backend import Oracle
    env["ICECHUNK_LOG"] = "error"
    o = Oracle(2, env)
    try:
        yield World(tmp_path, tether, env, dolt, neon, o)
    finally:
        o.close()


def handle_branch(tether, ds: Path, key: str) -> str:
    """Where the pipeline writes: what `tether open KEY --json` says."""
    h = tether.json("open", key, cwd=ds)
    return h.get("branch") or h.get("ref") or h["address"]


CHECK_OK = """python3 - <<'PY'
import json, os, sys
h = json.load(open(os.environ["TETHER_CHECK_HANDLES"]))
assert h["bookmark"] == os.environ["TETHER_CHECK_BOOKMARK"] == "pr-42", h["bookmark"]
assert sorted(h["heads"]) == ["arr", "code", "db", "ev"], sorted(h["heads"])
print("checked", *sorted(h["heads"]))
PY"""


def test_a_pull_request_life_through_the_script(world, tether, env):
    w = world
    before_pins = w.pins()

    # -- opened: fork every store, run the pipeline on the forks, commit, review
    job = w.job()
    w.step(job, "open", TETHER_PR="42", TETHER_TTL="7d")
    assert "pr-42" in w.remote_heads()
    forks = w.branches()
    for key in ("code", "arr", "vecs", "ev", "db", "pg"):
        assert ws("pr-42") in forks[key], (key, forks[key])
    assert tether.json("bookmarks", cwd=job)["bookmarks"][1]["expires"]
    trunk_before = {"code": git("rev-parse", "main", cwd=w.code, env=env).strip(),
                    "db": w.dolt.sql("SELECT COUNT(*) FROM t")[0][0]}
    # the pipeline: a write on each fork that can land
    assert handle_branch(tether, job, "code") == ws("pr-42")
    fork_sha = git_write(w.code, ws("pr-42"), env, "weights = 2\n")
    w.o("commit", str(w.arr), ws("pr-42"), "a2")
    w.st.catalog().load_table("ns.ev").append(ice_rows(77), branch=ws("pr-42"))
    rev = f"{w.dolt.database}/{ws('pr-42')}"
    w.dolt.sql("INSERT INTO t VALUES (%s, %s)", (42, "pr"), database=rev)
    w.dolt.commit("pipeline", database=rev)
    w.step(job, "commit", TETHER_PR="42")
    review = (job / "tether-review.md").read_text()
    rows = re.findall(r"^\| <code>(\w+)</code> \| (\w+) \| changed \|", review, re.M)
    assert sorted(rows) == [("arr", "icechunk"), ("code", "git"), ("db", "dolt"), ("ev", "iceberg")], review
    assert w.remote_heads()["pr-42"] == git("rev-parse", "HEAD", cwd=job, env=env).strip()

    # -- a new push to the pull request joins the forks as they are
    again = w.job()
    w.step(again, "open", TETHER_PR="42")
    assert git("symbolic-ref", "--short", "HEAD", cwd=again, env=env).strip() == "pr-42"
    assert w.branches()["code"] >= {ws("pr-42")}

    # -- merged, the check fails: nothing lands anywhere
    heads_before = w.remote_heads()
    proc = w.step(w.job(), "land", check=False, TETHER_PR="42",
                  TETHER_CHECK='echo "row counts are off" >&2; exit 4')
    assert proc.returncode == 1, proc.stderr
    assert "exited with status 4" in proc.stderr and "row counts are off" in proc.stderr
    assert w.remote_heads() == heads_before
    assert git("rev-parse", "main", cwd=w.code, env=env).strip() == trunk_before["code"]
    assert w.dolt.sql("SELECT COUNT(*) FROM t")[0][0] == trunk_before["db"]

    # -- the check passes: it lands, and the trunk moves to the bookmark
    proc = w.step(w.job(), "land", TETHER_PR="42", TETHER_CHECK=CHECK_OK)
    assert "checked arr code db ev" in proc.stderr
    heads = w.remote_heads()
    assert heads["main"] == heads["pr-42"]
    assert git("rev-parse", "main", cwd=w.code, env=env).strip() == fork_sha
    assert w.dolt.sql("SELECT v FROM t WHERE id = 42") == [("pr",)]
    assert 77 in [r["id"] for r in w.st.catalog().load_table("ns.ev").scan().to_arrow().to_pylist()]
    trunk = w.job()
    status = {o["key"]: o["state"] for o in tether.json("status", "--snapshot", cwd=trunk)["objects"]}
    assert set(status.values()) == {"clean"}, status

    # -- closed: the bookmark and its forks go
    w.step(w.job(), "close", TETHER_PR="42")
    assert "pr-42" not in w.remote_heads()

    # -- a pull request nobody closes, swept once its TTL passed
    job = w.job()
    w.step(job, "open", TETHER_PR="43", TETHER_TTL="2s")
    git_write(w.code, ws("pr-43"), env, "weights = 3\n")
    import lance
    lance.write_dataset(table(900, 1), lance.dataset(str(w.st.lance)).checkout_version((ws("pr-43"), None)),
                        mode="append")
    w.neon.psql(ws("pr-43"), "INSERT INTO t VALUES (43, 'forty-three')")
    w.step(job, "commit", TETHER_PR="43")
    assert "pr-43" in w.remote_heads()
    time.sleep(3)
    proc = w.step(w.job(), "sweep")
    assert set(w.remote_heads()) == {"main"}

    # nothing left behind: no working branch, no pin the trunk does not name
    left = w.branches()
    for key, names in left.items():
        assert not {n for n in names if n.startswith("tether.ws.")}, (key, names)
    named = w.trunk_pins()
    for key, pins in w.pins().items():
        stray = pins - before_pins[key] - named.get(key, set())
        assert not stray, (key, stray)


def test_a_second_pull_request_lands_after_the_first_moved_the_trunk(tmp_path, tether, env):
    """Two pull requests, each on its own store; the second lands after the
    first: the trunk's manifests are merged in and its store fast-forwards."""
    a = make_code(tmp_path / "stores" / "a", env)
    b = make_code(tmp_path / "stores" / "b", env)
    o = Origin(tmp_path, env)
    o.seed_git_dataset(tether, {"a": a, "b": b})
    job, step = o.job, o.step
    j1, j2 = job(), job()
    step(j1, "open", TETHER_PR="1")
    step(j2, "open", TETHER_PR="2")
    sha_a = git_write(a, ws("pr-1"), env, "a = 1\n")
    sha_b = git_write(b, ws("pr-2"), env, "b = 2\n")
    step(j1, "commit", TETHER_PR="1")
    step(j2, "commit", TETHER_PR="2")
    step(job(), "land", TETHER_PR="1", TETHER_CHECK="true")
    step(job(), "land", TETHER_PR="2", TETHER_CHECK="true")
    assert git("rev-parse", "main", cwd=a, env=env).strip() == sha_a
    assert git("rev-parse", "main", cwd=b, env=env).strip() == sha_b
    trunk = job()
    m = {k: tomllib.loads((trunk / ".tether" / "objects" / f"{k}.toml").read_text())["state"]["sha"]
         for k in ("a", "b")}
    assert m == {"a": sha_a, "b": sha_b}
    status = {o["key"]: o["state"] for o in tether.json("status", "--snapshot", cwd=trunk)["objects"]}
    assert status == {"a": "clean", "b": "clean"}
    # both stores changed by both: the second's check would land a merge nobody checked
    for x in (1, 2):
        step(job(), "close", TETHER_PR=str(x))
    j3, j4 = job(), job()
    step(j3, "open", TETHER_PR="3")
    step(j4, "open", TETHER_PR="4")
    git_write(a, ws("pr-3"), env, "a = 3\n")
    git_write(a, ws("pr-4"), env, "a = 4\n")
    step(j3, "commit", TETHER_PR="3")
    step(j4, "commit", TETHER_PR="4")
    step(job(), "land", TETHER_PR="3", TETHER_CHECK="true")
    proc = step(job(), "land", check=False, TETHER_PR="4", TETHER_CHECK="true")
    assert proc.returncode == 1 and "merge" in proc.stderr, proc.stderr
    assert git("rev-parse", "main", cwd=a, env=env).strip() != git("rev-parse", ws("pr-4"), cwd=a, env=env).strip()


def test_the_script_refuses_what_it_cannot_do(tmp_path, env):
    ds = tmp_path / "ds"
    ds.mkdir()
    e = {**env, "TETHER": str(TETHER_BIN)}
    run = lambda *a, **kw: subprocess.run(["sh", str(SCRIPT), *a], cwd=ds, capture_output=True, text=True,
                                          env={**e, **kw})
    proc = run("nonsense")
    assert proc.returncode == 2 and "usage: tether-pr.sh open|commit|land|close|sweep" in proc.stderr
    proc = run("open")
    assert proc.returncode == 1 and "set TETHER_PR" in proc.stderr
    proc = run("land", TETHER_PR="1")
    assert proc.returncode == 1 and "set TETHER_CHECK" in proc.stderr


def workflow(name: str) -> dict:
    return yaml.safe_load((ROOT / "examples" / "ci" / name).read_text())


def script_steps(commands: list[str]) -> list[str]:
    return [m for c in commands for m in re.findall(r"tether-pr\.sh (\w+)", c)]


def test_the_github_workflow_parses_and_runs_each_step_on_its_event():
    wf = workflow("github-actions.yml")
    on = wf[True]  # YAML 1.1 reads the key `on` as true, as GitHub's parser does not
    assert set(on["pull_request"]["types"]) == {"opened", "synchronize", "reopened", "closed"}
    assert on["schedule"][0]["cron"]
    jobs = wf["jobs"]
    runs = {name: script_steps([s.get("run", "") for s in job["steps"]]) for name, job in jobs.items()}
    assert runs == {"pipeline": ["open", "commit"], "land": ["land"], "close": ["close"], "sweep": ["sweep"]}
    assert "action != 'closed'" in jobs["pipeline"]["if"]
    assert "merged" in jobs["land"]["if"]
    assert jobs["close"]["needs"] == "land" and "needs.land.result != 'failure'" in jobs["close"]["if"]
    assert "schedule" in jobs["sweep"]["if"]
    land = next(s for s in jobs["land"]["steps"] if "tether-pr.sh land" in s.get("run", ""))
    assert "TETHER_CHECK" in land["env"]
    assert wf["env"]["TETHER_TTL"] == "7d"


def test_the_gitlab_pipeline_parses_and_runs_each_step_on_its_event():
    wf = workflow("gitlab-ci.yml")
    runs = {name: script_steps(job["script"]) for name, job in wf.items()
            if isinstance(job, dict) and "script" in job}
    assert runs == {"data-pipeline": ["open", "commit"], "data-land": ["land", "close"],
                    "data-close": ["close"], "data-sweep": ["sweep"]}
    assert wf["data-pipeline"]["rules"][0]["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"'
    assert "schedule" in wf["data-sweep"]["rules"][0]["if"]
    assert wf["data-close"]["rules"][0]["when"] == "manual"
    # the merge request's number from the merge commit's message, as GitLab writes it
    cmd = next(c for c in wf["data-land"]["script"] if "TETHER_PR=" in c)
    sed = re.search(r"sed -n '([^']+)'", cmd).group(1)
    out = subprocess.run(["sed", "-n", sed], input="Merge branch 'x' into 'main'\n\nSee merge request grp/proj!42\n",
                         capture_output=True, text=True).stdout.strip()
    assert out == "42"
    assert os.access(SCRIPT, os.X_OK)
    assert json.dumps(wf)  # plain data, nothing YAML-only


def test_closing_an_unlanded_pull_request_releases_its_pins_from_a_fresh_clone(tmp_path, tether, env):
    """A CI job's clone made none of the pins a closed pull request's commits
    named: drop keeps them as another clone's unless --release-foreign, which
    the script's close passes."""
    code = make_code(tmp_path / "stores" / "code", env)
    o = Origin(tmp_path, env)
    o.seed_git_dataset(tether, {"code": code})
    job = o.job

    def tags() -> set[str]:
        return set(git("tag", "--list", cwd=code, env=env).split())

    trunk_tags = tags()
    opened = job()
    o.step(opened, "open", TETHER_PR="9")
    git_write(code, ws("pr-9"), env, "weights = 9\n")
    o.step(opened, "commit", TETHER_PR="9")
    pr_tags = tags() - trunk_tags
    assert len(pr_tags) == 1
    # by hand, as tether-vcs would: the fresh clone keeps another clone's pin
    by_hand = job()
    git("fetch", "-q", "origin", "pr-9:pr-9", cwd=by_hand, env=env)
    refs = git("for-each-ref", "--format=delete %(refname)", "refs/remotes/", cwd=by_hand, env=env)
    subprocess.run(["git", "update-ref", "--no-deref", "--stdin"], input=refs, cwd=by_hand, env=env, check=True,
                   text=True)
    dry = tether.json("drop", "pr-9", cwd=by_hand)
    kept = [a for a in dry["actions"] if a["op"] == "keep-pin"]
    assert kept and "not created by this clone" in kept[0]["detail"], dry
    dry = tether.json("drop", "pr-9", "--release-foreign", cwd=by_hand)
    assert [a for a in dry["actions"] if a["op"] == "unpin"], dry
    # the script's close
    o.step(job(), "close", TETHER_PR="9")
    assert tags() == trunk_tags
    assert ws("pr-9") not in git("branch", "--list", cwd=code, env=env)
    assert "pr-9" not in o.remote_heads()
