"""Ids and hashes: the C implementation against tether-vcs itself.

Every expected value is computed here by tether-vcs's own functions
(tether.manifest) or by Python's json module; the C side is driven through
the tests/tools/tt_ids helper (one JSON case per line in, one JSON string per
line out).  Both must agree byte for byte.
"""
from __future__ import annotations

import json
import random
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tether.manifest import (
    ObjectManifest,
    Pin,
    Policy,
    _blake,
    bookmark_slug,
    canonical_bytes,
    compute_pin_id,
    listing_name,
    manifest_hash,
    pin_dataset,
    pin_id_of_ref,
    working_ref_name,
)

DS = "4e9503fc"

# --------------------------------------------------------------------------- #
# The table of awkward values
# --------------------------------------------------------------------------- #
VALUES: list[tuple[str, Any]] = [
    ("empty-dict", {}),
    ("empty-list", []),
    ("null", None),
    ("true", True),
    ("false", False),
    ("zero", 0),
    ("minus-one", -1),
    ("int64-max", 2**63 - 1),
    ("int64-min", -(2**63)),
    ("int-past-2^53", 9007199254740993),
    ("float-0.1", 0.1),
    ("float-1e16", 1e16),
    ("float-1e15", 1e15),
    ("float-neg-zero", -0.0),
    ("float-1e-7", 1e-7),
    ("float-1e-05", 1e-05),
    ("float-0.0001", 0.0001),
    ("float-big-integral", 123456789012345678.0),
    ("float-denormal-min", 5e-324),
    ("float-max", 1.7976931348623157e308),
    ("float-100", 100.0),
    ("float-0.1+0.2", 0.1 + 0.2),
    ("float-list", [1e22, 1e300, 2.5e-5, -1.5, 1.0, 2.0**-1074 * 3, 1 / 3]),
    ("empty-string", ""),
    ("plain-string", "plain"),
    ("quotes-backslashes", 'say "hi" \\ back\\slash \\u0000 not-an-escape / slash'),
    ("control-chars", "\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f\x7f"),
    ("precomposed-vs-combining", ["\u00e9", "e\u0301", "\u1e17", "o\u0308\u0304"]),
    ("emoji", "\U0001f600\U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467"),
    ("line-separators", "a\u2028b\u2029c\u0085d"),
    ("noncharacters-bom", "\ufeff\ufffe\uffff\U0010ffff"),
    ("cjk-rtl", {"\u6570\u636e\u96c6": "\u05e9\u05dc\u05d5\u05dd", "\u0627\u0644": "\u0661\u0662"}),
    ("utf16-vs-codepoint-keys", {"\uffff": 1, "\U0001f600": 2, "\ue000": 3, "\ud7ff": 4,
                                 "\U00010000": 5}),
    ("case-and-accent-keys", {"a": 1, "A": 2, "\u00e1": 3, "a\u0301": 4, "b": 5, "": 6,
                              " ": 7, "_": 8, "~": 9, "\x7f": 10}),
    ("control-keys", {"\n": "nl", "\t": "tab", "\x1f": "us", '"': "q", "\\": "bs"}),
    ("numeric-string-keys", {str(i): i for i in (10, 9, 1, 100, 2, 0, -1)}),
    ("nested-locator", {
        "uri": "s3://bucket/prefix/\u00fcber data/",
        "branch": "main",
        "storage_options": {"region": "eu-west-1", "anon": True, "retries": 3,
                            "endpoint": None, "timeout": 2.5},
        "catalog": {"type": "rest", "warehouse": "wh", "props": [{"k": "v"}, []]},
    }),
    ("deep-nesting", {"a": {"b": {"c": {"d": {"e": [[[[[]]]], {}, [{}]]}}}}}),
    ("mixed-list", [1, 1.0, "1", None, True, False, [], {}, [None], {"": None}]),
    ("json-looking-string", '{"a":1, "b":[2]}'),
    ("long-string", "x\u00e9\U0001f600" * 3000),
    ("many-keys", {f"k{i:03d}\u00e9": i * 1.5 for i in range(150)}),
    ("negative-floats", [-0.1, -1e-7, -1e16, -5e-324, -1.7976931348623157e308]),
    ("git-state", {"sha": "0" * 40, "dirty": False, "change_id": None}),
    ("icechunk-state", {"snapshot_id": "1CECHNKREP0F1RSTCMT0", "n": 0}),
]

