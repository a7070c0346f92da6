"""Smaller differences from tether-vcs 0.1.0b7, each run through both
implementations on the same scenario: what saved plans carry, what the
journal records, what `undo` reports and in which order, what `remove`
leaves in workspace.toml, what a refused `new` journals.  Where tether
keeps its own behaviour on purpose, the test says what each side does and
docs/compatibility.md lists it."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import git
from test_behaviour_compat import (
    DS, INIT, assert_same, done_records, fixed_env, journal, normalise, run_both, with_data_dir)


def runs_json(both, i: int) -> tuple:
    return tuple(json.loads(both[n]["runs"][i].stdout) for n in ("ours", "theirs"))


def preconditions(plan: dict) -> list[dict]:
    """A plan's preconditions without what differs by run."""
    return [json.loads(normalise(json.dumps({k: v for k, v in p.items() if k != "expected"})))
            for p in plan["preconditions"]]


def write_on(branch: str):
    """A commit on the store's branch, made outside tether (fixed dates)."""
    def step(ds, code, env):
        wt = code.parent / "wt"
        git("worktree", "add", "-q", str(wt), branch, cwd=code, env=env)
        (wt / "model.py").write_text("weights = 2\n")
        git("commit", "-q", "-am", "retrain", cwd=wt, env=fixed_env(env, 2))
        git("worktree", "remove", "--force", str(wt), cwd=code, env=env)
    return step


# --- plans: the preconditions' words and fields --------------------------------

def test_promote_plan_preconditions_carry_tether_vcs_s_detail(tmp_path, env, tether, ref):
    """A promote plan's base_state precondition says what re-running it does
    (the git backend merges onto the moved base); a promote of a pinned
    revision says what to do about a pin that no longer names the state."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat", "--eager"),
        write_on(f"tether.ws.{DS}.feat"),
        ("commit", "-m", "retrained"),
        ("promote", "--dry-run", "--json"),
        ("promote", "--rev", "HEAD", "--dry-run", "--json"),
    ])
    assert_same(both)
    for i in (6, 7):
        mine, theirs = runs_json(both, i)
        assert [a["op"] for a in mine["actions"]] == [a["op"] for a in theirs["actions"]] == ["fast-forward"]
        assert preconditions(mine) == preconditions(theirs), i
    details = {p["kind"]: p["detail"] for p in runs_json(both, 6)[0]["preconditions"]}
    assert details["base_state"].endswith("; re-run the plan (it merges onto the moved base)")
    pinned = {p["kind"]: p["detail"] for p in runs_json(both, 7)[0]["preconditions"]}
    assert "no longer names the reviewed state ({observed}); `tether repair` recreates" in pinned["pin_state"]


def test_new_plan_preconditions_have_tether_vcs_s_fields(tmp_path, env, tether, ref):
    """`new`'s ref_absent precondition has no "what" (its detail names the
    command); ref_head and ref_present ones do."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat", "--eager", "--dry-run", "--json"),
        ("new", "-b", "feat", "--eager"),
        ("new", "main"),
        ("new", "feat", "--eager", "--dry-run", "--json"),
        write_on(f"tether.ws.{DS}.feat"),
        ("new", "feat", "--eager", "--discard", "--dry-run", "--json"),
    ])
    assert_same(both)
    for i in (3, 6, 8):
        mine, theirs = runs_json(both, i)
        assert [a["op"] for a in mine["actions"]] == [a["op"] for a in theirs["actions"]], i
        assert preconditions(mine) == preconditions(theirs), i
    absent = [p for p in runs_json(both, 3)[0]["preconditions"] if p["kind"] == "ref_absent"]
    assert len(absent) == 1 and "what" not in absent[0]["params"]


# --- the journal ----------------------------------------------------------------

def delete_pins(ds, code, env):
    for tag in git("tag", "--list", "tether.*", cwd=code, env=env).split():
        git("tag", "-d", tag, cwd=code, env=env)


def test_repair_journals_its_report_without_notes(tmp_path, env, tether, ref):
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        delete_pins,
        ("repair", "--json"),
    ])
    assert_same(both)
    mine, theirs = runs_json(both, 4)
    assert mine == theirs and "notes" in mine
    records = [done_records(both[n]["ds"], env, "repair") for n in ("ours", "theirs")]
    assert records[0] == records[1]
    assert sorted(records[0][0]["result"]) == ["failed", "reforked", "repinned"]


