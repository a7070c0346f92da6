"""The db layer (src/db/) against real servers: the server suite of the
test_db unit binary, run with MariaDB and PostgreSQL 15 started on
127.0.0.1 by the fixtures.  The binary prints a "ran:" line only when a
server suite ran to its end, so a missing server cannot pass as a pass."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import mariadb
import pg
from mariadb import mariadb_server, mysql_db  # noqa: F401  (fixtures)
from pg import pg_db, postgres_server  # noqa: F401  (fixtures)


def _unit_binary() -> Path:
    build = Path(os.environ.get("TETHER_BUILD_DIR") or Path(os.environ["TETHER_BIN"]).parent)
    exe = build / "test_db"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: build the unit tests first")
    return exe


def _run(env_name: str, dsn: str, password: str) -> str:
    env = dict(os.environ, **{env_name: dsn, "TETHER_TEST_DB_PASSWORD": password})
    env.pop("TETHER_TEST_MYSQL" if env_name == "TETHER_TEST_PG" else "TETHER_TEST_PG", None)
    proc = subprocess.run([str(_unit_binary())], env=env, capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.rstrip().endswith("passed, 0 failed"), out
    return out


def test_db_layer_on_mariadb(mysql_db):
    server, name = mysql_db
    out = _run("TETHER_TEST_MYSQL", server.url(name), mariadb.PASSWORD)
    assert "ran: mysql server suite" in out, out
    # What the suite left is really in the server: the capped insert's rows.
    rows = server.sql("SELECT k FROM tt_unit ORDER BY k", db=name)
    assert [r[0] for r in rows] == ["a", "b", "c", "x'); DROP TABLE tt_unit; --", "y\\' \"q\" `b`"]


def test_db_layer_on_postgres(pg_db):
    server, name = pg_db
    out = _run("TETHER_TEST_PG", server.dsn(name), pg.PASSWORD)
    assert "ran: postgres server suite" in out, out
    rows = server.psql("SELECT k FROM tt_unit ORDER BY k", db=name)
    assert sorted(r[0] for r in rows) == sorted(["a", "b", "c", "x'); DROP TABLE tt_unit; --", "y\\' \"q\" `b`"])