KINDS = ["git", "file", "icechunk", "memory", "", "k\u00efnd \U0001f600", 'q"\\\n']


def _ids(table: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in table]


# --------------------------------------------------------------------------- #
# Driving the helper
# --------------------------------------------------------------------------- #
def run_tool(build_dir: Path, cases: list[dict], *, ascii_input: bool = True) -> list[Any]:
    exe = build_dir / "tt_ids"
    if not exe.exists():
        pytest.fail(f"tt_ids not built: {exe}")
    text = "".join(
        json.dumps(c, ensure_ascii=ascii_input, allow_nan=True) + "\n" for c in cases
    )
    proc = subprocess.run(
        [str(exe)], input=text.encode("utf-8"), capture_output=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    out = proc.stdout.decode("ascii")
    lines = out.split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    assert len(lines) == len(cases), out
    return [json.loads(line) for line in lines]


def ours(build_dir: Path, case: dict, **kw: Any) -> Any:
    (res,) = run_tool(build_dir, [case], **kw)
    if isinstance(res, dict):
        pytest.fail(f"tt_ids refused {case['op']}: {res.get('error')}")
    return res


# --------------------------------------------------------------------------- #
# JSON writers
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("ascii_input", [True, False], ids=["ascii-in", "utf8-in"])
@pytest.mark.parametrize("value", [v for _, v in VALUES], ids=_ids(VALUES))
def test_canonical(build_dir: Path, value: Any, ascii_input: bool) -> None:
    want = canonical_bytes(value).decode("utf-8")
    assert ours(build_dir, {"op": "canonical", "value": value}, ascii_input=ascii_input) == want


@pytest.mark.parametrize("value", [v for _, v in VALUES], ids=_ids(VALUES))
def test_pretty(build_dir: Path, value: Any) -> None:
    assert ours(build_dir, {"op": "pretty", "value": value}) == json.dumps(value, indent=2)


# --------------------------------------------------------------------------- #
# Pin ids and listing names
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("value", [v for _, v in VALUES], ids=_ids(VALUES))
def test_pin_id_and_listing_name(build_dir: Path, value: Any) -> None:
    cases = []
    want = []
    for kind in KINDS:
        identity = {"uri": "s3://b/k", "v": value}
        state = {"snapshot_id": value, "\U0001f600": [value]}
        cases.append({"op": "pin_id", "dataset": DS, "kind": kind,
                      "identity": identity, "state": state})
        want.append(compute_pin_id(kind, identity, state, DS))
        cases.append({"op": "listing_name", "kind": kind,
                      "identity": identity, "state": state})
        want.append(listing_name(kind, identity, state))
    if isinstance(value, dict):
        # The value itself as identity and as state.
        cases.append({"op": "pin_id", "dataset": DS, "kind": "git",
                      "identity": value, "state": value})
        want.append(compute_pin_id("git", value, value, DS))
        cases.append({"op": "listing_name", "kind": "git", "identity": {}, "state": value})
        want.append(listing_name("git", {}, value))
    assert run_tool(build_dir, cases) == want


@pytest.mark.parametrize(
    "dataset", [DS, "00000000", "0123456789abcdef", "abc", "", "\u00e9" * 9, "\U0001f600x" * 5]
)
def test_pin_id_dataset_prefix(build_dir: Path, dataset: str) -> None:
    identity, state = {"path": "/data/repo"}, {"sha": "0" * 40}
    got = ours(build_dir, {"op": "pin_id", "dataset": dataset, "kind": "git",
                           "identity": identity, "state": state})
    assert got == compute_pin_id("git", identity, state, dataset)


def test_pin_id_worked_example(build_dir: Path) -> None:
    got = ours(build_dir, {"op": "pin_id", "dataset": DS, "kind": "git",
                           "identity": {"path": "/data/repo"}, "state": {"sha": "0" * 40}})
    assert got == "4e9503fc.e480353842b2a741"


# --------------------------------------------------------------------------- #
# Manifest hash
# --------------------------------------------------------------------------- #
def _manifests() -> list[dict[str, ObjectManifest]]:
    sets: list[dict[str, ObjectManifest]] = [{}]
    keys = ["a", "b/c", "\u00e9", "\uffff", "\U0001f600", "Z", "a b", "a/b", "a-b", "a_b",
            "k\u0301", "\u6570\u636e"]
    one: dict[str, ObjectManifest] = {}
    for i, key in enumerate(keys):
        _, value = VALUES[i * 3 % len(VALUES)]
        pin = None
        if i % 2:
            pid = compute_pin_id("git", {"k": key}, {"v": value}, DS)
            pin = Pin(id=pid, ref=f"tether.{pid}")
        one[key] = ObjectManifest(
            key=key,
            kind=KINDS[i % len(KINDS)],
            locator={"uri": f"s3://bucket/{key}", "v": value},
            policy=Policy(file="versioned" if i % 3 == 0 else "immutable",
                          pin="record" if i % 4 == 0 else "native"),
            state={"value": value, "n": i} if i % 5 else None,
            pin=pin,
            recoverable=bool(i % 2),
        )
    sets.append(one)
    sets.append({"only": ObjectManifest(key="only", kind="git", locator={"path": "/x"})})
    for _, value in VALUES[:20]:
        sets.append({
            "k1": ObjectManifest(key="k1", kind="file", locator={"v": value}, state={"v": value}),
            "k0": ObjectManifest(key="k0", kind="memory", locator={"system": "s", "branch": "b"}),
        })
    return sets


@pytest.mark.parametrize("objects", _manifests())
def test_manifest_hash(build_dir: Path, objects: dict[str, ObjectManifest]) -> None:
    entries = [[k, m.canonical().decode("utf-8")] for k, m in objects.items()]
    random.Random(len(entries)).shuffle(entries)  # the C side must sort them itself
    got = ours(build_dir, {"op": "manifest_hash", "entries": entries})
    assert got == manifest_hash(objects)


def test_manifest_hash_duplicate_key_refused(build_dir: Path) -> None:
    (res,) = run_tool(build_dir, [{"op": "manifest_hash", "entries": [["a", "{}"], ["a", "{}"]]}])
    assert isinstance(res, dict) and "duplicate" in res["error"]


# --------------------------------------------------------------------------- #
# Ref names
# --------------------------------------------------------------------------- #
BOOKMARKS = [
    "main", "relabel", "ok_name-1", "feat/x", "feat.x", "", "-", "///", "\u00e9", "-a-",
    "a b", "a--b", "__", "release/v1.2.3", "\U0001f600", "x\ny", "tab\there",
    "UPPER/lower", "a/b/c.d", "e\u0301", "very/" * 40, "..", "name.2", "caf\u00e9-au-lait",
    "\u00e9t\u00e9/\u00e9t\u00e9",
]


@pytest.mark.parametrize("bookmark", BOOKMARKS)
def test_working_ref_and_slug(build_dir: Path, bookmark: str) -> None:
    cases = [
        {"op": "bookmark_slug", "bookmark": bookmark},
        {"op": "working_ref", "dataset": DS, "bookmark": bookmark},
        {"op": "working_ref", "dataset": "0123456789", "bookmark": bookmark},
    ]
    want = [
        bookmark_slug(bookmark),
        working_ref_name(DS, bookmark),
        working_ref_name("0123456789", bookmark),
    ]
    assert run_tool(build_dir, cases) == want


REFS = [
    f"tether.{DS}.0123456789abcdef",
    f"tether.{DS}.0123456789abcdef.2",
    f"tether.{DS}.0123456789abcdef.1000",
    f"tether.{DS}.0123456789abcdef.",
    f"tether.{DS}.0123456789abcdef.x",
    f"tether.{DS}.0123456789abcdef.1.2",
    f"tether.{DS}.0123456789abcdef.\u00b2",        # superscript two: isdigit()
    f"tether.{DS}.0123456789abcdef.\u0663",        # Arabic-Indic three
    f"tether.{DS}.0123456789abcdef.\U0001d7d8",    # double-struck zero
    f"tether.{DS}.0123456789abcdef.\u2460",        # circled one
    f"tether.{DS}.0123456789abcdef.\u00bd",        # one half: numeric, not a digit
    f"tether.{DS}.0123456789abcdef.\u2164",        # Roman numeral five: not a digit
    f"tether.{DS}.0123456789abcdef.\uff11",        # fullwidth one
    f"tether.{DS}.5",
    f"tether.{DS}..2",
    f"tether.{DS}.",
    f"tether.{DS}",
    f"tether.ws.{DS}.main",
    f"tether.owner.{DS}",
    f"tether.{DS.upper()}.0123456789abcdef",
    f"refs/tags/tether.{DS}.0123456789abcdef",
    "tether.",
    "tether",
    "",
    f"tether.{DS}." + "a" * 200,
    f"tether.{DS}." + "a" * 200 + ".7",
    f"tether.{DS}.\u00e9\U0001f600",
]


@pytest.mark.parametrize("ref", REFS)
def test_pin_id_of_ref(build_dir: Path, ref: str) -> None:
    assert ours(build_dir, {"op": "pin_id_of_ref", "ref": ref}) == pin_id_of_ref(ref)


@pytest.mark.parametrize("pin", [r[len("tether."):] for r in REFS] + ["x.y", ".y", "4e9503fc.a.b"])
def test_pin_dataset(build_dir: Path, pin: str) -> None:
    assert ours(build_dir, {"op": "pin_dataset", "pin": pin}) == pin_dataset(pin)


# --------------------------------------------------------------------------- #
# The framed BLAKE2b itself
# --------------------------------------------------------------------------- #
def test_blake_parts(build_dir: Path) -> None:
    rng = random.Random(7)
    cases, want = [], []
    for size in (1, 6, 8, 16, 20, 32, 33, 48, 64):
        for nparts in (0, 1, 2, 3, 7):
            parts = ["".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x800),
                                             rng.randrange(0x10000, 0x10ffff)]))
                             for _ in range(rng.randrange(0, 300)))
                     for _ in range(nparts)]
            cases.append({"op": "blake", "parts": parts, "size": size})
            want.append(_blake(*[p.encode("utf-8") for p in parts], size=size))
    assert run_tool(build_dir, cases) == want


