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


def write_on_branch(store: Path, branch: str, env) -> str:
    git("switch", "-q", branch, cwd=store, env=env)
    commit_file(store, "b.txt", "never committed by the dataset\n", env)
    git("switch", "-q", "main", cwd=store, env=env)
    return git("rev-parse", branch, cwd=store, env=env).strip()


def test_new_adopt_takes_the_lost_branches_as_they_are(tmp_path, env, tether, ref, stores):
    """The recover steps, run: a commit on the trunk, then `new -b feat
    --adopt` takes feat's branches with the write nobody committed; both
    implementations print and record the same."""
    lost = new_dataset(tmp_path, env, tether, "lost", DS, stores)
    tether("commit", "-m", "first", cwd=lost)
    tether("new", "-b", "feat", "--eager", cwd=lost)
    branch = f"tether.ws.{DS}.feat"
    head = write_on_branch(stores["code"], branch, env)
    shutil.rmtree(lost)
    outs = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = new_dataset(tmp_path, env, runner, f"again-{name}", DS, stores)
        runner("commit", "-m", "Recover main", cwd=root)
        args = ["new", "-b", "feat", "--adopt", "--", "main"]
        plan = json.loads(runner("new", "-b", "feat", "--adopt", "--dry-run", "--json", "main", cwd=root).stdout)
        text = runner(*args, cwd=root).stdout
        assert git("rev-parse", branch, cwd=stores["code"], env=env).strip() == head
        # The journal records what it adopted (undo and `ops` read it).
        newest = json.loads(runner("ops", "--json", cwd=root).stdout)[0]
        assert newest["command"] == "new"
        summary = runner("ops", "-n", "1", cwd=root).stdout.split(None, 3)[3].strip()
        outs[name] = {"plan": [(a["op"], a["key"], a["target"], a["detail"]) for a in plan["actions"]],
                      "text": text, "ws": (root / ".tether/workspace.toml").read_text(),
                      "adopted": newest["result"]["adopted"], "summary": summary}
        # the next commit pins the adopted write
        runner("commit", "-m", "Recover feat", cwd=root)
        m = (root / ".tether/objects/code.toml").read_text()
        assert head in m
        git("switch", "-q", "main", cwd=root, env=env)
        shutil.rmtree(root / ".tether")  # let the other implementation start afresh on the same stores
        git("checkout", "-q", "--", ".", cwd=root, env=env)
    assert outs["ours"]["plan"] == outs["theirs"]["plan"]
    assert outs["ours"]["text"] == outs["theirs"]["text"]
    assert "(adopted as it is; at sha=" in outs["ours"]["text"]
    assert outs["ours"]["adopted"] == outs["theirs"]["adopted"] and outs["ours"]["adopted"]["code"] == branch
    assert outs["ours"]["summary"] == outs["theirs"]["summary"]
    assert outs["ours"]["summary"].startswith("adopted code")


def test_new_adopt_refusals_same_as_tether_vcs(tmp_path, env, tether, ref, stores):
    msgs = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = new_dataset(tmp_path, env, runner, f"ds-{name}", DS, stores)
        runner("commit", "-m", "first", cwd=root)
        a = runner("new", "main", "--adopt", cwd=root, check=False)
        b = runner("new", "-b", "x", "--adopt", "--keep", cwd=root, check=False)
        msgs[name] = (a.returncode, a.stderr, b.returncode, b.stderr)
    assert msgs["ours"] == msgs["theirs"]
    assert msgs["ours"][0] == 1 and msgs["ours"][2] == 1


def test_open_with_password_same_as_tether_vcs(tmp_path, env, tether, ref, stores):
    """--with-password is accepted; an address with no credential prints
    the same either way, and --json ignores it."""
    root = new_dataset(tmp_path, env, tether, "ds", DS, stores)
    tether("commit", "-m", "first", cwd=root)
    for args in (["open", "code"], ["open", "code", "--with-password"]):
        ours, theirs = tether(*args, cwd=root), ref(*args, cwd=root)
        assert ours.stdout == theirs.stdout, args
    plain = tether.json("open", "code", cwd=root)
    assert tether.json("open", "code", "--with-password", cwd=root) == plain
    assert ref.json("open", "code", "--with-password", cwd=root)["address"] == plain["address"]


def test_legacy_per_workspace_branches_get_restore_steps(tmp_path, env, tether, ref, stores):
    """Branches named before bookmarks (tether.ws.<ds>.<ws8>.<key...>) are
    listed per workspace, each with a `restore --at` onto recover-<ws>,
    and refs with no readable id are flagged - as tether-vcs reports them."""
    for repo in stores.values():
        git("branch", f"tether.ws.{DS}.1234abcd.code-a1b2c3", cwd=repo, env=env)
    git("branch", f"tether.ws.{DS}.feat", cwd=stores["code"], env=env)
    git("branch", f"tether.ws.{DS}.feat.2", cwd=stores["code"], env=env)
    git("branch", "tether.ws.nothex.x", cwd=stores["docs"], env=env)
    git("tag", f"tether.{DS}.00112233aabbccdd", cwd=stores["docs"], env=env)
    root = new_dataset(tmp_path, env, tether, "again", DS, stores)
    report, text = same_report(tether, ref, root)
    legacy = report["datasets"][0]["legacy"]
    assert legacy and legacy[0]["workspace"] == "1234abcd"
    assert any("restore --at" in (s["command"] or "") for s in report["steps"])
    assert "feat (generation 2)" in text
    assert report["objects"][1]["unrecognized"] == ["tether.ws.nothex.x"]
