"""A jj dataset driven through jj itself (the jj VCS adapter), checked
against real jj and against tether-vcs's own jj adapter on the same
scenarios: the dataset commit is a jj change (`jj commit`, one operation in
`jj op log`), bookmarks are jj bookmarks, workspaces are jj workspaces, and
a jj repository without a colocated .git works too."""
from __future__ import annotations

import json
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


@pytest.mark.parametrize("name", ["a b", "x..y", "bad~1", "x.lock", "HEAD", "a:b"])
def test_new_with_a_bookmark_name_jj_or_git_refuses_writes_nothing(tmp_path, jj_env, jj_bin, tether, name):
    """jj refuses some names itself ('a b'), takes others git refuses
    ('x.lock', which jj then cannot export): both are refused before the
    journal, and jj's working copy does not move."""
    env = jj_env
    store = make_store(tmp_path, env)
    root = make_jj_dataset(tmp_path / "ds", jj_bin, env)
    tether("init", "--dataset-id", DS, cwd=root, env=env)
    tether("add", "code", str(store), "--kind", "git", cwd=root, env=env)
    tether("commit", "-m", "first", cwd=root, env=env)
    journal = (root / ".tether/ops.jsonl").read_text()
    before = log(jj_bin, root, env, "all()")
    proc = tether("new", "-b", name, "--eager", cwd=root, env=env, check=False)
    assert proc.returncode == 1 and f"invalid bookmark name '{name}'" in proc.stderr, proc.stderr
    assert (root / ".tether/ops.jsonl").read_text() == journal
    assert log(jj_bin, root, env, "all()") == before
    assert name not in jj(jj_bin, root, env, "bookmark", "list")


@pytest.mark.parametrize("later", [1, 2, 5])
def test_abandon_with_later_commits_on_jj(tmp_path, jj_env, jj_bin, tether, later):
    """jj rebases every later commit onto the dropped one's parent; each
    keeps its manifests exactly, and the journal names what was rewritten."""
    env = jj_env
    store = make_store(tmp_path, env)
    root = make_jj_dataset(tmp_path / "ds", jj_bin, env)
    tether("init", "--dataset-id", DS, cwd=root, env=env)
    tether("add", "code", str(store), "--kind", "git", cwd=root, env=env)
    tether("commit", "-m", "first", cwd=root, env=env)

    def store_commit(text):
        (store / "a").write_text(text)
        git("commit", "-q", "-am", text.strip(), cwd=store, env=env)

    def manifests(rev):
        return jj(jj_bin, root, env, "file", "show", "-r", rev, "root:.tether/objects/code.toml")

    store_commit("dropped\n")
    tether("commit", "-m", "drop-me", cwd=root, env=env)
    dropped = jj(jj_bin, root, env, "log", "--no-graph", "-r", "@-", "-T", "commit_id").strip()
    for i in range(later):
        store_commit(f"later {i}\n")
        tether("pull", "-m", f"later {i}", cwd=root, env=env)
    before = [manifests(f"@{'-' * (k + 1)}") for k in range(later)]
    out = tether.json("abandon", dropped, cwd=root, env=env)
    assert out["abandoned"] == [dropped]
    assert [d for d, _b, _e in log(jj_bin, root, env)] == \
        [""] + [f"later {i}" for i in reversed(range(later))] + ["first", "start"]
    assert [manifests(f"@{'-' * (k + 1)}") for k in range(later)] == before
    assert log(jj_bin, root, env)[1][1] == "main"
    entry = [json.loads(l) for l in (root / ".tether/ops.jsonl").read_text().splitlines()][-1]
    assert entry["command"] == "abandon" and len(entry["result"]["rewritten_commits"]) == later
    tether("verify", cwd=root, env=env)


def test_undo_of_a_commit_other_commits_build_on_is_refused_as_tether_vcs_refuses_it(tmp_path, jj_env, jj_bin,
                                                                                      tether, ref):
    """jj rebases every other child of a commit squashed into @: undoing
    main's commit after a bookmark's line was built on it would rewrite
    that line.  Refused, nothing moved, the journal saying why."""
    env = jj_env
    store = make_store(tmp_path, env)
    results = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = make_jj_dataset(tmp_path / name, jj_bin, env)
        runner("init", "--dataset-id", DS, cwd=root, env=env)
        runner("add", "code", str(store), "--kind", "git", cwd=root, env=env)
        runner("commit", "-m", "first", cwd=root, env=env)
        runner("new", "-b", f"feat-{name}", cwd=root, env=env)
        runner("set", "code", "--pin", "record", cwd=root, env=env)
        runner("commit", "-m", "on feat", cwd=root, env=env)
        runner("new", "main", cwd=root, env=env)
        first = [json.loads(l) for l in (root / ".tether/ops.jsonl").read_text().splitlines()
                 if '"command": "commit"' in l][0]["id"]
        before = log(jj_bin, root, env, "all()")
        proc = runner("undo", first, cwd=root, env=env, check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert log(jj_bin, root, env, "all()") == before
        done = json.loads((root / ".tether/ops.jsonl").read_text().splitlines()[-1])
        results[name] = re.sub(r"\b[0-9a-f]{12}\b", "<id>", json.dumps(
            [proc.stderr, done["result"]["irreversible"], done["result"]["failed"], sorted(done)]))
    assert results["ours"] == results["theirs"]
    assert "other commit(s) built on it" in results["ours"]


def test_new_shared_in_a_second_jj_workspace_journals_as_tether_vcs_does(tmp_path, jj_env, jj_bin, tether, ref):
    """`new NAME --shared` in a workspace `jj workspace add` made reads the
    bookmark's manifests through the colocated repository's git store (found
    by store/git_target, seen from the second workspace), and journals and
    undoes what tether-vcs does."""
    env = jj_env
    store = make_store(tmp_path, env)
    results = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = make_jj_dataset(tmp_path / name, jj_bin, env)
        runner("init", "--dataset-id", DS, cwd=root, env=env)
        runner("add", "code", str(store), "--kind", "git", cwd=root, env=env)
        runner("commit", "-m", "first", cwd=root, env=env)
        runner("new", "-b", f"s-{name}", "--eager", cwd=root, env=env)
        peer = tmp_path / f"{name}-peer"
        jj(jj_bin, root, env, "workspace", "add", "--name", "peer", "-r", "main", str(peer))
        runner("status", cwd=peer, env=env)
        refused = runner("new", f"s-{name}", cwd=peer, env=env, check=False)
        assert refused.returncode == 1 and "held by live workspace(s)" in refused.stderr, refused.stderr
        runner("new", f"s-{name}", "--shared", cwd=peer, env=env)
        lines = [json.loads(l) for l in (peer / ".tether/ops.jsonl").read_text().splitlines()]
        entry = [l for l in lines if l.get("command") == "new"][-1]
        done = [l for l in lines if l.get("done") == entry["id"]][-1]
        undo = runner("undo", cwd=peer, env=env)
        results[name] = json.loads(json.dumps({
            "plan": [(a["op"], a["key"], a["target"], a["detail"]) for a in entry["plan"]["actions"]],
            "context": {k: v for k, v in entry["plan"]["context"].items() if k not in ("workspace_id",)},
            "result": {k: v for k, v in done["result"].items() if k != "vcs"},
            "undo": re.sub(r"\b[0-9a-f]{12}\b", "<id>", re.sub(r"\(bookmark; [^)]*\)", "(...)", undo.stdout)),
        }).replace(f"s-{name}", "s"))
    assert results["ours"] == results["theirs"]
    assert results["ours"]["result"]["reused"] == ["code"]
