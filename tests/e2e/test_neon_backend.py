"""The `neon` backend end to end, against a fake of Neon's API v2.

Neon's control plane cannot run here, so the API side runs against
tests/support/neon_fake.py: written from Neon's published OpenAPI spec, it
validates every request tether sends and every response it returns against
that spec (a mismatch fails the test), and keeps each Neon branch as real
PostgreSQL 15 state.  The SQL side (the state probe, the quiescence check,
writes on a fork) runs over libpq against that PostgreSQL.  tether-vcs's
neon backend, driven against the same fake, gives the same manifests and
pin ids.  A real project is used instead when TETHER_TEST_NEON_PROJECT and
NEON_API_KEY are set (skipped otherwise).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT, git

sys.path.insert(0, str(ROOT / "tests" / "support"))
import neon_fake  # noqa: E402

DS = "0e0a1b2c"
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


def new_dataset(root: Path, runner, env, fake, ds_id: str = DS, extra: str = "") -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", ds_id, cwd=root)
    secrets = root / ".tether" / "secrets.toml"
    secrets.write_text(f'[backends.neon]\napi_url = "{fake.url}"\n{extra}')
    secrets.chmod(0o600)
    return root


def add(runner, ds: Path, key: str = "db", database: str = "app") -> None:
    runner("add", key, "--kind", "neon", "--project-id", PROJECT, "--database", database,
           "--role", neon_fake.ROLE, cwd=ds)


def manifest(ds: Path, key: str = "db") -> dict:
    return tomllib.loads((ds / ".tether" / "objects" / f"{key}.toml").read_text())


def names(fake) -> set[str]:
    return {b.name for b in fake.branches.values()}


def obj_state(tether, ds: Path, key: str = "db") -> str:
    return next(o["state"] for o in tether.json("status", cwd=ds)["objects"] if o["key"] == key)


def pin_branch_named(fake, text: str):
    name = text.split("pin ", 1)[1].split()[0]
    return fake.branch(name)


def pin_branch(fake, ds: Path, key: str = "db"):
    return fake.branch(manifest(ds, key)["pin"]["ref"])


def test_lifecycle_against_the_fake(tmp_path, tether, env, neon):
    fake = neon
    fake.psql("main", "INSERT INTO t VALUES (1, 'one')")
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds)
    st = tether.json("status", cwd=ds)
    assert st["objects"][0]["error"] is None, st
    tether.json("commit", "-m", "first", cwd=ds)
    m = manifest(ds)
    assert m["locator"] == {"project_id": PROJECT, "database": "app", "role": "tether",
                            "branch": "main"} or m["locator"]["project_id"] == PROJECT
    assert set(m["state"]) == {"lsn", "commit_xid", "branch"} and m["state"]["branch"] == "main"
    ref = m["pin"]["ref"]
    pin = fake.branch(ref)
    assert pin is not None and pin.parent_id == fake.main.id
    assert pin.parent_lsn == m["state"]["lsn"] and not pin.protected
    assert not [e for e in fake.endpoints.values() if e["branch_id"] == pin.id]
    assert tether.json("verify", cwd=ds)["db"]["status"] == "ok"
    # Nothing written: status is clean.
    assert obj_state(tether, ds) == "clean"

    # verify reports a deleted pin branch missing; repair cuts it again at
    # the recorded LSN (nothing committed on main since).
    with fake.lock:
        fake._delete_branch(pin)
    proc = tether("verify", cwd=ds, check=False)
    assert proc.returncode == 1 and "missing" in proc.stdout, proc.stdout
    tether("repair", cwd=ds)
    pin = fake.branch(ref)
    assert pin is not None and pin.parent_lsn == m["state"]["lsn"]
    assert tether.json("verify", cwd=ds)["db"]["status"] == "ok"

    # new: a child branch of the pin; open gives its endpoint's URL.
    tether("new", "-b", "feat", "--eager", cwd=ds)
    ws = f"tether.ws.{DS}.feat"
    fork = fake.branch(ws)
    assert fork is not None and fork.parent_id == pin.id
    h = tether.json("open", "db", cwd=ds)
    assert h["type"] == "NeonHandle" and h["read_only"] is False and h["key"] == ws
    assert neon_fake.PASSWORD not in json.dumps(h) and ":***@" in h["address"]
    assert fake.api_key not in json.dumps(h)
    url = tether("open", "db", "--with-password", cwd=ds).stdout.strip()
    assert neon_fake.PASSWORD in url
    ep = [e for e in fake.endpoints.values() if e["branch_id"] == fork.id]
    assert [e["type"] for e in ep] == ["read_write"] and ep[0]["id"] in url

    # write on the fork over libpq; commit records it; the pin keeps the old data.
    subprocess.run([str(neon_fake.PG_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", url,
                    "-c", "INSERT INTO t VALUES (2, 'two')"], check=True, capture_output=True)
    assert obj_state(tether, ds) == "modified"
    tether("commit", "-m", "on the fork", cwd=ds)
    m2 = manifest(ds)
    assert m2["state"]["branch"] == "main" and m2["state"]["timeline"] == ws
    assert m2["state"]["commit_xid"] != m["state"]["commit_xid"]
    pin2 = pin_branch(fake, ds)
    assert pin2.parent_id == fork.id
    assert fake.psql(pin.name, "SELECT id FROM t ORDER BY id") == [["1"]]
    assert fake.psql(pin2.name, "SELECT id FROM t ORDER BY id") == [["1"], ["2"]]

    # promote is refused with instructions; nothing moves.
    proc = tether("promote", cwd=ds, check=False)
    assert proc.returncode != 0
    assert "Neon cannot promote a child branch" in proc.stdout + proc.stderr
    assert fake.psql("main", "SELECT id FROM t ORDER BY id") == [["1"]]

    # A pin hangs off the working branch now: resetting it (uncommitted
    # writes discarded) lands on a sibling, the engine records that name, and
    # the old branch and its pin stay as they were.
    fake.psql(ws, "INSERT INTO t VALUES (3, 'three')")
    proc = tether("new", "feat", "--eager", cwd=ds, check=False)
    assert proc.returncode == 1 and "--discard" in proc.stderr
    tether("new", "feat", "--eager", "--discard", cwd=ds)
    sib = fake.branch(ws + ".2")
    assert sib is not None and sib.parent_id == pin2.id
    assert fake.branch(ws) is not None and pin_branch(fake, ds).parent_id == fork.id
    h = tether.json("open", "db", cwd=ds)
    assert h["key"] == ws + ".2"
    assert fake.psql(ws + ".2", "SELECT id FROM t ORDER BY id") == [["1"], ["2"]]

    # A read-only open of the pin gets a read_only endpoint.
    h = tether.json("open", "db", "-r", "HEAD", cwd=ds)
    assert h["read_only"] is True and h["key"] == pin2.name
    assert [e["type"] for e in fake.endpoints.values() if e["branch_id"] == pin2.id] == \
        ["read_only"]



def test_commit_refuses_while_writers_are_active_and_force_skips(tmp_path, tether, env, neon):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds)
    dsn = fake.dsn("main")
    writer = subprocess.Popen([str(neon_fake.PG_BIN / "psql"), "-X", "-q", dsn, "-c",
                               "SELECT pg_sleep(30)"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while time.time() < deadline and not fake.psql(
                "main", "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'"):
            time.sleep(0.2)
        before = names(fake)
        proc = tether("commit", "-m", "busy", cwd=ds, check=False)
        assert proc.returncode == 1
        assert "active writers detected" in proc.stderr and "--force" in proc.stderr
        assert proc.stderr.startswith("error: [neon] ")  # tether-vcs's wording
        assert names(fake) == before  # nothing pinned
        assert "state" not in manifest(ds)
        tether("commit", "-m", "forced", "--force", cwd=ds)
        assert pin_branch(fake, ds) is not None
    finally:
        writer.kill()
        writer.wait()


def test_two_databases_of_one_project_share_one_pin_per_commit(tmp_path, tether, env, neon):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds, "a", "app")
    add(tether, ds, "b", "other")
    tether("commit", "-m", "first", cwd=ds)
    ma, mb = manifest(ds, "a"), manifest(ds, "b")
    assert ma["pin"] == mb["pin"] and ma["state"] == mb["state"]
    pins = [n for n in names(fake) if n.startswith("tether.") and not n.startswith("tether.ws.")]
    assert pins == [ma["pin"]["ref"]]
    # One working branch per bookmark for both, one read_write endpoint on it.
    tether("new", "-b", "feat", "--eager", cwd=ds)
    ws = f"tether.ws.{DS}.feat"
    assert [n for n in names(fake) if n.startswith("tether.ws.")] == [ws]
    ha, hb = tether.json("open", "a", cwd=ds), tether.json("open", "b", cwd=ds)
    assert ha["key"] == hb["key"] == ws
    assert ha["address"].split("?")[0].endswith("/app") and hb["address"].split("?")[0].endswith("/other")
    br = fake.branch(ws)
    assert [e["type"] for e in fake.endpoints.values() if e["branch_id"] == br.id] == ["read_write"]
    fake.psql(ws, "INSERT INTO t VALUES (7, 'seven')", db="other")
    tether("commit", "-m", "on the fork", cwd=ds)
    ma, mb = manifest(ds, "a"), manifest(ds, "b")
    assert ma["pin"] == mb["pin"] and ma["state"]["timeline"] == ws


def test_endpoint_created_once_under_eight_concurrent_opens(tmp_path, tether, env, neon):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", cwd=ds)  # lazy: the first writable open forks
    ws = f"tether.ws.{DS}.feat"
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda _: tether("open", "db", "--json", cwd=ds, check=False),
                             range(8)))
    assert all(o.returncode == 0 for o in outs), [o.stderr for o in outs]
    addresses = {json.loads(o.stdout)["address"] for o in outs}
    assert len(addresses) == 1
    assert [n for n in names(fake) if n.startswith("tether.ws.")] == [ws]  # one fork too
    br = fake.branch(ws)
    eps = [e for e in fake.endpoints.values() if e["branch_id"] == br.id]
    assert [e["type"] for e in eps] == ["read_write"]
    assert eps[0]["id"] in addresses.pop()
    # Re-forking the working branch (no pin hangs off it) restores it onto
    # the pin: uncommitted writes are gone, the branch and endpoint remain.
    fake.psql(ws, "INSERT INTO t VALUES (4, 'four')")
    tether("new", "feat", "--eager", "--discard", cwd=ds)
    assert fake.branch(ws) is br and br.last_reset_at
    assert fake.psql(ws, "SELECT count(*) FROM t") == [["0"]]
    assert fake.branch(ws + ".2") is None
    assert obj_state(tether, ds) == "clean"


def test_undo_and_gc_release_pins_leaf_first(tmp_path, tether, env, neon):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds)
    tether("commit", "-m", "first", cwd=ds)
    first = manifest(ds)["pin"]["ref"]
    tether("new", "-b", "feat", "--eager", cwd=ds)
    ws = f"tether.ws.{DS}.feat"
    fake.psql(ws, "INSERT INTO t VALUES (5, 'five')")
    tether("commit", "-m", "second", cwd=ds)
    second = manifest(ds)["pin"]["ref"]
    assert fake.branch(second).parent_id == fake.branch(ws).id
    # undo uncommits: the second pin becomes a working-tree change; gc
    # releases it (a leaf) once --release-foreign says no clone holds it.
    tether("undo", cwd=ds)
    git("checkout", "HEAD", "--", ".tether/objects", cwd=ds, env=env)
    assert manifest(ds)["pin"]["ref"] == first
    tether("gc", "--no-dry-run", "--release-foreign", cwd=ds)
    assert fake.branch(second) is None
    # The first pin has the working branch hanging off it: it stays, and so
    # does every branch's parent (Neon deletes a branch only once its
    # children are gone).
    assert fake.branch(first) is not None and fake.branch(ws) is not None
    for br in fake.branches.values():
        assert br.parent_id is None or br.parent_id in fake.branches, br.name
    # The bookmark dropped from history: gc prunes its working branch; the
    # first pin, still referenced, stays.
    git("add", "-A", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "settle", cwd=ds, env=env)
    git("checkout", "-q", "main", cwd=ds, env=env)
    tether("new", "main", cwd=ds)
    git("branch", "-q", "-D", "feat", cwd=ds, env=env)
    git("reflog", "expire", "--expire=now", "--all", cwd=ds, env=env)
    git("gc", "-q", "--prune=now", cwd=ds, env=env)
    tether("gc", "--prune-bookmarks", "--force-prune", "--no-dry-run", cwd=ds)
    assert fake.branch(ws) is None and fake.branch(first) is not None


FAULTS = [
    pytest.param(dict(status=423, count=2, method="POST", path="/branches"), id="423-locked"),
    pytest.param(dict(status=429, count=1, retry_after=1), id="429-retry-after"),
    pytest.param(dict(status=503, count=2, method="GET"), id="503"),
]


@pytest.mark.parametrize("fault", FAULTS)
def test_transient_faults_are_retried(tmp_path, tether, env, neon, fault):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds)
    fake.fail_next(**fault)
    t0 = time.time()
    tether("commit", "-m", "first", cwd=ds)
    assert pin_branch(fake, ds) is not None
    assert not fake.faults  # every injected answer was seen, and retried past
    if fault.get("retry_after"):
        assert time.time() - t0 >= fault["retry_after"]
    assert tether.json("verify", cwd=ds)["db"]["status"] == "ok"


def test_a_slow_operation_is_polled_to_completion(tmp_path, tether, env, neon):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds)
    tether("commit", "-m", "first", cwd=ds)
    fake.slow_operations = 1.5
    tether("new", "-b", "feat", "--eager", cwd=ds)
    polled = [p for m, p, _ in fake.requests if m == "GET" and "/operations/" in p]
    assert polled, "the fork's operation was never polled"
    tether("open", "db", cwd=ds)
    fake.slow_operations = 0
    assert tether.json("verify", cwd=ds)["db"]["status"] == "ok"


def test_errors_are_named_and_nothing_is_half_recorded(tmp_path, tether, env, neon):
    fake = neon
    # A limit well above what a request to the fake takes on a loaded
    # machine (creating a branch runs PostgreSQL), and stalls past it.
    ds = new_dataset(tmp_path / "ds", tether, env, fake, extra="timeout_s = 10\n")
    add(tether, ds)
    # A permanent error names the request and Neon's message.
    fake.fail_next(500, count=1, method="POST", path="/branches")
    proc = tether("commit", "-m", "first", cwd=ds, check=False)
    assert proc.returncode == 1, (proc.stdout, proc.stderr, fake.requests)
    assert "Neon API POST /projects/" in proc.stderr and "injected fault 500" in proc.stderr
    assert "state" not in manifest(ds)
    # A timeout on a mutation is reported and the commit records nothing.
    # Neon applies it all the same (the fake does once its stall ends): the
    # pin branch cut at the old LSN is refused for the new state, named with
    # the fix (no commit records it: delete it); then the commit goes through.
    fake.stall_next(14, method="POST")
    proc = tether("commit", "-m", "first", cwd=ds, check=False)
    assert proc.returncode == 1 and "Neon may or may not have applied it" in proc.stderr, proc.stderr
    assert "state" not in manifest(ds)
    time.sleep(5)
    proc = tether("commit", "-m", "first", cwd=ds, check=False)
    if proc.returncode:
        assert "exists but hangs off" in proc.stderr and "delete that branch" in proc.stderr
        assert "state" not in manifest(ds)
        with fake.lock:
            fake._delete_branch(pin_branch_named(fake, proc.stderr))
        tether("commit", "-m", "first", cwd=ds)
    assert "state" in manifest(ds)
    assert tether.json("verify", cwd=ds)["db"]["status"] == "ok"
    # A wrong key: 401, named; the key is never printed.
    proc = tether("status", "--snapshot", cwd=ds, check=False, env={"NEON_API_KEY": "wrong-key-xyz"})
    assert "401" in proc.stdout + proc.stderr and "wrong-key-xyz" not in proc.stdout + proc.stderr
    # No key at all: the variable is named.
    proc = tether("commit", "-m", "x", cwd=ds, check=False, env={"NEON_API_KEY": ""})
    assert "NEON_API_KEY" in proc.stdout + proc.stderr
    # The API key never reaches the dataset, the journal or any output.
    for p in (ds / ".tether").rglob("*"):
        if p.is_file() and p.name != "secrets.toml":
            assert fake.api_key.encode() not in p.read_bytes(), p


def test_backends_lists_neon_as_installed_and_tested_against_the_fake(tmp_path, tether):
    row = next(r for r in tether.json("backends", cwd=tmp_path) if r["kind"] == "neon")
    assert row["installed"] is True and "fake" in row["note"]
    line = next(l for l in tether("backends", cwd=tmp_path).stdout.splitlines()
                if l.startswith("neon "))
    assert "tested against a fake" in line


def test_same_manifests_and_pin_ids_as_tether_vcs(tmp_path, tether, ref, env, neon):
    fake = neon
    fake.psql("main", "INSERT INTO t VALUES (1, 'one')")
    mine = new_dataset(tmp_path / "mine", tether, env, fake)
    theirs = new_dataset(tmp_path / "theirs", ref, env, fake)
    for ds, runner in ((mine, tether), (theirs, ref)):
        add(runner, ds, "a", "app")
        add(runner, ds, "b", "other")
    tether("commit", "-m", "first", cwd=mine)
    ours = {k: manifest(mine, k) for k in ("a", "b")}
    # Both would cut the same pin branch; the LSN moves with every branch
    # the fake cuts, so ours goes before tether-vcs cuts its own.
    with fake.lock:
        fake._delete_branch(fake.branch(ours["a"]["pin"]["ref"]))
    ref("commit", "-m", "first", cwd=theirs)
    for k in ("a", "b"):
        a, b = dict(ours[k]), manifest(theirs, k)
        a.pop("captured_at"), b.pop("captured_at")
        sa, sb = a.pop("state"), b.pop("state")
        assert a == b, k
        assert sa.keys() == sb.keys() and sa["commit_xid"] == sb["commit_xid"], k
        assert sa["branch"] == sb["branch"] == "main"
    # We read tether-vcs's dataset: verify, status, a fork it made.
    assert tether.json("verify", cwd=theirs)["a"]["status"] == "ok"
    ref("new", "-b", "feat", "--eager", cwd=theirs)
    ws = f"tether.ws.{DS}.feat"
    h_ref = ref.json("open", "a", cwd=theirs)
    h_ours = tether.json("open", "a", cwd=theirs)
    assert h_ours["address"] == h_ref["address"] and h_ours["key"] == h_ref["key"] == ws
    fake.psql(ws, "INSERT INTO t VALUES (2, 'two')")
    tether("commit", "-m", "fork work", cwd=theirs)
    m = manifest(theirs, "a")
    assert m["state"]["timeline"] == ws
    assert ref.json("verify", cwd=theirs)["a"]["status"] == "ok"
    # The pin opens read-only through the same endpoint for both.
    h_ref = ref.json("open", "a", "-r", "HEAD", cwd=theirs)
    h_ours = tether.json("open", "a", "-r", "HEAD", cwd=theirs)
    assert h_ours["address"] == h_ref["address"] and h_ours["key"] == h_ref["key"]
    assert h_ours["read_only"] is h_ref["read_only"] is True
    # A promote refused the same way.
    ours_p = tether("promote", cwd=theirs, check=False)
    theirs_p = ref("promote", cwd=theirs, check=False)
    assert ours_p.returncode == theirs_p.returncode != 0
    assert "Neon cannot promote a child branch" in theirs_p.stdout + theirs_p.stderr
    assert "Neon cannot promote a child branch" in ours_p.stdout + ours_p.stderr


@pytest.mark.skipif(not (os.environ.get("TETHER_TEST_NEON_PROJECT") and
                         os.environ.get("NEON_API_KEY")),
                    reason="a real Neon project: set TETHER_TEST_NEON_PROJECT and NEON_API_KEY")
def test_against_a_real_neon_project(tmp_path, tether, env):
    project = os.environ["TETHER_TEST_NEON_PROJECT"]
    env["NEON_API_KEY"] = os.environ["NEON_API_KEY"]
    database = os.environ.get("TETHER_TEST_NEON_DATABASE", "neondb")
    role = os.environ.get("TETHER_TEST_NEON_ROLE", "neondb_owner")
    ds = tmp_path / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
    tether("init", cwd=ds)
    tether("add", "db", "--kind", "neon", "--project-id", project, "--database", database,
           "--role", role, cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    assert tether.json("verify", cwd=ds)["db"]["status"] == "ok"
    tether("new", "-b", "probe", "--eager", cwd=ds)
    h = tether.json("open", "db", cwd=ds)
    assert h["read_only"] is False and ":***@" in h["address"]
    tether("new", "main", cwd=ds)
    tether("abandon", "probe", cwd=ds, check=False)
    tether("gc", cwd=ds, check=False)


def test_protected_pins_and_a_stalled_read(tmp_path, tether, env, neon):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake,
                     extra="protected_pins = true\ntimeout_s = 10\n")
    add(tether, ds)
    # A read that stalls past the time limit is retried (nothing to undo).
    fake.stall_next(14, method="GET")
    tether("commit", "-m", "first", cwd=ds)
    first = pin_branch(fake, ds)
    assert first.protected
    fake.psql("main", "INSERT INTO t VALUES (9, 'nine')")
    tether("commit", "-m", "second", cwd=ds)
    second = pin_branch(fake, ds)
    assert second.protected and second.name != first.name
    # Releasing a protected pin lifts the protection first (Neon refuses to
    # delete a protected branch).
    tether("undo", cwd=ds)
    git("checkout", "HEAD", "--", ".tether/objects", cwd=ds, env=env)
    tether("gc", "--no-dry-run", "--release-foreign", cwd=ds)
    assert fake.branch(second.name) is None and fake.branch(first.name) is not None
    patches = [b for m, p, b in fake.requests if m == "PATCH"]
    assert patches == [{"branch": {"protected": False}}]


def test_secrets_never_reach_the_dataset_or_the_journal(tmp_path, tether, env, neon):
    fake = neon
    ds = new_dataset(tmp_path / "ds", tether, env, fake)
    add(tether, ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", cwd=ds)  # lazy: the first writable open forks
    out = tether("open", "db", "--with-password", cwd=ds)
    assert neon_fake.PASSWORD in out.stdout and fake.api_key not in out.stdout + out.stderr
    shown = tether("open", "db", cwd=ds).stdout
    assert neon_fake.PASSWORD not in shown and ":***@" in shown
    fake.psql(f"tether.ws.{DS}.feat", "INSERT INTO t VALUES (1, 'x')")
    tether("commit", "-m", "second", cwd=ds)
    tether("ops", cwd=ds)
    history = git("log", "-p", "--all", cwd=ds, env=env)
    for secret in (fake.api_key, neon_fake.PASSWORD):
        assert secret not in history
        for p in (ds / ".tether").rglob("*"):
            if p.is_file() and p.name != "secrets.toml":
                assert secret.encode() not in p.read_bytes(), p
