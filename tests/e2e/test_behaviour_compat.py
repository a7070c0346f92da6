"""Behaviours scripts branch on, run through tether-vcs 0.1.0b7 and through
ours on the same scenario: exit codes, error lines, the dataset's committed
files and working-tree status, and the stores' refs must agree (after
normalising only times and ids)."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import git

DS = "5ca1ab1e"


def fixed_env(env, n=1):
    e = dict(env)
    stamp = f"2026-01-0{n}T00:00:00+00:00"
    e.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    return e


def make_world(root: Path, env) -> tuple[Path, Path]:
    """A dataset repository `ds` and a git store `code` beside it, with fixed
    dates so both implementations' worlds have the same shas."""
    code, ds = root / "code", root / "ds"
    code.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=code, env=env)
    (code / "model.py").write_text("weights = 1\n")
    git("add", ".", cwd=code, env=fixed_env(env))
    git("commit", "-q", "-m", "initial model", cwd=code, env=fixed_env(env))
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=fixed_env(env))
    return ds, code


def error_line(stderr: str) -> str | None:
    for line in stderr.splitlines():
        if line.startswith("error: "):
            return line
    return None


TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")
IDS = re.compile(r"\b[0-9a-f]{32}\b|\b[0-9a-f]{12}\b")


def normalise(text: str) -> str:
    """Times and random ids (workspace ids, journal ids) out of a text."""
    return IDS.sub("<id>", TIMES.sub("<time>", text))


def observe(ds: Path, code: Path, env) -> dict:
    head = git("rev-parse", "HEAD", cwd=ds, env=env).strip()
    ws = ds / ".tether/workspace.toml"
    return {
        "workspace": normalise(ws.read_text()) if ws.exists() else None,
        "tree": git("ls-tree", "-r", "--name-only", "HEAD", cwd=ds, env=env).splitlines(),
        "status": sorted(git("status", "--porcelain", "--untracked-files=all", cwd=ds,
                             env=env).splitlines()),
        "commits": int(git("rev-list", "--count", head, cwd=ds, env=env)),
        "refs": git("for-each-ref", "--format=%(refname) %(objectname)", cwd=code,
                    env=env).splitlines(),
    }


def run_both(tmp_path, env, tether, ref, steps, *, setup=None):
    """Run steps (argument tuples) in a fresh world per implementation;
    returns {"ours": ..., "theirs": ...} with each step's exit code and error
    line, and the world as it was left."""
    out = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        # One place for both worlds (the store's path is part of its pin
        # ids); each is moved aside once observed.
        root = tmp_path / "world"
        ds, code = make_world(root, env)
        if setup:
            setup(ds, code, env)
        runs = []
        for args in steps:
            if callable(args):  # a step outside tether, e.g. a write to a store
                args(ds, code, env)
                runs.append(subprocess.CompletedProcess([], 0, "", ""))
            else:
                runs.append(runner(*args, cwd=ds, check=False))
        world = observe(ds, code, env)
        root.rename(tmp_path / name)
        out[name] = {
            "rcs": [r.returncode for r in runs],
            "errors": [error_line(r.stderr) for r in runs],
            "runs": runs,
            "world": world,
            "ds": tmp_path / name / "ds",
            "code": tmp_path / name / "code",
        }
    return out


def assert_same(both, *, errors=True):
    ours, theirs = both["ours"], both["theirs"]
    assert ours["rcs"] == theirs["rcs"], (ours["errors"], theirs["errors"])
    if errors:
        assert [e and normalise(e) for e in ours["errors"]] == \
            [e and normalise(e) for e in theirs["errors"]]
    assert ours["world"] == theirs["world"]


INIT = ("init", "--dataset-id", DS)


# --- 1. a native branch space is committed and pulled whole -----------------

