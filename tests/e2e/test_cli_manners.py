"""The command line's manners (issue 21): parsing as git users expect it,
"did you mean", errors under --json, readable text output.  Exit codes stay
those tether-vcs gives on the same input."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import git


@pytest.fixture
def ds(git_repo, tether, tmp_path):
    """A dataset with one committed file object, `tables`."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("hello\n")
    tether("init", cwd=git_repo)
    tether("add", "tables", str(data), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    return git_repo


# --- parsing -------------------------------------------------------------

def test_unknown_command_suggests_the_closest(tmp_path, tether):
    r = tether("comit", cwd=tmp_path, check=False)
    assert r.returncode == 2
    assert "no such command 'comit'" in r.stderr and "did you mean 'commit'?" in r.stderr
    r = tether("help", "stauts", cwd=tmp_path, check=False)
    assert r.returncode == 2 and "did you mean 'status'?" in r.stderr
    r = tether("frobnicate", cwd=tmp_path, check=False)
    assert r.returncode == 2 and "did you mean" not in r.stderr


def test_misspelt_global_option_is_an_option_not_a_command(tmp_path, tether):
    r = tether("--verison", cwd=tmp_path, check=False)
    assert r.returncode == 2
    assert "no such option: --verison" in r.stderr and "did you mean '--version'?" in r.stderr
    assert "command" not in r.stderr.split("\n")[0]


def test_misspelt_command_option_suggests_the_closest(ds, tether):
    r = tether("status", "--jsn", cwd=ds, check=False)
    assert r.returncode == 2 and "did you mean '--json'?" in r.stderr
    r = tether("status", "-json", cwd=ds, check=False)
    assert r.returncode == 2 and "did you mean '--json'?" in r.stderr


def test_misspelt_object_key_suggests_the_closest(ds, tether):
    for args in (("status", "tabels"), ("log", "tabls"), ("remove", "tablse"), ("verify", "tabes"),
                 ("open", "tabless")):
        r = tether(*args, cwd=ds, check=False)
        assert r.returncode == 1, args
        assert "no such object" in r.stderr and "did you mean 'tables'?" in r.stderr, (args, r.stderr)
    r = tether("status", "zzzzzzzz", cwd=ds, check=False)
    assert r.returncode == 1 and "did you mean" not in r.stderr


def test_bare_tether_prints_help_on_stderr_with_exit_2(tmp_path, tether, ref):
    ours, theirs = tether(cwd=tmp_path, check=False), ref(cwd=tmp_path, check=False)
    assert ours.returncode == theirs.returncode == 2
    assert ours.stdout == "" and "usage: tether" in ours.stderr and "commands:" in ours.stderr
    assert tether("--help", cwd=tmp_path).stdout.startswith("usage: tether")


def test_attached_short_values_and_bundles(ds, tether, tmp_path):
    (tmp_path / "more").mkdir()
    tether("add", "more", str(tmp_path / "more"), "--kind", "file", cwd=ds)
    tether("commit", "-msecond", cwd=ds)
    assert git("log", "-1", "--format=%s", cwd=ds, env=tether.env).strip() == "second"
    full = tether.json("ops", cwd=ds)
    one = json.loads(tether("ops", "-n1", "--json", cwd=ds).stdout)
    assert len(full) > 1 and one == full[:1]
    assert json.loads(tether("ops", "--limit=1", "--json", cwd=ds).stdout) == one
    # -c (a flag) bundled with nothing else, and an unknown letter inside a bundle
    r = tether("diff", "-cx", cwd=ds, check=False)
    assert r.returncode == 2 and "no such option: -x (in -cx)" in r.stderr


def test_negative_count_is_a_usage_error(ds, tether):
    # (tether-vcs takes `-n -1` as "no limit"; a negative count is refused here)
    for args in (("log", "tables", "-n", "-1"), ("log", "tables", "-n-1"), ("ops", "-n-1")):
        r = tether(*args, cwd=ds, check=False)
        assert r.returncode == 2 and "not in the range" in r.stderr, args


def test_dash_C_runs_in_another_directory(ds, tether, tmp_path):
    here = tether("status", "--json", cwd=ds).stdout
    assert tether("-C", str(ds), "status", "--json", cwd=tmp_path).stdout == here
    assert tether(f"-C{ds}", "status", "--json", cwd=tmp_path).stdout == here
    # each -C is relative to the one before, as in git
    assert tether("-C", str(ds.parent), "-C", ds.name, "status", "--json", cwd=tmp_path).stdout == here
    r = tether("-C", str(tmp_path / "nope"), "status", cwd=tmp_path, check=False)
    assert r.returncode == 1 and "cannot change to" in r.stderr
    r = tether("-C", cwd=tmp_path, check=False)
    assert r.returncode == 2 and "requires an argument" in r.stderr


def test_double_dash_ends_the_options(ds, tether):
    r = tether("status", "--", "--json", cwd=ds, check=False)
    assert r.returncode == 1 and "no such object: --json" in r.stderr
    assert r.stdout == ""


def test_exit_codes_match_tether_vcs_on_the_same_input(ds, tether, ref, tmp_path):
    cases = [
        ("comit",), ("--verison",), ("status", "--jsn"), ("ops", "-n", "x"), ("log",),
        ("status", "--", "--json"), ("ops", "-n1"), ("status", "--json"), ("--version",),
        ("diff", "--json"), ("verify", "--json"),
    ]
    for args in cases:
        ours, theirs = tether(*args, cwd=ds, check=False), ref(*args, cwd=ds, check=False)
        assert ours.returncode == theirs.returncode, (args, ours.stderr, theirs.stderr)


# --- errors under --json -------------------------------------------------

def test_errors_under_json_are_one_json_object_on_stderr(ds, tether):
    r = tether("status", "tabels", "--json", cwd=ds, check=False)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    e = json.loads(lines[0])["error"]
    assert e["message"] == "no such object: tabels" and e["code"] == "config" and e["exit"] == 1
    assert "did you mean 'tables'?" in e["hint"]
    # a usage error too, with the command's usage line
    r = tether("status", "--json", "--jsn", cwd=ds, check=False)
    assert r.returncode == 2
    e = json.loads(r.stderr.strip())["error"]
    assert e["code"] == "usage" and e["exit"] == 2 and e["usage"].startswith("tether status ")
    assert "--jsn" in e["message"]
    # the CLI's own errors as well
    r = tether("gc", "--force-prune", "--json", cwd=ds, check=False)
    assert r.returncode == 1
    assert json.loads(r.stderr.strip())["error"]["message"] == "--force-prune requires --prune-bookmarks"


def test_errors_without_json_stay_text(ds, tether):
    r = tether("status", "tabels", cwd=ds, check=False)
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == "error: no such object: tabels"
    assert r.stderr.splitlines()[1].startswith("hint: did you mean 'tables'?")
    # after `--`, --json is a positional, not the option
    r = tether("status", "--", "--json", cwd=ds, check=False)
    assert r.stderr.startswith("error: no such object: --json")


def shape(v):
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    return type(v).__name__


def test_json_shapes_and_exit_codes_match_tether_vcs(ds, tether, ref):
    """--json stdout keeps tether-vcs's shapes (compatibility)."""
    for args in (("status", "--json"), ("verify", "--json"), ("diff", "--json"),
                 ("diff", "HEAD", "--json"), ("backends", "--json")):
        ours, theirs = tether(*args, cwd=ds, check=False), ref(*args, cwd=ds, check=False)
        assert ours.returncode == theirs.returncode, args
        o, t = json.loads(ours.stdout), json.loads(theirs.stdout)
        if args[0] == "backends":  # kinds this build has differ; each entry's shape does not
            o, t = next(iter(o.values()), {}) if isinstance(o, dict) else o[:1], \
                next(iter(t.values()), {}) if isinstance(t, dict) else t[:1]
            # the one key added (issue #13): the URI schemes this build reaches
            o = [{k: v for k, v in row.items() if k != "schemes"} for row in o]
        assert shape(o) == shape(t), (args, ours.stdout, theirs.stdout)


# --- human text output ---------------------------------------------------

def run_in_pty(argv, cwd, env, timeout=60):
    """Run argv with stdin/stdout/stderr on a pseudo-terminal; (status, output)."""
    import os
    import pty
    import select
    import time
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(str(cwd))
        os.execve(argv[0], argv, env)
    out = b""
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if fd in r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def test_snapshot_shows_states_by_their_short_form(ds, tether, tmp_path, env):
    code = tmp_path / "code"
    git("init", "-q", "-b", "main", str(code), cwd=tmp_path, env=env)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=code, env=env)
    sha = git("rev-parse", "HEAD", cwd=code, env=env).strip()
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (3 * 1024 * 1024 + 1))
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("add", "big", str(big), "--kind", "file", cwd=ds)
    out = tether("snapshot", cwd=ds).stdout
    assert f"  code: {sha[:12]}\n" in out
    assert "  big: file, 3.0 MiB, " in out
    assert "  tables: dir, 1 file, 6 B, " in out
    assert "{" not in out and "'" not in out
    # --json keeps the states whole
    assert tether.json("snapshot", "code", cwd=ds) == {"code": {"sha": sha, "dirty": False}}


