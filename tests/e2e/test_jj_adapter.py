"""A jj dataset driven through jj itself (the jj VCS adapter), checked
against real jj and against tether-vcs's own jj adapter on the same
scenarios: the dataset commit is a jj change (`jj commit`, one operation in
`jj op log`), bookmarks are jj bookmarks, workspaces are jj workspaces, and
a jj repository without a colocated .git works too."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import git

DS = "0a1b2c3d"
WS = f"tether.ws.{DS}"


@pytest.fixture
def jj_env(env, jj_bin, tmp_path):
    e = dict(env)
    e["PATH"] = f"{jj_bin.parent}{os.pathsep}{e.get('PATH', '')}"
    e.update(JJ_USER="Test", JJ_EMAIL="test@example.com", JJ_CONFIG=str(tmp_path / "jjconfig.toml"))
    # fixed dates: two stores (or two runs) make the same git commits
    e.update(GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    return e


def jj(jj_bin: Path, root: Path, env, *args: str) -> str:
    return subprocess.run([str(jj_bin), "--no-pager", "--color=never", *args], cwd=str(root), env=env,
                          capture_output=True, text=True, check=True).stdout


def log(jj_bin: Path, root: Path, env, revset: str = "::@ ~ root()") -> list[tuple[str, str, str]]:
    """(description, bookmarks, empty) per commit, newest first."""
    out = jj(jj_bin, root, env, "log", "--no-graph", "-r", revset, "-T",
             'description.first_line() ++ "|" ++ local_bookmarks.map(|b| b.name()).join(",") ++ "|"'
             ' ++ empty ++ "\\n"')
    return [tuple(line.split("|")) for line in out.splitlines()]


def make_store(base: Path, env) -> Path:
    store = base / "store"
    store.mkdir()
    git("init", "-q", "-b", "main", cwd=store, env=env)
    (store / "a").write_text("1\n")
    git("add", "a", cwd=store, env=env)
    git("commit", "-q", "-m", "one", cwd=store, env=env)
    return store


def make_jj_dataset(root: Path, jj_bin: Path, env, *, colocate: bool = True) -> Path:
    root.mkdir()
    if colocate:
        git("init", "-q", "-b", "main", cwd=root, env=env)
        (root / "README").write_text("dataset\n")
        git("add", "README", cwd=root, env=env)
        git("commit", "-q", "-m", "start", cwd=root, env=env)
        jj(jj_bin, root, env, "git", "init", "--colocate")
    else:
        jj(jj_bin, root, env, "git", "init", "--no-colocate")
        (root / "README").write_text("dataset\n")
        jj(jj_bin, root, env, "commit", "-m", "start")
        jj(jj_bin, root, env, "bookmark", "set", "main", "-r", "@-")
    return root


def manifest(root: Path, key: str = "code") -> str:
    text = (root / f".tether/objects/{key}.toml").read_text()
    return re.sub(r'captured_at = "[^"]*"\n', "", text)


def test_commit_is_a_jj_change_and_tether_vcs_agrees(tmp_path, jj_env, jj_bin, tether, ref):
    env = jj_env
    store = make_store(tmp_path, env)
    roots = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = make_jj_dataset(tmp_path / name, jj_bin, env)
        runner("init", "--dataset-id", DS, cwd=root, env=env)
        runner("add", "code", str(store), "--kind", "git", cwd=root, env=env)
        runner("commit", "-m", "first", cwd=root, env=env)
        roots[name] = root
    ours, theirs = roots["ours"], roots["theirs"]
    # jj made the commit: one `jj commit` operation, the trunk bookmark on
    # it, a fresh empty working-copy change on top
    ops = jj(jj_bin, ours, env, "op", "log", "--no-graph", "-T", 'description ++ "\\n"')
    assert re.search(r"^commit [0-9a-f]+$", ops, re.M), ops
    assert log(jj_bin, ours, env) == log(jj_bin, theirs, env) == [
        ("", "", "true"), ("first", "main", "false"), ("start", "", "false")]
    # the same manifests and pin ids as tether-vcs's jj adapter
    assert manifest(ours) == manifest(theirs)
    assert (ours / "tether.toml").read_text() == (theirs / "tether.toml").read_text()
    # each reads the other's dataset alike
    for root in (ours, theirs):
        a = tether.json("status", cwd=root, env=env)
        b = ref.json("status", cwd=root, env=env)
        assert a["manifest_hash"] == b["manifest_hash"]
        assert [(o["key"], o["state"], o["pinned"]) for o in a["objects"]] == \
            [(o["key"], o["state"], o["pinned"]) for o in b["objects"]]
        ref("verify", cwd=root, env=env)
        tether("verify", cwd=root, env=env)
    # a commit by tether-vcs on our dataset, then ours on top: one line of changes
    (store / "b").write_text("2\n")
    git("add", "b", cwd=store, env=env)
    git("commit", "-q", "-m", "two", cwd=store, env=env)
    ref("commit", "-m", "second", cwd=ours, env=env)
    (store / "c").write_text("3\n")
    git("add", "c", cwd=store, env=env)
    git("commit", "-q", "-m", "three", cwd=store, env=env)
    tether("commit", "-m", "third", cwd=ours, env=env)
    assert [d for d, _b, _e in log(jj_bin, ours, env)] == ["", "third", "second", "first", "start"]
    assert log(jj_bin, ours, env)[1][1] == "main"
    ref("verify", cwd=ours, env=env)


def test_undo_of_a_commit_puts_the_change_back_into_the_working_copy(tmp_path, jj_env, jj_bin, tether):
    env = jj_env
    store = make_store(tmp_path, env)
    root = make_jj_dataset(tmp_path / "ds", jj_bin, env)
    tether("init", "--dataset-id", DS, cwd=root, env=env)
    tether("add", "code", str(store), "--kind", "git", cwd=root, env=env)
    tether("commit", "-m", "first", cwd=root, env=env)
    out = tether.json("undo", cwd=root, env=env)
    assert any("uncommitted" in line for line in out["restored"]), out
    # the change is gone; its manifest is a working-copy change again
    assert [d for d, _b, _e in log(jj_bin, root, env)] == ["", "start"]
    assert "code.toml" in jj(jj_bin, root, env, "diff", "--summary", "-r", "@")
    tether("commit", "-m", "again", cwd=root, env=env)
    assert [d for d, _b, _e in log(jj_bin, root, env)] == ["", "again", "start"]


def test_a_jj_repository_without_colocated_git(tmp_path, jj_env, jj_bin, tether, ref):
    env = jj_env
    store = make_store(tmp_path, env)
    root = make_jj_dataset(tmp_path / "ds", jj_bin, env, colocate=False)
    assert not (root / ".git").exists()
    tether("init", "--dataset-id", DS, cwd=root, env=env)
    tether("add", "code", str(store), "--kind", "git", cwd=root, env=env)
    tether("commit", "-m", "first", cwd=root, env=env)
    tether("new", "-b", "feat", "--eager", cwd=root, env=env)
    assert log(jj_bin, root, env)[:2] == [("", "", "true"), ("first", "feat,main", "false")]
    git("switch", "-q", f"{WS}.feat", cwd=store, env=env)
    (store / "b").write_text("2\n")
    git("add", "b", cwd=store, env=env)
    git("commit", "-q", "-m", "feature", cwd=store, env=env)
    git("switch", "-q", "main", cwd=store, env=env)
    tether("commit", "-m", "feature work", cwd=root, env=env)
    assert log(jj_bin, root, env)[1] == ("feature work", "feat", "false")
    assert tether.json("log", "code", cwd=root, env=env) == ref.json("log", "code", cwd=root, env=env)
    ours = tether.json("status", cwd=root, env=env)
    theirs = ref.json("status", cwd=root, env=env)
    assert ours["manifest_hash"] == theirs["manifest_hash"]
    ref("verify", cwd=root, env=env)


def dataset_with_peer(tmp_path, jj_bin, env, tether):
    """A jj dataset with one committed git object, and a second jj workspace
    `peer` on bookmark `side` (forked eagerly): (root, peer)."""
    store = make_store(tmp_path, env)
    root = make_jj_dataset(tmp_path / "ds", jj_bin, env)
    tether("init", "--dataset-id", DS, cwd=root, env=env)
    tether("add", "code", str(store), "--kind", "git", cwd=root, env=env)
    tether("commit", "-m", "first", cwd=root, env=env)
    peer = tmp_path / "peer"
    jj(jj_bin, root, env, "workspace", "add", "--name", "peer", "-r", "main", str(peer))
    tether("new", "-b", "side", "--eager", cwd=peer, env=env)
    return root, peer


def test_workspaces_are_jj_workspaces(tmp_path, jj_env, jj_bin, tether):
    env = jj_env
    root, peer = dataset_with_peer(tmp_path, jj_bin, env, tether)
    wid = re.search(r'workspace_id = "([0-9a-f]+)"', (peer / ".tether/workspace.toml").read_text()).group(1)
    out = tether.json("forget-workspace", wid, cwd=root, env=env)
    assert "jj workspace 'peer' forgotten" in str(out), out
    assert "peer" not in jj(jj_bin, root, env, "workspace", "list")
    assert peer.is_dir()  # jj leaves the directory


def test_gc_counts_a_peer_jj_workspaces_branches(tmp_path, jj_env, jj_bin, tether):
    """gc asks jj (in the peer workspace) whether its .tether records are
    tracked copies; an untracked one is that workspace's own, so its working
    branch is spoken for, not a stray to delete."""
    env = jj_env
    root, peer = dataset_with_peer(tmp_path, jj_bin, env, tether)
    p = tether("gc", "--prune-bookmarks", "--dry-run", cwd=root, env=env)
    assert "skipping .tether/workspace.toml" not in p.stderr, p.stderr
    plan = tether.json("gc", "--prune-bookmarks", "--dry-run", "--json", cwd=root, env=env)
    doomed = [a for a in plan.get("actions", []) if a.get("op") == "delete-branch"]
    assert not doomed, doomed


def test_user_config_is_kept_out_but_immutable_heads_is_honoured(tmp_path, jj_env, jj_bin, tether):
    env = dict(jj_env)
    Path(env["JJ_CONFIG"]).write_text(
        "[revset-aliases]\n"
        "'immutable_heads()' = 'frozen'\n"
        "'frozen' = 'main'\n"
        "'all()' = 'none()'\n"
        "[templates]\n"
        "log = 'description'\n"
        "[ui]\n"
        "color = 'always'\n")
    store = make_store(tmp_path, env)
    root = make_jj_dataset(tmp_path / "ds", jj_bin, env)
    tether("init", "--dataset-id", DS, cwd=root, env=env)
    tether("add", "code", str(store), "--kind", "git", cwd=root, env=env)
    tether("commit", "-m", "first", cwd=root, env=env)
    # the user's templates, colours and an alias shadowing all() change nothing
    st = tether.json("status", cwd=root, env=env)
    assert [o["key"] for o in st["objects"]] == ["code"]
    # main is immutable to the user's jj: tether's abandon is refused by jj
    p = tether("abandon", "main", cwd=root, env=env, check=False)
    assert p.returncode == 1 and "immutable" in p.stderr.lower(), p.stderr
    assert [d for d, _b, _e in log(jj_bin, root, env)] == ["", "first", "start"]


def test_undo_of_new_returns_the_jj_working_copy(tmp_path, jj_env, jj_bin, tether, ref):
    env = jj_env
    store = make_store(tmp_path, env)
    results = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = make_jj_dataset(tmp_path / name, jj_bin, env)
        runner("init", "--dataset-id", DS, cwd=root, env=env)
        runner("add", "code", str(store), "--kind", "git", cwd=root, env=env)
        runner("commit", "-m", "first", cwd=root, env=env)
        runner("new", "-b", f"exp-{name}", "--eager", cwd=root, env=env)
        out = runner.json("undo", cwd=root, env=env)
        # (the order of the fields named in "workspace.toml restored (...)" is not compared)
        results[name] = sorted(re.sub(r" \(.*\)$", "", line.replace(f"exp-{name}", "exp"))
                               for line in out["restored"])
        assert "VCS working copy back where it was" in out["restored"], out
        assert not out["skipped"], out
        assert log(jj_bin, root, env)[:2] == [("", "", "true"), ("first", "main", "false")]
    assert results["ours"] == results["theirs"]
