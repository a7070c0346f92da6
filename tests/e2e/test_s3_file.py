"""`file` objects on s3:// (single objects) against a moto server on
127.0.0.1: the same state and manifest as tether-vcs (with its obstore
extra) writes for the same bucket, and drift seen after an overwrite.

Needs moto[server] and botocore (tests/requirements.txt) and, for the
reference side, obstore beside tether-vcs; skipped without them."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

moto = pytest.importorskip("moto")
botocore_session = pytest.importorskip("botocore.session")
pytest.importorskip("obstore")

BUCKET = "tt-e2e"
VBUCKET = "tt-e2e-versioned"


@pytest.fixture
def s3():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    client = botocore_session.get_session().create_client(
        "s3", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=BUCKET)
    client.create_bucket(Bucket=VBUCKET)
    client.put_bucket_versioning(Bucket=VBUCKET, VersioningConfiguration={"Status": "Enabled"})
    yield url, client
    proc.kill()
    proc.wait()


def make_dataset(root: Path, runner, url: str) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", "5e3e2e01", cwd=root)
    with open(root / "tether.toml", "a") as f:
        f.write("\n[backends.file]\nstorage_options = { allow_http = true }\n")
    secrets = root / ".tether/secrets.toml"
    secrets.write_text(
        f'[uris."s3://{BUCKET}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        'access_key_id = "testing"\nsecret_access_key = "testing"\n'
        f'[uris."s3://{VBUCKET}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        'access_key_id = "testing"\nsecret_access_key = "testing"\n'
    )
    secrets.chmod(0o600)
    return root


def manifest(root: Path, key: str) -> str:
    text = (root / ".tether/objects" / f"{key}.toml").read_text()
    return "\n".join(l for l in text.splitlines() if not l.startswith("captured_at"))


def test_s3_object_states_match_reference(s3, tether, ref, tmp_path, env):
    url, client = s3
    client.put_object(Bucket=BUCKET, Key="data/a.bin", Body=b"hello")
    client.put_object(Bucket=VBUCKET, Key="v/b.bin", Body=b"one")
    client.put_object(Bucket=VBUCKET, Key="v/b.bin", Body=b"two!")
    ours = make_dataset(tmp_path / "ours", tether, url)
    theirs = make_dataset(tmp_path / "theirs", ref, url)
    for runner, root in ((tether, ours), (ref, theirs)):
        runner("add", "obj", f"s3://{BUCKET}/data/a.bin", "--kind", "file", cwd=root)
        runner("add", "ver", f"s3://{VBUCKET}/v/b.bin", "--kind", "file", cwd=root)
        runner("commit", "-m", "s3 objects", cwd=root)
    for key in ("obj", "ver"):
        assert manifest(ours, key) == manifest(theirs, key), key
    state = manifest(ours, "obj")
    assert 'type = "object"' in state and "size = 5" in state
    assert 'etag = "5d41402abc4b2a76b9719d911017c592"' in state  # md5("hello")
    assert "version_id" in manifest(ours, "ver")
    assert "version_id" not in state
    # each reads the other's dataset: clean
    assert ref("status", cwd=ours).returncode == 0
    assert tether("status", cwd=theirs).returncode == 0

    # an overwrite is drift, seen by both
    client.put_object(Bucket=BUCKET, Key="data/a.bin", Body=b"HELLO")
    mine = tether.json("status", "--json", cwd=ours)
    refs = ref.json("status", "--json", cwd=ours)
    assert mine == refs
    assert "obj" in str(mine)

    # a deleted object: verify names it, and never a credential
    client.delete_object(Bucket=BUCKET, Key="data/a.bin")
    proc = tether("verify", cwd=ours, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "obj" in out, out
    assert "secret_access_key" not in out and "testing" not in out.replace("tt-e2e", ""), out


def test_s3_versioned_object_verify_deep_matches_reference(s3, tether, ref, tmp_path):
    """verify --deep of a recorded version asks the store for that version:
    ok while it exists, missing once it is deleted; as tether-vcs says."""
    url, client = s3
    client.put_object(Bucket=VBUCKET, Key="v/c.bin", Body=b"first")
    ds = make_dataset(tmp_path / "ds", tether, url)
    tether("add", "ver", f"s3://{VBUCKET}/v/c.bin", "--kind", "file", "--file", "versioned",
           cwd=ds)
    tether("commit", "-m", "versioned", cwd=ds)
    client.put_object(Bucket=VBUCKET, Key="v/c.bin", Body=b"second")
    mine = tether.json("verify", "--deep", cwd=ds, check=False)
    assert mine == ref.json("verify", "--deep", cwd=ds, check=False)
    assert mine["ver"]["status"] == "ok", mine
    version = [l for l in manifest(ds, "ver").splitlines() if l.startswith("version_id")][0]
    vid = version.split("=", 1)[1].strip().strip('"')
    client.delete_object(Bucket=VBUCKET, Key="v/c.bin", VersionId=vid)
    proc = tether("verify", "--deep", "--json", cwd=ds, check=False)
    mine = json.loads(proc.stdout)
    assert mine["ver"]["status"] == "missing", mine
    assert proc.returncode == 1
    assert json.loads(ref("verify", "--deep", "--json", cwd=ds, check=False).stdout)["ver"]["status"] == "missing"


def test_s3_without_credentials_says_where_they_go(s3, tether, tmp_path, env):
    """A store whose secrets entry names an endpoint but no keys, with none
    in the environment either: the error names the secrets.toml entry to
    put them under and the AWS variables that would do instead (as
    docs/object-stores.md does), and nothing is recorded."""
    url, client = s3
    client.put_object(Bucket=BUCKET, Key="data/a.bin", Body=b"hello")
    for k in [k for k in env if k.startswith("AWS_")]:
        del env[k]
    env["AWS_EC2_METADATA_DISABLED"] = "true"  # no instance to ask either
    ds = make_dataset(tmp_path / "ds", tether, url)
    (ds / ".tether/secrets.toml").write_text(
        f'[uris."s3://{BUCKET}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n')
    tether("add", "a", f"s3://{BUCKET}/data/a.bin", "--kind", "file", cwd=ds)
    proc = tether("commit", "-m", "first", cwd=ds, check=False)
    assert proc.returncode == 1, proc
    for words in (f'[uris."s3://{BUCKET}/"]', ".tether/secrets.toml", "access_key_id",
                  "secret_access_key", "profile", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                  "AWS_PROFILE"):
        assert words in proc.stderr, (words, proc.stderr)
    status = tether.json("status", cwd=ds, check=False)
    error = [o for o in status["objects"] if o["key"] == "a"][0]["error"]
    assert f'[uris."s3://{BUCKET}/"]' in error and "AWS_PROFILE" in error, error
    log = subprocess.run(["git", "log", "--oneline"], cwd=ds, capture_output=True, text=True)
    assert "first" not in log.stdout