def test_status_header_names_the_dataset_id(ds, tether):
    st = tether.json("status", cwd=ds)
    ds_id = (ds / "tether.toml").read_text().split('[dataset]\nid = "')[1].split('"')[0]
    first = tether("status", cwd=ds).stdout.splitlines()[0]
    assert first.startswith(f"dataset {ds_id} (manifests {st['manifest_hash'][:12]}); on trunk bookmark main")


def test_colour_only_on_a_terminal_and_never_with_NO_COLOR(ds, tether, tmp_path):
    (tmp_path / "more").mkdir()
    tether("add", "more", str(tmp_path / "more"), "--kind", "file", cwd=ds)
    piped = tether("status", "--snapshot", cwd=ds).stdout
    assert "\033[" not in piped and "  new  more  " in piped
    env = dict(tether.env, TERM="xterm")
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot"], ds, env)
    assert rc == 0 and "\033[32m      new\033[0m  more" in out, out
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot"], ds, dict(env, NO_COLOR="1"))
    assert rc == 0 and "\033[" not in out and "  new  more  " in out, out


# --- help pages ----------------------------------------------------------

COMMANDS = ["init", "backends", "add", "set", "remove", "status", "snapshot", "commit", "verify",
            "diff", "log", "new", "open", "pull", "restore", "promote", "gc", "ops", "undo", "repair"]


