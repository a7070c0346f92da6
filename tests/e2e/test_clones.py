"""Two clones of one dataset: gc, commit and promote, with and without a
shared bare remote.

Pin ids depend only on the dataset and the state, and the stores are shared,
so two clones that commit the same state share one native pin.  A clone
that created a pin and no longer names it may therefore still release
another clone's pin: these tests hold gc to the rule that a pin any known
clone (or a remote) names is never released, and that a clone whose
dataset is shared through a remote keeps what an unseen clone may hold.

The dataset has a memory object (the store shared through
TETHER_MEMORY_STORE), a git object (its pins are tags in one repository
outside both clones) and a file object (immutable, recorded with a listing).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git
from test_commit import DS, mem, store  # noqa: F401  (fixtures)

BRANCH = f"tether.ws.{DS}.feature"


def join_bookmark(root: Path, bookmark: str) -> None:
    """What `tether new BOOKMARK` records: a fresh checkout is on no bookmark."""
    ws = root / ".tether/workspace.toml"
    lines = ws.read_text().splitlines(keepends=True)
    ws.write_text(lines[0] + f'bookmark = "{bookmark}"\n' + "".join(
        l for l in lines[1:] if not l.startswith("bookmark =")))


def code_commit(repo: Path, text: str, env) -> str:
    (repo / "main.py").write_text(text)
    git("add", "main.py", cwd=repo, env=env)
    git("commit", "-q", "-m", text.strip(), cwd=repo, env=env)
    return git("rev-parse", "HEAD", cwd=repo, env=env).strip()


def code_tags(repo: Path, env) -> set[str]:
    return set(git("tag", "--list", "tether.*", cwd=repo, env=env).split())


def mem_tags(mem) -> set[str]:
    return {t for t in mem.show("sys1")["tags"] if t.startswith("tether.")}


def verify(tether, root: Path) -> dict:
    proc = tether("verify", "--json", cwd=root, check=False)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0, (root, out)
    return {k: v["status"] for k, v in out.items()}


class Family:
    """The seed dataset, the stores, and two clones A and B."""

    def __init__(self, seed: Path, a: Path, b: Path, remote: Path | None, code: Path, files: Path):
        self.seed, self.a, self.b, self.remote, self.code, self.files = seed, a, b, remote, code, files


@pytest.fixture(params=["shared-remote", "no-shared-remote"])
def family(request, git_repo, tether, env, store, mem, tmp_path):
    code = tmp_path / "stores" / "code"
    code.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=code, env=env)
    code_commit(code, "print(1)\n", env)
    files = tmp_path / "stores" / "files"
    files.mkdir()
    (files / "a.txt").write_text("a\n")
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "m1", "sys1", "--kind", "memory", cwd=git_repo)
    tether("add", "code", str(code), "--kind", "git", cwd=git_repo)
    tether("add", "f", str(files), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    remote = None
    source = git_repo
    if request.param == "shared-remote":
        remote = tmp_path / "remote.git"
        git("clone", "-q", "--bare", str(git_repo), str(remote), cwd=tmp_path, env=env)
        source = remote
    a, b = tmp_path / "a", tmp_path / "b"
    for clone in (a, b):
        git("clone", "-q", str(source), str(clone), cwd=tmp_path, env=env)
        tether("status", cwd=clone)
        join_bookmark(clone, "main")
    return Family(git_repo, a, b, remote, code, files)


def new_state(family: Family, mem, env) -> None:
    """The stores move: both clones will commit what they see."""
    mem("sys1", {"shared": 1})
    code_commit(family.code, "print(2)\n", env)


def pins(out: dict) -> dict:
    return {k: v for k, v in out["pinned"].items() if v}


def kept(report: dict) -> set[str]:
    return {p for ids in report["kept_pins"].values() for p in ids}


# --- gc ---------------------------------------------------------------------


# Without a shared remote there is nowhere to push: that family runs unpushed only.
@pytest.mark.parametrize("family,pushed", [("shared-remote", False), ("shared-remote", True),
                                           ("no-shared-remote", False)],
                         ids=["shared-unpushed", "shared-pushed", "no-shared-unpushed"], indirect=["family"])
def test_gc_keeps_the_pin_another_clone_committed(family, tether, env, mem, pushed):
    new_state(family, mem, env)
    made = pins(tether.json("commit", "-m", "in a", cwd=family.a))
    assert set(made) == {"m1", "code"}
    shared = pins(tether.json("commit", "-m", "in b", cwd=family.b))
    assert shared == made                          # one pin, two clones
    if pushed:
        git("push", "-q", "origin", "main", cwd=family.b, env=env)
    # A drops its commit; only B (which A has not fetched) names the pins.
    git("reset", "-q", "--hard", "HEAD~1", cwd=family.a, env=env)
    ids = {r.removeprefix("tether.") for r in made.values()}
    plan = tether.json("gc", cwd=family.a)
    keeps = [a for a in plan["actions"] if a["params"].get("pin_id") in ids]
    assert sorted(a["op"] for a in keeps) == ["keep-pin", "keep-pin"]
    assert all("another clone" in a["detail"] for a in keeps)
    report = tether.json("gc", "--no-dry-run", cwd=family.a)
    assert report["unpinned"] == {} and ids <= kept(report)
    assert made["m1"] in mem_tags(mem) and made["code"] in code_tags(family.code, env)
    verify(tether, family.b)
    # gc in B keeps them too: B's history names them.
    assert tether.json("gc", "--no-dry-run", cwd=family.b)["unpinned"] == {}
    verify(tether, family.b)
    if pushed:
        # Even --release-foreign keeps them while the remote has commits A
        # has not fetched...
        plan = tether.json("gc", "--release-foreign", cwd=family.a)
        keeps = [a for a in plan["actions"] if a["params"].get("pin_id") in ids]
        assert [a["op"] for a in keeps] == ["keep-pin", "keep-pin"]
        assert all("has not fetched" in a["detail"] for a in keeps)
        tether("gc", "--no-dry-run", "--release-foreign", cwd=family.a)
        verify(tether, family.b)
        # ...and once fetched, the remote-tracking ref names them.
        git("fetch", "-q", "origin", cwd=family.a, env=env)
        plan = tether.json("gc", "--release-foreign", cwd=family.a)
        assert [a for a in plan["actions"] if a["params"].get("pin_id") in ids] == []
    verify(tether, family.b)


@pytest.mark.parametrize("family", ["no-shared-remote"], indirect=True)  # the seed has no remote
def test_gc_in_the_source_of_a_clone_keeps_what_the_clone_named(family, tether, env, mem):
    """A repository others cloned from directly knows its clones only as
    remotes: one added for the clone makes gc keep what that clone holds,
    even with --release-foreign while the clone has commits not fetched."""
    assert family.remote is None
    seed = family.seed
    git("clone", "-q", str(seed), str(family.b.parent / "c"), cwd=seed, env=env)
    c = family.b.parent / "c"
    tether("status", cwd=c)
    join_bookmark(c, "main")
    new_state(family, mem, env)
    made = pins(tether.json("commit", "-m", "in the seed", cwd=seed))
    assert pins(tether.json("commit", "-m", "in c", cwd=c)) == made
    git("reset", "-q", "--hard", "HEAD~1", cwd=seed, env=env)
    git("remote", "add", "c", str(c), cwd=seed, env=env)
    ids = {r.removeprefix("tether.") for r in made.values()}
    for args in ([], ["--release-foreign"]):
        report = tether.json("gc", "--no-dry-run", *args, cwd=seed)
        assert report["unpinned"] == {} and ids <= kept(report), args
    verify(tether, c)
    # Fetched, C's commits name them.
    git("fetch", "-q", "c", cwd=seed, env=env)
    plan = tether.json("gc", "--release-foreign", cwd=seed)
    assert [a for a in plan["actions"] if a["params"].get("pin_id") in ids] == []


@pytest.mark.parametrize("family", ["no-shared-remote"], indirect=True)  # the seed has no remote
@pytest.mark.parametrize("forget_reflogs", [False, True], ids=["reflog", "no-reflog"])
def test_gc_in_the_unseen_source_of_a_clone_keeps_what_the_clone_named(family, tether, env, mem,
                                                                       forget_reflogs):
    """A repository others cloned from, with no remote of its own, cannot
    see its clones: a pin it created that one of its commits named is kept
    after that commit is rewritten away (the reflog, or the clone's own mark
    once the reflog is expired), and --release-foreign releases it."""
    assert family.remote is None
    seed, c = family.seed, family.b.parent / "c"
    new_state(family, mem, env)
    made = pins(tether.json("commit", "-m", "in the seed", cwd=seed))
    git("clone", "-q", str(seed), str(c), cwd=seed, env=env)
    tether("status", cwd=c)
    join_bookmark(c, "main")
    git("reset", "-q", "--hard", "HEAD~1", cwd=seed, env=env)
    if forget_reflogs:
        git("reflog", "expire", "--expire=now", "--all", cwd=seed, env=env)
        git("gc", "-q", "--prune=now", cwd=seed, env=env)
    ids = {r.removeprefix("tether.") for r in made.values()}
    plan = tether.json("gc", cwd=seed)
    keeps = [a for a in plan["actions"] if a["params"].get("pin_id") in ids]
    assert [(a["op"], a["params"]["kept"]) for a in keeps] == [("keep-pin", "committed")] * 2
    assert all("a clone made from this repository" in a["detail"] for a in keeps)
    report = tether.json("gc", "--no-dry-run", cwd=seed)
    assert report["unpinned"] == {} and ids <= kept(report)
    assert made["m1"] in mem_tags(mem) and made["code"] in code_tags(family.code, env)
    assert set(verify(tether, c).values()) == {"ok"}
    # The decision that no such clone matters releases them.
    report = tether.json("gc", "--no-dry-run", "--release-foreign", cwd=seed)
    assert {p for v in report["unpinned"].values() for p in v} == ids
    assert made["m1"] not in mem_tags(mem)


@pytest.mark.parametrize("family", ["shared-remote"], indirect=True)  # both clones fetch from it
def test_a_pin_whose_commit_left_this_clone_is_kept_after_a_rewrite(family, tether, env, mem):
    """Pushed, fetched by B, then rewritten away (a force-push): the commit
    left A, so even --release-foreign keeps the pin B's history names."""
    assert family.remote is not None
    new_state(family, mem, env)
    made = pins(tether.json("commit", "-m", "in a", cwd=family.a))
    git("push", "-q", "origin", "main", cwd=family.a, env=env)
    git("pull", "-q", "--ff-only", "origin", "main", cwd=family.b, env=env)
    git("reset", "-q", "--hard", "HEAD~1", cwd=family.a, env=env)
    git("push", "-q", "--force", "origin", "main", cwd=family.a, env=env)
    ids = {r.removeprefix("tether.") for r in made.values()}
    plan = tether.json("gc", "--release-foreign", cwd=family.a)
    keeps = [a for a in plan["actions"] if a["params"].get("pin_id") in ids]
    assert [(a["op"], a["params"]["kept"]) for a in keeps] == [("keep-pin", "published")] * 2
    report = tether.json("gc", "--no-dry-run", "--release-foreign", cwd=family.a)
    assert report["unpinned"] == {} and ids <= kept(report)
    assert set(verify(tether, family.b).values()) == {"ok"}
    # Once the remote-tracking reflog is expired, A no longer knows.
    git("reflog", "expire", "--expire=now", "--all", cwd=family.a, env=env)
    plan = tether.json("gc", "--release-foreign", cwd=family.a)
    assert sorted(a["op"] for a in plan["actions"] if a["params"].get("pin_id") in ids) == [
        "unpin", "unpin"]


