"""`recover` against tether-vcs: on the same stores, the same report (JSON
and text, byte for byte) - pins and bookmarks by dataset id, missing pins,
refs of another dataset, scoped reports - and exit 1 when a store cannot be
listed."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import git

DS = "0a1b2c3d"
OTHER = "9f8e7d6c"


def commit_file(repo: Path, name: str, text: str, env) -> None:
    (repo / name).write_text(text)
    git("add", name, cwd=repo, env=env)
    git("commit", "-q", "-m", f"write {name}", cwd=repo, env=env)


@pytest.fixture
def stores(tmp_path, env):
    """Two code repositories outside the dataset."""
    out = {}
    for name in ("code", "docs"):
        repo = tmp_path / "stores" / name
        repo.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=repo, env=env)
        commit_file(repo, "a.txt", f"{name} one\n", env)
        out[name] = repo
    return out


def new_dataset(tmp_path, env, runner, name, dataset_id, stores):
    root = tmp_path / name
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", dataset_id, cwd=root)
    for key, repo in stores.items():
        runner("add", key, str(repo), "--kind", "git", cwd=root)
    return root


@pytest.fixture
def lost(tmp_path, env, tether, stores):
    """A dataset that pinned on main and worked on bookmark feat (a
    working branch with a write nobody committed), then was lost."""
    root = new_dataset(tmp_path, env, tether, "lost", DS, stores)
    tether("commit", "-m", "first", cwd=root)
    tether("new", "-b", "feat", "--eager", cwd=root)
    shutil.rmtree(root)
    return stores


def same_report(tether, ref, root, *args, rc=0):
    ours = tether("recover", *args, cwd=root, check=False)
    theirs = ref("recover", *args, cwd=root, check=False)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), ours.stderr
    assert ours.returncode == rc
    oj = tether("recover", *args, "--json", cwd=root, check=False)
    tj = ref("recover", *args, "--json", cwd=root, check=False)
    assert oj.returncode == tj.returncode == rc
    assert json.loads(oj.stdout) == json.loads(tj.stdout)
    return json.loads(oj.stdout), ours.stdout


def test_fresh_dataset_same_id_takes_back_bookmarks(tmp_path, env, tether, ref, lost):
    root = new_dataset(tmp_path, env, tether, "again", DS, lost)
    report, text = same_report(tether, ref, root)
    assert report["pinned"] is True and report["suggested_dataset_id"] is None
    ds = report["datasets"]
    assert [d["dataset_id"] for d in ds] == [DS] and ds[0]["current"] is True
    assert [b["bookmark"] for b in ds[0]["bookmarks"]] == ["feat"]
    commands = [s["command"] for s in report["steps"]]
    assert "tether new -b feat --adopt -- main && tether commit -m 'Recover feat'" in commands
    assert f"{DS} (this dataset): 1 pin(s); bookmarks: feat" in text


def test_other_id_is_suggested_while_nothing_is_pinned(tmp_path, env, tether, ref, lost):
    root = new_dataset(tmp_path, env, tether, "again", OTHER, lost)
    report, _ = same_report(tether, ref, root)
    assert report["suggested_dataset_id"] == DS
    assert report["steps"][0]["command"] is None
    assert f'id = "{DS}"' in report["steps"][0]["note"]


def test_other_id_after_pinning_points_to_a_fresh_repository(tmp_path, env, tether, ref, lost):
    root = new_dataset(tmp_path, env, tether, "again", OTHER, lost)
    tether("commit", "-m", "mine", cwd=root)
    report, _ = same_report(tether, ref, root)
    assert report["pinned"] is True
    assert any("fresh repository" in s["note"] for s in report["steps"])


def test_scoped_report_and_missing_pin(tmp_path, env, tether, ref, stores):
    root = new_dataset(tmp_path, env, tether, "ds", DS, stores)
    tether("commit", "-m", "first", cwd=root)
    tag = git("tag", "--list", "tether.*", cwd=stores["code"], env=env).split()[0]
    git("tag", "-d", tag, cwd=stores["code"], env=env)
    report, _ = same_report(tether, ref, root)
    assert report["objects"][0]["missing_pin"] == tag.removeprefix("tether.")
    assert report["steps"][0]["command"] == "tether repair -- code"
    report, _ = same_report(tether, ref, root, "code")
    assert report["scoped"] is True
    assert report["steps"][-1]["command"] == "tether recover"
    report, _ = same_report(tether, ref, root, "docs")
    assert [s["command"] for s in report["steps"]] == ["tether recover"]


def test_store_that_cannot_be_listed_exits_1(tmp_path, env, tether, ref, stores):
    root = new_dataset(tmp_path, env, tether, "ds", DS, stores)
    shutil.rmtree(stores["docs"])
    ours = tether("recover", "--json", cwd=root, check=False)
    theirs = ref("recover", "--json", cwd=root, check=False)
    assert ours.returncode == theirs.returncode == 1
    o, t = json.loads(ours.stdout), json.loads(theirs.stdout)
    assert [x["error"] is not None for x in o["objects"]] == [False, True]
    assert o["steps"] == t["steps"]
    assert "could not list the refs of docs" in o["steps"][0]["note"]


def test_unknown_key_is_refused(tmp_path, env, tether, stores):
    root = new_dataset(tmp_path, env, tether, "ds", DS, stores)
    out = tether("recover", "nope", cwd=root, check=False)
    assert out.returncode == 1 and "nope" in out.stderr
