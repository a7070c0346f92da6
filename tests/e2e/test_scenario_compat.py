"""The same scenario through tether-vcs 0.1.0b7 and through ours, on git
objects (the one kind both drive across processes): init, add, commit,
new -b, write on the working branch, commit, promote, gc.  The manifests'
pin ids and the manifest hash must be identical, and each implementation's
status / verify / log must run clean on the other's result."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git

DS = "5ca1ab1e"


def fixed_env(env, n):
    e = dict(env)
    stamp = f"2026-01-0{n}T00:00:00+00:00"
    e.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    return e


def make_code_repo(path: Path, env):
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path, env=env)
    (path / "model.py").write_text("weights = 1\n")
    git("add", ".", cwd=path, env=fixed_env(env, 1))
    git("commit", "-q", "-m", "initial model", cwd=path, env=fixed_env(env, 1))


def write_on_branch(code: Path, branch: str, env, tmp: Path):
    """A commit on the working branch through a worktree, with fixed dates so
    both runs make the same sha."""
    wt = tmp / f"wt-{branch.replace('/', '_')}"
    git("worktree", "add", "-q", str(wt), branch, cwd=code, env=env)
    (wt / "model.py").write_text("weights = 2\n")
    git("commit", "-q", "-am", "retrain", cwd=wt, env=fixed_env(env, 2))
    git("worktree", "remove", "--force", str(wt), cwd=code, env=env)


def reset_code_repo(code: Path, env):
    """Back to the first commit, with every tether ref gone."""
    for ref in git("for-each-ref", "--format=%(refname)", cwd=code, env=env).split():
        if ref.startswith(("refs/tags/tether.", "refs/heads/tether.")):
            git("update-ref", "-d", ref, cwd=code, env=env)
    first = git("rev-list", "--max-parents=0", "main", cwd=code, env=env).strip()
    git("reset", "-q", "--hard", first, cwd=code, env=env)


def run_scenario(runner, root: Path, code: Path, env, tmp: Path) -> dict:
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", DS, cwd=root)
    runner("add", "code", str(code), "--kind", "git", cwd=root)
    runner("commit", "-m", "first", cwd=root)
    runner("new", "-b", "feature", "--eager", cwd=root)
    branch = f"tether.ws.{DS}.feature"
    write_on_branch(code, branch, env, tmp)
    runner("commit", "-m", "retrained", cwd=root)
    promoted = runner.json("promote", cwd=root)
    gc = runner("gc", "--no-dry-run", cwd=root, check=False)
    manifest = (root / ".tether/objects/code.toml").read_text()
    return {"promoted": promoted, "manifest": manifest, "gc": gc.returncode,
            "main": git("rev-parse", "main", cwd=code, env=env).strip()}


def pin_lines(text: str) -> list[str]:
    return [l for l in text.splitlines() if l.startswith(("id = ", "ref = ", "sha = "))]


def test_same_scenario_same_pins_and_hash(tmp_path, env, tether, ref, build_dir):
    code = tmp_path / "code"
    make_code_repo(code, env)
    ours = run_scenario(tether, tmp_path / "ours", code, env, tmp_path)
    reset_code_repo(code, env)
    theirs = run_scenario(ref, tmp_path / "theirs", code, env, tmp_path)
    assert pin_lines(ours["manifest"]) == pin_lines(theirs["manifest"])
    assert ours["main"] == theirs["main"]
    assert ours["gc"] == theirs["gc"] == 0
    # The same manifest hash, each computed by its own implementation.
    mh_ours = tether.json("status", cwd=tmp_path / "ours")["manifest_hash"]
    mh_theirs = ref.json("status", cwd=tmp_path / "theirs")["manifest_hash"]
    assert mh_ours == mh_theirs


def test_each_reads_the_others_result(tmp_path, env, tether, ref):
    code = tmp_path / "code"
    make_code_repo(code, env)
    run_scenario(tether, tmp_path / "ours", code, env, tmp_path)
    # tether-vcs on our dataset.
    for args in (("status", "--json"), ("verify",), ("log", "code")):
        ref(*args, cwd=tmp_path / "ours")
    reset_code_repo(code, env)
    run_scenario(ref, tmp_path / "theirs", code, env, tmp_path)
    # Ours on tether-vcs's dataset.
    for args in (("status", "--json"), ("verify",), ("log", "code")):
        tether(*args, cwd=tmp_path / "theirs")
