"""Stores tether makes and reclaims: `add --create`, its undo, the `(created)`
status mark, `add --pick`, and `gc --delete-stores` / `--store`.

Every scenario runs against real stores (local directories, git
repositories, Icechunk 2.x repositories opened and written by icechunk
itself), and where tether-vcs can run the same scenario its files, plans
and reports are the oracle: the same manifest bytes, the same
created-store index records, the same gc plan and report, and each
implementation reclaims or undoes the stores the other made.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import git

DS = "5e1f0a7b"


def dataset(runner, env, root: Path) -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", DS, cwd=root)
    return root


def created_index(root: Path) -> list[dict]:
    path = root / ".git" / "tether-created.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def without_at(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "at"} for r in records]


def manifest_text(root: Path, key: str) -> str:
    return (root / ".tether" / "objects" / f"{key}.toml").read_text()


def ops_lines(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / ".tether" / "ops.jsonl").read_text().splitlines()]


def git_commits(path: Path, env) -> list[str]:
    return git("rev-list", "--all", cwd=path, env=env).split()


# --- add --create ----------------------------------------------------------------


@pytest.mark.parametrize("kind,name", [("file", "made"), ("git", "made.git")])
def test_create_writes_what_tether_vcs_writes(tmp_path, tether, ref, env, kind, name):
    """The same `add --create` through both: identical manifest bytes,
    index records (but the time) and journal results; the created git
    repositories have the same fixed root commit and owner config."""
    store = tmp_path / "stores" / name
    outs = {}
    for who, runner in (("ours", tether), ("ref", ref)):
        root = dataset(runner, env, tmp_path / who)
        proc = runner("add", "m", str(store), "--kind", kind, "--create", cwd=root)
        assert proc.stdout == f"added m ({kind}, created)\n"
        assert "experimental" in proc.stderr
        outs[who] = {
            "manifest": manifest_text(root, "m"),
            "index": without_at(created_index(root)),
            "result": ops_lines(root)[-1]["result"],
        }
        if kind == "git":
            outs[who]["commits"] = git_commits(store, env)
            outs[who]["owner"] = git("config", "tether.owner", cwd=store, env=env).strip()
            outs[who]["branch"] = git("symbolic-ref", "HEAD", cwd=store, env=env).strip()
        else:
            outs[who]["listing"] = sorted(p.name for p in store.iterdir())
            outs[who]["marker"] = (store / ".tether-owner").read_text()
        shutil.rmtree(store)
    assert outs["ours"] == outs["ref"]
    assert 'origin = "created"' in outs["ours"]["manifest"]
    rec, = outs["ours"]["index"]
    assert rec["dataset_id"] == DS and rec["kind"] == kind and rec["bookmark"] == "main"
    assert rec["locator"] == {"uri": str(store)}


def test_create_refused_where_something_exists(git_repo, tether, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "data").write_text("mine\n")
    before = (git_repo / ".tether" / "objects").exists() and list((git_repo / ".tether" / "objects").iterdir())
    proc = tether("add", "t", str(taken), "--kind", "file", "--create", cwd=git_repo, check=False)
    assert proc.returncode == 1
    assert f"{taken} already exists; `create` never adopts it" in proc.stderr
    assert sorted(p.name for p in taken.iterdir()) == ["data"]
    assert not (git_repo / ".tether" / "objects" / "t.toml").exists()
    assert created_index(git_repo) == []
    assert (git_repo / ".tether" / "objects").exists() is bool(before is not False)
    # A kind without CREATE is refused before anything is journaled.
    n = len(ops_lines(git_repo))
    proc = tether("add", "d", str(tmp_path / "t.delta"), "--kind", "delta", "--create", cwd=git_repo,
                  check=False)
    assert proc.returncode == 1
    assert "'delta' cannot create a store at this locator; register an existing one instead" in proc.stderr
    assert len(ops_lines(git_repo)) == n and not (tmp_path / "t.delta").exists()


def test_status_marks_created_objects(git_repo, tether, ref, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    tether("add", "plain", str(plain), "--kind", "file", cwd=git_repo)
    tether("add", "made", str(tmp_path / "made"), "--kind", "file", "--create", cwd=git_repo)
    ours = tether("status", "--snapshot", cwd=git_repo).stdout
    theirs = ref("status", "--snapshot", cwd=git_repo).stdout
    assert "  new  made  [file/observed] (created)\n" in ours
    assert "  new  plain  [file/observed]\n" in ours
    # the object lines are tether-vcs's; the header names the dataset id too (issue 21)
    assert ours.splitlines()[1:] == theirs.splitlines()[1:]
    assert ours.splitlines()[0].startswith(f"dataset {DS} (manifests ")
    origins = {o["key"]: o["origin"] for o in tether.json("status", cwd=git_repo)["objects"]}
    assert origins == {"made": "created", "plain": "adopted"}


def test_create_on_a_bookmark_forks_at_once(git_repo, tether, env, tmp_path):
    """Off the trunk the created store's working branch is forked right away
    (a `new` could not: nothing is committed yet), and undo takes both back."""
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("new", "-b", "feature", cwd=git_repo)
    store = tmp_path / "g.git"
    tether("add", "g", str(store), "--kind", "git", "--create", cwd=git_repo)
    branch = f"tether.ws.{DS}.feature"
    assert git("branch", "--list", branch, cwd=store, env=env).strip().endswith(branch)
    ws = tomllib.loads((git_repo / ".tether" / "workspace.toml").read_text())
    assert ws["working_refs"] == {"g": branch}
    assert ops_lines(git_repo)[-1]["result"]["fork"] == branch
    rec, = created_index(git_repo)
    assert rec["bookmark"] == "feature"
    out = tether.json("undo", cwd=git_repo)
    assert "g: removed the store it created" in out["restored"]
    assert not store.exists() and created_index(git_repo) == []


def test_create_records_the_commit_it_made_not_the_head_after(git_repo, tether, env, tmp_path):
    """Another writer commits in the new git store right after create made
    its root commit: the fork point recorded is the root create made, not
    the store's head read again (and the fork starts from it)."""
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("new", "-b", "feature", cwd=git_repo)
    store = tmp_path / "g.git"
    real = shutil.which("git")
    wrapper = tmp_path / "git-wrapper"
    wrapper.write_text(f"""#!/bin/sh
"{real}" "$@"; rc=$?
case " $* " in *" -C {store} reset -q --hard "*)
  if [ $rc = 0 ]; then
    c=$("{real}" -C "{store}" -c user.name=x -c user.email=x@example.com commit-tree -p HEAD -m other "HEAD^{{tree}}")
    "{real}" -C "{store}" update-ref HEAD "$c"
  fi;;
esac
exit $rc
""")
    wrapper.chmod(0o755)
    tether("add", "g", str(store), "--kind", "git", "--create", cwd=git_repo, env={"TETHER_GIT": str(wrapper)})
    root = git("rev-list", "--max-parents=0", "HEAD", cwd=store, env=env).strip()
    assert git("rev-parse", "HEAD", cwd=store, env=env).strip() != root  # the other writer landed
    ws = tomllib.loads((git_repo / ".tether" / "workspace.toml").read_text())
    assert ws["fork_points"]["g"]["sha"] == root
    branch = f"tether.ws.{DS}.feature"
    assert git("rev-parse", branch, cwd=store, env=env).strip() == root