@pytest.mark.parametrize("family", ["shared-remote"], indirect=True)  # a remote to make unreachable
def test_an_unreachable_remote_keeps_every_unreferenced_pin(family, tether, env, mem):
    assert family.remote is not None
    new_state(family, mem, env)
    made = pins(tether.json("commit", "-m", "in a", cwd=family.a))
    git("reset", "-q", "--hard", "HEAD~1", cwd=family.a, env=env)
    git("remote", "set-url", "origin", str(family.remote.parent / "gone.git"), cwd=family.a, env=env)
    ids = {r.removeprefix("tether.") for r in made.values()}
    plan = tether.json("gc", "--release-foreign", cwd=family.a)
    keeps = [a for a in plan["actions"] if a["params"].get("pin_id") in ids]
    assert [a["op"] for a in keeps] == ["keep-pin", "keep-pin"]
    assert all("cannot list remote origin" in a["detail"] and a["params"]["kept"] == "unfetched"
               for a in keeps)
    text = tether("gc", "--no-dry-run", "--release-foreign", cwd=family.a).stdout
    assert "kept 2 unreferenced pin(s) another clone may hold" in text
    assert made["m1"] in mem_tags(mem) and made["code"] in code_tags(family.code, env)
    # The remote back, with nothing unfetched: this clone's own pins go.
    git("remote", "set-url", "origin", str(family.remote), cwd=family.a, env=env)
    report = tether.json("gc", "--no-dry-run", "--release-foreign", cwd=family.a)
    assert {p for v in report["unpinned"].values() for p in v} == ids


