"""new and open over the memory backend: bookmarks, lazy and eager forks,
writes through the working branch, commits on the bookmark, refusals."""
from __future__ import annotations

import json

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
