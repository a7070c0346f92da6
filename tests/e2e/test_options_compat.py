"""Every option tether-vcs 0.1.0b7 documents in a command's --help exists in
ours, compared mechanically: the option names of each command's options
section, long and short, parsed from both help pages."""
import re
import subprocess

import pytest

from conftest import REF_TETHER, TETHER_BIN

def run_plain(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


OPTION_LINE = re.compile(r"^\s{1,8}(-[-\w]+(?:[ ,/]+-[-\w]+)*)")


def option_names(exe, *args) -> set[str]:
    p = run_plain([str(exe), *args, "--help"])
    text = p.stdout + p.stderr
    m = re.search(r"^[Oo]ptions:\n(.*?)(?:\n\S|\Z)", text, re.S | re.M)
    assert m, f"`{exe.name} {' '.join(args)} --help` has no options section:\n{text}"
    names = set()
    for line in m.group(1).splitlines():
        mm = OPTION_LINE.match(line)
        if mm:
            names.update(re.findall(r"-{1,2}\w[\w-]*", mm.group(1)))
    return names


def reference_commands() -> list[str]:
    p = run_plain([str(REF_TETHER), "--help"])
    section = p.stdout.split("\nCommands:\n", 1)[-1]
    return re.findall(r"^  ([a-z][a-z-]*)\s", section, re.M)


def test_reference_lists_every_command_we_compare():
    # a parse that found nothing would make the test below vacuous
    assert len(reference_commands()) >= 27


@pytest.mark.parametrize("command", reference_commands())
def test_every_reference_option_exists(command):
    theirs = option_names(REF_TETHER, command)
    ours = option_names(TETHER_BIN, command)
    assert "--help" in theirs and "--help" in ours, (theirs, ours)
    missing = sorted(theirs - ours)
    assert not missing, f"`tether {command}` lacks options tether-vcs has: {missing}"
