"""ops (the journal as the user sees it) and the drift warnings status gives
when the VCS moved behind tether's back."""
from __future__ import annotations

import json

from conftest import git
from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)


def test_ops_lists_newest_first(dataset, tether):
    tether("commit", "-m", "first", cwd=dataset)
    out = tether.json("ops", cwd=dataset)
    assert [e["command"] for e in out] == ["commit", "add", "add"]
    assert out[0]["status"] == "done" and out[0]["vcs_commit_gone"] is False
    text = tether("ops", "-n", "1", cwd=dataset).stdout.splitlines()
    assert len(text) == 1 and "  commit   pinned m1; recorded m2; vcs " in text[0]


def test_ops_flags_incomplete(dataset, tether):
    tether("commit", "-m", "first", cwd=dataset, check=False, env={"TETHER_FAULT": "commit:after-pin"})
    line = tether("ops", "-n", "1", cwd=dataset).stdout
    assert "INCOMPLETE" in line


def test_vcs_drift_after_reset(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    out = tether.json("commit", "-m", "second", cwd=dataset)
    git("reset", "-q", "--hard", "HEAD~1", cwd=dataset, env=env)
    st = tether.json("status", cwd=dataset)
    assert len(st["vcs_drift"]) == 1
    d = st["vcs_drift"][0]
    assert d["commit"] == out["vcs_commit"] and d["referenced"] == {"m1": False}
    proc = tether("status", cwd=dataset)
    assert "is no longer in VCS history" in proc.stderr and "`gc` will release them" in proc.stderr
    assert tether.json("ops", cwd=dataset)[0]["vcs_commit_gone"] is True


def test_bookmark_left_warning(dataset, tether, env):
    tether("commit", "-m", "first", cwd=dataset)
    git("switch", "-q", "-c", "elsewhere", cwd=dataset, env=env)
    st = tether.json("status", cwd=dataset)
    assert any("has left bookmark 'main'" in w for w in st["bookmark_drift"])
