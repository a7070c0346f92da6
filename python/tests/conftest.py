"""Fixtures shared by the package's tests: throwaway git repositories, a
dataset in one, and stores made with their own libraries."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "tether tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "tether tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    ).stdout.strip()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The per-machine tool cache (test servers built once, ~/.cache/tether-tools)
    # stays where it is when HOME moves.
    if not os.environ.get("XDG_CACHE_HOME"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("TETHER_REV", raising=False)
    monkeypatch.setenv("TETHER_LOCK_TIMEOUT_MS", "5000")
    git(home, "config", "--global", "init.defaultBranch", "main")


@pytest.fixture
def dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty git repository with one commit, as the current directory."""
    root = tmp_path / "dataset"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "start")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def git_store(tmp_path: Path) -> Path:
    """A git repository with one commit on main."""
    path = tmp_path / "stores" / "code"
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("one\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "one")
    return path


@pytest.fixture
def icechunk_store(tmp_path: Path) -> Path:
    """An Icechunk repository (written by icechunk itself) with one array."""
    ic = pytest.importorskip("icechunk")
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "stores" / "cube.icechunk"
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)))
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    arr = root.create_array("temperature", shape=(4,), dtype="i4")
    arr[:] = [1, 2, 3, 4]
    session.commit("first values")
    return path


@pytest.fixture
def lance_store(tmp_path: Path) -> Path:
    """A Lance dataset (written by pylance) with three rows."""
    lance = pytest.importorskip("lance")
    pa = pytest.importorskip("pyarrow")
    path = tmp_path / "stores" / "rows.lance"
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(path))
    return path


@pytest.fixture
def delta_store(tmp_path: Path) -> Path:
    """A Delta table (written by deltalake) at version 0."""
    deltalake = pytest.importorskip("deltalake")
    pa = pytest.importorskip("pyarrow")
    path = tmp_path / "stores" / "events"
    deltalake.write_deltalake(str(path), pa.table({"n": [1, 2]}))
    return path