def test_commit_and_pull_of_part_of_a_shared_branch_space_are_refused(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("add", "b", "../code", "--kind", "git"),
        ("commit", "a", "-m", "x"),
        ("pull", "--key", "a"),
        ("commit", "a", "b", "-m", "x"),
        ("pull", "--key", "b"),
    ])
    assert_same(both)
    ours = both["ours"]
    assert ours["rcs"] == [0, 0, 0, 1, 1, 0, 1]
    assert "a shares a native branch space with b" in ours["errors"][3]
    assert "`tether commit a b`" in ours["errors"][3]
    assert "`tether pull --key a --key b`" in ours["errors"][4]


# --- 2. commit KEY... commits only those objects' files ---------------------

def test_selective_commit_commits_only_the_named_objects(tmp_path, env, tether, ref):
    def setup(ds, code, env):
        other = code.parent / "other"
        other.mkdir()
        (other / "f.txt").write_text("file store\n")

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("add", "data", "../other", "--kind", "file"),
        ("commit", "a", "-m", "only a"),
        ("commit", "-m", "all"),
        ("remove", "data"),
        ("add", "c", "../other", "--kind", "file"),
        ("commit", "c", "-m", "only c"),
    ], setup=setup)
    assert_same(both)
    tree = both["ours"]["world"]["tree"]
    # data's removal stays uncommitted: only c's manifest and listing went in.
    assert ".tether/objects/data.toml" in tree and ".tether/objects/c.toml" in tree
    assert " D .tether/objects/data.toml" in both["ours"]["world"]["status"]


def test_first_selective_commit_leaves_the_config_uncommitted(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("add", "b", "../code", "--kind", "git"),
        ("commit", "a", "b", "-m", "x"),
    ])
    assert_same(both)
    assert both["ours"]["world"]["tree"] == [".tether/objects/a.toml", ".tether/objects/b.toml"]
    assert "?? tether.toml" in both["ours"]["world"]["status"]


# --- 3. committing the removal of the last object ----------------------------

def test_commit_after_removing_the_last_object_succeeds(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("remove", "a"),
        ("commit", "-m", "gone"),
    ])
    assert_same(both)
    assert both["ours"]["rcs"] == [0, 0, 0, 0, 0]
    for name in ("ours", "theirs"):
        last = json.loads((both[name]["ds"] / ".tether/ops.jsonl").read_text().splitlines()[-1])
        assert "failed_after_commit" not in last["result"], name


# --- 4. restore --at REF, and a restore with no source -----------------------

def side_branch(ds, code, env):
    """A branch made outside tether, one commit ahead of main."""
    git("branch", "side", cwd=code, env=env)
    wt = code.parent / "wt-side"
    git("worktree", "add", "-q", str(wt), "side", cwd=code, env=env)
    (wt / "model.py").write_text("weights = 2\n")
    git("commit", "-q", "-am", "outside", cwd=wt, env=fixed_env(env, 2))
    git("worktree", "remove", "--force", str(wt), cwd=code, env=env)


def test_restore_at_a_native_ref(tmp_path, env, tether, ref):

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("restore", "a"),                      # no source
        ("restore", "a", "--at", "side"),      # on the trunk
        ("new", "-b", "feat"),
        ("restore", "a", "--at", "nosuch"),
        ("restore", "a", "--at", " "),
        ("restore", "a", "--from", "HEAD", "--at", "side"),
        ("restore", "a", "--at", "side", "--json"),
        ("status", "--json"),
        ("commit", "-m", "from side"),
    ], setup=side_branch)
    assert_same(both)
    ours, theirs = both["ours"], both["theirs"]
    assert ours["rcs"] == [0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0]
    assert ours["errors"][3] == "error: restore takes --from REV or --at REF (one of them)"
    assert json.loads(ours["runs"][9].stdout) == json.loads(theirs["runs"][9].stdout) == {
        "from": None, "at": "side", "working_refs": {"a": "tether.ws.5ca1ab1e.feat"}}
    status = [json.loads(x["runs"][10].stdout)["objects"][0] for x in (ours, theirs)]
    assert status[0]["state"] == status[1]["state"] == "modified"
    # main and side are untouched; the bookmark's branch is a copy of side.
    refs = dict(line.split() for line in ours["world"]["refs"])
    assert refs["refs/heads/tether.ws.5ca1ab1e.feat"] == refs["refs/heads/side"]
    assert refs["refs/heads/main"] != refs["refs/heads/side"]


