"""Forks that expire: `new -b NAME --ttl/--expires`, `tether bookmarks` and
`gc --expired`, against the real stores.

An expiry is committed on its bookmark (.tether/bookmarks/NAME.toml), so a
clone that has the bookmark has its expiry and tether-vcs, which never reads
that file, still reads and commits the dataset.  `gc --expired` drops each
expired bookmark exactly as `tether drop` would -- its commits, the bookmark,
its working branches and pins in every store -- and refuses, per bookmark,
what drop refuses (a live checkout on it) or what would leave data behind
unnamed (unpinned writes without --force-prune).  Time passes by giving an
expiry in the past, or a TTL of 1s and a sleep; the binary has no fake
clock.
"""
from __future__ import annotations

import json
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from conftest import git
from dolt import dolt  # noqa: F401  (the fixture)
from test_neon_backend import neon  # noqa: F401  (the fixture)

DS = "e1b0c0de"
WS = f"tether.ws.{DS}.pr-1"
PAST = "2026-01-01T00:00:00Z"


def new_dataset(root: Path, tether, env, secrets: str = "") -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    tether("init", "--dataset-id", DS, cwd=root)
    if secrets:
        s = root / ".tether" / "secrets.toml"
        s.write_text(secrets)
        s.chmod(0o600)
    return root


def make_code(path: Path, env) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path, env=env)
    (path / "model.py").write_text("weights = 1\n")
    git("add", ".", cwd=path, env=env)
    git("commit", "-q", "-m", "initial", cwd=path, env=env)
    return path


def git_write(code: Path, branch: str, env, text: str = "weights = 2\n") -> None:
    git("switch", "-q", branch, cwd=code, env=env)
    (code / "model.py").write_text(text)
    git("commit", "-q", "-am", "on the fork", cwd=code, env=env)
    git("switch", "-q", "main", cwd=code, env=env)


def git_refs(code: Path, env, kind: str) -> set[str]:
    out = git("for-each-ref", "--format=%(refname:short)", f"refs/{kind}", cwd=code, env=env)
    return set(out.split())


def bookmarks(ds: Path, env) -> set[str]:
    return set(git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=ds, env=env).split())


def manifest(ds: Path, key: str) -> dict:
    return tomllib.loads((ds / ".tether" / "objects" / f"{key}.toml").read_text())


def entry(listing: dict, name: str) -> dict:
    return next(b for b in listing["bookmarks"] if b["name"] == name)


