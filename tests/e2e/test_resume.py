"""Interrupted commands finish by running them again: pull and undo killed
at each of their fault points (TETHER_FAULT), and the journal closing what
a rerun, repair or gc finished so that gc can release an interrupted
commit's pins once nothing needs them."""
from __future__ import annotations

import json
import shutil
import tomllib

import pytest

import journal_pairs
from conftest import git
from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)

PIN0 = f"tether.{DS}.fc778424e1b91640"


def journal(root):
    return [json.loads(l) for l in (root / ".tether/ops.jsonl").read_text().splitlines() if l.strip()]


def incomplete(root):
    lines = journal(root)
    done = {l["done"] for l in lines if "done" in l}
    return [l for l in lines if l.get("status") == "started" and l["id"] not in done]


def pin_of(root, key):
    text = (root / ".tether/objects" / f"{key}.toml").read_text()
    return text.split('ref = "')[1].split('"')[0] if "[pin]" in text else None


def state_of(root, key):
    text = (root / ".tether/objects" / f"{key}.toml").read_text()
    return text.split('snapshot_id = "')[1].split('"')[0]


def pulled(dataset, tether, mem, env):
    """The dataset after `commit` then a pull of one upstream write."""
    tether("commit", "-m", "first", cwd=dataset)
    sid = mem("sys1", {"up": 1})
    start = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    return sid, start


def check_pull_result(dataset, tether, mem, env, sid, start):
    """What an uninterrupted pull leaves: one commit on top of where it
    started carrying the pulled manifest, its pin at the pulled state, a
    clean working tree, no pin left over, nothing incomplete."""
    head = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    assert git("rev-parse", "HEAD~1", cwd=dataset, env=env).strip() == start
    assert git("log", "-1", "--format=%s", cwd=dataset, env=env).strip() == "pull main: 1 object"
    assert git("status", "--porcelain", cwd=dataset, env=env).strip() == ""
    assert state_of(dataset, "m1") == sid
    tags = {t: s for t, s in mem.show("sys1")["tags"].items() if t.startswith(f"tether.{DS}.")}
    assert tags[pin_of(dataset, "m1")] == sid
    assert set(tags) == {PIN0, pin_of(dataset, "m1")}
    assert incomplete(dataset) == []
    ops = tether.json("ops", cwd=dataset)
    assert all(o["status"] == "done" for o in ops)
    assert "INCOMPLETE" not in tether("ops", cwd=dataset).stdout
    assert tether("verify", cwd=dataset).returncode == 0
    # The pull is what `undo` takes back.
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "pull" and out["irreversible"] == []
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == start
    return head


@pytest.mark.parametrize("point", ["pull:after-journal", "pull:after-pin", "pull:after-manifests",
                                   "pull:before-vcs-commit", "pull:after-vcs-commit"])
def test_pull_killed_then_rerun_finishes_it(dataset, tether, mem, env, point):
    sid, start = pulled(dataset, tether, mem, env)
    proc = tether("pull", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset)
    tether("pull", cwd=dataset)
    check_pull_result(dataset, tether, mem, env, sid, start)


def test_pull_rerun_leaves_the_users_own_edits_alone(dataset, tether, mem, env):
    pulled(dataset, tether, mem, env)
    proc = tether("pull", cwd=dataset, check=False, env={"TETHER_FAULT": "pull:before-vcs-commit"})
    assert proc.returncode != 0
    m2 = dataset / ".tether/objects/m2.toml"
    m2.write_text(m2.read_text() + "# mine\n")
    proc = tether("pull", cwd=dataset, check=False)
    assert proc.returncode == 1 and "uncommitted edits" in proc.stderr
    assert m2.read_text().endswith("# mine\n")


def test_pull_fault_points_are_not_commits(dataset, tether, mem):
    """A pull is killed at its own points, not at commit's."""
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"up": 1})
    tether("pull", cwd=dataset, env={"TETHER_FAULT": "commit:after-pin"})


# --- undo ------------------------------------------------------------------------


