"""pull: take the upstream heads on the trunk, pin and commit them."""
from __future__ import annotations

from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)


def test_pull_on_trunk(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    out = tether.json("pull", cwd=dataset)
    assert out["committed"] == {} and out["vcs_commit"] is None
    assert sorted(out["unchanged"]) == ["m1", "m2"]
    sid = mem("sys1", {"up": 1})
    out = tether.json("pull", cwd=dataset)
    assert out["committed"] == {"m1": {"from": {"snapshot_id": "sys1:s0"}, "to": {"snapshot_id": sid}}}
    assert out["pinned"]["m1"].startswith(DS + ".") and out["vcs_commit"]
    assert f'snapshot_id = "{sid}"' in (dataset / ".tether/objects/m1.toml").read_text()
    ops = tether.json("ops", cwd=dataset)
    assert ops[0]["command"] == "pull"


def test_pull_refuses_dirty_manifests_and_other_bookmarks(dataset, tether):
    proc = tether("pull", cwd=dataset, check=False)   # adds not committed yet
    assert proc.returncode == 1 and "uncommitted edits" in proc.stderr
    tether("commit", "-m", "first", cwd=dataset)
    proc = tether("pull", "other", cwd=dataset, check=False)
    assert proc.returncode == 1 and "`tether new other` first" in proc.stderr


def test_pull_moves_an_at_object_onto_the_branch(git_repo, tether, store, mem):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    mem("sys1", {"v": 1})
    tether("add", "m1", "sys1", "--kind", "memory", "--at", "sys1:s0", cwd=git_repo)
    tether("commit", "-m", "at s0", cwd=git_repo)
    assert 'at = "sys1:s0"' in (git_repo / ".tether/objects/m1.toml").read_text()
    out = tether.json("pull", cwd=git_repo)
    assert "m1" in out["committed"]
    assert "\nat = " not in (git_repo / ".tether/objects/m1.toml").read_text()
