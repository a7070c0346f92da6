"""Bookmarks and their expiries: Repo.list_bookmarks, Repo.set_expiry,
Repo.gc_expired and Repo.vcs.bookmarks, against real datasets (a git
store, so forks are real branches), checked against the files and refs
they write and, where the binary is at hand, against `tether bookmarks
--json` and `tether gc --expired --json` on the same dataset."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import tether
from conftest import git
from tether import (
    BookmarkInfo,
    BookmarksReport,
    ConfigError,
    DropReport,
    ExpiryReport,
    GcExpiredReport,
    Repo,
    UsageError,
)

pytestmark = pytest.mark.skipif(
    not hasattr(tether, "libtether_version"), reason="tests of the libtether package, not of tether-vcs"
)

PAST = datetime(2001, 1, 1, tzinfo=timezone.utc)


def _committed(dataset: Path, git_store: Path) -> Repo:
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.commit("baseline")
    return repo


def _ws(repo: Repo, bookmark: str) -> str:
    return f"tether.ws.{repo.dataset_id}.{bookmark}"


def _heads(path: Path) -> dict[str, str]:
    out = git(path, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
    return dict(line.split() for line in out.splitlines())


def _refs(path: Path) -> str:
    return git(path, "for-each-ref", "--format=%(refname) %(objectname)")


def _expiry_file(dataset: Path, bookmark: str) -> Path:
    return dataset / ".tether" / "bookmarks" / f"{bookmark}.toml"


def _write_on(store: Path, branch: str) -> None:
    """A commit on the store branch no dataset commit pinned."""
    git(store, "switch", "-q", branch)
    (store / "README").write_text("written on the fork\n")
    git(store, "commit", "-qam", "on the fork")
    git(store, "switch", "-q", "main")


def _binary() -> str | None:
    return os.environ.get("TETHER_BIN") or shutil.which("tether")


def _cli_json(cwd: Path, *args: str) -> dict:
    binary = _binary()
    assert binary
    proc = subprocess.run([binary, *args, "--json"], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode in (0, 3), proc.stderr
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------- #
# list_bookmarks, vcs.bookmarks
# --------------------------------------------------------------------------- #


def test_list_bookmarks_names_each_bookmark_with_its_head_expiry_branches_and_checkouts(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1", eager=True)
    repo.set_expiry("pr-1", datetime(2030, 6, 1, 12, tzinfo=timezone(timedelta(hours=2))))
    report = repo.list_bookmarks()
    assert isinstance(report, BookmarksReport) and report.trunk == "main" and report.errors == {}
    assert report.names == ["main", "pr-1"]  # the trunk first
    main, pr = report.bookmarks
    assert isinstance(pr, BookmarkInfo) and report.get("pr-1") is pr and report.get("nope") is None
    assert main.trunk is True and main.expires is None and main.expired is False
    assert main.head == git(dataset, "rev-parse", "main") and main.working_refs == {"code": ["main"]}
    assert main.checkouts == []
    assert pr.trunk is False and pr.head == git(dataset, "rev-parse", "pr-1")
    assert pr.expires == "2030-06-01T10:00:00Z" and pr.expired is False and pr.created
    assert pr.working_refs == {"code": [_ws(repo, "pr-1")]}
    [here] = pr.checkouts
    assert here.here is True and Path(here.root) == dataset.resolve()
    assert here.workspace_id == repo.workspace.workspace_id[:8]


def test_list_bookmarks_stores_false_keeps_to_what_the_live_checkouts_hold(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1", eager=True)
    repo.new("main")
    # pr-1's branch is in the store only: no checkout is on pr-1 any more
    assert _ws(repo, "pr-1") in _heads(git_store)
    assert repo.list_bookmarks().get("pr-1").working_refs == {"code": [_ws(repo, "pr-1")]}
    assert repo.list_bookmarks(stores=False).get("pr-1").working_refs == {}
    assert repo.list_bookmarks(stores=False).get("pr-1").checkouts == []


def test_list_bookmarks_is_the_clis_json(dataset, git_store):
    if not _binary():
        pytest.skip("no tether binary (TETHER_BIN) to compare with")
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1", eager=True)
    repo.set_expiry("pr-1", PAST)
    repo.new(bookmark="pr-2")
    for stores, args in ((True, ()), (False, ("--no-stores",))):
        mine = dataclasses.asdict(repo.list_bookmarks(stores=stores))
        cli = _cli_json(dataset, "bookmarks", *args)
        assert mine.pop("now") and cli.pop("now")
        assert mine == cli


def test_vcs_bookmarks_are_the_repositorys_branches_without_tethers_parking_ones(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1")
    repo.set_expiry("pr-1", PAST)
    git(dataset, "branch", "tether/0123456789ab", "main")  # a parking branch, not a bookmark
    heads = _heads(dataset)
    assert "tether/0123456789ab" in heads
    del heads["tether/0123456789ab"]
    assert repo.vcs.bookmarks() == heads
    assert set(heads) == {"main", "pr-1"} and heads["pr-1"] == git(dataset, "rev-parse", "HEAD")


# --------------------------------------------------------------------------- #
# set_expiry
# --------------------------------------------------------------------------- #


def test_set_expiry_commits_the_file_on_the_bookmark_and_same_again_commits_nothing(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1")
    before = git(dataset, "rev-parse", "HEAD")
    out = repo.set_expiry("pr-1", datetime(2030, 6, 1, 12, tzinfo=timezone(timedelta(hours=2))))
    assert isinstance(out, ExpiryReport)
    assert out.bookmark == "pr-1" and out.expires == "2030-06-01T10:00:00Z" and out.changed is True
    # one commit on the bookmark holding only the expiry file; the trunk unmoved
    assert out.commit == git(dataset, "rev-parse", "pr-1") == git(dataset, "rev-parse", "HEAD")
    assert git(dataset, "rev-parse", "pr-1~1") == before == git(dataset, "rev-parse", "main")
    assert git(dataset, "show", "--name-only", "--format=", "pr-1").split() == [".tether/bookmarks/pr-1.toml"]
    assert git(dataset, "status", "--porcelain") == ""
    doc = tomllib.loads(_expiry_file(dataset, "pr-1").read_text())
    assert doc["bookmark"] == "pr-1"
    assert doc["expires"] == datetime(2030, 6, 1, 10, tzinfo=timezone.utc)
    assert doc["created"].strftime("%Y-%m-%dT%H:%M:%SZ") == out.created
    assert [e.command for e in repo.ops()][0] == "bookmarks"  # journaled

    again = repo.set_expiry("pr-1", datetime(2030, 6, 1, 10, tzinfo=timezone.utc))
    assert again.changed is False and again.commit is None and again.expires == out.expires
    assert git(dataset, "rev-parse", "HEAD") == out.commit
    if _binary():  # the CLI says the same of the same expiry
        cli = _cli_json(dataset, "bookmarks", "pr-1", "--expires", "2030-06-01T10:00:00Z")
        assert cli == dataclasses.asdict(again)


def test_set_expiry_takes_seconds_and_a_timedelta_and_keeps_created(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1")
    first = repo.set_expiry("pr-1", 1_900_000_000)
    assert first.expires == "2030-03-17T17:46:40Z" and first.changed is True
    doc = tomllib.loads(_expiry_file(dataset, "pr-1").read_text())
    assert doc["expires"] == datetime.fromtimestamp(1_900_000_000, timezone.utc)
    # a float is floored to the second: the same expiry, nothing committed
    assert repo.set_expiry("pr-1", 1_900_000_000.9).changed is False
    # a timedelta is a time to live from now (--ttl)
    start = datetime.now(timezone.utc).replace(microsecond=0)
    week = repo.set_expiry("pr-1", timedelta(days=7))
    end = datetime.now(timezone.utc)
    expires = datetime.fromisoformat(week.expires.replace("Z", "+00:00"))
    assert start + timedelta(days=7) <= expires <= end + timedelta(days=7)
    assert week.changed is True and week.created == first.created  # created stays
    assert repo.list_bookmarks(stores=False).get("pr-1").expires == week.expires
    # the limits of what an expiry file holds, read back
    assert repo.set_expiry("pr-1", 253402300799).expires == "9999-12-31T23:59:59Z"
    assert repo.list_bookmarks(stores=False).get("pr-1").expires == "9999-12-31T23:59:59Z"
    assert repo.set_expiry("pr-1", 0).expires == "1970-01-01T00:00:00Z"
    pr = repo.list_bookmarks(stores=False).get("pr-1")
    assert pr.expires == "1970-01-01T00:00:00Z" and pr.expired is True


def test_set_expiry_none_clears_it(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1")
    repo.set_expiry("pr-1", PAST)
    assert repo.list_bookmarks(stores=False).get("pr-1").expired is True
    out = repo.set_expiry("pr-1", None)
    assert out.changed is True and out.expires is None and out.created is None
    assert out.commit == git(dataset, "rev-parse", "HEAD")
    assert not _expiry_file(dataset, "pr-1").exists()
    assert git(dataset, "show", "--name-status", "--format=", "HEAD").split() == ["D", ".tether/bookmarks/pr-1.toml"]
    pr = repo.list_bookmarks(stores=False).get("pr-1")
    assert pr.expires is None and pr.expired is False
    assert repo.gc_expired().bookmarks == []
    # nothing to clear: nothing committed
    again = repo.set_expiry("pr-1", None)
    assert again.changed is False and again.commit is None
    assert git(dataset, "rev-parse", "HEAD") == out.commit


def test_set_expiry_refusals_name_the_bookmark_and_change_nothing(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1")
    repo.new("main")
    refs = _refs(dataset)
    with pytest.raises(ConfigError, match=r"'main' is the trunk bookmark, and the trunk never expires"):
        repo.set_expiry("main", timedelta(days=1))
    with pytest.raises(ConfigError, match=r"on main, not 'pr-1'.*`tether new pr-1` first"):
        repo.set_expiry("pr-1", timedelta(days=1))
    with pytest.raises(ConfigError, match=r"no bookmark 'nope'"):
        repo.set_expiry("nope", timedelta(days=1))
    repo.new("pr-1")
    refs = _refs(dataset)
    bad = [
        (datetime(2030, 6, 1, 12), UsageError, "naive datetime"),
        (timedelta(0), UsageError, "time to live"),
        (timedelta(days=-1), UsageError, "time to live"),
        (-1, UsageError, "outside 1970"),
        (253402300800, UsageError, "outside 1970"),
        (float("nan"), UsageError, "not a time"),
        (True, TypeError, "not bool"),
        ("2030-06-01T10:00:00Z", TypeError, "not str"),
    ]
    for value, exc, says in bad:
        with pytest.raises(exc, match=says):
            repo.set_expiry("pr-1", value)  # type: ignore[arg-type]
    assert issubclass(UsageError, ValueError)
    # libtether refuses them too, for a caller of the C API (here the raw
    # extension call): the expiry file's reader takes 1970 to 9999 only
    for seconds in (-5, 253402300800, 2**62):
        with pytest.raises(UsageError, match=r"bookmark pr-1: expiry .* is outside 1970-01-01 to 9999-12-31"):
            repo._n.set_expiry("pr-1", seconds)
    assert _refs(dataset) == refs and not _expiry_file(dataset, "pr-1").exists()
    assert git(dataset, "status", "--porcelain") == ""


def test_an_expiry_file_on_the_trunk_is_not_obeyed(dataset, git_store):
    repo = _committed(dataset, git_store)
    path = _expiry_file(dataset, "main")
    path.parent.mkdir()
    path.write_text('bookmark = "main"\nexpires = 2001-01-01T00:00:00Z\n')
    git(dataset, "add", str(path))
    git(dataset, "commit", "-qm", "hand-made")
    main = repo.list_bookmarks(stores=False).get("main")
    assert main.trunk is True and main.expires is None and main.expired is False
    assert repo.gc_expired(dry_run=False).bookmarks == []
    assert "main" in repo.vcs.bookmarks()


# --------------------------------------------------------------------------- #
# gc_expired
# --------------------------------------------------------------------------- #


def test_gc_expired_is_a_dry_run_until_told_then_drops_the_bookmark_and_its_branch(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1", eager=True)
    expiry = repo.set_expiry("pr-1", PAST)
    repo.new("main")
    repo.new(bookmark="pr-2", eager=True)  # off the trunk, not off pr-1
    repo.set_expiry("pr-2", timedelta(days=7))  # not expired
    repo.new("main")
    ds_refs, store_refs = _refs(dataset), _refs(git_store)

    dry = repo.gc_expired()
    assert isinstance(dry, GcExpiredReport) and dry.dry_run is True and dry.now
    [entry] = dry.bookmarks
    assert (entry.bookmark, entry.outcome, entry.error, entry.result) == ("pr-1", "planned", None, None)
    assert entry.expires == "2001-01-01T00:00:00Z" and entry.created == expiry.created
    assert dry.planned == ["pr-1"] and dry.dropped == [] and dry.refused == {}
    assert entry.plan is not None and entry.plan.command == "drop" and entry.plan.context["bookmark"] == "pr-1"
    ops = {a.op for a in entry.plan.actions}
    assert {"abandon-commit", "delete-bookmark"} <= ops
    assert "pr-1" in str(entry.plan)  # the plan's text
    # nothing changed: not the dataset's refs, not the store's, not the files
    assert _refs(dataset) == ds_refs and _refs(git_store) == store_refs
    assert git(dataset, "status", "--porcelain") == ""

    done = repo.gc_expired(dry_run=False)
    assert done.dry_run is False and done.dropped == ["pr-1"]
    [entry] = done.bookmarks
    assert entry.plan is None and isinstance(entry.result, DropReport)
    assert entry.result.bookmark == "pr-1" and entry.result.abandoned == [expiry.commit]
    assert entry.result.gc_report is not None
    assert entry.result.gc_report.deleted_working_refs == {"code": [_ws(repo, "pr-1")]}
    assert set(repo.vcs.bookmarks()) == {"main", "pr-2"}
    assert _ws(repo, "pr-1") not in _heads(git_store) and _ws(repo, "pr-2") in _heads(git_store)
    assert any(e.command == "drop" for e in repo.ops())  # journaled as its drop
    assert repo.gc_expired(dry_run=False).bookmarks == []


def test_a_dry_runs_plan_applies_with_apply_drop(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="pr-1", eager=True)
    repo.set_expiry("pr-1", PAST)
    repo.new("main")
    [entry] = repo.gc_expired().bookmarks
    report = repo.apply_drop(entry.plan)
    assert report.bookmark == "pr-1" and "pr-1" not in repo.vcs.bookmarks()
    assert _ws(repo, "pr-1") not in _heads(git_store)


def test_gc_expired_refuses_per_bookmark_and_still_drops_the_others(dataset, git_store):
    repo = _committed(dataset, git_store)
    for name in ("dirty", "clean", "here"):
        repo.new(bookmark=name, eager=True)
        repo.set_expiry(name, PAST)
        repo.new("main")
    _write_on(git_store, _ws(repo, "dirty"))
    repo.new("here")  # this checkout works on an expired bookmark: a sweep never moves it

    report = repo.gc_expired(dry_run=False)  # refusals are in the report, not raised
    outcomes = {b.bookmark: b.outcome for b in report.bookmarks}
    assert outcomes == {"clean": "dropped", "dirty": "refused", "here": "refused"}
    refused = report.refused
    assert "this checkout works on it" in refused["here"] and "`tether new main`" in refused["here"]
    assert f"[code] {_ws(repo, 'dirty')}" in refused["dirty"] and "--force-prune" in refused["dirty"]
    assert set(repo.vcs.bookmarks()) == {"main", "dirty", "here"}
    assert _ws(repo, "dirty") in _heads(git_store) and _ws(repo, "clean") not in _heads(git_store)

    repo.new("main")
    forced = repo.gc_expired(dry_run=False, force_prune=True)
    assert sorted(forced.dropped) == ["dirty", "here"] and forced.refused == {}
    assert set(repo.vcs.bookmarks()) == {"main"}
    assert not any(b.startswith("tether.ws.") for b in _heads(git_store))


def test_gc_expired_passes_drops_options_on(dataset, git_store, tmp_path):
    """delete_stores reclaims a store created on the expired bookmark;
    release_foreign goes into each drop's plan."""
    repo = _committed(dataset, git_store)
    store = tmp_path / "st" / "g.git"
    repo.new(bookmark="pr-1")
    repo.set_expiry("pr-1", PAST)
    repo.add("g", "git", {"uri": str(store)}, create=True)
    repo.commit("with g")
    repo.new("main")
    [plain] = repo.gc_expired().bookmarks
    store_ops = ("keep-store", "delete-store")
    assert not any(a.op in store_ops for a in plain.plan.actions)
    assert "release_foreign" not in plain.plan.context  # drop's plan as tether-vcs makes it
    [both] = repo.gc_expired(delete_stores=True, release_foreign=True).bookmarks
    assert any(a.key == "g" and a.op in store_ops for a in both.plan.actions)
    assert both.plan.context["delete_stores"] is True and both.plan.context["release_foreign"] is True
    assert store.exists()
    [done] = repo.gc_expired(dry_run=False, delete_stores=True).bookmarks
    assert done.outcome == "dropped" and done.result.gc_report.deleted_stores == {"g": str(store)}
    assert not store.exists()