def two_commits(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    first = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    mem("sys1", {"x": 1})
    tether("commit", "-m", "second", cwd=dataset)
    second = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    return first, second


def check_undo_result(dataset, tether, env, first, second):
    """What an uninterrupted undo of the second commit leaves."""
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == first
    assert "objects/m1.toml" in git("status", "--porcelain", cwd=dataset, env=env)
    assert incomplete(dataset) == []
    ops = tether.json("ops", cwd=dataset)
    undos = [o for o in ops if o["command"] == "undo"]
    assert len(undos) == 1 and undos[0]["status"] == "done"
    second_op = next(o for o in ops if o["command"] == "commit" and o["result"].get("vcs_commit") == second)
    assert second_op["undone_by"] == undos[0]["id"]
    assert "INCOMPLETE" not in tether("ops", cwd=dataset).stdout


@pytest.mark.parametrize("point", ["undo:after-journal", "undo:after-uncommit", "undo:after-restore"])
def test_undo_killed_then_rerun_finishes_it(dataset, tether, mem, env, point):
    first, second = two_commits(dataset, tether, mem, env)
    proc = tether("undo", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset)
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit" and out["irreversible"] == []
    check_undo_result(dataset, tether, env, first, second)
    # The first commit is still there, and is what the next undo takes back.
    parent = git("rev-parse", f"{first}~1", cwd=dataset, env=env).strip()
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit" and out["irreversible"] == []
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == parent


def drop_tag(store_path, tag):
    data = json.loads(store_path.read_text())

    def walk(node):
        if isinstance(node, dict):
            if tag in node:
                del node[tag]
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(data)
    store_path.write_text(json.dumps(data))


def test_undo_killed_then_repair_then_undo_finishes_it(dataset, tether, mem, env, store):
    first, second = two_commits(dataset, tether, mem, env)
    proc = tether("undo", cwd=dataset, check=False, env={"TETHER_FAULT": "undo:after-uncommit"})
    assert proc.returncode != 0
    pin = pin_of(dataset, "m1")
    drop_tag(store, pin)
    out = tether.json("repair", cwd=dataset)
    assert out["repinned"]
    assert tether.json("ops", cwd=dataset)[0]["command"] == "repair"
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit"
    check_undo_result(dataset, tether, env, first, second)


def test_undo_after_a_repair_reaches_past_it(dataset, tether, mem, env, store):
    first, second = two_commits(dataset, tether, mem, env)
    drop_tag(store, pin_of(dataset, "m1"))
    assert tether.json("repair", cwd=dataset)["repinned"]
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit"
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == first


# --- the journal closes what was finished -----------------------------------------


def dataset_tags(mem):
    return {t for t in mem.show("sys1")["tags"] if t.startswith(f"tether.{DS}.")}


def crashed_commit(dataset, tether, mem, point="commit:after-pin"):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    proc = tether("commit", "-m", "second", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset)
    leaked = dataset_tags(mem) - {PIN0}
    assert len(leaked) == 1
    return leaked.pop()


def test_rerun_of_a_crashed_commit_closes_it_and_gc_releases_its_pin(dataset, tether, mem):
    leaked = crashed_commit(dataset, tether, mem)
    mem("sys1", {"x": 2})     # the state it pinned is never committed
    tether("commit", "-m", "second", cwd=dataset)
    assert incomplete(dataset) == []
    now = pin_of(dataset, "m1")
    tether("gc", "--no-dry-run", cwd=dataset)
    assert dataset_tags(mem) == {PIN0, now}
    assert leaked != now
    assert tether("verify", cwd=dataset).returncode == 0


def test_repair_closes_a_crashed_commit_and_gc_releases_its_pin(dataset, tether, mem):
    leaked = crashed_commit(dataset, tether, mem)
    tether("repair", cwd=dataset)
    assert incomplete(dataset) == []
    tether("gc", "--no-dry-run", cwd=dataset)
    assert leaked not in dataset_tags(mem) and PIN0 in dataset_tags(mem)
    assert tether("verify", cwd=dataset).returncode == 0
    # Rerunning the commit afterwards cuts the same pin again.
    tether("commit", "-m", "second", cwd=dataset)
    assert pin_of(dataset, "m1") == leaked and leaked in dataset_tags(mem)


def test_gc_closes_a_crashed_commit_the_checkout_moved_past(dataset, tether, mem, env):
    leaked = crashed_commit(dataset, tether, mem)
    (dataset / "README").write_text("moved on\n")
    git("commit", "-q", "-am", "unrelated", cwd=dataset, env=env)
    tether("gc", "--no-dry-run", cwd=dataset)
    assert incomplete(dataset) == []
    assert leaked not in dataset_tags(mem) and PIN0 in dataset_tags(mem)


def test_gc_keeps_the_pins_of_a_crash_with_uncommitted_manifests(dataset, tether, mem, env):
    leaked = crashed_commit(dataset, tether, mem, "commit:before-vcs-commit")
    (dataset / "README").write_text("moved on\n")
    git("commit", "-q", "-m", "unrelated", "README", cwd=dataset, env=env)
    tether("repair", cwd=dataset)
    tether("gc", "--no-dry-run", cwd=dataset)
    assert incomplete(dataset)
    assert leaked in dataset_tags(mem)


@pytest.mark.parametrize("point", ["commit:after-journal", "commit:after-pin", "commit:after-manifests",
                                   "commit:before-vcs-commit", "commit:after-vcs-commit"])
def test_crashed_commit_shows_complete_after_its_rerun(dataset, tether, mem, env, point):
    tether("commit", "-m", "first", cwd=dataset)
    start = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    mem("sys1", {"x": 1})
    proc = tether("commit", "-m", "second", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0
    [entry] = incomplete(dataset)
    tether("commit", "-m", "second", cwd=dataset)
    assert incomplete(dataset) == []
    assert "INCOMPLETE" not in tether("ops", cwd=dataset).stdout
    ops = {o["id"]: o for o in tether.json("ops", cwd=dataset)}
    assert ops[entry["id"]]["status"] == "done"
    assert git("rev-parse", "HEAD~1", cwd=dataset, env=env).strip() == start
    assert git("status", "--porcelain", cwd=dataset, env=env).strip() == ""
    # One undo takes the second commit back, whichever run landed it.
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit" and out["irreversible"] == []
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == start
    if point == "commit:after-vcs-commit":
        assert out["undone"] == entry["id"]     # it had landed: finished, not superseded
    # Nothing of the second commit is left to undo: the next undo is the first's.
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit"


def test_tether_vcs_reads_the_closing_records(dataset, tether, ref, mem, env):
    crashed_commit(dataset, tether, mem)
    first = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    tether("commit", "-m", "second", cwd=dataset)
    proc = ref("ops", cwd=dataset)
    assert proc.returncode == 0 and "INCOMPLETE" not in proc.stdout
    # tether-vcs's undo takes back the rerun, not the moot entry before it.
    ref("undo", cwd=dataset)
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == first


def test_repair_closes_a_crashed_commit_where_tether_vcs_leaves_it_open(tmp_path, env, tether, ref):
    """The same journal read by each: a repair after a commit killed once it
    had pinned closes the moot entry (done, undone by itself) so gc may
    release its pin; tether-vcs's repair leaves it INCOMPLETE for good."""
    ds = journal_pairs.make_world(tmp_path / "world", env)
    for args in (("init", "--dataset-id", journal_pairs.DS), ("add", "code", "../code", "--kind", "git"),
                 ("commit", "-m", "first")):
        tether(*args, cwd=ds)
    journal_pairs.write("code", "main", "code = 2\n", "c2")(tmp_path / "world", env)
    killed = tether("commit", "-m", "second", cwd=ds, check=False, env={"TETHER_FAULT": "commit:after-pin"})
    assert killed.returncode == -9
    copy = tmp_path / "world" / "copy"
    shutil.copytree(ds, copy, symlinks=True)
    tether("repair", cwd=ds)
    ref("repair", cwd=copy)
    crashed = lambda runner, where: [e for e in runner.json("ops", cwd=where) if e["command"] == "commit"][0]
    ours, theirs = crashed(tether, ds), crashed(ref, copy)
    assert ours["status"] == "done" and ours["undone_by"] == ours["id"]
    assert theirs["status"] == "started" and theirs["undone_by"] is None


@pytest.mark.parametrize("point", ["undo:after-journal", "undo:after-vcs", "undo:after-restore"])
def test_undo_of_new_killed_then_rerun_finishes_it(dataset, tether, mem, env, point):
    branch = f"tether.ws.{DS}.feature"
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    proc = tether("undo", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset)
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "new" and out["irreversible"] == []
    assert branch not in mem.show("sys1")["branches"]
    assert git("symbolic-ref", "--short", "HEAD", cwd=dataset, env=env).strip() == "main"
    assert "feature" not in git("branch", "--list", cwd=dataset, env=env)
    assert 'bookmark = "main"' in (dataset / ".tether/workspace.toml").read_text()
    assert incomplete(dataset) == []


@pytest.mark.parametrize("point", ["pull:after-manifests", "pull:after-vcs-commit"])
def test_pull_on_a_bookmark_killed_then_rerun(dataset, tether, mem, env, point):
    branch = f"tether.ws.{DS}.feature"
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    sid = mem("sys1", {"f": 1}, branch=branch)
    start = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    proc = tether("pull", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset)
    tether("pull", cwd=dataset)
    assert git("rev-parse", "HEAD~1", cwd=dataset, env=env).strip() == start
    assert git("status", "--porcelain", cwd=dataset, env=env).strip() == ""
    assert state_of(dataset, "m1") == sid
    assert incomplete(dataset) == []
    ws = tomllib.loads((dataset / ".tether/workspace.toml").read_text())
    assert ws["base_states"]["m1"] == {"snapshot_id": sid}
    status = tether.json("status", cwd=dataset)
    assert status["stale"] is False and status["stale_keys"] == []


def test_commit_of_a_removal_killed_after_landing_is_what_undo_takes_back(dataset, tether, env):
    tether("commit", "-m", "first", cwd=dataset)
    tether("remove", "m2", cwd=dataset)
    start = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    proc = tether("commit", "-m", "drop m2", cwd=dataset, check=False,
                  env={"TETHER_FAULT": "commit:after-vcs-commit"})
    assert proc.returncode != 0
    [entry] = incomplete(dataset)
    tether("commit", "-m", "drop m2", cwd=dataset)
    assert incomplete(dataset) == []
    out = tether.json("undo", cwd=dataset)
    assert out["undone"] == entry["id"]
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == start


@pytest.mark.parametrize("point", ["repair:after-journal", "repair:after-repin"])
def test_repair_killed_then_rerun_closes_it(dataset, tether, mem, store, point):
    tether("commit", "-m", "first", cwd=dataset)
    drop_tag(store, PIN0)
    proc = tether("repair", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset)
    tether("repair", cwd=dataset)
    assert PIN0 in dataset_tags(mem)
    assert incomplete(dataset) == []
    assert tether("verify", cwd=dataset).returncode == 0


@pytest.mark.parametrize("point", ["gc:after-journal", "gc:after-unpin"])
def test_gc_killed_then_rerun_closes_it(dataset, tether, mem, env, point):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    # A pin no commit named (one a reset commit named is kept: test_clones.py).
    tether("commit", "-m", "second", "--no-vcs", cwd=dataset)
    git("checkout", "-q", "--", ".tether", cwd=dataset, env=env)
    proc = tether("gc", "--no-dry-run", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0 and incomplete(dataset)
    tether("gc", "--no-dry-run", cwd=dataset)
    assert incomplete(dataset) == []
    assert dataset_tags(mem) == {PIN0}
    assert "INCOMPLETE" not in tether("ops", cwd=dataset).stdout


def test_a_narrower_gc_leaves_an_interrupted_one_open(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    tether("commit", "-m", "second", "--no-vcs", cwd=dataset)
    git("checkout", "-q", "--", ".tether", cwd=dataset, env=env)
    proc = tether("gc", "--no-dry-run", "--prune-bookmarks", cwd=dataset, check=False,
                  env={"TETHER_FAULT": "gc:after-journal"})
    assert proc.returncode != 0
    tether("gc", "--no-dry-run", cwd=dataset)
    assert [e["command"] for e in incomplete(dataset)] == ["gc"]


# --- killed inside the VCS commit ------------------------------------------------


def killing_wrapper(tmp_path, name, real, subcommand):
    """A stand-in for git or jj (TETHER_GIT / TETHER_JJ) that kills its
    caller with SIGKILL when asked to run `subcommand`, and passes anything
    else on: tether dies after `git add` staged the manifests and before
    `git commit` ran, as a crash or a power cut there leaves it."""
    w = tmp_path / name
    w.write_text(f"#!/bin/sh\nfor a in \"$@\"; do\n  case \"$a\" in {subcommand}) kill -9 $PPID; sleep 5; exit 1;; esac\n"
                 f"done\nexec {real} \"$@\"\n")
    w.chmod(0o755)
    return w


def test_pull_killed_between_git_add_and_commit_then_rerun_finishes_it(tmp_path, dataset, tether, mem, env):
    sid, start = pulled(dataset, tether, mem, env)
    wrapper = killing_wrapper(tmp_path, "git-dies-at-commit", "git", "commit")
    proc = tether("pull", cwd=dataset, check=False, env={"TETHER_GIT": str(wrapper)})
    assert proc.returncode == -9 and incomplete(dataset)
    # The manifest is staged, not committed: the window this test is about.
    assert git("status", "--porcelain", cwd=dataset, env=env).startswith("M  .tether/objects/m1.toml")
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == start
    tether("pull", cwd=dataset)
    check_pull_result(dataset, tether, mem, env, sid, start)


def test_pull_rerun_after_a_half_rewound_index_still_finishes_it(tmp_path, dataset, tether, mem, env):
    """The state an earlier rerun left (the manifest put back in the working
    tree, git's staging area still holding the pull's: `MM`) is finished by
    pull too."""
    sid, start = pulled(dataset, tether, mem, env)
    wrapper = killing_wrapper(tmp_path, "git-dies-at-commit", "git", "commit")
    tether("pull", cwd=dataset, check=False, env={"TETHER_GIT": str(wrapper)})
    (dataset / ".tether/objects/m1.toml").write_text(git("show", f"{start}:.tether/objects/m1.toml",
                                                         cwd=dataset, env=env))
    assert git("status", "--porcelain", cwd=dataset, env=env).startswith("MM .tether/objects/m1.toml")
    tether("pull", cwd=dataset)
    check_pull_result(dataset, tether, mem, env, sid, start)


def test_commit_killed_between_git_add_and_commit_then_rerun_finishes_it(tmp_path, dataset, tether, mem, env):
    first, _ = two_commits(dataset, tether, mem, env)
    sid = mem("sys1", {"x": 2})
    wrapper = killing_wrapper(tmp_path, "git-dies-at-commit", "git", "commit")
    proc = tether("commit", "-m", "third", cwd=dataset, check=False, env={"TETHER_GIT": str(wrapper)})
    assert proc.returncode == -9 and incomplete(dataset)
    assert git("status", "--porcelain", cwd=dataset, env=env).startswith("M  .tether/objects/m1.toml")
    second = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    tether("commit", "-m", "third", cwd=dataset)
    assert git("rev-parse", "HEAD~1", cwd=dataset, env=env).strip() == second
    assert git("log", "-1", "--format=%s", cwd=dataset, env=env).strip() == "third"
    assert git("status", "--porcelain", cwd=dataset, env=env).strip() == ""
    assert state_of(dataset, "m1") == sid
    assert incomplete(dataset) == []
    assert tether("verify", cwd=dataset).returncode == 0
    assert git("rev-parse", "HEAD~2", cwd=dataset, env=env).strip() == first


def test_pull_on_jj_killed_at_jj_commit_then_rerun_finishes_it(tmp_path, dataset, tether, mem, env, jj_bin):
    """jj has no staging area, but its working-copy commit moves with every
    snapshot: the rerun finds the interrupted pull by the last commit (@-)."""
    import subprocess
    run = dict(TETHER_JJ=str(jj_bin), JJ_USER="Test", JJ_EMAIL="test@example.com",
               JJ_CONFIG=str(tmp_path / "jjconfig.toml"))
    subprocess.run([str(jj_bin), "git", "init", "--colocate"], cwd=dataset, env={**env, **run},
                   check=True, capture_output=True)

    def jj(*args):
        return subprocess.run([str(jj_bin), "--no-pager", "--color=never", *args], cwd=dataset,
                              env={**env, **run}, check=True, capture_output=True, text=True).stdout

    tether("commit", "-m", "first", cwd=dataset, env=run)
    sid = mem("sys1", {"up": 1})
    start = jj("log", "--no-graph", "-r", "@-", "-T", "commit_id").strip()
    wrapper = killing_wrapper(tmp_path, "jj-dies-at-commit", str(jj_bin), "commit")
    proc = tether("pull", cwd=dataset, check=False, env={**run, "TETHER_JJ": str(wrapper)})
    assert proc.returncode == -9 and incomplete(dataset)
    assert jj("log", "--no-graph", "-r", "@-", "-T", "commit_id").strip() == start
    tether("pull", cwd=dataset, env=run)
    assert jj("log", "--no-graph", "-r", "@--", "-T", "commit_id").strip() == start
    assert jj("log", "--no-graph", "-r", "@-", "-T", "description").strip() == "pull main: 1 object"
    assert "no changes" in jj("status")
    assert state_of(dataset, "m1") == sid
    assert incomplete(dataset) == []
    assert tether("verify", cwd=dataset, env=run).returncode == 0
