"""The icechunk backend end to end.

- Every fixture repository reads as icechunk itself reads it: branch heads,
  live tags, ancestry (id, written_at, message) and node diffs.  Spec-1
  fixtures are read by the icechunk Python package (1.x) through tether-vcs,
  spec-2 ones by icechunk 2.x (the npm WASM build, tests/support).
- States, pin ids, log and diff --content equal tether-vcs's for the same
  spec-1 repositories (tether-vcs drives the icechunk package).
- Our CLI drives a repository real icechunk writes through add, commit,
  verify, log, diff and a fork.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD_DIR, FIXTURES, ROOT

DS = "0a1b2c3d"
ICE = Path(os.environ.get("TETHER_ICECHUNK_FIXTURES", FIXTURES / "icechunk"))
SPEC1 = ["test-repo-v1", "split-repo-v1", "expire-repo-v1-by-1.1.21", "expire-repo-v1-by-2.0.5",
         "expire-repo-v1-by-working-copy"]
SPEC2 = ["test-repo-v2", "split-repo-v2", "expire-repo-v2-by-2.0.5",
         "expire-repo-v2-by-working-copy"]
# Migrated by a 2.0 alpha that icechunk 2.2.2 no longer opens ("error during
# metadata deserialization"); they keep their spec-1 originals' ids, so the
# original read by icechunk 1.x is their expected value.
MIGRATED = {"test-repo-v2-migrated": "test-repo-v1", "split-repo-v2-migrated": "split-repo-v1"}
JS_DIR = Path(os.environ.get("ICECHUNK_JS_DIR", ROOT / ".cache" / "icechunk-js"))


@pytest.fixture(autouse=True)
def quiet_icechunk(env):
    """icechunk's Python package logs a warning about local storage to
    stdout, where tether-vcs prints its JSON."""
    env["ICECHUNK_LOG"] = "error"


class Oracle:
    """Real icechunk behind tests/support/icechunk_writer.{py,mjs}."""

    def __init__(self, spec: int, env: dict[str, str]):
        if spec == 1:
            argv = [sys.executable, str(ROOT / "tests/support/icechunk_writer.py")]
        else:
            if not (JS_DIR / "node_modules/@earthmover/icechunk").is_dir():
                pytest.fail(f"icechunk 2.x for node is not installed in {JS_DIR}: run scripts/setup.sh")
            argv = ["node", "--no-warnings", str(ROOT / "tests/support/icechunk_writer.mjs")]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True,
                                     env={**env, "ICECHUNK_JS_DIR": str(JS_DIR)})

    def __call__(self, *cmd: str) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        assert out.pop("ok"), (cmd, out.get("error"))
        return out

    def close(self) -> None:
        # node's WASI runtime takes seconds to wind down; nothing is pending
        self.proc.kill()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def oracles():
    """One icechunk of each major version for the whole module (starting
    one costs more than most checks)."""
    made: dict[int, Oracle] = {}
    yield made
    for o in made.values():
        o.close()


@pytest.fixture
def oracle(oracles):
    env = {**os.environ, "ICECHUNK_LOG": "error"}

    def make(spec: int) -> Oracle:
        if spec not in oracles:
            oracles[spec] = Oracle(spec, env)
        return oracles[spec]

    return make


def ours(*args: str) -> object:
    proc = subprocess.run([str(BUILD_DIR / "tt_backend"), "icechunk", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def loc(path: Path, **extra) -> str:
    return json.dumps({"uri": str(path), **extra})


def copy_fixture(name: str, tmp_path: Path) -> Path:
    src = ICE / name
    if not src.is_dir():
        pytest.fail(f"fixture {src} missing (set TETHER_ICECHUNK_FIXTURES)")
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def reference_api(env, script: str, *args: str) -> object:
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------- #
# Every fixture reads as icechunk reads it
# --------------------------------------------------------------------------- #
def check_reads_like_icechunk(repo: Path, o: Oracle, theirs_repo: Path | None = None) -> None:
    """theirs_repo: where icechunk reads the same history (default repo)."""
    other = str(theirs_repo or repo)
    branches = o("branches", other)["names"]
    tags = o("tags", other)["names"]
    assert "main" in branches
    refs: dict[str, list[str]] = {}
    for b in branches:
        sid = o("lookup_branch", other, b)["snapshot_id"]
        assert ours(loc(repo), "fingerprint", b) == {"snapshot_id": sid}
        refs.setdefault(sid, []).append(b)
    for t in tags:
        sid = o("lookup_tag", other, t)["snapshot_id"]
        assert ours(loc(repo, at=t), "fingerprint") == {"snapshot_id": sid}
        refs.setdefault(sid, []).append(t)
    for r in branches + tags:
        theirs = o("ancestry", other, r)["entries"]
        mine = ours(loc(repo), "history", r, "1000")
        assert [[e["id"], e["when"], e["message"]] for e in mine] == theirs, r
        for e in mine:  # every branch and live tag at that snapshot, no deleted tag
            assert sorted(e["refs"]) == sorted(refs.get(e["id"], [])), (r, e)
    assert ours(loc(repo), "list_pins") == []


@pytest.mark.parametrize("name", SPEC1)
def test_spec1_fixture_reads_like_icechunk_1x(name, tmp_path, oracle):
    check_reads_like_icechunk(copy_fixture(name, tmp_path), oracle(1))


@pytest.mark.parametrize("name", SPEC2)
def test_spec2_fixture_reads_like_icechunk_2x(name, tmp_path, oracle):
    check_reads_like_icechunk(copy_fixture(name, tmp_path), oracle(2))


@pytest.mark.parametrize("name", sorted(MIGRATED))
def test_migrated_fixture_reads_like_its_original(name, tmp_path, oracle):
    check_reads_like_icechunk(copy_fixture(name, tmp_path), oracle(1),
                              copy_fixture(MIGRATED[name], tmp_path))


def flatten(d: dict) -> dict:
    """icechunk 2.x's diff, flattened as tether-vcs flattens icechunk's Diff."""
    chunks = d.get("updatedChunks") or {}
    entries: dict[str, list[str]] = {}
    for key, change, detail in (("newGroups", "added", "group"), ("newArrays", "added", "array"),
                                ("deletedGroups", "removed", "group"),
                                ("deletedArrays", "removed", "array"),
                                ("updatedGroups", "modified", "group metadata")):
        for p in d[key]:
            entries[p] = [change, detail]
    for p in set(d["updatedArrays"]) | set(chunks):
        if p in entries:
            continue
        parts = (["array metadata"] if p in d["updatedArrays"] else []) + (
            [f"{len(chunks[p])} chunks"] if p in chunks else [])
        entries[p] = ["modified", ", ".join(parts)]
    for m in d.get("movedNodes") or []:
        entries[f"{m['from']} -> {m['to']}"] = ["renamed", ""]
    return entries


@pytest.mark.parametrize("name", ["test-repo-v2", "split-repo-v2",
                                  "expire-repo-v2-by-working-copy"])
def test_spec2_diffs_match_icechunk_2x(name, tmp_path, oracle):
    repo = copy_fixture(name, tmp_path)
    o = oracle(2)
    chain = [e[0] for e in o("ancestry", str(repo), "main")["entries"]]
    pairs = [(chain[i], chain[0]) for i in range(1, len(chain))]
    pairs += [(chain[i + 1], chain[i]) for i in range(len(chain) - 1)]
    for a, b in pairs:
        theirs = flatten(o("diff", str(repo), a, b)["diff"])
        mine = ours(loc(repo), "diff", json.dumps({"snapshot_id": a}),
                    json.dumps({"snapshot_id": b}))
        assert {e["path"]: [e["change"], e["detail"]] for e in mine["entries"]} == theirs, (a, b)


REF_DIFFS = """
import json, sys
from tether.backends.icechunk import IcechunkBackend
b = IcechunkBackend({})
loc = {"uri": sys.argv[1]}
out = {}
for spec in sys.argv[2:]:
    a, _, c = spec.partition(":")
    d = b.diff(loc, {"snapshot_id": a}, {"snapshot_id": c})
    out[spec] = {"entries": [[e.path, e.change, e.detail] for e in d.entries], "note": d.note}
