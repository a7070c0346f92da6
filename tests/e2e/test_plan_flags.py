"""The plan flags of every planned command, handled in one place.

Every command that plans -- commit, new, promote, restore, repair, gc, drop,
forget-workspace, upgrade and import -- refuses --from-plan beside --dry-run
or --plan before it reads anything, and refuses a saved plan of another
command by its file name, exactly as tether-vcs does; and in either case it
writes nothing.  The same commands run through tether-vcs give the same
message.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git

# Each planned command with the arguments it needs to get as far as the plan.
PLANNED = {
    "commit": ["commit", "-m", "x"],
    "new": ["new", "-b", "feature"],
    "promote": ["promote"],
    "restore": ["restore", "data", "--from", "HEAD"],
    "repair": ["repair"],
    "gc": ["gc"],
    "drop": ["drop", "feature"],
    "forget-workspace": ["forget-workspace"],
    "upgrade": ["upgrade"],
    "import": ["import", "rows.csv"],
}


@pytest.fixture
def dataset(git_repo: Path, tether, env, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    tether("init", cwd=git_repo)
    tether("add", "data", str(data), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    (git_repo / "rows.csv").write_text("key,kind,uri\n")
    return git_repo


def snapshot(ds: Path) -> dict[str, bytes]:
    """Every file of the dataset but git's own, with its bytes."""
    return {str(p.relative_to(ds)): p.read_bytes() for p in sorted(ds.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(ds).parts}


def error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert lines, stderr
    return lines[-1]


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_from_plan_with_a_preview_flag_is_refused_before_anything(name, dataset, tether, ref, tmp_path):
    args = PLANNED[name]
    plan = tmp_path / "saved.plan"
    plan.write_text("not even JSON")
    before = snapshot(dataset)
    for extra in (["--dry-run"], ["--plan", str(tmp_path / "out.plan")]):
        ours = tether(*args, "--from-plan", str(plan), *extra, cwd=dataset, check=False)
        theirs = ref(*args, "--from-plan", str(plan), *extra, cwd=dataset, check=False)
        assert ours.returncode == 1, ours.stderr
        assert error_line(ours.stderr) == ("error: --from-plan applies a saved plan; it cannot be combined "
                                           "with --dry-run or --plan")
        assert theirs.returncode == ours.returncode
        assert error_line(theirs.stderr) == error_line(ours.stderr)
        assert not (tmp_path / "out.plan").exists()
    assert snapshot(dataset) == before


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_a_saved_plan_of_another_command_is_refused_by_file_name(name, dataset, tether, ref, tmp_path):
    other = "commit" if name == "gc" else "gc"
    # a plan of another command made by each: each refuses both by name
    saved = tmp_path / f"{other}.plan"
    tether(*PLANNED[other], "--plan", str(saved), cwd=dataset)
    theirs_saved = tmp_path / f"{other}-ref.plan"
    ref(*PLANNED[other], "--plan", str(theirs_saved), cwd=dataset)
    before = snapshot(dataset)
    for path in (saved, theirs_saved):
        ours = tether(*PLANNED[name], "--from-plan", str(path), cwd=dataset, check=False)
        assert ours.returncode == 1, ours.stderr
        assert error_line(ours.stderr) == f"error: {path} is a '{other}' plan, expected '{name}'"
        theirs = ref(*PLANNED[name], "--from-plan", str(path), cwd=dataset, check=False)
        assert theirs.returncode == 1 and error_line(theirs.stderr) == error_line(ours.stderr)
    assert snapshot(dataset) == before


@pytest.mark.parametrize("name", ["gc", "drop"])
def test_where_a_preview_is_the_default_only_no_dry_run_applies(name, dataset, tether, env, tmp_path):
    tether("new", "-b", "feature", cwd=dataset)
    tether("new", "main", cwd=dataset)
    before = snapshot(dataset)
    refs = git("for-each-ref", cwd=dataset, env=env)
    # no flag, --dry-run, and both flags: a preview
    for extra in ([], ["--dry-run"], ["--dry-run", "--no-dry-run"], ["--no-dry-run", "--dry-run"]):
        proc = tether(*PLANNED[name], *extra, cwd=dataset)
        assert proc.stdout.startswith(f"plan: {name} ("), proc.stdout
    assert snapshot(dataset) == before and git("for-each-ref", cwd=dataset, env=env) == refs
    # --plan FILE saves the preview, and --from-plan FILE applies it
    saved = tmp_path / "saved.plan"
    tether(*PLANNED[name], "--plan", str(saved), cwd=dataset)
    assert snapshot(dataset) == before
    tether(*PLANNED[name], "--from-plan", str(saved), cwd=dataset)
    if name == "drop":
        assert "refs/heads/feature" not in git("for-each-ref", cwd=dataset, env=env)
