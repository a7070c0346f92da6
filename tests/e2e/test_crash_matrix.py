"""The crash matrix: every named fault point, and SIGKILLs at random
moments, over commit, new, promote, gc, restore, pull, undo and repair, on a
dataset holding a git, a file, an icechunk, a lance and a delta object.

After each kill the documented recovery runs: the same command again
(unless the journal shows it had finished), then `tether repair`, then
`tether gc --no-dry-run --release-foreign` (the dataset has no remote and
no clone, and a pin a commit rewritten away named is kept without it, in
case a clone was made meanwhile).  The invariants are then checked by code that does
not use tether's own readers:

- every pin a manifest names (in any reachable dataset commit, or in the
  working tree) exists in its store and points at the manifest's state;
- after gc, no `tether.*` ref survives in a store unless a manifest, the
  workspace's working refs or an open journal entry names it;
- no temp file of tether's is tracked by git, in any reachable commit, or
  left under `.tether/`;
- every store opens with its own library (git fsck, icechunk, pylance,
  deltalake), on every branch and tag, and no Lance branch tree lacks its
  branch;
- `tether verify` passes, and the command's own outcome holds (the commit
  made once, the bookmark set up, the trunk promoted, ...).

The fault points are read from the source, so a new point joins the matrix
by itself; random kills are seeded and bounded (a few per command).
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

os.environ.setdefault("ICECHUNK_LOG", "error")
ic = pytest.importorskip("icechunk")
zarr = pytest.importorskip("zarr")
lance = pytest.importorskip("lance")
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

DS = "0a1b2c3d"
WS = f"tether.ws.{DS}.feature"
COMMANDS = ["commit", "new", "promote", "gc", "restore", "pull", "undo", "repair",
            "forget-workspace", "abandon", "drop"]
COMMANDS += ["upgrade"]
# Scenarios: one per command, and more where a command's points need another
# starting state ("undo-new": undo of a `new`, which returns the working copy).
SCENARIOS = COMMANDS + ["undo-new"]
SCENARIO_OF = {"undo:after-vcs": "undo-new"}
# "upgrade-alpha": an alpha dataset whose pins predate the dataset namespace
# (the upgrade renames them in the store and rewrites the history naming them).
SCENARIOS += ["upgrade-alpha"]
SCENARIO_OF.update({"upgrade:after-renames": "upgrade-alpha", "upgrade:after-history": "upgrade-alpha"})
RANDOM_KILLS = 3


def fault_points() -> list[str]:
    points = set()
    for path in (ROOT / "src").rglob("*.c"):
        for call in re.findall(r"tt_fault\(([^;]*)\);", path.read_text()):
            points.update(re.findall(r'"([a-z-]+:[a-z-]+)"', call))
    return sorted(points)


# Points below the commands, and the commands of the matrix that reach them:
# "fs:before-rename" is every atomic file write; "fork:*" are inside a
# backend's fork, which new and restore run here; "lance:*" inside a Lance
# branch delete, which an undone new and drop run.
# (An undo of a commit and forget-workspace write no file of their own, only
# journal lines and the forgotten checkout's removal.)
LAYERS = {"fs": [c for c in SCENARIOS if c not in ("undo", "forget-workspace", "upgrade", "upgrade-alpha")],
          "fork": ["new", "restore"], "lance": ["undo-new", "drop"]}
POINTS = [p for p in fault_points() if p.split(":")[0] in COMMANDS] + \
    [f"{c}@{p}" for p in fault_points() for c in LAYERS.get(p.split(":")[0], [])]


def sh(*args: str, cwd: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), cwd=str(cwd), env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


class World:
    """Five real stores and a dataset tracking them, driven through the
    stores' own libraries and the tether binary."""

    def __init__(self, tmp: Path, tether, env: dict):
        self.tmp, self.tether, self.env = tmp, tether, env
        st = tmp / "stores"
        st.mkdir()
        self.code, self.files = st / "code", st / "files"
        self.arr, self.table, self.delta = st / "arr.icechunk", st / "t.lance", st / "d.delta"
        self.code.mkdir()
        self.git_code("init", "-q", "-b", "main")
        (self.code / "a").write_text("1\n")
        self.git_code("add", "a")
        self.git_code("commit", "-qm", "c1")
        self.files.mkdir()
        (self.files / "x.txt").write_text("x1")
        repo = ic.Repository.create(ic.local_filesystem_storage(str(self.arr)))
        self._ice_commit(repo, "main", "a0")
        lance.write_dataset(pa.table({"x": pa.array([1, 2], pa.int64())}), str(self.table))
        deltalake.write_deltalake(str(self.delta), pa.table({"x": pa.array([1, 2], pa.int64())}))
        self.ds = tmp / "ds"
        self.ds.mkdir()
        self.git("init", "-q", "-b", "main")
        (self.ds / "README").write_text("dataset\n")
        self.git("add", "README")
        self.git("commit", "-qm", "start")
        self.run("init", "--dataset-id", DS)
        self.run("add", "code", str(self.code), "--kind", "git")
        self.run("add", "files", str(self.files), "--kind", "file")
        self.run("add", "arr", str(self.arr), "--kind", "icechunk")
        self.run("add", "t", str(self.table), "--kind", "lance")
        self.run("add", "d", str(self.delta), "--kind", "delta")
        self.run("commit", "-m", "first")
        self.first = self.rev("HEAD")
        self.n = 0

    # -- drivers ---------------------------------------------------------
    def run(self, *args: str, **kw):
        return self.tether(*args, cwd=self.ds, **kw)

    def git(self, *args: str, check: bool = True) -> str:
        return sh("git", *args, cwd=self.ds, env=self.env, check=check).stdout

    def git_code(self, *args: str, check: bool = True) -> str:
        return sh("git", *args, cwd=self.code, env=self.env, check=check).stdout

    def rev(self, what: str) -> str:
        return self.git("rev-parse", what).strip()

    @staticmethod
    def _ice_commit(repo, branch: str, name: str) -> str:
        s = repo.writable_session(branch)
        g = zarr.open_group(store=s.store, mode="a")
        g.create_array(name, shape=(2,), dtype="i4")
        return s.commit(f"write {name}")

    def write(self, branch: str, lance_too: bool = True) -> None:
        """One new write in every branchable store on `branch`, and (on the
        trunk) an append to the delta table."""
        self.n += 1
        head = self.git_code("rev-parse", f"refs/heads/{branch}").strip()
        new = self.git_code("commit-tree", f"{head}^{{tree}}", "-p", head, "-m", f"w{self.n}").strip()
        self.git_code("update-ref", f"refs/heads/{branch}", new, head)
        self._ice_commit(ic.Repository.open(ic.local_filesystem_storage(str(self.arr))), branch, f"a{self.n}")
        if lance_too:
            ds = lance.dataset(str(self.table))
            if branch != "main":
                ds = ds.checkout_version((branch, None))
            lance.write_dataset(pa.table({"x": pa.array([self.n], pa.int64())}), ds, mode="append")
        if branch == "main":
            deltalake.write_deltalake(str(self.delta), pa.table({"x": pa.array([self.n], pa.int64())}),
                                      mode="append")

    # -- what the stores hold, read by their own libraries ----------------
    def native_refs(self) -> dict[str, dict[str, str]]:
        """{store: {ref name: kind}} for every tether.* ref."""
        out: dict[str, dict[str, str]] = {}
        refs = self.git_code("for-each-ref", "--format=%(refname)", "refs/tags", "refs/heads").split()
        out["code"] = {r.split("/", 2)[2]: r.split("/")[1] for r in refs if "/tether." in r}
        repo = ic.Repository.open(ic.local_filesystem_storage(str(self.arr)))
        out["arr"] = {**{b: "heads" for b in repo.list_branches()}, **{t: "tags" for t in repo.list_tags()}}
        ds = lance.dataset(str(self.table))
        out["t"] = {**{b: "heads" for b in ds.branches.list()}, **{t: "tags" for t in ds.tags.list()}}
        return {k: {n: v for n, v in d.items() if n.startswith("tether.")} for k, d in out.items()}

    def pin_points_at_state(self, key: str, ref: str, state: dict) -> str | None:
        """None when `ref` exists in the store at `state`, else why not."""
        if key == "code":
            p = sh("git", "rev-parse", "-q", "--verify", f"refs/tags/{ref}^{{commit}}", cwd=self.code,
                   env=self.env, check=False)
            if p.returncode != 0:
                return "tag missing"
            return None if p.stdout.strip() == state["sha"] else f"tag at {p.stdout.strip()}"
        if key == "arr":
            repo = ic.Repository.open(ic.local_filesystem_storage(str(self.arr)))
            if ref not in repo.list_tags():
                return "tag missing"
            got = repo.lookup_tag(ref)
            return None if got == state["snapshot_id"] else f"tag at {got}"
        if key == "t":
            tags = lance.dataset(str(self.table)).tags.list()
            if ref not in tags:
                return "tag missing"
            t = tags[ref]
            got = (t["branch"] or "main", t["version"])
            return None if got == (state["branch"], state["version"]) else f"tag at {got}"
        return f"{key} has no native pins"

    def open_every_store(self) -> None:
        sh("git", "fsck", "--no-progress", "--no-dangling", cwd=self.code, env=self.env)
        for r in self.git_code("for-each-ref", "--format=%(refname)").split():
            self.git_code("cat-file", "-e", f"{r}^{{commit}}")
        repo = ic.Repository.open(ic.local_filesystem_storage(str(self.arr)))
        for b in repo.list_branches():
            list(zarr.open_group(store=repo.readonly_session(branch=b).store, mode="r").array_keys())
        for t in repo.list_tags():
            list(zarr.open_group(store=repo.readonly_session(tag=t).store, mode="r").array_keys())
        ds = lance.dataset(str(self.table))
        ds.to_table()
        branches = ds.branches.list()
        for b in branches:
            ds.checkout_version((b, None)).to_table()
        for t in ds.tags.list():
            ds.checkout_version(t).to_table()
        tree = self.table / "tree"
        if tree.is_dir():
            leftovers = sorted(p.name for p in tree.iterdir() if p.name not in branches)
            assert not leftovers, f"lance branch trees without a branch: {leftovers}"
        deltalake.DeltaTable(str(self.delta)).to_pyarrow_table()

    # -- what the dataset says -----------------------------------------
    def manifests(self) -> list[tuple[str, dict]]:
        """(where, manifest) for every manifest in every reachable commit
        and in the working tree."""
        out = []
        for c in self.git("rev-list", "--all").split():
            listing = self.git("ls-tree", "-r", "--name-only", c, "--", ".tether/objects")
            for path in listing.split():
                if path.endswith(".toml"):
                    out.append((f"{c[:12]}:{path}", tomllib.loads(self.git("show", f"{c}:{path}"))))
        for path in sorted((self.ds / ".tether/objects").glob("*.toml")):
            out.append((f"worktree:{path.name}", tomllib.loads(path.read_text())))
        return out

    def journal(self) -> list[dict]:
        """The journal's records.  A SIGKILL can cut an append short (the
        kernel stops a write at a page boundary when a fatal signal is
        pending): such a torn line is skipped, as tether reads it."""
        p = self.ds / ".tether/ops.jsonl"
        out = []
        for line in p.read_text().splitlines() if p.exists() else []:
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # torn by a kill mid-append
        return out

    def open_entries(self) -> list[dict]:
        lines = self.journal()
        done = {x["done"] for x in lines if "done" in x}
        begun = [x for x in lines if "command" in x and "id" in x]
        return [x for x in begun if x["id"] not in done]

    def finished_since(self, command: str, mark: int) -> bool:
        """Whether an entry of `command` begun after journal line `mark` is done."""
        lines = self.journal()
        done = {x["done"] for x in lines if "done" in x}
        begun = [x for x in lines[mark:] if x.get("command") == command and "id" in x]
        return bool(begun) and begun[-1]["id"] in done

    def temp_files(self) -> list[str]:
        pat = re.compile(r"(^|/)\.[^/]*\.tmp$|\.tmp$")
        tracked = set()
        for c in self.git("rev-list", "--all").split():
            tracked.update(p for p in self.git("ls-tree", "-r", "--name-only", c).split() if pat.search(p))
        tracked.update(p for p in self.git("ls-files").split() if pat.search(p))
        left = [str(p.relative_to(self.ds)) for p in (self.ds / ".tether").rglob("*") if pat.search(p.name)]
        return sorted(tracked) + [f"left: {p}" for p in sorted(left)]

    # -- the invariants ---------------------------------------------------
    def check_invariants(self, label: str) -> None:
        problems = []
        named: set[str] = set()
        for where, m in self.manifests():
            pin = m.get("pin")
            if not pin or "ref" not in pin:
                continue
            named.add(pin["ref"])
            why = self.pin_points_at_state(m["key"], pin["ref"], m["state"])
            if why:
                problems.append(f"{where}: pin {pin['ref']}: {why}")
        ws_path = self.ds / ".tether/workspace.toml"
        ws = tomllib.loads(ws_path.read_text()) if ws_path.exists() else {}
        named.update(v for v in ws.get("working_refs", {}).values() if isinstance(v, str))
        for e in self.open_entries():
            named.update(re.findall(r"tether\.[A-Za-z0-9._-]+", json.dumps(e)))
        for store, refs in self.native_refs().items():
            for ref, kind in refs.items():
                if ref not in named:
                    problems.append(f"{store}: {kind} {ref} survived gc but nothing names it")
        problems += [f"temp file: {p}" for p in self.temp_files()]
        assert not (self.ds / ".git/index.lock").exists(), "dataset .git/index.lock left behind"
        assert not problems, f"{label}:\n  " + "\n  ".join(problems)
        self.open_every_store()
        v = self.run("verify", "--deep", check=False)
        assert v.returncode == 0, f"{label}: verify exited {v.returncode}\n{v.stdout}\n{v.stderr}"


