"""Repo.query and Repo.duckdb: SQL over the dataset at a revision, the rows
compared with deltalake's own read of the version each commit recorded."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import tether

deltalake = pytest.importorskip("deltalake")
duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")


@pytest.fixture(autouse=True)
def _extensions(monkeypatch):
    # the duckdb-extension-* wheels beside the duckdb module
    monkeypatch.setenv("TETHER_DUCKDB_EXTENSIONS", str(Path(duckdb.__file__).resolve().parents[1]))


def test_query_and_duckdb_at_two_revisions(dataset: Path, tmp_path: Path):
    uri = str(tmp_path / "stores" / "sales.delta")
    deltalake.write_deltalake(uri, pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    repo = tether.Repo.init(dataset, dataset_id="9e4a0002")
    repo.add("sales", "delta", {"uri": uri})
    repo.commit("first")
    deltalake.write_deltalake(uri, pa.table({"id": [4], "v": ["d"]}), mode="append")
    repo.pull()
    head = repo.query("SELECT id, v FROM sales ORDER BY id")
    old = repo.query("SELECT id, v FROM sales ORDER BY id", rev="HEAD~1")
    assert head.columns == ("id", "v")
    assert list(old) == [(1, "a"), (2, "b"), (3, "c")]
    want = deltalake.DeltaTable(uri).to_pyarrow_table().sort_by("id").to_pylist()
    assert list(head) == [(r["id"], r["v"]) for r in want]
    assert [r["key"] for r in head.relations] == ["sales"]
    # values as DuckDB's JSON maps them
    assert list(repo.query("SELECT [1, 2] AS l, {'k': 'x'} AS s, NULL AS n")) == [([1, 2], {"k": "x"}, None)]
    con = repo.duckdb(rev="HEAD~1")
    assert isinstance(con, duckdb.DuckDBPyConnection)
    assert con.execute("SELECT count(*), sum(id) FROM sales").fetchall() == [(3, 6)]
    con.close()
    with pytest.raises(tether.TetherError, match="nope"):
        repo.query("SELECT nope FROM sales")


def test_duckdb_setup_errors_never_repeat_a_credential(dataset: Path, tmp_path: Path):
    from tether.repo import _scrub
    setup = ["LOAD postgres_scanner",
             "ATTACH 'postgresql://ann:p%40ss-W0rd@db:5432/app?sslmode=require' AS \"db\" (TYPE postgres, READ_ONLY)",
             "CREATE OR REPLACE TEMPORARY SECRET \"s\" (TYPE s3, KEY_ID 'AKIAEXAMPLE', SECRET 'sekrit/Val+ue', "
             "SCOPE 's3://b/t')",
             "ATTACH 'ducklake:postgres:host=db password=w0rd-Two dbname=lake' AS \"lake\" (READ_ONLY)"]
    shown = ["LOAD postgres_scanner", "ATTACH 'postgresql://ann@db:5432/app' AS \"db\" (TYPE postgres, READ_ONLY)",
             "CREATE TEMPORARY SECRET (TYPE s3, SCOPE 's3://b/t', ...credentials not shown)",
             "-- the catalog's ATTACH (not shown)"]
    msg = ("IO Error: Unable to connect to Postgres at \"postgresql://ann:p%40ss-W0rd@db:5432/app?sslmode=require\": "
           "password p@ss-W0rd rejected; s3 key AKIAEXAMPLE secret sekrit/Val+ue; dsn host=db password=w0rd-Two; "
           "scope s3://b/t")
    got = _scrub(msg, setup, shown)
    for secret in ("p%40ss-W0rd", "p@ss-W0rd", "AKIAEXAMPLE", "sekrit/Val+ue", "w0rd-Two"):
        assert secret not in got, got
    assert "s3://b/t" in got and "Unable to connect to Postgres" in got
