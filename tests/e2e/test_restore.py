"""restore KEY --from REV: reset one object's working branch to what a
dataset revision pinned; nothing else moves."""
from __future__ import annotations

import json

from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)

BRANCH = f"tether.ws.{DS}.feature"


def test_restore_resets_the_branch_to_an_old_pin(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    sid = mem("sys1", {"v": 2}, branch=BRANCH)
    tether("commit", "-m", "v2", cwd=dataset)
    out = tether.json("restore", "m1", "--from", "main", cwd=dataset)
    assert out == {"from": "main", "at": None, "working_refs": {"m1": BRANCH}}
    assert mem.show("sys1")["branches"][BRANCH] == "sys1:s0"
    # The manifest still records what the bookmark committed; status says modified.
    assert f'snapshot_id = "{sid}"' in (dataset / ".tether/objects/m1.toml").read_text()
    st = tether.json("status", "--snapshot", cwd=dataset)
    assert {o["key"]: o["state"] for o in st["objects"]}["m1"] == "modified"
    assert tether.json("ops", cwd=dataset)[0]["command"] == "restore"


def test_restore_refuses_unpinned_writes_and_trunk(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    proc = tether("restore", "m1", "--from", "HEAD", cwd=dataset, check=False)
    assert proc.returncode == 1 and "no working branch to restore" in proc.stderr
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    mem("sys1", {"w": 1}, branch=BRANCH)
    proc = tether("restore", "m1", "--from", "main", cwd=dataset, check=False)
    assert proc.returncode == 1 and "has writes since" in proc.stderr
    tether("restore", "m1", "--from", "main", "--discard", cwd=dataset)
    assert mem.show("sys1")["branches"][BRANCH] == "sys1:s0"
    assert tether("restore", "m1", cwd=dataset, check=False).returncode == 1


def test_restore_from_plan(dataset, tether, mem, tmp_path):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    mem("sys1", {"v": 2}, branch=BRANCH)
    tether("commit", "-m", "v2", cwd=dataset)
    plan = tmp_path / "restore.plan"
    tether("restore", "m1", "--from", "main", "--plan", str(plan), cwd=dataset)
    assert json.loads(plan.read_text())["command"] == "restore"
    out = tether.json("restore", "--from-plan", str(plan), cwd=dataset)
    assert out["working_refs"] == {"m1": BRANCH}
    assert mem.show("sys1")["branches"][BRANCH] == "sys1:s0"
    proc = tether("restore", "--from-plan", str(plan), cwd=dataset, check=False)
    assert proc.returncode == 1 and "re-run the plan" in proc.stderr
