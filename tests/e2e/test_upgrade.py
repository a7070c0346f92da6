"""`upgrade` on datasets made by older tether-vcs releases, each installed
from PyPI into its own virtualenv under .tmp/ (made once, then reused):
0.1.0b1-b3 datasets (version 4) come forward exactly as tether-vcs 0.1.0b7
brings them (same plan, same tether.toml, same journal record shape); one
already at version 5 is left alone; an alpha dataset, which needs parts this
build does not carry, is refused with nothing written."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, Runner, git

VENVS = ROOT / ".tmp"


def old_tether(version: str) -> Path:
    venv = VENVS / f"venv-tether-vcs-{version}"
    exe = venv / "bin" / "tether"
    if not exe.exists():
        VENVS.mkdir(exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                               f"tether-vcs[cli]=={version}"], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            msg = f"cannot install tether-vcs {version}: {proc.stderr[-500:]}"
            if os.environ.get("TETHER_REQUIRE_JJ") == "1":  # under make check: no silent skips
                pytest.fail(msg)
            pytest.skip(msg)
    return exe


def made_by(version: str, tmp_path: Path, env, name: str = "ds") -> Path:
    """A dataset made by that release: one git object, one commit."""
    old = Runner(old_tether(version), env)
    store = tmp_path / f"store-{name}"
    store.mkdir()
    git("init", "-q", "-b", "main", cwd=store, env=env)
    (store / "a").write_text("1\n")
    git("add", "a", cwd=store, env=env)
    git("commit", "-q", "-m", "one", cwd=store, env=env)
    root = tmp_path / name
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    old("init", cwd=root)
    old("add", "code", str(store), "--kind", "git", cwd=root)
    old("commit", "-m", "first", cwd=root)
    return root


def twin(root: Path, tmp_path: Path, name: str) -> Path:
    """A copy of the dataset (same store) for the other implementation."""
    other = tmp_path / name
    shutil.copytree(root, other, symlinks=True)
    return other


def comparable(plan: dict) -> dict:
    return {k: v for k, v in plan.items() if k not in ("created_at", "digest")}


@pytest.mark.parametrize("version", ["0.1.0b1", "0.1.0b3"])
def test_version_4_dataset_comes_forward_as_tether_vcs_brings_it(tmp_path, env, tether, ref, version):
    ours = made_by(version, tmp_path, env)
    assert "version = 4" in (ours / "tether.toml").read_text()
    theirs = twin(ours, tmp_path, "theirs")
    # refused by every other command until upgraded
    st = tether("status", cwd=ours, check=False)
    assert st.returncode == 1 and "version 4" in st.stderr
    assert comparable(tether.json("upgrade", "--dry-run", cwd=ours)) == \
        comparable(ref.json("upgrade", "--dry-run", cwd=theirs))
    o, t = tether.json("upgrade", cwd=ours), ref.json("upgrade", cwd=theirs)
    assert o["from_version"] == t["from_version"] == 4 and o["to_version"] == t["to_version"] == 5
    assert {k: v for k, v in o.items() if k != "vcs_commit"} == {k: v for k, v in t.items() if k != "vcs_commit"}
    assert (ours / "tether.toml").read_text() == (theirs / "tether.toml").read_text()
    for root in (ours, theirs):
        assert git("log", "-1", "--format=%s", cwd=root, env=env).strip() == "tether upgrade: v4 -> v5"
        assert git("status", "--porcelain", cwd=root, env=env) == ""
    entries = [[json.loads(l) for l in (r / ".tether/ops.jsonl").read_text().splitlines()][-1]
               for r in (ours, theirs)]
    assert entries[0]["command"] == entries[1]["command"] == "upgrade"
    assert sorted(entries[0]) == sorted(entries[1])
    assert comparable(entries[0]["plan"]) == comparable(entries[1]["plan"])
    # the upgraded dataset works for both, and each verifies the other's pins
    tether("verify", cwd=theirs)
    ref("verify", cwd=ours)
    assert tether.json("status", cwd=ours)["stale"] is False


def test_current_dataset_is_left_alone(tmp_path, env, tether, ref):
    root = made_by("0.1.0b5", tmp_path, env)
    head = git("rev-parse", "HEAD", cwd=root, env=env)
    text = tether("upgrade", cwd=root).stdout
    assert text == ref("upgrade", cwd=root).stdout == "already at version 5\n"
    assert comparable(tether.json("upgrade", "--dry-run", cwd=root)) == \
        comparable(ref.json("upgrade", "--dry-run", cwd=root))
    assert git("rev-parse", "HEAD", cwd=root, env=env) == head


def test_alpha_dataset_is_refused_with_nothing_written(tmp_path, env, tether):
    root = made_by("0.1.0a5", tmp_path, env)
    assert "version = 1" in (root / "tether.toml").read_text()
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git/" not in str(p)}
    head = git("rev-parse", "HEAD", cwd=root, env=env)
    p = tether("upgrade", cwd=root, check=False)
    assert p.returncode == 1
    assert "needs upgrade parts this tether does not build" in p.stderr
    assert "tether-vcs 0.1.0b7" in p.stderr
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert after == before and git("rev-parse", "HEAD", cwd=root, env=env) == head


# --- crash points ----------------------------------------------------------------


@pytest.mark.parametrize("point", ["upgrade:after-config", "upgrade:after-vcs-commit"])
def test_killed_upgrade_rerun_finishes_it(tmp_path, env, tether, ref, point):
    root = made_by("0.1.0b3", tmp_path, env)
    killed = tether("upgrade", cwd=root, check=False, env={**env, "TETHER_FAULT": point})
    assert killed.returncode == -9, killed
    assert "version = 5" in (root / "tether.toml").read_text()
    out = tether.json("upgrade", cwd=root)
    if point == "upgrade:after-config":
        # the rerun lands the commit the kill stopped, and journals it
        assert out["from_version"] == 4 and out["vcs_commit"]
        last = json.loads((root / ".tether/ops.jsonl").read_text().splitlines()[-1])
        assert last["command"] == "upgrade" and last["result"]["vcs_commit"] == out["vcs_commit"]
    else:
        assert out["from_version"] == 5 and out.get("vcs_commit") is None
    assert git("log", "-1", "--format=%s", cwd=root, env=env).strip() == "tether upgrade: v4 -> v5"
    assert git("status", "--porcelain", cwd=root, env=env) == ""
    assert tether("upgrade", cwd=root).stdout == "already at version 5\n"
    tether("verify", cwd=root)
    ref("verify", cwd=root)