def test_a_private_clone_still_releases_its_own_pins(git_repo, tether, env, mem, store):
    """With no remote, a pin this clone created that no commit ever named (a
    crashed commit's) is released.  One an undone commit named is kept, since
    a clone may have been made meanwhile (tether-vcs releases it), until
    --release-foreign says no such clone matters."""
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "m1", "sys1", "--kind", "memory", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    mem("sys1", {"x": 1})
    proc = tether("commit", "-m", "crashed", cwd=git_repo, check=False,
                  env={"TETHER_FAULT": "commit:after-pin"})
    assert proc.returncode != 0
    tether("repair", cwd=git_repo)
    git("checkout", "-q", "--", ".tether", cwd=git_repo, env=env)
    before = mem_tags(mem)
    report = tether.json("gc", "--no-dry-run", cwd=git_repo)
    released = {f"tether.{p}" for v in report["unpinned"].values() for p in v}
    assert released and released <= before and not (released & mem_tags(mem))
    mem("sys1", {"x": 2})
    pid = tether.json("commit", "-m", "second", cwd=git_repo)["pinned"]["m1"]
    git("reset", "-q", "--hard", "HEAD~1", cwd=git_repo, env=env)
    report = tether.json("gc", "--no-dry-run", cwd=git_repo)
    assert report["unpinned"] == {} and pid.removeprefix("tether.") in kept(report)
    report = tether.json("gc", "--no-dry-run", "--release-foreign", cwd=git_repo)
    assert report["unpinned"] == {"memory": [pid.removeprefix("tether.")]}
    assert pid not in mem_tags(mem)


