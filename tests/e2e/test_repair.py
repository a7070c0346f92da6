"""repair: recreate a deleted pin and a lost working branch; report a
drifted pin; describe interrupted operations."""
from __future__ import annotations

import json

from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)

PIN = f"tether.{DS}.fc778424e1b91640"
BRANCH = f"tether.ws.{DS}.feature"


def edit_store(path, fn):
    data = json.loads(path.read_text())
    fn(data.get("systems", data))
    path.write_text(json.dumps(data))


def test_repin_a_deleted_pin(dataset, tether, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    edit_store(store, lambda s: s["sys1"]["tags"].pop(PIN))
    assert tether("verify", cwd=dataset, check=False).returncode == 1
    text = tether("repair", "--dry-run", cwd=dataset).stdout
    assert "repin" in text and PIN in text
    out = tether.json("repair", cwd=dataset)
    assert out["repinned"] == {"m1": f"{DS}.fc778424e1b91640"}
    assert mem.show("sys1")["tags"][PIN] == "sys1:s0"
    assert tether("verify", cwd=dataset).returncode == 0
    assert tether.json("repair", cwd=dataset)["notes"] == ["nothing to repair"]


def test_drifted_pin_is_noted_not_touched(dataset, tether, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    sid = mem("sys1", {"x": 1})
    edit_store(store, lambda s: s["sys1"]["tags"].__setitem__(PIN, sid))
    out = tether.json("repair", cwd=dataset)
    assert out["repinned"] == {} and any("pin drifted, not touched" in n for n in out["notes"])
    assert mem.show("sys1")["tags"][PIN] == sid


def test_refork_a_lost_branch(dataset, tether, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feature", "--eager", cwd=dataset)
    edit_store(store, lambda s: s["sys1"]["branches"].pop(BRANCH))
    out = tether.json("repair", cwd=dataset)
    assert out["reforked"] == {"m1": BRANCH}
    assert mem.show("sys1")["branches"][BRANCH] == "sys1:s0"


def test_repair_describes_interrupted_operations(dataset, tether):
    tether("commit", "-m", "x", cwd=dataset, check=False, env={"TETHER_FAULT": "commit:after-pin"})
    text = tether("repair", "--dry-run", cwd=dataset).stdout
    assert "never finished; done before it stopped: pin m1" in text


def test_all_history_repins_an_old_pin(dataset, tether, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    tether("commit", "-m", "second", cwd=dataset)
    edit_store(store, lambda s: s["sys1"]["tags"].pop(PIN))
    assert tether.json("repair", cwd=dataset)["repinned"] == {}
    out = tether.json("repair", "--all-history", cwd=dataset)
    assert list(out["repinned"].values()) == [f"{DS}.fc778424e1b91640"]


def test_repair_plan_and_stale_history(dataset, tether, mem, store, tmp_path, env):
    tether("commit", "-m", "first", cwd=dataset)
    edit_store(store, lambda s: s["sys1"]["tags"].pop(PIN))
    plan = tmp_path / "repair.plan"
    tether("repair", "--plan", str(plan), cwd=dataset)
    out = tether.json("repair", "--from-plan", str(plan), cwd=dataset)
    assert out["repinned"] == {"m1": f"{DS}.fc778424e1b91640"}
    # A commit since makes the saved plan stale.
    tether("repair", "--plan", str(plan), cwd=dataset)
    git_commit = __import__("conftest").git
    git_commit("commit", "-q", "--allow-empty", "-m", "later", cwd=dataset, env=env)
    proc = tether("repair", "--from-plan", str(plan), cwd=dataset, check=False)
    assert proc.returncode == 1 and "history changed since the repair plan was made" in proc.stderr