# --------------------------------------------------------------------------- #
# The flow on every forkable kind
# --------------------------------------------------------------------------- #
def expire_and_sweep(tether, env, ds: Path, key: str, *, write, branches, pins, force_prune=False):
    """commit; new -b pr-1 --ttl 1s --eager; write on the fork and commit;
    back to the trunk; wait; gc --expired (dry, then applied).  Returns the
    pins of the trunk's and the fork's commit."""
    tether("commit", "-m", "first", cwd=ds)
    trunk_pin = manifest(ds, key)["pin"]["ref"]
    out = tether.json("new", "-b", "pr-1", "--ttl", "1s", "--eager", cwd=ds)
    assert out["bookmark"] == "pr-1" and out["expiry"]["commit"]
    assert WS in branches()
    write(WS)
    tether("commit", "-m", "on the fork", cwd=ds)
    fork_pin = manifest(ds, key)["pin"]["ref"]
    assert fork_pin != trunk_pin and fork_pin in pins()
    tether("new", "main", cwd=ds)
    time.sleep(2)

    listing = tether.json("bookmarks", cwd=ds)
    pr = entry(listing, "pr-1")
    assert pr["expired"] is True and pr["trunk"] is False
    assert pr["working_refs"] == {key: [WS]} and pr["checkouts"] == []
    assert entry(listing, "main")["expires"] is None and entry(listing, "main")["expired"] is False
    assert "expired " in tether("bookmarks", cwd=ds).stdout

    # A dry run by default: the drop plan, nothing moved.
    dry = tether.json("gc", "--expired", cwd=ds)
    assert dry["dry_run"] is True
    assert [(b["bookmark"], b["outcome"]) for b in dry["bookmarks"]] == [("pr-1", "planned")]
    ops = [a["op"] for a in dry["bookmarks"][0]["plan"]["actions"]]
    assert "delete-bookmark" in ops and "abandon-commit" in ops
    assert WS in branches() and "pr-1" in bookmarks(ds, env)

    args = ["gc", "--expired", "--no-dry-run"] + (["--force-prune"] if force_prune else [])
    done = tether.json(*args, cwd=ds)
    assert [(b["bookmark"], b["outcome"]) for b in done["bookmarks"]] == [("pr-1", "dropped")]
    result = done["bookmarks"][0]["result"]
    assert len(result["abandoned"]) == 2  # the expiry's commit and the fork's
    assert "pr-1" not in bookmarks(ds, env)
    assert WS not in branches(), f"the fork's working branch is gone from the store: {json.dumps(done)}"
    assert fork_pin not in pins(), "the dropped commit's pin is released"
    assert trunk_pin in pins(), "the trunk's pin stays"
    # journaled as the drop it is
    journal = [json.loads(x) for x in (ds / ".tether" / "ops.jsonl").read_text().splitlines()]
    assert any(e.get("command") == "drop" for e in journal)
    # nothing left to drop
    again = tether.json("gc", "--expired", "--no-dry-run", cwd=ds)
    assert again["bookmarks"] == []
    return trunk_pin, fork_pin, result


def test_git(tmp_path, tether, env):
    code = make_code(tmp_path / "code", env)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    expire_and_sweep(tether, env, ds, "code", write=lambda b: git_write(code, b, env),
                     branches=lambda: git_refs(code, env, "heads"), pins=lambda: git_refs(code, env, "tags"))


def test_dolt(tmp_path, tether, env, dolt):
    from test_dolt_backend import add, seed
    seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt.secrets())
    add(tether, ds, dolt)

    def write(branch):
        rev = f"{dolt.database}/{branch}"
        dolt.sql("INSERT INTO t VALUES (%s, %s)", (3, "c"), database=rev)
        dolt.commit("on the fork", database=rev)

    expire_and_sweep(tether, env, ds, "db", write=write, branches=lambda: set(dolt.branches()),
                     pins=lambda: set(dolt.tags()))
    assert set(dolt.branches()) == {"main"}


def test_neon_branches_deleted_leaf_first(tmp_path, tether, env, neon):
    from test_neon_backend import add, names
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, f'[backends.neon]\napi_url = "{fake.url}"\n')
    add(tether, ds)

    def write(branch):
        fake.psql(branch, "INSERT INTO t VALUES (5, 'five')")

    def pins():
        return {n for n in names(fake) if n.startswith(f"tether.{DS}.")}

    expire_and_sweep(tether, env, ds, "db", write=write, branches=lambda: names(fake), pins=pins,
                     force_prune=True)
    # Neon's branch is the storage itself: drop keeps one with writes no
    # commit pinned unless forced, and so gc --expired refuses it.
    tether("new", "-b", "pr-2", "--expires", PAST, "--eager", cwd=ds)
    fake.psql(f"tether.ws.{DS}.pr-2", "INSERT INTO t VALUES (7, 'seven')")
    tether("new", "main", cwd=ds)
    proc = tether("gc", "--expired", "--no-dry-run", cwd=ds, check=False)
    assert proc.returncode == 1, proc.stderr
    assert f"REFUSED   pr-2: [db] tether.ws.{DS}.pr-2" in proc.stderr and "--force-prune" in proc.stderr
    assert f"tether.ws.{DS}.pr-2" in names(fake) and "pr-2" in bookmarks(ds, env)
    tether("gc", "--expired", "--no-dry-run", "--force-prune", cwd=ds)
    assert f"tether.ws.{DS}.pr-2" not in names(fake) and "pr-2" not in bookmarks(ds, env)
    # every remaining branch's parent exists: children went before parents
    for br in fake.branches.values():
        assert br.parent_id is None or br.parent_id in fake.branches, br.name