# --- undo ---------------------------------------------------------------------------


def test_undo_removes_an_empty_created_store(git_repo, tether, env, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "g.git"
    tether("add", "g", str(store), "--kind", "git", "--create", cwd=git_repo)
    proc = tether("undo", cwd=git_repo)
    assert "  restored   g: removed the store it created" in proc.stdout
    assert not store.exists()
    assert not (git_repo / ".tether" / "objects" / "g.toml").exists()
    assert created_index(git_repo) == []


def test_undo_keeps_a_created_store_that_holds_writes(tmp_path, tether, ref, env):
    """A written store stays for gc; both implementations say why, alike."""
    results = {}
    for who, runner in (("ours", tether), ("ref", ref)):
        root = dataset(runner, env, tmp_path / who)
        store = tmp_path / f"{who}-store"
        runner("add", "m", str(store), "--kind", "file", "--create", cwd=root)
        (store / "data.txt").write_text("written\n")
        proc = runner("undo", "--json", cwd=root, check=False)
        out = json.loads(proc.stdout)
        results[who] = (proc.returncode, [x.replace(str(store), "STORE") for x in out["irreversible"]],
                        out["restored"][:1])
        assert (store / "data.txt").exists() and (store / ".tether-owner").exists()
        assert len(created_index(root)) == 1
    assert results["ours"] == results["ref"]
    assert results["ours"][1] == ["m: the store at STORE holds writes; left for `gc --delete-stores` "
                                  "to reclaim once nothing references it"]


def test_undo_leaves_a_store_whose_marker_changed(git_repo, tether, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "m"
    tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo)
    (store / ".tether-owner").write_text("0badbeef\n")
    out = tether.json("undo", cwd=git_repo, check=False)
    assert out["irreversible"] == [f"m: the store at {store} no longer carries this dataset's owner "
                                   "marker; left alone"]
    assert store.is_dir()


def test_undo_with_a_malformed_created_record_removes_nothing(git_repo, tether, tmp_path):
    """The journal is per checkout but still a file: a `created` record in
    the wrong shape is reported, and no store is touched."""
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "m"
    tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo)
    ops = git_repo / ".tether" / "ops.jsonl"
    lines = ops.read_text().splitlines()
    done = json.loads(lines[-1])
    done["result"]["created"]["locator"] = str(store)
    ops.write_text("\n".join([*lines[:-1], json.dumps(done)]) + "\n")
    proc = tether("undo", "--json", cwd=git_repo, check=False)
    out = json.loads(proc.stdout)
    assert proc.returncode == 3
    assert out["irreversible"] == ["m: the journal's record of the store it created is malformed; the "
                                   "store (if any) is left for `gc --delete-stores`"]
    assert (store / ".tether-owner").exists() and len(created_index(git_repo)) == 1


