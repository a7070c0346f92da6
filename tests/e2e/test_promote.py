"""promote over the memory backend: fast-forward and trunk move, merge then
commit then promote, whole-or-nothing, conflicts, stale plans."""
from __future__ import annotations

import json

from conftest import git
from test_commit import DS, mem, store  # noqa: F401  (fixtures)

BRANCH = f"tether.ws.{DS}.feature"


import pytest


@pytest.fixture
def feature(git_repo, tether, store, mem):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "m1", "sys1", "--kind", "memory", cwd=git_repo)
    tether("add", "m2", "sys2", "--kind", "memory", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    tether("new", "-b", "feature", "--eager", cwd=git_repo)
    return git_repo


def test_fast_forward_moves_bases_and_trunk(feature, tether, mem, env):
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    head = git("rev-parse", "feature", cwd=feature, env=env).strip()
    out = tether.json("promote", cwd=feature)
    assert out["fast_forwarded"] == {"m1": {"snapshot_id": sid}}
    assert out["skipped"] == ["m2"] and out["trunk_moved"] == head
    assert mem.show("sys1")["branches"]["main"] == sid
    assert git("rev-parse", "main", cwd=feature, env=env).strip() == head
    # A second promote has nothing to do.
    again = tether.json("promote", cwd=feature)
    assert again["fast_forwarded"] == {} and again["trunk_moved"] is None


def test_uncommitted_writes_refused_and_hold_the_rest(feature, tether, mem, env):
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    mem("sys2", {"g": 1}, branch=BRANCH)  # not committed
    proc = tether("promote", cwd=feature, check=False)
    assert proc.returncode == 1
    assert "refused        m2:" in proc.stdout and "commit` them first" in proc.stdout
    assert "held           m1:" in proc.stdout
    assert mem.show("sys1")["branches"]["main"] == "sys1:s0"
    assert git("rev-parse", "main", cwd=feature, env=env) != git("rev-parse", "feature", cwd=feature, env=env)
    # Naming keys lands a subset on purpose, and never moves the trunk.
    out = tether.json("promote", "m1", cwd=feature)
    assert list(out["fast_forwarded"]) == ["m1"] and out["trunk_moved"] is None


def test_merge_then_commit_then_promote(feature, tether, mem, env):
    mem("sys2", {"base": 1})                       # the base moved
    mem("sys2", {"mine": 1}, branch=BRANCH)        # and the fork too
    tether("commit", "-m", "feature work", cwd=feature)
    out = tether.json("promote", cwd=feature)
    assert list(out["merged"]) == ["m2"] and out["trunk_moved"] is None
    merged = out["merged"]["m2"]["snapshot_id"]
    # The working branch follows the merge result.
    assert mem.show("sys2")["branches"][BRANCH] == merged
    tether("commit", "-m", "pin the merge", cwd=feature)
    out = tether.json("promote", cwd=feature)
    assert out["trunk_moved"] == git("rev-parse", "feature", cwd=feature, env=env).strip()


def test_conflict_reported_base_untouched(feature, tether, mem):
    mem("sys2", {"k": "base"})
    mem("sys2", {"k": "mine"}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    before = mem.show("sys2")["branches"]["main"]
    proc = tether("promote", "--json", cwd=feature, check=False)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["conflicts"] == {"m2": ["k"]} and "m2" in out["refused"]
    assert mem.show("sys2")["branches"]["main"] == before


def test_strategy_ff_refuses_merges(feature, tether, mem):
    mem("sys2", {"base": 1})
    mem("sys2", {"mine": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    proc = tether("promote", "--strategy", "ff", "--json", cwd=feature, check=False)
    assert proc.returncode == 1 and "strategy=ff" in json.loads(proc.stdout)["refused"]["m2"]
    assert tether("promote", "--strategy", "bogus", cwd=feature, check=False).returncode == 1


def test_stale_promote_plan(feature, tether, mem, tmp_path):
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    plan = tmp_path / "p.plan"
    tether("promote", "--plan", str(plan), cwd=feature)
    kinds = {p["kind"] for p in json.loads(plan.read_text())["preconditions"]}
    assert {"workspace_id", "workspace_bookmark", "bookmark_head", "manifest_hash", "base_state", "ref_head"} <= kinds
    mem("sys1", {"moved": 1})  # the base moves under the plan
    proc = tether("promote", "--from-plan", str(plan), cwd=feature, check=False)
    assert proc.returncode == 1 and "base branch moved since the plan was made" in proc.stderr


def test_promote_on_trunk_does_nothing(git_repo, tether, store):
    tether("init", cwd=git_repo)
    tether("add", "m1", "sys1", "--kind", "memory", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    out = tether.json("promote", cwd=git_repo)
    assert out["fast_forwarded"] == {} and out["trunk_moved"] is None
