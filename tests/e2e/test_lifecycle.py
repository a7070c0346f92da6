"""forget-workspace, abandon and drop against tether-vcs: the same
scenario run by each implementation on its own copy gives the same JSON,
journal records, manifests and refs (paths and commit ids normalised)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import git

DS = "0a1b2c3d"


def commit_file(repo: Path, name: str, text: str, env, message: str | None = None) -> str:
    (repo / name).write_text(text)
    git("add", name, cwd=repo, env=env)
    git("commit", "-q", "-m", message or f"write {name}", cwd=repo, env=env)
    return git("rev-parse", "HEAD", cwd=repo, env=env).strip()


def ops(root: Path) -> list[dict]:
    path = root / ".tether/ops.jsonl"
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def norm(value, base: Path, *ids: str):
    """Paths under base and random ids out of the way."""
    text = json.dumps(value, sort_keys=True)
    for i in ids:
        text = text.replace(i, "<ws>").replace(i[:8], "<ws>")
    text = text.replace(str(base.resolve()), "<tmp>").replace(str(base), "<tmp>")
    text = re.sub(r'"(id|at|created_at|digest)": "[^"]*"', r'"\1": "<x>"', text)
    text = re.sub(r"\b[0-9a-f]{40}\b", "<commit>", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<c12>", text)
    text = re.sub(r"\b[0-9a-f]{16}\b", "<h16>", text)
    text = re.sub(r"\b[0-9a-f]{64}\b", "<h64>", text)
    text = re.sub(r"\b[0-9a-f]{32}\b", "<h32>", text)
    return json.loads(text)


def make_dataset(base: Path, env, runner) -> dict:
    """A dataset tracking one git store, with one commit on main."""
    store = base / "stores" / "code"
    store.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=store, env=env)
    commit_file(store, "a.txt", "one\n", env)
    root = base / "ds"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    (root / "README").write_text("dataset\n")
    git("add", "README", cwd=root, env=env)
    git("commit", "-q", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", DS, cwd=root)
    runner("add", "code", str(store), "--kind", "git", cwd=root)
    runner("commit", "-m", "first", cwd=root)
    return {"root": root, "store": store}


@pytest.fixture
def pair(tmp_path, env, tether, ref):
    """The same dataset twice: one driven by us, one by tether-vcs."""
    out = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        base = tmp_path / name
        base.mkdir()
        out[name] = (base, make_dataset(base, env, runner), runner)
    return out


# --- forget-workspace ----------------------------------------------------------


def add_worktree(root: Path, env, runner, name: str, bookmark: str | None = None) -> Path:
    wt = root.parent / name
    git("worktree", "add", "-q", "-b", f"wt-{name}", str(wt), cwd=root, env=env)
    if bookmark:
        runner("new", "-b", bookmark, "--eager", cwd=wt)
    else:
        runner("status", cwd=wt)
    return wt


def workspace_id(root: Path) -> str:
    text = (root / ".tether/workspace.toml").read_text()
    return re.search(r'workspace_id = "([0-9a-f]+)"', text).group(1)


def test_forget_other_workspace_same_as_tether_vcs(pair, env):
    results = {}
    for name, (base, d, runner) in pair.items():
        wt = add_worktree(d["root"], env, runner, "peer", "feat")
        wid = workspace_id(wt)
        plan = runner.json("forget-workspace", wid[:8], "--dry-run", cwd=d["root"])
        out = runner.json("forget-workspace", wid, cwd=d["root"])
        assert not wt.exists()
        assert "peer" not in git("worktree", "list", cwd=d["root"], env=env)
        entry = ops(d["root"])[-1]
        results[name] = norm({"plan": plan, "out": out, "entry": entry}, base, wid)
        # The store's branch belongs to the bookmark: untouched.
        assert f"tether.ws.{DS}.feat" in git("branch", "--list", cwd=d["store"], env=env)
    assert results["ours"]["out"] == results["theirs"]["out"]
    assert results["ours"]["plan"] == results["theirs"]["plan"]
    o, t = results["ours"]["entry"], results["theirs"]["entry"]
    for k in ("command", "status", "result", "plan", "parent", "undoes", "undone_by", "progress"):
        assert o[k] == t[k], k
    assert o["pre"].keys() == t["pre"].keys() == {"workspace"}


def test_forget_current_main_worktree_keeps_checkout(pair, env):
    results = {}
    for name, (base, d, runner) in pair.items():
        wid = workspace_id(d["root"])
        out = runner.json("forget-workspace", cwd=d["root"])
        assert not (d["root"] / ".tether/workspace.toml").exists()
        assert not (d["root"] / ".tether/ops.jsonl").exists()
        assert (d["root"] / ".tether/objects/code.toml").exists()
        results[name] = norm(out, base, wid)
        # The next command starts a fresh workspace.
        runner("status", cwd=d["root"])
    assert results["ours"] == results["theirs"]
    assert results["ours"]["vcs"] is None


def test_forget_unknown_workspace_is_a_note(pair):
    results = {}
    for name, (base, d, runner) in pair.items():
        plan = runner.json("forget-workspace", "deadbeef", "--dry-run", cwd=d["root"])
        results[name] = norm(plan, base)
        assert runner.json("forget-workspace", "deadbeef", cwd=d["root"])["removed_files"] == []
    assert results["ours"] == results["theirs"]
    assert results["ours"]["notes"][0] == "workspace deadbeef: no live checkout found"


def test_forget_finds_no_checkout_whose_workspace_file_is_tracked(pair, env):
    """A workspace.toml git tracks in a peer checkout is not that checkout's
    own record (a copy comes with every clone): forget-workspace does not
    take the checkout for the workspace it names, and deletes nothing."""
    results = {}
    for name, (base, d, runner) in pair.items():
        wt = add_worktree(d["root"], env, runner, "peer")
        wid = workspace_id(wt)
        git("add", "-f", ".tether/workspace.toml", cwd=wt, env=env)
        plan = runner.json("forget-workspace", wid[:8], "--dry-run", cwd=d["root"])
        out = runner.json("forget-workspace", wid, cwd=d["root"])
        assert (wt / ".tether/workspace.toml").exists() and out["removed_files"] == []
        assert "peer" in git("worktree", "list", cwd=d["root"], env=env)
        results[name] = norm(plan, base, wid)
    assert results["ours"] == results["theirs"]
    assert results["ours"]["notes"][0] == "workspace <ws>: no live checkout found"


def test_forget_from_saved_plan_and_each_applies_the_others(pair, env, tmp_path):
    (ob, od, ours), (tb, td, theirs) = pair["ours"], pair["theirs"]
    for runner, maker, applier, d in ((ours, ours, theirs, od), (theirs, theirs, ours, td)):
        wt = add_worktree(d["root"], env, maker, "peer")
        plan = tmp_path / f"plan-{id(d)}.json"
        maker("forget-workspace", workspace_id(wt), "--plan", str(plan), cwd=d["root"])
        applier("forget-workspace", "--from-plan", str(plan), cwd=d["root"])
        assert not wt.exists()


# --- abandon -------------------------------------------------------------------


def three_commits(d, env, runner):
    for msg in ("second", "third"):
        commit_file(d["store"], "a.txt", f"{msg}\n", env)
        runner("commit", "-m", msg, cwd=d["root"])


def manifests_at(root: Path, env, rev: str) -> dict:
    names = git("ls-tree", "--name-only", f"{rev}:.tether/objects", cwd=root, env=env).split()
    return {n: git("show", f"{rev}:.tether/objects/{n}", cwd=root, env=env) for n in names}


def subjects(root: Path, env) -> list[str]:
    return git("log", "--format=%s", "HEAD", cwd=root, env=env).splitlines()


def tags(store: Path, env) -> list[str]:
    return sorted(git("tag", "--list", cwd=store, env=env).split())


@pytest.mark.parametrize("gc", [False, True])
def test_abandon_middle_commit_same_as_tether_vcs(pair, env, gc):
    results = {}
    for name, (base, d, runner) in pair.items():
        three_commits(d, env, runner)
        root = d["root"]
        head_manifests = manifests_at(root, env, "HEAD")
        second = git("rev-parse", "HEAD~1", cwd=root, env=env).strip()
        out = runner.json("abandon", second, *(["--gc"] if gc else []), cwd=root)
        assert subjects(root, env) == ["third", "first", "start"]
        # the later commit keeps its manifests exactly
        assert manifests_at(root, env, "HEAD") == head_manifests
        assert git("status", "--porcelain", cwd=root, env=env) == ""
        entry = [e for e in ops(root) if e.get("command") == "abandon"][-1]
        assert entry["result"]["abandoned"] == [second]
        results[name] = {
            "out": norm(out, base),
            "entry": norm({k: entry[k] for k in ("command", "status", "plan", "parent", "progress")}, base),
            "result": sorted(entry["result"]), "pre": sorted(entry["pre"]),
            "unreferenced": norm(entry["result"]["unreferenced"], base),
            "tags": norm(tags(d["store"], env), base),
        }
    o, t = results["ours"], results["theirs"]
    for k in o:
        assert o[k] == t[k], (k, json.dumps(o[k], indent=1, sort_keys=True), json.dumps(t[k], indent=1, sort_keys=True))
    assert len(o["unreferenced"]) == 1
    assert (len(o["tags"]) == 2) == gc


def test_abandon_head_moves_branch_and_text_matches(pair, env):
    texts = {}
    for name, (base, d, runner) in pair.items():
        three_commits(d, env, runner)
        root = d["root"]
        first = git("rev-parse", "HEAD~2", cwd=root, env=env).strip()
        out = runner("abandon", "HEAD", cwd=root).stdout
        assert subjects(root, env) == ["second", "first", "start"]
        texts[name] = re.sub(r"\b[0-9a-f]{16}\b", "<h16>", re.sub(r"\b[0-9a-f]{12}\b", "<c12>", out))
        entry = [e for e in ops(root) if e.get("command") == "abandon"][-1]
        assert entry["result"]["rewritten_commits"] == {}
        assert first in git("log", "--format=%H", cwd=root, env=env)
    assert texts["ours"] == texts["theirs"]
    assert "(not applied; `tether gc --no-dry-run` releases these, or re-run with --gc)" in texts["ours"]


def test_abandon_refusals_same_as_tether_vcs(pair, env):
    for name, (base, d, runner) in pair.items():
        root = d["root"]
        root_commit = git("rev-list", "--max-parents=0", "HEAD", cwd=root, env=env).strip()
        p = runner("abandon", root_commit, cwd=root, check=False)
        assert p.returncode == 1 and "cannot abandon the root commit" in p.stderr
        (root / "README").write_text("edited\n")
        p = runner("abandon", "HEAD", cwd=root, check=False)
        assert p.returncode == 1 and "commit or stash your changes" in p.stderr
        git("checkout", "README", cwd=root, env=env)
        three_commits(d, env, runner)
        git("switch", "-q", "-c", "other", "HEAD~1", cwd=root, env=env)
        p = runner("abandon", "main", cwd=root, check=False)
        assert p.returncode == 1 and "is not on the current branch" in p.stderr, p.stderr


# --- drop ----------------------------------------------------------------------

WSFEAT = f"tether.ws.{DS}.feat"


def feature_work(d, env, runner, leave: bool):
    """Bookmark feat with one commit pinning a write on its store branch;
    leave for main unless asked to stay."""
    root, store = d["root"], d["store"]
    runner("new", "-b", "feat", "--eager", cwd=root)
    git("switch", "-q", WSFEAT, cwd=store, env=env)
    commit_file(store, "b.txt", "feature\n", env)
    git("switch", "-q", "main", cwd=store, env=env)
    runner("commit", "-m", "feature work", cwd=root)
    if leave:
        runner("new", "main", cwd=root)


def branches(store: Path, env) -> list[str]:
    return sorted(git("for-each-ref", "--format=%(refname:short)", "refs/heads/", cwd=store, env=env).split())


def drop_entry(root: Path) -> dict:
    lines = ops(root)
    entry = [e for e in lines if e.get("command") == "drop"][-1]
    done = [e for e in lines if e.get("done") == entry["id"]]
    progress = [{k: v for k, v in e.items() if k != "progress"} for e in lines if e.get("progress") == entry["id"]]
    return {"entry": {k: entry[k] for k in ("command", "status", "parent")}, "plan_actions": entry["plan"]["actions"],
            "result": done[-1]["result"] if done else None, "progress": progress,
            "steps": sorted(e["command"] for e in lines if e.get("parent") == entry["id"])}


@pytest.mark.parametrize("leave", [True, False])
def test_drop_same_as_tether_vcs(pair, env, leave):
    results = {}
    for name, (base, d, runner) in pair.items():
        feature_work(d, env, runner, leave)
        root = d["root"]
        preview = runner.json("drop", "feat", cwd=root)
        text = runner("drop", "feat", cwd=root).stdout
        assert text.endswith("(not applied; `--no-dry-run` drops it)\n")
        assert "feat" in git("branch", "--list", cwd=root, env=env)
        out = runner.json("drop", "feat", "--no-dry-run", cwd=root)
        assert "feat" not in git("branch", "--list", "feat", cwd=root, env=env)
        assert git("symbolic-ref", "--short", "HEAD", cwd=root, env=env).strip() == "main"
        assert WSFEAT not in branches(d["store"], env)
        ws = (root / ".tether/workspace.toml").read_text()
        assert 'bookmark = "main"' in ws
        results[name] = norm({"preview": preview, "out": out, "journal": drop_entry(root),
                              "tags": tags(d["store"], env), "text": text}, base)
    o, t = results["ours"], results["theirs"]
    for k in o:
        assert o[k] == t[k], (k, json.dumps(o[k], indent=1, sort_keys=True), json.dumps(t[k], indent=1, sort_keys=True))
    assert len(o["out"]["abandoned"]) == 1


def test_drop_refusals_same_as_tether_vcs(pair, env):
    for name, (base, d, runner) in pair.items():
        root = d["root"]
        errors = []
        for args in (["main"], ["nope"], ["feat", "--to", "nope"]):
            if args[0] == "feat":
                runner("new", "-b", "feat", cwd=root)
            p = runner("drop", *args, cwd=root, check=False)
            assert p.returncode == 1, p
            errors.append(p.stderr)
        runner("new", "main", cwd=root)
        wt = add_worktree(root, env, runner, "peer")
        runner("new", "feat", cwd=wt)
        p = runner("drop", "feat", cwd=root, check=False)
        assert p.returncode == 1
        errors.append(re.sub(r"[0-9a-f]{8}", "<ws>", p.stderr))
        results = errors
        if name == "ours":
            ours = results
        else:
            assert ours == results
    assert "'main' is the trunk bookmark; it cannot be dropped" in ours[0]
    assert "no bookmark 'nope'" in ours[1]


def test_drop_from_saved_plan_each_applies_the_others(pair, env, tmp_path):
    (ob, od, ours), (tb, td, theirs) = pair["ours"], pair["theirs"]
    for maker, applier, d in ((ours, theirs, od), (theirs, ours, td)):
        feature_work(d, env, maker, True)
        plan = tmp_path / f"drop-{id(d)}.json"
        maker("drop", "feat", "--plan", str(plan), cwd=d["root"])
        applier("drop", "feat", "--from-plan", str(plan), cwd=d["root"])
        assert "feat" not in git("branch", "--list", "feat", cwd=d["root"], env=env)
        assert WSFEAT not in branches(d["store"], env)


def history(d, env, runner, later: int, merge_before: bool = False):
    """first, [a merged side branch], drop-me, then `later` commits, each a
    store commit then a dataset commit (`pull` on main records it)."""
    root = d["root"]
    if merge_before:
        git("checkout", "-q", "-b", "side", cwd=root, env=env)
        commit_file(root, "notes.txt", "side\n", env, "side")
        git("checkout", "-q", "main", cwd=root, env=env)
        commit_file(root, "README", "dataset!\n", env, "readme")
        git("merge", "-q", "--no-edit", "side", cwd=root, env=env)
    commit_file(d["store"], "a.txt", "dropped\n", env)
    runner("commit", "-m", "drop-me", cwd=root)
    dropped = git("rev-parse", "HEAD", cwd=root, env=env).strip()
    for i in range(later):
        commit_file(d["store"], "a.txt", f"later {i}\n", env)
        runner("pull", "-m", f"later {i}", cwd=root)
    return dropped


@pytest.mark.parametrize("later,merge_before", [(1, False), (2, False), (5, False), (3, True)])
def test_abandon_with_later_commits_same_as_tether_vcs(pair, env, later, merge_before):
    """Every later commit is rewritten onto the dropped one's parent and keeps
    its manifests exactly, as tether-vcs does; the same JSON and journal."""
    results = {}
    for name, (base, d, runner) in pair.items():
        root = d["root"]
        dropped = history(d, env, runner, later, merge_before)
        revs = git("rev-list", "--first-parent", f"{dropped}..HEAD", cwd=root, env=env).split()[::-1]
        before = [manifests_at(root, env, r) for r in revs]
        subj = subjects(root, env)
        out = runner.json("abandon", dropped, cwd=root)
        assert subjects(root, env) == [s for s in subj if s != "drop-me"]
        after = git("rev-list", "--first-parent", f"HEAD~{later}..HEAD", cwd=root, env=env).split()[::-1]
        assert [manifests_at(root, env, r) for r in after] == before
        assert git("status", "--porcelain", cwd=root, env=env) == ""
        entry = [e for e in ops(root) if e.get("command") == "abandon"][-1]
        assert entry["result"]["abandoned"] == [dropped]
        assert sorted(entry["result"]["rewritten_commits"]) == sorted(revs)
        results[name] = {"out": norm(out, base), "result": norm(entry["result"], base),
                         "pre": sorted(entry["pre"]), "subjects": subjects(root, env)}
    o, t = results["ours"], results["theirs"]
    for k in o:
        assert o[k] == t[k], (k, json.dumps(o[k], indent=1, sort_keys=True), json.dumps(t[k], indent=1, sort_keys=True))


def test_abandon_below_a_merge_refuses_and_changes_nothing(pair, env):
    """A merge among the later commits: git's rebase replays the side
    branch's commits onto the main line and leaves the merge commit out.
    We refuse rather than rewrite history into another shape, with nothing
    changed; tether-vcs fails too, after moving the branch onto the
    linearised history (a deliberate difference, docs/compatibility.md)."""
    for name, (base, d, runner) in pair.items():
        root = d["root"]
        dropped = history(d, env, runner, 1)
        git("checkout", "-q", "-b", "side", cwd=root, env=env)
        commit_file(root, "notes.txt", "side\n", env, "side")
        git("checkout", "-q", "main", cwd=root, env=env)
        commit_file(d["store"], "a.txt", "after\n", env)
        runner("pull", "-m", "after", cwd=root)
        git("merge", "-q", "--no-edit", "side", cwd=root, env=env)
        head = git("rev-parse", "HEAD", cwd=root, env=env).strip()
        journal = (root / ".tether/ops.jsonl").read_text()
        proc = runner("abandon", dropped, cwd=root, check=False)
        assert proc.returncode == 1
        if name == "ours":
            assert "would drop or merge 1 later commit(s) (merges in between?); rebase by hand" in proc.stderr
            assert git("rev-parse", "HEAD", cwd=root, env=env).strip() == head
            assert git("status", "--porcelain", cwd=root, env=env) == ""
            assert (root / ".tether/ops.jsonl").read_text() == journal
            assert not [w for w in git("worktree", "list", cwd=root, env=env).splitlines() if "tether-abandon" in w]


@pytest.mark.parametrize("point", ["drop:after-journal", "drop:after-leave", "drop:after-delete-bookmark", None])
def test_an_interrupted_drop_is_read_back_as_tether_vcs_reads_it(pair, env, point):
    """A drop killed at each step (and one that finished): `repair
    --dry-run` says how far it came and which command finishes it, and
    `undo` refuses it (or its steps), in tether-vcs's words -- each
    implementation reading the same journal."""
    base, d, runner = pair["ours"]
    ref_runner = pair["theirs"][2]
    root = d["root"]
    feature_work(d, env, runner, leave=point != "drop:after-leave")
    proc = runner("drop", "feat", "--no-dry-run", cwd=root, check=False, env={"TETHER_FAULT": point} if point else None)
    assert proc.returncode == (-9 if point else 0), proc.stderr
    copy = base / "copy"
    shutil.copytree(root, copy, symlinks=True)
    said = {}
    for name, r, where in (("ours", runner, root), ("theirs", ref_runner, copy)):
        plan = base / f"repair-{name}.json"
        r("repair", "--plan", str(plan), cwd=where)
        notes = json.loads(plan.read_text())["notes"]
        undo = r("undo", cwd=where, check=False)
        said[name] = (notes, undo.returncode, undo.stderr)
    assert said["ours"] == said["theirs"]
    notes, rc, err = said["ours"]
    assert rc == 1
    if point:
        assert "A drop is finished, not undone -- the VCS's own undo is the way back" in err
        assert any(n.startswith("operation ") and "(drop feat), which was interrupted" in n for n in notes)
    else:
        assert "the VCS's own undo brings its commits and bookmark back" in err
