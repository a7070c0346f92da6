"""The handles where credentials matter, with servers the e2e suite's
fixtures start on 127.0.0.1: a DuckLake catalog on a real PostgreSQL 15
whose password lives only in .tether/secrets.toml (the handle's connection
is attached with it; what the handle shows and `tether open --json` never
carry it), and a Dolt server (the test server of tests/servers/dolt) whose
revision database the handle names without the password."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tether import Repo

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from dolt import dolt  # noqa: E402,F401  (fixture)
from pg import PASSWORD, pg_db, postgres_server  # noqa: E402,F401  (fixtures)

duckdb = pytest.importorskip("duckdb")  # (the suite on other Pythons has no store libraries)

pytestmark = pytest.mark.skipif(
    not hasattr(tether, "libtether_version"), reason="tests of the libtether package, not of tether-vcs"
)


def _duckdb_with(duckdb, names):
    site = Path(duckdb.__file__).resolve().parents[1]
    con = duckdb.connect()
    for name in names:
        found = glob.glob(str(site / f"duckdb_extension_{name}" / "extensions" / "*" / f"{name}.duckdb_extension"))
        assert found, f"duckdb-extension-{name} is not installed (python/tests/requirements.txt)"
        con.execute(f"INSTALL '{found[0]}'")
        con.execute(f"LOAD {name}")
    return con


def test_a_postgres_ducklake_handle_attaches_with_the_secret_password(dataset, tmp_path, pg_db):
    server, db = pg_db
    words = f"dbname={db} host=127.0.0.1 port={server.port} user=tether"
    data = tmp_path / "lake-data"
    con = _duckdb_with(duckdb, ("ducklake", "postgres_scanner"))
    con.execute(f"ATTACH 'ducklake:postgres:{words} password={PASSWORD}' AS lake (DATA_PATH '{data}/')")
    con.execute("CREATE TABLE lake.t (a INTEGER)")
    con.execute("INSERT INTO lake.t SELECT i FROM range(7) r(i)")
    con.execute("DETACH lake")
    con.close()

    Repo.init(dataset)
    secrets = dataset / ".tether" / "secrets.toml"
    secrets.write_text(f'[objects."lake"]\npassword = "{PASSWORD}"\n')
    secrets.chmod(0o600)
    repo = Repo.find(dataset)
    # (an [objects."<key>"] entry applies to the catalog named as `uri`, as tether-vcs matches it)
    repo.add("lake", "ducklake", {"uri": f"postgres:{words}", "data_path": str(data), "table": "t"})
    repo.commit("baseline")

    with repo.open("lake") as h:
        assert h.connection.execute(f"SELECT count(*) FROM {h.table_ref()}").fetchone()[0] == 7
        assert PASSWORD not in h.attach_sql and PASSWORD not in repr(h)

    shown = subprocess.run([os.environ.get("TETHER_BIN", "tether"), "open", "lake", "--json"], cwd=dataset,
                           capture_output=True, text=True, check=True).stdout
    assert PASSWORD not in shown and not any(k.startswith("secret_") for k in json.loads(shown))


def test_a_wrong_ducklake_password_is_a_backend_error_without_it(dataset, tmp_path, pg_db):
    server, db = pg_db
    words = f"dbname={db} host=127.0.0.1 port={server.port} user=tether"
    Repo.init(dataset)
    secrets = dataset / ".tether" / "secrets.toml"
    secrets.write_text('[objects."lake"]\npassword = "not-the-Pa55word"\n')
    secrets.chmod(0o600)
    repo = Repo.find(dataset)
    repo.add("lake", "ducklake", {"uri": f"postgres:{words}"})
    with pytest.raises(tether.BackendError) as info:
        repo.commit("baseline")
    assert f"127.0.0.1:{server.port}" in str(info.value) and "not-the-Pa55word" not in str(info.value)


def test_a_dolt_handle_names_the_revision_database_to_write_to(dataset, dolt):
    pytest.importorskip("pymysql")
    dolt.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))")
    dolt.sql("INSERT INTO t VALUES (1, 'a')")
    dolt.commit("seed")
    Repo.init(dataset)
    secrets = dataset / ".tether" / "secrets.toml"
    secrets.write_text(dolt.secrets())
    secrets.chmod(0o600)
    repo = Repo.find(dataset)
    repo.add("db", "dolt", {"host": dolt.host, "port": dolt.port, "database": dolt.database})
    repo.commit("baseline")
    repo.new(bookmark="edit")

    h = repo.open("db")
    assert isinstance(h, tether.handles.DoltHandle) and not h.read_only
    assert h.database == dolt.database and h.database_ref == f"{dolt.database}/{h.ref}"
    assert dolt.password not in h.url and dolt.password not in repr(h)
    dolt.sql("INSERT INTO t VALUES (2, 'b')", database=h.database_ref)
    dolt.commit("more", database=h.database_ref)
    result = repo.commit("edit")
    assert "db" in result.pinned or "db" in result.recorded
    assert dolt.sql("SELECT count(*) FROM t", database=h.database_ref) == [(2,)]
    assert dolt.sql("SELECT count(*) FROM t") == [(1,)]  # main untouched until promote
