"""tt_path_normalize / tt_realpath against Python's os.path.normpath /
os.path.realpath (strict=False), which tether-vcs uses for the same job.

The helper `tt_paths` (tests/tools/tt_paths.c) reads paths on stdin and
prints "<normalize>\t<realpath>" per line; it runs in the same directory as
this process, over a tree with relative, absolute, dangling, chained and
looping symlinks.
"""
from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

COMPONENTS = ["a", "b", "c", "..", ".", "", "l1", "loop1", "loop2", "self",
              "fl", "dd", "abs", "dangling", "rel2", "chain", "nope", "dot", "...", "up"]


def make_tree(root: Path) -> None:
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "d").mkdir()
    (root / "a" / "f").write_text("")
    links = {
        "l1": "a/b",
        "loop1": "loop2",
        "loop2": "loop1",
        "a/b/up": "../d",
        "self": "self/x",
        "dangling": "missing/deeper",
        "dot": ".",
        "dd": "..",
        "rel2": "l1/../c",
        "fl": "a/f",
        "abs": str(root / "a"),
        "chain": "chain2/c",
        "chain2": "l1",
        "a/b/c/back": "../../../l1",
        "rootlink": "/",
    }
    for name, target in links.items():
        os.symlink(target, root / name)


FIXED = [
    "", ".", "..", "/", "//", "///", "////a", "//a//b/", "/..", "/../..", "a/..",
    "a/../..", "../a/../b", "./a/./b/.", "a//b", "a/b/c/../../..", "../../x",
    "/a/b/../../..", "//..", "//a/..", "..//..", ".../x", "a/./../b", "a/b/",
    "l1", "l1/c", "l1/..", "l1/../c", "loop1", "loop1/x/y", "loop2/../z",
    "a/b/up/../..", "abs/b/c", "self", "self/a", "dangling", "dangling/../q",
    "dot/dot/a", "rel2", "fl/x", "fl/..", "nonexist/../a", "nonexist/x/../y",
    "a/f/../b", "chain", "chain/..", "a/b/c/back", "a/b/c/back/../..",
    "rootlink/tmp/..", "rootlink", "x/../../l1",
]


def random_paths(root: Path, count: int) -> list[str]:
    rng = random.Random(20240611)
    out = []
    for _ in range(count):
        parts = [rng.choice(COMPONENTS) for _ in range(rng.randint(1, 7))]
        p = "/".join(parts)
        r = rng.random()
        if r < 0.3:
            p = f"{root}/{p}"
        elif r < 0.35:
            p = "/" + p
        elif r < 0.4:
            p = "//" + p
        out.append(p)
    return out


def test_paths_match_python(tmp_path: Path, build_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helper = build_dir / "tt_paths"
    if not helper.exists():
        pytest.fail(f"helper not built: {helper}")
    root = tmp_path / "tree"
    root.mkdir()
    make_tree(root)
    inputs = FIXED + [f"{root}/{p}" for p in FIXED if p and not p.startswith("/")]
    inputs += random_paths(root, 600)

    proc = subprocess.run([str(helper)], cwd=root, input="".join(p + "\n" for p in inputs),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = proc.stdout.split("\n")
    assert got[-1] == ""
    got = got[:-1]
    assert len(got) == len(inputs)

    monkeypatch.chdir(root)
    mismatches = []
    for path, line in zip(inputs, got):
        want = f"{os.path.normpath(path) if path else '.'}\t{os.path.realpath(path)}"
        if line != want:
            mismatches.append(f"{path!r}: got {line!r}, want {want!r}")
    assert not mismatches, "\n".join(mismatches[:20])
