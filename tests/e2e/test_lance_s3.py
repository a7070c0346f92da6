"""Lance datasets on s3:// against a moto server on 127.0.0.1, through
tether's object-store layer: pylance writes the dataset in the bucket;
tether fingerprints, pins (tags pylance lists), forks (branches pylance
opens and appends to), logs, diffs and opens it; tether-vcs on the same
bucket records the same manifest, and each reads the other's dataset.

Needs moto[server] and botocore (tests/requirements.txt) and pylance."""
from __future__ import annotations

import re

import pytest

from s3server import KEY, MotoS3, make_dataset

moto = pytest.importorskip("moto")
lance = pytest.importorskip("lance")
pa = pytest.importorskip("pyarrow")

BUCKET = "tt-lance"
DS = "1a2ce5d3"


@pytest.fixture
def s3():
    server = MotoS3(BUCKET)
    yield server
    server.close()


def write(s3: MotoS3, uri: str, rows: list[int], mode: str = "append", branch: str | None = None):
    table = pa.table({"x": pa.array(rows, pa.int64())})
    so = s3.storage_options()
    if mode == "create":
        return lance.write_dataset(table, uri, storage_options=so)
    ds = lance.dataset(uri, storage_options=so)
    if branch:
        ds = ds.checkout_version((branch, None))
    return lance.write_dataset(table, ds, mode="append", storage_options=so)


def dataset(s3: MotoS3, uri: str):
    return lance.dataset(uri, storage_options=s3.storage_options())


def manifest(root, key: str) -> str:
    return re.sub(r'captured_at = "[^"]*"\n', "", (root / ".tether/objects" / f"{key}.toml").read_text())


def test_lance_on_s3_end_to_end(s3, tether, tmp_path):
    uri = f"s3://{BUCKET}/stores/t.lance"
    write(s3, uri, [1, 2, 3], "create")
    write(s3, uri, [4])
    ds = make_dataset(tmp_path / "ds", tether, s3.url, BUCKET, DS, "lance")
    tether("add", "tbl", uri, "--kind", "lance", cwd=ds)
    pin1 = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["tbl"]
    tags = dataset(s3, uri).tags.list()
    assert tags[pin1]["version"] == 2 and tags[pin1]["branch"] is None
    assert dataset(s3, uri).checkout_version(pin1).to_table()["x"].to_pylist() == [1, 2, 3, 4]

    write(s3, uri, [5])
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [(x["key"], x["state"]) for x in st["objects"]] == [("tbl", "modified")]
    pin2 = tether.json("commit", "-m", "second", cwd=ds)["pinned"]["tbl"]
    assert {pin1, pin2} <= set(dataset(s3, uri).tags.list())
    assert tether.json("verify", cwd=ds)["tbl"]["status"] == "ok"
    log = tether.json("log", "tbl", cwd=ds)
    assert [e["id"] for e in log] == ["3", "2", "1"]
    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ds)
    assert d[0]["key"] == "tbl", d
    got = tether.json("open", "tbl", cwd=ds)
    assert got["uri"] == uri and got["version"] == 3, got

    # our branch opens in pylance and takes appends; the next pin points into it
    tether("new", "-b", "exp", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.exp"
    assert branch in dataset(s3, uri).branches.list()
    write(s3, uri, [10], branch=branch)
    pin3 = tether.json("commit", "-m", "on the branch", cwd=ds)["pinned"]["tbl"]
    tags = dataset(s3, uri).tags.list()
    assert tags[pin3]["branch"] == branch
    assert sorted(dataset(s3, uri).checkout_version(pin3).to_table()["x"].to_pylist()) == [1, 2, 3, 4, 5, 10]
    assert dataset(s3, uri).to_table()["x"].to_pylist() == [1, 2, 3, 4, 5]  # main untouched


def test_lance_on_s3_matches_tether_vcs(s3, tether, ref, tmp_path):
    uri = f"s3://{BUCKET}/stores/c.lance"
    write(s3, uri, [1, 2], "create")
    roots = []
    for name, runner in (("theirs", ref), ("ours", tether)):
        root = make_dataset(tmp_path / name, runner, s3.url, BUCKET, DS, "lance")
        runner("add", "tbl", uri, "--kind", "lance", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    write(s3, uri, [3])
    for root, runner in zip(roots, (ref, tether)):
        runner("commit", "-m", "second", cwd=root)
    assert manifest(roots[0], "tbl") == manifest(roots[1], "tbl")
    for args in (("log", "tbl"), ("verify",)):
        assert tether.json(*args, cwd=roots[1]) == ref.json(*args, cwd=roots[0]), args
    assert tether("status", cwd=roots[0]).returncode == 0
    assert ref("status", cwd=roots[1]).returncode == 0
    assert tether.json("verify", cwd=roots[0]) == ref.json("verify", cwd=roots[1])


def test_lance_on_s3_unreachable_is_named(s3, tether, tmp_path):
    """A wrong secret key: moto accepts any, so point at a closed port
    instead: the error names the URI, never a key; nothing is committed."""
    uri = f"s3://{BUCKET}/stores/u.lance"
    write(s3, uri, [1], "create")
    ds = make_dataset(tmp_path / "ds", tether, "http://127.0.0.1:9", BUCKET, DS, "lance")
    proc = tether("add", "tbl", uri, "--kind", "lance", cwd=ds, check=False)
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        proc = tether("commit", "-m", "x", cwd=ds, check=False)
        out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"s3://{BUCKET}" in out and KEY not in out, out
