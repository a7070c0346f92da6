"""verify, log and diff over the memory backend (store file shared by the
CLI runs), including drifted and missing pins edited into the store."""
from __future__ import annotations

import json

import pytest

from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)


def edit_store(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def find_system(data, name):
    systems = data.get("systems", data)
    return systems[name]


def test_verify_ok_missing_drifted(dataset, tether, mem, store):
    tether("commit", "-m", "first", cwd=dataset)
    out = tether.json("verify", cwd=dataset)
    assert out == {"m1": {"status": "ok", "message": ""}, "m2": {"status": "ok", "message": ""}}
    tag = f"tether.{DS}.fc778424e1b91640"
    sid = mem("sys1", {"x": 1})
    edit_store(store, lambda d: find_system(d, "sys1")["tags"].__setitem__(tag, sid))
    proc = tether("verify", cwd=dataset, check=False)
    assert proc.returncode == 1
    assert "   drifted  m1  " in proc.stdout
    edit_store(store, lambda d: find_system(d, "sys1")["tags"].pop(tag))
    out = json.loads(tether("verify", "m1", "--json", cwd=dataset, check=False).stdout)
    assert out["m1"]["status"] == "missing"


def test_verify_all_history_and_rev(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    tether("commit", "-m", "second", cwd=dataset)
    out = tether.json("verify", "--all-history", cwd=dataset)
    assert len(out) == 4 and all(r["status"] == "ok" for r in out.values())
    assert all(":" in label for label in out)
    assert tether.json("verify", "-r", "HEAD~1", cwd=dataset).keys() == {"m1", "m2"}
    only = tether.json("verify", "--all-history", "m2", cwd=dataset)
    assert len(only) == 2 and all(k.endswith(":m2") for k in only)
    proc = tether("verify", "-r", "no-such-rev", cwd=dataset, check=False)
    assert proc.returncode == 1 and "could not resolve revision" in proc.stderr


def test_log_lists_history_with_pins(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    sid = mem("sys1", {"x": 1})
    out = tether.json("log", "m1", cwd=dataset)
    assert [e["id"] for e in out] == [sid, "sys1:s0"]
    assert f"tether.{DS}.fc778424e1b91640" in out[1]["refs"] and "main" in out[0]["refs"]
    assert len(tether.json("log", "m1", "-n", "1", cwd=dataset)) == 1
    text = tether("log", "m1", cwd=dataset).stdout.splitlines()
    assert text[0].startswith(f"  {sid}  ") and text[0].endswith("[main]")
    # An unregistered locator, by kind.
    assert [e["id"] for e in tether.json("log", "sys1", "--kind", "memory", cwd=dataset)] == [sid, "sys1:s0"]
    proc = tether("log", "nope", cwd=dataset, check=False)
    assert proc.returncode == 1 and "no such object: nope" in proc.stderr


def test_diff_objects_and_content(dataset, tether, mem):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"a": 1, "b": "x"})
    tether("commit", "-m", "second", cwd=dataset)
    out = tether.json("diff", "HEAD~1", "HEAD", cwd=dataset)
    by = {e["key"]: e for e in out}
    assert by["m1"]["change"] == "changed" and by["m1"]["why"] == ["state", "pin"]
    assert by["m2"]["change"] == "unchanged" and by["m1"]["detail"] is None
    out = tether.json("diff", "HEAD~1", "HEAD", "--content", cwd=dataset)
    detail = {e["key"]: e for e in out}["m1"]["detail"]
    assert detail["summary"] == "+2 -0 ~0 keys" and detail["unit"] == "keys"
    text = tether("diff", "HEAD~1", "HEAD", "--content", "--limit", "1", cwd=dataset).stdout
    assert "    changed  m1  [+2 -0 ~0 keys]" in text and "... 1 more (use --limit)" in text
    # Working tree against the last commit: an added object, a policy change.
    tether("add", "m3", "sys3", "--kind", "memory", cwd=dataset)
    tether("set", "m2", "--pin", "native", cwd=dataset)
    text = tether("diff", cwd=dataset).stdout
    assert "      added  m3" in text
    assert "    changed  m2  [policy changed; same state]" in text
    assert [e["key"] for e in tether.json("diff", "--key", "m3", cwd=dataset)] == ["m3"]
