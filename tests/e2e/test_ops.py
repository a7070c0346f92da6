"""ops (the journal as the user sees it) and the drift warnings status gives
when the VCS moved behind tether's back."""
from __future__ import annotations

import json

import pytest

import journal_pairs
from conftest import git
from test_commit import DS, dataset, mem, store  # noqa: F401  (fixtures)


def test_ops_lists_newest_first(dataset, tether):
    tether("commit", "-m", "first", cwd=dataset)
    out = tether.json("ops", cwd=dataset)
    assert [e["command"] for e in out] == ["commit", "add", "add"]
    assert out[0]["status"] == "done" and out[0]["vcs_commit_gone"] is False
    text = tether("ops", "-n", "1", cwd=dataset).stdout.splitlines()
    assert len(text) == 1 and "  commit   pinned m1; recorded m2; vcs " in text[0]


def test_ops_flags_incomplete(dataset, tether):
    tether("commit", "-m", "first", cwd=dataset, check=False, env={"TETHER_FAULT": "commit:after-pin"})
    line = tether("ops", "-n", "1", cwd=dataset).stdout
    assert "INCOMPLETE" in line


def test_vcs_drift_after_reset(dataset, tether, mem, env):
    tether("commit", "-m", "first", cwd=dataset)
    mem("sys1", {"x": 1})
    out = tether.json("commit", "-m", "second", cwd=dataset)
    git("reset", "-q", "--hard", "HEAD~1", cwd=dataset, env=env)
    st = tether.json("status", cwd=dataset)
    assert len(st["vcs_drift"]) == 1
    d = st["vcs_drift"][0]
    assert d["commit"] == out["vcs_commit"] and d["referenced"] == {"m1": False}
    proc = tether("status", cwd=dataset)
    assert "is no longer in VCS history" in proc.stderr and "`gc` will release them" in proc.stderr
    assert tether.json("ops", cwd=dataset)[0]["vcs_commit_gone"] is True


def test_bookmark_left_warning(dataset, tether, env):
    tether("commit", "-m", "first", cwd=dataset)
    git("switch", "-q", "-c", "elsewhere", cwd=dataset, env=env)
    st = tether.json("status", cwd=dataset)
    assert any("has left bookmark 'main'" in w for w in st["bookmark_drift"])


# --- refused input writes nothing --------------------------------------------------


def journal_text(root):
    return (root / ".tether/ops.jsonl").read_text()


@pytest.mark.parametrize("name", ["a b", "x..y", "bad~1", "x.lock", "HEAD", "-x"])
def test_new_with_a_bookmark_name_git_refuses_writes_nothing(dataset, tether, env, name):
    tether("commit", "-m", "first", cwd=dataset)
    before = journal_text(dataset)
    head = git("rev-parse", "HEAD", cwd=dataset, env=env)
    for extra in ((), ("--eager",), ("--dry-run",)):
        proc = tether("new", "-b", name, *extra, cwd=dataset, check=False)
        assert proc.returncode == 1, proc.stderr
        assert f"invalid bookmark name '{name}'" in proc.stderr, proc.stderr
        assert journal_text(dataset) == before
    assert git("rev-parse", "HEAD", cwd=dataset, env=env) == head
    assert git("branch", "--show-current", cwd=dataset, env=env).strip() == "main"
    # The next undo takes back the commit, not a refused `new`.
    assert tether.json("undo", cwd=dataset)["command"] == "commit"


def forge(root, entry):
    base = {"id": "f0f0f0f0f0f0", "at": "2026-12-01T00:00:00+00:00", "plan": None, "pre": {}, "undoes": None,
            "undone_by": None, "status": "done", "parent": None}
    with (root / ".tether/ops.jsonl").open("a") as f:
        f.write(json.dumps({**base, **entry}) + "\n")


