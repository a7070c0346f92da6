"""gc over the memory backend: what it releases, what it keeps and why, its
plans, and that tether-vcs decides the same on the same store.

tether-vcs's memory store lives in its process, so the differential checks
run tether-vcs in a helper process that first loads the store file our runs
share (TETHER_MEMORY_STORE) into its own memory backend, then plans (or
verifies) the same dataset.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import git
from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)

PIN0 = f"{DS}.fc778424e1b91640"   # m1 at sys1:s0, the first commit's pin

# Runs in the test venv: tether-vcs over a copy of our memory store.
PY_HELPER = r'''
import json, sys
from pathlib import Path
from tether.repo import Repo
from tether.backends.memory import _System

root, store, what = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
kw = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
repo = Repo.find(root)
backend = repo.backend_for("memory")
data = json.loads(store.read_text()) if store.is_file() else {"systems": {}}
for name, s in data.get("systems", {}).items():
    backend.store.systems[name] = _System(
        snapshots=s["snapshots"], branches=s["branches"], tags=s["tags"],
        parents=s["parents"], counter=s["counter"], owner=s.get("owner"))
backend.store.deleted = set(data.get("deleted") or [])
if what == "plan":
    if "keep_bookmarks" in kw:
        kw["keep_bookmarks"] = set(kw["keep_bookmarks"])
    print(repo.plan_gc(**kw).to_json())
else:
    status = repo.status(do_snapshot=True)
    print(json.dumps({
        "verify": {k: r.status.value for k, r in repo.verify().items()},
        "history": {k: r.status.value for k, r in repo.verify(all_history=True).items()},
        "errors": [o.error for o in status.objects if o.error],
    }))
'''


def ref_run(env, root, store_path, what, **kw):
    env = {k: v for k, v in env.items() if k != "TETHER_MEMORY_STORE"}
    out = subprocess.run([sys.executable, "-c", PY_HELPER, str(root), str(store_path), what,
                          json.dumps(kw)], env=env, cwd=str(root), capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def comparable(plan: dict) -> dict:
    return {k: v for k, v in plan.items() if k not in ("created_at", "digest")}


def same_plan_as_tether_vcs(tether, env, root, store_path, *args, **kw):
    ours = tether.json("gc", *args, cwd=root)
    theirs = ref_run(env, root, store_path, "plan", **kw)
    assert comparable(ours) == comparable(theirs)
    return ours


def edit_store(path, fn):
    data = json.loads(path.read_text())
    fn(data["systems"])
    path.write_text(json.dumps(data))


def ops(root):
    return [json.loads(l) for l in (root / ".tether/ops.jsonl").read_text().splitlines() if l.strip()]


def pinned_index(root):
    path = root / ".git/tether-pinned.jsonl"
    return {json.loads(l)["pin_id"] for l in path.read_text().splitlines()} if path.exists() else set()


def join_bookmark(root, bookmark):
    """What `tether new BOOKMARK` records: a fresh checkout is on no bookmark."""
    ws = root / ".tether/workspace.toml"
    lines = ws.read_text().splitlines(keepends=True)
    ws.write_text(lines[0] + f'bookmark = "{bookmark}"\n' + "".join(
        l for l in lines[1:] if not l.startswith("bookmark =")))


def tags(mem, system="sys1"):
    return mem.show(system)["tags"]


@pytest.fixture
def undone(dataset, tether, env, mem):
    """A commit, then a second one's manifests written (`commit --no-vcs`) and
    discarded: its pin is named nowhere, and no commit ever named it (one
    undone with `git reset` is kept, see test_undone_commit_pin_kept)."""
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    out = tether.json("commit", "-m", "second", "--no-vcs", cwd=dataset)
    git("checkout", "-q", "--", ".tether", cwd=dataset, env=env)
    return out["pinned"]["m1"].removeprefix("tether.")


def test_undone_commit_pin_kept(dataset, tether, env, mem, store):
    """A commit undone with `git reset --hard` may have been cloned first:
    its pin is kept (tether-vcs releases it) until --release-foreign."""
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    pid = tether.json("commit", "-m", "second", cwd=dataset)["pinned"]["m1"].removeprefix("tether.")
    git("reset", "-q", "--hard", "HEAD~1", cwd=dataset, env=env)
    theirs = ref_run(env, dataset, store, "plan")
    assert [a["op"] for a in theirs["actions"]] == ["unpin"]
    plan = tether.json("gc", cwd=dataset)
    assert [(a["op"], a["params"]["pin_id"], a["params"]["kept"]) for a in plan["actions"]] == [
        ("keep-pin", pid, "committed")]
    assert tether.json("gc", "--no-dry-run", cwd=dataset)["unpinned"] == {}
    assert f"tether.{pid}" in tags(mem)
    plan = same_plan_as_tether_vcs(tether, env, dataset, store, "--release-foreign", release_foreign=True)
    assert [a["op"] for a in plan["actions"]] == ["unpin"]
    tether("gc", "--no-dry-run", "--release-foreign", cwd=dataset)
    assert f"tether.{pid}" not in tags(mem)


# --- plain gc ------------------------------------------------------------------


def test_undone_commit_pin_released(dataset, tether, env, mem, store, undone):
    assert f"tether.{undone}" in tags(mem)
    plan = same_plan_as_tether_vcs(tether, env, dataset, store)
    assert [(a["op"], a["key"], a["target"]) for a in plan["actions"]] == [
        ("unpin", "m1", f"tether.{undone}")]
    assert plan["actions"][0]["detail"] == "no manifest in history references it"
    assert {p["kind"] for p in plan["preconditions"]} == {
        "vcs_head", "history_digest", "manifest_hash", "workspace_id"}
    proc = tether("gc", "--no-dry-run", cwd=dataset)
    assert proc.stdout == f"unpinned 1 pin(s)\n  memory: {undone}\n"
    assert f"tether.{undone}" not in tags(mem)
    assert f"tether.{PIN0}" in tags(mem)          # still named by history
    assert undone not in pinned_index(dataset) and PIN0 in pinned_index(dataset)
    entry = [o for o in ops(dataset) if o.get("command") == "gc"][-1]
    progress = [o for o in ops(dataset) if o.get("progress") == entry["id"]]
    assert [p["action"] for p in progress] == ["unpin"]
    done = [o for o in ops(dataset) if o.get("done") == entry["id"]][-1]
    assert done["result"]["unpinned"] == {"memory": [undone]} and done["result"]["failed"] == {}
    # Nothing left to do; tether-vcs agrees, and reads what we wrote.
    assert tether.json("gc", "--no-dry-run", cwd=dataset)["unpinned"] == {}
    same_plan_as_tether_vcs(tether, env, dataset, store)
    check = ref_run(env, dataset, store, "check")
    assert set(check["verify"].values()) == {"ok"} and check["errors"] == []
    assert set(check["history"].values()) == {"ok"}


def test_json_report_shape(dataset, tether, undone):
    out = tether.json("gc", "--no-dry-run", cwd=dataset)
    assert list(out) == ["dry_run", "unpinned", "kept_pins", "deleted_working_refs",
                         "kept_working_refs", "forgotten_working_refs", "deleted_listings",
                         "deleted_stores", "kept_stores", "forgotten_stores", "failed"]
    assert out["dry_run"] is False and out["unpinned"] == {"memory": [undone]}
    assert out["failed"] == {} and out["deleted_listings"] == []


def test_dry_run_writes_nothing(dataset, tether, env, mem, store, undone):
    tether("gc", cwd=dataset)   # the first run seeds the clone's pin index
    before = (store.read_bytes(), (dataset / ".tether/workspace.toml").read_bytes(),
              (dataset / ".tether/ops.jsonl").read_bytes(),
              (dataset / ".git/tether-pinned.jsonl").read_bytes())
    for args in ([], ["--dry-run"]):
        text = tether("gc", *args, cwd=dataset).stdout
        assert text.startswith("plan: gc (1 write(s))\n")
        assert f"               unpin  m1  [memory] tether.{undone}  no manifest in history references it\n" in text
    after = (store.read_bytes(), (dataset / ".tether/workspace.toml").read_bytes(),
             (dataset / ".tether/ops.jsonl").read_bytes(),
             (dataset / ".git/tether-pinned.jsonl").read_bytes())
    assert before == after
    assert git("status", "--porcelain", cwd=dataset, env=env).strip() == ""


def test_pins_named_by_history_are_kept(dataset, tether, env, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    tether("commit", "-m", "second", cwd=dataset)
    # The first commit's pin is no longer HEAD's, but history names it.
    plan = same_plan_as_tether_vcs(tether, env, dataset, store)
    assert plan["actions"] == []
    assert tether("gc", cwd=dataset).stdout == "plan: gc (0 write(s))\n  gc: nothing to do\n"
    assert tether("gc", "--no-dry-run", cwd=dataset).stdout == "unpinned 0 pin(s)\n"
    assert len([t for t in tags(mem) if t.startswith("tether.")]) == 2
    # A pin only a side branch names still counts: history is every ref's.
    git("switch", "-q", "-c", "side", cwd=dataset, env=env)
    git("switch", "-q", "main", cwd=dataset, env=env)
    git("reset", "-q", "--hard", "HEAD~1", cwd=dataset, env=env)
    assert tether.json("gc", cwd=dataset)["actions"] == []


def test_plan_preconditions_and_context(dataset, tether, tmp_path, undone):
    plan_file = tmp_path / "gc.plan"
    proc = tether("gc", "--plan", str(plan_file), cwd=dataset)
    assert f"plan written to {plan_file}" in proc.stderr
    assert proc.stdout.startswith("plan: gc (1 write(s))")
    plan = json.loads(plan_file.read_text())
    assert plan["command"] == "gc" and plan["format"] == 3
    assert plan["context"]["release_foreign"] is False and plan["context"]["scope"] is None
    from tether.plan import Plan
    assert Plan.from_json(plan_file.read_text()).missing_preconditions() == []


# --- foreign pins, other datasets ---------------------------------------------


def test_pin_made_in_the_store_is_foreign(dataset, tether, env, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    stray = f"{DS}.1111111111111111"
    edit_store(store, lambda s: s["sys1"]["tags"].__setitem__(f"tether.{stray}", "sys1:s0"))
    plan = same_plan_as_tether_vcs(tether, env, dataset, store)
    assert [(a["op"], a["params"]["pin_id"]) for a in plan["actions"]] == [("keep-pin", stray)]
    assert plan["actions"][0]["detail"].endswith("(fetch them, or --release-foreign)")
    assert tether("gc", cwd=dataset).stdout.startswith("plan: gc (0 write(s))\n")
    out = tether("gc", "--no-dry-run", cwd=dataset).stdout
    assert out == ("unpinned 0 pin(s)\n"
                   "kept 1 unreferenced pin(s) this clone did not create (--release-foreign releases)\n"
                   f"  memory: {stray}\n")
    assert f"tether.{stray}" in tags(mem)
    plan = same_plan_as_tether_vcs(tether, env, dataset, store, "--release-foreign",
                                   release_foreign=True)
    assert plan["actions"][0]["op"] == "unpin"
    assert plan["actions"][0]["detail"] == ("no manifest in history references it; "
                                            "not created by this clone")
    out = tether.json("gc", "--no-dry-run", "--release-foreign", cwd=dataset)
    assert out["unpinned"] == {"memory": [stray]} and out["kept_pins"] == {}
    assert f"tether.{stray}" not in tags(mem) and f"tether.{PIN0}" in tags(mem)


def test_another_clones_pin_is_foreign(dataset, tether, env, mem, store, tmp_path):
    tether("commit", "-m", "first", cwd=dataset)
    other = tmp_path / "other"
    git("clone", "-q", str(dataset), str(other), cwd=tmp_path, env=env)
    tether("status", cwd=other)
    join_bookmark(other, "main")
    mem("sys1", {"theirs": 1})
    pid = tether.json("commit", "-m", "theirs", cwd=other)["pinned"]["m1"].removeprefix("tether.")
    # Not fetched here: no manifest of this clone names it, and it did not make it.
    out = tether.json("gc", "--no-dry-run", cwd=dataset)
    assert out["kept_pins"] == {"memory": [pid]} and out["unpinned"] == {}
    assert f"tether.{pid}" in tags(mem)
    # Fetched, it is referenced.
    git("fetch", "-q", str(other), "main:theirs", cwd=dataset, env=env)
    assert tether.json("gc", cwd=dataset)["actions"] == []


def test_forgotten_index_and_journal_make_own_pins_foreign(dataset, tether, env, store, undone):
    # Without the index, the journal seeds it again (as tether-vcs does)...
    (dataset / ".git/tether-pinned.jsonl").unlink()
    assert [a["op"] for a in tether.json("gc", cwd=dataset)["actions"]] == ["unpin"]
    assert undone in pinned_index(dataset)
    # ...without both, this clone cannot tell the pin was its own.
    (dataset / ".git/tether-pinned.jsonl").unlink()
    (dataset / ".tether/ops.jsonl").unlink()
    plan = same_plan_as_tether_vcs(tether, env, dataset, store)
    assert [a["op"] for a in plan["actions"]] == ["keep-pin"]
    assert (dataset / ".git/tether-pinned.jsonl").read_text() == ""


def test_other_datasets_pins_left_alone(dataset, tether, env, mem, store, undone):
    theirs = "deadbeef.0123456789abcdef"
    edit_store(store, lambda s: s["sys1"]["tags"].update({f"tether.{theirs}": "sys1:s0",
                                                          "not-a-pin": "sys1:s0"}))
    plan = same_plan_as_tether_vcs(tether, env, dataset, store, "--release-foreign",
                                   release_foreign=True)
    assert plan["notes"] == ["m1: 1 pin(s) of other datasets left alone"]
    assert [a["params"]["pin_id"] for a in plan["actions"]] == [undone]
    text = tether("gc", cwd=dataset).stdout
    assert text.endswith("  m1: 1 pin(s) of other datasets left alone\n")
    tether("gc", "--no-dry-run", "--release-foreign", cwd=dataset)
    assert f"tether.{theirs}" in tags(mem) and "not-a-pin" in tags(mem)


def test_generations_count_as_one_pin(dataset, tether, mem, store, undone):
    edit_store(store, lambda s: s["sys1"]["tags"].__setitem__(f"tether.{undone}.2", "sys1:s1"))
    plan = tether.json("gc", cwd=dataset)
    assert [(a["op"], a["target"]) for a in plan["actions"]] == [("unpin", f"tether.{undone}")]
    assert plan["notes"] == []
    tether("gc", "--no-dry-run", cwd=dataset)
    assert not [t for t in tags(mem) if undone in t]


# --- operations in flight, other checkouts ------------------------------------


def test_incomplete_commit_keeps_its_pin(dataset, tether, env, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    proc = tether("commit", "-m", "dies", cwd=dataset, check=False,
                  env={"TETHER_FAULT": "commit:after-pin"})
    assert proc.returncode != 0
    made = [t for t in tags(mem) if t.startswith("tether.") and t != f"tether.{PIN0}"]
    assert len(made) == 1
    plan = same_plan_as_tether_vcs(tether, env, dataset, store, "--release-foreign",
                                   release_foreign=True)
    assert plan["actions"] == []
    assert plan["notes"] == ["m1: 1 pin(s) of unfinished operation(s) kept (see `tether ops`)"]
    tether("gc", "--no-dry-run", "--release-foreign", cwd=dataset)
    assert made[0] in tags(mem)
    # Finished, the commit names it.
    tether("commit", "-m", "again", cwd=dataset)
    assert tether.json("gc", cwd=dataset)["actions"] == []


def test_other_live_checkout_counts(dataset, tether, env, mem, store, tmp_path):
    tether("commit", "-m", "first", cwd=dataset)
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "wtb", str(wt), cwd=dataset, env=env)
    tether("status", cwd=wt)
    join_bookmark(wt, "wtb")
    # Writing through sys1's main, as a fork would: its commit pins what it wrote.
    ws = wt / ".tether/workspace.toml"
    ws.write_text(ws.read_text() + '\n[working_refs]\nm1 = "main"\n')
    mem("sys1", {"in-wt": 1})
    out = tether.json("commit", "-m", "x", "--no-vcs", cwd=wt)
    pid = out["pinned"]["m1"].removeprefix("tether.")
    # Only the worktree's working tree names the pin: kept.
    plan = same_plan_as_tether_vcs(tether, env, dataset, store, "--release-foreign",
                                   release_foreign=True)
    assert plan["actions"] == []
    # A checkout whose per-checkout files are tracked is not counted, with a warning.
    git("add", "-f", ".tether/workspace.toml", cwd=wt, env=env)
    proc = tether("gc", "--json", cwd=dataset)
    assert f"warning: skipping .tether/workspace.toml of checkout {wt}: git tracks it there" in proc.stderr
    assert [a["params"]["pin_id"] for a in json.loads(proc.stdout)["actions"]] == [pid]


# --- refs and listings ---------------------------------------------------------


def test_orphan_listing_deleted(dataset, tether, env, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    listings = dataset / ".tether/listings"
    kept = sorted(p.name for p in listings.glob("*.jsonl")) if listings.exists() else []
    listings.mkdir(exist_ok=True)
    (listings / "0123456789abcdef0123.jsonl").write_text("{}\n")
    (listings / "notes.txt").write_text("not a listing\n")
    plan = same_plan_as_tether_vcs(tether, env, dataset, store)
    assert [(a["op"], a["target"], a["detail"]) for a in plan["actions"]] == [
        ("delete-listing", "0123456789abcdef0123.jsonl", "unreferenced")]
    out = tether("gc", "--no-dry-run", cwd=dataset).stdout
    assert out == "unpinned 0 pin(s)\ndeleted 1 orphan listing(s)\n"
    assert sorted(p.name for p in listings.glob("*.jsonl")) == kept
    assert (listings / "notes.txt").exists()


def test_removed_objects_working_ref_forgotten(dataset, tether, env, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    tether("add", "gone", "sys3", "--kind", "memory", cwd=dataset)
    ws = dataset / ".tether/workspace.toml"
    ws.write_text(ws.read_text() + '\n[working_refs]\ngone = "tether.ws.0a1b2c3d.main"\n'
                  'm1 = "tether.ws.0a1b2c3d.main"\n')
    # `remove` leaves the ref for gc to forget.
    tether("remove", "gone", cwd=dataset)
    assert "gone =" in ws.read_text()
    plan = same_plan_as_tether_vcs(tether, env, dataset, store)
    assert [(a["op"], a["key"], a["target"], a["detail"]) for a in plan["actions"]] == [
        ("forget-working-ref", "gone", "tether.ws.0a1b2c3d.main",
         "object removed; branch left in place (gc --prune-bookmarks evaluates it)")]
    out = tether.json("gc", "--no-dry-run", cwd=dataset)
    assert out["forgotten_working_refs"] == {"gone": ["tether.ws.0a1b2c3d.main"]}
    assert "gone =" not in ws.read_text() and "m1 =" in ws.read_text()
    # Plain gc never deletes a branch.
    assert out["deleted_working_refs"] == {}


def test_forgot_text(dataset, tether):
    tether("commit", "-m", "first", cwd=dataset)
    ws = dataset / ".tether/workspace.toml"
    ws.write_text(ws.read_text() + '\n[working_refs]\ngone = "tether.ws.0a1b2c3d.x"\n')
    assert tether("gc", "--no-dry-run", cwd=dataset).stdout == (
        "unpinned 0 pin(s)\nforgot 1 working ref(s) of removed object(s)\n")


# --- saved plans ---------------------------------------------------------------


def test_from_plan_applies_and_refuses_stale(dataset, tether, env, mem, tmp_path, undone):
    plan_file = tmp_path / "gc.plan"
    tether("gc", "--plan", str(plan_file), cwd=dataset)
    assert f"tether.{undone}" in tags(mem)
    out = tether.json("gc", "--from-plan", str(plan_file), cwd=dataset)
    assert out["unpinned"] == {"memory": [undone]}
    assert f"tether.{undone}" not in tags(mem)
    # History that changed without moving HEAD: a commit on another branch.
    tether("gc", "--plan", str(plan_file), cwd=dataset)
    tree = git("rev-parse", "HEAD^{tree}", cwd=dataset, env=env).strip()
    side = git("commit-tree", tree, "-p", "HEAD", "-m", "elsewhere", cwd=dataset, env=env).strip()
    git("branch", "elsewhere", side, cwd=dataset, env=env)
    proc = tether("gc", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 1
    assert "history changed since the gc plan was made -- a commit in this or another workspace" in proc.stderr
    # A moved HEAD is named first.
    tether("gc", "--plan", str(plan_file), cwd=dataset)
    git("commit", "-q", "--allow-empty", "-m", "later", cwd=dataset, env=env)
    proc = tether("gc", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 1 and "history moved since the gc plan was made" in proc.stderr


def test_plan_flags_refused(dataset, tether, tmp_path, undone):
    plan_file = tmp_path / "gc.plan"
    tether("gc", "--plan", str(plan_file), cwd=dataset)
    proc = tether("gc", "--from-plan", str(plan_file), "--dry-run", cwd=dataset, check=False)
    assert proc.returncode == 1 and "cannot be combined with --dry-run or --plan" in proc.stderr
    commit_plan = tmp_path / "commit.plan"
    tether("commit", "-m", "x", "--plan", str(commit_plan), cwd=dataset)
    proc = tether("gc", "--from-plan", str(commit_plan), cwd=dataset, check=False)
    assert proc.returncode == 1 and f"{commit_plan} is a 'commit' plan, expected 'gc'" in proc.stderr
    plan = json.loads(plan_file.read_text())
    plan["actions"][0]["target"] = "tether.other"
    plan_file.write_text(json.dumps(plan))
    proc = tether("gc", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 1 and "edited" in proc.stderr
    proc = tether("gc", "--force-prune", cwd=dataset, check=False)
    assert proc.returncode == 1 and "--force-prune requires --prune-bookmarks" in proc.stderr
    # The store step is planned like the rest (test_store_lifecycle.py has
    # its scenarios); --store alone implies --delete-stores in the context.
    proc = tether("gc", "--store", "memory=sys1", "--plan", str(plan_file), cwd=dataset)
    assert proc.returncode == 0 and "experimental" in proc.stderr
    context = json.loads(plan_file.read_text())["context"]
    assert context["delete_stores"] is True and context["stores"] == [["memory", {"uri": "sys1"}]]
    proc = tether("gc", "--store", "nokind", cwd=dataset, check=False)
    assert proc.returncode == 1 and "--store expects KIND=LOCATOR, got 'nokind'" in proc.stderr


def test_tether_vcs_plan_applies_here(dataset, tether, env, mem, store, tmp_path, undone):
    plan_file = tmp_path / "gc.plan"
    plan_file.write_text(json.dumps(ref_run(env, dataset, store, "plan")))
    out = tether.json("gc", "--from-plan", str(plan_file), cwd=dataset)
    assert out["unpinned"] == {"memory": [undone]}


def test_partial_failure_exit_codes(dataset, tether, mem, store, tmp_path, undone):
    listings = dataset / ".tether/listings"
    listings.mkdir(exist_ok=True)
    (listings / "0123456789abcdef0123.jsonl").write_text("{}\n")
    plan_file = tmp_path / "gc.plan"
    tether("gc", "--plan", str(plan_file), cwd=dataset)
    data = json.loads(store.read_text())
    data["deleted"] = ["sys1"]
    store.write_text(json.dumps(data))
    proc = tether("gc", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "unpinned 0 pin(s)\ndeleted 1 orphan listing(s)\n"
    assert f"FAILED    unpin tether.{undone} (m1): " in proc.stderr
    done = [o for o in ops(dataset) if "done" in o][-1]
    assert list(done["result"]["failed"]) == [f"unpin tether.{undone} (m1)"]
    # Nothing applied and something failed: 1.
    tether("gc", "--plan", str(plan_file), cwd=dataset, check=False)
    data["deleted"] = []
    store.write_text(json.dumps(data))
    tether("gc", "--plan", str(plan_file), cwd=dataset)
    data = json.loads(store.read_text())
    data["deleted"] = ["sys1"]
    store.write_text(json.dumps(data))
    proc = tether("gc", "--from-plan", str(plan_file), "--json", cwd=dataset, check=False)
    assert proc.returncode == 1
    assert list(json.loads(proc.stdout)["failed"]) == [f"unpin tether.{undone} (m1)"]


# --- --prune-bookmarks -----------------------------------------------------------


def ws_ref(name):
    return f"tether.ws.{DS}.{name}"


@pytest.fixture
def strays(dataset, tether, env, mem, store):
    """sys1 holds stray branches of every verdict, sys2 (pin=record) one at a
    recorded state; `feature` is a live bookmark."""
    tether("commit", "-m", "first", cwd=dataset)             # sys1:s0 pinned, sys2:s0 recorded
    mem("sys2", {"a": 1})
    tether("commit", "-m", "second", cwd=dataset)            # sys2:s1 recorded
    mem("sys2", {"a": 2})                                    # sys2 base moves on
    base = mem("sys1", {"base": 1})                          # sys1 base moves on, unpinned
    git("branch", "feature", cwd=dataset, env=env)

    def setup(systems):
        b1 = systems["sys1"]["branches"]
        b1[ws_ref("pinned")] = "sys1:s0"
        b1[ws_ref("atbase")] = base
        b1[ws_ref("feature")] = "sys1:s0"
        b1[ws_ref("kept-elsewhere")] = "sys1:s0"
        b1["tether.ws.deadbeef.theirs"] = "sys1:s0"
        b1[f"tether.ws.{DS}.0badc0de.legacy-obj-abc123"] = "sys1:s0"
        systems["sys2"]["branches"][ws_ref("recorded")] = "sys2:s1"
    edit_store(store, setup)
    mem("sys1", {"w": 1}, branch=ws_ref("written"))
    return dataset


def test_prune_bookmarks_verdicts(strays, tether, env, mem, store):
    args = ("--prune-bookmarks", "--keep-bookmark", "kept-elsewhere")
    kw = {"prune_bookmarks": True, "keep_bookmarks": ["kept-elsewhere"]}
    plan = same_plan_as_tether_vcs(tether, env, strays, store, *args, **kw)
    got = {a["target"]: (a["op"], a["detail"]) for a in plan["actions"]}
    assert got == {
        f"tether.ws.{DS}.0badc0de.legacy-obj-abc123":
            ("delete-branch", "legacy workspace 0badc0de branch; head is pinned"),
        ws_ref("atbase"): ("delete-branch", "bookmark atbase (gone); head equals the base branch"),
        ws_ref("pinned"): ("delete-branch", "bookmark pinned (gone); head is pinned"),
        ws_ref("written"): ("keep-branch", "bookmark written (gone); kept: has unpinned writes "
                                           "(snapshot_id=sys1:s2) (--force-prune deletes)"),
        ws_ref("recorded"): ("keep-branch", "bookmark recorded (gone); kept: holds a pin-less "
                                            "recorded state (snapshot_id=sys2:s1) (--force-prune deletes)"),
    }
    assert "keeping live bookmarks: feature, kept-elsewhere, main" in plan["notes"]
    assert "m1: 1 working branch(es) of other datasets left alone" in plan["notes"]
    assert plan["context"]["live_bookmarks"] == ["feature", "kept-elsewhere", "main"]
    out = tether("gc", "--no-dry-run", *args, cwd=strays).stdout
    assert "deleted 3 working branch(es)\n" in out
    assert f"  m1: {ws_ref('atbase')}\n" in out
    assert "kept 2 working branch(es) holding unpinned data (--force-prune deletes)\n" in out
    branches = mem.show("sys1")["branches"]
    assert ws_ref("pinned") not in branches and ws_ref("atbase") not in branches
    for kept in ("written", "feature", "kept-elsewhere"):
        assert ws_ref(kept) in branches
    assert "tether.ws.deadbeef.theirs" in branches
    entry = [o for o in ops(strays) if o.get("command") == "gc"][-1]
    assert sorted(p["action"] for p in ops(strays) if p.get("progress") == entry["id"]) == \
        ["delete-branch"] * 3
    # Forced: the rest go too, said so.
    plan = same_plan_as_tether_vcs(tether, env, strays, store, "--prune-bookmarks", "--force-prune",
                                   prune_bookmarks=True, force_prune=True)
    got = {a["target"]: a for a in plan["actions"]}
    assert got[ws_ref("written")]["detail"] == (
        "bookmark written (gone); FORCED although it has unpinned writes (snapshot_id=sys1:s2)")
    assert got[ws_ref("written")]["params"]["forced"] is True
    assert ws_ref("kept-elsewhere") in got
    out = tether.json("gc", "--no-dry-run", "--prune-bookmarks", "--force-prune", cwd=strays)
    assert sorted(r for refs in out["deleted_working_refs"].values() for r in refs) == sorted(
        [ws_ref("written"), ws_ref("kept-elsewhere"), ws_ref("recorded")])
    assert ws_ref("feature") in mem.show("sys1")["branches"]
    check = ref_run(env, strays, store, "check")
    assert check["errors"] == [] and set(check["verify"].values()) == {"ok"}


def test_plain_gc_never_deletes_branches(strays, tether, mem):
    before = mem.show("sys1")["branches"]
    out = tether.json("gc", "--no-dry-run", "--release-foreign", cwd=strays)
    assert out["deleted_working_refs"] == {} and mem.show("sys1")["branches"] == before


def test_branch_moved_after_plan_refused(strays, tether, mem, tmp_path):
    plan_file = tmp_path / "gc.plan"
    tether("gc", "--prune-bookmarks", "--plan", str(plan_file), cwd=strays)
    mem("sys1", {"late": 1}, branch=ws_ref("pinned"))
    proc = tether("gc", "--from-plan", str(plan_file), cwd=strays, check=False)
    assert proc.returncode == 1
    assert f"gc m1: {ws_ref('pinned')} moved since the plan was made (snapshot_id=sys1:s0 -> " in proc.stderr
    # Stale means nothing happened.
    assert ws_ref("atbase") in mem.show("sys1")["branches"]


def test_this_bookmarks_unused_branch_judged(dataset, tether, env, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    edit_store(store, lambda s: s["sys1"]["branches"].__setitem__(ws_ref("main"), "sys1:s0"))
    plan = same_plan_as_tether_vcs(tether, env, dataset, store, "--prune-bookmarks",
                                   prune_bookmarks=True)
    assert [(a["op"], a["detail"]) for a in plan["actions"]] == [
        ("delete-branch", "this bookmark's branch; no object uses it; head is pinned")]
    # In use by a current object: not judged.
    ws = dataset / ".tether/workspace.toml"
    ws.write_text(ws.read_text() + f'\n[working_refs]\nm1 = "{ws_ref("main")}"\n')
    plan = same_plan_as_tether_vcs(tether, env, dataset, store, "--prune-bookmarks",
                                   prune_bookmarks=True)
    assert plan["actions"] == []


def test_prune_from_a_checkout_on_no_bookmark(dataset, tether, env, mem, store, tmp_path):
    tether("commit", "-m", "first", cwd=dataset)
    edit_store(store, lambda s: s["sys1"]["branches"].__setitem__(ws_ref("gone"), "sys1:s0"))
    other = tmp_path / "other"
    git("clone", "-q", str(dataset), str(other), cwd=tmp_path, env=env)
    tether("status", cwd=other)
    plan = same_plan_as_tether_vcs(tether, env, other, store, "--prune-bookmarks",
                                   "--keep-bookmark", "", prune_bookmarks=True,
                                   keep_bookmarks=[""])
    assert [(a["op"], a["target"]) for a in plan["actions"]] == [("delete-branch", ws_ref("gone"))]