def test_each_undoes_the_others_created_store(tmp_path, tether, ref, env):
    for maker, undoer in ((ref, tether), (tether, ref)):
        root = dataset(maker, env, tmp_path / f"ds-{maker.exe.parent.name}-{len(list(tmp_path.iterdir()))}")
        store = tmp_path / f"store-{root.name}.git"
        maker("add", "g", str(store), "--kind", "git", "--create", cwd=root)
        out = undoer.json("undo", cwd=root)
        assert "g: removed the store it created" in out["restored"]
        assert not store.exists() and created_index(root) == []


# --- add --pick -----------------------------------------------------------------------


@pytest.fixture
def history_repo(tmp_path, env) -> tuple[Path, list[str]]:
    src = tmp_path / "src"
    git("init", "-q", "-b", "main", str(src), cwd=tmp_path, env=env)
    for i in range(3):
        (src / "f").write_text(f"{i}\n")
        git("add", "f", cwd=src, env=env)
        git("commit", "-q", "-m", f"c{i}", cwd=src, env=env)
    return src, git("rev-list", "main", cwd=src, env=env).split()


def test_pick_takes_the_numbered_entry_from_stdin(tmp_path, tether, ref, env, history_repo):
    src, commits = history_repo
    texts = {}
    for who, runner in (("ours", tether), ("ref", ref)):
        root = dataset(runner, env, tmp_path / who)
        proc = runner("add", "s", str(src), "--kind", "git", "--pick", cwd=root, input="2\n")
        assert proc.stdout.splitlines()[-1] == f"Pick an entry (number or id) [1]: added s (git) at {commits[1]}"
        texts[who] = (proc.stdout, manifest_text(root, "s"))
    assert texts["ours"] == texts["ref"]
    lines = texts["ours"][0].splitlines()
    assert lines[0].startswith(f"  1. {commits[0]}  ") and lines[0].endswith("  c2  [main]")
    assert lines[2].startswith(f"  3. {commits[2]}  ")


def test_pick_by_id_prefix_and_default(git_repo, tether, history_repo):
    src, commits = history_repo
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "a", str(src), "--kind", "git", "--pick", cwd=git_repo, input=commits[2][:7] + "\n")
    tether("add", "b", str(src), "--kind", "git", "--pick", cwd=git_repo, input="\n")
    ats = {k: tomllib.loads(manifest_text(git_repo, k))["locator"]["at"] for k in "ab"}
    assert ats == {"a": commits[2], "b": commits[0]}
    proc = tether("add", "c", str(src), "--kind", "git", "--pick", cwd=git_repo, input="zz\n", check=False)
    assert proc.returncode == 1 and "no entry matches 'zz'" in proc.stderr
    assert not (git_repo / ".tether" / "objects" / "c.toml").exists()


