"""undo: commit (uncommit, pins kept), add/remove/set (manifests back),
new (created branches deleted, bookmark and working copy back), refusals."""
from __future__ import annotations

import json

from conftest import git
from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)

BRANCH = f"tether.ws.{DS}.feature"


def test_undo_commit_uncommits_and_keeps_pins(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    head_before = git("rev-parse", "HEAD~1", cwd=dataset, env=env).strip()
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit" and out["irreversible"] == []
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == head_before
    assert "[pin]" in (dataset / ".tether/objects/m1.toml").read_text()
    assert f"tether.{DS}.fc778424e1b91640" in mem.show("sys1")["tags"]
    # The undo is journaled and the commit marked undone; undo again undoes the adds.
    ops = tether.json("ops", cwd=dataset)
    assert ops[0]["command"] == "undo" and ops[1]["undone_by"] == ops[0]["id"]


def test_undo_add_remove_set(git_repo, tether, store):
    tether("init", cwd=git_repo)
    tether("add", "a", "sysa", "--kind", "memory", cwd=git_repo)
    tether("set", "a", "--pin", "record", cwd=git_repo)
    text = tether("undo", cwd=git_repo).stdout
    assert text.startswith("undid ") and "(set: " in text and "a: manifest restored" in text
    assert 'pin = "native"' in (git_repo / ".tether/objects/a.toml").read_text()
    tether("remove", "a", cwd=git_repo)
    tether("undo", cwd=git_repo)
    assert (git_repo / ".tether/objects/a.toml").exists()
    # Undo skips the undos: next is the add.
    tether("undo", cwd=git_repo)
    assert not (git_repo / ".tether/objects/a.toml").exists()


def test_undo_new_deletes_created_branches_and_returns(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    assert BRANCH in mem.show("sys1")["branches"]
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "new"
    assert BRANCH not in mem.show("sys1")["branches"]
    assert git("symbolic-ref", "--short", "HEAD", cwd=dataset, env=env).strip() == "main"
    assert "feature" not in git("branch", "--list", cwd=dataset, env=env)
    assert 'bookmark = "main"' in (dataset / ".tether/workspace.toml").read_text()


def test_undo_new_refuses_branch_with_writes(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    mem("sys1", {"w": 1}, branch=BRANCH)
    proc = tether("undo", cwd=dataset, check=False)
    assert proc.returncode == 1 and "gained writes" in proc.stderr
    tether("undo", "--discard", cwd=dataset)
    assert BRANCH not in mem.show("sys1")["branches"]


def test_undo_refusals(dataset, tether, mem):
    proc = tether("undo", "nope", cwd=dataset, check=False)
    assert proc.returncode == 1 and "no operation 'nope'" in proc.stderr
    tether("commit", "-m", "x", cwd=dataset, check=False, env={"TETHER_FAULT": "commit:after-pin"})
    proc = tether("undo", cwd=dataset, check=False)
    assert proc.returncode == 1 and "never finished" in proc.stderr
