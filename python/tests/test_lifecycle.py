"""The methods past the everyday ones, as tether-vcs's Repo has them: drop,
abandon, forget_workspace, upgrade, recover_report, export / publish /
import, new(adopt=), plan_gc(scope=)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import tether
from conftest import git
from tether import (
    AbandonReport,
    DropReport,
    ExportBundle,
    ForgetWorkspaceReport,
    GcReport,
    ImportReport,
    ImportSpec,
    Policy,
    RecoverReport,
    Repo,
    UpgradeReport,
)
from tether.repo import GcScope

pytestmark = pytest.mark.skipif(
    not hasattr(tether, "libtether_version"), reason="tests of the libtether package, not of tether-vcs"
)


def _committed(dataset: Path, git_store: Path) -> Repo:
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.commit("baseline")
    return repo


def _branches(store: Path) -> list[str]:
    out = git(store, "for-each-ref", "--format=%(refname:short)", "refs/heads/tether.ws.*")
    return out.split() if out else []


def test_drop_throws_a_bookmark_away_with_its_branch(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="scratch", eager=True)
    assert _branches(git_store)
    plan = repo.plan_drop("scratch")
    assert plan.command == "drop"
    report = repo.apply_drop(plan)
    assert isinstance(report, DropReport) and report.plan is plan
    assert report.bookmark == "scratch" and report.left_for == "main"
    assert isinstance(report.gc_report, GcReport)
    assert _branches(git_store) == [] and repo.bookmark == "main"


def test_drop_takes_release_foreign_into_its_plan(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="scratch", eager=True)
    repo.new("main")
    assert "release_foreign" not in repo.plan_drop("scratch").context  # tether-vcs's plan as it was
    plan = repo.plan_drop("scratch", release_foreign=True)
    assert plan.context["release_foreign"] is True
    repo.apply_drop(plan)
    assert _branches(git_store) == []


def test_drop_in_one_call(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="gone", eager=True)
    repo.new("main")
    report = repo.drop("gone")
    assert report.bookmark == "gone" and report.left_for is None and _branches(git_store) == []


def test_abandon_drops_a_commit_and_plans_gc(dataset, git_store):
    repo = _committed(dataset, git_store)
    (git_store / "two").write_text("two\n")
    git(git_store, "add", "two")
    git(git_store, "commit", "-qm", "two")
    repo.commit("second")
    second = repo.vcs.current_rev()
    report = repo.abandon([second])
    assert isinstance(report, AbandonReport)
    assert report.abandoned == [second] and report.gc_report is None
    assert report.gc_plan is not None and report.gc_plan.command == "gc"
    assert repo.vcs.current_rev() != second


def test_forget_workspace_plans_then_removes_the_workspace_files(dataset, git_store, tmp_path):
    repo = _committed(dataset, git_store)
    other = tmp_path / "other"
    git(dataset, "worktree", "add", "-q", str(other))
    there = Repo.find(other)
    there.status()
    ws = there.workspace.workspace_id[:8]
    plan = repo.plan_forget_workspace(ws)
    assert plan.command == "forget-workspace"
    report = repo.apply_forget_workspace(plan)
    assert isinstance(report, ForgetWorkspaceReport) and report.plan is plan
    assert report.workspace == ws and report.failed == {}
    assert not (other / ".tether" / "workspace.toml").exists()


def test_upgrade_of_a_current_dataset_changes_nothing(dataset, git_store):
    repo = _committed(dataset, git_store)
    again = Repo.find(dataset, allow_outdated=True)
    plan = again.plan_upgrade()
    assert plan.command == "upgrade"
    report = again.upgrade()
    assert isinstance(report, UpgradeReport)
    assert report.from_version == report.to_version and report.failed == {}
    assert repo.status().objects[0].key == "code"


def test_recover_report_finds_the_pins_and_branches(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="feat", eager=True)
    report = repo.recover_report()
    assert isinstance(report, RecoverReport)
    assert report.dataset_id == repo.dataset_id and report.trunk == "main" and report.pinned
    [obj] = report.objects
    assert obj.key == "code" and obj.kind == "git" and obj.holds_refs
    mine = report.datasets[repo.dataset_id]
    assert len(mine.pins) == 1 and list(mine.bookmarks) == ["feat"]
    assert report.to_dict()["datasets"][0]["pins"] == 1
    assert repo.recover_report(["code"]).scoped


def test_export_to_sqlite_and_a_directory(dataset, git_store, tmp_path):
    repo = _committed(dataset, git_store)
    bundle = repo.export()
    assert isinstance(bundle, ExportBundle) and bundle.head == repo.vcs.current_rev()
    assert bundle.row_counts()["objects"] == 1 and bundle["objects"].rows[0]["key"] == "code"
    db = bundle.to_sqlite(tmp_path / "reg.sqlite")
    with sqlite3.connect(db) as con:
        assert con.execute("select key from objects").fetchall() == [("code",)]
    files = bundle.to_dir(tmp_path / "reg", "jsonl")
    assert all(f.exists() for f in files)
    rows = [json.loads(line) for line in (tmp_path / "reg" / "objects.jsonl").read_text().splitlines()]
    assert [r["key"] for r in rows] == ["code"]
    assert tether.build_bundle(repo).row_counts() == bundle.row_counts()


def test_import_objects_adds_then_sync_removes(dataset, git_store, tmp_path):
    repo = Repo.init(dataset)
    other = tmp_path / "other-store"
    other.mkdir()
    rows = [
        {"key": "code", "kind": "git", "uri": str(git_store)},
        {"key": "more", "kind": "git", "locator_json": json.dumps({"uri": str(git_store)})},
    ]
    report = repo.import_objects(rows)
    assert isinstance(report, ImportReport) and sorted(report.added) == ["code", "more"]
    assert sorted(repo.objects) == ["code", "more"]
    specs, notes = tether.specs_from_rows([rows[0]], Policy())
    assert isinstance(specs[0], ImportSpec) and notes == []
    plan = repo.plan_import(specs, sync=True)
    assert plan.command == "import"
    applied = repo.apply_import(plan)
    assert applied.removed == ["more"] and applied.unchanged == ["code"] and applied.plan is plan


def test_publish_to_postgres_is_refused_without_a_dsn(dataset, git_store):
    bundle = _committed(dataset, git_store).export()
    with pytest.raises(tether.ConfigError):
        bundle.to_postgres()


def test_new_adopt_takes_the_bookmarks_existing_branch(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="kept", eager=True)
    [branch] = _branches(git_store)
    repo.new("main")
    plan = repo.plan_new("kept", adopt=True)
    assert plan.command == "new"
    repo.new("kept", adopt=True)
    assert repo.workspace.working_refs == {"code": branch}


def test_plan_gc_scope_judges_one_bookmarks_branches(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="a", eager=True)
    repo.new(bookmark="b", eager=True)
    repo.new("main")
    git(dataset, "branch", "-D", "a", "b")
    everything = repo.plan_gc(prune_bookmarks=True)
    scoped = repo.plan_gc(prune_bookmarks=True, scope=GcScope(bookmarks=frozenset({"a"})))
    targets = lambda p: sorted(a.target for a in p.actions if a.op == "delete-branch")  # noqa: E731
    assert len(targets(everything)) == 2
    assert targets(scoped) == [tether.working_ref_name(repo.dataset_id, "a")]
    with pytest.raises(tether.TetherError, match="dropped_manifests"):
        repo.plan_gc(scope=GcScope(dropped_manifests=(repo.objects["code"],)))


def test_working_ref_names_parse_back():
    ref = tether.working_ref_name("0123abcd", "feature")
    assert tether.working_ref_bookmark(ref) == "feature"
    assert tether.working_ref_bookmark(ref + ".2") == "feature"
    assert tether.working_ref_workspace(ref) is None
    assert tether.working_ref_workspace("tether.ws.0123abcd.89abcdef.code-123456") == "89abcdef"
    assert tether.working_ref_bookmark("refs/heads/main") is None


def test_select_keys_and_incomplete_ops(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.add("data/x", "git", {"uri": str(git_store)})
    assert repo.select_keys(["data/"]) == ["data/x"] and repo.select_keys(None) == ["code", "data/x"]
    with pytest.raises(tether.ConfigError):
        repo.select_keys(["nope"])
    assert repo.incomplete_ops() == [] and repo.bookmark_drift() == [] and repo.vcs_drift() == []
