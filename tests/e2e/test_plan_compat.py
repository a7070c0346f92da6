"""Plans and the journal: the C implementation against tether-vcs itself.

Saved plans made by tether-vcs's own `tether.plan.Plan` must load in ours
(digest verified) and serialize back byte for byte; plans ours builds must
load in `Plan.from_json` unedited; the text rendering must be Python's.  An
ops.jsonl written by tether-vcs's journal functions (with a torn last line)
must fold in ours into the entries `read_ops` gives, and one written by ours
must fold in `read_ops` into what ours reads.  The C side is driven through
tests/tools/tt_plan (one JSON case per line in, one JSON line out).
"""
from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tether.oplog import (
    OpEntry,
    append_op,
    mark_done,
    mark_progress,
    mark_undone,
    ops_path,
    read_ops,
)
from tether.plan import PRECONDITION_KINDS, REQUIRED_PRECONDITIONS, Action, Plan

AT = "2026-03-04T05:06:07+00:00"


def run_tool(build_dir: Path, cases: list[dict]) -> list[dict]:
    exe = build_dir / "tt_plan"
    if not exe.exists():
        pytest.fail(f"helper not built: {exe}")
    text = "".join(json.dumps(c) + "\n" for c in cases)
    proc = subprocess.run([str(exe)], input=text, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(out) == len(cases), proc.stdout
    return out


def one(build_dir: Path, case: dict) -> dict:
    return run_tool(build_dir, [case])[0]


def shown(plan: Plan) -> str:
    """What `_show_plan` prints without --json (typer.echo adds the newlines)."""
    lines = [f"plan: {plan.command} ({len(plan.writes)} write(s))", *plan.render()]
    return "".join(line + "\n" for line in lines)


# --------------------------------------------------------------------------- #
# Plans made by tether-vcs
# --------------------------------------------------------------------------- #
def _with_required(plan: Plan) -> Plan:
    for kind in sorted(REQUIRED_PRECONDITIONS.get(plan.command, ())):
        plan.require(kind, f"seen-{kind}", detail=f"{kind} changed: {{observed}}")
    return plan


def plan_commit() -> Plan:
    p = _with_required(Plan("commit", created_at=AT))
    p.context.update(message="first\nsecond \"quoted\" \\ tab\t", manifest_hash="ab" * 32,
                     states={"data/a": {"snapshot": "x1", "n": 3, "f": 0.1}},
                     pull=False, keys=None)
    p.actions.append(Action("pin", key="data/a", kind="memory", target="tether.4e9503fc.abc",
                            detail="new pin", params={"state": {"snapshot": "x1"},
                                                      "pin_id": "4e9503fc.abc"}))
    p.actions.append(Action("record", key="data/bb", kind="git", detail="already pinned"))
    p.actions.append(Action("vcs-commit", detail="first"))
    p.notes.append("data/c: unchanged")
    return p


def plan_new_unicode() -> Plan:
    p = _with_required(Plan("new", created_at=AT))
    p.context.update(rev="main", bookmark="fé✓", emoji="🙂 ok", nested={"a": [1, [2, [3, {}]], []]})
    for key, op, kind in [("données/α", "fork", "memory"), ("b", "reuse", "git"),
                          ("c🙂", "adopt", "lance"), ("d", "defer-fork", "icechunk"),
                          ("e", "trunk", ""), ("f", "share", "neon"), ("g", "refuse", "x")]:
        p.actions.append(Action(op, key=key, kind=kind, target=f"tether.ws.{key}",
                                detail=f"{op} of {key}   ", params={"k": key, "n": None}))
        if op == "fork":
            p.require("ref_absent", None, key=key, ref=f"tether.ws.{key}")
        elif op == "reuse":
            p.require("ref_head", {"snap": "s"}, key=key)
        elif op == "adopt":
            p.require("ref_present", "r", key=key, locator={"path": "/tmp/x"})
    p.notes.extend(["ünïcode note", "  indented", ""])
    return p


def plan_gc() -> Plan:
    p = _with_required(Plan("gc", created_at=AT))
    p.context.update(keep=["main", "dev"], big=2**62, neg=-(2**63), floats=[1e16, 1e-7, -0.0, 2.5])
    p.actions += [
        Action("unpin", key="k1", kind="memory", target="tether.x.1", detail="unreferenced"),
        Action("keep-pin", key="k1", kind="memory", target="tether.x.2", detail="foreign"),
        Action("delete-branch", key="a-much-longer-key/with/segments", kind="git",
               target="tether.ws.x.dev", detail=""),
        Action("keep-branch", key="k2", kind="git", target="", detail=""),
        Action("forget-working-ref", key="k3"),
        Action("delete-listing", target="listings/abc.jsonl"),
        Action("delete-store", key="k4", kind="lance", target="s3://b/p", detail="owned"),
        Action("keep-store", key="k5", kind="lance"),
    ]
    p.require("store_empty", None, key="k4", locator={"uri": "s3://b/p"})
    p.notes.append("keeping live bookmarks: main, dev")
    return p


def plan_promote() -> Plan:
    p = _with_required(Plan("promote", created_at=AT))
    p.actions.append(Action("fast-forward", key="k", kind="git", target="main", detail="ff",
                            params={"from": "a", "to": "b"}))
    p.actions.append(Action("merge", key="m", kind="dolt", target="main"))
    p.actions.append(Action("hold", key="h", kind="git", detail="held {braces}"))
    for key in ("k", "m"):
        p.require("base_state", "b0", key=key)
        p.require("pin_state", "p0", key=key)
    return p


def plan_empty_gc() -> Plan:
    return _with_required(Plan("gc", created_at=AT))


def plan_drop() -> Plan:
    p = _with_required(Plan("drop", created_at=AT))
    p.actions += [Action("leave-bookmark", target="feat"),
                  Action("abandon-commit", target="0123456789abcdef0123")]
    return p


def plan_import_no_keys() -> Plan:
    p = Plan("import", created_at=AT)
    p.require("manifest_hash", "h")
    p.actions += [Action("add", detail="x"), Action("update", kind="k"),
                  Action("remove", target="t", detail="\u3000")]
    return p


def plan_upgrade() -> Plan:
    p = Plan("upgrade", created_at=AT)
    p.require("config_version", 4, detail="dataset moved")
    p.actions.append(Action("repin", key="k", params={"old": "a", "new": "b"}))
    return p


PY_PLANS = {f.__name__: f for f in [plan_commit, plan_new_unicode, plan_gc, plan_promote,
                                     plan_empty_gc, plan_drop, plan_import_no_keys,
                                     plan_upgrade]}


@pytest.mark.parametrize("name", sorted(PY_PLANS))
def test_python_plan_loads_byte_identical(build_dir: Path, name: str) -> None:
    plan = PY_PLANS[name]()
    assert plan.missing_preconditions() == []
    text = plan.to_json()
    got = one(build_dir, {"op": "load", "text": text, "check": True})
    assert "error" not in got, got
    assert got["json"] == text
    assert got["digest"] == plan.digest()
    assert got["edited"] is False
    assert got["missing"] == ""
    assert got["writes"] == len(plan.writes)
    assert got["text"] == shown(plan)


@pytest.mark.parametrize("name", sorted(PY_PLANS))
def test_python_plan_edits_refused(build_dir: Path, name: str) -> None:
    plan = PY_PLANS[name]()
    data = json.loads(plan.to_json())
    data["notes"] = [*data["notes"], "sneaked in"]
    text = json.dumps(data, indent=2)
    assert Plan.from_json(text).edited()
    got = one(build_dir, {"op": "load", "text": text, "check": True})
    assert got["code"] == "stale-plan"
    assert "was edited after it was saved" in got["error"]
    # Without the check it loads, and says it was edited.
    got = one(build_dir, {"op": "load", "text": text})
    assert got["edited"] is True


def test_missing_preconditions_listed_as_python_lists_them(build_dir: Path) -> None:
    cases = []
    plans = []
    for command in ["commit", "new", "restore", "promote", "drop", "gc", "repair", "import"]:
        p = Plan(command, created_at=AT)
        for op, key in [("fork", "k'q"), ("reuse", "r"), ("adopt", 'a"b'),
                        ("fast-forward", "f"), ("merge", "m"), ("pin", "p")]:
            p.actions.append(Action(op, key=key))
        p.require("ref_head", "x", key="f")
        p.require("workspace_id", "w")
        plans.append(p)
        cases.append({"op": "load", "text": p.to_json()})
    for p, got in zip(plans, run_tool(build_dir, cases)):
        assert got["missing"] == ", ".join(p.missing_preconditions()), p.command
        text = p.to_json()
        checked = one(build_dir, {"op": "load", "text": text, "check": True})
        if p.missing_preconditions():
            assert checked["code"] == "stale-plan"
            assert f"this {p.command} plan lacks the {got['missing']} precondition(s)" in checked["error"]
        else:
            assert "error" not in checked


def test_other_versions_and_formats_refused(build_dir: Path) -> None:
    base = json.loads(plan_commit().to_json())
    v2 = {k: v for k, v in base.items() if k not in ("tether_version", "digest")}
    v2["format"] = 2
    v1 = {k: v for k, v in v2.items() if k != "preconditions"}
    v1["format"] = 1
    other = {**base, "tether_version": "0.1.0b6"}
    for doc, needle in [(v1, "an older tether"), (v2, "an older tether"),
                        (other, "tether 0.1.0b6")]:
        got = one(build_dir, {"op": "load", "text": json.dumps(doc)})
        assert got["code"] == "stale-plan"
        assert needle in got["error"] and got["error"].endswith("re-run the plan")
    got = one(build_dir, {"op": "load", "text": json.dumps({**base, "format": 2})})
    assert got["code"] == "stale-plan"
    assert got["error"] == "unsupported plan format 2"


def test_unknown_precondition_kind_refused(build_dir: Path) -> None:
    data = json.loads(plan_commit().to_json())
    data["preconditions"].append({"kind": "moon_phase"})
    with pytest.raises(Exception, match="unknown plan precondition 'moon_phase'"):
        Plan.from_json(json.dumps(data))
    got = one(build_dir, {"op": "load", "text": json.dumps(data)})
    assert got["error"] == "unknown plan precondition 'moon_phase'"


def test_python_conversions_match(build_dir: Path) -> None:
    """What Plan.from_dict converts (str() of non-strings, dict() of falsy
    values, notes iterated) ours converts the same way: the re-serialized
    plans (and so their digests) agree."""
    docs = [
        {"tether_version": "0.1.0b7", "format": "3", "command": "import",
         "notes": "ab", "actions": [{"op": 5, "key": None, "kind": True, "params": None}],
         "context": [], "created_at": 1.5, "digest": 0},
        {"tether_version": "0.1.0b7", "command": "gc", "notes": [1, None, {"a": [1.0]}],
         "preconditions": [{"kind": "store_empty", "key": 3, "detail": False,
                            "params": [["x", 1]]}], "digest": "abc"},
        {"tether_version": "0.1.0b7", "format": 3.7, "command": "x", "actions": {},
         "notes": {"n1": 1}},
    ]
    got = run_tool(build_dir, [{"op": "load", "text": json.dumps(d)} for d in docs])
    for doc, g in zip(docs, got):
        p = Plan.from_json(json.dumps(doc))
        assert "error" not in g, g
        assert g["json"] == p.to_json()
        assert g["edited"] == p.edited()
        assert g["text"] == shown(p)


# --------------------------------------------------------------------------- #
# Plans made by ours
# --------------------------------------------------------------------------- #
def _spec(plan: Plan) -> dict[str, Any]:
    d = plan.to_dict()
    return {"plan": {k: d[k] for k in ("command", "created_at", "context", "notes",
                                         "preconditions", "actions")}}


@pytest.mark.parametrize("name", sorted(PY_PLANS))
def test_our_plans_load_in_python(build_dir: Path, name: str) -> None:
    expected = PY_PLANS[name]()
    got = one(build_dir, {"op": "build", **_spec(expected)})
    assert "error" not in got, got
    loaded = Plan.from_json(got["json"])
    assert not loaded.edited()
    assert loaded.missing_preconditions() == []
    assert loaded.to_json() == got["json"]
    assert got["json"] == expected.to_json()
    assert got["text"] == shown(loaded)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["str", "int", "float", "none", "bool"]
    if depth < 3:
        kinds += ["list", "dict"]
    k = rng.choice(kinds)
    if k == "str":
        return _random_text(rng)
    if k == "int":
        return rng.choice([0, -1, 7, 2**53 + 1, -(2**63), 2**63 - 1])
    if k == "float":
        return rng.choice([0.1, -0.0, 1e16, 1e-7, 123456.789, 5e-324, 1.5])
    if k == "none":
        return None
    if k == "bool":
        return rng.random() < 0.5
    if k == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_random_text(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _random_text(rng: random.Random) -> str:
    alphabet = "abcxyz /._-'\"\\{}\n\t\x01é✓🙂\u2028\u3000\u00a0\u0085"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))