def test_iceberg(tmp_path, tether, env):
    from test_iceberg_backend import Catalog, make_table, rows
    cat = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}", tmp_path / "warehouse")
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat.secrets())
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)

    def refs(tag: bool) -> set[str]:
        return {n for n, r in cat.table("ns.t").refs().items() if (str(r.snapshot_ref_type) == "tag") == tag}

    expire_and_sweep(tether, env, ds, "t", write=lambda b: cat.table("ns.t").append(rows(10), branch=b),
                     branches=lambda: refs(False), pins=lambda: refs(True))


def test_lance(tmp_path, tether, env):
    lance = pytest.importorskip("lance")
    from test_lance_backend import write
    uri = tmp_path / "stores" / "t.lance"
    uri.parent.mkdir()
    write(uri, [1, 2, 3], "create")
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "tbl", str(uri), "--kind", "lance", cwd=ds)
    expire_and_sweep(tether, env, ds, "tbl", write=lambda b: write(uri, [10], branch=b),
                     branches=lambda: set(lance.dataset(str(uri)).branches.list()),
                     pins=lambda: set(lance.dataset(str(uri)).tags.list()))
    assert not (uri / "tree" / WS).exists()


def test_icechunk(tmp_path, tether, env):
    from test_icechunk_backend import Oracle, make_repo
    env["ICECHUNK_LOG"] = "error"
    o = Oracle(2, env)
    try:
        repo = tmp_path / "stores" / "arr.icechunk"
        make_repo(o, repo, "a1")
        ds = new_dataset(tmp_path / "ds", tether, env)
        tether("add", "arr", str(repo), "--kind", "icechunk", cwd=ds)
        expire_and_sweep(tether, env, ds, "arr", write=lambda b: o("commit", str(repo), b, "on-fork"),
                         branches=lambda: set(o("branches", str(repo))["names"]),
                         pins=lambda: set(o("tags", str(repo))["names"]))
        o("check", str(repo))
    finally:
        o.close()


# --------------------------------------------------------------------------- #
# The expiry itself: committed, seen by clones, read past by tether-vcs
# --------------------------------------------------------------------------- #
@pytest.fixture
def git_world(tmp_path, tether, env):
    code = make_code(tmp_path / "code", env)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    return ds, code


def test_the_expiry_is_a_commit_on_the_bookmark_and_a_clone_sees_it(tmp_path, tether, env, git_world):
    ds, code = git_world
    trunk_head = git("rev-parse", "main", cwd=ds, env=env).strip()
    out = tether.json("new", "-b", "pr-1", "--expires", "2030-06-01T12:00:00+02:00", cwd=ds)
    assert out["expiry"]["expires"] == "2030-06-01T10:00:00Z" and out["expiry"]["changed"] is True
    # one commit on the bookmark, holding only the expiry file; the trunk unmoved
    assert git("rev-parse", "pr-1~1", cwd=ds, env=env).strip() == trunk_head
    assert git("rev-parse", "main", cwd=ds, env=env).strip() == trunk_head
    files = git("show", "--name-only", "--format=", "pr-1", cwd=ds, env=env).split()
    assert files == [".tether/bookmarks/pr-1.toml"]
    doc = tomllib.loads((ds / ".tether/bookmarks/pr-1.toml").read_text())
    assert doc["bookmark"] == "pr-1" and doc["expires"].isoformat() == "2030-06-01T10:00:00+00:00"
    assert git("status", "--porcelain", cwd=ds, env=env) == ""
    # the journal records it
    journal = [json.loads(x) for x in (ds / ".tether/ops.jsonl").read_text().splitlines()]
    rec = [e for e in journal if e.get("command") == "bookmarks"]
    assert rec and rec[-1]["result"]["expires"] == "2030-06-01T10:00:00Z" and rec[-1]["pre"] == {"expiry": None}
    assert "bookmark pr-1 expires at 2030-06-01T10:00:00Z" in tether("ops", cwd=ds).stdout

    clone = tmp_path / "clone"
    git("clone", "-q", str(ds), str(clone), cwd=tmp_path, env=env)
    git("switch", "-q", "pr-1", cwd=clone, env=env)
    listing = tether.json("bookmarks", "--no-stores", cwd=clone)
    assert entry(listing, "pr-1")["expires"] == "2030-06-01T10:00:00Z"
    assert entry(listing, "pr-1")["expired"] is False
    assert "expires in " in tether("bookmarks", "--no-stores", cwd=clone).stdout