def untracked_in_the_way(ds, code, env):
    """feat has a README main lacks; an untracked README on main stops git
    from switching to feat."""
    git("switch", "-q", "feat", cwd=ds, env=env)
    (ds / "README").write_text("feat\n")
    git("add", "README", cwd=ds, env=env)
    git("commit", "-q", "-m", "readme", cwd=ds, env=fixed_env(env, 2))
    git("switch", "-q", "main", cwd=ds, env=env)
    (ds / "README").write_text("in the way\n")


def test_a_new_the_vcs_refuses_journals_no_done_record(tmp_path, env, tether, ref):
    """The VCS refusing to move the checkout changes nothing: the entry
    stays started (`ops` says it never finished), as tether-vcs leaves it,
    and the same command once the cause is gone finishes it."""
    def out_of_the_way(ds, code, env):
        (ds / "README").unlink()

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat"),
        ("new", "main"),
        untracked_in_the_way,
        ("new", "feat"),
        ("ops", "--json"),
        out_of_the_way,
        ("new", "feat"),
    ])
    ours, theirs = both["ours"], both["theirs"]
    assert ours["rcs"] == theirs["rcs"] == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    assert "would be overwritten by checkout" in ours["runs"][6].stderr
    kinds = [[(r.get("command"), "done" in r) for r in journal(both[n]["ds"], env)] for n in both]
    assert kinds[0] == kinds[1]
    records = [json.loads(l) for l in (ours["ds"] / ".tether/ops.jsonl").read_text().splitlines()]
    refused = [r["id"] for r in records if r.get("command") == "new"][2]
    assert [r for r in records if r.get("done") == refused] == []
    shown = [json.loads(both[n]["runs"][7].stdout)[0] for n in ("ours", "theirs")]
    assert shown[0]["status"] == shown[1]["status"] == "started"
    assert ours["world"]["workspace"] == theirs["world"]["workspace"]
    assert git("symbolic-ref", "--short", "HEAD", cwd=ours["ds"], env=env).strip() == "feat"


def test_a_new_b_the_vcs_refuses_before_making_the_bookmark_journals_no_done_record(tmp_path, env, tether, ref):
    """`new -b NAME REV` that git refuses (a local file in the way) makes
    no bookmark: like any move the VCS refuses, the entry stays started,
    as tether-vcs leaves it, and the same command once the cause is gone
    finishes it.  (A bookmark git made before failing is another matter:
    test_new_open.py's read-only .git test.)"""
    def out_of_the_way(ds, code, env):
        (ds / "README").unlink()

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat"),
        ("new", "main"),
        untracked_in_the_way,
        ("new", "-b", "side", "feat"),
        ("ops", "--json"),
        out_of_the_way,
        ("new", "-b", "side", "feat"),
    ])
    ours, theirs = both["ours"], both["theirs"]
    assert ours["rcs"] == theirs["rcs"] == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    assert "would be overwritten by checkout" in ours["runs"][6].stderr
    kinds = [[(r.get("command"), "done" in r) for r in journal(both[n]["ds"], env)] for n in both]
    assert kinds[0] == kinds[1]
    records = [json.loads(l) for l in (ours["ds"] / ".tether/ops.jsonl").read_text().splitlines()]
    refused = [r["id"] for r in records if r.get("command") == "new"][2]
    assert [r for r in records if r.get("done") == refused] == []
    shown = [json.loads(both[n]["runs"][7].stdout)[0] for n in ("ours", "theirs")]
    assert shown[0]["status"] == shown[1]["status"] == "started"
    assert ours["world"]["workspace"] == theirs["world"]["workspace"]
    assert git("symbolic-ref", "--short", "HEAD", cwd=ours["ds"], env=env).strip() == "side"