print(json.dumps(out))
"""


@pytest.mark.parametrize("name", ["test-repo-v1", "split-repo-v1"])
def test_spec1_diffs_match_tether_vcs(name, tmp_path, env):
    repo = copy_fixture(name, tmp_path)
    heads = {b: ours(loc(repo), "fingerprint", b)["snapshot_id"] for b in ("main",)}
    chain = [e["id"] for e in ours(loc(repo), "history", "", "100")]
    specs = [f"{chain[i]}:{chain[0]}" for i in range(1, len(chain))]
    # (newer to older is left out: tether-vcs fails there, diffing a
    # snapshot against itself; tether reports the inverted changes)
    if name == "test-repo-v1":
        mine_b = ours(loc(repo), "fingerprint", "my-branch")["snapshot_id"]
        specs += [f"{heads['main']}:{mine_b}", f"{chain[1]}:{mine_b}"]
    theirs = reference_api(env, REF_DIFFS, str(repo), *specs)
    for spec in specs:
        a, _, c = spec.partition(":")
        mine = ours(loc(repo), "diff", json.dumps({"snapshot_id": a}),
                    json.dumps({"snapshot_id": c}))
        assert [[e["path"], e["change"], e["detail"]] for e in mine["entries"]] == \
            theirs[spec]["entries"], spec
        assert (mine.get("note") or "") == (theirs[spec]["note"] or ""), spec


def test_diverged_heads_diff_like_tether_vcs(tmp_path, env, oracle):
    """Two branches' heads: each side against the newest common snapshot,
    both directions, with adds, removals and changes on either side."""
    o = oracle(1)
    repo = tmp_path / "div.icechunk"
    base = make_repo(o, repo, "a1", "a2")[-1]
    o("branch", str(repo), "dev", base)
    main = o("commit", str(repo), "main", "m1")["snapshot_id"]
    main = o("remove", str(repo), "main", "a1")["snapshot_id"]
    dev = o("commit", str(repo), "dev", "d1")["snapshot_id"]
    dev = o("remove", str(repo), "dev", "a2")["snapshot_id"]
    specs = [f"{main}:{dev}", f"{dev}:{main}", f"{base}:{dev}"]
    theirs = reference_api(env, REF_DIFFS, str(repo), *specs)
    for spec in specs:
        a, _, c = spec.partition(":")
        mine = ours(loc(repo), "diff", json.dumps({"snapshot_id": a}),
                    json.dumps({"snapshot_id": c}))
        assert [[e["path"], e["change"], e["detail"]] for e in mine["entries"]] == \
            theirs[spec]["entries"], spec
        assert (mine.get("note") or "") == (theirs[spec]["note"] or ""), spec
    assert "diverged at snapshot" in theirs[specs[0]]["note"]


# --------------------------------------------------------------------------- #
# States, pin ids, log and diff equal tether-vcs's (spec 1)
# --------------------------------------------------------------------------- #
REF_STATES = """
import json, sys
from tether.backends.base import content_state
from tether.backends.icechunk import IcechunkBackend
from tether.manifest import compute_pin_id
b = IcechunkBackend({})
out = {}
for spec in sys.argv[2:]:
    key, _, at = spec.partition("=")
    loc = {"uri": sys.argv[1]}
    if at:
        loc["at"] = at
    state = b.fingerprint(loc, None)
    out[key] = {"state": state,
                "pin_id": compute_pin_id("icechunk", b.identity(loc), content_state(b, state),
                                         "%s")}
