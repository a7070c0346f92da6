"""Shared by the release-artifact tests (tests/dist/): the artifacts
scripts/dist.sh made in dist/, the one version number, the quickstart run
with a given binary, and a DuckDB-file DuckLake catalog written by DuckDB."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
DIST = Path(os.environ.get("TETHER_DIST_DIR", TOP / "dist"))


def cmake_version() -> str:
    m = re.search(r"project\(tether\s+VERSION\s+([0-9.]+)", (TOP / "CMakeLists.txt").read_text())
    assert m, "CMakeLists.txt has no project(tether VERSION ...)"
    return m.group(1)


VERSION = cmake_version()


def clean_env(home: Path, path: str = "/usr/local/bin:/usr/bin:/bin") -> dict[str, str]:
    """No developer config, no tether variables, a PATH without the checkout."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TETHER_", "GIT_", "PYTHON", "PYTEST", "VIRTUAL_ENV", "LD_"))}
    env.update(HOME=str(home), PATH=path, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C.UTF-8")
    return env


def artifact(pattern: str) -> Path:
    found = sorted(glob.glob(str(DIST / pattern)))
    if not found:
        pytest.fail(f"{DIST / pattern} is missing: scripts/dist.sh makes it (check.sh runs it first)")
    return Path(found[-1])


def quickstart(tether: str, where: Path, env: dict[str, str]) -> str:
    """scripts/demo.sh (the README's quickstart on local stores) with this
    binary, in `where`; its output, which must end with verify's ok lines."""
    proc = subprocess.run(["bash", str(TOP / "scripts" / "demo.sh"), tether], env={**env, "TT_DEMO_DIR": str(where)},
                          capture_output=True, text=True, timeout=300)
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    steps = [ln for ln in out.splitlines() if ln.startswith("$ ")]
    assert steps and all(s.split()[1] == tether for s in steps if "tether" in s.split()[1]), steps
    last = out[out.rindex(f"$ {tether} verify"):].splitlines()[1:]
    verdicts = [ln.split() for ln in last if ln.strip() and not ln.startswith("demo dataset")]
    assert sorted(v[1] for v in verdicts) == ["code", "images"] and all(v[0] == "ok" for v in verdicts), last
    return out


def libduckdb_so() -> Path | None:
    d = subprocess.run([str(TOP / "scripts" / "libduckdb-path.sh")], capture_output=True, text=True).stdout.strip()
    p = Path(d) / "libduckdb.so"
    return p if p.is_file() else None


def duckdb_catalog(tmp: Path) -> Path:
    """A DuckLake catalog in a DuckDB file with one table, written by DuckDB
    with the ducklake extension from its wheel (the test venv's)."""
    import duckdb  # the test venv's
    site = Path(duckdb.__file__).resolve().parents[1]
    ext = glob.glob(str(site / "duckdb_extension_ducklake" / "extensions" / "*" / "ducklake.duckdb_extension"))
    if not ext:
        pytest.fail("duckdb-extension-ducklake is not installed in the test venv")
    meta = tmp / "meta.ducklake"
    (tmp / "lake-data").mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET extension_directory = '{tmp}/duckdb-ext'")
    con.execute(f"INSTALL '{ext[0]}'")
    con.execute("LOAD ducklake")
    con.execute(f"ATTACH 'ducklake:{meta}' AS lake (DATA_PATH '{tmp}/lake-data/')")
    con.execute("CREATE TABLE lake.t AS SELECT 1 AS id")
    con.execute("DETACH lake")
    con.close()
    return meta


def git_dataset(root: Path, env: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                                                 "--allow-empty", "-m", "start"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    return root


def ducklake_status(tether: str, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`tether status --snapshot` of a dataset whose one object is a
    DuckDB-file DuckLake catalog."""
    meta = duckdb_catalog(tmp / "lake")
    ds = git_dataset(tmp / "duck-ds", env)
    for args in (["init"], ["add", "lake", str(meta), "--kind", "ducklake"]):
        subprocess.run([tether, *args], cwd=ds, env=env, check=True, capture_output=True)
    return subprocess.run([tether, "status", "--snapshot"], cwd=ds, env=env, capture_output=True, text=True)


def query_42(tether: str, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`tether query "SELECT 41 + 1 AS x"` in an empty dataset: DuckDB
    (libduckdb) answers, no object is read."""
    ds = git_dataset(tmp / "query-ds", env)
    subprocess.run([tether, "init"], cwd=ds, env=env, check=True, capture_output=True)
    return subprocess.run([tether, "query", "SELECT 41 + 1 AS x"], cwd=ds, env=env, capture_output=True, text=True)


def which(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.fail(f"{name} is not installed (scripts/setup.sh --test installs it)")
    return path