@pytest.mark.parametrize("columns", [50, 80, 132])
def test_help_pages_fit_the_terminal_width(tmp_path, tether, columns):
    width = min(columns, 100)
    for cmd in COMMANDS:
        page = tether(cmd, "--help", cwd=tmp_path, env={"COLUMNS": str(columns)}).stdout
        for line in page.split("\nexamples:\n")[0].splitlines():
            # only a single unbreakable word may overrun (examples are never
            # wrapped, so they paste whole)
            assert len(line) <= width or " " not in line.strip(), (cmd, columns, line)
        assert page.rstrip().split("\n\n")[-1].startswith("examples:\n  tether "), cmd
        # every description starts in one column; a long name gets its own line
        opts = page.split("\noptions:\n")[1].split("\n\n")[0].splitlines()
        starts = {len(l) - len(l.lstrip()) for l in opts if not l.lstrip().startswith("-")}
        firsts = {m.start(2) for m in (re.match(r"^(\s*-\S.*?)\s{2,}(\S)", l) for l in opts) if m}
        assert len(starts | firsts) <= 1, (cmd, opts)
    top = tether("--help", cwd=tmp_path, env={"COLUMNS": str(columns)}).stdout
    assert all(len(l) <= width or " " not in l.strip() for l in top.splitlines())


def test_help_hides_options_of_kinds_not_built(tmp_path, tether):
    # (every kind of the seed is built now: the page must show each kind's
    # options, and would hide those of a kind a build leaves out)
    built = {b["kind"] for b in tether.json("backends", cwd=tmp_path) if b["installed"]}
    page = tether("add", "--help", cwd=tmp_path).stdout
    for opt, kinds in (("--project-id", {"neon"}), ("--host", {"dolt"}), ("--port", {"dolt"}),
                       ("--table", {"ducklake", "iceberg"}), ("--role", {"neon"})):
        assert (opt in page) == bool(kinds & built), opt
    kind_line = page.split("--kind KIND")[-1].split("--branch")[0]
    for k in ("neon", "dolt", "ducklake", "iceberg"):
        assert (k in kind_line) == (k in built), k
    assert "jj" not in tether("restore", "--help", cwd=tmp_path).stdout


# --- completion and man pages --------------------------------------------

def help_options(tether, cmd, cwd):
    """{option names: description} from a --help page wide enough not to wrap."""
    page = tether(cmd, "--help", cwd=cwd, env={"COLUMNS": "1000"}).stdout
    block = page.split("\noptions:\n")[1].split("\n\n")[0]
    out, last = {}, None
    for line in block.splitlines():
        m = re.match(r"^ {2,6}(-\S.*?)(?:\s{2,}(\S.*))?$", line)
        if m:
            last = m.group(1).strip()
            out[last] = m.group(2) or ""
        else:
            out[last] = (out[last] + " " + line.strip()).strip()
    examples = page.split("\nexamples:\n")[1].splitlines() if "\nexamples:\n" in page else []
    return out, [e.strip() for e in examples]


