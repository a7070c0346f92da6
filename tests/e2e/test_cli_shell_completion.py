"""zsh and fish completion (issue 21), run in the shells themselves: each
script loads without error and completes commands, options, object keys,
bookmarks and kinds.  zsh runs its real completion system in a `zpty`, with
`compadd` wrapped to print the matches it is handed; fish answers
`complete -C`."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git


def need(shell: str) -> str:
    path = shutil.which(shell)
    if not path:
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{shell} is not installed (scripts/setup.sh installs it)")
        pytest.skip(f"{shell} is not installed")
    return path


@pytest.fixture
def ds(git_repo, tether, tmp_path, env):
    """A dataset with objects `tables` and `code`, and bookmarks main and feat."""
    if tether.exe.name != "tether":
        pytest.skip("the scripts call `tether` by name")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("hello\n")
    code = tmp_path / "code"
    git("init", "-q", "-b", "main", str(code), cwd=tmp_path, env=env)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=code, env=env)
    tether("init", cwd=git_repo)
    tether("add", "tables", str(data), "--kind", "file", cwd=git_repo)
    tether("add", "code", str(code), "--kind", "git", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    tether("new", "-b", "feat", cwd=git_repo)
    return git_repo


def shell_env(tether) -> dict[str, str]:
    return dict(tether.env, PATH=f"{tether.exe.parent}:{tether.env.get('PATH', '/usr/bin:/bin')}",
                TERM="xterm")


# Types each line into an interactive `zsh -f` in a zpty, presses TAB, and
# prints "== LINE" then every match compadd was handed ("<m>WORD").  TAB is
# bound to a widget that completes and then prints a marker, so nothing is
# typed ahead of a completion still running (compsys gives up on typeahead);
# the ready sentinel is typed with quotes inside so only the output matches.
ZSH_DRIVER = r"""
zmodload zsh/zpty
dir=$1; shift
zpty z zsh -f -i
zpty -w z "PS1='' PS2='' RPS1=''; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z 'compadd() { if (( ${@[(I)-[OAD]]} )); then builtin compadd "$@"; return; fi; local -a m; builtin compadd -O m "$@"; (( $#m )) && print -rl -- "<m>"${^m}; builtin compadd "$@"; }'
zpty -w z 'zle -C t-complete complete-word _main_complete; t-tab() { zle t-complete; print -r -- "__TAB""DONE__"; }; zle -N t-tab; bindkey "^I" t-tab'
zpty -w z 'echo __RE""ADY__'
zpty -r z all '*__READY__*'
for l in "$@"; do
  zpty -w -n z "$l"$'\t'
  zpty -r z all '*__TABDONE__*'
  zpty -w -n z $'\C-e\C-u'
  print -r -- "== $l"
  print -r -- "$all"