# --- commit -----------------------------------------------------------------


def test_two_clones_commit_the_same_state_into_one_pin(family, tether, env, mem):
    new_state(family, mem, env)
    before_mem, before_code = mem_tags(mem), code_tags(family.code, env)
    # B first this time: B creates the pins, A's commit shares them.
    made = pins(tether.json("commit", "-m", "in b", cwd=family.b))
    assert pins(tether.json("commit", "-m", "in a", cwd=family.a)) == made
    assert mem_tags(mem) - before_mem == {made["m1"]}
    assert code_tags(family.code, env) - before_code == {made["code"]}
    for clone in (family.a, family.b):
        assert set(verify(tether, clone).values()) == {"ok"}
    # The creator drops its commit and gcs: the sharer's commit needs them.
    git("reset", "-q", "--hard", "HEAD~1", cwd=family.b, env=env)
    report = tether.json("gc", "--no-dry-run", cwd=family.b)
    assert report["unpinned"] == {}
    assert set(verify(tether, family.a).values()) == {"ok"}
    # The sharer did not create them: its gc keeps them either way.
    git("reset", "-q", "--hard", "HEAD~1", cwd=family.a, env=env)
    assert tether.json("gc", "--no-dry-run", cwd=family.a)["unpinned"] == {}
    assert made["m1"] in mem_tags(mem) and made["code"] in code_tags(family.code, env)


# --- promote ----------------------------------------------------------------


def test_promote_in_one_clone_then_pull_in_the_other(family, tether, env, mem):
    a, b = family.a, family.b
    tether("new", "-b", "feature", "--eager", cwd=a)
    mem("sys1", {"feature": 1}, branch=BRANCH)
    made = pins(tether.json("commit", "-m", "feature work", cwd=a))
    assert "m1" in made
    out = tether.json("promote", cwd=a)
    assert "m1" in out["fast_forwarded"] and out["trunk_moved"]
    # B takes A's trunk (through the shared remote, or straight from A).
    if family.remote is not None:
        git("push", "-q", "origin", "main", cwd=a, env=env)
        git("pull", "-q", "--ff-only", "origin", "main", cwd=b, env=env)
    else:
        git("pull", "-q", "--ff-only", str(a), "main", cwd=b, env=env)
    assert set(verify(tether, b).values()) == {"ok"}
    # A abandons the work on its side (the remote-tracking ref too):
    # only B names the pin now.
    git("switch", "-q", "main", cwd=a, env=env)
    git("reset", "-q", "--hard", "HEAD~1", cwd=a, env=env)
    git("branch", "-q", "-D", "feature", cwd=a, env=env)
    if family.remote is not None:
        git("update-ref", "-d", "refs/remotes/origin/main", cwd=a, env=env)
    report = tether.json("gc", "--no-dry-run", cwd=a)
    assert made["m1"].removeprefix("tether.") not in {
        p for ids in report["unpinned"].values() for p in ids}
    assert made["m1"] in mem_tags(mem)
    assert set(verify(tether, b).values()) == {"ok"}
    # gc in B keeps what A still names (and what B names).
    assert tether.json("gc", "--no-dry-run", cwd=b)["unpinned"] == {}
    assert set(verify(tether, b).values()) == {"ok"}