def man_options(path):
    """The same from a generated man page (roff)."""
    text = path.read_text().replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    opts = {}
    for m in re.finditer(r"^\.TP\n\.B (.*)\n((?:[^.\n].*\n?)*)", text, re.M):
        opts[m.group(1).strip()] = " ".join(m.group(2).split())
    ex = text.split(".SH EXAMPLES\n.nf\n")[1].split("\n.fi")[0].splitlines() if ".SH EXAMPLES" in text else []
    return opts, ex


def test_man_pages_say_what_help_says(tmp_path, tether, build_dir):
    out = tmp_path / "man"
    out.mkdir()
    tether("__man", str(out), cwd=tmp_path)
    top = (out / "tether.1").read_text()
    for cmd in COMMANDS + ["completion"]:
        page = out / f"tether-{cmd}.1"
        assert page.exists(), cmd
        assert f"tether\\-{cmd}(1)" in top.replace(".BR tether\\-", "tether\\-").replace(" (1)", "(1)")
        h_opts, h_ex = help_options(tether, cmd, tmp_path)
        m_opts, m_ex = man_options(page)
        assert m_opts == {k: " ".join(v.split()) for k, v in h_opts.items()}, cmd
        assert m_ex == h_ex, cmd
    # the build made the same pages, and `cmake --install` puts them in man1
    assert (build_dir / "share/man1/tether-log.1").read_text() == (out / "tether-log.1").read_text()
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)], check=True,
                   capture_output=True)
    assert (prefix / "share/man/man1/tether-status.1").exists()
    assert (prefix / "share/bash-completion/completions/tether").exists()
    assert (prefix / "share/zsh/site-functions/_tether").exists()
    assert (prefix / "share/fish/vendor_completions.d/tether.fish").exists()