def test_restore_from_json_carries_a_null_at(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat"),
        ("restore", "a", "--from", "HEAD", "--json"),
    ])
    assert_same(both)
    mine, theirs = (json.loads(both[n]["runs"][4].stdout) for n in ("ours", "theirs"))
    assert mine == theirs and list(mine) == list(theirs)
    assert mine["at"] is None and mine["from"] == "HEAD"


def test_restore_from_a_plan_keeps_its_source(tmp_path, env, tether, ref):

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat"),
        ("restore", "a", "--at", "side", "--plan", "../r.plan"),
        ("restore", "a", "--from-plan", "../r.plan", "--at", "main"),
        ("restore", "a", "--from-plan", "../r.plan", "--from", "HEAD"),
        ("restore", "a", "--from-plan", "../r.plan", "--at", "side"),
    ], setup=side_branch)
    assert_same(both)
    assert both["ours"]["rcs"] == [0, 0, 0, 0, 0, 1, 1, 0]


# --- 5. add --remote names a remote the repository has ------------------------

def test_add_refuses_a_remote_the_repository_lacks(tmp_path, env, tether, ref):
    def setup(ds, code, env):
        bare = code.parent / "pins.git"
        git("init", "-q", "--bare", str(bare), cwd=code.parent, env=env)
        git("remote", "add", "pins", str(bare), cwd=code, env=env)

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git", "--remote", "origin"),
        ("add", "b", "../code", "--kind", "git", "--remote", "pins"),
        ("commit", "-m", "one"),
    ], setup=setup)
    assert_same(both)
    ours = both["ours"]
    assert ours["rcs"] == [0, 1, 0, 0]
    assert "'origin' is not a remote configured in" in ours["errors"][1]
    assert ours["world"]["tree"] == [".tether/.gitignore", ".tether/objects/b.toml", "tether.toml"]
    assert not (ours["ds"] / ".tether/objects/a.toml").exists()
    bare = ours["code"].parent / "pins.git"
    assert "tether.5ca1ab1e." in git("tag", cwd=bare, env=env)


# --- 6. `new` onto the trunk keeps no fork points; `new`'s journal shape -----

def journal(ds: Path, env) -> list[dict]:
    """The journal's records, with this dataset's own commit ids, times and
    journal ids normalised."""
    text = (ds / ".tether/ops.jsonl").read_text()
    for sha in git("rev-list", "--all", cwd=ds, env=env).split():
        text = text.replace(sha, "<commit>")
    return [json.loads(normalise(line)) for line in text.splitlines()]


def done_records(ds: Path, env, command: str) -> list[dict]:
    """The done records of command's entries (normalised as journal())."""
    raw = [json.loads(line) for line in (ds / ".tether/ops.jsonl").read_text().splitlines()]
    started = {r["id"]: r["command"] for r in raw if "command" in r}
    return [{"result": n["result"], "pre": n["pre"]} for r, n in zip(raw, journal(ds, env))
            if "done" in r and started.get(r["done"]) == command]


def test_new_onto_the_trunk_records_no_fork_points(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat", "--eager", "--json"),
        ("new", "main", "--json"),
        ("new", "feat", "--json"),
        ("new", "main", "--json"),
    ])
    assert_same(both)
    ours, theirs = both["ours"], both["theirs"]
    for i in (3, 4, 5, 6):
        assert json.loads(ours["runs"][i].stdout) == json.loads(theirs["runs"][i].stdout)
    assert json.loads(ours["runs"][6].stdout)["fork_points"] == {}
    assert "fork_points" not in ours["world"]["workspace"]
    mine, reference = done_records(ours["ds"], env, "new"), done_records(theirs["ds"], env, "new")
    assert mine == reference
    assert mine[1]["result"]["reused"] == [] and mine[1]["pre"] == {"heads": {}}


