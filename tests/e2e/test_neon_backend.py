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
        assert fake.violations == [], "\n".join(fake.violations)
    finally:
        fake.close()


def new_dataset(root: Path, runner, env, fake, ds_id: str = DS, extra: str = "") -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", ds_id, cwd=root)
    secrets = root / ".tether" / "secrets.toml"
    secrets.write_text(f'[backends.neon]\napi_url = "{fake.url}"\ntimeout_s = 5\n{extra}')
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

