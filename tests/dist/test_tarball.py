"""The release tarball (`make dist`): unpacked to a temporary prefix, it runs
the quickstart from there, builds a program through its pkg-config file,
and keeps working when the tree is moved (RPATH $ORIGIN/../lib, a .pc that
finds its prefix from its own place)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import TOP, VERSION, artifact, clean_env, ducklake_status, libduckdb_so, query_42, quickstart

NAME = f"tether-{VERSION}-linux-x86_64"
NEEDED = ["bin/tether", "lib/libtether.so", f"lib/libtether.so.{VERSION}", "lib/libtether.a",
          "include/tether/tether.h", "include/tether/error.h", "lib/pkgconfig/libtether.pc",
          "share/man/man1/tether.1", "share/man/man1/tether-status.1",
          "share/bash-completion/completions/tether", "share/zsh/site-functions/_tether",
          "share/fish/vendor_completions.d/tether.fish", "INSTALL"]


@pytest.fixture(scope="module")
def tarball() -> Path:
    return artifact(f"{NAME}.tar.gz")


@pytest.fixture
def prefix(tarball, tmp_path) -> Path:
    with tarfile.open(tarball) as t:
        t.extractall(tmp_path / "unpacked", filter="data")
    return tmp_path / "unpacked" / NAME


def runpath(elf: Path) -> str:
    out = subprocess.run(["readelf", "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    return " ".join(ln.split("[", 1)[1].rstrip("]") for ln in out.splitlines() if "RUNPATH" in ln or "RPATH" in ln)


def test_tarball_holds_everything_under_one_directory(tarball):
    with tarfile.open(tarball) as t:
        names = t.getnames()
        assert all(n == NAME or n.startswith(NAME + "/") for n in names), names[:5]
        assert all(m.uid == 0 and m.gid == 0 for m in t.getmembers())
    for rel in NEEDED:
        assert f"{NAME}/{rel}" in names, rel
    text = (tarfile.open(tarball).extractfile(f"{NAME}/INSTALL").read().decode())
    assert f"tether {VERSION}" in text and "$ORIGIN/../lib" in text


def test_binary_and_library_find_their_neighbours_relative_to_themselves(prefix):
    assert runpath(prefix / "bin" / "tether") == "$ORIGIN/../lib"
    assert runpath(prefix / "lib" / f"libtether.so.{VERSION}") == "$ORIGIN/../lib"
    # no directory of the build machine in what is shipped
    for f in (prefix / "bin" / "tether", prefix / "lib" / f"libtether.so.{VERSION}"):
        data = f.read_bytes()
        assert str(TOP).encode() not in data and b"tether-tools" not in data, f


def test_quickstart_runs_from_the_unpacked_prefix(prefix, tmp_path):
    env = clean_env(tmp_path / "home")
    tether = str(prefix / "bin" / "tether")
    out = subprocess.run([tether, "--version"], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith(f"tether {VERSION} ("), out
    quickstart(tether, tmp_path / "demo", env)


def test_pkg_config_builds_a_program_and_the_tree_moves(prefix, tmp_path):
    env = clean_env(tmp_path / "home")
    moved = tmp_path / "elsewhere" / "opt"
    moved.parent.mkdir()
    shutil.move(str(prefix), str(moved))  # relocated after unpacking
    pc = {**env, "PKG_CONFIG_PATH": str(moved / "lib" / "pkgconfig")}
    ver = subprocess.run(["pkg-config", "--modversion", "libtether"], env=pc, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert ver == VERSION
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libtether"], env=pc, capture_output=True,
                           text=True, check=True).stdout.split()
    dirs = {f[:2]: os.path.normpath(f[2:]) for f in flags if f[:2] in ("-I", "-L")}
    assert dirs == {"-I": str(moved / "include"), "-L": str(moved / "lib")}, flags
    exe = tmp_path / "backends"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", str(TOP / "examples" / "backends.c"), *flags,
                    f"-Wl,-rpath,{moved}/lib", "-o", str(exe)], env=env, check=True)
    kinds = subprocess.run([str(exe)], env=env, capture_output=True, text=True, check=True).stdout
    assert "memory" in kinds.split()
    out = subprocess.run([str(moved / "bin" / "tether"), "--version"], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith(f"tether {VERSION} (")


def test_duckdb_catalogs_and_query_need_libduckdb_and_find_it_beside_libtether(prefix, tmp_path):
    env = clean_env(tmp_path / "home")
    tether = str(prefix / "bin" / "tether")
    without = ducklake_status(tether, tmp_path / "without", env)
    assert without.returncode == 1, without.stdout + without.stderr
    assert "install libduckdb 1.5.5" in without.stderr and "library path" in without.stderr, without.stderr
    q = query_42(tether, tmp_path / "without", env)  # tether query too, with the same words
    assert q.returncode == 1 and "install libduckdb 1.5.5" in q.stderr, q.stdout + q.stderr
    lib = libduckdb_so()
    if lib is None:
        pytest.fail("libduckdb is missing from the tool cache (scripts/setup.sh --test fetches it)")
    shutil.copy(lib, prefix / "lib" / "libduckdb.so")  # what INSTALL says to do
    with_lib = ducklake_status(tether, tmp_path / "with", env)
    assert with_lib.returncode == 0, with_lib.stderr
    assert "lake" in with_lib.stdout
    q = query_42(tether, tmp_path / "with", env)
    assert q.returncode == 0 and "42" in q.stdout.split(), q.stdout + q.stderr
