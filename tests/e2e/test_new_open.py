"""new and open over the memory backend: bookmarks, lazy and eager forks,
writes through the working branch, commits on the bookmark, refusals."""
from __future__ import annotations

import json
import tomllib

import journal_pairs
from conftest import git
from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)

BRANCH = f"tether.ws.{DS}.feature"


def test_new_bookmark_lazy_then_open_forks(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    out = tether.json("new", "-b", "feature", cwd=dataset)
    assert out["bookmark"] == "feature"
    assert out["pending_forks"] == {"m1": BRANCH, "m2": BRANCH} or out["working_refs"].get("m2") == BRANCH
    assert git("symbolic-ref", "--short", "HEAD", cwd=dataset, env=env).strip() == "feature"
    assert BRANCH not in mem.show("sys1")["branches"]
    h = tether.json("open", "m1", cwd=dataset)
    assert h["read_only"] is False and h["address"] == f"memory://sys1#{BRANCH}"
    assert mem.show("sys1")["branches"][BRANCH] == "sys1:s0"
    ws = (dataset / ".tether/workspace.toml").read_text()
    assert f'm1 = "{BRANCH}"' in ws and "[fork_points.m1]" in ws


def test_write_on_branch_commit_and_base_untouched(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    assert mem.show("sys1")["branches"][BRANCH] == "sys1:s0"
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    st = tether.json("status", "--snapshot", cwd=dataset)
    assert {o["key"]: o["state"] for o in st["objects"]}["m1"] == "modified"
    assert st["bookmark"] == "feature" and st["trunk"] is False
    out = tether.json("commit", "-m", "on feature", cwd=dataset)
    assert "m1" in out["pinned"]
    assert f'snapshot_id = "{sid}"' in (dataset / ".tether/objects/m1.toml").read_text()
    assert mem.show("sys1")["branches"]["main"] == "sys1:s0"
    # Back on the trunk the manifests are main's again.
    tether("new", "main", cwd=dataset)
    assert 'snapshot_id = "sys1:s0"' in (dataset / ".tether/objects/m1.toml").read_text()
    assert tether("open", "m1", "-r", "feature", cwd=dataset).stdout.strip() == \
        f"memory://sys1#tether.{DS}.a019a84866c45037"


def test_new_refuses_uncommitted_writes_without_discard(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    mem("sys1", {"unpinned": True}, branch=BRANCH)
    proc = tether("new", cwd=dataset, check=False)
    assert proc.returncode == 1 and "unpinned writes" in proc.stderr
    assert "commit them, or pass --discard" in proc.stderr
    # Lazy: the reset waits for the first writable open, which does it.
    tether("new", "--discard", cwd=dataset)
    assert mem.show("sys1")["branches"][BRANCH] != "sys1:s0"
    tether("open", "m1", cwd=dataset)
    assert mem.show("sys1")["branches"][BRANCH] == "sys1:s0"


def test_new_dry_run_and_plan(dataset, tether, tmp_path, mem):
    tether("commit", "-m", "first", cwd=dataset)
    text = tether("new", "-b", "feature", "--dry-run", cwd=dataset).stdout
    # m2 records without a pin, so its branch is forked now: one write.
    assert text.startswith("plan: new (1 write(s))")
    assert "defer-fork" in text and BRANCH in text
    plan = tmp_path / "new.plan"
    tether("new", "-b", "feature", "--eager", "--plan", str(plan), cwd=dataset)
    data = json.loads(plan.read_text())
    kinds = {p["kind"] for p in data["preconditions"]}
    assert {"manifest_hash", "workspace_id", "ref_absent"} <= kinds
    # Someone creates the branch in between: the plan is stale.
    mem("sys1", {"x": 1}, branch=BRANCH)
    proc = tether("new", "--from-plan", str(plan), cwd=dataset, check=False)
    assert proc.returncode == 1 and "exists since the plan was made" in proc.stderr


def test_new_refuses_existing_bookmark_and_generation_names(dataset, tether):
    proc = tether("new", "-b", "main", cwd=dataset, check=False)
    assert proc.returncode == 1 and "bookmark 'main' exists" in proc.stderr
    proc = tether("new", "-b", "feat.2", cwd=dataset, check=False)
    assert proc.returncode == 1 and "ends in `.<number>`" in proc.stderr


def test_open_rules(dataset, tether, mem, env):
    # Nothing committed on a feature bookmark: no fork possible yet.
    tether("commit", "-m", "first", cwd=dataset)
    h = tether.json("open", "m1", "--read-only", cwd=dataset)
    assert h["read_only"] is True
    # On the trunk the writable handle is the upstream branch.
    assert tether.json("open", "m1", cwd=dataset)["address"] == "memory://sys1#main"
    proc = tether("open", "nope", cwd=dataset, check=False)
    assert proc.returncode == 1 and "no such object" in proc.stderr
    # TETHER_REV opens read-only at that commit's pin.
    h = tether.json("open", "m1", cwd=dataset, env={"TETHER_REV": "HEAD"})
    assert h["read_only"] is True and h["address"].endswith(f"tether.{DS}.fc778424e1b91640")
    # A drifted pin is refused.
    path = json.loads(open(env["TETHER_MEMORY_STORE"]).read())
    sysd = path.get("systems", path)["sys1"]
    sid = mem("sys1", {"x": 2})
    data = json.loads(open(env["TETHER_MEMORY_STORE"]).read())
    data.get("systems", data)["sys1"]["tags"][f"tether.{DS}.fc778424e1b91640"] = sid
    open(env["TETHER_MEMORY_STORE"], "w").write(json.dumps(data))
    proc = tether("open", "m1", "-r", "HEAD", cwd=dataset, check=False)
    assert proc.returncode == 1 and "no longer names the committed state" in proc.stderr


def test_commit_then_new_reuses_branch(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=dataset)
    text = tether("new", "--dry-run", cwd=dataset).stdout
    assert "reuse  m1" in text
    tether("new", cwd=dataset)


def test_a_peer_on_the_bookmark_holds_it_unless_its_workspace_file_is_tracked(dataset, tether, env, tmp_path):
    """Another checkout working on a bookmark holds it: `new` refuses to take
    it over.  A workspace.toml git tracks in that checkout is not its own
    record (a copy comes with every clone) and holds nothing; the refusal
    then goes, with a warning that names the file and the fix."""
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", cwd=dataset)
    tether("new", "main", cwd=dataset)
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(wt), cwd=dataset, env=env)
    tether("status", cwd=wt)
    ws = wt / ".tether/workspace.toml"
    lines = ws.read_text().splitlines(keepends=True)
    ws.write_text(lines[0] + 'bookmark = "feature"\n' + "".join(
        line for line in lines[1:] if not line.startswith("bookmark =")))
    proc = tether("new", "feature", cwd=dataset, check=False)
    assert proc.returncode == 1 and "bookmark 'feature' is held by live workspace(s)" in proc.stderr
    git("add", "-f", ".tether/workspace.toml", cwd=wt, env=env)
    proc = tether("new", "feature", "--dry-run", cwd=dataset)
    assert "held by" not in proc.stdout + proc.stderr
    assert (f"warning: skipping .tether/workspace.toml of checkout {wt}: git tracks it there, so it is "
            "not that checkout's own record") in proc.stderr


# --- a `new -b` that fails part-way --------------------------------------------------

import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402


def read_only(tether, root, sub, writable, *args):
    """Run tether with root/sub mounted read-only (files in `writable` left
    writable: what `chmod a-w` on the directory alone leaves), in a private
    mount namespace: a permission bit does not stop root, a read-only mount
    does."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare for a read-only mount")
    d = root / sub
    script = ('set -e; mount --bind -o ro "$1" "$1"; d=$1; shift; n=$1; shift; '
              'while [ "$n" -gt 0 ]; do mount --bind "$d/$1" "$d/$1"; mount -o remount,bind,rw "$d/$1"; '
              'shift; n=$((n-1)); done; exec "$@"')
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare -m is not permitted here")
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(d), str(len(writable)), *writable,
                           str(tether.exe), *args], cwd=root, env=tether.env, capture_output=True, text=True)


def test_new_b_failing_on_a_read_only_tether_dir_takes_the_bookmark_back(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    proc = read_only(tether, dataset, ".tether", ["ops.jsonl", "lock"], "new", "-b", "feat", "--eager")
    assert proc.returncode == 1 and "Read-only file system" in proc.stderr, proc.stderr
    # Nothing is left of it: no bookmark, the checkout where it was.
    assert "feat" not in git("branch", "--list", cwd=dataset, env=env)
    assert git("branch", "--show-current", cwd=dataset, env=env).strip() == "main"
    # The same command again finishes it.
    tether("new", "-b", "feat", "--eager", cwd=dataset)
    assert git("branch", "--show-current", cwd=dataset, env=env).strip() == "feat"
    assert f"tether.ws.{DS}.feat" in mem.show("sys1")["branches"]
    # ... and the genuine "already exists" keeps its hint.
    proc = tether("new", "-b", "feat", cwd=dataset, check=False)
    assert proc.returncode == 1 and "bookmark 'feat' exists; `tether new feat` joins it" in proc.stderr
    # The failed run changed nothing: undo takes back the one that worked.
    assert tether.json("undo", cwd=dataset)["command"] == "new"
    assert git("branch", "--show-current", cwd=dataset, env=env).strip() == "main"


def test_new_b_failing_on_a_read_only_git_dir_is_finished_by_its_rerun(dataset, tether, mem, env):
    """git makes the branch, then cannot move HEAD nor delete the branch
    again (refs/ writable, .git/ itself not): the rerun of the same command
    finishes on that bookmark."""
    tether("commit", "-m", "first", cwd=dataset)
    proc = read_only(tether, dataset, ".git", ["refs", "logs", "tether.lock"], "new", "-b", "feat", "--eager")
    assert proc.returncode == 1 and "HEAD.lock" in proc.stderr, proc.stderr
    assert "run the same `tether new` again" in proc.stderr
    assert "feat" in git("branch", "--list", cwd=dataset, env=env)
    tether("new", "-b", "feat", "--eager", cwd=dataset)
    assert git("branch", "--show-current", cwd=dataset, env=env).strip() == "feat"
    assert f"tether.ws.{DS}.feat" in mem.show("sys1")["branches"]
    proc = tether("new", "-b", "feat", cwd=dataset, check=False)
    assert proc.returncode == 1 and "`tether new feat` joins it" in proc.stderr


@pytest.mark.parametrize("how", ["--keep", "--eager"])
def test_new_that_cannot_read_where_the_vcs_went_fails_and_its_rerun_finishes(how, dataset, tether, mem, env,
                                                                              tmp_path):
    """`new -b X --keep` and `--eager`: the journal entry records where the
    VCS working copy went (undo returns it there).  A git that cannot be run once the switch
    is made (TETHER_GIT a wrapper gone after `git switch`): the command fails
    naming it, never a success whose entry lacks the position; the entry
    stays started and the same command, git back, finishes it."""
    tether("commit", "-m", "first", cwd=dataset)
    real = shutil.which("git")
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    script = (f'#!/bin/sh\n"{real}" "$@"; rc=$?\n'
              'case " $* " in *" switch "*) mv "$0" "$0.gone";; esac\nexit $rc\n')
    wrapper.write_text(script)
    wrapper.chmod(0o755)
    proc = tether("new", "-b", "feat", how, cwd=dataset, check=False, env={"TETHER_GIT": str(wrapper)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "where the VCS working copy is now cannot be read" in proc.stderr, proc.stderr
    assert "executable not found" in proc.stderr and "the same `tether new` again" in proc.stderr
    assert git("branch", "--show-current", cwd=dataset, env=env).strip() == "feat"
    ops = tether.json("ops", cwd=dataset)
    assert ops[0]["command"] == "new" and ops[0]["status"] == "started"
    wrapper.write_text(script)  # git can be run again
    wrapper.chmod(0o755)
    tether("new", "-b", "feat", how, cwd=dataset, env={"TETHER_GIT": str(wrapper)})
    ops = tether.json("ops", cwd=dataset)
    assert ops[0]["command"] == "new" and ops[0]["status"] == "done"
    head = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    done = [json.loads(line) for line in (dataset / ".tether/ops.jsonl").read_text().splitlines()][-1]
    assert done["done"] == ops[0]["id"] and done["result"]["vcs"]["commit"] == head
    assert done["result"]["vcs"]["branch"] == "feat"


def test_a_writable_open_forks_only_its_own_stores_branch_as_tether_vcs_does(tmp_path, env, tether, ref):
    """Two git stores pending on one bookmark: the first writable open of
    one forks that store's branch alone; the other stays pending, whatever
    order workspace.toml lists them in (an undo put them back in another)."""
    steps = [("init", "--dataset-id", journal_pairs.DS), ("add", "code", "../code", "--kind", "git"),
             ("add", "lib", "../lib", "--kind", "git"), ("commit", "-m", "first"),
             ("new", "-b", "lz"), ("open", "code", "--writable"), ("undo",),
             ("open", "code", "--writable")]
    both = journal_pairs.pair(tmp_path, env, tether, ref, steps)
    journal_pairs.assert_same(both)
    ws = {}
    for side in ("ours", "theirs"):
        root = tmp_path / side
        text = (root / "ds/.tether/workspace.toml").read_text()
        ws[side] = {k: v for k, v in tomllib.loads(text).items() if k not in ("workspace_id", "last_snapshot_at")}
        assert git("branch", "--list", "tether.ws.*", cwd=root / "lib", env=env).strip() == ""
    assert ws["ours"] == ws["theirs"]
    assert ws["ours"]["working_refs"] == {"code": journal_pairs.working_ref("lz")}
    assert ws["ours"]["pending_forks"] == {"lib": journal_pairs.working_ref("lz")}
