"""`file` prefixes on s3:// against a moto server on 127.0.0.1: the same
states, listing names, listings and diffs as tether-vcs (with its obstore
extra) on the same bucket, through a listing of several pages; ETag and
size changes seen; a prefix that changes while it is being listed is read
again rather than recorded as a mix of two states.

Needs moto[server] and botocore (tests/requirements.txt) and obstore
beside tether-vcs."""
from __future__ import annotations

import http.client
import http.server
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

moto = pytest.importorskip("moto")
botocore_session = pytest.importorskip("botocore.session")
pytest.importorskip("obstore")

BUCKET = "tt-prefix"
BIG = 1150  # more than one page of 1000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3():
    port = _free_port()
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
    yield url, client, port
    proc.kill()
    proc.wait()


class _Proxy:
    """Forwards every request to moto; `hook` (if set) runs before a
    request for a second or later page of a listing is forwarded."""

    def __init__(self, upstream_port: int):
        self.hook = None
        self.fired = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.hook and ("continuation-token=" in self.path or "start-after=" in self.path):
                    proxy.fired += 1
                    answer = proxy.hook()
                    if answer == "drop":  # the server dies mid-listing
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if isinstance(answer, int):  # a status instead of the page
                        self.send_response(answer)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                conn.request(self.command, self.path, body=body or None,
                             headers={k: v for k, v in self.headers.items()})
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture
def proxy(s3):
    p = _Proxy(s3[2])
    yield p
    p.close()


def make_dataset(root: Path, runner, url: str) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", "5e3e2e02", cwd=root)
    with open(root / "tether.toml", "a") as f:
        f.write("\n[backends.file]\nstorage_options = { allow_http = true }\n")
    secrets = root / ".tether/secrets.toml"
    secrets.write_text(
        f'[uris."s3://{BUCKET}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        'access_key_id = "testing"\nsecret_access_key = "testing"\n'
    )
    secrets.chmod(0o600)
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


def fill(client, n: int = BIG) -> None:
    for k, body in (("pre/a.txt", b"alpha"), ("pre/sub/b.bin", b"bravo!"),
                    ("pre/é ü.txt", b"unicode"), ("pre/", b""), ("prefix-not", b"outside")):
        client.put_object(Bucket=BUCKET, Key=k, Body=body)
    for i in range(n):
        client.put_object(Bucket=BUCKET, Key=f"big/{i:05d}", Body=b"x" * (i % 7))


def test_s3_prefix_states_listings_and_diffs_match_reference(s3, tether, ref, tmp_path):
    url, client, _ = s3
    fill(client)
    ours = make_dataset(tmp_path / "ours", tether, url)
    theirs = make_dataset(tmp_path / "theirs", ref, url)
    objects = {"p": f"s3://{BUCKET}/pre/", "big": f"s3://{BUCKET}/big/",
               "all": f"s3://{BUCKET}/", "none": f"s3://{BUCKET}/nothing/"}
    for runner, root in ((tether, ours), (ref, theirs)):
        for key, uri in objects.items():
            runner("add", key, uri, "--kind", "file", "--file", "versioned", cwd=root)
        runner("commit", "-m", "prefixes", cwd=root)
    for key in objects:
        assert manifest(ours, key) == manifest(theirs, key), key
    assert 'type = "prefix"' in manifest(ours, "big")
    assert f"count = {BIG}" in manifest(ours, "big")
    assert "count = 0" in manifest(ours, "none")
    mine, refs = listings(ours), listings(theirs)
    assert mine == refs and len(mine) == 4
    assert any('"p":"pre"' in t for t in mine.values())  # the "pre/" marker object
    # each reads the other's dataset: clean
    assert set(states(ref, ours).values()) == {"clean"}
    assert set(states(tether, theirs).values()) == {"clean"}

    # an ETag change at the same size, a size change, a new key on the second page
    client.put_object(Bucket=BUCKET, Key="pre/a.txt", Body=b"ALPHA")
    client.put_object(Bucket=BUCKET, Key="big/00003", Body=b"longer now")
    client.put_object(Bucket=BUCKET, Key="big/zz-new", Body=b"new")
    s_ours, s_ref = states(tether, ours), states(ref, theirs)
    assert s_ours == s_ref
    assert s_ours["none"] == "clean"
    assert all(s_ours[k] not in ("clean", "error") for k in ("p", "big", "all")), s_ours
    for runner, root in ((tether, ours), (ref, theirs)):
        runner("pull", "-m", "changed", cwd=root)
    for key in objects:
        assert manifest(ours, key) == manifest(theirs, key), key
    assert listings(ours) == listings(theirs)
    d_ours = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ours)
    d_ref = ref.json("diff", "--content", "HEAD~1", "HEAD", cwd=theirs)
    assert d_ours == d_ref
    text = tether("diff", "--content", "HEAD~1", "HEAD", cwd=ours).stdout
    assert "big/zz-new" in text and "big/00003" in text and "pre/a.txt" in text, text