# --- 7. exit codes on missing values, compared mechanically -----------------

def reference_commands():
    """Each tether-vcs command this build implements, with its options that
    take a value, read from tether-vcs's own command-line definition."""
    from typer.main import get_command
    from tether.cli import app

    ours = {"init", "backends", "add", "set", "remove", "status", "snapshot", "commit",
            "verify", "diff", "log", "new", "open", "pull", "restore", "promote", "gc",
            "ops", "undo", "repair"}
    out = {}
    for name, c in sorted(get_command(app).commands.items()):
        if name in ours:
            out[name] = [p.opts[0] for p in c.params
                         if p.param_type_name != "argument" and not p.is_flag]
    return out


def missing_value_invocations():
    """Every command bare, with only an object key, and with an unknown
    option; every option that takes a value given none; and the paths where
    a command's own checks find something missing.  Ordered so nothing
    before the last few changes the dataset."""
    invs = []
    commands = reference_commands()
    for name, opts in commands.items():
        if name in ("undo", "remove"):
            continue
        invs += [(name,), (name, "a"), (name, "--nosuch")]
        invs += [(name, "a", opt) for opt in opts]
    invs += [
        ("add", "--kind", "file"), ("add", "../d"), ("add", "x", "--kind", "file"),
        ("add", "x", "../d", "--kind", "file", "--set", "bad"),
        ("add", "x", "../d", "--kind", "nosuchkind"),
        ("commit",), ("commit", "a"), ("commit", "--from-plan", "../nofile"),
        ("restore", "a"), ("restore", "a", "--from", "HEAD", "--at", "main"),
        ("restore", "--from", "HEAD"), ("gc", "--force-prune"), ("gc", "--store", "bad"),
        ("set", "a"), ("log",), ("open",), ("remove",), ("undo", "nosuchid"),
        ("undo", "--nosuch"), ("remove", "--nosuch"), ("diff", "HEAD", "HEAD", "HEAD"),
        ("status", "nosuch"), ("ops", "-n", "x"), ("init", "--dataset-id", "zz"),
        ("new", "--plan", "../p", "--from-plan", "../p"),
        ("set",), ("remove", "a"), ("set",), ("set", "--all"),
    ]
    return invs


def reference_in_process(args, cwd: Path, env) -> int:
    """tether-vcs's exit code for args, run in this process through its own
    command-line app (a subprocess per probe costs a second of imports)."""
    from typer.testing import CliRunner
    from tether.cli import app

    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code


def test_exit_codes_on_missing_values_match(tmp_path, env, tether, ref):
    steps = [INIT, ("add", "a", "../code", "--kind", "git"), ("commit", "-m", "one")]
    invs = missing_value_invocations()
    codes = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = tmp_path / "world"
        ds, code = make_world(root, env)
        (root / "d").mkdir()
        (root / "d" / "f.txt").write_text("y\n")
        for step in steps:
            runner(*step, cwd=ds)
        if name == "ours":
            codes[name] = [tether(*inv, cwd=ds, check=False).returncode for inv in invs]
        else:
            codes[name] = [reference_in_process(inv, ds, env) for inv in invs]
        root.rename(tmp_path / name)
    differ = [(" ".join(inv), o, t) for inv, o, t in zip(invs, codes["ours"], codes["theirs"])
              if o != t]
    assert differ == []
    # The ones this issue names.
    code_of = dict(zip(map(tuple, invs), codes["ours"]))
    assert code_of[("add", "--kind", "file")] == 1
    assert code_of[("set",)] == 1
    assert code_of[("restore", "a")] == 1
    assert code_of[("restore", "--from", "HEAD")] == 2


# --- deliberate differences (docs/compatibility.md) --------------------------