# --------------------------------------------------------------------------- #
# Scenarios: the state each command starts from, the command, its outcome
# --------------------------------------------------------------------------- #
def on_feature(w: World, lance_too: bool = True) -> None:
    w.run("new", "-b", "feature", "--eager")
    w.write(WS, lance_too)
    w.run("commit", "-m", "feature work")


def prep(w: World, command: str) -> list[str]:
    if command == "commit":
        w.write("main")
        return ["commit", "-m", "second"]
    if command == "new":
        return ["new", "-b", "feature", "--eager"]
    if command == "promote":
        on_feature(w, lance_too=False)  # Lance cannot move a branch head: promote refuses it
        return ["promote"]
    if command == "gc":
        for msg in ("second", "third"):
            w.write("main")
            w.run("commit", "-m", msg)
        w.git("reset", "-q", "--hard", "HEAD~2")
        return ["gc", "--no-dry-run", "--release-foreign"]
    if command == "restore":
        on_feature(w)
        return ["restore", "code", "t", "arr", "--from", "HEAD~1"]
    if command == "pull":
        w.write("main")
        return ["pull"]
    if command == "undo-new":
        w.run("new", "-b", "feature", "--eager")
        return ["undo"]
    if command == "undo":
        w.write("main")
        w.run("commit", "-m", "second")
        return ["undo"]
    if command == "repair":
        w.run("new", "-b", "feature", "--eager")
        w.git_code("branch", "-D", WS)
        m = {k: tomllib.loads((w.ds / f".tether/objects/{k}.toml").read_text()) for k in ("code", "t")}
        w.git_code("tag", "-d", m["code"]["pin"]["ref"])
        lance.dataset(str(w.table)).tags.delete(m["t"]["pin"]["ref"])
        return ["repair"]
    if command == "forget-workspace":
        w.peer = w.tmp / "peer"
        w.git("worktree", "add", "-q", "-b", "peer-wt", str(w.peer))
        w.tether("status", cwd=w.peer)
        wid = tomllib.loads((w.peer / ".tether/workspace.toml").read_text())["workspace_id"]
        return ["forget-workspace", wid]
    if command == "drop":
        on_feature(w)  # and stay on it: the drop leaves for main first
        return ["drop", "feature", "--no-dry-run"]
    if command == "abandon":
        for msg in ("second", "third"):
            w.write("main")
            w.run("commit", "-m", msg)
        return ["abandon", w.rev("HEAD~1")]
    if command == "upgrade":
        # a version-4 dataset (0.1.0b1-b3's format, which needs only the
        # version changed): the last commit records it
        w.run("remove", "files")  # a file object needs a part this build does not carry
        w.run("commit", "-m", "without files")
        cfg = w.ds / "tether.toml"
        cfg.write_text(cfg.read_text().replace("version = 5", "version = 4"))
        w.git("commit", "-q", "-m", "as 0.1.0b3 left it", "--", "tether.toml")
        return ["upgrade"]
    if command == "upgrade-alpha":
        # as 0.1.0a5 left it (version 1): the git pin named "tether.<12 hex>",
        # outside the dataset's namespace, in the store and in the last commit
        w.run("remove", "files")
        w.run("commit", "-m", "without files")
        path = w.ds / ".tether/objects/code.toml"
        pin = tomllib.loads(path.read_text())["pin"]
        old = pin["id"].split(".")[1][:12]
        sha = w.git_code("rev-parse", f"{pin['ref']}^{{commit}}").strip()
        w.git_code("tag", f"tether.{old}", sha)
        w.git_code("tag", "-d", pin["ref"])
        path.write_text(path.read_text().replace(pin["ref"], f"tether.{old}").replace(pin["id"], old))
        cfg = w.ds / "tether.toml"
        cfg.write_text(cfg.read_text().replace("version = 5", "version = 1"))
        w.git("commit", "-q", "-m", "as 0.1.0a5 left it", "--", "tether.toml", ".tether/objects/code.toml")
        w.alpha_pin = (old, pin["ref"])
        return ["upgrade"]
    raise AssertionError(f"no crash scenario for the command {command!r}: add one to prep()")