def test_random_plans_both_ways(build_dir: Path) -> None:
    rng = random.Random(20260304)
    plans = []
    for i in range(60):
        p = Plan(rng.choice(["commit", "new", "gc", "promote", "import", "pull", "repair"]),
                 created_at=AT)
        _with_required(p)
        for _ in range(rng.randrange(5)):
            p.context[_random_text(rng)] = _random_value(rng)
        for _ in range(rng.randrange(6)):
            op = rng.choice(["pin", "record", "unpin", "keep-pin", "trunk", "share", "hold",
                             "delete-store", "x" * rng.randrange(25)])
            p.actions.append(Action(op, key=_random_text(rng), kind=_random_text(rng),
                                    target=_random_text(rng), detail=_random_text(rng),
                                    params={_random_text(rng): _random_value(rng)}))
        for _ in range(rng.randrange(3)):
            p.require(rng.choice(sorted(PRECONDITION_KINDS)), _random_value(rng),
                      key=rng.choice([None, _random_text(rng)]), detail=_random_text(rng),
                      **{"p": _random_value(rng)})
        for _ in range(rng.randrange(3)):
            p.notes.append(_random_text(rng))
        plans.append(p)
    loads = run_tool(build_dir, [{"op": "load", "text": p.to_json()} for p in plans])
    builds = run_tool(build_dir, [{"op": "build", **_spec(p)} for p in plans])
    for i, (p, lo, bu) in enumerate(zip(plans, loads, builds)):
        assert "error" not in lo, (i, lo)
        assert lo["json"] == p.to_json(), i
        assert lo["edited"] is False, i
        assert lo["text"] == shown(p), i
        assert lo["missing"] == ", ".join(p.missing_preconditions()), i
        assert "error" not in bu, (i, bu)
        assert bu["json"] == p.to_json(), i
        assert not Plan.from_json(bu["json"]).edited(), i


