"""The type stubs against the runtime: tether/_native.pyi names every
function and Repo method the extension has, with the same parameters and
defaults (the extension's methods carry their signatures); the Python
layer is typed inline and ships py.typed; the docstrings open with the
installed CLI's --help, written at build time."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
from pathlib import Path

import pytest

import tether

pytestmark = pytest.mark.skipif(not hasattr(tether, "libtether_version"), reason="the libtether package's stubs")

from tether import _native  # noqa: E402

PKG = Path(tether.__file__).parent


def _stub() -> ast.Module:
    return ast.parse((PKG / "_native.pyi").read_text())


def _params(fn: ast.FunctionDef) -> list[tuple[str, object]]:
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults)) + [
        ast.literal_eval(d) for d in args.defaults
    ]
    return [(a.arg, d) for a, d in zip(positional, defaults) if a.arg != "self"]


def _runtime(fn: object) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def test_the_stub_names_every_native_function_and_method():
    tree = _stub()
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    [repo] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Repo"]
    methods = {n.name for n in repo.body if isinstance(n, ast.FunctionDef)} - {"__init__"}
    attrs = {n.target.id for n in repo.body if isinstance(n, ast.AnnAssign)}
    assert funcs == {n for n in dir(_native) if callable(getattr(_native, n)) and n != "Repo"}
    assert methods | attrs == {n for n in dir(_native.Repo) if not n.startswith("__")}


def test_the_stub_gives_each_method_its_runtime_parameters():
    [repo] = [n for n in _stub().body if isinstance(n, ast.ClassDef) and n.name == "Repo"]
    differ = {}
    for fn in repo.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name in ("__init__", "set_progress"):
            continue
        mine, real = _params(fn), _runtime(getattr(_native.Repo, fn.name))
        if mine != real:
            differ[fn.name] = (mine, real)
    assert differ == {}


def test_the_python_api_is_typed_inline():
    assert (PKG / "py.typed").is_file()
    untyped = [
        name for name, fn in vars(tether.Repo).items()
        if not name.startswith("_") and inspect.isfunction(fn) and "return" not in fn.__annotations__
        and name not in ("set", "log")  # aliases of typed methods
    ]
    assert untyped == []


def test_help_is_generated_from_the_cli_it_was_built_with():
    binary = os.environ.get("TETHER_BIN")
    if not binary:
        pytest.skip("TETHER_BIN names the binary")
    from tether import _help

    page = subprocess.run([binary, "drop", "--help"], capture_output=True, text=True, check=True,
                          env={**os.environ, "COLUMNS": "80"}).stdout.rstrip("\n")
    assert _help.HELP["drop"] == page
    assert tether.Repo.drop.__doc__.startswith(page)
