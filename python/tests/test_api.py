"""The package's own tests: every Repo method against a real dataset, the
report types, the errors, the handles' lazy imports, plans, and that libtether
runs without the GIL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import tether
from conftest import git
from tether import (
    CommitResult,
    ConfigError,
    DiffEntry,
    GcReport,
    MultiObjectError,
    OpEntry,
    Plan,
    Policy,
    PromoteReport,
    PullReport,
    RepairReport,
    Repo,
    SetReport,
    StalePlanError,
    StatusReport,
    TetherError,
    UndoReport,
    UsageError,
)
from tether.backends import HistoryEntry, VerifyReport, VerifyStatus

pytestmark = pytest.mark.skipif(
    not hasattr(tether, "libtether_version"), reason="tests of the libtether package, not of tether-vcs"
)


def _committed(dataset: Path, git_store: Path) -> Repo:
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.commit("baseline")
    return repo


def _advance(store: Path, name: str) -> str:
    (store / name).write_text(name + "\n")
    git(store, "add", name)
    git(store, "commit", "-qm", name)
    return git(store, "rev-parse", "HEAD")


def test_init_find_and_properties(dataset):
    repo = Repo.init(dataset)
    assert isinstance(repo, Repo)
    again = Repo.find(dataset / ".tether")
    assert again.root == dataset.resolve()
    assert len(again.dataset_id) == 8 and again.config.dataset_id == again.dataset_id
    assert again.trunk == "main" and again.bookmark == "main" and again.on_trunk()
    assert again.vcs.kind == "git" and again.vcs.current_rev() == git(dataset, "rev-parse", "HEAD")
    assert again.objects == {}


def test_find_warns_as_libtether_warns(dataset):
    Repo.init(dataset)
    secrets = dataset / ".tether" / "secrets.toml"
    secrets.write_text("")
    secrets.chmod(0o644)
    with pytest.warns(UserWarning, match="secrets.toml"):
        Repo.find(dataset)


def test_add_returns_the_manifest_with_policy_and_remove_forgets_it(dataset, git_store):
    repo = Repo.init(dataset)
    m = repo.add(None, "git", {"uri": str(git_store)}, policy=Policy(file="immutable", pin="record"))
    assert m.key == "code" and m.kind == "git" and m.state is None and m.pin is None
    assert m.policy == Policy(file="immutable", pin="record")
    assert (dataset / ".tether" / "objects" / "code.toml").is_file()
    with pytest.raises(ConfigError):
        repo.add("code", "git", {"uri": str(git_store)})
    repo.remove("code")
    assert repo.objects == {}


def test_add_resolves_relative_paths_against_the_current_directory(dataset, git_store, monkeypatch):
    repo = Repo.init(dataset)
    monkeypatch.chdir(git_store.parent)
    m = repo.add("code", "git", {"uri": "code"})
    assert m.locator["uri"] == str(git_store)


def test_set_policy_reports_what_changed(dataset, git_store):
    repo = _committed(dataset, git_store)
    report = repo.set_policy(["code"], pin="record")
    assert isinstance(report, SetReport)
    assert report.changed == {"code": {"pin": ("native", "record")}}
    again = repo.set(["code"], pin="record")
    assert again.changed == {} and again.unchanged == ["code"]
    with pytest.raises(TetherError):
        repo.set_policy(["code"])


def test_snapshot_status_and_commit_results(dataset, git_store):
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    states = repo.snapshot()
    assert states["code"]["sha"] == git(git_store, "rev-parse", "HEAD")
    st = repo.status()
    assert isinstance(st, StatusReport) and st.fresh and st.snapshot_at
    (obj,) = st.objects
    assert obj.state_label == "new" and not obj.committed and obj.current_state["sha"] == states["code"]["sha"]
    result = repo.commit("baseline")
    assert isinstance(result, CommitResult) and result.message == "baseline"
    assert result.pinned["code"].ref == tether.ref_for_pin(result.pinned["code"].id)
    assert result.vcs_commit == git(dataset, "rev-parse", "HEAD")
    assert repo.commit("again").unchanged == ["code"]
    _advance(git_store, "two")
    (obj,) = repo.status().objects
    assert obj.state_label == "modified" and obj.changed
    assert repo.status(do_snapshot=False).fresh is False


def test_plan_commit_then_apply_and_a_stale_plan_is_refused(dataset, git_store):
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    plan = repo.plan_commit("planned")
    assert isinstance(plan, Plan) and plan.command == "commit" and plan.actions
    assert any("code" in line for line in plan.render())
    assert Plan.from_json(plan.to_json()).to_json() == plan.to_json()
    stale = repo.plan_commit("planned")
    result = repo.apply_commit(plan)
    assert result.pinned["code"] is not None and result.vcs_commit
    _advance(git_store, "moved")
    with pytest.raises(StalePlanError):
        repo.apply_commit(stale)


def test_verify_diff_history_and_ops(dataset, git_store):
    repo = _committed(dataset, git_store)
    first = repo.vcs.current_rev()
    v = repo.verify()
    assert isinstance(v["code"], VerifyReport) and v["code"].ok and v["code"].status is VerifyStatus.OK
    _advance(git_store, "two")
    repo.commit("second")
    rows = repo.diff(first)
    assert [type(r) for r in rows] == [DiffEntry] and rows[0].change == "changed" and "state" in rows[0].why
    assert rows[0].a_pin != rows[0].b_pin
    hist = repo.history("code", limit=1)
    assert len(hist) == 1 and isinstance(hist[0], HistoryEntry) and hist[0].message == "two"
    assert repo.log("code") == repo.history("code")
    assert [h.id for h in repo.history_for("git", {"uri": str(git_store)})] == [h.id for h in repo.history("code")]
    ops = repo.ops()
    assert all(isinstance(o, OpEntry) for o in ops) and ops[0].command == "commit"
    assert len(repo.ops(limit=1)) == 1


def test_new_open_promote_with_plans(dataset, git_store):
    repo = _committed(dataset, git_store)
    plan = repo.plan_new(bookmark="feature")
    assert plan.command == "new"
    repo.apply_new(plan)
    assert repo.bookmark == "feature" and not repo.on_trunk()
    handle = repo.open("code")
    branch = git(git_store, "for-each-ref", "--format=%(refname:short)", "refs/heads/tether.ws.*")
    git(git_store, "checkout", "-q", branch)
    head = _advance(git_store, "feature")
    git(git_store, "checkout", "-q", "main")
    assert handle.path == str(git_store) and not handle.read_only
    repo.commit("feature work")
    pplan = repo.plan_promote()
    assert pplan.command == "promote"
    report = repo.apply_promote(pplan)
    assert isinstance(report, PromoteReport) and report.plan is pplan
    assert report.fast_forwarded["code"]["sha"] == head and report.trunk_moved


def test_materialize_fork_makes_the_deferred_branch(dataset, git_store):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="later")
    assert git(git_store, "for-each-ref", "refs/heads/tether.ws.*") == ""
    assert repo.workspace.pending_forks == {"code": tether.working_ref_name(repo.dataset_id, "later")}
    branch = repo.materialize_fork("code")
    assert repo.workspace.working_refs == {"code": branch} and repo.workspace.bookmark == "later"
    assert branch == tether.working_ref_name(repo.dataset_id, "later")
    assert git(git_store, "rev-parse", branch) == git(git_store, "rev-parse", "main")


def test_pull_commits_what_moved_upstream(dataset, git_store):
    repo = _committed(dataset, git_store)
    head = _advance(git_store, "upstream")
    report = repo.pull()
    assert isinstance(report, PullReport) and report.bookmark == "main"
    assert report.committed["code"][1]["sha"] == head and report.vcs_commit
    assert report.pinned["code"].id in report.pinned["code"].ref


def test_restore_resets_a_working_branch_to_a_revision(dataset, git_store):
    repo = _committed(dataset, git_store)
    base = repo.vcs.current_rev()
    repo.new(bookmark="b", eager=True)
    branch = git(git_store, "for-each-ref", "--format=%(refname:short)", "refs/heads/tether.ws.*")
    git(git_store, "checkout", "-q", branch)
    _advance(git_store, "x")
    git(git_store, "checkout", "-q", "main")
    repo.commit("x")
    plan = repo.plan_restore(["code"], base)
    assert plan.command == "restore"
    refs = repo.apply_restore(plan)
    assert refs == {"code": branch}
    assert git(git_store, "rev-parse", branch) == git(git_store, "rev-parse", "main")


def test_gc_dry_run_then_release(dataset, git_store):
    repo = _committed(dataset, git_store)
    old_pin = repo.objects["code"].pin
    _advance(git_store, "two")
    repo.commit("second")
    report = repo.gc()
    assert isinstance(report, GcReport) and report.dry_run
    plan = repo.plan_gc()
    assert plan.command == "gc"
    applied = repo.apply_gc(plan)
    assert applied.plan is plan and applied.dry_run is False
    # Both pins are referenced by history, so nothing is released.
    assert applied.unpinned == {}
    assert git(git_store, "rev-parse", "--verify", old_pin.ref)


def test_undo_reverses_an_add(dataset, git_store):
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    report = repo.undo()
    assert isinstance(report, UndoReport) and report.op.command == "add" and report.complete
    assert report.undo_id and repo.objects == {}


def test_repair_recreates_a_deleted_pin(dataset, git_store):
    repo = _committed(dataset, git_store)
    pin = repo.objects["code"].pin
    git(git_store, "tag", "-d", pin.ref)
    plan = repo.plan_repair()
    assert plan.command == "repair" and plan.actions
    report = repo.apply_repair(plan)
    assert isinstance(report, RepairReport) and report.repinned == {"code": pin.id}
    assert git(git_store, "rev-parse", "--verify", pin.ref)
    assert repo.repair().repinned == {}


def test_errors_carry_code_hint_key_and_kind(dataset, tmp_path):
    with pytest.raises(ConfigError) as info:
        Repo.find(tmp_path / "nowhere")
    assert info.value.code == "config"
    repo = Repo.init(dataset)
    f = tmp_path / "f.txt"
    f.write_text("x")
    repo.add("notes", "file", {"uri": str(f)})
    repo.commit("baseline")
    with pytest.raises(tether.CapabilityError) as cap:
        repo.open("notes", read_only=False)
    assert cap.value.key == "notes" and cap.value.kind == "file" and str(cap.value).startswith("[notes]")
    with pytest.raises(UsageError):
        tether.manifest_hash({"k": {"kind": "git"}})
    with pytest.raises(TypeError):
        repo._n.status("code")  # the binding wants a list of keys, not a str


def test_multi_object_error_carries_the_report():
    err = MultiObjectError("gc: 1 action(s) failed", {"unpin x (k)": TetherError("boom")}, report=GcReport())
    assert "unpin x (k): boom" in str(err) and isinstance(err.report, GcReport)


def test_a_missing_library_names_the_pip_package(dataset, lance_store, monkeypatch):
    repo = Repo.init(dataset)
    repo.add("rows", "lance", {"uri": str(lance_store)})
    repo.commit("baseline")
    monkeypatch.setitem(sys.modules, "lance", None)  # import lance now fails
    with pytest.raises(tether.handles.MissingLibraryError, match="pip install pylance") as info:
        repo.open("rows", read_only=True)
    assert isinstance(info.value, ImportError) and isinstance(info.value, tether.BackendError)


def test_import_loads_no_store_library():
    code = "import sys, tether; print(sorted(m for m in ('icechunk', 'lance', 'deltalake', 'zarr') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_gil_is_released_during_a_call(dataset, git_store, monkeypatch):
    # A snapshot in another thread waits for the checkout lock, held here.
    # Were the GIL held through that wait, this thread could not run until
    # the call gave up; it runs at once.
    import fcntl
    import time

    repo = _committed(dataset, git_store)
    monkeypatch.setenv("TETHER_LOCK_TIMEOUT_MS", "3000")
    outcome: list[object] = []
    with open(dataset / ".tether" / "lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        t = threading.Thread(target=lambda: outcome.append(repo.snapshot()))
        t.start()
        time.sleep(0.2)  # the call is waiting on the lock now
        start = time.monotonic()
        for _ in range(10):
            time.sleep(0.01)
        ran_for = time.monotonic() - start
        fcntl.flock(held, fcntl.LOCK_UN)
    t.join()
    assert ran_for < 1.0
    assert outcome and "code" in outcome[0]  # the call went on once the lock was free


def test_one_repo_shared_between_threads_is_serialised(dataset, git_store):
    repo = _committed(dataset, git_store)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                assert repo.status().objects[0].state_label == "clean"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_docstrings_are_the_cli_help():
    from tether import _help

    assert Repo.commit.__doc__.startswith(_help.HELP["commit"])
    assert "Pin every changed object" in Repo.commit.__doc__
    binary = os.environ.get("TETHER_BIN")
    if not binary:
        pytest.skip("TETHER_BIN not set: cannot compare with the binary's --help")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import gen_help

    assert gen_help.help_texts(binary) == _help.HELP, "run python/tools/gen_help.py to regenerate _help.py"


def test_the_package_is_typed():
    assert (Path(tether.__file__).parent / "py.typed").is_file()


def _two_objects(dataset, git_store, tmp_path) -> Repo:
    """A new dataset tracking a git repository ("code") and a file ("notes")."""
    f = tmp_path / "f.txt"
    f.write_text("x")
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.add("notes", "file", {"uri": str(f)})
    return repo


def test_progress_reports_each_fingerprint(dataset, git_store, tmp_path):
    _two_objects(dataset, git_store, tmp_path)
    seen: list[tuple[str, str, int, int]] = []
    repo = Repo.find(dataset, progress=lambda *a: seen.append(a))
    repo.status()
    assert sorted(k for _, k, _, _ in seen) == ["code", "notes"]
    assert sorted(d for _, _, d, _ in seen) == [1, 2] and {(p, t) for p, _, _, t in seen} == {("fingerprint", 2)}
    repo.progress = None
    repo.status()
    assert len(seen) == 2


def test_cancel_stops_a_fingerprint_and_a_commit_writes_nothing(dataset, git_store, tmp_path):
    repo = _two_objects(dataset, git_store, tmp_path)
    head = repo.current_manifest_hash()
    repo.cancel()
    with pytest.raises(TetherError, match="fingerprint cancelled after 0 of 2"):
        repo.commit("first")
    assert repo.current_manifest_hash() == head and repo.objects["notes"].state is None
    repo.commit("first")  # the request was consumed
    assert repo.objects["notes"].state is not None


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_failing_progress_callback_does_not_break_the_call(dataset, git_store):
    repo = _committed(dataset, git_store)

    def boom(*args: object) -> None:
        raise RuntimeError("callback failed")

    repo.progress = boom
    assert repo.status().objects[0].state_label == "clean"


def test_progress_true_without_tqdm_prints_lines(dataset, git_store, monkeypatch, capsys):
    repo = _committed(dataset, git_store)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    repo.progress = True
    repo.status()
    assert "fingerprint: 1/1 code" in capsys.readouterr().err


def test_an_unopened_native_repo_raises_instead_of_crashing():
    raw = tether._native.Repo.__new__(tether._native.Repo)
    with pytest.raises(RuntimeError):
        raw.root
    with pytest.raises(RuntimeError):
        raw.status()


def test_values_cross_the_boundary_both_ways(dataset, tmp_path):
    repo = Repo.init(dataset)
    f = tmp_path / "f.txt"
    f.write_text("x")
    loc = {"uri": str(f), "note": "caf\u00e9 \u2603", "n": 2**40, "x": 0.5, "flag": True, "list": [1, "a"]}
    with pytest.raises(TypeError):
        repo.add("f", "file", {"uri": object()})
    with pytest.raises(TypeError):
        repo.add("f", "file", {1: "x"})
    with pytest.raises(OverflowError):
        repo.add("f", "file", {"uri": str(f), "n": 2**80})
    m = repo.add("f", "file", loc)  # written to the manifest, read back
    assert m.locator == loc


def test_progress_true_draws_a_tqdm_bar(dataset, git_store, capsys):
    pytest.importorskip("tqdm")
    repo = _committed(dataset, git_store)
    repo.progress = True
    repo.status()
    err = capsys.readouterr().err
    assert "fingerprint:" in err and "/1 " in err  # the bar, cleared once done (leave=False)


def test_a_progress_callback_that_refers_to_its_repo_is_collected(dataset):
    import gc
    import weakref

    Repo.init(dataset)
    class Marker:
        pass

    repo = Repo.find(dataset)
    native, marker = repo._n, Marker()
    repo.progress = lambda *a, _n=native, _m=marker: None  # a cycle: Repo -> callback -> Repo
    ref = weakref.ref(marker)
    del repo, native, marker
    gc.collect()
    assert ref() is None


def test_keys_follow_an_add_and_a_remove_through_the_same_handle(dataset, git_store):
    repo = Repo.init(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.add("data/x", "git", {"uri": str(git_store)})
    assert repo._n.keys() == ["code", "data/x"] and repo.select_keys(["data/"]) == ["data/x"]
    repo.remove("data/x")
    assert repo._n.keys() == ["code"]


def test_promote_with_a_check(dataset, git_store, tmp_path, capfd):
    repo = _committed(dataset, git_store)
    repo.new(bookmark="feature")
    repo.open("code")
    branch = git(git_store, "for-each-ref", "--format=%(refname:short)", "refs/heads/tether.ws.*")
    git(git_store, "checkout", "-q", branch)
    head = _advance(git_store, "feature")
    git(git_store, "checkout", "-q", "main")
    repo.commit("feature work")
    before = git(git_store, "rev-parse", "main")
    seen = tmp_path / "handles.json"
    with pytest.raises(tether.TetherError, match="exited with status 4"):
        repo.promote(check=f'cp "$TETHER_CHECK_HANDLES" {seen}; echo audit says no; exit 4')
    assert "audit says no" in capfd.readouterr().err
    assert git(git_store, "rev-parse", "main") == before
    assert json.loads(seen.read_text())["heads"]["code"]["sha"] == head
    plan = repo.plan_promote(check="true")
    assert plan.to_dict()["context"]["check"]["exit_status"] == 0
    report = repo.promote(check="true")
    assert report.fast_forwarded["code"]["sha"] == head and report.check["heads"]["code"]["sha"] == head
