"""`file` objects and prefixes on az:// against Azurite on 127.0.0.1
(scripts/objstore-tools.sh installs it once per machine): the same states,
listings and manifests as tether-vcs (with its obstore extra) on the same
container, each reading the other's dataset; drift seen; Shared Key
checked by the server, so a wrong key is an error naming the container,
never the key.

Azurite keeps no blob versions, so a versioned Azure object is tested
only for what is recorded without one (no version_id; open refuses).
Skipped when Azurite is not installed, except under TETHER_REQUIRE_TOOLS=1
(CI), where that fails."""
from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("obstore")

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "devstoreaccount1"
# Azurite's published development key (not a secret).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "tt-e2e"


def tool(name: str) -> str:
    out = subprocess.run([str(ROOT / "scripts/objstore-tools.sh"), "path", name],
                         capture_output=True, text=True, check=True).stdout.strip()
    if not os.access(out, os.X_OK):
        msg = f"{name} is not installed (scripts/objstore-tools.sh install {name})"
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return out


def _create_container(port: int, container: str) -> None:
    date = email.utils.formatdate(usegmt=True)
    sts = (f"PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:2021-08-06\n"
           f"/{ACCOUNT}/{ACCOUNT}/{container}\nrestype:container")
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), sts.encode(), hashlib.sha256).digest())
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{ACCOUNT}/{container}?restype=container", method="PUT",
        headers={"x-ms-date": date, "x-ms-version": "2021-08-06",
                 "Authorization": f"SharedKey {ACCOUNT}:{sig.decode()}"})
    assert urllib.request.urlopen(req).status == 201


@pytest.fixture
def azurite(env):
    exe = tool("azurite")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [exe, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
         "--disableTelemetry", "--skipApiVersionCheck"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    _create_container(port, CONTAINER)
    # What the object-store libraries read to reach Azurite (tether-vcs
    # passes no Azure secrets to obstore; both sides take these).
    env["AZURE_STORAGE_USE_EMULATOR"] = "true"
    env["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{port}"
    os.environ["AZURE_STORAGE_USE_EMULATOR"] = "true"
    os.environ["AZURITE_BLOB_STORAGE_URL"] = f"http://127.0.0.1:{port}"
    import obstore
    from obstore.store import from_url
    store = from_url(f"az://{CONTAINER}", client_options={"allow_http": True})
    yield port, store, obstore
    os.environ.pop("AZURE_STORAGE_USE_EMULATOR", None)
    os.environ.pop("AZURITE_BLOB_STORAGE_URL", None)
    proc.kill()
    proc.wait()


def make_dataset(root: Path, runner) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", "5e3e2e03", cwd=root)
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


def test_azure_objects_and_prefixes_match_reference(azurite, tether, ref, tmp_path):
    _, store, obs = azurite
    for k, body in (("d/a.bin", b"hello"), ("d/sub/b.bin", b"bravo!"), ("d/é.txt", b"u"),
                    ("d/", b""), ("other", b"x")):
        obs.put(store, k, body)
    for i in range(30):
        obs.put(store, f"many/{i:03d}", b"m" * i)
    ours = make_dataset(tmp_path / "ours", tether)
    theirs = make_dataset(tmp_path / "theirs", ref)
    objects = {"obj": f"az://{CONTAINER}/d/a.bin", "dir": f"az://{CONTAINER}/d/",
               "many": f"az://{CONTAINER}/many/", "all": f"az://{CONTAINER}/"}
    for runner, root in ((tether, ours), (ref, theirs)):
        for key, uri in objects.items():
            runner("add", key, uri, "--kind", "file", "--file", "versioned", cwd=root)
        runner("commit", "-m", "azure", cwd=root)
    for key in objects:
        assert manifest(ours, key) == manifest(theirs, key), key
    obj = manifest(ours, "obj")
    assert 'type = "object"' in obj and "size = 5" in obj and 'etag = "0x' in obj
    assert "version_id" not in obj  # Azurite keeps no versions
    assert "count = 30" in manifest(ours, "many")
    assert listings(ours) == listings(theirs) and len(listings(ours)) == 3
    assert set(states(ref, ours).values()) == {"clean"}
    assert set(states(tether, theirs).values()) == {"clean"}

    # an overwrite: drift, seen alike by both
    obs.put(store, "d/a.bin", b"HELLO")
    obs.put(store, "many/zz", b"new")
    s_ours, s_ref = states(tether, ours), states(ref, theirs)
    assert s_ours == s_ref
    assert all(s_ours[k] != "clean" for k in ("obj", "dir", "many", "all")), s_ours
    for runner, root in ((tether, ours), (ref, theirs)):
        runner("pull", "-m", "changed", cwd=root)
    for key in objects:
        assert manifest(ours, key) == manifest(theirs, key), key
    assert tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ours) == \
        ref.json("diff", "--content", "HEAD~1", "HEAD", cwd=theirs)
    # no version id: the recorded state cannot be opened
    for runner in (tether, ref):
        proc = runner("open", "obj", "-r", "HEAD~1", cwd=ours, check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "version id" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_azure_secrets_entry_and_wrong_key(azurite, tether, tmp_path, env):
    port, store, obs = azurite
    obs.put(store, "s/a.bin", b"one")
    ds = make_dataset(tmp_path / "ds", tether)
    env.pop("AZURE_STORAGE_USE_EMULATOR")
    env.pop("AZURITE_BLOB_STORAGE_URL")
    secrets = ds / ".tether/secrets.toml"
    entry = (f'[uris."az://{CONTAINER}/"]\nendpoint_url = "http://127.0.0.1:{port}/{ACCOUNT}"\n'
             f'account_name = "{ACCOUNT}"\n')
    wrong = base64.b64encode(b"not the key, only bytes for a test!").decode()
    secrets.write_text(entry + f'account_key = "{wrong}"\n')
    secrets.chmod(0o600)
    tether("add", "a", f"az://{CONTAINER}/s/a.bin", "--kind", "file", cwd=ds)
    proc = tether("commit", "-m", "a", cwd=ds, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"az://{CONTAINER}/" in out and "403" in out and "secrets.toml" in out, out
    assert wrong not in out and KEY not in out, out
    assert "etag" not in (ds / ".tether/objects/a.toml").read_text()
    # the right key: committed
    secrets.write_text(entry + f'account_key = "{KEY}"\n')
    tether("commit", "-m", "a", cwd=ds)
    assert "size = 3" in manifest(ds, "a")