def test_extending_changing_and_clearing_an_expiry(tmp_path, tether, env, git_world):
    ds, _ = git_world
    created = tether.json("new", "-b", "pr-1", "--ttl", "12h", cwd=ds)["expiry"]["created"]
    out = tether.json("bookmarks", "pr-1", "--ttl", "7d", cwd=ds)
    assert out["changed"] is True and out["created"] == created  # created stays
    assert entry(tether.json("bookmarks", cwd=ds), "pr-1")["expires"] == out["expires"]
    out = tether.json("bookmarks", "pr-1", "--expires", PAST, cwd=ds)
    assert out["expires"] == PAST and entry(tether.json("bookmarks", cwd=ds), "pr-1")["expired"] is True
    assert "expired " in tether("bookmarks", cwd=ds).stdout
    # the same expiry again commits nothing
    head = git("rev-parse", "HEAD", cwd=ds, env=env).strip()
    again = tether.json("bookmarks", "pr-1", "--expires", PAST, cwd=ds)
    assert again["changed"] is False and again["commit"] is None
    assert git("rev-parse", "HEAD", cwd=ds, env=env).strip() == head
    out = tether.json("bookmarks", "pr-1", "--no-expiry", cwd=ds)
    assert out["expires"] is None and out["changed"] is True
    assert not (ds / ".tether/bookmarks/pr-1.toml").exists()
    assert entry(tether.json("bookmarks", cwd=ds), "pr-1")["expires"] is None
    assert tether.json("gc", "--expired", cwd=ds)["bookmarks"] == []
    # changing another bookmark's expiry needs a checkout on it
    tether("new", "main", cwd=ds)
    proc = tether("bookmarks", "pr-1", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode == 1 and "`tether new pr-1` first" in proc.stderr
    proc = tether("bookmarks", "nope", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode == 1 and "no bookmark 'nope'" in proc.stderr


def test_an_inherited_expiry_file_is_not_the_new_bookmarks(tmp_path, tether, env, git_world):
    """A bookmark made from a commit holding another bookmark's expiry file
    does not expire; one remade under a name whose file it inherits has it
    removed (a commit) when no --ttl is given."""
    ds, _ = git_world
    tether("new", "-b", "pr-1", "--expires", PAST, cwd=ds)
    tether("new", "-b", "pr-1b", cwd=ds)  # made at pr-1's head
    listing = tether.json("bookmarks", cwd=ds)
    assert entry(listing, "pr-1")["expired"] is True and entry(listing, "pr-1b")["expires"] is None
    # landed into the trunk by hand, then pr-1 dropped and made again
    tether("new", "main", cwd=ds)
    git("merge", "-q", "--ff-only", "pr-1", cwd=ds, env=env)
    git("branch", "-q", "-D", "pr-1", "pr-1b", cwd=ds, env=env)
    tether("new", "main", cwd=ds)
    assert entry(tether.json("bookmarks", cwd=ds), "main")["expires"] is None  # the trunk never expires
    tether("new", "-b", "pr-1", cwd=ds)
    assert not (ds / ".tether/bookmarks/pr-1.toml").exists()
    assert entry(tether.json("bookmarks", cwd=ds), "pr-1")["expires"] is None
    tether("new", "main", cwd=ds)
    assert tether.json("gc", "--expired", "--no-dry-run", cwd=ds)["bookmarks"] == []
    assert "pr-1" in bookmarks(ds, env)


def test_tether_vcs_still_reads_and_commits_the_dataset(tmp_path, tether, ref, env, git_world):
    ds, code = git_world
    tether("new", "-b", "pr-1", "--ttl", "7d", "--eager", cwd=ds)
    # tether-vcs: status, a write on the fork committed, its journal read
    st = json.loads(ref("status", "--json", cwd=ds).stdout)
    assert st["bookmark"] == "pr-1"
    git_write(code, WS, env)
    ref("commit", "-m", "by tether-vcs", cwd=ds)
    assert git("log", "-1", "--format=%s", cwd=ds, env=env).strip() == "by tether-vcs"
    assert ref("ops", cwd=ds).returncode == 0
    assert json.loads(ref("verify", "--json", cwd=ds).stdout)["code"]["status"] == "ok"
    # its commit kept the expiry; ours still reads it, and the same state
    pr = entry(tether.json("bookmarks", cwd=ds), "pr-1")
    assert pr["expires"] and pr["expired"] is False
    assert git("status", "--porcelain", cwd=ds, env=env) == ""
    assert tether.json("status", cwd=ds)["objects"][0]["state"] == "clean"
    # and an expiry changed after tether-vcs's commit is read back by it
    tether("bookmarks", "pr-1", "--expires", PAST, cwd=ds)
    assert json.loads(ref("status", "--json", cwd=ds).stdout)["bookmark"] == "pr-1"
    tether("new", "main", cwd=ds)
    out = tether.json("gc", "--expired", "--no-dry-run", cwd=ds)
    assert [b["outcome"] for b in out["bookmarks"]] == ["dropped"]
    assert WS not in git_refs(code, env, "heads")
    assert json.loads(ref("status", "--json", cwd=ds).stdout)["bookmark"] == "main"


# --------------------------------------------------------------------------- #
# The trunk, refusals and bad input
# --------------------------------------------------------------------------- #
def test_the_trunk_never_expires(tmp_path, tether, env, git_world):
    ds, _ = git_world
    proc = tether("bookmarks", "main", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode == 1 and "'main' is the trunk bookmark, and the trunk never expires" in proc.stderr
    head = git("rev-parse", "HEAD", cwd=ds, env=env).strip()
    git("checkout", "-q", "-b", "other", cwd=ds, env=env)
    proc = tether("new", "-b", "main", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode == 1 and "trunk never expires" in proc.stderr
    git("checkout", "-q", "main", cwd=ds, env=env)
    git("branch", "-q", "-D", "other", cwd=ds, env=env)
    # a file that says so, committed on the trunk by hand, is not obeyed
    (ds / ".tether/bookmarks").mkdir()
    (ds / ".tether/bookmarks/main.toml").write_text(f'bookmark = "main"\nexpires = {PAST}\n')
    git("add", ".tether/bookmarks", cwd=ds, env=env)
    git("commit", "-q", "-m", "hand-made", cwd=ds, env=env)
    main = entry(tether.json("bookmarks", cwd=ds), "main")
    assert main["trunk"] is True and main["expires"] is None and main["expired"] is False
    assert tether.json("gc", "--expired", "--no-dry-run", cwd=ds)["bookmarks"] == []
    assert "main" in bookmarks(ds, env) and git("rev-parse", "HEAD~1", cwd=ds, env=env).strip() == head


@pytest.mark.parametrize("args, says", [
    (["--ttl", "7x"], "45s, 30m, 12h, 7d"),
    (["--ttl", "0s"], "45s, 30m, 12h, 7d"),
    (["--ttl", "-1d"], "45s, 30m, 12h, 7d"),
    (["--expires", "tomorrow"], "2026-12-11T07:30:00Z"),
    (["--expires", "2026-12-11T07:30:00"], "a time needs Z or an offset"),
    (["--ttl", "1d", "--expires", PAST], "give one"),
])
def test_bad_durations_and_times_are_usage_errors(tmp_path, tether, env, git_world, args, says):
    ds, _ = git_world
    before = git("for-each-ref", cwd=ds, env=env)
    for cmd in (["new", "-b", "pr-1", *args], ["bookmarks", "main", *args]):
        proc = tether(*cmd, cwd=ds, check=False)
        assert proc.returncode == 2, proc.stderr
        assert says in proc.stderr, proc.stderr
    assert git("for-each-ref", cwd=ds, env=env) == before  # nothing made
    proc = tether("new", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode == 2 and "`tether bookmarks NAME --ttl DURATION`" in proc.stderr
    proc = tether("bookmarks", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode == 2
    proc = tether("gc", "--expired", "--prune-bookmarks", cwd=ds, check=False)
    assert proc.returncode == 2 and "--prune-bookmarks" in proc.stderr


def test_refusals_are_per_bookmark_and_the_others_still_go(tmp_path, tether, env, git_world):
    """Three expired bookmarks: one a live checkout works on, one whose
    branch holds writes no commit pinned, one clean.  The clean one is
    dropped; the others are refused by name (exit 3) and stay; --force-prune
    then takes the one with writes; the checked-out one goes once its
    checkout leaves it."""
    ds, code = git_world
    for name in ("held", "dirty", "clean"):
        tether("new", "-b", name, "--expires", PAST, "--eager", cwd=ds)
        tether("new", "main", cwd=ds)
    git_write(code, f"tether.ws.{DS}.dirty", env)
    peer = tmp_path / "peer"
    git("worktree", "add", "-q", str(peer), "held", cwd=ds, env=env)
    tether("new", "held", cwd=peer)
    # this checkout on an expired bookmark is refused too: a sweep never moves it
    tether("new", "clean", cwd=ds)
    proc = tether("gc", "--expired", "--no-dry-run", "--json", cwd=ds, check=False)
    assert proc.returncode == 1
    out = {b["bookmark"]: b for b in json.loads(proc.stdout)["bookmarks"]}
    assert {k: v["outcome"] for k, v in out.items()} == {"held": "refused", "dirty": "refused", "clean": "refused"}
    assert "this checkout works on it" in out["clean"]["error"]
    tether("new", "main", cwd=ds)

    proc = tether("gc", "--expired", "--no-dry-run", cwd=ds, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "REFUSED   held: bookmark 'held' is worked on by checkout(s)" in proc.stderr
    assert f"REFUSED   dirty: [code] tether.ws.{DS}.dirty" in proc.stderr
    assert "has unpinned writes" in proc.stderr and "--force-prune" in proc.stderr
    assert "dropped clean" in proc.stdout
    assert bookmarks(ds, env) == {"main", "held", "dirty"}
    heads = git_refs(code, env, "heads")
    assert f"tether.ws.{DS}.clean" not in heads and f"tether.ws.{DS}.dirty" in heads

    proc = tether("gc", "--expired", "--no-dry-run", "--force-prune", cwd=ds, check=False)
    assert proc.returncode == 3 and "dropped dirty" in proc.stdout
    assert f"tether.ws.{DS}.dirty" not in git_refs(code, env, "heads")
    tether("new", "-b", "elsewhere", cwd=peer)
    tether("gc", "--expired", "--no-dry-run", cwd=ds)
    assert bookmarks(ds, env) == {"main", "elsewhere"}
    assert git_refs(code, env, "heads") == {"main"}


def test_on_a_jj_dataset(tmp_path, env, jj_bin, tether):
    """Under jj the expiry is a jj commit the bookmark moves onto; gc
    --expired abandons it with the bookmark's other commits."""
    import os
    e = dict(env)
    e["PATH"] = f"{jj_bin.parent}{os.pathsep}{e.get('PATH', '')}"
    e.update(JJ_USER="Test", JJ_EMAIL="test@example.com", JJ_CONFIG=str(tmp_path / "jjconfig.toml"))
    code = make_code(tmp_path / "code", e)
    ds = tmp_path / "ds"
    ds.mkdir()
    subprocess.run([str(jj_bin), "git", "init", "--no-colocate"], cwd=str(ds), env=e, check=True,
                   capture_output=True)

    def t(*args, **kw):
        return tether(*args, cwd=ds, env=e, **kw)

    t("init", "--dataset-id", DS)
    t("add", "code", str(code), "--kind", "git")
    t("commit", "-m", "first")
    t("new", "-b", "pr-1", "--ttl", "7d", "--eager")
    log = subprocess.run([str(jj_bin), "log", "--no-pager", "--no-graph", "-r", "pr-1", "-T", "description"],
                         cwd=str(ds), env=e, capture_output=True, text=True, check=True).stdout
    assert log.startswith("tether: bookmark pr-1 expires at ")
    pr = entry(json.loads(t("bookmarks", "--json").stdout), "pr-1")
    assert pr["expired"] is False and pr["working_refs"] == {"code": [WS]}
    assert "in 7d" in t("bookmarks").stdout
    t("bookmarks", "pr-1", "--expires", PAST)
    t("new", "main")
    out = json.loads(t("gc", "--expired", "--no-dry-run", "--json").stdout)
    assert [b["outcome"] for b in out["bookmarks"]] == ["dropped"]
    marks = subprocess.run([str(jj_bin), "bookmark", "list", "-T", 'name ++ "\\n"'], cwd=str(ds), env=e,
                           capture_output=True, text=True, check=True).stdout.split()
    assert marks == ["main"]
    assert WS not in git_refs(code, e, "heads")


def test_an_expiry_the_vcs_refuses_to_commit_leaves_the_bookmark_and_says_so(tmp_path, tether, env, git_world):
    ds, _ = git_world
    hook = ds / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho 'no commits today' >&2\nexit 1\n")
    hook.chmod(0o755)
    proc = tether("new", "-b", "pr-1", "--ttl", "7d", cwd=ds, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "bookmark pr-1 is made, but not its expiry" in proc.stderr and "no commits today" in proc.stderr
    assert "`tether bookmarks pr-1 --ttl 7d` sets it once that is fixed" in proc.stderr
    assert not (ds / ".tether/bookmarks/pr-1.toml").exists()
    assert git("status", "--porcelain", cwd=ds, env=env) == ""
    assert entry(tether.json("bookmarks", cwd=ds), "pr-1")["expires"] is None
    hook.unlink()
    tether("bookmarks", "pr-1", "--ttl", "7d", cwd=ds)
    assert entry(tether.json("bookmarks", cwd=ds), "pr-1")["expires"]


def test_delete_stores_reclaims_a_store_created_on_the_expired_bookmark(tmp_path, tether, env, git_world):
    ds, _ = git_world
    store = tmp_path / "st" / "g.git"
    tether("new", "-b", "pr-1", "--expires", PAST, cwd=ds)
    tether("add", "g", str(store), "--kind", "git", "--create", cwd=ds)
    tether("commit", "-m", "with g", cwd=ds)
    tether("new", "main", cwd=ds)
    assert store.exists()
    # without --delete-stores the store stays, as after `drop`
    dry = tether.json("gc", "--expired", cwd=ds)
    assert not any(a["op"] == "delete-store" for a in dry["bookmarks"][0]["plan"]["actions"])
    # drop's preview of the store step (re-planned at apply, once the
    # bookmark is gone) names the created store
    dry = tether.json("gc", "--expired", "--delete-stores", cwd=ds)
    assert any(a["key"] == "g" and a["op"] in ("keep-store", "delete-store")
               for a in dry["bookmarks"][0]["plan"]["actions"])
    assert store.exists()
    out = tether.json("gc", "--expired", "--delete-stores", "--no-dry-run", cwd=ds)
    assert [b["outcome"] for b in out["bookmarks"]] == ["dropped"]
    assert out["bookmarks"][0]["result"]["gc"]["deleted_stores"] == {"g": str(store)}
    assert not store.exists() and "pr-1" not in bookmarks(ds, env)


def test_delta_and_ducklake_beside_a_fork_are_left_as_recorded(tmp_path, tether, env, home):
    """Delta tables and DuckLake catalogs cannot fork (they are addressable:
    every bookmark reads them at what its commit recorded): an expired
    bookmark's drop leaves them as they are, and the trunk still verifies
    them at its recorded versions."""
    deltalake = pytest.importorskip("deltalake")
    pa = pytest.importorskip("pyarrow")
    from test_ducklake_backend import Lake, write_history
    code = make_code(tmp_path / "code", env)
    table = tmp_path / "stores" / "sales"
    deltalake.write_deltalake(str(table), pa.table({"id": [1, 2]}))
    meta = tmp_path / "stores" / "meta.sqlite"
    lake = Lake(home, f"ducklake:sqlite:{meta}", tmp_path / "lake-data")
    write_history(lake)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("add", "sales", str(table), "--kind", "delta", cwd=ds)
    tether("add", "lake", f"sqlite:{meta}", "--kind", "ducklake", "--set", f"data_path={lake.data}/", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    recorded = {k: manifest(ds, k)["state"] for k in ("sales", "lake")}
    tether("new", "-b", "pr-1", "--expires", PAST, "--eager", cwd=ds)
    pr = entry(tether.json("bookmarks", cwd=ds), "pr-1")
    assert pr["working_refs"] == {"code": [WS]}  # only the forkable object has a branch
    git_write(code, WS, env)
    tether("commit", "-m", "on the fork", cwd=ds)
    tether("new", "main", cwd=ds)
    out = tether.json("gc", "--expired", "--no-dry-run", cwd=ds)
    assert [b["outcome"] for b in out["bookmarks"]] == ["dropped"]
    assert WS not in git_refs(code, env, "heads") and "pr-1" not in bookmarks(ds, env)
    assert {k: manifest(ds, k)["state"] for k in ("sales", "lake")} == recorded
    assert deltalake.DeltaTable(str(table)).version() == recorded["sales"]["version"]
    assert lake.head()["snapshot_id"] == recorded["lake"]["snapshot_id"]
    assert {k: v["status"] for k, v in tether.json("verify", "--deep", cwd=ds).items()} == {
        "code": "ok", "sales": "ok", "lake": "ok"}


def test_a_committed_link_in_place_of_the_expiry_directory_is_refused(tmp_path, tether, env, git_world):
    ds, _ = git_world
    outside = tmp_path / "outside"
    outside.mkdir()
    (ds / ".tether/bookmarks").symlink_to(outside)
    git("add", ".tether/bookmarks", cwd=ds, env=env)
    git("commit", "-q", "-m", "a link", cwd=ds, env=env)
    proc = tether("new", "-b", "pr-1", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode in (1, 3) and ".tether/bookmarks is a symbolic link" in proc.stderr, proc.stderr
    git("switch", "-q", "-c", "pr-2", cwd=ds, env=env)
    proc = tether("bookmarks", "pr-2", "--ttl", "1d", cwd=ds, check=False)
    assert proc.returncode == 1 and ".tether/bookmarks is a symbolic link" in proc.stderr, proc.stderr
    assert list(outside.iterdir()) == []
