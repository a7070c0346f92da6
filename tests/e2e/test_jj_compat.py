"""A jj dataset side by side with tether-vcs 0.1.0b7 (its own jj adapter),
colocated with git and not: the whole lifecycle -- add, commit, new -b,
a write on the fork, commit, log, diff, promote, new, gc, ops, undo, drop,
abandon -- with every step's exit code, error line and --json answer, the
dataset's files, real jj's log of the dataset and the git store's refs
compared once run-bound ids are symbolised (side_by_side.py)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import side_by_side as sbs
from conftest import git

DS = "0a1b2c3e"
WS = f"tether.ws.{DS}"


@pytest.fixture
def jj_env(env, jj_bin, tmp_path):
    e = dict(env)
    e["PATH"] = f"{jj_bin.parent}{os.pathsep}{e.get('PATH', '')}"
    e.update(JJ_USER="Test", JJ_EMAIL="test@example.com", JJ_CONFIG=str(tmp_path / "jjconfig.toml"),
             GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    return e


def jj(jj_bin: Path, root: Path, env, *args: str) -> str:
    return subprocess.run([str(jj_bin), "--no-pager", "--color=never", *args], cwd=str(root), env=env,
                          capture_output=True, text=True, check=True).stdout


def jj_log(jj_bin: Path, root: Path, env) -> list[str]:
    """description | local bookmarks | empty, per visible commit, newest first."""
    out = jj(jj_bin, root, env, "log", "--no-graph", "-r", "::@ ~ root()", "-T",
             'description.first_line() ++ "|" ++ local_bookmarks.map(|b| b.name()).join(",") ++ "|"'
             ' ++ empty ++ "\\n"')
    return out.splitlines()


def store_write(store: Path, branch: str, name: str, env) -> None:
    wt = store.parent / f"wt-{name}"
    git("worktree", "add", "-q", str(wt), branch, cwd=store, env=env)
    (wt / name).write_text(name + "\n")
    git("add", name, cwd=wt, env=env)
    git("commit", "-q", "-m", f"write {name}", cwd=wt, env=env)
    git("worktree", "remove", "--force", str(wt), cwd=store, env=env)


def make_world(jj_bin, env, colocate: bool):
    def make(root, runner, name):
        store = root / "store"
        store.mkdir()
        git("init", "-q", "-b", "main", cwd=store, env=env)
        (store / "a").write_text("1\n")
        git("add", "a", cwd=store, env=env)
        git("commit", "-q", "-m", "one", cwd=store, env=env)
        ds = root / "ds"
        ds.mkdir()
        if colocate:
            git("init", "-q", "-b", "main", cwd=ds, env=env)
            (ds / "README").write_text("dataset\n")
            git("add", "README", cwd=ds, env=env)
            git("commit", "-q", "-m", "start", cwd=ds, env=env)
            jj(jj_bin, ds, env, "git", "init", "--colocate")
        else:
            jj(jj_bin, ds, env, "git", "init", "--no-colocate")
            (ds / "README").write_text("dataset\n")
            jj(jj_bin, ds, env, "commit", "-m", "start")
            jj(jj_bin, ds, env, "bookmark", "set", "main", "-r", "@-")

        def on_feat(ds):
            store_write(store, f"{WS}.feat", "b", env)

        def on_exp(ds):
            store_write(store, f"{WS}.exp", "c", env)

        def on_main(tag):
            def step(ds):
                (store / tag).write_text(tag)
                git("add", tag, cwd=store, env=env)
                git("commit", "-q", "-m", tag, cwd=store, env=env)
            step.__name__ = f"main gains {tag}"
            return step

        def jj_shape(ds):
            return jj_log(jj_bin, ds, env)

        steps = [
            ("init", "--dataset-id", DS),
            ("add", "code", str(store), "--kind", "git"),
            ("status", "--json"),
            ("commit", "-m", "first", "--json"),
            jj_shape,
            ("new", "-b", "feat", "--eager", "--json"),
            on_feat,
            ("status", "--json"),
            ("commit", "-m", "feature work", "--json"),
            ("log", "code", "--json"),
            ("diff", "main", "feat", "--json"),
            ("promote", "--dry-run", "--json"),
            ("promote", "--json"),
            jj_shape,
            ("new", "main", "--json"),
            ("gc", "--dry-run", "--json"),
            ("gc", "--no-dry-run", "--json"),
            ("new", "-b", "exp", "--eager", "--json"),
            on_exp,
            ("commit", "-m", "experiment", "--json"),
            ("new", "main", "--json"),
            ("drop", "exp", "--dry-run", "--json"),
            ("drop", "exp", "--no-dry-run", "--json"),
            jj_shape,
            on_main("d"),
            ("commit", "-m", "second", "--json"),
            on_main("e"),
            ("commit", "-m", "third", "--json"),
            ("abandon", "@--", "--json"),
            jj_shape,
            ("undo", "--json"),
            ("status", "--json"),
            ("verify", "--json"),
            ("ops", "--json"),
            jj_shape,
        ]
        shown = sbs.run(runner, ds, steps, env=env)
        w = sbs.World(name, shown, sbs.dataset_files(ds, env))
        w.files["store refs"] = sbs.git_out("for-each-ref", "--format=%(refname) %(objectname)",
                                            cwd=store, env=env).splitlines()
        return w
    return make


@pytest.mark.parametrize("colocate", [True, False], ids=["colocated", "jj-only"])
def test_jj_dataset_lifecycle_side_by_side(tmp_path, jj_env, jj_bin, tether, ref, colocate):
    worlds = sbs.both(tmp_path, tether, ref, make_world(jj_bin, jj_env, colocate))
    diffs = sbs.differences(worlds["ours"], worlds["theirs"])
    if diffs and os.environ.get("SBS_DUMP"):
        Path(os.environ["SBS_DUMP"]).write_text("\n\n".join(diffs))
    assert diffs == []
    failed = [(s["step"], s["error"]) for s in worlds["ours"].steps if s.get("rc")]
    # every step succeeds but undoing the abandon (refused alike)
    assert [f[0] for f in failed] == ["undo --json"]
    assert "cannot undo 'abandon'" in failed[0][1]
