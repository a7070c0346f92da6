"""`open` of a writable git object (issue 21): the handle names the branch its
writes go to and the worktree that has it checked out (`--worktree DIR`
makes one), and a writable open is refused while the dataset's checkout is
off the workspace's bookmark."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import git

# tether-vcs's GitHandle fields (tether.handles.GitHandle) and its CLI's shape
GIT_HANDLE_FIELDS = {"key", "read_only", "path", "sha", "worktree"}
CLI_FIELDS = {"key", "read_only", "address", "type"}


@pytest.fixture
def ds(git_repo, tether, tmp_path, env):
    """A dataset with one committed git object, `code`."""
    code = tmp_path / "code"
    git("init", "-q", "-b", "main", str(code), cwd=tmp_path, env=env)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=code, env=env)
    tether("init", cwd=git_repo)
    tether("add", "code", str(code), "--kind", "git", cwd=git_repo)
    tether("commit", "-m", "code", cwd=git_repo)
    return git_repo


def _code(tmp_path: Path) -> str:
    return os.path.realpath(tmp_path / "code")


def test_writable_open_on_the_trunk_names_the_checked_out_branch(ds, tether, tmp_path):
    h = tether.json("open", "code", cwd=ds)
    assert GIT_HANDLE_FIELDS | CLI_FIELDS <= set(h)
    assert h["type"] == "GitHandle" and h["read_only"] is False
    assert h["branch"] == "main" and h["worktree"] == _code(tmp_path)
    r = tether("open", "code", cwd=ds)
    assert r.stdout == f"{h['address']}\n"  # stdout stays the bare address
    assert "  branch: main (writable)\n" in r.stderr
    assert f"  worktree: {_code(tmp_path)}\n" in r.stderr
    assert f"  open it: cd '{_code(tmp_path)}'\n" in r.stderr
    # read-only handles carry no branch and no worktree
    ro = tether.json("open", "code", "--read-only", cwd=ds)
    assert ro["branch"] is None and ro["worktree"] is None and ro["read_only"] is True


def test_writable_open_on_a_bookmark_makes_and_finds_its_worktree(ds, tether, tmp_path, env):
    tether("new", "-b", "feat", cwd=ds)
    h = tether.json("open", "code", cwd=ds)
    branch = h["branch"]
    assert branch.startswith("tether.ws.") and branch.endswith(".feat")
    assert h["worktree"] is None  # forked, but checked out nowhere yet
    r = tether("open", "code", cwd=ds)
    assert f"  branch: {branch} (writable)\n" in r.stderr
    assert "--worktree DIR" in r.stderr
    assert f"  open it: git -C '{_code(tmp_path)}' checkout '{branch}'\n" in r.stderr

    # --worktree DIR (relative to the current directory) checks the branch out there
    h = tether.json("open", "code", "--worktree", "../wt", cwd=ds)
    wt = os.path.realpath(tmp_path / "wt")
    assert h["worktree"] == wt and h["branch"] == branch
    assert git("symbolic-ref", "--short", "HEAD", cwd=wt, env=env).strip() == branch
    # the code repository's own checkout did not move
    assert git("symbolic-ref", "--short", "HEAD", cwd=tmp_path / "code", env=env).strip() == "main"
    # found again without asking, and asking for the same place again is fine
    assert tether.json("open", "code", cwd=ds)["worktree"] == wt
    assert tether.json("open", "code", f"--worktree={wt}", cwd=ds)["worktree"] == wt
    r = tether("open", "code", cwd=ds)
    assert f"  open it: cd '{wt}'\n" in r.stderr

    # git checks a branch out in one place only: a second place is refused
    r = tether("open", "code", "--worktree", str(tmp_path / "wt2"), cwd=ds, check=False)
    assert r.returncode == 1 and f"already checked out at {wt}" in r.stderr
    assert not (tmp_path / "wt2").exists()
    # a directory that is not empty is refused before git sees it
    tether("new", "-b", "other", cwd=ds)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    r = tether("open", "code", "--worktree", str(full), cwd=ds, check=False)
    assert r.returncode == 1 and "not an empty directory" in r.stderr
    assert os.listdir(full) == ["x"]


def test_worktree_needs_a_writable_git_open(ds, tether, tmp_path):
    for extra in (("--read-only",), ("-r", "HEAD")):
        r = tether("open", "code", *extra, "--worktree", str(tmp_path / "wt"), cwd=ds, check=False)
        assert r.returncode == 1 and "--worktree" in r.stderr, (extra, r.stderr)
        assert not (tmp_path / "wt").exists()
    data = tmp_path / "data"
    data.mkdir()
    tether("add", "tables", str(data), "--kind", "file", cwd=ds)
    r = tether("open", "tables", "--worktree", str(tmp_path / "wt"), cwd=ds, check=False)
    assert r.returncode == 1 and "--worktree" in r.stderr
    assert not (tmp_path / "wt").exists()


def test_writable_open_refused_off_the_bookmark(ds, tether, tmp_path, env):
    tether("new", "-b", "feat", cwd=ds)
    git("checkout", "-q", "main", cwd=ds, env=env)
    r = tether("open", "code", cwd=ds, check=False)
    assert r.returncode == 1 and r.stdout == ""
    assert "left bookmark 'feat' (now on main)" in r.stderr
    assert "`tether new feat` returns to it" in r.stderr
    assert "`tether new main` works where you are" in r.stderr
    # nothing was forked for the refused open
    assert "tether.ws." not in git("branch", "--list", cwd=tmp_path / "code", env=env)
    # under --json the refusal is one JSON object on stderr
    r = tether("open", "code", "--json", cwd=ds, check=False)
    assert r.returncode == 1 and '"error"' in r.stderr and "left bookmark" in r.stderr
    # reading is still fine
    assert tether.json("open", "code", "--read-only", cwd=ds)["read_only"] is True
    # a detached checkout is off every bookmark
    git("checkout", "-q", "--detach", cwd=ds, env=env)
    r = tether("open", "code", cwd=ds, check=False)
    assert r.returncode == 1 and "(now on no bookmark)" in r.stderr
    # the command the hint names puts it right
    tether("new", "feat", cwd=ds)
    h = tether.json("open", "code", cwd=ds)
    assert h["read_only"] is False and h["branch"].endswith(".feat")