done
zpty -d z
"""


def zsh_complete(tether, cwd: Path, tmp_path: Path, lines: list[str]) -> dict[str, list[str]]:
    zsh = need("zsh")
    fdir = tmp_path / "zfunc"
    fdir.mkdir(exist_ok=True)
    (fdir / "_tether").write_text(tether("completion", "zsh", cwd=cwd).stdout)
    driver = tmp_path / "drive.zsh"
    driver.write_text(ZSH_DRIVER)
    r = subprocess.run([zsh, "-f", str(driver), str(fdir), *lines], cwd=str(cwd),
                       env=shell_env(tether), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out: dict[str, list[str]] = {}
    for section in r.stdout.split("== ")[1:]:
        head, _, body = section.partition("\n")
        # a completion function that failed says so on the terminal
        assert "_tether:" not in body and "_arguments:" not in body and "not found" not in body, body
        out[head] = sorted(set(re.findall(r"<m>([^\r\n]*)", body)))
    assert list(out) == lines, r.stdout
    return out


def test_zsh_script_loads_and_completes(ds, tether, tmp_path):
    zsh = need("zsh")
    script = tmp_path / "_tether"
    script.write_text(tether("completion", "zsh", cwd=ds).stdout)
    r = subprocess.run([zsh, "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = zsh_complete(tether, ds, tmp_path, [
        "tether com", "tether status --j", "tether log -", "tether status ", "tether diff --key c",
        "tether new ", "tether pull f", "tether add x --kind ", "tether completion ",
        "tether open code --w", "tether open code --for ", "tether query --format ", "tether query --for s",
        "tether bookmarks ", "tether bookmarks feat --t", "tether gc --exp",
    ])
    assert got["tether com"] == ["commit", "completion"]
    assert got["tether status --j"] == ["--json"]
    assert {"--limit", "-n", "--json"} <= set(got["tether log -"])
    assert got["tether status "] == ["code", "tables"]
    assert got["tether diff --key c"] == ["code"]
    assert got["tether new "] == ["feat", "main"]
    assert got["tether pull f"] == ["feat"]
    assert {"file", "git", "lance"} <= set(got["tether add x --kind "])
    assert got["tether completion "] == ["bash", "fish", "zsh"]
    assert got["tether open code --w"] == ["--with-password", "--worktree", "--writable"]
    assert got["tether open code --for "] == ["duckdb", "polars", "spark", "trino"]
    assert got["tether query --format "] == ["csv", "json", "table"]
    assert got["tether query --for s"] == ["spark"]
    assert got["tether bookmarks "] == ["feat", "main"]
    assert got["tether bookmarks feat --t"] == ["--ttl"]
    assert got["tether gc --exp"] == ["--expired"]


def fish_complete(tether, cwd: Path, tmp_path: Path, lines: list[str]) -> dict[str, list[str]]:
    fish = need("fish")
    script = tmp_path / "tether.fish"
    script.write_text(tether("completion", "fish", cwd=cwd).stdout)
    prog = f"source {script}\n" + "".join(
        f"echo '== {l}'\ncomplete -C '{l}'\n" for l in lines)
    r = subprocess.run([fish, "--no-config", "-c", prog], cwd=str(cwd), env=shell_env(tether),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    out: dict[str, list[str]] = {}
    for section in r.stdout.split("== ")[1:]:
        head, _, body = section.partition("\n")
        out[head] = sorted(line.split("\t")[0] for line in body.splitlines() if line)
    assert list(out) == lines, r.stdout
    return out


def test_fish_script_loads_and_completes(ds, tether, tmp_path):
    fish = need("fish")
    script = tmp_path / "tether.fish"
    script.write_text(tether("completion", "fish", cwd=ds).stdout)
    r = subprocess.run([fish, "--no-config", "--no-execute", str(script)], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = fish_complete(tether, ds, tmp_path, [
        "tether com", "tether status --j", "tether log -", "tether status ", "tether diff --key c",
        "tether new ", "tether pull f", "tether add x --kind ", "tether completion ",
        "tether open code --w", "tether open code --for ", "tether query --format ", "tether query --for s",
        "tether bookmarks ", "tether bookmarks feat --t", "tether gc --exp",
    ])
    assert got["tether com"] == ["commit", "completion"]
    assert got["tether status --j"] == ["--json"]
    assert {"--limit", "-n", "--json"} <= set(got["tether log -"])
    assert got["tether status "] == ["code", "tables"]
    assert got["tether diff --key c"] == ["code"]
    assert got["tether new "] == ["feat", "main"]
    assert got["tether pull f"] == ["feat"]
    assert {"file", "git", "lance"} <= set(got["tether add x --kind "])
    assert got["tether completion "] == ["bash", "fish", "zsh"]
    assert got["tether open code --w"] == ["--with-password", "--worktree", "--writable"]
    assert got["tether open code --for "] == ["duckdb", "polars", "spark", "trino"]
    assert got["tether query --format "] == ["csv", "json", "table"]
    assert got["tether query --for s"] == ["spark"]
    assert got["tether bookmarks "] == ["feat", "main"]
    assert got["tether bookmarks feat --t"] == ["--ttl"]
    assert got["tether gc --exp"] == ["--expired"]


def test_completion_reads_the_dataset_that_dash_C_names(ds, tether, tmp_path):
    """`tether -C DIR status <TAB>` completes DIR's keys, from anywhere."""
    from test_cli_manners import bash_complete

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    rel = os.path.relpath(ds, outside)
    assert bash_complete(tether, outside, ["tether", "-C", rel, "status", ""]) == ["code", "tables"]
    assert bash_complete(tether, outside, ["tether", "-C", rel, "new", "f"]) == ["feat"]
    assert bash_complete(tether, outside, ["tether", "status", ""]) == []  # no dataset here
    # an option's fixed words
    assert bash_complete(tether, outside, ["tether", "query", "--format", ""]) == ["csv", "json", "table"]
    assert bash_complete(tether, outside, ["tether", "open", "x", "--for", "p"]) == ["polars"]
    lines = [f"tether -C {rel} status ", f"tether -C {rel} new f", f"tether -C {rel} log --key t"]
    z = zsh_complete(tether, outside, tmp_path, lines)
    assert z[lines[0]] == ["code", "tables"] and z[lines[1]] == ["feat"] and z[lines[2]] == ["tables"]
    f = fish_complete(tether, outside, tmp_path, lines)
    assert f[lines[0]] == ["code", "tables"] and f[lines[1]] == ["feat"] and f[lines[2]] == ["tables"]
