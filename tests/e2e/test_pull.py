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


def test_a_stale_index_lock_in_the_dataset_stops_pull_and_commit_before_they_pin(dataset, tether, mem):
    """The dataset's .git/index.lock (a git killed, or failing on a full
    disk, leaves it) would stop the commit after the pins were made: pull
    and commit find it first, name it and the fix, and change nothing."""
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"up": 1})
    lock = dataset / ".git" / "index.lock"
    lock.write_text("")
    tags = mem.show("sys1")["tags"]
    ops = (dataset / ".tether/ops.jsonl").read_text()
    for command in (["pull"], ["commit", "-m", "second"]):
        proc = tether(*command, cwd=dataset, check=False)
        assert proc.returncode == 1, proc.stderr
        assert (f"{lock} exists: another git process is running in {dataset}, or one crashed; "
                f"if none is running, remove it: rm {lock}") in proc.stderr
        assert mem.show("sys1")["tags"] == tags
        assert (dataset / ".tether/ops.jsonl").read_text() == ops
    lock.unlink()
    out = tether.json("pull", cwd=dataset)
    assert "m1" in out["committed"] and out["vcs_commit"]
