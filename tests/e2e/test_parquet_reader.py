"""The Parquet string-column reader (formats/parquet.c) against pyarrow.

verify --deep reads a Delta checkpoint's `add.path` column with our own
reader.  These tests write files with pyarrow in every layout a checkpoint
writer may choose (compression, dictionary or plain, data page v1 or v2,
many pages, many row groups, nulls, a nested optional group) and check
that our reader returns exactly the values pyarrow reads back; cut and
damaged files must fail with a clear error, never a crash.
"""
import json
import random
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import BUILD_DIR, ROOT

FIXTURES = ROOT.parent / "shared" / "fixtures" / "delta"


def tt_parquet(path, column):
    proc = subprocess.run([str(BUILD_DIR / "tt_parquet"), str(path), column],
                          capture_output=True, text=True, check=False)
    return proc


def read_ok(path, column):
    proc = tt_parquet(path, column)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def expected(path, column, rows=False):
    """Non-null values of a dotted column, as pyarrow reads them (with
    rows: the row of each instead)."""
    table = pq.read_table(path)
    parts = column.split(".")
    arr = table.column(parts[0]).combine_chunks()
    for p in parts[1:]:
        # A null parent makes the child null too.
        arr = pa.StructArray.field(arr, p) if arr.null_count == 0 else \
            pa.compute.if_else(arr.is_valid(), pa.StructArray.field(arr, p),
                               pa.nulls(len(arr), type=arr.type.field(p).type))
    values = arr.to_pylist()
    if rows:
        return [i for i, v in enumerate(values) if v is not None]
    return [v for v in values if v is not None]


def checkpoint_like(n, seed, null_every=3):
    """Rows like a Delta checkpoint: an optional `add` struct holding a
    required `path`, null on the rows that are other actions."""
    rnd = random.Random(seed)
    adds, removes = [], []
    for i in range(n):
        name = f"part-{i:05d}-{rnd.getrandbits(64):016x}-c000.snappy.parquet"
        if rnd.random() < 0.2:
            name = f"date=2020-06-{i % 28 + 1:02d}/é✓/{name}"
        if i % null_every == 0:
            adds.append(None)
            removes.append({"path": name})
        else:
            adds.append({"path": name, "size": i})
            removes.append(None)
    add_t = pa.struct([pa.field("path", pa.string(), nullable=False), ("size", pa.int64())])
    rem_t = pa.struct([pa.field("path", pa.string(), nullable=False)])
    return pa.table({"add": pa.array(adds, add_t), "remove": pa.array(removes, rem_t),
                     "flat": pa.array([None if i % 5 == 0 else "v" * (i % 7) for i in range(n)])})


LAYOUTS = [
    dict(compression=c, use_dictionary=d, data_page_version=v)
    for c in ("NONE", "SNAPPY", "GZIP", "ZSTD")
    for d in (True, False)
    for v in ("1.0", "2.0")
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda l: "-".join(str(x) for x in l.values()))
def test_values_equal_pyarrow(tmp_path, layout):
    table = checkpoint_like(5000, seed=7)
    path = tmp_path / "t.parquet"
    # Small pages and row groups: many of both.
    pq.write_table(table, path, row_group_size=1500, data_page_size=4096, **layout)
    for column in ("add.path", "remove.path", "flat"):
        got = read_ok(path, column)
        assert got["found"] is True
        assert got["values"] == expected(path, column), column
        assert got["rows"] == expected(path, column, rows=True), column
    assert read_ok(path, "add.nothing") == {"found": False, "values": [], "rows": []}
    assert read_ok(path, "nothing") == {"found": False, "values": [], "rows": []}


def test_dictionary_fallback_and_long_values(tmp_path):
    """A dictionary that outgrows its limit falls back to plain pages in the
    same chunk; long values exercise long literals and far copies."""
    rnd = random.Random(3)
    vals = [("x" * rnd.randrange(0, 70000)) + str(i) if i % 50 == 0 else f"{rnd.getrandbits(80):x}"
            for i in range(20000)]
    table = pa.table({"s": vals})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, compression="SNAPPY", dictionary_pagesize_limit=8192)
    assert read_ok(path, "s")["values"] == vals


def test_every_delta_fixture_checkpoint(tmp_path):
    files = sorted(FIXTURES.glob("**/*checkpoint*.parquet"))
    assert files, "no Delta fixtures with Parquet checkpoints"
    for f in files:
        for column in ("add.path", "remove.path"):
            got = read_ok(f, column)
            assert got["found"] is True, f
            assert got["values"] == expected(f, column), (f, column)


def test_unsupported_codec_is_named(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(checkpoint_like(100, seed=1), path, compression="BROTLI")
    proc = tt_parquet(path, "add.path")
    assert proc.returncode == 1
    assert proc.stderr.startswith("capability: ") and "BROTLI" in proc.stderr
    assert str(path) in proc.stderr and "add.path" in proc.stderr


def test_cut_and_damaged_files_fail_clearly(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(checkpoint_like(800, seed=5), path, compression="SNAPPY",
                   data_page_size=2048)
    data = path.read_bytes()
    want = expected(path, "add.path")
    bad = tmp_path / "bad.parquet"
    # Every cut is refused as malformed, naming the file.
    for cut in sorted({1, 4, 11, 12, len(data) // 3, len(data) // 2, len(data) - 9,
                       len(data) - 8, len(data) - 1}):
        bad.write_bytes(data[:cut])
        proc = tt_parquet(bad, "add.path")
        assert proc.returncode == 1, cut
        assert proc.stderr.startswith("parse: ") and str(bad) in proc.stderr, proc.stderr
    # Damaged bytes: an error or, if the damage hits no checked field, the
    # values; never a crash (the sanitizer build runs this too).
    rnd = random.Random(11)
    for _ in range(300):
        b = bytearray(data)
        for _ in range(rnd.randrange(1, 4)):
            b[rnd.randrange(4, len(b) - 4)] ^= 1 << rnd.randrange(8)
        bad.write_bytes(bytes(b))
        proc = tt_parquet(bad, "add.path")
        assert proc.returncode in (0, 1), proc.stderr
        if proc.returncode == 1:
            assert proc.stderr.split(":")[0] in ("parse", "capability", "limit"), proc.stderr
        else:
            assert isinstance(json.loads(proc.stdout)["values"], list)
    assert want  # the undamaged file has values to lose
