"""Lance datasets and Delta tables on az:// (Azurite) and gs://
(fake-gcs-server), through tether's object-store layer: the upstream
writer (pylance, deltalake) writes the store in the container or bucket;
tether fingerprints, pins, forks, logs, diffs, verifies and opens it, and
the writer reads back what tether pinned and forked; tether-vcs on the same
container records the same manifest.  The lifecycle is the one the s3://
tests run (test_lance_s3.py, test_delta_s3.py).

gs://: pylance and deltalake write through object_store's XML-API PUT,
which fake-gcs-server refuses ("400 invalid uploadType"); those tests try
the upstream write first and skip with the server's exact answer, so they
run as soon as the emulator takes such writes.  Skipped when a server is not
installed, except under TETHER_REQUIRE_TOOLS=1 (CI), where that fails."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import test_azure_file as azf
import test_gcs_file as gcf

lance = pytest.importorskip("lance")
deltalake = pytest.importorskip("deltalake")
pa = pytest.importorskip("pyarrow")

DS = "1a2e9a5b"
CONTAINER = "tt-lake"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(port: int) -> None:
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)


class Server:
    """One emulator: the URI root, the writer's storage options, and the
    environment both tether and tether-vcs reach it by."""

    def __init__(self, scheme: str, tmp: Path):
        self.scheme = scheme
        port = _port()
        if scheme == "az":
            cmd = [azf.tool("azurite"), "--blobHost", "127.0.0.1", "--blobPort", str(port),
                   "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck"]
        else:
            url = f"http://127.0.0.1:{port}"
            cmd = [gcf.tool("fake-gcs-server"), "-backend", "memory", "-scheme", "http", "-host",
                   "127.0.0.1", "-port", str(port), "-public-host", f"127.0.0.1:{port}",
                   "-external-url", url, "-log-level", "error"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        _wait(port)
        if scheme == "az":
            azf._create_container(port, CONTAINER)
            self.env = {"AZURE_STORAGE_USE_EMULATOR": "true",
                        "AZURE_STORAGE_ACCOUNT_NAME": azf.ACCOUNT,
                        "AZURITE_BLOB_STORAGE_URL": f"http://127.0.0.1:{port}"}
            self.options = {"account_name": azf.ACCOUNT, "use_emulator": "true",
                            "allow_http": "true"}
        else:
            req = urllib.request.Request(
                f"{url}/storage/v1/b", method="POST",
                data=json.dumps({"name": CONTAINER, "versioning": {"enabled": True}}).encode(),
                headers={"Content-Type": "application/json"})
            assert urllib.request.urlopen(req).status == 200
            sa = tmp / "gcs-emulator.json"
            sa.write_text(json.dumps({"gcs_base_url": url, "disable_oauth": True,
                                      "client_email": "", "private_key": "",
                                      "private_key_id": ""}))
            self.env = {"GOOGLE_SERVICE_ACCOUNT": str(sa)}
            self.options = {"google_service_account": str(sa), "allow_http": "true"}
        self.root = f"{scheme}://{CONTAINER}"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(params=["az", "gs"])
def server(request, env, tmp_path):
    srv = Server(request.param, tmp_path)
    saved = {k: os.environ.get(k) for k in srv.env}
    env.update(srv.env)
    os.environ.update(srv.env)
    yield srv
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    srv.close()


def upstream(srv: Server, what: str, fn):
    """Run an upstream write; on gs:// a refusal by the emulator is a skip
    that quotes it."""
    try:
        return fn()
    except Exception as e:  # OSError from pylance, DeltaError from deltalake
        msg = str(e)
        if srv.scheme == "gs" and "invalid uploadType" in msg:
            m = re.search(r'Error performing PUT (\S+) .*?(Server returned non-2xx status code: '
                          r'400 Bad Request: \{"error":\{"code":400,"message":"invalid uploadType")',
                          msg, re.S)
            path = m.group(1).split("/", 3)[-1] if m else "?"
            pytest.skip(f"{what} cannot write to fake-gcs-server: object_store's XML-API PUT "
                        f"/{path}: {m.group(2) if m else msg[:300]}}}}}")
        raise


def make_dataset(root: Path, runner, kind: str) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", DS, cwd=root)
    with open(root / "tether.toml", "a") as f:
        f.write(f"\n[backends.{kind}]\nstorage_options = {{ allow_http = \"true\" }}\n")
    return root


def manifest(root: Path, key: str) -> str:
    return re.sub(r'captured_at = "[^"]*"\n', "", (root / ".tether/objects" / f"{key}.toml").read_text())


# ---- lance ----------------------------------------------------------------------------

def lwrite(srv: Server, uri: str, rows: list[int], mode: str = "append",
           branch: str | None = None):
    table = pa.table({"x": pa.array(rows, pa.int64())})
    so = srv.options
    if mode == "create":
        return upstream(srv, "pylance", lambda: lance.write_dataset(table, uri, storage_options=so))
    ds = lance.dataset(uri, storage_options=so)
    if branch:
        ds = ds.checkout_version((branch, None))
    return lance.write_dataset(table, ds, mode="append", storage_options=so)


def lds(srv: Server, uri: str):
    return lance.dataset(uri, storage_options=srv.options)


def test_lance_end_to_end(server, tether, tmp_path):
    uri = f"{server.root}/stores/t.lance"
    lwrite(server, uri, [1, 2, 3], "create")
    lwrite(server, uri, [4])
    ds = make_dataset(tmp_path / "ds", tether, "lance")
    tether("add", "tbl", uri, "--kind", "lance", cwd=ds)
    pin1 = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["tbl"]
    tags = lds(server, uri).tags.list()
    assert tags[pin1]["version"] == 2 and tags[pin1]["branch"] is None
    assert lds(server, uri).checkout_version(pin1).to_table()["x"].to_pylist() == [1, 2, 3, 4]

    lwrite(server, uri, [5])
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [(x["key"], x["state"]) for x in st["objects"]] == [("tbl", "modified")]
    pin2 = tether.json("commit", "-m", "second", cwd=ds)["pinned"]["tbl"]
    assert {pin1, pin2} <= set(lds(server, uri).tags.list())
    assert tether.json("verify", cwd=ds)["tbl"]["status"] == "ok"
    assert [e["id"] for e in tether.json("log", "tbl", cwd=ds)] == ["3", "2", "1"]
    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ds)
    assert d[0]["key"] == "tbl", d
    got = tether.json("open", "tbl", cwd=ds)
    assert got["uri"] == uri and got["version"] == 3, got

    # our branch opens in pylance and takes appends; the next pin points into it
    tether("new", "-b", "exp", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.exp"
    assert branch in lds(server, uri).branches.list()
    lwrite(server, uri, [10], branch=branch)
    pin3 = tether.json("commit", "-m", "on the branch", cwd=ds)["pinned"]["tbl"]
    tags = lds(server, uri).tags.list()
    assert tags[pin3]["branch"] == branch
    assert sorted(lds(server, uri).checkout_version(pin3).to_table()["x"].to_pylist()) == \
        [1, 2, 3, 4, 5, 10]
    assert lds(server, uri).to_table()["x"].to_pylist() == [1, 2, 3, 4, 5]  # main untouched


def test_lance_matches_tether_vcs(server, tether, ref, tmp_path):
    uri = f"{server.root}/stores/c.lance"
    lwrite(server, uri, [1, 2], "create")
    roots = []
    for name, runner in (("theirs", ref), ("ours", tether)):
        root = make_dataset(tmp_path / name, runner, "lance")
        runner("add", "tbl", uri, "--kind", "lance", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    lwrite(server, uri, [3])
    for root, runner in zip(roots, (ref, tether)):
        runner("commit", "-m", "second", cwd=root)
    assert manifest(roots[0], "tbl") == manifest(roots[1], "tbl")
    for args in (("log", "tbl"), ("verify",)):
        assert tether.json(*args, cwd=roots[1]) == ref.json(*args, cwd=roots[0]), args
    assert tether.json("verify", cwd=roots[0]) == ref.json("verify", cwd=roots[1])


# ---- delta ----------------------------------------------------------------------------

def dwrite(srv: Server, uri: str, rows: list[int], mode: str = "append") -> None:
    upstream(srv, "deltalake", lambda: deltalake.write_deltalake(
        uri, pa.table({"x": pa.array(rows, pa.int64())}), mode=mode,
        storage_options=srv.options))


def dtable(srv: Server, uri: str, version: int | None = None):
    return deltalake.DeltaTable(uri, version=version, storage_options=srv.options)


def test_delta_end_to_end(server, tether, tmp_path):
    uri = f"{server.root}/tables/t"
    dwrite(server, uri, [1, 2, 3], "overwrite")
    dwrite(server, uri, [4])
    ds = make_dataset(tmp_path / "ds", tether, "delta")
    tether("add", "t", uri, "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tid = dtable(server, uri).metadata().id
    text = manifest(ds, "t")
    assert "version = 1" in text and f'table_id = "{tid}"' in text, text

    dwrite(server, uri, [5])
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [(x["key"], x["state"]) for x in st["objects"]] == [("t", "behind")]
    tether("pull", cwd=ds)
    assert "version = 2" in manifest(ds, "t")
    assert [e["id"] for e in tether.json("log", "t", cwd=ds)] == ["2", "1", "0"]
    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ds)
    assert d[0]["key"] == "t", d
    got = tether.json("open", "t", cwd=ds)
    assert got["uri"] == uri and got["version"] == 2, got
    assert sorted(dtable(server, uri, got["version"]).to_pyarrow_table()["x"].to_pylist()) == \
        [1, 2, 3, 4, 5]
    assert tether.json("verify", "--deep", cwd=ds)["t"]["status"] == "ok"


def test_delta_matches_tether_vcs(server, tether, ref, tmp_path):
    uri = f"{server.root}/tables/c"
    dwrite(server, uri, [1, 2], "overwrite")
    roots = []
    for name, runner in (("theirs", ref), ("ours", tether)):
        root = make_dataset(tmp_path / name, runner, "delta")
        runner("add", "t", uri, "--kind", "delta", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    dwrite(server, uri, [3])
    for root, runner in zip(roots, (ref, tether)):
        runner("pull", cwd=root)
    assert manifest(roots[0], "t") == manifest(roots[1], "t")
    for args in (("log", "t"), ("verify",), ("verify", "--deep")):
        assert tether.json(*args, cwd=roots[1], check=False) == \
            ref.json(*args, cwd=roots[0], check=False), args


# ---- gs:// with the stores seeded by upload -------------------------------------------
# The writers cannot write to fake-gcs-server (above), but they read from it:
# the store is written locally by the upstream writer and uploaded file by
# file through the JSON API; what tether pins and forks there is read back
# by the writer from the bucket.

@pytest.fixture
def gs(env, tmp_path):
    srv = Server("gs", tmp_path)
    saved = {k: os.environ.get(k) for k in srv.env}
    env.update(srv.env)
    os.environ.update(srv.env)
    yield srv
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    srv.close()


def upload_tree(srv: Server, local: Path, prefix: str) -> None:
    url = json.loads(Path(srv.env["GOOGLE_SERVICE_ACCOUNT"]).read_text())["gcs_base_url"]
    for p in sorted(local.rglob("*")):
        if p.is_file():
            q = urllib.parse.urlencode({"uploadType": "media",
                                        "name": f"{prefix}/{p.relative_to(local).as_posix()}"})
            req = urllib.request.Request(f"{url}/upload/storage/v1/b/{CONTAINER}/o?{q}",
                                         method="POST", data=p.read_bytes(),
                                         headers={"Content-Type": "application/octet-stream"})
            assert urllib.request.urlopen(req).status == 200


def test_lance_gs_pins_and_forks_read_back(gs, tether, ref, tmp_path):
    local = tmp_path / "local.lance"
    t = lambda rows: pa.table({"x": pa.array(rows, pa.int64())})  # noqa: E731
    lance.write_dataset(t([1, 2, 3]), str(local))
    lance.write_dataset(t([4]), str(local), mode="append")
    upload_tree(gs, local, "stores/t.lance")
    uri = f"{gs.root}/stores/t.lance"
    assert lds(gs, uri).to_table()["x"].to_pylist() == [1, 2, 3, 4]

    roots = []
    for name, runner in (("theirs", ref), ("ours", tether)):
        root = make_dataset(tmp_path / name, runner, "lance")
        runner("add", "tbl", uri, "--kind", "lance", cwd=root)
        roots.append(root)
    ds = roots[1]
    pin1 = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["tbl"]
    tags = lds(gs, uri).tags.list()
    assert tags[pin1]["version"] == 2 and tags[pin1]["branch"] is None
    assert lds(gs, uri).checkout_version(pin1).to_table()["x"].to_pylist() == [1, 2, 3, 4]
    assert tether.json("verify", cwd=ds)["tbl"]["status"] == "ok"
    assert [e["id"] for e in tether.json("log", "tbl", cwd=ds)] == ["2", "1"]
    got = tether.json("open", "tbl", cwd=ds)
    assert got["uri"] == uri and got["version"] == 2, got
    # tether-vcs records the same state of the same dataset
    ref("commit", "-m", "first", cwd=roots[0])
    assert manifest(roots[0], "tbl") == manifest(ds, "tbl")

    tether("new", "-b", "exp", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.exp"
    assert branch in lds(gs, uri).branches.list()
    assert lds(gs, uri).checkout_version((branch, None)).to_table()["x"].to_pylist() == \
        [1, 2, 3, 4]


def test_delta_gs_read_back(gs, tether, ref, tmp_path):
    local = tmp_path / "local-delta"
    t = lambda rows: pa.table({"x": pa.array(rows, pa.int64())})  # noqa: E731
    deltalake.write_deltalake(str(local), t([1, 2, 3]))
    deltalake.write_deltalake(str(local), t([4]), mode="append")
    upload_tree(gs, local, "tables/t")
    uri = f"{gs.root}/tables/t"
    roots = []
    for name, runner in (("theirs", ref), ("ours", tether)):
        root = make_dataset(tmp_path / name, runner, "delta")
        runner("add", "t", uri, "--kind", "delta", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    ds = roots[1]
    tid = dtable(gs, uri).metadata().id
    text = manifest(ds, "t")
    assert "version = 1" in text and f'table_id = "{tid}"' in text, text
    assert manifest(roots[0], "t") == text
    assert [e["id"] for e in tether.json("log", "t", cwd=ds)] == ["1", "0"]
    got = tether.json("open", "t", cwd=ds)
    assert got["uri"] == uri and got["version"] == 1, got
    assert sorted(dtable(gs, uri, got["version"]).to_pyarrow_table()["x"].to_pylist()) == \
        [1, 2, 3, 4]
    for args in (("verify",), ("verify", "--deep")):
        assert tether.json(*args, cwd=ds, check=False) == ref.json(*args, cwd=roots[0], check=False)
    assert tether.json("verify", "--deep", cwd=ds)["t"]["status"] == "ok"