def test_contradicting_flags_are_refused_not_last_wins(tmp_path, env, tether, ref):
    """tether-vcs lets the last of two contradicting flags win silently (or
    picks one); ours refuses the ambiguous command line as a usage error and
    writes nothing."""
    contradictions = [
        ("new", "-b", "x", "--eager", "--lazy", "--dry-run"),
        ("status", "--snapshot", "--no-snapshot"),
        ("open", "a", "--read-only", "--writable"),
        ("set", "a", "--all", "--pin", "record"),
        # tether-vcs lets --pick replace --at (here it then fails on the
        # relative path it never resolved for the history listing).
        ("add", "x", "../code", "--kind", "git", "--at", "HEAD", "--pick"),
    ]
    both = run_both(tmp_path, env, tether, ref, [
        INIT, ("add", "a", "../code", "--kind", "git"), ("commit", "-m", "one"),
        *contradictions,
    ])
    assert both["ours"]["rcs"] == [0, 0, 0, 2, 2, 2, 2, 2]
    assert both["theirs"]["rcs"][:7] == [0, 0, 0, 0, 0, 0, 0]
    assert both["theirs"]["rcs"][7] != 2
    assert both["ours"]["world"]["status"] == []


def test_restore_from_plan_needs_no_keys(tmp_path, env, tether, ref):
    """A saved restore plan names its objects: ours applies it without KEY
    arguments; tether-vcs requires KEYs there (exit 2) and then ignores
    them."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT, ("add", "a", "../code", "--kind", "git"), ("commit", "-m", "one"),
        ("new", "-b", "feat"),
        ("restore", "a", "--from", "main", "--plan", "../r.plan"),
        ("restore", "--from-plan", "../r.plan"),
        ("restore", "a", "--from-plan", "../r.plan"),
    ])
    assert both["ours"]["rcs"] == [0, 0, 0, 0, 0, 0, 1]
    assert both["theirs"]["rcs"] == [0, 0, 0, 0, 0, 2, 0]
    assert both["ours"]["world"]["workspace"] == both["theirs"]["world"]["workspace"]


# --- JSON shapes --------------------------------------------------------------

def with_data_dir(ds, code, env):
    (code.parent / "d").mkdir()
    (code.parent / "d" / "f.txt").write_text("y\n")


def test_open_json_names_the_store_and_the_handle_class(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("add", "f", "../d", "--kind", "file"),
        ("commit", "-m", "one"),
        ("open", "a", "--json"),
        ("open", "f", "--json"),
        ("open", "a", "-r", "HEAD", "--json"),
    ], setup=with_data_dir)
    assert_same(both)
    for i in (4, 5, 6):
        mine = json.loads(both["ours"]["runs"][i].stdout)
        theirs = json.loads(both["theirs"]["runs"][i].stdout)
        assert {k: mine[k] for k in theirs} == theirs
        assert list(mine)[:len(theirs)] == list(theirs)
    mine = json.loads(both["ours"]["runs"][4].stdout)
    assert mine["type"] == "GitHandle" and mine["key"] == str(tmp_path / "world" / "code")
    assert mine["object"] == "a" and mine["kind"] == "git"


def test_errors_name_the_backend_kind(tmp_path, env, tether, ref):
    """A backend's error is prefixed with its kind in text, JSON, the
    workspace's cached errors and the journal (text may add the key)."""
    def setup(ds, code, env):
        (code / "model.py").write_text("dirty\n")

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("add", "f", "../missing", "--kind", "file"),
        ("status", "--json"),
        ("commit", "a", "-m", "x"),
        ("commit", "-m", "x"),
    ], setup=setup)
    ours, theirs = both["ours"], both["theirs"]
    assert ours["rcs"] == theirs["rcs"] == [0, 0, 0, 1, 1, 1]
    assert ours["errors"][4] == theirs["errors"][4] == \
        "error: [git] refusing to pin a dirty working tree (set allow_dirty)"
    assert "[file] path does not exist:" in ours["runs"][5].stderr
    status = [json.loads(x["runs"][3].stdout) for x in (ours, theirs)]
    errors = [{o["key"]: o["error"] for o in s["objects"]} for s in status]
    assert errors[0] == errors[1]
    assert errors[0]["f"].startswith("[file] path does not exist")
    assert ours["world"]["workspace"] == theirs["world"]["workspace"]
    assert 'error = "[file] path does not exist' in ours["world"]["workspace"]
    failed = [[r["result"].get("failed") for r in done_records(x["ds"], env, "commit")]
              for x in (ours, theirs)]
    assert failed[0] == failed[1] == ["[git] refusing to pin a dirty working tree (set allow_dirty)"]


