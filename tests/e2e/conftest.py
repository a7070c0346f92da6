"""Shared fixtures for the end-to-end tests.

The binary under test is $TETHER_BIN (default build/tether); helper programs
live beside it in $TETHER_BUILD_DIR.  The reference implementation,
tether-vcs, is the `tether` of the test virtualenv (`ref_tether`), and its
Python modules are importable here for computing expected values.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import json_shapes

ROOT = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TETHER_BUILD_DIR", ROOT / "build"))
TETHER_BIN = Path(os.environ.get("TETHER_BIN", BUILD_DIR / "tether"))
REF_TETHER = Path(sys.executable).parent / "tether"
FIXTURES = ROOT.parent / "shared" / "fixtures"


def isolated_env(home: Path) -> dict[str, str]:
    """An environment that cannot see the developer's git/jj config."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "TETHER_")) or k in ("TETHER_BIN", "TETHER_BUILD_DIR")
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
        LC_ALL="C.UTF-8",
    )
    return env


class Runner:
    """Runs a tether binary (ours or the reference) in a directory."""

    def __init__(self, exe: Path, env: dict[str, str], check_json: bool = False):
        self.exe = exe
        self.env = env
        # ours: every --json answer is checked against docs/json-schema.json
        self.check_json = check_json

    def __call__(self, *args: str, cwd: Path | str, check: bool = True,
                 input: str | None = None, env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
        e = dict(self.env)
        if env:
            e.update(env)
        proc = subprocess.run(
            [str(self.exe), *args], cwd=str(cwd), env=e, input=input,
            capture_output=True, text=True, timeout=300,
        )
        if self.check_json and "--json" in args:
            json_shapes.check(args, proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{self.exe.name} {' '.join(args)} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def json(self, *args: str, cwd: Path | str, **kw) -> object:
        return json.loads(self(*args, "--json", cwd=cwd, **kw).stdout)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return isolated_env(home)


@pytest.fixture
def tether(env: dict[str, str]) -> Runner:
    if not TETHER_BIN.exists():
        pytest.fail(f"tether binary not built: {TETHER_BIN}")
    return Runner(TETHER_BIN, env, check_json=True)


@pytest.fixture
def ref(env: dict[str, str]) -> Runner:
    if not REF_TETHER.exists():
        pytest.fail(f"reference tether-vcs not installed in the test venv: {REF_TETHER}")
    return Runner(REF_TETHER, env)


@pytest.fixture
def build_dir() -> Path:
    return BUILD_DIR


def git(*args: str, cwd: Path | str, env: dict[str, str]) -> str:
    return subprocess.run(["git", *args], cwd=str(cwd), env=env, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tmp_path: Path, env: dict[str, str]) -> Path:
    """An empty git repository on branch main with one commit."""
    repo = tmp_path / "ds"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo, env=env)
    (repo / "README").write_text("dataset\n")
    git("add", "README", cwd=repo, env=env)
    git("commit", "-q", "-m", "start", cwd=repo, env=env)
    return repo


def jj_path() -> Path:
    """The real jj the tests drive: $TETHER_JJ, else the per-machine cache
    scripts/setup.sh builds it into (scripts/jj-path.sh says where)."""
    out = subprocess.run([str(ROOT / "scripts" / "jj-path.sh")], capture_output=True,
                         text=True, check=True).stdout.strip()
    return Path(out)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_jj: the test drives real jj (any test using the jj_bin fixture); "
                            "make check runs these after the jj build it starts in the background")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "jj_bin" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.needs_jj)


@pytest.fixture
def jj_bin() -> Path:
    """jj, or skip -- except under `make check` (TETHER_REQUIRE_JJ=1), where
    a missing jj is a failure: `make setup` builds it."""
    p = jj_path()
    if not os.access(p, os.X_OK):
        msg = f"jj not built: {p} (scripts/setup.sh builds it)"
        if os.environ.get("TETHER_REQUIRE_JJ") == "1" or os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return p