def test_gc_expired_dry_run_is_the_clis_json(dataset, git_store):
    if not _binary():
        pytest.skip("no tether binary (TETHER_BIN) to compare with")
    repo = _committed(dataset, git_store)
    for name in ("dirty", "clean"):
        repo.new(bookmark=name, eager=True)
        repo.set_expiry(name, PAST)
        repo.new("main")
    _write_on(git_store, _ws(repo, "dirty"))
    mine = repo.gc_expired()
    cli = _cli_json(dataset, "gc", "--expired")
    assert cli["dry_run"] is True and mine.dry_run is True
    assert len(cli["bookmarks"]) == len(mine.bookmarks) == 2
    for b, theirs in zip(mine.bookmarks, cli["bookmarks"]):
        assert (b.bookmark, b.created, b.expires, b.outcome, b.error) == (
            theirs["bookmark"], theirs["created"], theirs["expires"], theirs["outcome"], theirs.get("error"))
        if b.plan is None:
            assert theirs.get("plan") is None
            continue
        assert [a.to_dict() for a in b.plan.actions] == theirs["plan"]["actions"]
        assert [p.to_dict() for p in b.plan.preconditions] == theirs["plan"]["preconditions"]
    # a dry run already refuses what the sweep would refuse, with the plan it judged
    assert {b.bookmark: b.outcome for b in mine.bookmarks} == {"clean": "planned", "dirty": "refused"}
    assert "--force-prune" in mine.refused["dirty"] and mine.bookmarks[1].plan is not None


def test_the_methods_document_themselves():
    from tether import _help

    assert Repo.list_bookmarks.__doc__.startswith(_help.HELP["bookmarks"])
    assert Repo.set_expiry.__doc__.startswith(_help.HELP["bookmarks"])
    assert "or `None` to clear the expiry" in Repo.set_expiry.__doc__
    assert Repo.gc_expired.__doc__.startswith(_help.HELP["gc"])
    assert "--expired" in _help.HELP["gc"]
