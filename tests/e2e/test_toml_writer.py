"""The TOML writer must produce exactly what tomlkit (which tether-vcs uses
to write its files) produces, byte for byte.

`toml_dump` reads a JSON document and prints toml_write(toml_from_json(..));
`toml_decoder` prints our parse of a TOML document in toml-test's tagged
JSON.  inf/nan cannot travel through JSON: the unit tests cover them.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

tomlkit = pytest.importorskip("tomlkit")

DOCS: dict[str, dict] = {
    "scalars": {"s": "x", "i": 1, "f": 0.5, "b": True},
    "super-tables": {"a": {"b": {"c": 1}}},
    # A value added after a table is written above it, with no blank line.
    "value-after-table": {"t": {"a": 1}, "x": 2},
    "headers-and-blank-lines": {"a": 1, "b": {"c": 2, "d": {"e": 3}}, "f": "x"},
    # No blank line before the first [[t.aot]]: the array came first.
    "array-of-tables": {"x": 1, "t": {"aot": [{"a": 1}, {"b": 2}], "z": 3}},
    "aot-subtables-and-empty-elements": {
        "aot": [{"t": {"a": 1}, "x": 1, "s": [{"q": {}}]}, {}, {}, {"k": 1}],
    },
    "aot-nested": {"a": [{"b": [{"c": [{"d": 1}]}], "e": 2}]},
    "inline-tables-in-arrays": {
        "arr": [1, {"x": {"a": 1, "b": {"c": 2}}, "y": 0}],
        "arr2": [{"x": 1}, 2],
        "nested": [[{"a": 1}], []],
    },
    "empty-tables": {"a": {}, "b": {"c": {}, "d": {}}, "e": [], "f": [[]]},
    "key-quoting": {
        "k y": 1, "\u00e4": 2, "a.b": 3, "": 4, 'a"b\n': 5, "A-Z_9": 6,
        "tab\there": {"\u0001": 1, "bare_key-1": 2},
    },
    "string-escapes": {
        "s": 'a"b\\c\b\t\n\f\r\x1f\x7f\x00\u00e9\u2028\U0001F600',
        "e": "",
        "quotes": "'''\"\"\"",
    },
    "floats": {
        "f": [0.1, 1e16, 1e-07, -0.0, 1.0, 1.2345678901234568e17, 1e22, 5e-324,
              1.7976931348623157e308, 123456.789, 1e-4, 0.0001234],
    },
    "integers": {"i": [2**63 - 1, -(2**63), 0, -1, 10**15]},
    "booleans": {"t": True, "f": False, "arr": [True, False]},
    "top-level-ordering": {
        "t1": {"x": 1}, "v": 1, "aot": [{"a": 1}], "w": [1, 2],
        "t2": {"y": {"z": 1}}, "u": "s",
    },
    "manifest-like": {
        "key": "data/x", "kind": "file", "recoverable": True,
        "locator": {"path": "x.csv", "branch": "main"},
        "policy": {"immutable": False, "retain": 3},
        "state": {"hash": "b2:abc", "size": 10, "parts": [{"n": 1}, {"n": 2}]},
        "pin": {"commit": "deadbeef"},
    },
    "config-like": {
        "tether": {"version": 1}, "dataset": {"id": "ds-1"},
        "snapshot": {"auto": True},
        "backends": {"s3": {"kind": "s3", "opts": {"region": "eu"}}, "local": {}},
    },
}


def run(exe: Path, data: bytes) -> subprocess.CompletedProcess[bytes]:
    if not exe.exists():
        pytest.fail(f"helper not built: {exe}")
    return subprocess.run([str(exe)], input=data, capture_output=True, timeout=60)


def dump(build_dir: Path, doc: dict) -> str:
    proc = run(build_dir / "toml_dump", json.dumps(doc).encode())
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode("utf-8")


def untag(j):
    """toml-test's tagged JSON back to plain values."""
    if isinstance(j, dict):
        if set(j) == {"type", "value"} and isinstance(j["type"], str):
            t, v = j["type"], j["value"]
            if t == "integer":
                return int(v)
            if t == "float":
                return float(v)
            if t == "bool":
                return v == "true"
            return v
        return {k: untag(v) for k, v in j.items()}
    return [untag(x) for x in j]


def same(a, b) -> bool:
    """Equality that also tells -0.0 from 0.0 and keeps types apart."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


@pytest.mark.parametrize("name", sorted(DOCS))
def test_dump_matches_tomlkit(build_dir: Path, name: str) -> None:
    doc = DOCS[name]
    ours = dump(build_dir, doc)
    assert ours == tomlkit.dumps(doc)
    assert same(tomlkit.loads(ours).unwrap(), doc)


@pytest.mark.parametrize("name", sorted(DOCS))
def test_our_decoder_reads_our_output(build_dir: Path, name: str) -> None:
    doc = DOCS[name]
    proc = run(build_dir / "toml_decoder", dump(build_dir, doc).encode())
    assert proc.returncode == 0, proc.stderr.decode()
    assert same(untag(json.loads(proc.stdout)), doc)


def test_document_api_writes_the_same(build_dir: Path) -> None:
    """tether-vcs builds a tomlkit.document() key by key; same bytes."""
    doc = DOCS["manifest-like"]
    tk = tomlkit.document()
    for k, v in doc.items():
        tk[k] = v
    assert dump(build_dir, doc) == tomlkit.dumps(tk)


def test_nulls_are_dropped(build_dir: Path) -> None:
    doc = {"a": None, "b": {"c": None, "d": 1}, "e": [1, None, {"f": None}]}
    want = {"b": {"d": 1}, "e": [1, {}]}
    assert dump(build_dir, doc) == tomlkit.dumps(want)