def test_remove_keeps_the_key_s_last_snapshot_error(tmp_path, env, tether, ref):
    """tether-vcs leaves a removed object's cached fingerprint error in
    workspace.toml until the next snapshot replaces the table."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("add", "gone", "../missing", "--kind", "file"),
        ("status", "--json"),
        ("remove", "gone"),
    ])
    assert_same(both)
    assert "[last_snapshot_errors.gone]" in both["ours"]["world"]["workspace"]


# --- orders ---------------------------------------------------------------------

def two_stores(ds, code, env):
    for name in ("c1", "c2"):
        repo = code.parent / name
        repo.mkdir()
        git("init", "-q", "-b", "main", cwd=repo, env=env)
        (repo / "m.py").write_text(f"{name} = 1\n")
        git("add", ".", cwd=repo, env=fixed_env(env))
        git("commit", "-q", "-m", name, cwd=repo, env=fixed_env(env))


def test_commit_plan_lists_objects_by_path_parts(tmp_path, env, tether, ref):
    """`foo.bar` before `foo` (their manifests' paths: foo.bar.toml sorts
    before foo.toml), in the actions and in the context's states."""
    def setup(ds, code, env):
        with_data_dir(ds, code, env)
        two_stores(ds, code, env)

    keys = ["foo", "foo.bar", "foo/x", "a"]
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        *[("add", k, "../d", "--kind", "file", "--pin", "record") for k in keys],
        ("commit", "-m", "one", "--dry-run", "--json"),
        ("commit", "-m", "one", "--json"),
    ], setup=setup)
    assert_same(both)
    mine, theirs = runs_json(both, 5)
    assert [a["key"] for a in mine["actions"]] == [a["key"] for a in theirs["actions"]] == \
        ["a", "foo/x", "foo.bar", "foo", ""]  # the last: the dataset's own commit
    assert list(mine["context"]["states"]) == list(theirs["context"]["states"])
    commits = [[r["plan"]["actions"] for r in journal(both[n]["ds"], env) if r.get("command") == "commit"]
               for n in ("ours", "theirs")]
    assert [[a["key"] for a in p] for p in commits[0]] == [[a["key"] for a in p] for p in commits[1]]


def test_undo_lists_restored_tables_and_keys_in_tether_vcs_s_order(tmp_path, env, tether, ref):
    """workspace.toml's tables in tether-vcs's order (base_states first),
    the keys sorted, not in the order the file holds them."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a/c", "../c1", "--kind", "git"),
        ("add", "a.b", "../c2", "--kind", "git"),
        ("commit", "-m", "one"),
        ("new", "-b", "feat", "--eager"),
        ("undo", "--json"),
    ], setup=two_stores)
    assert_same(both)
    mine, theirs = (json.loads(normalise(both[n]["runs"][5].stdout)) for n in ("ours", "theirs"))
    assert mine == theirs
    line = [r for r in mine["restored"] if r.startswith("workspace.toml restored")]
    assert line == ["workspace.toml restored (bookmark; base_states, working_refs, fork_points, last_snapshot "
                    "of a.b, a/c)"]


def test_undo_of_an_older_entry_lists_what_it_left_in_order(tmp_path, env, tether, ref):
    """Undoing an older `new` by id: what later operations changed again is
    left and named, in tether-vcs's order."""
    def last_new_id(ds, code, env):
        ids = [json.loads(l)["id"] for l in (ds / ".tether/ops.jsonl").read_text().splitlines()
               if json.loads(l).get("command") == "new"]
        (ds.parent / "first-new").write_text(ids[0])

    def undo_first_new(runner):
        def step(ds, code, env):
            op = (ds.parent / "first-new").read_text()
            proc = runner("undo", op, "--json", cwd=ds, check=False)
            (ds.parent / "undo.json").write_text(proc.stdout)
            (ds.parent / "undo.rc").write_text(str(proc.returncode))
        return step

    shown = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        both = run_both(tmp_path / name, env, runner, runner, [
            INIT,
            ("add", "a/c", "../c1", "--kind", "git"),
            ("add", "a.b", "../c2", "--kind", "git"),
            ("commit", "-m", "one"),
            ("new", "-b", "feat", "--eager"),
            last_new_id,
            ("new", "-b", "other", "--eager"),
            undo_first_new(runner),
        ], setup=two_stores)
        world = both["ours"]["ds"].parent
        shown[name] = (int((world / "undo.rc").read_text()),
                       json.loads(normalise((world / "undo.json").read_text())))
    assert shown["ours"][0] == shown["theirs"][0]
    assert shown["ours"][1] == shown["theirs"][1], (shown["ours"][1], shown["theirs"][1])