@pytest.mark.parametrize("entry", [
    {"command": "commit", "result": {"vcs_commit": "--output=/tmp/x"}},
    {"command": "commit", "result": {"vcs_commit": "HEAD"}},
    {"command": "pull", "result": {"vcs_commit": None}, "pre": {"objects": {"../../escape": "x"}}},
    {"command": "set", "result": {}, "pre": {"objects": {"m1": 3}}},
    {"command": "add", "result": {}, "pre": {"workspace": "not [ toml"}},
    {"command": "new", "result": {"created": ["m1"], "working_refs": {"m1": "main"}}},
    {"command": "new", "result": {"created": ["m1"], "working_refs": {"m1": "tether.ws.ffffffff.x"}}},
    {"command": "new", "result": {"created_bookmark": "--force", "vcs": None}},
    {"command": "new", "result": {}, "pre": {"vcs": {"kind": "git", "id": None, "commit": None, "branch": "-b"}}},
    {"command": "new", "result": {}, "pre": {"vcs": {"kind": "jj", "id": "x", "commit": "0" * 40}}},
    {"command": "fork", "result": {"key": "m1", "ref": "main"}},
], ids=lambda e: e["command"] + ":" + ",".join(sorted({**e["result"], **e.get("pre", {})})))
def test_undo_of_a_malformed_or_hostile_entry_writes_nothing(dataset, tether, env, entry):
    tether("commit", "-m", "first", cwd=dataset)
    forge(dataset, entry)
    before = journal_text(dataset)
    files = {p: p.read_bytes() for p in (dataset / ".tether").rglob("*") if p.is_file()}
    proc = tether("undo", "f0f0f0f0f0f0", cwd=dataset, check=False)
    assert proc.returncode == 1 and "journal entry is malformed" in proc.stderr, proc.stderr
    assert journal_text(dataset) == before
    assert {p: p.read_bytes() for p in (dataset / ".tether").rglob("*") if p.is_file()} == files
    assert "main" in git("branch", "--list", "main", cwd=dataset, env=env)


def test_undo_passes_over_a_failed_command_that_changed_nothing(dataset, tether, env):
    """A failed command's entry that records only its failure (one written
    by an earlier tether, or a fork that failed) is no operation to undo."""
    start = git("rev-parse", "HEAD", cwd=dataset, env=env).strip()
    tether("commit", "-m", "first", cwd=dataset)
    forge(dataset, {"command": "new", "result": {"failed": "command failed (git switch -c a b)"}})
    assert "failed and changed nothing" in tether("undo", "f0f0f0f0f0f0", cwd=dataset, check=False).stderr
    out = tether.json("undo", cwd=dataset)
    assert out["command"] == "commit"
    assert git("rev-parse", "HEAD", cwd=dataset, env=env).strip() == start


# --- every command's journal record, against tether-vcs's ----------------------
#
# The same scenario through both implementations (journal_pairs.py): each
# step appends the same records (its entry with plan and pre, its progress,
# its done mark with result), exits the same, and each undo says the same.

W = journal_pairs.working_ref
SETUP = [("init", "--dataset-id", journal_pairs.DS), ("add", "code", "../code", "--kind", "git"),
         ("add", "lib", "../lib", "--kind", "git"), ("commit", "-m", "first")]

