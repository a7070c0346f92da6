"""Build the `tether._native` extension against libtether.a.

libtether is tether's C library: the checkout around this directory, or in
an sdist the copy of its sources (CMakeLists.txt, cmake/, include/, src/)
that `setup.py sdist` puts in `libtether/` beside this file.  The static
library comes from, in order:

- `TETHER_LIBTETHER_DIR`: a CMake build directory that already holds
  `libtether.a` (the test script points it at the release build, the
  release wheels at the package build);
- otherwise CMake and Ninja (or Make) build it here, in `build-libtether/`
  next to this file, reused on the next install (`TETHER_LIBDUCKDB_DIR`,
  a directory with include/duckdb.h, gives DuckDB-file catalogs).

The version is libtether's, CMake's project(VERSION): one number for the
binary, the .deb, this package and libtether.pc.

`tether/_help.py` (the docstrings' opening: each command's `--help`) is
written at build time from the `tether` binary built beside libtether.a.

The extension links libtether.a statically, so the installed wheel needs
only the shared system libraries libtether itself uses (jansson, libb2,
zstd, zlib, sqlite3: `auditwheel repair` puts them in the wheel; OpenSSL's
libcrypto, libcurl, libpq and libmariadb are opened at run time when first
needed, from the system).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
VENDORED = HERE / "libtether"  # in an sdist
SOURCE = VENDORED if (VENDORED / "CMakeLists.txt").is_file() else HERE.parent  # else the checkout
# What of the checkout an sdist carries: libtether's build and sources.
LIBTETHER_FILES = ["CMakeLists.txt", "libtether.pc.in", "cmake", "include", "src"]
# Keep in step with libtether.pc.in's Requires.private.
SYSTEM_LIBS = ["jansson", "b2", "zstd", "z", "sqlite3", "pthread", "dl"]


def _libtether_dir() -> Path:
    given = os.environ.get("TETHER_LIBTETHER_DIR")
    if given:
        d = Path(given).resolve()
        if not (d / "libtether.a").is_file():
            raise SystemExit(f"TETHER_LIBTETHER_DIR={given}: no libtether.a there; build the library first")
        return d
    if not (SOURCE / "CMakeLists.txt").is_file() or not (SOURCE / "include" / "tether" / "tether.h").is_file():
        raise SystemExit(
            "tether-native builds from a tether checkout (`pip install ./python` from its root) or "
            "from its sdist; neither is here (or set TETHER_LIBTETHER_DIR to a build directory "
            "holding libtether.a)"
        )
    if shutil.which("cmake") is None:
        raise SystemExit("building libtether needs CMake (Debian: apt-get install cmake ninja-build)")
    build = HERE / "build-libtether"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    # A package build: no tests, and no directory of this machine in the
    # library (libduckdb is loaded from the library path).
    opts = ["-DCMAKE_BUILD_TYPE=Release", "-DTETHER_TESTS=OFF", "-DTETHER_LIBDUCKDB_FROM_DIR=OFF"]
    if os.environ.get("TETHER_LIBDUCKDB_DIR"):
        opts.append(f"-DTETHER_LIBDUCKDB_DIR={os.environ['TETHER_LIBDUCKDB_DIR']}")
    subprocess.check_call(["cmake", "-S", str(SOURCE), "-B", str(build), *gen, *opts], stdout=subprocess.DEVNULL)
    # the static library, and the binary beside it that _help.py is taken from
    subprocess.check_call(
        ["cmake", "--build", str(build), "--target", "tether_static", "tether_cli", "-j", str(os.cpu_count() or 2)]
    )
    return build


def _version() -> str:
    """CMake's project(VERSION): the one version number."""
    m = re.search(r"project\(tether\s+VERSION\s+([0-9][0-9.]*)", (SOURCE / "CMakeLists.txt").read_text())
    if not m:
        raise SystemExit(f"{SOURCE / 'CMakeLists.txt'}: no project(tether VERSION x.y.z)")
    return m.group(1)


def _write_help(target: Path) -> None:
    """tether/_help.py from the CLI's own `--help` pages (tools/gen_help.py),
    so the docstrings are the text of the binary built beside libtether."""
    binary = _libtether_dir() / "tether"
    if not binary.is_file():
        raise SystemExit(f"{binary}: no tether binary beside libtether.a to take the --help text from; build it")
    spec = importlib.util.spec_from_file_location("gen_help", HERE / "tools" / "gen_help.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(gen.render(gen.help_texts(str(binary))))


class BuildPyWithHelp(build_py):
    def run(self) -> None:
        super().run()
        _write_help(Path(self.build_lib) / "tether" / "_help.py")


class SdistWithLibtether(sdist):
    """The sdist carries libtether's sources in libtether/, so it builds
    (with CMake and the -dev packages) without a checkout."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        if SOURCE != HERE.parent:
            src, dest = VENDORED, Path(base_dir) / "libtether"  # an sdist of an sdist
        else:
            src, dest = HERE.parent, Path(base_dir) / "libtether"
        for name in LIBTETHER_FILES:
            if (src / name).is_dir():
                shutil.copytree(src / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / name, dest / name)


class BuildWithLibtether(build_ext):
    def build_extensions(self) -> None:
        libdir = _libtether_dir()
        for ext in self.extensions:
            ext.extra_objects = [str(libdir / "libtether.a")]
        super().build_extensions()


setup(
    version=_version(),
    ext_modules=[
        Extension(
            "tether._native",
            sources=["src/tether/_native.c"],
            include_dirs=[str(SOURCE / "include")],
            libraries=SYSTEM_LIBS,
            extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibtether, "build_py": BuildPyWithHelp, "sdist": SdistWithLibtether},
)
