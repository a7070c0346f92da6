"""status, snapshot and commit over the memory backend, whose store
persists in a file (TETHER_MEMORY_STORE) so separate CLI runs share it."""
from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import git

DS = "0a1b2c3d"


@pytest.fixture
def store(tmp_path, env):
    path = tmp_path / "memory-store.json"
    env["TETHER_MEMORY_STORE"] = str(path)
    return path


@pytest.fixture
def mem(build_dir, env, store):
    def write(system: str, payload: dict, branch: str = "main") -> str:
        out = subprocess.run([str(build_dir / "tt_memory"), "write", system, branch,
                              json.dumps(payload)], env=env, capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()

    def show(system: str) -> dict:
        out = subprocess.run([str(build_dir / "tt_memory"), "show", system], env=env,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    write.show = show
    return write


@pytest.fixture
def dataset(git_repo, tether, store):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "m1", "sys1", "--kind", "memory", cwd=git_repo)
    tether("add", "m2", "sys2", "--kind", "memory", "--pin", "record", cwd=git_repo)
    return git_repo


def manifest(root: Path, key: str) -> str:
    return (root / ".tether/objects" / f"{key}.toml").read_text()


def test_first_commit_pins_and_records(dataset, tether, env, mem):
    out = tether.json("commit", "-m", "first", cwd=dataset)
    assert out["pinned"] == {"m1": f"tether.{DS}.fc778424e1b91640", "m2": None}
    assert out["unchanged"] == [] and out["unrecoverable"] == []
    head = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    assert out["vcs_commit"] == head
    assert git("log", "-1", "--format=%s", cwd=dataset, env=env).strip() == "first"
    # The pin exists in the store, at the committed state.
    assert mem.show("sys1")["tags"][f"tether.{DS}.fc778424e1b91640"] == "sys1:s0"
    m1 = manifest(dataset, "m1")
    assert '[state]\nsnapshot_id = "sys1:s0"' in m1
    assert f'[pin]\nid = "{DS}.fc778424e1b91640"' in m1
    assert "[pin]" not in manifest(dataset, "m2")
    # Only tether's own paths were committed.
    files = git("show", "--name-only", "--format=", "HEAD", cwd=dataset, env=env).split()
    assert sorted(files) == [".tether/.gitignore", ".tether/objects/m1.toml",
                             ".tether/objects/m2.toml", "tether.toml"]


def test_pin_id_matches_tether_vcs(dataset, tether):
    from tether.manifest import compute_pin_id
    out = tether.json("commit", "-m", "first", cwd=dataset)
    expected = compute_pin_id("memory", {"system": "sys1"}, {"snapshot_id": "sys1:s0"}, DS)
    assert out["pinned"]["m1"] == "tether." + expected


def test_status_labels(dataset, tether, mem):
    st = tether.json("status", cwd=dataset)
    assert [o["state"] for o in st["objects"]] == ["new", "new"]
    assert st["fresh"] is True and st["trunk"] is True and st["bookmark"] == "main"
    tether("commit", "-m", "first", cwd=dataset)
    st = tether.json("status", cwd=dataset)
    assert st["fresh"] is False
    assert [o["state"] for o in st["objects"]] == ["clean", "clean"]
    assert [o["pinned"] for o in st["objects"]] == [True, False]
    assert st["objects"][0]["tier"] == "forkable"
    mem("sys1", {"x": 1})
    # The cached snapshot does not know yet; --snapshot does.
    assert [o["state"] for o in tether.json("status", cwd=dataset)["objects"]] == ["clean", "clean"]
    st = tether.json("status", "--snapshot", cwd=dataset)
    assert [o["state"] for o in st["objects"]] == ["modified", "clean"]
    text = tether("status", cwd=dataset).stdout.splitlines()
    assert text[0].startswith(f"dataset {DS} (manifests {st['manifest_hash'][:12]}); on trunk bookmark main")
    assert "   modified  m1  [memory/forkable]" in text
    assert tether("status", "m2", "--json", cwd=dataset).stdout.count('"key"') == 1
    proc = tether("status", "nope", cwd=dataset, check=False)
    assert proc.returncode == 1 and "no such object: nope" in proc.stderr


def test_second_commit_pins_only_what_changed(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    sid = mem("sys1", {"x": 1})
    out = tether.json("commit", "-m", "second", cwd=dataset)
    assert list(out["pinned"]) == ["m1"] and out["unchanged"] == ["m2"]
    assert f'snapshot_id = "{sid}"' in manifest(dataset, "m1")
    # Nothing moved: nothing to commit.
    out = tether.json("commit", "-m", "third", cwd=dataset)
    assert out == {"vcs_commit": None, "pinned": {}, "unrecoverable": [], "unchanged": ["m1", "m2"]}


def test_commit_text_and_snapshot(dataset, tether):
    out = tether("commit", "-m", "first", cwd=dataset).stdout.splitlines()
    assert out[0] == f"  pinned m1 -> tether.{DS}.fc778424e1b91640"
    assert out[1] == "  pinned m2 -> (addressable)"
    assert out[2].startswith("committed ") and len(out[2]) == len("committed ") + 12
    snap = tether("snapshot", cwd=dataset).stdout
    assert "  m1: snapshot sys1:s0" in snap
    assert tether.json("snapshot", "m1", cwd=dataset) == {"m1": {"snapshot_id": "sys1:s0"}}


def test_shared_pin_for_equal_identity_and_state(git_repo, tether, store):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "a", "same", "--kind", "memory", cwd=git_repo)
    tether("add", "b", "--kind", "memory", "--set", "system=same", cwd=git_repo)
    out = tether.json("commit", "-m", "one", cwd=git_repo)
    assert out["pinned"]["a"] == out["pinned"]["b"]


def test_dry_run_plan_and_from_plan(dataset, tether, tmp_path, mem):
    before = manifest(dataset, "m1")
    plan_text = tether("commit", "-m", "first", "--dry-run", cwd=dataset).stdout
    assert plan_text.startswith("plan: commit (3 write(s))\n")
    assert manifest(dataset, "m1") == before
    plan_file = tmp_path / "commit.plan"
    tether("commit", "-m", "first", "--plan", str(plan_file), cwd=dataset)
    plan = json.loads(plan_file.read_text())
    assert plan["format"] == 3 and plan["command"] == "commit"
    assert {p["kind"] for p in plan["preconditions"]} == {"workspace_id", "workspace_bookmark", "manifest_hash"}
    # tether-vcs accepts the plan we saved.
    from tether.plan import Plan
    assert Plan.from_json(plan_file.read_text()).command == "commit"
    out = tether.json("commit", "--from-plan", str(plan_file), cwd=dataset)
    assert out["pinned"]["m1"].startswith(f"tether.{DS}.")
    # Applying it again: the manifests moved on, the plan is stale.
    proc = tether("commit", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 1 and "re-run the plan" in proc.stderr


def test_stale_and_edited_plans_refused(dataset, tether, tmp_path, mem):
    plan_file = tmp_path / "commit.plan"
    tether("commit", "-m", "first", "--plan", str(plan_file), cwd=dataset)
    tether("add", "m3", "sys3", "--kind", "memory", cwd=dataset)
    proc = tether("commit", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 1 and "manifests changed since the plan was made" in proc.stderr
    tether("remove", "m3", cwd=dataset)
    # The store moved after the plan: applying re-checks the states.
    mem("sys1", {"moved": True})
    proc = tether("commit", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 1 and "'m1' changed since the plan was made" in proc.stderr
    # An edited plan fails its digest.
    tether("commit", "-m", "again", "--plan", str(plan_file), cwd=dataset)
    plan = json.loads(plan_file.read_text())
    plan["context"]["message"] = "tampered"
    plan_file.write_text(json.dumps(plan))
    proc = tether("commit", "--from-plan", str(plan_file), cwd=dataset, check=False)
    assert proc.returncode == 1 and "edited" in proc.stderr
    assert tether("commit", "-m", "x", "--dry-run", "--from-plan", str(plan_file),
                  cwd=dataset, check=False).returncode == 1


def test_strict_refuses_observed(git_repo, tether, store):
    tether("init", cwd=git_repo)
    tether("add", "m1", "sys1", "--kind", "memory", cwd=git_repo)
    out = tether.json("commit", "-m", "ok", "--strict", cwd=git_repo)
    assert "m1" in out["pinned"]


def test_no_vcs_writes_manifests_only(dataset, tether, env):
    head = git("rev-parse", "HEAD", cwd=dataset, env=env)
    out = tether.json("commit", "-m", "x", "--no-vcs", cwd=dataset)
    assert out["vcs_commit"] is None and "m1" in out["pinned"]
    assert git("rev-parse", "HEAD", cwd=dataset, env=env) == head
    assert "[pin]" in manifest(dataset, "m1")
    # The next commit commits the dirty manifests even though nothing moved.
    out = tether.json("commit", "-m", "y", cwd=dataset)
    assert out["vcs_commit"] and out["unchanged"] == ["m1", "m2"]


def test_commit_requires_message_and_bookmark(dataset, tether, env):
    proc = tether("commit", cwd=dataset, check=False)
    assert proc.returncode == 1 and "a message is required" in proc.stderr
    git("switch", "-q", "-c", "elsewhere", cwd=dataset, env=env)
    proc = tether("commit", "-m", "x", cwd=dataset, check=False)
    assert proc.returncode == 1 and "not on bookmark 'main'" in proc.stderr
    assert "tether new main" in proc.stderr


def test_refusing_hook_rolls_back_the_pins(dataset, tether, env, mem):
    hook = dataset / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho 'no commits today' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = (manifest(dataset, "m1"), manifest(dataset, "m2"))
    proc = tether("commit", "-m", "x", cwd=dataset, check=False)
    assert proc.returncode == 1 and "no commits today" in proc.stderr
    assert (manifest(dataset, "m1"), manifest(dataset, "m2")) == before
    assert not any(t.startswith("tether.") for t in mem.show("sys1")["tags"])
    ops = [json.loads(l) for l in (dataset / ".tether/ops.jsonl").read_text().splitlines()]
    done = [o for o in ops if "done" in o][-1]
    assert done["result"]["rolled_back"] is True
    hook.unlink()
    assert tether.json("commit", "-m", "x", cwd=dataset)["vcs_commit"]


@pytest.mark.parametrize("point", ["commit:after-journal", "commit:after-pin",
                                   "commit:before-vcs-commit", "commit:after-vcs-commit"])
def test_crash_then_rerun_converges(dataset, tether, env, mem, point):
    proc = tether("commit", "-m", "first", cwd=dataset, check=False, env={"TETHER_FAULT": point})
    assert proc.returncode != 0
    ops = [json.loads(l) for l in (dataset / ".tether/ops.jsonl").read_text().splitlines()]
    started = [o for o in ops if o.get("command") == "commit"]
    assert started and started[-1]["status"] == "started"
    assert not any(o.get("done") == started[-1]["id"] for o in ops)
    # Rerunning finishes the job; no manifest names a pin that does not exist.
    tether("commit", "-m", "first", cwd=dataset)
    tags = mem.show("sys1")["tags"]
    m1 = manifest(dataset, "m1")
    assert f'ref = "tether.{DS}.fc778424e1b91640"' in m1
    assert tags[f"tether.{DS}.fc778424e1b91640"] == "sys1:s0"
    assert [o["state"] for o in tether.json("status", cwd=dataset)["objects"]] == ["clean", "clean"]
    assert git("status", "--porcelain", cwd=dataset, env=env).strip() == ""


def test_two_commits_serialize_on_the_lock(dataset, tether, mem):
    mem("sys1", {"v": 1})
    results = []

    def run(msg):
        results.append(tether("commit", "-m", msg, cwd=dataset, check=False))

    threads = [threading.Thread(target=run, args=(f"c{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    assert [o["state"] for o in tether.json("status", cwd=dataset)["objects"]] == ["clean", "clean"]