# --- deliberate differences -------------------------------------------------------

def test_keys_and_stores_in_tether_s_own_files_are_refused(tmp_path, env, tether, ref):
    """tether-vcs registers a key `.tether` (manifest .tether/objects/.tether.toml)
    and a file object whose store is the dataset's own .tether directory;
    tether refuses both, writing nothing.  A key with a dot segment that
    tether-vcs wrote is still read."""
    def setup(ds, code, env):
        with_data_dir(ds, code, env)

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", ".tether", "../d", "--kind", "file"),
        ("add", "x/.hidden", "../d", "--kind", "file"),
        ("add", "inside", ".tether", "--kind", "file"),
        ("add", "conf", "tether.toml", "--kind", "file"),
    ], setup=setup)
    assert both["ours"]["rcs"] == [0, 1, 1, 1, 1]
    assert both["theirs"]["rcs"] == [0, 0, 0, 0, 0]
    assert "starts with '.'" in both["ours"]["errors"][1]
    assert "would be tether's own files" in both["ours"]["errors"][3]
    assert sorted(p.name for p in (both["ours"]["ds"] / ".tether/objects").rglob("*.toml")) == []
    # ours reads what tether-vcs registered
    theirs = both["theirs"]["ds"]
    world = tmp_path / "world"
    (tmp_path / "theirs").rename(world)
    try:
        status = tether.json("status", cwd=world / "ds")
        assert sorted(o["key"] for o in status["objects"]) == [".tether", "conf", "inside", "x/.hidden"]
        assert status["manifest_hash"] == ref.json("status", cwd=world / "ds")["manifest_hash"]
    finally:
        world.rename(tmp_path / "theirs")
    assert theirs.exists()


def test_log_of_a_relative_locator_is_read_from_here(tmp_path, env, tether, ref):
    """`log PATH --kind git` takes a relative PATH from the current
    directory, as `add` does; tether-vcs refuses it ("not absolute ...
    written by hand", a message meant for manifests)."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("log", "../code", "--kind", "git", "--json"),
    ])
    assert both["ours"]["rcs"] == [0, 0] and both["theirs"]["rcs"] == [0, 1]
    assert "is not absolute" in both["theirs"]["errors"][1]
    entries = json.loads(both["ours"]["runs"][1].stdout)
    code = tmp_path / "ours" / "code"
    assert [e["id"] for e in entries] == git("rev-list", "main", cwd=code, env=env).split()
    absolute = ref.json("log", str(code), "--kind", "git", cwd=both["ours"]["ds"])
    assert [e["id"] for e in absolute] == [e["id"] for e in entries]


def test_open_json_keeps_tether_vcs_s_fields_first_and_adds_the_handle_s(tmp_path, env, tether, ref):
    """`open --json` gives tether-vcs's four fields, same values, in its
    order; then the handle's own fields and the object's key and kind."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("add", "f", "../d", "--kind", "file"),
        ("commit", "-m", "one"),
        ("open", "a", "--json"),
        ("open", "f", "--json"),
    ], setup=with_data_dir)
    assert_same(both)
    extra = {4: ["path", "sha", "worktree", "branch", "object", "kind"],
             5: ["uri", "version_id", "object", "kind"]}
    for i, added in extra.items():
        mine, theirs = runs_json(both, i)
        assert list(theirs) == ["key", "read_only", "address", "type"]
        assert list(mine) == list(theirs) + added
        assert {k: mine[k] for k in theirs} == theirs