def test_pick_without_an_answer_is_refused(git_repo, tether, history_repo):
    src, _ = history_repo
    tether("init", "--dataset-id", DS, cwd=git_repo)
    before = (git_repo / ".tether" / "ops.jsonl").read_text() if (git_repo / ".tether" / "ops.jsonl").exists() else ""
    proc = subprocess.run([str(tether.exe), "add", "s", str(src), "--kind", "git", "--pick"], cwd=git_repo,
                          env=tether.env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "stdin ended without an answer" in proc.stderr and "`--at ID`" in proc.stderr
    assert not (git_repo / ".tether" / "objects" / "s.toml").exists()
    after = (git_repo / ".tether" / "ops.jsonl").read_text() if (git_repo / ".tether" / "ops.jsonl").exists() else ""
    assert after == before


def test_pick_refused_for_a_kind_without_history(git_repo, tether, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    (tmp_path / "d").mkdir()
    proc = tether("add", "d", str(tmp_path / "d"), "--kind", "file", "--pick", cwd=git_repo, input="1\n",
                  check=False)
    assert proc.returncode == 1 and "file backend cannot list history" in proc.stderr
    assert not (git_repo / ".tether" / "objects" / "d.toml").exists()


# --- gc --delete-stores -------------------------------------------------------------


def reclaim_scenario(runner, env, root: Path, stores: Path) -> None:
    """m: created, unregistered, empty; n: created, unregistered, written;
    k: created, still registered; foreign: another dataset's marker;
    plain: no marker."""
    dataset(runner, env, root)
    for key in ("m", "n", "k"):
        runner("add", key, str(stores / key), "--kind", "file", "--create", cwd=root)
    (stores / "n" / "data").write_text("x\n")
    runner("remove", "m", cwd=root)
    runner("remove", "n", cwd=root)
    (stores / "foreign").mkdir()
    (stores / "foreign" / ".tether-owner").write_text("0badbeef\n")
    (stores / "plain").mkdir()


def test_gc_delete_stores_like_tether_vcs(tmp_path, tether, ref, env):
    outs = {}
    for who, runner in (("ours", tether), ("ref", ref)):
        root, stores = tmp_path / who, tmp_path / f"{who}-stores"
        reclaim_scenario(runner, env, root, stores)
        claims = ["--store", f"file={stores / 'foreign'}", "--store", f"file={stores / 'plain'}"]
        plan = runner("gc", "--delete-stores", *claims, cwd=root).stdout.replace(str(stores), "S")
        plan_json = runner.json("gc", "--delete-stores", *claims, cwd=root)
        report = runner.json("gc", "--delete-stores", "--no-dry-run", cwd=root)
        outs[who] = (plan, json.loads(json.dumps(plan_json["actions"]).replace(str(stores), "S")),
                     plan_json["notes"] and [n.replace(str(stores), "S") for n in plan_json["notes"]],
                     json.loads(json.dumps(report).replace(str(stores), "S")),
                     sorted(p.name for p in stores.iterdir()),
                     without_at(json.loads(json.dumps(created_index(root)).replace(str(stores), "S"))))
    assert outs["ours"] == outs["ref"]
    plan, actions, notes, report, left, index = outs["ours"]
    assert [(a["op"], a["key"]) for a in actions] == [("keep-store", "n"), ("delete-store", "m")]
    assert "S/foreign: created store S/foreign carries dataset 0badbeef's owner marker; left alone" in notes
    assert "S/plain: no owner marker; not a store tether created" in notes
    assert report["deleted_stores"] == {"m": "S/m"}
    assert report["kept_stores"] == {"n": "created store is unreferenced; kept: holds refs or writes "
                                           "that are not tether's own"}
    assert left == ["foreign", "k", "n", "plain"]
    assert [r["key"] for r in index] == ["n", "k"]


def test_each_reclaims_the_others_created_store(tmp_path, tether, ref, env):
    """What one implementation created the other reclaims (its index and its
    marker); a store a manifest in history still names stays."""
    for maker, collector in ((ref, tether), (tether, ref)):
        root = tmp_path / f"ds{len(list(tmp_path.iterdir()))}"
        dataset(maker, env, root)
        kept, gone = tmp_path / f"{root.name}-kept.git", tmp_path / f"{root.name}-gone.git"
        (tmp_path / f"{root.name}-plain").mkdir()
        maker("add", "plain", str(tmp_path / f"{root.name}-plain"), "--kind", "file", cwd=root)
        maker("add", "g", str(kept), "--kind", "git", "--create", cwd=root)
        maker("commit", "-m", "made", cwd=root)
        maker("remove", "g", cwd=root)
        maker("commit", "-m", "dropped", cwd=root)   # history still names it
        maker("add", "h", str(gone), "--kind", "git", "--create", cwd=root)
        maker("remove", "h", cwd=root)
        report = collector.json("gc", "--delete-stores", "--no-dry-run", cwd=root)
        assert report["deleted_stores"] == {"h": str(gone)}, report
        assert report["kept_stores"] == {} and report["failed"] == {}
        assert not gone.exists() and kept.exists()
        assert [r["key"] for r in created_index(root)] == ["g"]


def bookmark_scenario(runner, env, base: Path, commit_on_bookmark: bool) -> list[str]:
    """A store created on bookmark `feature` (its branch forked at once),
    then - unregistered, or committed with a pin - left behind when the
    bookmark is dropped.  Returns every gc plan and the applied report."""
    root = dataset(runner, env, base / "ds")
    (base / "plain").mkdir()
    runner("add", "plain", str(base / "plain"), "--kind", "file", cwd=root)
    runner("commit", "-m", "base", cwd=root)
    runner("new", "-b", "feature", cwd=root)
    runner("add", "g", str(base / "st" / "g.git"), "--kind", "git", "--create", cwd=root)
    if commit_on_bookmark:
        runner("commit", "-m", "with g", cwd=root)
    else:
        runner("remove", "g", cwd=root)
    outs = [runner("gc", "--delete-stores", cwd=root).stdout,
            runner("gc", "--delete-stores", "--prune-bookmarks", cwd=root).stdout]
    runner("new", "main", cwd=root)
    git("branch", "-D", "feature", cwd=root, env=env)
    git("reflog", "expire", "--expire=now", "--all", cwd=root, env=env)
    git("gc", "-q", "--prune=now", cwd=root, env=env)
    outs.append(runner("gc", "--delete-stores", "--prune-bookmarks", cwd=root).stdout)
    outs.append(runner("gc", "--delete-stores", "--prune-bookmarks", "--no-dry-run", "--json", cwd=root).stdout)
    outs.append(" ".join(sorted(p.name for p in (base / "st").iterdir())))
    # Pin ids hash the store's path, which differs between the two runs.
    return [re.sub(r"\b[0-9a-f]{16}\b", "H", o.replace(str(base), "B")) for o in outs]


@pytest.mark.parametrize("commit_on_bookmark", [False, True])
def test_gc_created_on_a_dropped_bookmark_like_tether_vcs(tmp_path, tether, ref, env, commit_on_bookmark):
    """The store step inside a store: its branch (prune rules) and pins go
    first, then the store - the same plans and report as tether-vcs."""
    ours = bookmark_scenario(tether, env, tmp_path / "ours", commit_on_bookmark)
    theirs = bookmark_scenario(ref, env, tmp_path / "ref", commit_on_bookmark)
    assert ours == theirs
    report = json.loads(ours[3])
    assert report["deleted_stores"] == {"g": "B/st/g.git"} and report["failed"] == {}
    assert report["deleted_working_refs"] == {"g": [f"tether.ws.{DS}.feature"]}
    assert len(report["unpinned"].get("git", [])) == (1 if commit_on_bookmark else 0)
    assert ours[4] == ""
    if not commit_on_bookmark:
        assert "kept: working branch tether.ws.5e1f0a7b.feature (gc --prune-bookmarks evaluates it)" in ours[0]
        assert "kept: branch tether.ws.5e1f0a7b.feature belongs to live bookmark feature" in ours[1]
    else:
        assert "1 created store(s) still referenced; kept" in ours[1]


def test_gc_releases_dead_refs_in_touched_stores_like_tether_vcs(tmp_path, tether, ref, env):
    """A store this clone pinned in on a bookmark that is gone: no manifest
    names it, so --delete-stores unpins there, then forgets the store."""
    outs = {}
    for who, runner in (("ours", tether), ("ref", ref)):
        base = tmp_path / who
        src = base / "src"
        git("init", "-q", "-b", "main", str(src), cwd=tmp_path, env=env)
        (src / "f").write_text("1\n")
        git("add", "f", cwd=src, env=env)
        git("commit", "-q", "-m", "one", cwd=src, env=env)
        root = dataset(runner, env, base / "ds")
        (base / "plain").mkdir()
        runner("add", "plain", str(base / "plain"), "--kind", "file", cwd=root)
        runner("commit", "-m", "base", cwd=root)
        runner("new", "-b", "feature", cwd=root)
        runner("add", "s", str(src), "--kind", "git", cwd=root)
        runner("commit", "-m", "with s", cwd=root)
        runner("new", "main", cwd=root)
        git("branch", "-D", "feature", cwd=root, env=env)
        git("reflog", "expire", "--expire=now", "--all", cwd=root, env=env)
        git("gc", "-q", "--prune=now", cwd=root, env=env)
        steps = [runner("gc", "--delete-stores", cwd=root).stdout,
                 runner("gc", "--delete-stores", "--no-dry-run", "--json", cwd=root).stdout,
                 runner("gc", "--delete-stores", "--no-dry-run", "--json", cwd=root).stdout,
                 git("tag", "--list", cwd=src, env=env)]
        outs[who] = [re.sub(r"\b[0-9a-f]{16}\b", "H", o.replace(str(base), "B")) for o in steps]
        assert not (root / ".git" / "tether-touched.jsonl").read_text().strip()
    assert outs["ours"] == outs["ref"]
    plan, first, second, tags = outs["ours"]
    assert "in a store no manifest names (touched by this clone)" in plan
    assert json.loads(first)["unpinned"] == {"git": [f"{DS}.H"]}
    assert json.loads(second)["forgotten_stores"] == ["s"]
    assert tags == ""


def test_gc_store_claims_a_store_the_index_lost(git_repo, tether, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "lost"
    tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo)
    tether("remove", "m", cwd=git_repo)
    (git_repo / ".git" / "tether-created.jsonl").unlink()
    assert tether.json("gc", "--delete-stores", "--no-dry-run", cwd=git_repo)["deleted_stores"] == {}
    assert store.exists()
    report = tether.json("gc", "--store", f"file={store}", "--no-dry-run", cwd=git_repo)
    assert report["deleted_stores"] == {str(store): str(store)}
    assert not store.exists()


def test_gc_forgets_an_indexed_store_that_is_gone(git_repo, tether, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "gone"
    tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo)
    tether("remove", "m", cwd=git_repo)
    shutil.rmtree(store)
    report = tether.json("gc", "--delete-stores", "--no-dry-run", cwd=git_repo)
    assert report["forgotten_stores"] == ["m"] and created_index(git_repo) == []


def test_gc_from_plan_refuses_a_store_written_since(git_repo, tether, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "m"
    tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo)
    tether("remove", "m", cwd=git_repo)
    plan = tmp_path / "gc.plan"
    tether("gc", "--delete-stores", "--plan", str(plan), cwd=git_repo)
    (store / "late.txt").write_text("written after the plan\n")
    ops_before = (git_repo / ".tether" / "ops.jsonl").read_text()
    proc = tether("gc", "--from-plan", str(plan), cwd=git_repo, check=False)
    assert proc.returncode == 1
    assert f"m: the store at {store} is no longer empty (not empty); re-run the plan" in proc.stderr
    assert (store / "late.txt").exists() and len(created_index(git_repo)) == 1
    assert (git_repo / ".tether" / "ops.jsonl").read_text() == ops_before


def test_gc_never_deletes_a_store_whose_marker_changed_under_a_plan(git_repo, tether, tmp_path):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "m"
    tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo)
    tether("remove", "m", cwd=git_repo)
    plan = tmp_path / "gc.plan"
    tether("gc", "--delete-stores", "--plan", str(plan), cwd=git_repo)
    (store / ".tether-owner").write_text("0badbeef\n")
    proc = tether("gc", "--from-plan", str(plan), "--json", cwd=git_repo, check=False)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert out["kept_stores"] == {"m": "owner marker changed"} and out["deleted_stores"] == {}
    assert "no longer carries this dataset's owner marker" in next(iter(out["failed"].values()))
    assert store.is_dir()


@pytest.mark.parametrize("line,why", [
    ('{"dataset_id": "%s", "kind": "file", "identity": "x", "locator": {"uri": "/tmp"}, "key": "m"}',
     "'identity' is not a JSON object"),
    ('{"dataset_id": "%s", "kind": "file", "identity": {}, "locator": [], "key": "m"}',
     "'locator' is not a non-empty JSON object"),
    ('{"dataset_id": "%s", "kind": "nosuchkind", "identity": {}, "locator": {"uri": "/tmp"}, "key": "m"}',
     "'nosuchkind' is not a kind this tether knows"),
    ('{"kind": "file", "identity": {}, "locator": {"uri": "/tmp"}, "key": "m", "dataset_id": 7}',
     "'dataset_id' is not a string"),
])
def test_gc_refuses_a_malformed_created_index_line(git_repo, tether, tmp_path, line, why):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "m"
    tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo)
    tether("remove", "m", cwd=git_repo)
    index = git_repo / ".git" / "tether-created.jsonl"
    # A torn line (an interrupted append) is skipped, as every index skips one.
    with index.open("a") as fh:
        fh.write('{"dataset_id": "torn\n')
        fh.write(line.replace("%s", DS) + "\n")
    text = index.read_text()
    ops_before = (git_repo / ".tether" / "ops.jsonl").read_text()
    proc = tether("gc", "--delete-stores", "--no-dry-run", cwd=git_repo, check=False)
    assert proc.returncode == 1
    assert f"{index}:3: {why}" in proc.stderr and "fix or delete that line" in proc.stderr
    assert store.is_dir() and index.read_text() == text
    assert (git_repo / ".tether" / "ops.jsonl").read_text() == ops_before


