"""`upgrade` of an alpha dataset (tether.toml version 1) holding a Neon
object, on the fake of Neon's API v2 (tests/support/neon_fake.py, every
request and answer validated against Neon's published spec).

The dataset is made by tether-vcs 0.1.0a5 itself, installed from PyPI with
its `neon` extra into the per-machine tool cache (see test_upgrade.py's
old_tether), talking to the fake: two commits pin two `tether.<hash>`
branches off main, and `new` forks the working branch
`tether.ws.<ws8>.db` off the second pin -- a pin with a child, which Neon
cannot delete, so the pins and the branch are renamed in place
(PATCH /projects/{id}/branches/{branch_id}), as tether-vcs 0.1.0b7 renames
them.  That release reads its API URL from the committed `[backends.neon]`;
the newer ones read it from `.tether/secrets.toml`, which the test writes
beside it.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, Runner, git
from test_upgrade import comparable, old_tether, renamed

sys.path.insert(0, str(ROOT / "tests" / "support"))
import neon_fake  # noqa: E402

PROJECT = neon_fake.PROJECT


@pytest.fixture
def neon(env):
    spec = neon_fake.spec_path()
    if not spec.exists():
        msg = f"Neon's API spec is not installed: {spec} (scripts/setup.sh fetches it)"
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    fake = neon_fake.FakeNeon(Path(tempfile.mkdtemp(prefix="tether-neon-")))
    env["NEON_API_KEY"] = fake.api_key
    try:
        yield fake
        fake.settle()
        assert fake.violations == [], "\n".join(fake.violations)
    finally:
        fake.close()


def alpha_neon(where: Path, env, fake) -> Path:
    """The alpha dataset: made by 0.1.0a5 against the fake."""
    old = Runner(old_tether("0.1.0a5", "neon", "httpx==0.28.1", "psycopg[binary]==3.2.3"), env)
    root = where / "ds"
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    old("init", cwd=root)
    with fake.lock:  # a project's default branch has its compute (0.1.0a5 reads through it)
        if not [e for e in fake.endpoints.values() if e["branch_id"] == fake.main.id]:
            fake._add_endpoint(fake.main, "read_write")
    with open(root / "tether.toml", "a") as f:
        f.write(f'\n[backends.neon]\napi_url = "{fake.url}"\n')
    old("add", "db", "--kind", "neon", "--project-id", PROJECT, "--database", "app",
        "--role", neon_fake.ROLE, cwd=root)
    old("commit", "-m", "first", cwd=root)
    fake.psql("main", "INSERT INTO t VALUES (1, 'one')")
    old("commit", "-m", "second", cwd=root)
    old("new", cwd=root)
    # what tether-vcs 0.1.0b7 (and this tether) ask of it: the API URL out of
    # the committed file, into the untracked secrets.toml
    cfg = root / "tether.toml"
    cfg.write_text(cfg.read_text().replace(f'\n[backends.neon]\napi_url = "{fake.url}"\n', ""))
    git("commit", "-q", "-m", "Neon's API URL moves to secrets.toml", "--", "tether.toml", cwd=root, env=env)
    secrets = root / ".tether" / "secrets.toml"
    secrets.write_text(f'[backends.neon]\napi_url = "{fake.url}"\n')
    secrets.chmod(0o600)
    text = (root / "tether.toml").read_text()
    assert "version = 1" in text and "[dataset]" not in text
    return root


def branch_names(fake) -> dict[str, str]:
    with fake.lock:
        return {b.id: b.name for b in fake.branches.values()}


def tree(fake) -> dict[str, tuple]:
    """Every branch of the fake by id: its name, parent and where it was cut."""
    with fake.lock:
        return {b.id: (b.name, b.parent_id, b.parent_lsn, b.protected) for b in fake.branches.values()}


def put_back(fake, names: dict[str, str], endpoints: set[str]) -> None:
    """The fake as it was before an upgrade renamed its branches (a rename
    is metadata only: each branch's data never moved) and made endpoints."""
    with fake.lock:
        assert set(fake.branches) == set(names)
        for bid, name in names.items():
            fake.branches[bid].name = name
        for eid in set(fake.endpoints) - endpoints:
            del fake.endpoints[eid]


def snapshot(root: Path, env) -> dict:
    files = lambda d: {p.relative_to(d).as_posix(): p.read_text() for p in sorted(d.rglob("*")) if p.is_file()} \
        if d.is_dir() else {}
    last = json.loads((root / ".tether/ops.jsonl").read_text().splitlines()[-1])
    history = git("log", "--all", "-p", "--format=%s|%an|%ae|%ad|%cd|%B", "--", ".", ":!.tether/.gitignore",
                  cwd=root, env=env)
    return {
        "objects": files(root / ".tether/objects"),
        "listings": files(root / ".tether/listings"),
        "tether.toml": (root / "tether.toml").read_text(),
        "workspace.toml": (root / ".tether/workspace.toml").read_text(),
        # commit ids differ (their manifests name each side's dataset id), and
        # the upgrade's own commit is made at its own moment
        "history": "\n".join(l.split("|")[0] if l.startswith("tether upgrade:") else l
                             for l in history.splitlines() if not l.startswith("index ")),
        "status": git("status", "--porcelain", cwd=root, env=env),
        "journal": {"command": last["command"], "keys": sorted(last), "plan": comparable(last["plan"]),
                    "result": {k: v for k, v in last["result"].items() if k not in ("vcs_commit", "rewritten_commits")},
                    "rewritten": len(last["result"]["rewritten_commits"])},
    }


def test_alpha_neon_dataset_comes_forward_as_tether_vcs_brings_it(tmp_path, env, tether, ref, neon):
    """0.1.0b7 and this tether upgrade the same alpha dataset (put back at the
    same path, the fake's branches put back under their old names) to the
    same plan, result, manifests, history and Neon branch names: each pin and
    the working branch renamed in place, the working branch still hanging off
    its pin."""
    fake = neon
    where = tmp_path / "alpha"
    root = alpha_neon(where, env, fake)
    pristine = tmp_path / "pristine"
    shutil.copytree(where, pristine, symlinks=True)
    names = branch_names(fake)
    with fake.lock:
        endpoints = set(fake.endpoints)
    old_pins = sorted(n for n in names.values() if n.startswith("tether.") and not n.startswith("tether.ws."))
    old_ws = [n for n in names.values() if n.startswith("tether.ws.")]
    assert len(old_pins) == 2 and len(old_ws) == 1
    with fake.lock:
        ws = fake.branch(old_ws[0])
        assert fake.branches[ws.parent_id].name in old_pins  # the pin has a child
    shape = {bid: t[1:] for bid, t in tree(fake).items()}

    sides = {}
    for name, runner in (("theirs", ref), ("ours", tether)):
        if name == "ours":
            shutil.move(str(where), str(tmp_path / "by-ref"))
            shutil.copytree(pristine, where, symlinks=True)
            put_back(fake, names, endpoints)
        plan = runner.json("upgrade", "--dry-run", cwd=root)
        text = runner("upgrade", "--dry-run", cwd=root).stdout
        out = runner.json("upgrade", cwd=root)
        ds = tomllib.loads((root / "tether.toml").read_text())["dataset"]["id"]
        after = tree(fake)
        assert {bid: t[1:] for bid, t in after.items()} == shape  # renamed in place: nothing re-cut
        sides[name] = (plan, text, out, snapshot(root, env), ds, {bid: t[0] for bid, t in after.items()})
    (pt, tt, t, st, tid, tnames), (po, to, o, so, oid, onames) = sides["theirs"], sides["ours"]
    assert po["context"]["parts"][0] == "dataset-namespaced refs"
    ops = [(a["op"], a["kind"]) for a in po["actions"] if a["op"].startswith("rename-")]
    assert ops == [("rename-pin", "neon")] * 2 + [("rename-branch", "neon")]
    assert comparable(renamed(po, po["context"]["dataset_id"], pt["context"]["dataset_id"])) == comparable(pt)
    ids = lambda text: __import__("re").sub(r"\b[0-9a-f]{8}\b", "<id>", text)
    assert ids(to) == ids(tt)
    drop = lambda r: {k: v for k, v in r.items() if k not in ("vcs_commit", "rewritten_commits")}
    assert renamed(drop(o), oid, tid) == drop(t)
    assert len(o["rewritten_commits"]) == len(t["rewritten_commits"]) >= 2
    assert renamed(so, oid, tid) == st
    assert renamed(onames, oid, tid) == tnames
    # the old names are gone from Neon, the new ones are in the namespace
    assert not set(onames.values()) & set(old_pins + old_ws)
    assert sorted(o["renamed_pins"]) == old_pins and list(o["renamed_branches"]) == old_ws
    assert all(onames[bid].startswith(f"tether.{oid}.") for bid, n in names.items() if n in old_pins)
    assert onames[ws.id] == o["renamed_branches"][old_ws[0]] and onames[ws.id].startswith(f"tether.ws.{oid}.")
    assert so["status"] == ""
    # both implementations work on what ours made
    ref("verify", cwd=root)
    tether("verify", cwd=root)
    assert tether("upgrade", cwd=root).stdout == "already at version 5\n"


def test_alpha_neon_rename_that_fails_stops_before_any_rewrite(tmp_path, env, tether, ref, neon):
    """A Neon rename the API refuses stops the upgrade before history or a
    manifest is rewritten (only the dataset id the renames are made under is
    kept); the renames that did happen are journalled, and the rerun skips
    them."""
    fake = neon
    root = alpha_neon(tmp_path / "alpha", env, fake)
    saved = tmp_path / "plan.json"
    tether("upgrade", "--plan", str(saved), cwd=root)
    plan = json.loads(saved.read_text())
    pins = sorted((a for a in plan["actions"] if a["op"] == "rename-pin"), key=lambda a: a["params"]["old"]["ref"])
    branch = next(a for a in plan["actions"] if a["op"] == "rename-branch")
    assert len(pins) == 2 and any(a["op"] == "rewrite-history" for a in plan["actions"])
    blocked, other = pins
    bid = fake.branch(blocked["params"]["old"]["ref"]).id
    fake.fail_next(500, method="PATCH", path=f"/branches/{bid}")
    files = lambda: {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                     if p.is_file() and ".git/" not in p.as_posix() and "/cache/" not in p.as_posix()
                     and p.name not in ("ops.jsonl", "lock")}
    before, head = files(), git("rev-parse", "HEAD", cwd=root, env=env)
    p = tether("upgrade", "--from-plan", str(saved), cwd=root, check=False)
    assert p.returncode == 1, p
    assert "upgrade stopped before rewriting history: 1 store rename(s) failed" in p.stderr
    assert f"rename-pin {blocked['params']['old']['ref']}: " in p.stderr and "injected fault 500" in p.stderr
    assert fake.api_key not in p.stderr + p.stdout
    after = files()
    cfg = after.pop("tether.toml").decode()
    assert f'[dataset]\nid = "{plan["context"]["dataset_id"]}"' in cfg and "version = 1" in cfg
    before.pop("tether.toml")
    assert after == before and git("rev-parse", "HEAD", cwd=root, env=env) == head
    now = set(branch_names(fake).values())
    assert blocked["params"]["old"]["ref"] in now and blocked["target"] not in now
    assert other["target"] in now and branch["target"] in now
    assert other["params"]["old"]["ref"] not in now and branch["params"]["old"] not in now
    last = json.loads((root / ".tether/ops.jsonl").read_text().splitlines()[-1])
    assert last["command"] == "upgrade" and last["result"]["stopped"] is True
    assert last["result"]["renamed_pins"] == {other["params"]["old"]["ref"]: other["target"]}
    assert last["result"]["renamed_branches"] == {branch["params"]["old"]: branch["target"]}
    assert not (root / ".tether/cache/upgrade-interrupted").exists()  # no manifest was touched
    # the cause gone, a fresh upgrade finishes under the same id, renaming only what is left
    out = tether.json("upgrade", cwd=root)
    assert out["renamed_pins"] == {blocked["params"]["old"]["ref"]: blocked["target"]}
    names = set(branch_names(fake).values())
    assert {blocked["target"], other["target"], branch["target"]} <= names
    assert not names & {blocked["params"]["old"]["ref"], other["params"]["old"]["ref"], branch["params"]["old"]}
    assert git("status", "--porcelain", cwd=root, env=env) == ""
    ref("verify", cwd=root)
    tether("verify", cwd=root)


@pytest.mark.parametrize("side", ["tether-vcs", "ours"])
def test_alpha_neon_pin_whose_new_name_is_taken_is_dropped_as_a_duplicate(tmp_path, env, tether, ref, neon, side):
    """A pin whose new name is already a branch (say two old pins of one
    state) is a duplicate: 0.1.0b7 deletes the old one -- lifting the
    protection 0.1.0a5 gave its pins first -- and so does this tether."""
    fake = neon
    runner = ref if side == "tether-vcs" else tether
    root = alpha_neon(tmp_path / "alpha", env, fake)
    saved = tmp_path / "plan.json"
    runner("upgrade", "--plan", str(saved), cwd=root)
    plan = json.loads(saved.read_text())
    with fake.lock:
        ws = next(b for b in fake.branches.values() if b.name.startswith("tether.ws."))
        leaf = next(a for a in plan["actions"] if a["op"] == "rename-pin"
                    and fake.branch(a["params"]["old"]["ref"]).id != ws.parent_id)
        assert fake.branch(leaf["params"]["old"]["ref"]).protected
        fake._create_branch({"branch": {"name": leaf["target"], "parent_id": fake.main.id}})
    out = runner.json("upgrade", "--from-plan", str(saved), cwd=root)
    assert out["renamed_pins"][leaf["params"]["old"]["ref"]] == leaf["target"]
    names = set(branch_names(fake).values())
    assert leaf["params"]["old"]["ref"] not in names and leaf["target"] in names
    assert all(n.startswith(f"tether.{plan['context']['dataset_id']}.") or n.startswith("tether.ws.") or n == "main"
               for n in names), names
    assert git("status", "--porcelain", cwd=root, env=env) == ""
