"""Delta tables on s3:// against a moto server on 127.0.0.1, through
tether's object-store layer: deltalake writes the table in the bucket;
tether fingerprints it ({version, table_id}), logs, diffs, verifies
(--deep heads the data files a version needs) and opens it; deltalake
reads the recorded version back; tether-vcs on the same bucket records the
same manifest, and each reads the other's dataset.

Needs moto[server] and botocore (tests/requirements.txt) and deltalake."""
from __future__ import annotations

import re

import pytest

from s3server import KEY, MotoS3, make_dataset

moto = pytest.importorskip("moto")
deltalake = pytest.importorskip("deltalake")
pa = pytest.importorskip("pyarrow")

BUCKET = "tt-delta"
DS = "de17a5e3"


@pytest.fixture
def s3():
    server = MotoS3(BUCKET)
    yield server
    server.close()


def options(s3: MotoS3) -> dict[str, str]:
    # moto has conditional PUT, which deltalake commits through on S3
    return {**s3.storage_options(), "aws_conditional_put": "etag"}


def write(s3: MotoS3, uri: str, rows: list[int], mode: str = "append") -> None:
    deltalake.write_deltalake(uri, pa.table({"x": pa.array(rows, pa.int64())}), mode=mode,
                              storage_options=options(s3))


def table(s3: MotoS3, uri: str, version: int | None = None):
    return deltalake.DeltaTable(uri, version=version, storage_options=options(s3))


def manifest(root, key: str) -> str:
    return re.sub(r'captured_at = "[^"]*"\n', "", (root / ".tether/objects" / f"{key}.toml").read_text())


def test_delta_on_s3_end_to_end(s3, tether, tmp_path):
    uri = f"s3://{BUCKET}/tables/t"
    write(s3, uri, [1, 2, 3], "overwrite")
    write(s3, uri, [4])
    ds = make_dataset(tmp_path / "ds", tether, s3.url, BUCKET, DS, "delta")
    tether("add", "t", uri, "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tid = table(s3, uri).metadata().id
    text = manifest(ds, "t")
    assert "version = 1" in text and f'table_id = "{tid}"' in text, text

    write(s3, uri, [5])
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [(x["key"], x["state"]) for x in st["objects"]] == [("t", "behind")]
    tether("pull", cwd=ds)
    assert "version = 2" in manifest(ds, "t")
    log = tether.json("log", "t", cwd=ds)
    assert [e["id"] for e in log] == ["2", "1", "0"], log
    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ds)
    assert d[0]["key"] == "t", d
    got = tether.json("open", "t", cwd=ds)
    assert got["uri"] == uri and got["version"] == 2, got
    assert sorted(table(s3, uri, got["version"]).to_pyarrow_table()["x"].to_pylist()) == [1, 2, 3, 4, 5]
    assert tether.json("verify", "--deep", cwd=ds)["t"]["status"] == "ok"

    # a data file of the recorded version vanishes: verify --deep says so
    data = [k for k in s3.keys(BUCKET, "tables/t/") if k.endswith(".parquet")]
    s3.client.delete_object(Bucket=BUCKET, Key=data[0])
    proc = tether("verify", "--deep", "--json", cwd=ds, check=False)
    assert proc.returncode == 1 and '"missing"' in proc.stdout, proc.stdout + proc.stderr
    assert KEY not in proc.stdout + proc.stderr


def test_delta_on_s3_checkpoint_is_read(s3, tether, tmp_path):
    """A Parquet checkpoint in the bucket: the table id comes from its
    footer (a ranged read), and log cleanup behind it leaves the version
    readable."""
    uri = f"s3://{BUCKET}/tables/cp"
    write(s3, uri, [1], "overwrite")
    for i in range(3):
        write(s3, uri, [i + 2])
    table(s3, uri).create_checkpoint()
    for k in s3.keys(BUCKET, "tables/cp/_delta_log/"):
        if k.endswith(".crc"):
            s3.client.delete_object(Bucket=BUCKET, Key=k)
    ds = make_dataset(tmp_path / "ds", tether, s3.url, BUCKET, DS, "delta")
    tether("add", "t", uri, "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    assert f'table_id = "{table(s3, uri).metadata().id}"' in manifest(ds, "t")
    assert "version = 3" in manifest(ds, "t")


def test_delta_on_s3_matches_tether_vcs(s3, tether, ref, tmp_path):
    uri = f"s3://{BUCKET}/tables/c"
    write(s3, uri, [1, 2], "overwrite")
    roots = []
    for name, runner in (("theirs", ref), ("ours", tether)):
        root = make_dataset(tmp_path / name, runner, s3.url, BUCKET, DS, "delta")
        runner("add", "t", uri, "--kind", "delta", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    write(s3, uri, [3])
    for root, runner in zip(roots, (ref, tether)):
        runner("pull", cwd=root)
    assert manifest(roots[0], "t") == manifest(roots[1], "t")
    for args in (("log", "t"), ("verify",), ("verify", "--deep")):
        assert tether.json(*args, cwd=roots[1], check=False) == \
            ref.json(*args, cwd=roots[0], check=False), args
    assert tether("status", cwd=roots[0]).returncode == 0
    assert ref("status", cwd=roots[1]).returncode == 0