def test_status_json_vcs_drift_has_no_message(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("add", "b", "../d", "--kind", "file"),
        ("commit", "-m", "two"),
    ], setup=with_data_dir)
    shown = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        ds = both[name]["ds"]
        root = tmp_path / "world"
        (tmp_path / name).rename(root)  # back where the store's path points
        try:
            ds = root / "ds"
            git("reset", "-q", "--hard", "HEAD~1", cwd=ds, env=env)
            shown[name] = runner.json("status", cwd=ds)["vcs_drift"]
            text = runner("status", cwd=ds).stderr
            assert "is no longer in VCS history" in text
        finally:
            root.rename(tmp_path / name)
    assert [sorted(d) for d in shown["ours"]] == [sorted(d) for d in shown["theirs"]] == \
        [["commit", "op", "referenced"]]
    assert shown["ours"] == [dict(d, op=shown["ours"][0]["op"], commit=shown["ours"][0]["commit"])
                             for d in shown["theirs"]]


def plan_shape(text: str) -> dict:
    """A saved plan without what differs by run (times, ids, hashes)."""
    plan = json.loads(normalise(text))
    return {
        "command": plan["command"],
        "context": sorted(plan["context"]),
        "notes": plan["notes"],
        "preconditions": [{k: v for k, v in p.items() if k != "expected"}
                          for p in plan["preconditions"]],
        "actions": [{k: v for k, v in a.items() if k != "params"} for a in plan["actions"]],
    }


def test_plans_carry_the_same_preconditions(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "x", "--dry-run", "--json"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat", "--dry-run", "--json"),
        ("new", "-b", "feat", "--eager"),
        ("promote", "--dry-run", "--json"),
        ("restore", "a", "--from", "main", "--dry-run", "--json"),
        ("gc", "--dry-run", "--json"),
    ])
    assert_same(both)
    for i in (2, 4, 6, 7, 8):
        mine = plan_shape(both["ours"]["runs"][i].stdout)
        theirs = plan_shape(both["theirs"]["runs"][i].stdout)
        assert mine == theirs, i
    new_plan = json.loads(both["ours"]["runs"][4].stdout)
    assert new_plan["preconditions"][0]["params"] == {"rev": None}


def test_version_names_the_tether_vcs_release_plans_carry(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        ("--version",),
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("gc", "--dry-run", "--json"),
    ])
    assert_same(both)
    mine = both["ours"]["runs"][0].stdout
    theirs = both["theirs"]["runs"][0].stdout.split()[1]
    ours = re.search(r"project\(tether\s+VERSION\s+([0-9.]+)",
                     (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()).group(1)
    assert mine == f"tether {ours} (tether-vcs {theirs} compatible)\n"  # (tests/e2e/test_version.py)
    for name in ("ours", "theirs"):
        assert json.loads(both[name]["runs"][4].stdout)["tether_version"] == theirs


def test_commit_json_lists_objects_in_tether_vcs_order(tmp_path, env, tether, ref):
    """tether-vcs reports a commit's objects in its manifests' path order
    ("a/x" before "a.y"), not in key order."""
    keys = ["b", "a/x", "a.y", "A", "z0", "a0"]
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        *[("add", k, "../d", "--kind", "file", "--pin", "record") for k in keys],
        ("add", "g", "../code", "--kind", "git"),
        ("commit", "-m", "one", "--json"),
    ], setup=with_data_dir)
    assert_same(both)
    mine = json.loads(both["ours"]["runs"][-1].stdout)
    theirs = json.loads(both["theirs"]["runs"][-1].stdout)
    assert mine["unrecoverable"] == theirs["unrecoverable"] == ["A", "a/x", "a.y", "a0", "b", "z0"]
    assert list(mine["pinned"]) == list(theirs["pinned"])
    journaled = [[r["result"]["unrecoverable"] for r in done_records(both[n]["ds"], env, "commit")]
                 for n in ("ours", "theirs")]
    assert journaled[0] == journaled[1]


