"""Build the `tether._native` extension against libtether.a.

libtether is this repository's C library (one directory up).  The static
library comes from, in order:

- `TETHER_LIBTETHER_DIR`: a CMake build directory that already holds
  `libtether.a` (the test script points it at the release build);
- otherwise CMake and Ninja (or Make) build it here, in `build-libtether/`
  next to this file, reused on the next install.

`tether/_help.py` (the docstrings' opening: each command's `--help`) is
written at build time from the `tether` binary built beside libtether.a.

The extension links libtether.a statically, so the installed wheel needs
only the shared system libraries libtether itself uses (jansson, libb2,
zstd, zlib, sqlite3; OpenSSL's libcrypto, libcurl, libpq and libmariadb
are opened at run time when first needed).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent  # the tether checkout
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
            "tether-native builds from a tether checkout: run `pip install ./python` from its root "
            "(or set TETHER_LIBTETHER_DIR to a build directory holding libtether.a)"
        )
    if shutil.which("cmake") is None:
        raise SystemExit("building libtether needs CMake (Debian: apt-get install cmake ninja-build)")
    build = HERE / "build-libtether"
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.check_call(
        ["cmake", "-S", str(SOURCE), "-B", str(build), *gen, "-DCMAKE_BUILD_TYPE=Release"],
        stdout=subprocess.DEVNULL,
    )
    subprocess.check_call(
        ["cmake", "--build", str(build), "--target", "tether_static", "tether", "-j", str(os.cpu_count() or 2)]
    )
    return build


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


class BuildWithLibtether(build_ext):
    def build_extensions(self) -> None:
        libdir = _libtether_dir()
        for ext in self.extensions:
            ext.extra_objects = [str(libdir / "libtether.a")]
        super().build_extensions()


setup(
    ext_modules=[
        Extension(
            "tether._native",
            sources=["src/tether/_native.c"],
            include_dirs=[str(SOURCE / "include")],
            libraries=SYSTEM_LIBS,
            extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibtether, "build_py": BuildPyWithHelp},
)
