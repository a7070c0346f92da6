"""A colocated jj dataset (`.jj` beside `.git`), driven through its .git:
the whole quickstart - init, add, commit, new, promote, gc, drop, abandon -
with real jj's own `jj log` showing the expected changes and bookmarks, and
tether-vcs (through its jj adapter) reading the same dataset alike."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import git

DS = "0a1b2c3d"
WS = f"tether.ws.{DS}"


def store_write(store: Path, branch: str, name: str, env) -> None:
    git("switch", "-q", branch, cwd=store, env=env)
    (store / name).write_text(name + "\n")
    git("add", name, cwd=store, env=env)
    git("commit", "-q", "-m", f"write {name}", cwd=store, env=env)
    git("switch", "-q", "main", cwd=store, env=env)


@pytest.fixture
def jj_env(env, jj_bin, tmp_path):
    e = dict(env)
    e["PATH"] = f"{jj_bin.parent}{os.pathsep}{e.get('PATH', '')}"
    e.update(JJ_USER="Test", JJ_EMAIL="test@example.com", JJ_CONFIG=str(tmp_path / "jjconfig.toml"))
    return e


def jj_log(jj_bin: Path, root: Path, env) -> list[tuple[str, str]]:
    import subprocess
    out = subprocess.run([str(jj_bin), "log", "--no-pager", "--no-graph", "-r", "::@ ~ root()", "-T",
                          'description.first_line() ++ "|" ++ bookmarks.join(",") ++ "\\n"'],
                         cwd=str(root), env=env, capture_output=True, text=True, check=True).stdout
    return [tuple(line.split("|", 1)) for line in out.splitlines()]


def test_quickstart_on_a_colocated_jj_dataset(tmp_path, jj_env, jj_bin, tether, ref):
    import subprocess
    env = jj_env
    store = tmp_path / "store"
    store.mkdir()
    git("init", "-q", "-b", "main", cwd=store, env=env)
    (store / "a").write_text("1\n")
    git("add", "a", cwd=store, env=env)
    git("commit", "-q", "-m", "one", cwd=store, env=env)
    root = tmp_path / "ds"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    (root / "README").write_text("dataset\n")
    git("add", "README", cwd=root, env=env)
    git("commit", "-q", "-m", "start", cwd=root, env=env)
    subprocess.run([str(jj_bin), "git", "init", "--colocate"], cwd=str(root), env=env, check=True,
                   capture_output=True)
    assert (root / ".jj").is_dir() and (root / ".git").is_dir()

    def t(*args, **kw):
        return tether(*args, cwd=root, env=env, **kw)

    t("init", "--dataset-id", DS)
    t("add", "code", str(store), "--kind", "git")
    t("commit", "-m", "first")
    t("new", "-b", "feat", "--eager")
    store_write(store, f"{WS}.feat", "b", env)
    t("commit", "-m", "feature work")
    assert jj_log(jj_bin, root, env)[1:3] == [("feature work", "feat"), ("first", "main")]
    t("promote")
    t("new", "main")
    t("gc", "--no-dry-run")
    assert ("feature work", "feat,main") in jj_log(jj_bin, root, env)
    # a bookmark thrown away with its commit
    t("new", "-b", "exp", "--eager")
    store_write(store, f"{WS}.exp", "c", env)
    t("commit", "-m", "experiment")
    t("new", "main")
    out = tether.json("drop", "exp", "--no-dry-run", cwd=root, env=env)
    assert len(out["abandoned"]) == 1 and out["gc"]["deleted_working_refs"] == {"code": [f"{WS}.exp"]}
    t("drop", "feat", "--no-dry-run")
    # a commit abandoned, the later one keeping its manifests
    for name, msg in (("d", "second"), ("e", "third")):
        (store / name).write_text(name)
        git("add", name, cwd=store, env=env)
        git("commit", "-q", "-m", name, cwd=store, env=env)
        t("commit", "-m", msg)
    manifest = (root / ".tether/objects/code.toml").read_text()
    t("abandon", "@--", "--gc")  # jj revsets: @ is the empty working copy, @- "third"
    assert (root / ".tether/objects/code.toml").read_text() == manifest
    log = jj_log(jj_bin, root, env)
    assert [d for d, _ in log[1:]] == ["third", "feature work", "first", "start"], log
    assert log[1][1] == "main"
    assert "experiment" not in [d for d, _ in log]
    # tether-vcs, through its jj adapter, reads the same dataset alike
    ours = tether.json("status", cwd=root, env=env)
    theirs = ref.json("status", cwd=root, env=env)
    assert [(o["key"], o["state"], o["pinned"]) for o in ours["objects"]] == \
        [(o["key"], o["state"], o["pinned"]) for o in theirs["objects"]]
    assert ours["manifest_hash"] == theirs["manifest_hash"]
    ref("verify", cwd=root, env=env)