def test_init_ignores_the_temporaries_of_tether_s_writes(tmp_path, env, tether, ref, jj_bin):
    """.tether/.gitignore has one line more than tether-vcs writes, `.*.tmp`:
    a temporary a killed write leaves is never snapshotted by jj nor shown
    by git.  tether-vcs keeps the line; its dataset gains it from ours."""
    both = run_both(tmp_path, env, tether, ref, [INIT])
    lines = {n: (both[n]["ds"] / ".tether/.gitignore").read_text().splitlines() for n in both}
    assert lines["ours"] == lines["theirs"] + [".*.tmp"]
    for name in ("ours", "theirs"):
        ds = both[name]["ds"]
        (ds / ".tether/objects").mkdir(exist_ok=True)
        (ds / ".tether/objects/.a.toml.0123456789abcdef.tmp").write_text("half")
        status = git("status", "--porcelain", "--untracked-files=all", cwd=ds, env=env)
        assert (".tether/objects/.a.toml.0123456789abcdef.tmp" in status) == (name == "theirs"), name
        jenv = dict(env, JJ_USER="Test", JJ_EMAIL="test@example.com", JJ_CONFIG=str(tmp_path / "jj.toml"),
                    PATH=f"{jj_bin.parent}:{env.get('PATH', '')}")
        subprocess.run([str(jj_bin), "git", "init", "--colocate"], cwd=ds, env=jenv, check=True,
                       capture_output=True)
        files = subprocess.run([str(jj_bin), "file", "list"], cwd=ds, env=jenv, check=True,
                               capture_output=True, text=True).stdout
        assert (".a.toml.0123456789abcdef.tmp" in files) == (name == "theirs"), name
    # tether-vcs run on our dataset keeps the line
    world = tmp_path / "world"
    (tmp_path / "ours").rename(world)
    try:
        ref("add", "a", "../code", "--kind", "git", cwd=world / "ds", env=jenv)
        assert (world / "ds/.tether/.gitignore").read_text().splitlines()[-1] == ".*.tmp"
    finally:
        world.rename(tmp_path / "ours")


def test_an_object_of_a_kind_no_backend_reads_is_an_error_object(tmp_path, env, tether, ref):
    """A manifest of a kind this tether has no backend for (written by hand,
    or by a newer tether): tether-vcs fails the whole `status` (exit 1);
    tether reports that object as an error, cached or not -- never `clean`
    -- beside the others' states, and exits 1 too."""
    def unknown_kind(ds, code, env):
        p = ds / ".tether/objects/b.toml"
        p.write_text(p.read_text().replace('kind = "file"', 'kind = "zarrfs"'))

    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../d", "--kind", "file"),
        ("add", "b", "../d", "--kind", "file"),
        ("commit", "-m", "one"),
        unknown_kind,
        ("status", "b", "--json"),
        ("status", "--json"),
        ("status", "--snapshot", "--json"),
    ], setup=with_data_dir)
    assert both["ours"]["rcs"] == both["theirs"]["rcs"] == [0, 0, 0, 0, 0, 1, 1, 1]
    theirs = both["theirs"]["errors"][5:]
    assert theirs == [theirs[0]] * 3 and "unknown backend kind: 'zarrfs'" in theirs[0]
    for i in (5, 6, 7):
        shown = {o["key"]: o for o in json.loads(both["ours"]["runs"][i].stdout)["objects"]}
        assert shown["b"]["state"] == "error", i
        assert shown["b"]["error"].startswith("[b] unknown backend kind: 'zarrfs' (known: "), i
        if "a" in shown:
            assert shown["a"]["state"] == "clean" and shown["a"]["error"] is None


def test_errors_under_json_are_an_object_on_stderr(tmp_path, env, tether, ref):
    """Under --json an error is one JSON object on stderr (message, hint,
    code, key, kind, exit: docs/cli.md); tether-vcs prints its `error: `
    line there whatever --json says.  The message and exit code agree."""
    both = run_both(tmp_path, env, tether, ref, [
        INIT,
        ("add", "a", "../code", "--kind", "git"),
        ("status", "nosuch", "--json"),
        ("restore", "a", "--json"),
    ])
    assert both["ours"]["rcs"] == both["theirs"]["rcs"] == [0, 0, 1, 1]
    for i in (2, 3):
        mine = json.loads(both["ours"]["runs"][i].stderr.strip().splitlines()[-1])["error"]
        assert both["ours"]["errors"][i] is None
        assert both["theirs"]["errors"][i] == f"error: {mine['message']}"
        assert mine["exit"] == 1 and mine["code"] == "config"