def bash_complete(tether, cwd, words):
    script = tether("completion", "bash", cwd=cwd).stdout
    prog = (script + '\nCOMP_WORDS=(' + " ".join(f"'{w}'" for w in words) + ')\n'
            f"COMP_CWORD={len(words) - 1}\n_tether\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    env = dict(tether.env, PATH=f"{tether.exe.parent}:{tether.env.get('PATH', '/usr/bin:/bin')}")
    r = subprocess.run(["bash", "-c", prog], cwd=str(cwd), env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return sorted(r.stdout.split())


def test_bash_completion_of_commands_options_keys_and_bookmarks(ds, tether):
    if tether.exe.name != "tether":
        pytest.skip("the scripts call `tether` by name")
    assert bash_complete(tether, ds, ["tether", "com"]) == ["commit", "completion"]
    assert bash_complete(tether, ds, ["tether", "status", "--j"]) == ["--json"]
    assert bash_complete(tether, ds, ["tether", "log", "-"]).count("--limit") == 1
    assert bash_complete(tether, ds, ["tether", "status", "ta"]) == ["tables"]
    assert bash_complete(tether, ds, ["tether", "diff", "--key", "t"]) == ["tables"]
    assert bash_complete(tether, ds, ["tether", "new", "ma"]) == ["main"]
    assert "lance" in bash_complete(tether, ds, ["tether", "add", "x", "--kind", ""])
    assert bash_complete(tether, ds, ["tether", "completion", "z"]) == ["zsh"]
    built = {b["kind"] for b in tether.json("backends", cwd=ds) if b["installed"]}
    assert ("--host" in bash_complete(tether, ds, ["tether", "add", "--"])) == ("dolt" in built)


def test_zsh_and_fish_completion_cover_the_tables(tmp_path, tether):
    zsh = tether("completion", "zsh", cwd=tmp_path).stdout
    fish = tether("completion", "fish", cwd=tmp_path).stdout
    assert zsh.startswith("#compdef tether")
    for cmd in COMMANDS:
        assert f"'{cmd}:" in zsh and f"        {cmd}) _arguments" in zsh, cmd
        assert f"-a {cmd} -d " in fish, cmd
        for opt in help_options(tether, cmd, tmp_path)[0]:
            long = re.search(r"--([a-z-]+)", opt).group(1)
            if long == "help":
                continue
            assert f"--{long}" in zsh.split(f"        {cmd}) _arguments")[1].split(";;")[0], (cmd, long)
            assert f"__fish_seen_subcommand_from {cmd}' -l {long}" in fish, (cmd, long)
    assert "tether __complete keys" in fish and "_tether_dyn keys" in zsh
    r = tether("completion", "tcsh", cwd=tmp_path, check=False)
    assert r.returncode == 2


def test_complete_helper_lists_keys_and_bookmarks(ds, tether, tmp_path):
    assert tether("__complete", "keys", cwd=ds).stdout.split() == ["tables"]
    assert "main" in tether("__complete", "bookmarks", cwd=ds).stdout.split()
    assert tether("__complete", "keys", cwd=tmp_path).stdout == ""  # outside a dataset: nothing


# --- progress ------------------------------------------------------------

def test_progress_on_a_terminal_is_drawn_and_erased(ds, tether, tmp_path):
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f").write_text(str(i))
        tether("add", f"d{i}", str(tmp_path / f"d{i}"), "--kind", "file", cwd=ds)
    env = dict(tether.env, TERM="xterm", TETHER_PROGRESS="1")
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot"], ds, env)
    assert rc == 0
    assert "fingerprint: 0/4 objects" in out and "fingerprint: 4/4 objects" not in out.split("\033[K")[-1]
    assert re.search(r"fingerprint: [1-4]/4 objects, (d[0-2]|tables) done", out)
    # erased before the result: the last progress line is followed by an erase
    last = out.rindex("fingerprint: ")
    assert "\r\033[K" in out[last:] and out.index("dataset ") > last
    # verify fans out too
    rc, out = run_in_pty([str(tether.exe), "verify"], ds, env)
    assert "verify: 0/" in out


def test_progress_is_off_for_json_pipes_and_TETHER_PROGRESS_0(ds, tether):
    env = dict(tether.env, TERM="xterm")
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot", "--json"], ds,
                         dict(env, TETHER_PROGRESS="1"))
    assert rc == 0 and "fingerprint:" not in out
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot"], ds, dict(env, TETHER_PROGRESS="0"))
    assert rc == 0 and "fingerprint:" not in out
    # short work on a terminal draws nothing (it is done before the first redraw is due)
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot"], ds, env)
    assert rc == 0 and "fingerprint:" not in out
    r = tether("status", "--snapshot", cwd=ds)
    assert "fingerprint:" not in r.stderr


# --- handles ------------------------------------------------------------

def test_open_gives_a_snippet_for_the_kinds_own_library(ds, tether, tmp_path, env):
    code = tmp_path / "code"
    git("init", "-q", "-b", "main", str(code), cwd=tmp_path, env=env)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=code, env=env)
    sha = git("rev-parse", "HEAD", cwd=code, env=env).strip()
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("commit", "-m", "code", cwd=ds)
    r = tether("open", "code", "--read-only", cwd=ds)
    assert r.stdout == f"{code}@{sha}\n"  # stdout stays the bare address, for $(...)
    assert f"  open it: git -C '{code}' checkout --detach {sha}\n" in r.stderr
    import lance
    import pyarrow as pa
    uri = tmp_path / "t.lance"
    lance.write_dataset(pa.table({"x": [1, 2]}), str(uri))
    lance.write_dataset(pa.table({"x": [3]}), str(uri), mode="append")
    tether("add", "tbl", str(uri), "--kind", "lance", cwd=ds)
    tether("commit", "-m", "tbl", cwd=ds)
    r = tether("open", "tbl", "--read-only", cwd=ds)
    line = r.stderr.split("  open it: ")[1].splitlines()[0]
    assert line.startswith(f"lance.dataset('{uri}', version=")
    assert eval(line, {"lance": lance}).count_rows() == 3
    assert tether.json("open", "tbl", "--read-only", cwd=ds)["uri"] == str(uri)


# --- diff of the working copy --------------------------------------------

def test_diff_without_revisions_compares_the_working_copy(ds, tether, tmp_path, env):
    code = tmp_path / "code"
    git("init", "-q", "-b", "main", str(code), cwd=tmp_path, env=env)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=code, env=env)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("commit", "-m", "code", cwd=ds)
    (code / "f").write_text("hi\n")
    git("add", "f", cwd=code, env=env)
    git("commit", "-q", "-m", "y", cwd=code, env=env)
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [o["state"] for o in st["objects"] if o["key"] == "code"] == ["modified"]
    # what status calls modified, diff shows, as git diff does
    d = {e["key"]: e for e in tether.json("diff", cwd=ds)}
    assert d["code"]["change"] == "changed" and d["code"]["why"] == ["state"]
    assert d["tables"]["change"] == "unchanged"
    out = tether("diff", "--content", cwd=ds).stdout
    assert "changed  code  [+1 -0 ~0 files]" in out and "added  f" in out
    # the manifests themselves are untouched; two revisions still compare commits
    assert tether.json("diff", "HEAD", "HEAD", cwd=ds)[0]["change"] == "unchanged"
    tether("commit", "-m", "take it", cwd=ds)
    assert all(e["change"] == "unchanged" for e in tether.json("diff", cwd=ds))