# --- icechunk (spec 2, read and written by icechunk 2.x itself) -------------------------


@pytest.fixture(scope="module")
def icechunk2():
    from test_icechunk_backend import Oracle
    import os
    o = Oracle(2, {**os.environ, "ICECHUNK_LOG": "error"})
    yield o
    o.close()


def test_icechunk_create_undo_and_gc(git_repo, tether, tmp_path, icechunk2):
    o = icechunk2
    tether("init", "--dataset-id", DS, cwd=git_repo)
    made = tmp_path / "made.icechunk"
    proc = tether("add", str(made), "--kind", "icechunk", "--create", cwd=git_repo)
    assert proc.stdout == "added made (icechunk, created, key from the locator)\n"
    # icechunk 2.x opens what we made: one branch, its initial snapshot.
    assert o("branches", str(made))["names"] == ["main"]
    assert len(o("ancestry", str(made), "main")["entries"]) == 1
    o("check", str(made))
    st = tether.json("status", "--snapshot", cwd=git_repo)["objects"]
    assert [(x["key"], x["state"], x["origin"]) for x in st] == [("made", "new", "created")]
    # Still empty: undo takes it away again.
    out = tether.json("undo", cwd=git_repo)
    assert "made: removed the store it created" in out["restored"]
    assert not made.exists()
    # Written by icechunk: undo and gc keep it; an untouched one gc deletes.
    tether("add", "w", str(tmp_path / "w.icechunk"), "--kind", "icechunk", "--create", cwd=git_repo)
    o("commit", str(tmp_path / "w.icechunk"), "main", "a1")
    out = tether.json("undo", cwd=git_repo, check=False)
    assert out["irreversible"] == [f"w: the store at {tmp_path / 'w.icechunk'} holds writes; left for "
                                   "`gc --delete-stores` to reclaim once nothing references it"]
    tether("add", "e", str(tmp_path / "e.icechunk"), "--kind", "icechunk", "--create", cwd=git_repo)
    tether("remove", "e", cwd=git_repo)
    report = tether.json("gc", "--delete-stores", "--no-dry-run", cwd=git_repo)
    assert report["deleted_stores"] == {"e": str(tmp_path / "e.icechunk")}
    assert report["kept_stores"] == {"w": "created store is unreferenced; kept: holds refs or writes that "
                                          "are not tether's own"}
    assert not (tmp_path / "e.icechunk").exists()
    assert len(o("ancestry", str(tmp_path / "w.icechunk"), "main")["entries"]) == 2
    o("check", str(tmp_path / "w.icechunk"))
