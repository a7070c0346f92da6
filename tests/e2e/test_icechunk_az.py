"""icechunk repositories on az:// against Azurite on 127.0.0.1, through
tether's Azure store (Shared Key, If-Match / If-None-Match): icechunk 2.x
writes the repository in the container; tether fingerprints, pins, forks,
promotes, logs, diffs and opens it, and creates one with `add --create`;
icechunk reads back every ref tether moved; of eight processes racing a
fork from the same head exactly one wins.  The lifecycle is the one
test_icechunk_s3.py runs on s3://.

tether-vcs takes icechunk on s3:// only (docs/compatibility.md), so there
is no comparison with it here.  gs:// is not offered: icechunk's writes to
fake-gcs-server are refused ("400 invalid uploadType", see
test_lake_gs_az.py), so it could not be tested."""
from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import test_azure_file as azf
from conftest import BUILD_DIR, ROOT
from test_icechunk_s3 import Writer, icechunk2_python
from test_lake_gs_az import Server

CONTAINER = "tt-lake"
DS = "1ce5a2c4"


@pytest.fixture
def az(env, tmp_path):
    srv = Server("az", tmp_path)
    url = srv.env["AZURITE_BLOB_STORAGE_URL"]
    yield url
    srv.close()


@pytest.fixture
def ic2(az):
    w = Writer(icechunk2_python(), az, {"AZURITE_BLOB_STORAGE_URL": az, "AZURE_STORAGE_ACCOUNT_KEY": azf.KEY})
    yield w
    w.close()


def secrets(url: str) -> dict:
    return {"account_name": azf.ACCOUNT, "account_key": azf.KEY,
            "endpoint_url": f"{url}/{azf.ACCOUNT}", "allow_http": True}


def make_dataset(root: Path, runner, url: str) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", DS, cwd=root)
    s = secrets(url)
    f = root / ".tether/secrets.toml"
    f.write_text(f'[uris."az://{CONTAINER}/"]\naccount_name = "{s["account_name"]}"\n'
                 f'account_key = "{s["account_key"]}"\nendpoint_url = "{s["endpoint_url"]}"\n'
                 "allow_http = true\n")
    f.chmod(0o600)
    return root


def manifest(root: Path, key: str) -> str:
    return re.sub(r'captured_at = "[^"]*"\n', "",
                  (root / ".tether/objects" / f"{key}.toml").read_text())


def test_icechunk2_on_az_end_to_end(az, ic2, tether, tmp_path):
    repo = f"az://{CONTAINER}/repos/arr"
    ic2("create", repo)
    s1 = ic2("commit", repo, "main", "a1")["snapshot_id"]
    ds = make_dataset(tmp_path / "ds", tether, az)
    tether("add", "arr", repo, "--kind", "icechunk", cwd=ds)
    pin1 = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["arr"]
    assert ic2("tags", repo)["names"] == [pin1]
    assert ic2("lookup_tag", repo, pin1)["snapshot_id"] == s1
    assert f'snapshot_id = "{s1}"' in manifest(ds, "arr")

    s2 = ic2("commit", repo, "main", "a2")["snapshot_id"]
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [(x["key"], x["state"]) for x in st["objects"]] == [("arr", "modified")]
    pin2 = tether.json("commit", "-m", "second", cwd=ds)["pinned"]["arr"]
    assert sorted(ic2("tags", repo)["names"]) == sorted([pin1, pin2])
    assert tether.json("verify", cwd=ds) == {"arr": {"status": "ok", "message": ""}}
    log = tether.json("log", "arr", cwd=ds)
    assert [e["id"] for e in log] == [e[0] for e in ic2("ancestry", repo, "main")["entries"]]
    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ds)
    assert d[0]["detail"]["entries"] == [{"path": "/a2", "change": "added", "detail": "array"}]
    handle = tether.json("open", "arr", cwd=ds)
    assert handle["uri"] == repo and handle["snapshot_id"] == s2, handle

    tether("new", "-b", "feature", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.feature"
    assert ic2("branches", repo)["names"] == ["main", branch]
    s3id = ic2("commit", repo, branch, "on-feature")["snapshot_id"]
    tether("commit", "-m", "feature work", cwd=ds)
    out = tether.json("promote", cwd=ds)
    assert out["fast_forwarded"] == {"arr": {"snapshot_id": s3id}}
    assert ic2("lookup_branch", repo, "main")["snapshot_id"] == s3id
    s4 = ic2("commit", repo, "main", "after-promote")["snapshot_id"]
    assert [e[0] for e in ic2("ancestry", repo, "main")["entries"]][:2] == [s4, s3id]
    ic2("check", repo)


def test_icechunk_add_create_on_az(az, ic2, tether, tmp_path):
    ds = make_dataset(tmp_path / "ds", tether, az)
    repo = f"az://{CONTAINER}/made/new"
    tether("add", "new", repo, "--kind", "icechunk", "--create", cwd=ds)
    s1 = ic2("commit", repo, "main", "x")["snapshot_id"]
    tether("commit", "-m", "made", cwd=ds)
    assert f'snapshot_id = "{s1}"' in manifest(ds, "new")
    ic2("check", repo)


def test_racing_conditional_forks_on_az_exactly_one_wins(az, ic2, tmp_path):
    repo = f"az://{CONTAINER}/race/arr"
    ic2("create", repo)
    base = ic2("commit", repo, "main", "base")["snapshot_id"]
    targets = [ic2("commit", repo, "main", f"t{i}")["snapshot_id"] for i in range(8)]
    ic2("branch", repo, "feat", base)
    loc = json.dumps({"uri": repo})
    env = {**os.environ, "TT_BACKEND_CONFIG": json.dumps(secrets(az))}

    def fork(target: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BUILD_DIR / "tt_backend"), "icechunk", loc, "fork",
                               json.dumps({"snapshot_id": target}), "feat",
                               json.dumps({"snapshot_id": base})],
                              capture_output=True, text=True, env=env, timeout=120)

    with ThreadPoolExecutor(8) as pool:
        procs = list(pool.map(fork, targets))
    won = [t for t, p in zip(targets, procs) if p.returncode == 0]
    assert len(won) == 1, [(p.returncode, p.stdout, p.stderr) for p in procs]
    for p in procs:
        if p.returncode:
            assert "feat moved meanwhile" in p.stderr and f"expected {base}" in p.stderr, p.stderr
            assert azf.KEY not in p.stderr
    assert ic2("lookup_branch", repo, "feat")["snapshot_id"] == won[0]
    ic2("check", repo)