def subjects(w: World) -> list[str]:
    return w.git("log", "--format=%s", "HEAD").splitlines()


def check_outcome(w: World, command: str) -> None:
    """What the command, once finished by its recovery, must have done."""
    def clean() -> list:
        objs = json.loads(w.run("status", "--snapshot", "--json").stdout)["objects"]
        return [(o["key"], o["state"]) for o in objs if o["state"] != "clean"]

    if command == "commit":
        assert subjects(w) == ["second", "first", "start"], subjects(w)
        # a branch-less table stays at its pin until a trunk pull
        assert clean() == [("d", "behind")]
    elif command == "new":
        ws = tomllib.loads((w.ds / ".tether/workspace.toml").read_text())
        assert ws["bookmark"] == "feature"
        assert ws["working_refs"] == {"arr": WS, "code": WS, "t": WS}
        assert w.git("symbolic-ref", "--short", "HEAD").strip() == "feature"
        refs = w.native_refs()
        assert all(refs[s].get(WS) == "heads" for s in ("code", "arr", "t")), refs
    elif command == "promote":
        assert w.rev("main") == w.rev("feature")
        feat = {k: tomllib.loads(w.git("show", f"feature:.tether/objects/{k}.toml")) for k in ("code", "t", "arr")}
        assert w.git_code("rev-parse", "refs/heads/main").strip() == feat["code"]["state"]["sha"]
        assert lance.dataset(str(w.table)).version == feat["t"]["state"]["version"]
        repo = ic.Repository.open(ic.local_filesystem_storage(str(w.arr)))
        assert repo.lookup_branch("main") == feat["arr"]["state"]["snapshot_id"]
    elif command == "gc":
        assert subjects(w) == ["first", "start"]
    elif command == "restore":
        first = {k: tomllib.loads(w.git("show", f"{w.first}:.tether/objects/{k}.toml")) for k in ("code", "arr")}
        assert w.git_code("rev-parse", f"refs/heads/{WS}").strip() == first["code"]["state"]["sha"]
        repo = ic.Repository.open(ic.local_filesystem_storage(str(w.arr)))
        assert repo.lookup_branch(WS) == first["arr"]["state"]["snapshot_id"]
    elif command == "pull":
        assert len(subjects(w)) == 3 and subjects(w)[1:] == ["first", "start"], subjects(w)
        assert clean() == []
    elif command == "undo":
        assert w.rev("HEAD") == w.first
    elif command == "undo-new":
        ws = tomllib.loads((w.ds / ".tether/workspace.toml").read_text())
        assert ws["bookmark"] == "main" and not ws.get("working_refs"), ws
        assert w.git("symbolic-ref", "--short", "HEAD").strip() == "main"
        refs = w.native_refs()
        assert not any(WS in refs[s] for s in ("code", "arr", "t")), refs
    elif command == "repair":
        # the lost working branch is back at its fork point; pins are checked below
        ws = tomllib.loads((w.ds / ".tether/workspace.toml").read_text())
        assert w.git_code("rev-parse", f"refs/heads/{WS}").strip() == ws["fork_points"]["code"]["sha"]
    elif command == "drop":
        assert w.git("branch", "--list", "feature") == ""
        refs = w.native_refs()
        assert not any(WS in r for r in refs.values()), refs
    elif command == "abandon":
        assert subjects(w) == ["third", "first", "start"], subjects(w)
        assert w.git("status", "--porcelain", "--untracked-files=no") == ""
    elif command == "upgrade":
        assert "version = 5" in (w.ds / "tether.toml").read_text()
        assert subjects(w)[0] == "tether upgrade: v4 -> v5", subjects(w)
        assert w.git("status", "--porcelain", "--untracked-files=no") == ""
    elif command == "upgrade-alpha":
        old, new = w.alpha_pin
        assert "version = 5" in (w.ds / "tether.toml").read_text()
        assert subjects(w)[:2] == ["tether upgrade: v1 -> v5", "as 0.1.0a5 left it"], subjects(w)
        assert w.git("status", "--porcelain", "--untracked-files=no") == ""
        # the store holds the pin under its namespaced name only, and no
        # reachable commit names the old one
        refs = w.native_refs()["code"]
        assert new in refs and f"tether.{old}" not in refs, refs
        history = w.git("log", "--all", "-p", "--format=", "--", ".tether/objects")
        assert f'id = "{old}"' not in history and f'"tether.{old}"' not in history
        assert tomllib.loads((w.ds / ".tether/objects/code.toml").read_text())["pin"]["ref"] == new
    elif command == "forget-workspace":
        # its state is gone (the VCS half goes with the rerun while the
        # state file is still there to find the checkout by)
        assert not (w.peer / ".tether/workspace.toml").exists()
        assert (w.ds / ".tether/workspace.toml").exists()