def test_s3_prefix_bad_keys_are_named(s3, tether, ref, tmp_path):
    url, client, _ = s3
    client.put_object(Bucket=BUCKET, Key="odd/ok", Body=b"1")
    client.put_object(Bucket=BUCKET, Key="odd/a//b", Body=b"2")
    ours = make_dataset(tmp_path / "ours", tether, url)
    theirs = make_dataset(tmp_path / "theirs", ref, url)
    for runner, root in ((ref, theirs), (tether, ours)):
        runner("add", "o", f"s3://{BUCKET}/odd/", "--kind", "file", cwd=root)
        proc = runner("commit", "-m", "odd", cwd=root, check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "digest" not in (root / ".tether/objects/o.toml").read_text()
    out = proc.stdout + proc.stderr
    assert "odd/a//b" in out and "empty path segment" in out, out
    assert "testing" not in out, out


def test_s3_prefix_changed_during_listing_is_read_again(s3, proxy, tether, tmp_path):
    """A writer overwrites a key already listed and adds one past it while
    the pages are read: the listing is a mix no moment of the bucket held.
    tether reads the prefix again and records a state the bucket really
    has: the next status is clean."""
    url, client, _ = s3
    fill(client)
    ds = make_dataset(tmp_path / "ds", tether, proxy.url)

    def writer():
        if proxy.fired == 1:
            client.put_object(Bucket=BUCKET, Key="big/00000", Body=b"rewritten")
            client.put_object(Bucket=BUCKET, Key="big/zz-late", Body=b"late")

    proxy.hook = writer
    tether("add", "big", f"s3://{BUCKET}/big/", "--kind", "file", cwd=ds)
    tether("commit", "-m", "big", cwd=ds)
    assert proxy.fired >= 2, proxy.fired  # the first reading, then another
    proxy.hook = None
    assert f"count = {BIG + 1}" in manifest(ds, "big")
    assert states(tether, ds) == {"big": "clean"}


def test_s3_prefix_that_keeps_changing_is_refused(s3, proxy, tether, tmp_path):
    url, client, _ = s3
    fill(client)
    ds = make_dataset(tmp_path / "ds", tether, proxy.url)

    def writer():
        client.put_object(Bucket=BUCKET, Key="big/00000", Body=f"v{proxy.fired}".encode())

    proxy.hook = writer
    tether("add", "big", f"s3://{BUCKET}/big/", "--kind", "file", cwd=ds)
    proc = tether("commit", "-m", "big", cwd=ds, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"s3://{BUCKET}/big/" in out and "changed while it was being listed" in out, out
    assert "testing" not in out, out
    assert "digest" not in (ds / ".tether/objects/big.toml").read_text()


def test_s3_prefix_503_mid_listing_is_retried(s3, proxy, tether, tmp_path):
    url, client, _ = s3
    fill(client)
    ds = make_dataset(tmp_path / "ds", tether, proxy.url)
    proxy.hook = lambda: 503 if proxy.fired <= 2 else None
    tether("add", "big", f"s3://{BUCKET}/big/", "--kind", "file", cwd=ds)
    tether("commit", "-m", "big", cwd=ds)
    assert proxy.fired >= 3
    assert f"count = {BIG}" in manifest(ds, "big")


@pytest.mark.parametrize("fault", ["drop", 403])
def test_s3_prefix_server_failing_mid_listing_is_named(s3, proxy, tether, tmp_path, fault):
    """The server dies (every retry too) or refuses the second page: the
    commit fails naming the prefix, never a credential, and records
    nothing; once the server is back the same commit succeeds."""
    url, client, _ = s3
    fill(client)
    ds = make_dataset(tmp_path / "ds", tether, proxy.url)
    proxy.hook = lambda: fault
    tether("add", "big", f"s3://{BUCKET}/big/", "--kind", "file", cwd=ds)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ds, capture_output=True,
                          text=True).stdout
    proc = tether("commit", "-m", "big", cwd=ds, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"s3://{BUCKET}/" in out and "big" in out, out
    if fault == 403:
        assert "403" in out and "secrets.toml" in out, out
    assert "testing" not in out, out
    assert "digest" not in (ds / ".tether/objects/big.toml").read_text()
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=ds, capture_output=True,
                          text=True).stdout == head
    proxy.hook = None
    tether("commit", "-m", "big", cwd=ds)
    assert f"count = {BIG}" in manifest(ds, "big")


def test_s3_prefix_ranges_listed_in_parallel_give_the_one_listing(s3, proxy, tether, ref, tmp_path):
    """Past its first page a prefix is listed as key ranges in parallel
    (start-after); keys on and around the range bounds (a bound itself, a
    key just past one, bytes the first page never used) are each listed
    once: the same manifest and listing as tether-vcs's one paged LIST."""
    url, client, _ = s3
    keys = [f"r/{i:05d}" for i in range(2300)]
    keys += ["r/01", "r/010", "r/0100", "r/002", "r/0020", "r/1", "r/1a", "r/9", "r/99999z",
             "r/A", "r/Z/deep/er", "r/_x", "r/~", "r/\u00e9t\u00e9", "r/0", "r/00000-"]
    for k in keys:
        client.put_object(Bucket=BUCKET, Key=k, Body=k.encode()[-3:])
    ours = make_dataset(tmp_path / "ours", tether, proxy.url)
    theirs = make_dataset(tmp_path / "theirs", ref, url)
    seen = []
    proxy.hook = lambda: seen.append(1)
    for runner, root in ((tether, ours), (ref, theirs)):
        runner("add", "r", f"s3://{BUCKET}/r/", "--kind", "file", cwd=root)
        runner("commit", "-m", "ranges", cwd=root)
    proxy.hook = None
    assert manifest(ours, "r") == manifest(theirs, "r")
    assert f"count = {len(set(keys))}" in manifest(ours, "r")
    assert listings(ours) == listings(theirs)
    assert len(seen) >= 3, "the pages after the first were listed as ranges"
    assert states(ref, ours) == {"r": "clean"} and states(tether, theirs) == {"r": "clean"}