print(json.dumps(out))
""" % DS


def test_states_and_pin_ids_match_tether_vcs(tmp_path, tether, env):
    repo = copy_fixture("test-repo-v1", tmp_path)
    ds = tmp_path / "ds"
    ds.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ds, env=env, check=True)
    tether("init", "--dataset-id", DS, cwd=ds)
    tether("add", "arr", str(repo), "--kind", "icechunk", cwd=ds)
    tether("add", "old", str(repo), "--kind", "icechunk", "--at", "it works!", cwd=ds)
    mine = tether.json("snapshot", cwd=ds)
    theirs = reference_api(env, REF_STATES, str(repo), "arr", "old=it works!")
    assert mine == {k: v["state"] for k, v in theirs.items()}
    out = tether.json("commit", "-m", "first", cwd=ds)
    assert out["pinned"]["arr"] == f"tether.{theirs['arr']['pin_id']}"
    assert out["pinned"]["old"] == f"tether.{theirs['old']['pin_id']}"


def make_repo(o: Oracle, path: Path, *arrays: str) -> list[str]:
    o("create", str(path))
    return [o("commit", str(path), "main", a)["snapshot_id"] for a in arrays]


def test_log_and_diff_equal_tether_vcs(tmp_path, tether, ref, env, oracle):
    """Both CLIs on one spec-1 repository icechunk writes: the same pins,
    manifests, log and diff --content."""
    o = oracle(1)
    repo = tmp_path / "stores" / "arr.icechunk"
    make_repo(o, repo, "a1")
    roots = []
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = tmp_path / name
        root.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, env=env, check=True)
        runner("init", "--dataset-id", DS, cwd=root)
        runner("add", "arr", str(repo), "--kind", "icechunk", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    o("commit", str(repo), "main", "a2")
    o("commit", str(repo), "main", "a3")
    for root, runner in zip(roots, (tether, ref)):
        runner("commit", "-m", "second", cwd=root)
    texts = [re.sub(r'captured_at = "[^"]*"\n', "", (r / ".tether/objects/arr.toml").read_text())
             for r in roots]
    assert texts[0] == texts[1]
    for args in (("diff", "--content", "HEAD~1", "HEAD"), ("log", "arr"), ("log", "arr", "-n", "2"),
                 ("verify",)):
        assert tether.json(*args, cwd=roots[0]) == ref.json(*args, cwd=roots[1]), args


# --------------------------------------------------------------------------- #
# Our CLI end to end on icechunk 2.x
# --------------------------------------------------------------------------- #
def test_end_to_end_spec2(tmp_path, tether, env, oracle):
    o = oracle(2)
    repo = tmp_path / "stores" / "arr.icechunk"
    s1, = make_repo(o, repo, "a1")
    ds = tmp_path / "ds"
    ds.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ds, env=env, check=True)
    tether("init", "--dataset-id", DS, cwd=ds)
    tether("add", "arr", str(repo), "--kind", "icechunk", cwd=ds)
    pin1 = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["arr"]
    assert o("tags", str(repo))["names"] == [pin1]
    assert o("lookup_tag", str(repo), pin1)["snapshot_id"] == s1
    s2 = o("commit", str(repo), "main", "a2")["snapshot_id"]
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [(x["key"], x["state"]) for x in st["objects"]] == [("arr", "modified")]
    pin2 = tether.json("commit", "-m", "second", cwd=ds)["pinned"]["arr"]
    assert sorted(o("tags", str(repo))["names"]) == sorted([pin1, pin2])
    assert tether.json("verify", cwd=ds) == {"arr": {"status": "ok", "message": ""}}
    log = tether.json("log", "arr", cwd=ds)
    assert [e["id"] for e in log] == [e[0] for e in o("ancestry", str(repo), "main")["entries"]]
    assert log[0]["refs"] == ["main", pin2]
    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ds)
    assert d[0]["key"] == "arr"
    assert d[0]["detail"]["entries"] == [{"path": "/a2", "change": "added", "detail": "array"}]
    o("check", str(repo))
    assert o("lookup_branch", str(repo), "main")["snapshot_id"] == s2


def test_new_and_promote_spec2(tmp_path, tether, env, oracle):
    """`tether new` forks a branch icechunk 2.x then commits on; `promote`
    resets main onto it; icechunk keeps writing on main afterwards."""
    o = oracle(2)
    repo = tmp_path / "stores" / "arr.icechunk"
    make_repo(o, repo, "a1")
    ds = tmp_path / "ds"
    ds.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ds, env=env, check=True)
    tether("init", "--dataset-id", DS, cwd=ds)
    tether("add", "arr", str(repo), "--kind", "icechunk", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feature", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.feature"
    assert o("branches", str(repo))["names"] == ["main", branch]
    s2 = o("commit", str(repo), branch, "on-feature")["snapshot_id"]
    tether("commit", "-m", "feature work", cwd=ds)
    out = tether.json("promote", cwd=ds)
    assert out["fast_forwarded"] == {"arr": {"snapshot_id": s2}}
    assert o("lookup_branch", str(repo), "main")["snapshot_id"] == s2
    s3 = o("commit", str(repo), "main", "after-promote")["snapshot_id"]
    assert [e[0] for e in o("ancestry", str(repo), "main")["entries"]][:2] == [s3, s2]
    o("check", str(repo))


def test_refused_promote_plan_carries_the_icechunk_hint(tmp_path, tether, ref, env, oracle):
    """main moved since the fork and Icechunk cannot merge: both CLIs plan
    the same refusal on one dataset, ending with tether-vcs's hint."""
    o = oracle(1)  # the spec tether-vcs's icechunk reads
    repo = tmp_path / "stores" / "arr.icechunk"
    make_repo(o, repo, "a1")
    ds = tmp_path / "ds"
    ds.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ds, env=env, check=True)
    tether("init", "--dataset-id", DS, cwd=ds)
    tether("add", "arr", str(repo), "--kind", "icechunk", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feature", "--eager", cwd=ds)
    o("commit", str(repo), f"tether.ws.{DS}.feature", "on-feature")
    o("commit", str(repo), "main", "on-main")
    tether("commit", "-m", "feature work", cwd=ds)
    plans = [json.loads(r("promote", "--dry-run", "--json", cwd=ds).stdout) for r in (tether, ref)]
    details = [[(a["op"], a["key"], a["detail"]) for a in p["actions"]] for p in plans]
    assert details[0] == details[1]
    assert details[0][0][0] == "refuse"
    assert details[0][0][2].endswith("; Icechunk has no merge; re-apply the writes on a fresh fork "
                                      "of the base branch, or reset the base with repo.reset_branch() "
                                      "if losing its newer snapshots is intended")
