"""undo: commit (uncommit, pins kept), add/remove/set (manifests back),
new (created branches deleted, bookmark and working copy back), refusals."""
from __future__ import annotations

import json
import shutil

import pytest

import journal_pairs
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


def test_undo_stops_where_the_returned_working_copy_has_a_manifest_it_cannot_read(dataset, tether, mem, env,
                                                                                   tmp_path):
    """undo of `new -b` takes the checkout back to main, which moved on
    meanwhile to a manifest this tether cannot read: the undo stops there
    naming it (not a success that leaves the next command to find it), and
    once it is fixed the same `undo` finishes."""
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", cwd=dataset)
    other = tmp_path / "other"  # another checkout of main moves it on
    git("worktree", "add", "-q", str(other), "main", cwd=dataset, env=env)
    (other / ".tether/objects/m1.toml").write_text("kind = \n")
    git("commit", "-q", "-am", "m1 broken", cwd=other, env=env)
    git("worktree", "remove", "--force", str(other), cwd=dataset, env=env)
    proc = tether("undo", cwd=dataset, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the VCS working copy back where it was" in proc.stderr and "m1.toml" in proc.stderr, proc.stderr
    assert "`tether undo` again finishes it" in proc.stderr
    assert git("branch", "--show-current", cwd=dataset, env=env).strip() == "main"
    git("checkout", "HEAD~1", "--", ".tether/objects/m1.toml", cwd=dataset, env=env)
    ops = tether.json("ops", cwd=dataset)
    assert ops[0]["command"] == "undo" and ops[0]["status"] == "started" and ops[1]["undone_by"] is None
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "new" and out["undo_id"] == ops[0]["id"]
    assert "feature" not in git("branch", "--list", cwd=dataset, env=env)
    assert 'bookmark = "main"' in (dataset / ".tether/workspace.toml").read_text()


# --- against tether-vcs: what undo reads back from the journal ------------------

W = journal_pairs.working_ref
SETUP = [("init", "--dataset-id", journal_pairs.DS), ("add", "code", "../code", "--kind", "git"),
         ("add", "lib", "../lib", "--kind", "git"), ("commit", "-m", "first")]

UNDO_SCENARIOS = {
    # `undo ID` of a `new -b` a later `new` moved on from: its bookmark goes
    # too (still where the `new` left it), and what is left says where the
    # checkout went
    "older new by id": SETUP + [
        ("new", "-b", "a", "--eager"), ("new", "-b", "b", "--eager"), ("undo", "@-2"),
    ],
    # a `new` whose bookmark the checkout still works on, under a working
    # copy that moved on (a commit there, then a detached HEAD): refused,
    # its branches kept
    "new still worked on": SETUP + [
        ("new", "-b", "a", "--eager"), journal_pairs.write("code", W("a"), "code = 2\n", "a2"),
        ("commit", "-m", "on a"), ("undo", "@-2"), ("new", "main"), ("undo", "@-3"),
        journal_pairs.in_git("checkout", "-q", "--detach", "HEAD"), ("undo", "@-2"),
    ],
    # branches holding what a manifest records and no pin holds (a record
    # object's state; a pin deleted since) are not deleted without --discard
    "recorded states": SETUP + [
        ("set", "lib", "--pin", "record"), ("commit", "-m", "rec"), ("new", "-b", "a", "--eager"),
        journal_pairs.write("lib", W("a"), "lib = 2\n", "l2"), journal_pairs.write("code", W("a"), "code = 2\n", "c2"),
        ("commit", "--no-vcs", "-m", "nv"), journal_pairs.delete_tags("code"), ("undo", "@-2"),
        ("undo", "@-2", "--discard"),
    ],
    # restore: the branches it created deleted, those it reset named with
    # their old heads
    "restore": SETUP + [
        ("new", "-b", "r", "--eager"), journal_pairs.write("code", W("r"), "code = 2\n", "r2"),
        ("commit", "-m", "r2"), ("restore", "code", "--from", "HEAD~1"), ("undo",),
        ("new", "main"), ("new", "-b", "r3"), ("restore", "code", "lib", "--from", "HEAD"), ("undo",),
    ],
    # gc: the branches and pins it deleted named, a store it deleted too
    "gc": SETUP + [
        ("new", "-b", "gone", "--eager"), ("new", "main"), journal_pairs.in_git("branch", "-D", "gone"),
        ("gc", "--no-dry-run", "--prune-bookmarks"), ("undo",),
        ("add", "made", "../made", "--kind", "git", "--create"), ("remove", "made"),
        ("gc", "--no-dry-run", "--delete-stores"), ("undo",),
    ],
}


@pytest.mark.parametrize("scenario", list(UNDO_SCENARIOS))
def test_undo_reads_back_what_each_command_journaled_as_tether_vcs_does(tmp_path, env, tether, ref, scenario):
    journal_pairs.assert_same(journal_pairs.pair(tmp_path, env, tether, ref, UNDO_SCENARIOS[scenario]))


# --- where tether keeps its own way (docs/compatibility.md) ----------------------


def test_undo_passes_over_a_finished_repair_where_tether_vcs_refuses(tmp_path, env, tether, ref):
    """A repair only rebuilds what the manifests already promise: `undo`
    passes over it to the commit before, where tether-vcs refuses ("cannot
    undo 'repair'") and so cannot take back the commit while a repair is
    newest."""
    steps = SETUP + [journal_pairs.delete_tags("code"), ("repair",), ("undo",)]
    both = journal_pairs.pair(tmp_path, env, tether, ref, steps)
    ours, theirs = both["ours"][-2], both["theirs"][-2]
    assert ours["rc"] == 0 and "undid <op2> (commit: pinned code, lib; vcs" in ours["said"]
    assert theirs["rc"] == 1 and "cannot undo 'repair'" in theirs["said"] and theirs["records"] == []


def test_undo_killed_after_its_uncommit_is_finished_by_ours_refused_by_tether_vcs(tmp_path, env, tether, ref):
    """An undo killed once it had uncommitted: ours finishes it under its own
    entry; tether-vcs, reading the same journal, takes the commit as one
    that is no longer the working copy's parent and refuses."""
    ds = journal_pairs.make_world(tmp_path / "world", env)
    for args in SETUP:
        tether(*args, cwd=ds)
    killed = tether("undo", cwd=ds, check=False, env={"TETHER_FAULT": "undo:after-uncommit"})
    assert killed.returncode == -9
    copy = tmp_path / "world" / "copy"
    shutil.copytree(ds, copy, symlinks=True)
    theirs = ref("undo", cwd=copy, check=False)
    assert theirs.returncode == 1 and "is no longer the working copy's parent" in theirs.stderr
    ours = tether("undo", cwd=ds)
    assert "was already uncommitted" in ours.stdout
    assert json.loads((ds / ".tether/ops.jsonl").read_text().splitlines()[-1])["undone"]
