"""Render tether/_help.py from `tether CMD --help`, so the Python API's
docstrings carry the CLI's own text.  setup.py runs it at build time; by hand:

    python python/tools/gen_help.py build/tether
"""

from __future__ import annotations

import os
import pprint
import subprocess
import sys
from pathlib import Path

COMMANDS = [
    "init", "add", "remove", "set", "snapshot", "status", "commit", "verify", "diff", "log",
    "new", "open", "pull", "promote", "restore", "gc", "ops", "undo", "repair",
    "drop", "abandon", "forget-workspace", "upgrade", "recover", "export", "publish", "import",
    "bookmarks",
]


def help_texts(binary: str) -> dict[str, str]:
    out = {}
    for cmd in COMMANDS:
        env = {**os.environ, "COLUMNS": "80"}  # the width a page is wrapped to off a terminal
        text = subprocess.run([binary, cmd, "--help"], capture_output=True, text=True, check=True,
                              env=env).stdout
        out[cmd] = text.rstrip("\n")
    return out


def render(texts: dict[str, str]) -> str:
    return (
        '"""The CLI\'s `--help` text per command (written at build time by tools/gen_help.py;\n'
        'do not edit): the opening of each `Repo` method\'s docstring."""\n\n'
        f"HELP = {pprint.pformat(texts, width=100)}\n"
    )


if __name__ == "__main__":
    target = Path(__file__).resolve().parent.parent / "src" / "tether" / "_help.py"
    target.write_text(render(help_texts(sys.argv[1])))
