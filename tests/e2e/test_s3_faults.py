"""Faults between tether and an S3 server (moto behind a proxy on
127.0.0.1): a server slower than the read timeout, a body cut short, an
expired session token.  Each is a clear error naming the URI (never a
key), exit 1 and nothing recorded; a transient one is retried and the
command succeeds.  (A server dying mid-listing, a 500 storm and a refused
signature are in test_s3_prefix.py.)

Needs moto[server] and botocore (tests/requirements.txt)."""
from __future__ import annotations

import subprocess

import pytest

from s3server import KEY, FaultProxy, MotoS3

moto = pytest.importorskip("moto")

BUCKET = "tt-faults"
EXPIRED = ("status", 400, '<?xml version="1.0" encoding="UTF-8"?><Error><Code>ExpiredToken</Code>'
           "<Message>The provided token has expired.</Message></Error>")


@pytest.fixture
def s3():
    server = MotoS3(BUCKET)
    for i in range(30):
        server.client.put_object(Bucket=BUCKET, Key=f"p/{i:03d}", Body=b"x" * i)
    yield server
    server.close()


@pytest.fixture
def proxy(s3):
    p = FaultProxy(s3.port)
    yield p
    p.close()


def dataset(root, tether, url: str, extra: str = ""):
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    tether("init", "--dataset-id", "fa017e57", cwd=root)
    with open(root / "tether.toml", "a") as f:
        f.write("\n[backends.file]\nstorage_options = { allow_http = true }\n")
    secrets = root / ".tether/secrets.toml"
    secrets.write_text(
        f'[uris."s3://{BUCKET}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        f'access_key_id = "{KEY}"\nsecret_access_key = "{KEY}"\nsession_token = "tok-{KEY}"\n'
        + extra
    )
    secrets.chmod(0o600)
    tether("add", "p", f"s3://{BUCKET}/p/", "--kind", "file", cwd=root)
    return root


def head(root) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True).stdout


def refused(tether, ds, *needles: str) -> str:
    before = head(ds)
    proc = tether("commit", "-m", "p", cwd=ds, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"s3://{BUCKET}/" in out, out
    for n in needles:
        assert n in out.lower(), out
    assert KEY not in out.replace(BUCKET, ""), out
    assert "digest" not in (ds / ".tether/objects/p.toml").read_text()
    assert head(ds) == before
    return out


def listing(method: str, path: str) -> bool:
    return method == "GET" and "list-type=2" in path


def test_slow_server_past_the_timeout(s3, proxy, tether, tmp_path):
    ds = dataset(tmp_path / "ds", tether, proxy.url, "timeout = 1\n")
    proxy.hook = lambda m, p: ("slow", 3) if listing(m, p) else None
    refused(tether, ds, "timed out")
    # slow once: the retry answers in time
    proxy.fired = 0
    proxy.hook = lambda m, p: ("slow", 3) if listing(m, p) and proxy.fired < 1 else None
    tether("commit", "-m", "p", cwd=ds)
    assert proxy.fired == 1
    assert "count = 30" in (ds / ".tether/objects/p.toml").read_text()


def test_truncated_body(s3, proxy, tether, tmp_path):
    ds = dataset(tmp_path / "ds", tether, proxy.url)
    proxy.hook = lambda m, p: "truncate" if listing(m, p) else None
    refused(tether, ds)
    proxy.fired = 0
    proxy.hook = lambda m, p: "truncate" if listing(m, p) and proxy.fired < 2 else None
    tether("commit", "-m", "p", cwd=ds)
    assert proxy.fired == 2
    assert "count = 30" in (ds / ".tether/objects/p.toml").read_text()


def test_expired_token(s3, proxy, tether, tmp_path):
    ds = dataset(tmp_path / "ds", tether, proxy.url)
    proxy.hook = lambda m, p: EXPIRED
    out = refused(tether, ds, "expiredtoken", "secrets.toml")
    assert "tok-" not in out
    # fresh keys (here: the server accepting them again): the same commit works
    proxy.hook = None
    tether("commit", "-m", "p", cwd=ds)
    assert "count = 30" in (ds / ".tether/objects/p.toml").read_text()
