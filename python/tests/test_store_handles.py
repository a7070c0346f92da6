"""Handles of stores on s3:// (a moto server on 127.0.0.1, from the
checkout's test venv): the lance, delta and icechunk handles open the
bucket with the endpoint and keys of .tether/secrets.toml, which
libtether resolves, and read back what the stores' own libraries wrote
there; the keys show in no field or repr of the handle."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import tether
from tether import Repo

pytestmark = pytest.mark.skipif(
    not hasattr(tether, "libtether_version"), reason="tests of the libtether package, not of tether-vcs"
)

MOTO = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "moto_server"
KEY, SECRET = "AKIDHANDLES", "handles-Secret-Key"


@pytest.fixture
def bucket():
    if not MOTO.exists():
        pytest.skip(f"no moto server at {MOTO} (scripts/setup.sh makes the test venv)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(MOTO), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(urllib.request.Request(f"{url}/lake", method="PUT"), timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        proc.kill()
        proc.wait()


def test_lance_delta_and_icechunk_handles_open_the_bucket(dataset, bucket):
    lance = pytest.importorskip("lance")
    deltalake = pytest.importorskip("deltalake")
    ic = pytest.importorskip("icechunk")
    zarr = pytest.importorskip("zarr")
    pa = pytest.importorskip("pyarrow")
    so = {"aws_access_key_id": KEY, "aws_secret_access_key": SECRET, "aws_endpoint": bucket,
          "aws_region": "us-east-1", "allow_http": "true"}
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), "s3://lake/rows.lance", storage_options=so)
    deltalake.write_deltalake("s3://lake/events", pa.table({"n": [1, 2]}), storage_options=so)
    storage = ic.s3_storage(bucket="lake", prefix="cube", region="us-east-1", endpoint_url=bucket,
                            allow_http=True, access_key_id=KEY, secret_access_key=SECRET, force_path_style=True)
    session = ic.Repository.create(storage).writable_session("main")
    zarr.group(store=session.store).create_array("t", shape=(4,), dtype="i4")[:] = [1, 2, 3, 4]
    session.commit("values")

    Repo.init(dataset)
    with open(dataset / "tether.toml", "a") as f:
        f.write('\n[backends.lance]\nstorage_options = { allow_http = "true" }\n'
                '\n[backends.delta]\nstorage_options = { allow_http = "true" }\n')
    secrets = dataset / ".tether" / "secrets.toml"
    secrets.write_text(f'[uris."s3://lake/"]\nendpoint_url = "{bucket}"\nregion = "us-east-1"\n'
                       f'access_key_id = "{KEY}"\nsecret_access_key = "{SECRET}"\n'
                       "allow_http = true\nforce_path_style = true\n")
    secrets.chmod(0o600)
    repo = Repo.find(dataset)
    repo.add("rows", "lance", {"uri": "s3://lake/rows.lance"})
    repo.add("events", "delta", {"uri": "s3://lake/events"})
    repo.add("cube", "icechunk", {"uri": "s3://lake/cube"})
    repo.commit("baseline")

    rows = repo.open("rows", read_only=True)
    assert rows.dataset.count_rows() == 3
    events = repo.open("events")
    assert events.version == 0 and events.table.to_pyarrow_table().num_rows == 2
    cube = repo.open("cube", read_only=True)
    assert list(zarr.open_group(store=cube.session.store, mode="r")["t"][:]) == [1, 2, 3, 4]
    for h in (rows, events, cube):
        assert SECRET not in repr(h) and KEY not in repr(h)
    shown = subprocess.run([__import__("os").environ.get("TETHER_BIN", "tether"), "open", "rows", "--json",
                            "--read-only"], cwd=dataset, capture_output=True, text=True, check=True).stdout
    assert SECRET not in shown and "secret_" not in shown