# --------------------------------------------------------------------------- #
# Random values: canonical, pretty and pin ids agree
# --------------------------------------------------------------------------- #
_ALPHABET = ["a", "Z", "0", " ", '"', "\\", "/", "\n", "\x00", "\x1f", "\x7f", "\u00e9",
             "e\u0301", "\u2028", "\uffff", "\ue000", "\U0001f600", "\U00010000", "\u6570"]


def _rand_str(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 6)))


def _rand_float(rng: random.Random) -> float:
    while True:
        f = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if f == f and f not in (float("inf"), float("-inf")):
            return f


def _rand_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 3 or r < 0.5:
        return rng.choice([
            None, True, False, rng.randrange(-(2**63), 2**63), rng.randrange(-1000, 1000),
            _rand_float(rng), rng.choice([0.1, 1e16, 1e-7, -0.0, 1e15, 1e-4, 1e-5]),
            round(rng.uniform(-1e6, 1e6), rng.randrange(0, 8)), _rand_str(rng),
        ])
    if r < 0.75:
        return [_rand_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
    keys = {_rand_str(rng).replace("\x00", "") for _ in range(rng.randrange(0, 6))}
    return {k: _rand_value(rng, depth + 1) for k in keys}


def test_random_values(build_dir: Path) -> None:
    rng = random.Random(20240611)
    values = [_rand_value(rng) for _ in range(400)]
    cases, want = [], []
    for v in values:
        cases.append({"op": "canonical", "value": v})
        want.append(canonical_bytes(v).decode("utf-8"))
        cases.append({"op": "pretty", "value": v})
        want.append(json.dumps(v, indent=2))
        cases.append({"op": "pin_id", "dataset": DS, "kind": "file",
                      "identity": {"v": v}, "state": {"s": v}})
        want.append(compute_pin_id("file", {"v": v}, {"s": v}, DS))
    got = run_tool(build_dir, cases)
    for case, g, w in zip(cases, got, want):
        assert g == w, case


# --------------------------------------------------------------------------- #
# Known divergences: values jansson cannot hold are refused, never mis-hashed
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "value",
    [float("inf"), float("-inf"), float("nan"), [1.0, float("nan")], {"x": float("inf")},
     2**63, -(2**63) - 1, 10**30, {"a\x00": 1}],
    ids=["inf", "-inf", "nan", "nan-in-list", "inf-in-dict", "2^63", "-2^63-1", "10^30",
         "nul-in-key"],
)
def test_unrepresentable_values_are_refused(build_dir: Path, value: Any) -> None:
    # tether-vcs hashes these (NaN as "NaN", big ints exactly, NUL keys as
    # "\u0000"); jansson's parser cannot represent them, so the C side must
    # refuse the input rather than produce a different id.
    canonical_bytes(value)  # Python accepts it
    for op in ("canonical", "pin_id"):
        case = {"op": op, "value": value, "dataset": DS, "kind": "k",
                "identity": {"v": value}, "state": {}}
        (res,) = run_tool(build_dir, [case])
        assert isinstance(res, dict) and "error" in res, res
