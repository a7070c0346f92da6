"""Crash injection: new, promote and gc killed at each named point
(TETHER_FAULT); rerunning the command or repair converges, nothing is
lost, gc never releases a pin an interrupted operation set out to create,
and no manifest names a pin that does not exist."""
from __future__ import annotations

import json

import pytest

from conftest import git
from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)

BRANCH = f"tether.ws.{DS}.feature"


def journal(root):
    return [json.loads(l) for l in (root / ".tether/ops.jsonl").read_text().splitlines()]


def incomplete(root, command):
    lines = journal(root)
    done = {l["done"] for l in lines if "done" in l}
    return [l for l in lines if l.get("command") == command and l["id"] not in done]


def manifests_pins_exist(root, mem):
    for path in (root / ".tether/objects").rglob("*.toml"):
        text = path.read_text()
        if "[pin]" not in text:
            continue
        ref = text.split('ref = "')[1].split('"')[0]
        system = "sys1" if "sys1" in text else "sys2"
        assert ref in mem.show(system)["tags"], (path, ref)


@pytest.mark.parametrize("point", ["new:after-journal", "new:after-fork"])
def test_new_crash_then_rerun(dataset, tether, mem, env, point):
    tether("commit", "-m", "first", cwd=dataset)
    proc = tether("new", "-b", "feature", "--eager", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0
    assert incomplete(dataset, "new")
    # Rerun: the bookmark may already exist (the crash came after the switch).
    here = git("symbolic-ref", "--short", "HEAD", cwd=dataset, env=env).strip()
    if here == "feature":
        tether("new", "--eager", cwd=dataset)
    else:
        tether("new", "-b", "feature", "--eager", cwd=dataset)
    branches = mem.show("sys1")["branches"]
    assert branches[BRANCH] == "sys1:s0"
    ws = (dataset / ".tether/workspace.toml").read_text()
    assert f'm1 = "{BRANCH}"' in ws
    tether("repair", cwd=dataset)
    manifests_pins_exist(dataset, mem)


@pytest.mark.parametrize("point", ["promote:after-journal", "promote:before-fast-forwards",
                                   "promote:after-move"])
def test_promote_crash_then_rerun(dataset, tether, mem, env, point):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature", cwd=dataset)
    proc = tether("promote", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset, "promote")
    out = tether.json("promote", cwd=dataset)
    assert mem.show("sys1")["branches"]["main"] == sid
    assert git("rev-parse", "main", cwd=dataset, env=env) == git("rev-parse", "feature", cwd=dataset, env=env)
    assert out["refused"] == {} and out["failed"] == {}
    manifests_pins_exist(dataset, mem)


@pytest.mark.parametrize("point", ["gc:after-journal", "gc:after-unpin"])
def test_gc_crash_then_rerun(dataset, tether, mem, env, point):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    tether("commit", "-m", "second", cwd=dataset)
    mem("sys1", {"x": 2})
    tether("commit", "-m", "third", cwd=dataset)
    git("reset", "-q", "--hard", "HEAD~2", cwd=dataset, env=env)   # two pins now unreferenced
    # (released only with --release-foreign: a clone may have been made before the reset)
    proc = tether("gc", "--no-dry-run", "--release-foreign", cwd=dataset, check=False,
                  env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset, "gc")
    tether("gc", "--no-dry-run", "--release-foreign", cwd=dataset)
    tags = [t for t in mem.show("sys1")["tags"] if t.startswith(f"tether.{DS}.")]
    assert tags == [f"tether.{DS}.fc778424e1b91640"]
    manifests_pins_exist(dataset, mem)
    assert tether("verify", cwd=dataset).returncode == 0


def test_gc_keeps_pins_of_an_interrupted_commit(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    tether("commit", "-m", "second", cwd=dataset, check=False, env={"TETHER_FAULT": "commit:after-pin"})
    before = set(mem.show("sys1")["tags"])
    tether("gc", "--no-dry-run", cwd=dataset)
    assert set(mem.show("sys1")["tags"]) == before