def test_diff_content_gives_non_ascii_paths_as_they_are(tmp_path, env, tether, ref):
    """Deliberate difference: tether-vcs passes on git's C-quoted form of a
    non-ASCII path ("\\303\\274n\\303\\257.txt", quotes included, from
    core.quotePath); ours gives the path itself, which is what a script can
    open. ASCII paths, spaces included, agree."""
    def setup(ds, code, env):
        git("tag", "v1", cwd=code, env=env)
        (code / "ünï.txt").write_text("hi\n")
        (code / "sp ace.txt").write_text("b\n")
        git("add", ".", cwd=code, env=fixed_env(env, 2))
        git("commit", "-q", "-m", "two", cwd=code, env=fixed_env(env, 2))

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git", "--at", "v1"),
        ("commit", "-m", "one"),
        ("pull",),
        ("diff", "HEAD~1", "HEAD", "--content", "--json"),
    ], setup=setup)
    assert_same(both)
    paths = [[e["path"] for d in json.loads(both[n]["runs"][4].stdout)
              for e in (d.get("detail") or {}).get("entries", [])] for n in ("ours", "theirs")]
    assert sorted(paths[0]) == ["sp ace.txt", "ünï.txt"]
    assert sorted(paths[1]) == ['"\\303\\274n\\303\\257.txt"', "sp ace.txt"]


def test_refused_undo_journals_the_full_report(tmp_path, env, tether, ref):
    """Undoing a promote is refused (tether never moves a base branch back);
    the journal records the whole report, as tether-vcs does."""
    def write_on_branch(ds, code, env):
        wt = code.parent / "wt"
        git("worktree", "add", "-q", str(wt), f"tether.ws.{DS}.feat", cwd=code, env=env)
        (wt / "model.py").write_text("weights = 2\n")
        git("commit", "-q", "-am", "retrain", cwd=wt, env=fixed_env(env, 2))
        git("worktree", "remove", "--force", str(wt), cwd=code, env=env)

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat", "--eager"),
        write_on_branch,
        ("commit", "-m", "retrained"),
        ("promote",),
        ("undo",),
    ])
    assert_same(both)
    assert both["ours"]["rcs"][-1] == 1
    mine, theirs = (done_records(both[n]["ds"], env, "undo") for n in ("ours", "theirs"))
    assert mine == theirs
    assert sorted(mine[0]["result"]) == ["failed", "irreversible", "restored", "skipped", "summary"]
    assert mine[0]["result"]["failed"] == "nothing restored"


# --- workspace.toml and new's fork points, in tether-vcs's order -------------

def three_stores(ds, code, env):
    with_data_dir(ds, code, env)
    for name in ("code2", "code3"):
        repo = code.parent / name
        repo.mkdir()
        git("init", "-q", "-b", "main", cwd=repo, env=env)
        (repo / "m.py").write_text(f"{name} = 1\n")
        git("add", ".", cwd=repo, env=fixed_env(env))
        git("commit", "-q", "-m", name, cwd=repo, env=fixed_env(env))


def path_sorted(keys) -> list:
    """tether-vcs's object order: the manifests' paths, part by part."""
    return sorted(keys, key=lambda k: Path(f"{k}.toml").parts)


def toml_tables(text: str) -> dict:
    import tomllib
    return tomllib.loads(text)


def order_steps(seen: list) -> list:
    def keep(ds, code, env):
        seen.append((ds / ".tether/workspace.toml").read_text())
    return [
        INIT,
        ("add", "z", "../code", "--kind", "git"),
        ("add", "a/x", "../code2", "--kind", "git"),
        ("add", "a.y", "../code3", "--kind", "git"),
        *[("add", k, "../d", "--kind", "file", "--pin", "record") for k in ("b", "a/f", "a.f", "A")],
        ("status", "--snapshot"),
        keep,
        ("commit", "-m", "one"),
        keep,
        ("new", "-b", "feat", "--eager", "--json"),
        ("status", "--snapshot"),
    ]


