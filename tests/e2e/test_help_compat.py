"""Every option tether-vcs 0.1.0b7's `--help` lists for a command, long and
short, is one this build's `--help` of that command lists too (read from
both help pages, so a new option of either side is compared by itself)."""
from __future__ import annotations

import re

import pytest

from conftest import REF_TETHER, Runner

WIDE = {"COLUMNS": "250"}  # no option name wrapped across lines


def commands(ref: Runner, tmp_path) -> list[str]:
    text = ref("--help", cwd=tmp_path, env=WIDE).stdout
    return re.findall(r"^  ([a-z][a-z-]*)\s{2,}", text.split("Commands:", 1)[1], re.M)


def options(text: str) -> set[str]:
    """The option names of a help page's option rows (`  -m, --message TEXT  ...`)."""
    found: set[str] = set()
    for line in text.splitlines():
        row = re.match(r"^\s*((?:-{1,2}[A-Za-z][\w-]*(?:\s+[A-Z_\[\]<>.|]+)?(?:,\s*|\s*/\s*|\s+))+)", line)
        if row:
            found.update(re.findall(r"(?<![\w-])(-{1,2}[A-Za-z][\w-]*)", row.group(1)))
    return found


def test_every_tether_vcs_command_is_here(tmp_path, tether, ref):
    ours = tether("--help", cwd=tmp_path, env=WIDE).stdout
    missing = [c for c in commands(ref, tmp_path) if not re.search(rf"^\s+{re.escape(c)}\b", ours, re.M)]
    assert not missing, missing


def test_every_tether_vcs_option_is_here(tmp_path, tether, ref):
    cmds = commands(ref, tmp_path)
    assert len(cmds) >= 27, cmds
    gaps = {}
    for c in cmds:
        theirs = options(ref(c, "--help", cwd=tmp_path, env=WIDE).stdout)
        assert "--help" in theirs, (c, theirs)  # the row parser still reads tether-vcs's layout
        mine = options(tether(c, "--help", cwd=tmp_path, env=WIDE).stdout)
        if theirs - mine:
            gaps[c] = sorted(theirs - mine)
    assert not gaps, gaps
