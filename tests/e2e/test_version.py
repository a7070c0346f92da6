"""One version story.  tether's own version is CMake's project(VERSION), the
one place it is written: `tether --version`, libtether.pc, the .deb, the
wheel and `export`'s tether_meta `tether_version` all show it, as
tether-vcs's export shows its own.  Saved plans are the exception, on
purpose: their `tether_version` is the tether-vcs release this tether is
compatible with (0.1.0b7), because each implementation refuses a plan whose
`tether_version` is not its own and each applies the other's plans; both
appear in `--version`.  docs/compatibility.md and docs/releasing.md say so."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from conftest import git

TOP = Path(__file__).resolve().parents[2]


def cmake_version() -> str:
    m = re.search(r"project\(tether\s+VERSION\s+([0-9.]+)", (TOP / "CMakeLists.txt").read_text())
    assert m
    return m.group(1)


def ref_version(ref) -> str:
    out = ref("--version", cwd=TOP).stdout.split()
    assert out[0] == "tether"
    return out[1]


def dataset(tmp_path: Path, env) -> tuple[Path, Path]:
    code = tmp_path / "code"
    git("init", "-q", "-b", "main", str(code), cwd=tmp_path, env=env)
    (code / "model.py").write_text("weights = 1\n")
    git("add", ".", cwd=code, env=env)
    git("commit", "-q", "-m", "model", cwd=code, env=env)
    ds = tmp_path / "ds"
    git("init", "-q", "-b", "main", str(ds), cwd=tmp_path, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
    return ds, code


def meta(path: Path) -> dict[str, str]:
    con = sqlite3.connect(path)
    try:
        return dict(con.execute("SELECT key, value FROM tether_meta"))
    finally:
        con.close()


def test_tethers_own_version_is_cmakes_everywhere_it_is_shown(tmp_path, env, tether, ref, build_dir):
    version = cmake_version()
    compat = ref_version(ref)
    assert tether("--version", cwd=tmp_path).stdout == f"tether {version} (tether-vcs {compat} compatible)\n"
    pc = (build_dir / "libtether.pc").read_text()
    assert re.search(r"^Version: (.*)$", pc, re.M).group(1) == version
    ds, code = dataset(tmp_path, env)
    tether("init", cwd=ds)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("commit", "-m", "one", cwd=ds)
    tether("export", str(tmp_path / "ours.sqlite"), cwd=ds)
    ref("export", str(tmp_path / "theirs.sqlite"), cwd=ds)
    # each export names the program that wrote it
    assert meta(tmp_path / "ours.sqlite")["tether_version"] == version
    assert meta(tmp_path / "theirs.sqlite")["tether_version"] == compat
    # the Python package has no version of its own: setup.py reads CMake's
    pyproject = (TOP / "python" / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M) and not re.search(r"^version\s*=", pyproject, re.M)
    assert not re.search(r'__version__\s*=\s*"', (TOP / "python" / "src" / "tether" / "__init__.py").read_text())


def test_saved_plans_carry_the_compatible_tether_vcs_version_and_cross_over(tmp_path, env, tether, ref):
    compat = ref_version(ref)
    ds, code = dataset(tmp_path, env)
    tether("init", "--dataset-id", "5e7e1a0b", cwd=ds)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    ours = tmp_path / "ours-plan.json"
    tether("commit", "-m", "one", "--dry-run", "--plan", str(ours), cwd=ds)
    assert json.loads(ours.read_text())["tether_version"] == compat
    ref("commit", "--from-plan", str(ours), cwd=ds)  # tether-vcs applies our plan
    (code / "model.py").write_text("weights = 2\n")
    git("commit", "-q", "-am", "retrain", cwd=code, env=env)
    theirs = tmp_path / "theirs-plan.json"
    ref("commit", "-m", "two", "--dry-run", "--plan", str(theirs), cwd=ds)
    assert json.loads(theirs.read_text())["tether_version"] == compat
    tether("commit", "--from-plan", str(theirs), cwd=ds)  # and we apply theirs
    log = git("log", "--format=%s", cwd=ds, env=env).split("\n")
    assert log[:2] == ["two", "one"], log
    # a plan stamped with tether's own version (not the compatible one) is refused by both
    own = json.loads(theirs.read_text())
    own["tether_version"] = cmake_version()
    (tmp_path / "own.json").write_text(json.dumps(own))
    for runner in (tether, ref):
        p = runner("commit", "--from-plan", str(tmp_path / "own.json"), cwd=ds, check=False)
        assert p.returncode == 1 and "re-run the plan" in p.stderr, p.stderr