def test_workspace_toml_tables_keep_tether_vcs_insertion_order(tmp_path, env, tether, ref):
    """workspace.toml's tables list their keys in the order tether-vcs
    inserted them, byte for byte: its objects' order, their manifests' paths
    compared segment by segment ("a/x" before "a.f").  After `new`, tether-vcs fills base_states and fork_points by
    iterating a set of key strings, an order Python randomises per process
    (PYTHONHASHSEED): those two compare as mappings, ours in key order."""
    seen: list = []
    both = run_both(tmp_path, env, tether, ref, order_steps(seen), setup=three_stores)
    ours_seen, theirs_seen = seen[:2], seen[2:]
    assert [normalise(t) for t in ours_seen] == [normalise(t) for t in theirs_seen]
    heads = [l for l in ours_seen[0].splitlines() if l.startswith("[last_snapshot.")]
    assert heads == ["[last_snapshot.A]", '[last_snapshot."a/f"]', '[last_snapshot."a/x"]',
                     '[last_snapshot."a.f"]', '[last_snapshot."a.y"]', "[last_snapshot.b]",
                     "[last_snapshot.z]"]
    texts = {n: both[n]["world"]["workspace"] for n in ("ours", "theirs")}
    tables = {n: toml_tables(t) for n, t in texts.items()}
    for name in ("base_states", "fork_points"):
        assert tables["ours"][name] == tables["theirs"][name], name
        assert list(tables["ours"][name]) == sorted(tables["ours"][name]), name

    def unordered(text):
        return re.sub(r'\[(base_states|fork_points)\.[^\]]*\]\n(?:[^\[\n][^\n]*\n)*\n?', "", text)
    assert unordered(texts["ours"]) == unordered(texts["theirs"])
    mine = json.loads(both["ours"]["runs"][12].stdout)
    theirs = json.loads(both["theirs"]["runs"][12].stdout)
    assert mine == theirs and list(mine["fork_points"]) == sorted(mine["fork_points"])
    both["ours"]["world"]["workspace"] = both["theirs"]["world"]["workspace"] = None
    assert_same(both)


# --- a failed `new --shared` --------------------------------------------------

def unrelated_feature_branch(ds, code, env):
    """The bookmark's store branch moved onto history that does not build on
    what its commit pins (someone rewrote it)."""
    tree = git("rev-parse", "HEAD^{tree}", cwd=code, env=env).strip()
    orphan = git("commit-tree", tree, "-m", "rewritten", cwd=code, env=fixed_env(env, 2)).strip()
    git("update-ref", f"refs/heads/tether.ws.{DS}.feat", orphan, cwd=code, env=env)


def test_a_failed_new_shared_leaves_what_tether_vcs_leaves(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat", "--eager"),
        ("new", "main"),
        unrelated_feature_branch,
        ("new", "feat", "--shared"),
        ("new", "feat", "--shared"),
        ("ops", "--json"),
    ])
    assert_same(both)
    ours, theirs = both["ours"], both["theirs"]
    assert ours["rcs"][6] == ours["rcs"][7] == 1
    assert "feat's commit pins (sha=" in ours["runs"][6].stderr
    assert ours["runs"][6].stderr == theirs["runs"][6].stderr
    # The refusal is planned, never journaled: both journals end at `new main`.
    kinds = [[(r.get("command"), "done" in r) for r in journal(both[n]["ds"], env)] for n in both]
    assert kinds[0] == kinds[1]
    assert done_records(ours["ds"], env, "new") == done_records(theirs["ds"], env, "new")
    assert json.loads(ours["runs"][8].stdout)[0]["command"] == "new"
    assert git("symbolic-ref", "--short", "HEAD", cwd=ours["ds"], env=env) == \
        git("symbolic-ref", "--short", "HEAD", cwd=theirs["ds"], env=env)