def recover(w: World, argv: list[str], mark: int, label: str) -> None:
    """The documented recovery: rerun (unless the journal says it finished),
    then repair, then gc.  `mark`: the journal's length before the kill."""
    command = argv[0]
    if not w.finished_since(command, mark):
        p = w.run(*argv, check=False)
        assert p.returncode == 0, f"{label}: rerun `tether {' '.join(argv)}` exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    p = w.run("repair", check=False)
    assert p.returncode == 0, f"{label}: repair exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    p = w.run("gc", "--no-dry-run", "--release-foreign", check=False)
    assert p.returncode == 0, f"{label}: gc exited {p.returncode}\n{p.stdout}\n{p.stderr}"


def wait_for_group(pgid: int, timeout: float = 60.0) -> None:
    """Until no process of group pgid is left (its orphans have exited)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
    raise AssertionError(f"processes of group {pgid} still running after {timeout:.0f} s")


@pytest.fixture
def world(tmp_path, tether, env):
    env["ICECHUNK_LOG"] = "error"
    return World(tmp_path, tether, env)


# Points inside a kind the matrix's world does not hold: each is killed at
# by a test of that kind's own, which must exist and name the point.
ELSEWHERE = {
    "iceberg:after-metadata-write": ("test_iceberg_backend.py",
                                     "test_a_commit_killed_between_the_metadata_file_and_the_swap"),
}


def test_every_fault_point_has_a_scenario():
    for point, (file, test) in ELSEWHERE.items():
        text = (Path(__file__).parent / file).read_text()
        assert f"def {test}(" in text and point in text, f"{point}: {file}::{test} is gone or no longer kills there"
    commands = {p.split(":")[0] for p in fault_points() if p not in ELSEWHERE} - set(LAYERS)
    assert commands <= set(COMMANDS), f"fault points of commands with no crash scenario: {sorted(commands)}"
    # every command in the matrix has named points of its own
    missing = [c for c in COMMANDS if c not in commands]
    assert not missing, f"commands without named fault points: {missing}"


@pytest.mark.parametrize("point", POINTS)
def test_killed_at_named_point_converges(world, point):
    command, _, generic = point.partition("@")
    if generic:
        point = generic
    else:
        command = SCENARIO_OF.get(point, point.split(":")[0])
    argv = prep(world, command)
    mark = len(world.journal())
    p = world.run(*argv, check=False, env={"TETHER_FAULT": point})
    if p.returncode == 0:
        # the command never reached the point (nothing to do there in this
        # scenario): make sure the point is real for some scenario of ours
        pytest.fail(f"{point}: not reached by the {command} scenario")
    assert p.returncode == -signal.SIGKILL or p.returncode == 137, (point, p.returncode, p.stderr)
    recover(world, argv, mark, point)
    check_outcome(world, command)
    world.check_invariants(point)


@pytest.mark.parametrize("turn", [1, 2, 3])
@pytest.mark.parametrize("command, lance_ref", [("restore", f"{WS}.2"), ("new", WS)])
def test_killed_after_each_fork_converges(world, command, lance_ref, turn):
    """A restore or `new -b` killed after its Nth fork, before the journal
    and the workspace record it, converges on the branch the killed run made.
    restore: the rerun takes over the sibling the killed run forked (Lance
    cannot reset a branch pins hold, so it forks `<ws>.2`) rather than
    forking `<ws>.3` beside it, which nothing would ever name or release.
    new: the Lance branch under the planned name ends up the working ref."""
    argv = prep(world, command)
    mark = len(world.journal())
    point = f"{command}:after-fork#{turn}"
    p = world.run(*argv, check=False, env={"TETHER_FAULT": point})
    assert p.returncode in (-signal.SIGKILL, 137), (point, p.returncode, p.stderr)
    recover(world, argv, mark, point)
    check_outcome(world, command)
    world.check_invariants(point)
    ws = tomllib.loads((world.ds / ".tether/workspace.toml").read_text())
    assert ws["working_refs"]["t"] == lance_ref, ws["working_refs"]


DURATIONS: dict[str, float] = {}


@pytest.mark.parametrize("seed", range(RANDOM_KILLS))
@pytest.mark.parametrize("command", SCENARIOS)
def test_killed_at_random_moment_converges(world, tether, command, seed):
    argv = prep(world, command)
    mark = len(world.journal())
    rng = random.Random(f"{command}:{seed}")
    limit = DURATIONS.get(command, 0.08)
    delay = rng.uniform(0.0, limit)
    start = time.monotonic()
    # its own process group, so the children it leaves can be waited for
    proc = subprocess.Popen([str(tether.exe), *argv], cwd=str(world.ds), env=world.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        proc.wait(timeout=delay)
        # finished before the kill: remember how long it takes, so the
        # next seeds kill within its run
        DURATIONS[command] = max(DURATIONS.get(command, 0.0), time.monotonic() - start)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        # Only tether dies: a `git` it started runs on and finishes its
        # change (a branch made, HEAD moved) with nobody to record it.  The
        # user reruns after that, not while it is still writing.
        wait_for_group(proc.pid)
    label = f"{command} killed after {delay * 1000:.0f} ms (seed {seed})"
    recover(world, argv, mark, label)
    check_outcome(world, command)
    world.check_invariants(label)