SCENARIOS = {
    # add, set, remove and commit (whole, --no-vcs, some keys), each undone
    "objects": [
        ("init", "--dataset-id", journal_pairs.DS), ("add", "code", "../code", "--kind", "git"),
        ("add", "lib", "../lib", "--kind", "git"), ("set", "lib", "--pin", "record"), ("undo",),
        ("commit", "-m", "first"), ("undo",), ("commit", "-m", "first"),
        journal_pairs.write("code", "main", "code = 2\n", "c2"), ("commit", "--no-vcs", "-m", "nv"), ("undo",),
        journal_pairs.write("lib", "main", "lib = 2\n", "l2"), ("commit", "-m", "some", "lib"), ("undo",),
        ("commit", "-m", "all"), ("remove", "lib"), ("undo",), ("remove", "lib"), ("commit", "-m", "rm"),
        ("undo",), ("add", "x", "../nowhere", "--kind", "git"), ("undo",),
        # refused input writes nothing on either side
        ("add", "code", "../code", "--kind", "git"), ("set", "nope", "--pin", "record"),
        ("set", "code", "--pin", "bogus"), ("remove", "nope"), ("commit", "-m", "nothing"),
        ("commit", "-m", "x", "nope"), ("commit", "--from-plan", "/nonexistent"),
    ],
    # add --create: the store made, undone while empty, reclaimed by gc --delete-stores
    "created stores": SETUP + [
        ("add", "made", "../made", "--kind", "git", "--create"), ("undo",),
        ("add", "made", "../made", "--kind", "git", "--create"), ("remove", "made"),
        ("gc", "--no-dry-run", "--delete-stores"), ("undo",),
        ("new", "-b", "cb", "--eager"), ("add", "made2", "../made2", "--kind", "git", "--create"), ("undo",),
    ],
    # new: lazy (and the fork a writable open makes), eager, back to the
    # trunk, --keep, --discard, at a revision, --adopt; each undone
    "new": SETUP + [
        ("new", "-b", "feat"), ("open", "code", "--writable"), ("undo",), ("undo",),
        ("new", "-b", "feat", "--eager"), ("undo",),
        ("new", "-b", "g", "--eager"), ("new", "main"), ("undo",), ("new", "main"), ("new", "g", "--keep"), ("undo",),
        ("new", "main"), journal_pairs.write("code", W("g"), "code = 5\n", "g5"), ("new", "g", "--discard"),
        ("undo",), ("new", "main"),
        journal_pairs.write("code", "main", "code = 2\n", "c2"), ("commit", "-m", "second"),
        ("new", "-b", "h", "--eager", "HEAD~1"), ("undo",),
        journal_pairs.in_git("branch", W("x"), "main", repo="code"), ("new", "-b", "x", "--adopt"), ("undo",),
        ("new", "nope"), ("open", "nope", "--writable"),
    ],
    # promote: fast-forward, refused (ff onto a moved base), merge, a
    # partial one (a conflict on one object), one key, a revision
    "promote": SETUP + [
        ("new", "-b", "f", "--eager"), journal_pairs.write("code", W("f"), "code = 2\n", "f2"), ("commit", "-m", "f"),
        ("promote", "-m", "ff"), ("undo",),
        ("new", "main"), ("new", "-b", "m", "--eager"), journal_pairs.write("code", W("m"), "code = 3\n", "m3"),
        journal_pairs.write("lib", W("m"), "lib = 3\n", "ml3"), ("commit", "-m", "m"),
        journal_pairs.write("lib", "main", "other = 1\n", "lib main moved", path="other.py"),
        ("promote", "--strategy", "ff"), ("promote", "-m", "merge"), ("undo",),
        ("new", "main"), ("new", "-b", "p", "--eager"), journal_pairs.write("code", W("p"), "code = 4\n", "p4"),
        journal_pairs.write("lib", W("p"), "lib = 4\n", "pl4"), ("commit", "-m", "p"),
        journal_pairs.write("lib", "main", "lib = 9\n", "conflict"),
        ("promote", "-m", "partial"), ("undo",), ("promote", "code", "-m", "one key"), ("undo",),
        journal_pairs.write("code", W("p"), "code = 6\n", "p6"), ("promote", "-r", "HEAD", "-m", "at a rev"),
        ("promote", "nope"),
    ],
    # pull on the trunk (all, one key, with a message), undone
    "pull": SETUP + [
        journal_pairs.write("code", "main", "code = 2\n", "up"), ("pull",), ("undo",),
        ("pull", "--key", "code"), journal_pairs.write("lib", "main", "lib = 2\n", "up2"),
        ("pull", "-m", "msg"), ("undo",), ("undo",), ("pull", "feat"),
    ],
    # restore --from onto an existing branch (a reset) and onto a lazy
    # bookmark (created), --at a native ref; each undone
    "restore": SETUP + [
        journal_pairs.write("code", "main", "code = 2\n", "up"), ("pull",),
        ("new", "-b", "r", "--eager"), ("restore", "code", "--from", "HEAD~1"), ("undo",),
        ("restore", "code", "--at", "main", "--discard"), ("undo",),
        ("new", "main"), ("new", "-b", "r2"), ("restore", "code", "lib", "--from", "HEAD~1"), ("undo",),
        ("restore", "code", "--from", "nope"),
        # a restore failing half-way (git will not make lib's branch) stays
        # INCOMPLETE: undo refuses it, the rerun finishes it
        ("new", "main"), ("new", "-b", "r4"), journal_pairs.in_git("branch", W("r4") + "/x", "main", repo="lib"),
        ("restore", "code", "lib", "--from", "HEAD"), ("undo",),
        journal_pairs.in_git("branch", "-D", W("r4") + "/x", repo="lib"), ("restore", "code", "lib", "--from", "HEAD"),
    ],
    # a writable open whose fork fails (git will not make the branch) stays
    # INCOMPLETE: undo refuses it, the rerun finishes it
    "failed fork": SETUP + [
        ("new", "-b", "lz"), journal_pairs.in_git("branch", W("lz") + "/x", "main", repo="code"),
        ("open", "code", "--writable"), ("undo",),
        journal_pairs.in_git("branch", "-D", W("lz") + "/x", repo="code"), ("open", "code", "--writable"),
    ],
    # gc: a --no-vcs commit's pin released, --release-foreign of a pin a
    # clone made, --prune-bookmarks; each undone
    "gc": SETUP + [
        journal_pairs.write("code", "main", "code = 2\n", "c2"), ("commit", "--no-vcs", "-m", "nv"),
        journal_pairs.in_git("checkout", "--", "."), ("gc",), ("gc", "--no-dry-run"), ("undo",),
        journal_pairs.in_git("clone", "-q", "ds", "clone", repo="."),
        journal_pairs.write("code", "main", "code = 3\n", "c3"), {"args": ("status",), "cwd": "clone"},
        {"args": ("commit", "-m", "in the clone"), "cwd": "clone"},
        ("gc", "--no-dry-run"), ("gc", "--no-dry-run", "--release-foreign"), ("undo",),
        ("new", "-b", "gone", "--eager"), ("new", "main"), journal_pairs.in_git("branch", "-D", "gone"),
        ("gc", "--no-dry-run", "--prune-bookmarks"), ("undo",),
    ],
    # repair: a pin and a working branch the stores lost
    "repair": SETUP + [
        journal_pairs.delete_tags("code"), ("repair", "--dry-run"), ("repair",),
        ("new", "-b", "rf", "--eager"), journal_pairs.in_git("branch", "-D", W("rf"), repo="code"), ("repair",),
    ],
    # abandon (and with --gc), drop, forget-workspace, recover
    "lifecycle": SETUP + [
        journal_pairs.write("code", "main", "code = 2\n", "c2"), ("commit", "-m", "second"),
        journal_pairs.write("code", "main", "code = 3\n", "c3"), ("commit", "-m", "third"),
        ("abandon", "HEAD~1"), ("undo",), ("abandon", "HEAD", "--gc"), ("abandon", "HEAD~5"),
        ("new", "-b", "d", "--eager"), journal_pairs.write("code", W("d"), "code = 4\n", "d4"),
        ("commit", "-m", "d"), ("new", "main"), ("drop", "d", "--no-dry-run"), ("undo",),
        ("drop", "main", "--no-dry-run"),
        journal_pairs.in_git("worktree", "add", "-q", "-b", "wt2", "../ds2", "main"), {"args": ("status",), "cwd": "ds2"},
        ("forget-workspace", "../ds2"), ("undo",), ("forget-workspace", "nope"), ("recover",),
    ],
    # import from a registry, and a sync that updates and removes; undone
    "import": [
        ("init", "--dataset-id", journal_pairs.DS),
        journal_pairs.registry([("a", "git", "code", None, "x"), ("team/b", "git", "lib", "record", "y")]),
        ("import", "../reg.sqlite", "--table", "registry"), ("undo",),
        ("import", "../reg.sqlite", "--table", "registry"), ("commit", "-m", "imported"),
        journal_pairs.registry([("a", "git", "code", "record", "x")]),
        ("import", "../reg.sqlite", "--table", "registry", "--sync"), ("undo",),
        ("import", "../reg.sqlite", "--table", "nope"),
    ],
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_each_commands_journal_records_match_tether_vcs(tmp_path, env, tether, ref, scenario):
    journal_pairs.assert_same(journal_pairs.pair(tmp_path, env, tether, ref, SCENARIOS[scenario]))