# --------------------------------------------------------------------------- #
# The journal
# --------------------------------------------------------------------------- #
def _ops_line(e: OpEntry) -> str:
    flag = ""
    if e.incomplete:
        flag = "  (INCOMPLETE: never finished; see `tether repair --dry-run`)"
    elif e.undone_by:
        flag = f"  (undone by {e.undone_by})"
    if e.parent:
        flag += f"  (step of {e.parent})"
    return f"{e.id}  {e.at}  {e.command:<8} {e.summary()}{flag}"


def _compare_fold(build_dir: Path, root: Path) -> list[dict]:
    expected = read_ops(root)
    got = one(build_dir, {"op": "fold", "root": str(root)})
    assert "error" not in got, got
    entries = got["entries"]
    assert len(entries) == len(expected)
    for e, g in zip(expected, entries):
        assert g["record"] == e.to_dict()
        assert g["ops_json"] == {**e.to_dict(), "vcs_commit_gone": False}
        assert g["incomplete"] == e.incomplete
        assert g["undoable"] == e.undoable
        assert g["summary"] == e.summary()
        assert g["line"] == _ops_line(e)
    return entries


def _dataset(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    (root / ".tether").mkdir(parents=True)
    return root


def test_python_journal_folds_the_same(build_dir: Path, tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    plan = plan_new_unicode()
    commit = OpEntry.now("commit", plan=plan_commit().to_dict(), pre={"ws": {"a": 1}, "b": 2})
    commit.status = "started"
    append_op(root, commit)
    mark_progress(root, commit.id, "pin", key="data/a", pin="4e9503fc.abc")
    mark_progress(root, commit.id, "record", key="data/bb")
    mark_done(root, commit.id, {"pinned": {"data/a": "p", "data/bb": None},
                                "vcs_commit": "0123456789abcdef0123"}, {"b": 3, "c": [1]})

    new = OpEntry.now("new", plan=plan.to_dict(), pre={"workspace": {"bookmark": "main"}})
    new.status = "started"
    append_op(root, new)
    mark_progress(root, new.id, "fork", key="données/α", ref="tether.ws.x")

    drop = OpEntry.now("drop", pre={})
    drop.status = "started"
    append_op(root, drop)
    step = OpEntry.now("gc", parent=drop.id)
    step.status = "started"
    append_op(root, step)
    mark_done(root, step.id, {"unpinned": {"k": ["a", "b"]}, "deleted_working_refs": {}})
    mark_done(root, drop.id, {"bookmark": "feat", "abandoned": ["c1"], "gc": {}})

    add = OpEntry.now("add", result={"key": "k✓", "created": True})
    append_op(root, add)
    undo = OpEntry.now("undo", undoes=add.id)
    undo.status = "started"
    append_op(root, undo)
    mark_done(root, undo.id, {"summary": add.summary()}, {"restored": ["k✓"]}, undone=add.id)

    old = OpEntry.now("set", result={"changed": {"k": {"a": [1, 2]}}})
    append_op(root, old)
    mark_undone(root, old.id, "ffffffffffff")
    pull = OpEntry.now("pull", result={"pinned": {"a": 1}, "vcs_commit": None})
    append_op(root, pull)

    with ops_path(root).open("a", encoding="utf-8") as fh:
        fh.write('{"id": "torn00000000", "at": "' + AT + '", "comm')
    entries = _compare_fold(build_dir, root)
    assert [e["incomplete"] for e in entries] == [False, True, False, False, False, False,
                                                  False, False]

    # The next append (Python's) closes the torn line; both still agree.
    late = OpEntry.now("import", result={"added": [1, 2]})
    append_op(root, late)
    assert '"comm\n{"id": "' in ops_path(root).read_text()
    _compare_fold(build_dir, root)

    # And so does one of ours.
    with ops_path(root).open("a", encoding="utf-8") as fh:
        fh.write('{"done": "' + new.id + '", "res')
    got = one(build_dir, {"op": "journal", "root": str(root), "steps": [
        {"do": "begin", "as": "r", "command": "repair", "pre": {"x": "é"}},
        {"do": "done", "id": "r", "result": {"repinned": ["a"], "reforked": []}},
    ]})
    assert "error" not in got, got
    _compare_fold(build_dir, root)


def test_our_journal_folds_the_same_in_python(build_dir: Path, tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    plan = plan_gc().to_dict()
    got = one(build_dir, {"op": "journal", "root": str(root), "steps": [
        {"do": "begin", "as": "c", "command": "commit", "plan": plan_commit().to_dict(),
         "pre": {"workspace": {"states": {"k": "s"}}, "é": "✓"}},
        {"do": "progress", "id": "c", "action": "pin", "detail": {"key": "k", "n": 1.5}},
        {"do": "progress", "id": "c", "action": "record", "detail": None},
        {"do": "done", "id": "c", "result": {"pinned": {"k": "p"}, "vcs_commit": "abc"},
         "pre": {"vcs": "before"}},
        {"do": "begin", "as": "g", "command": "gc", "plan": plan},
        {"do": "progress", "id": "g", "action": "unpin", "detail": {"pin": "x"}},
        {"do": "begin", "as": "u", "command": "undo", "undoes": "c"},
        {"do": "done", "id": "u", "result": {"summary": "pinned k"}, "undone": "c"},
        {"do": "begin", "as": "s", "command": "new", "parent": "g"},
        {"do": "done", "id": "s", "result": {"created": ["b", "a"]}},
        {"do": "undone", "id": "s", "by": "u"},
    ]})
    assert "error" not in got, got
    ids = got["ids"]
    entries = _compare_fold(build_dir, root)
    by_id = {e["record"]["id"]: e for e in entries}
    assert by_id[ids["g"]]["incomplete"] is True
    assert by_id[ids["c"]]["record"]["undone_by"] == ids["u"]
    assert by_id[ids["c"]]["record"]["pre"] == {"workspace": {"states": {"k": "s"}}, "é": "✓",
                                                 "vcs": "before"}
    # Every line is what Python's json.dumps writes for the same record.
    for line in ops_path(root).read_text().splitlines():
        assert line == json.dumps(json.loads(line))


def test_malformed_middle_line_named(build_dir: Path, tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    good = json.dumps(OpEntry.now("add", result={"key": "k"}).to_dict())
    ops_path(root).write_text(good + "\n" + "{not json}\n" + good + "\n")
    got = one(build_dir, {"op": "fold", "root": str(root)})
    assert got["code"] == "parse"
    assert got["error"].startswith(".tether/ops.jsonl:2: ")


SUMMARY_KEYS = ["pinned", "vcs_commit", "created", "reset", "adopted", "reused",
                "pending_forks", "at", "from_commit", "key", "ref", "abandoned", "gc",
                "bookmark", "unpinned", "deleted_working_refs", "deleted_stores",
                "fast_forwarded", "merged", "added", "updated", "removed", "changed",
                "summary", "repinned", "reforked", "workspace", "unreferenced",
                "from_version", "to_version", "renamed_pins", "renamed_branches",
                "rewritten_commits"]
COMMANDS = ["commit", "new", "restore", "fork", "drop", "gc", "promote", "import", "add",
            "remove", "set", "pull", "undo", "repair", "forget-workspace", "abandon",
            "upgrade", "other"]


def _summary_value(rng: random.Random, depth: int = 0) -> Any:
    k = rng.randrange(9 if depth < 2 else 5)
    if k == 0:
        return None
    if k == 1:
        return _random_text(rng)
    if k == 2:
        return rng.choice([0, 1, 7, -3, 2**40, 1.5, 0.0, True, False])
    if k == 3:
        return "0123456789abcdef" * rng.randrange(3)
    if k == 4:
        return [rng.choice(["a", "b", "é", "0123456789abcdefXYZ"]) for _ in range(rng.randrange(4))]
    if k in (5, 6):
        return {rng.choice(["a", "b", "c", "é"]): _summary_value(rng, depth + 1)
                for _ in range(rng.randrange(4))}
    if k == 7:
        return [_summary_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {"a": [1, 2], "b": ["x", None]}


def test_random_summaries_match(build_dir: Path, tmp_path: Path) -> None:
    """Random results for every command: wherever OpEntry.summary() gives an
    answer (rather than raising on a shape it cannot read), ours gives the
    same one."""
    rng = random.Random(77)
    root = _dataset(tmp_path)
    lines = []
    expected = []
    while len(expected) < 400:
        command = rng.choice(COMMANDS)
        result = {rng.choice(SUMMARY_KEYS): _summary_value(rng) for _ in range(rng.randrange(6))}
        plan = rng.choice([None, {"context": {"rev": _summary_value(rng)}}, {"context": None}])
        e = OpEntry(id=f"{len(expected):012d}", at=AT, command=command, plan=plan,
                    result=result, undoes=rng.choice([None, "0123456789ab"]))
        try:
            want = e.summary()
        except Exception:
            continue
        expected.append(want)
        lines.append(json.dumps(e.to_dict()))
    ops_path(root).write_text("".join(line + "\n" for line in lines))
    got = one(build_dir, {"op": "fold", "root": str(root)})
    assert "error" not in got, got
    for i, (g, want) in enumerate(zip(got["entries"], expected)):
        assert g["summary"] == want, (i, lines[i])
