"""The Python wheels and sdist (`make wheel`): each manylinux wheel installs
into a fresh virtualenv in a directory outside the checkout, on CPython
3.11, 3.12 and 3.13, and runs the recipes of docs/python.md
(python/tests/recipes: status, commit, new, open a handle) with the
checkout hidden (a mount namespace lays an empty tmpfs over it), so nothing
of the checkout or its build directories can be used.  The sdist builds a
wheel the same way, compiling libtether from the sources it carries."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from conftest import TOP, VERSION, artifact, clean_env

# CPython 3.11 is Debian 12's; 3.12 and 3.13 pyenv's (as check.sh's .venv-py3.X)
PYTHONS = {
    "3.11": (["/usr/bin/python3.11"], {}),
    "3.12": (["python3.12"], {"PYENV_VERSION": os.environ.get("TT_PY312", "3.12.1")}),
    "3.13": (["python3.13"], {"PYENV_VERSION": os.environ.get("TT_PY313", "3.13.0")}),
}
PYTEST = "pytest==8.3.4"
SETUPTOOLS = "setuptools==75.8.0"
# docs/python.md's recipes on local stores (git, file): each must pass; the
# ones needing a store library the fresh venv lacks (zarr, lance, ...) skip.
MUST_PASS = {
    "test_provenance_records_rev_and_pins_and_reads_them_back",
    "test_pin_ids_and_manifest_hash_are_computable_from_the_manifests",
    "test_status_after_commit_is_clean_and_names_tiers",
    "test_open_a_fork_write_with_git_commit_promote",
    "test_errors_are_typed",
}


def wheel_for(xy: str) -> Path:
    tag = "cp" + xy.replace(".", "")
    return artifact(f"tether_native-{VERSION}-{tag}-{tag}-manylinux_*_x86_64.whl")


def hidden(argv: list[str]) -> list[str]:
    """argv run with the checkout replaced by an empty directory."""
    return ["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
            'mount -t tmpfs -o size=1m,mode=0555 tether-checkout-hidden "$0" && exec "$@"', str(TOP), *argv]


@pytest.fixture(scope="module")
def can_hide(tmp_path_factory) -> bool:
    probe = subprocess.run(hidden(["test", "!", "-e", str(TOP / "CMakeLists.txt")]), capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"cannot hide the checkout (unshare -m + mount, needs root): {probe.stderr.strip()}")
    return True


def fresh_venv(xy: str, where: Path, env: dict[str, str], *pip_args: str) -> Path:
    cmd, extra = PYTHONS[xy]
    exe = shutil.which(cmd[0], path=os.environ["PATH"]) or cmd[0]
    subprocess.run([exe, "-m", "venv", str(where)], env={**os.environ, **extra}, check=True, capture_output=True)
    py = where / "bin" / "python"
    got = subprocess.run([str(py), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert got == xy
    if pip_args:
        p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pip_args],
                           env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-2000:]
    return py


def run_recipes(py: Path, tmp: Path, env: dict[str, str]) -> dict[str, str]:
    """The recipe file and its fixtures, copied out of the checkout and run
    with it hidden; {test name: outcome}."""
    recipes = tmp / "recipes"
    recipes.mkdir()
    shutil.copy(TOP / "python" / "tests" / "conftest.py", recipes / "conftest.py")
    shutil.copy(TOP / "python" / "tests" / "recipes" / "test_recipes.py", recipes / "test_recipes.py")
    xml = tmp / "recipes.xml"
    probe = ("import tether, sys; "
             "assert not any(p.startswith(%r) for p in [tether.__file__, *sys.path]), tether.__file__; "
             "print(tether.__version__, tether.__file__)" % str(TOP))
    who = subprocess.run(hidden([str(py), "-c", probe]), cwd=tmp, env=env, capture_output=True, text=True)
    assert who.returncode == 0, who.stderr
    version, where = who.stdout.split()
    assert version == VERSION and where.startswith(str(py.parent.parent)), who.stdout
    proc = subprocess.run(hidden([str(py), "-m", "pytest", str(recipes), "-q", "-p", "no:cacheprovider",
                                  f"--junitxml={xml}", "-o", "junit_family=xunit1"]),
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    outcomes = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = {c.tag for c in case}
        outcomes[case.get("name")] = ("failed" if kinds & {"failure", "error"} else
                                      "skipped" if "skipped" in kinds else "passed")
    return outcomes


@pytest.mark.parametrize("xy", sorted(PYTHONS))
def test_wheel_installs_outside_the_checkout_and_runs_the_recipes(xy, tmp_path, can_hide):
    whl = wheel_for(xy)
    names = zipfile.ZipFile(whl).namelist()
    assert any(n.startswith("tether/_native.cpython-") and n.endswith(".so") for n in names)
    assert "tether/_help.py" in names and "tether/py.typed" in names
    assert not any(n.endswith((".c", ".h", ".o", ".a")) for n in names), names  # built, not sources
    # auditwheel's copies of the linked libraries; OpenSSL, curl, libpq and
    # libmariadb are loaded from the system on first use
    libs = {n.split("/")[1].split("-")[0] for n in names if n.startswith("tether_native.libs/") and n[-1] != "/"}
    assert {"libjansson", "libb2", "libzstd", "libsqlite3"} <= libs, libs
    meta = zipfile.ZipFile(whl).read(f"tether_native-{VERSION}.dist-info/METADATA").decode()
    assert f"\nVersion: {VERSION}\n" in meta
    env = clean_env(tmp_path / "home")
    py = fresh_venv(xy, tmp_path / "venv", env, str(whl), PYTEST)
    so = next((tmp_path / "venv").glob("lib/python*/site-packages/tether/_native.cpython-*.so"))
    ldd = subprocess.run(hidden(["ldd", str(so)]), env=env, capture_output=True, text=True, check=True).stdout
    assert "not found" not in ldd and str(TOP) not in ldd, ldd
    outcomes = run_recipes(py, tmp_path, env)
    assert {n: outcomes.get(n) for n in MUST_PASS} == {n: "passed" for n in MUST_PASS}, outcomes


def test_sdist_builds_a_wheel_without_the_checkout(tmp_path, can_hide):
    sdist = artifact(f"tether_native-{VERSION}.tar.gz")
    with tarfile.open(sdist) as t:
        names = t.getnames()
        t.extractall(tmp_path / "src", filter="data")
    top = f"tether_native-{VERSION}"
    for rel in ("setup.py", "pyproject.toml", "tools/gen_help.py", "src/tether/_native.c",
                "libtether/CMakeLists.txt", "libtether/include/tether/tether.h", "libtether/src/engine/kernel/repo.c",
                "libtether/cmake/package.cmake", "libtether/libtether.pc.in"):
        assert f"{top}/{rel}" in names, rel
    # libtether's sources and build files, not its tests nor anything built
    assert not any(n.startswith((f"{top}/libtether/tests", f"{top}/build")) or n.endswith((".so", ".a", ".o"))
                   for n in names)
    env = clean_env(tmp_path / "home")
    py = fresh_venv("3.11", tmp_path / "venv", env, SETUPTOOLS, PYTEST)
    build = subprocess.run(hidden([str(py), "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                                   "--no-build-isolation", "-w", str(tmp_path / "wheels"), str(tmp_path / "src" / top)]),
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (whl,) = (tmp_path / "wheels").glob(f"tether_native-{VERSION}-cp311-cp311-linux_x86_64.whl")
    p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(whl)],
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    outcomes = run_recipes(py, tmp_path, env)
    assert {n: outcomes.get(n) for n in MUST_PASS} == {n: "passed" for n in MUST_PASS}, outcomes
