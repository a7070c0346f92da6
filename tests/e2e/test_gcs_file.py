"""`file` objects and prefixes on gs:// against fake-gcs-server on
127.0.0.1 (scripts/objstore-tools.sh builds it once per machine): the same
states, listings and manifests as tether-vcs (with its obstore extra) on
the same bucket, each reading the other's dataset; drift seen; the
generation recorded as the version, so a versioned object opens at it.

Both sides reach the emulator the way the object-store libraries do: a
service-account file with gcs_base_url and disable_oauth, named by
GOOGLE_SERVICE_ACCOUNT.  Skipped when fake-gcs-server is not installed,
except under TETHER_REQUIRE_TOOLS=1 (CI), where that fails."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("obstore")

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "tt-gcs-e2e"


def tool(name: str) -> str:
    out = subprocess.run([str(ROOT / "scripts/objstore-tools.sh"), "path", name],
                         capture_output=True, text=True, check=True).stdout.strip()
    if not os.access(out, os.X_OK):
        msg = f"{name} is not installed (scripts/objstore-tools.sh install {name})"
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return out


class _Writer:
    """Writes objects through the JSON API (the emulator takes no XML PUT)."""

    def __init__(self, url: str):
        self.url = url

    def put(self, key: str, body: bytes) -> None:
        q = urllib.parse.urlencode({"uploadType": "media", "name": key})
        req = urllib.request.Request(f"{self.url}/upload/storage/v1/b/{BUCKET}/o?{q}",
                                     method="POST", data=body,
                                     headers={"Content-Type": "application/octet-stream"})
        assert urllib.request.urlopen(req).status == 200


@pytest.fixture
def gcs(env, tmp_path):
    exe = tool("fake-gcs-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [exe, "-backend", "memory", "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
         "-public-host", f"127.0.0.1:{port}", "-external-url", url, "-log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    req = urllib.request.Request(
        f"{url}/storage/v1/b", method="POST",
        data=json.dumps({"name": BUCKET, "versioning": {"enabled": True}}).encode(),
        headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(req).status == 200
    sa = tmp_path / "gcs-emulator.json"
    sa.write_text(json.dumps({"gcs_base_url": url, "disable_oauth": True, "client_email": "",
                              "private_key": "", "private_key_id": ""}))
    env["GOOGLE_SERVICE_ACCOUNT"] = str(sa)
    os.environ["GOOGLE_SERVICE_ACCOUNT"] = str(sa)
    yield url, _Writer(url)
    os.environ.pop("GOOGLE_SERVICE_ACCOUNT", None)
    proc.kill()
    proc.wait()


def make_dataset(root: Path, runner) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", "5e3e2e04", cwd=root)
    with open(root / "tether.toml", "a") as f:
        f.write("\n[backends.file]\nstorage_options = { allow_http = true }\n")
    return root


def manifest(root: Path, key: str) -> str:
    text = (root / ".tether/objects" / f"{key}.toml").read_text()
    return "\n".join(l for l in text.splitlines() if not l.startswith("captured_at"))


def listings(root: Path) -> dict[str, str]:
    d = root / ".tether/listings"
    return {p.name: p.read_text() for p in d.iterdir()} if d.is_dir() else {}


def states(runner, root: Path) -> dict[str, str]:
    out = runner.json("status", "--snapshot", cwd=root)
    return {o["key"]: o["state"] for o in out["objects"]}


def test_gcs_objects_and_prefixes_match_reference(gcs, tether, ref, tmp_path):
    _, w = gcs
    for k, body in (("d/a.bin", b"hello"), ("d/sub/b.bin", b"bravo!"), ("d/é.txt", b"u"),
                    ("other", b"x")):
        w.put(k, body)
    for i in range(30):
        w.put(f"many/{i:03d}", b"m" * i)
    ours = make_dataset(tmp_path / "ours", tether)
    theirs = make_dataset(tmp_path / "theirs", ref)
    objects = {"obj": f"gs://{BUCKET}/d/a.bin", "dir": f"gs://{BUCKET}/d/",
               "many": f"gs://{BUCKET}/many/", "all": f"gs://{BUCKET}/"}
    for runner, root in ((tether, ours), (ref, theirs)):
        for key, uri in objects.items():
            runner("add", key, uri, "--kind", "file", "--file", "versioned", cwd=root)
        runner("commit", "-m", "gcs", cwd=root)
    for key in objects:
        assert manifest(ours, key) == manifest(theirs, key), key
    obj = manifest(ours, "obj")
    assert 'type = "object"' in obj and "size = 5" in obj and "version_id" in obj
    assert "count = 30" in manifest(ours, "many")
    assert listings(ours) == listings(theirs) and len(listings(ours)) == 3
    assert set(states(ref, ours).values()) == {"clean"}
    assert set(states(tether, theirs).values()) == {"clean"}

    w.put("d/a.bin", b"HELLO")
    w.put("many/zz", b"new")
    s_ours, s_ref = states(tether, ours), states(ref, theirs)
    assert s_ours == s_ref
    assert all(s_ours[k] != "clean" for k in ("obj", "dir", "many", "all")), s_ours
    for runner, root in ((tether, ours), (ref, theirs)):
        runner("pull", "-m", "changed", cwd=root)
    for key in objects:
        assert manifest(ours, key) == manifest(theirs, key), key
    assert tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ours) == \
        ref.json("diff", "--content", "HEAD~1", "HEAD", cwd=theirs)
    # the first state opens at its generation, alike on both sides
    mine = tether.json("open", "obj", "-r", "HEAD~1", cwd=ours)
    theirs_open = ref.json("open", "obj", "-r", "HEAD~1", cwd=ours)
    assert mine["address"] == theirs_open["address"]
    assert mine["version_id"] and mine["version_id"] in obj


def test_gcs_prefix_past_one_page_matches_reference(gcs, tether, ref, tmp_path):
    """A prefix longer than a page (listed as parallel key ranges after the
    first page): the same count, manifest and listing as tether-vcs."""
    _, w = gcs
    from concurrent.futures import ThreadPoolExecutor
    keys = [f"r/{i:04d}" for i in range(1600)] + ["r/01", "r/1", "r/1a", "r/Z", "r/~"]
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: w.put(k, k.encode()[-2:]), keys))
    ours = make_dataset(tmp_path / "ours", tether)
    theirs = make_dataset(tmp_path / "theirs", ref)
    for runner, root in ((tether, ours), (ref, theirs)):
        runner("add", "r", f"gs://{BUCKET}/r/", "--kind", "file", cwd=root)
        runner("commit", "-m", "r", cwd=root)
    assert manifest(ours, "r") == manifest(theirs, "r")
    assert f"count = {len(keys)}" in manifest(ours, "r")
    assert listings(ours) == listings(theirs)
