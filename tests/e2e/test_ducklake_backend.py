"""The `ducklake` backend end to end, against real DuckDB + DuckLake.

Catalogs are written by duckdb 1.5.5 with the ducklake extension (and its
sqlite / postgres scanners) loaded from the PyPI extension wheels, on a
SQLite file, a DuckDB file and a PostgreSQL 15 database.  tether reads
their metadata tables natively: add (--at, --pick), status, commit, pull,
verify (an expired snapshot is missing, a recreated catalog drifted), log,
diff --content (inserts, deletes, updates, schema changes, creates, drops,
renames), open (DuckDB reads the state back with the ATTACH SQL tether
prints), restore and undo.  tether-vcs on the same catalogs writes the same
manifests and prints the same log and diff.  Bad input names the file or
server, exit 1, nothing written."""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from conftest import git
from pg import PASSWORD, pg_db, postgres_server  # noqa: F401  (fixtures)

import duckdb  # noqa: E402

DS = "de17a0b5"
SITE = Path(duckdb.__file__).resolve().parents[1]
EXTENSIONS = ("ducklake", "sqlite_scanner", "postgres_scanner")


def extension_file(name: str) -> str:
    found = glob.glob(str(SITE / f"duckdb_extension_{name}" / "extensions" / "*" / f"{name}.duckdb_extension"))
    assert found, f"duckdb-extension-{name} is not installed in the test venv"
    return found[0]


_installed: set[Path] = set()


def connect(home: Path) -> duckdb.DuckDBPyConnection:
    """A DuckDB with the extensions installed from the wheels into home's
    extension directory (where tether-vcs, run with HOME=home, finds them)."""
    con = duckdb.connect()
    con.execute(f"SET extension_directory = '{home}/.duckdb/extensions'")
    if home not in _installed:
        for name in EXTENSIONS:
            con.execute(f"INSTALL '{extension_file(name)}'")
        _installed.add(home)
    for name in ("ducklake", "sqlite_scanner", "postgres_scanner"):
        con.execute(f"LOAD {name}")
    return con


class Lake:
    """A catalog that DuckDB writes one batch of statements at a time (a
    DuckDB-file catalog can be open in one process only)."""

    def __init__(self, home: Path, attach: str, data: Path):
        self.home, self.attach, self.data = home, attach, data

    _con = None

    def run(self, *sql: str, at: int | None = None):
        if self._con is None:  # loading the extensions is the slow part: once
            self._con = connect(self.home)
        con = self._con
        opts = f"DATA_PATH '{self.data}/'" + (f", SNAPSHOT_VERSION {at}, READ_ONLY" if at is not None else "")
        con.execute(f"ATTACH '{self.attach}' AS lake ({opts})")
        out = None
        for s in sql:
            cur = con.execute(s)
            # (a CALL's rows hold timestamps, which need pytz in Python)
            out = cur.fetchall() if s.lstrip().upper().startswith("SELECT") else None
        con.execute("DETACH lake")
        return out

    def snapshots(self) -> dict[int, int]:
        rows = self.run("SELECT snapshot_id, epoch_us(snapshot_time) FROM ducklake_snapshots('lake')")
        return {int(a): int(b) for a, b in rows}

    def head(self) -> dict:
        snaps = self.snapshots()
        sid = max(snaps)
        return {"snapshot_id": sid, "snapshot_time_us": snaps[sid]}


def manifest(ds: Path, key: str) -> dict:
    return tomllib.loads((ds / ".tether" / "objects" / f"{key}.toml").read_text())


def new_dataset(root: Path, runner, env) -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", DS, cwd=root)
    return root


@pytest.fixture(params=["sqlite", "duckdb", "postgres"])
def catalog(request, tmp_path, home):
    """(Lake, the locator tether is given, secrets.toml text or None)."""
    data = tmp_path / "lake-data"
    if request.param == "sqlite":
        meta = tmp_path / "stores" / "meta.sqlite"
        meta.parent.mkdir()
        return Lake(home, f"ducklake:sqlite:{meta}", data), f"sqlite:{meta}", None
    if request.param == "duckdb":
        meta = tmp_path / "stores" / "meta.ducklake"
        meta.parent.mkdir()
        # relative, from the dataset directory: stored absolute
        return Lake(home, f"ducklake:{meta}", data), "../stores/meta.ducklake", None
    server, db = request.getfixturevalue("pg_db")
    words = f"dbname={db} host=127.0.0.1 port={server.port} user=tether"
    secrets = f'[objects."lake"]\npassword = "{PASSWORD}"\n[objects."old"]\npassword = "{PASSWORD}"\n'
    return Lake(home, f"ducklake:postgres:{words} password={PASSWORD}", data), f"postgres:{words}", secrets


def write_history(lake: Lake):
    lake.run("CREATE TABLE lake.t (a INTEGER, b VARCHAR)",
             "INSERT INTO lake.t SELECT i, 'x' FROM range(5000) r(i)")


def write_changes(lake: Lake):
    lake.run("DELETE FROM lake.t WHERE a = 3")
    lake.run("UPDATE lake.t SET b = 'y' WHERE a < 2")
    lake.run("INSERT INTO lake.t VALUES (9999, 'z')")
    lake.run("ALTER TABLE lake.t ADD COLUMN c INTEGER")
    lake.run('CREATE SCHEMA lake."a.child"', 'CREATE TABLE lake."a.child".t (x INTEGER)')
    lake.run("CREATE TABLE lake.gone (x INTEGER)", "INSERT INTO lake.gone VALUES (1)")
    lake.run("DROP TABLE lake.gone")
    lake.run("ALTER TABLE lake.t RENAME TO t2")


def test_lifecycle_against_ducklake(tmp_path, tether, env, home, catalog):
    lake, locator, secrets = catalog
    write_history(lake)
    ds = new_dataset(tmp_path / "ds", tether, env)
    if secrets:
        (ds / ".tether" / "secrets.toml").write_text(secrets)
    tether("add", "lake", locator, "--kind", "ducklake", "--set", f"data_path={lake.data}/", cwd=ds)
    m = manifest(ds, "lake")
    if locator.startswith("../"):
        assert m["locator"]["uri"] == str((ds / locator).resolve())
    tether("commit", "-m", "first", cwd=ds)
    first = lake.head()
    assert manifest(ds, "lake")["state"] == first
    assert first["snapshot_id"] == 2

    write_changes(lake)
    status = tether("status", "--snapshot", cwd=ds).stdout
    assert re.search(r"behind\s+lake", status), status
    tether("pull", cwd=ds)
    tether("commit", "-m", "second", cwd=ds)
    head = lake.head()
    assert manifest(ds, "lake")["state"] == head

    # log: every snapshot, newest first, with its changes
    log = tether.json("log", "lake", "-n", "100", cwd=ds)
    assert [int(e["id"]) for e in log] == sorted(lake.snapshots(), reverse=True)
    msgs = {int(e["id"]): e["message"] for e in log}
    assert msgs[0] == "schema created: main"
    assert msgs[1] == "created: main.t"
    assert msgs[3] == "rows deleted: main.t2"  # an id is named by the table's newest name, as tether-vcs does
    assert msgs[2] == "rows inserted: main.t2"
    assert msgs[6] == "schema altered: main.t2"
    assert msgs[7] == "schema created: a.child"
    assert msgs[8] == 'created: "a.child".t'
    assert msgs[11] == "dropped: main.gone"
    assert msgs[head["snapshot_id"]] == "created: main.t2"

    # diff --content: per table, with row counts as DuckDB's change feed has them
    diff = tether.json("diff", "HEAD~1", "HEAD", "--content", cwd=ds)
    entries = {e["path"]: (e["change"], e.get("detail")) for e in diff[0]["detail"]["entries"]}
    assert entries == {
        '"a.child".t': ("added", "created"),
        "main.gone": ("removed", "dropped"),
        "main.t2": ("renamed", "+1 rows, -1 rows, 2 update_postimage, 2 update_preimage, "
                               "renamed from main.t, schema altered"),
        "schemas_created": ("modified", "a.child"),
    }, entries
    feed = lake.run("SELECT change_type, count(*) FROM ducklake_table_changes('lake', 'main', 't2', 3, "
                    f"{head['snapshot_id']}) GROUP BY 1")
    assert dict(feed) == {"insert": 1, "delete": 1, "update_preimage": 2, "update_postimage": 2}

    # add --at an old snapshot and --pick; commit records it
    tether("add", "old", locator, "--kind", "ducklake", "--at", "2", cwd=ds)
    tether("commit", "-m", "old", cwd=ds)
    assert manifest(ds, "old")["state"] == {"snapshot_id": 2, "snapshot_time_us": lake.snapshots()[2]}
    picked = tether("add", "picked", locator, "--kind", "ducklake", "--pick", cwd=ds,
                    input="2\n", check=False)
    assert picked.returncode == 0, picked.stderr
    assert manifest(ds, "picked")["locator"]["at"] in {str(s) for s in lake.snapshots()}
    tether("remove", "picked", cwd=ds)

    # open: DuckDB reads exactly the recorded state with the ATTACH SQL tether printed
    h = tether.json("open", "old", cwd=ds)
    assert h["type"] == "DuckLakeHandle" and h["read_only"] is True and h["snapshot_id"] == 2
    assert "SNAPSHOT_VERSION 2" in h["attach_sql"] and "READ_ONLY" in h["attach_sql"]
    assert h["address"].endswith("#snapshot=2")
    con = connect(home)
    sql = h["attach_sql"]
    assert not [k for k in h if k.startswith("secret_")]  # the in-process caller's, never printed
    if secrets:  # the password lives in secrets, not in what tether prints
        assert PASSWORD not in sql and PASSWORD not in json.dumps(h)
        sql = sql.replace("user=tether'", f"user=tether password={PASSWORD}'")
    con.execute(sql)
    assert con.execute(f"SELECT count(*) FROM {h['alias']}.t").fetchone()[0] == 5000
    con.close()

    # verify: ok, then the old snapshot expires and is missing
    assert "ok" in tether("verify", cwd=ds).stdout
    lake.run("CALL ducklake_expire_snapshots('lake', versions => [2])")
    proc = tether("verify", cwd=ds, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"missing\s+old", proc.stdout), proc.stdout
    assert "snapshot 2 is not in the catalog" in proc.stdout + proc.stderr
    assert re.search(r"ok\s+lake", proc.stdout), proc.stdout

    # restore: DuckLake has no branches, as tether-vcs says; nothing written
    before = (ds / ".tether/objects/lake.toml").read_text()
    proc = tether("restore", "lake", "--from", "HEAD~1", cwd=ds, check=False)
    assert proc.returncode == 1 and "no working branch" in proc.stderr
    assert (ds / ".tether/objects/lake.toml").read_text() == before

    # undo of a pull puts the manifests back as working-tree changes
    lake.run("INSERT INTO lake.t2 VALUES (7, 'w', 1)")
    rev = git("rev-parse", "HEAD", cwd=ds, env=env)
    tether("pull", cwd=ds)
    assert manifest(ds, "lake")["state"] == lake.head()
    assert git("rev-parse", "HEAD", cwd=ds, env=env) != rev
    tether("undo", cwd=ds)
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == rev
    assert manifest(ds, "lake")["state"] == lake.head()  # the pull's manifests stay as changes


@pytest.mark.parametrize("inline", [0, 10])
def test_parquet_row_counts_match_duckdbs_change_feed(tmp_path, tether, env, home, inline):
    """Rows in Parquet files (inlining off) and inlined rows: a DELETE and an
    INSERT in one transaction are a delete and an insert, an UPDATE is
    updates, both together are both, as DuckDB's change feed counts them."""
    meta, data = tmp_path / "meta.sqlite", tmp_path / "data"
    con = connect(home)
    con.execute(f"ATTACH 'ducklake:sqlite:{meta}' AS lake (DATA_PATH '{data}/', DATA_INLINING_ROW_LIMIT {inline})")
    con.execute("CREATE TABLE lake.t (a INTEGER, b VARCHAR)")
    con.execute("INSERT INTO lake.t SELECT i, 'x' FROM range(100) r(i)")
    ds = new_dataset(tmp_path / "ds", tether, env)
    con.execute("DETACH lake")
    tether("add", "lake", f"sqlite:{meta}", "--kind", "ducklake", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)

    con.execute(f"ATTACH 'ducklake:sqlite:{meta}' AS lake (DATA_PATH '{data}/', DATA_INLINING_ROW_LIMIT {inline})")
    steps = [
        ["DELETE FROM lake.t WHERE a = 50", "INSERT INTO lake.t VALUES (1000, 'z')"],
        ["UPDATE lake.t SET b = 'y' WHERE a < 3"],
        ["DELETE FROM lake.t WHERE a = 60", "UPDATE lake.t SET b = 'w' WHERE a = 70",
         "INSERT INTO lake.t VALUES (2000, 'z'), (2001, 'z')"],
    ]
    for sql in steps:
        first = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0]
        con.execute("BEGIN")
        for stmt in sql:
            con.execute(stmt)
        con.execute("COMMIT")
        con.execute("DETACH lake")
        tether("pull", cwd=ds)
        tether("commit", "-m", sql[0], cwd=ds)
        con.execute(f"ATTACH 'ducklake:sqlite:{meta}' AS lake (DATA_PATH '{data}/')")
        last = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0]
        feed = dict(con.execute("SELECT change_type, count(*) FROM ducklake_table_changes('lake', 'main', 't', "
                                f"{first + 1}, {last}) GROUP BY 1").fetchall())
        want = ", ".join([f"+{feed[k]} rows" for k in ("insert",) if k in feed]
                         + [f"-{feed[k]} rows" for k in ("delete",) if k in feed]
                         + [f"{feed[k]} {k}" for k in ("update_postimage", "update_preimage") if k in feed])
        diff = tether.json("diff", "HEAD~1", "HEAD", "--content", cwd=ds)
        assert diff[0]["detail"], diff
        entries = {e["path"]: e.get("detail") for e in diff[0]["detail"]["entries"]}
        assert entries == {"main.t": want}, (sql, feed)
    con.close()


def test_recreated_catalog_verifies_as_drifted(tmp_path, tether, env, home):
    meta = tmp_path / "meta.sqlite"
    lake = Lake(home, f"ducklake:sqlite:{meta}", tmp_path / "data")
    write_history(lake)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "lake", f"sqlite:{meta}", "--kind", "ducklake", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    meta.unlink()
    time.sleep(0.01)
    write_history(lake)  # the same snapshot ids, other times
    proc = tether("verify", cwd=ds, check=False)
    assert proc.returncode == 1
    assert re.search(r"drifted\s+lake", proc.stdout), proc.stdout
    assert "different commit time" in proc.stdout + proc.stderr


@pytest.mark.parametrize("where", [
    "sqlite",
    "duckdb",
    "postgres",
])
def test_same_manifests_log_and_diff_as_tether_vcs(tmp_path, tether, ref, env, home, where, request):
    if where == "postgres":
        server, db = request.getfixturevalue("pg_db")
        words = f"dbname={db} host=127.0.0.1 port={server.port} user=tether"
        lake = Lake(home, f"ducklake:postgres:{words} password={PASSWORD}", tmp_path / "data")
        locator = f"postgres:{words}"
        # both sides' libpq (DuckDB's postgres scanner, our reader) read PGPASSWORD
        env["PGPASSWORD"] = PASSWORD
    else:
        meta = tmp_path / ("meta.sqlite" if where == "sqlite" else "meta.ducklake")
        lake = Lake(home, f"ducklake:sqlite:{meta}" if where == "sqlite" else f"ducklake:{meta}",
                    tmp_path / "data")
        locator = f"{where}:{meta}" if where == "sqlite" else str(meta)
    write_history(lake)
    ours = new_dataset(tmp_path / "ours", tether, env)
    theirs = new_dataset(tmp_path / "theirs", ref, env)
    for ds, runner in ((ours, tether), (theirs, ref)):
        runner("add", "lake", locator, "--kind", "ducklake", cwd=ds)
        runner("add", "old", locator, "--kind", "ducklake", "--at", "1", cwd=ds)
        runner("commit", "-m", "first", cwd=ds)
    # plain names: tether-vcs labels a table it knows by id without quotes
    lake.run("DELETE FROM lake.t WHERE a = 3")
    lake.run("UPDATE lake.t SET b = 'y' WHERE a < 2")
    lake.run("INSERT INTO lake.t SELECT i, 'n' FROM range(10000, 10020) r(i)")
    lake.run("ALTER TABLE lake.t ADD COLUMN c INTEGER")
    lake.run("CREATE TABLE lake.u (x INTEGER)", "INSERT INTO lake.u VALUES (1), (2)")
    lake.run("CREATE TABLE lake.gone (x INTEGER)")
    lake.run("DROP TABLE lake.gone")
    for ds, runner in ((ours, tether), (theirs, ref)):
        runner("pull", cwd=ds)
        runner("commit", "-m", "second", cwd=ds)
    for key in ("lake", "old"):
        a, b = manifest(ours, key), manifest(theirs, key)
        a.pop("captured_at"), b.pop("captured_at")
        assert a == b, key
    for args in (("log", "lake", "-n", "50"), ("log", "old"),
                 ("diff", "HEAD~1", "HEAD", "--content")):
        assert change_counts_sorted(tether.json(*args, cwd=ours)) == \
            change_counts_sorted(ref.json(*args, cwd=ours)), args
        assert change_counts_sorted(tether(*args, cwd=ours).stdout) == \
            change_counts_sorted(ref(*args, cwd=ours).stdout), args


_OTHER_COUNTS = re.compile(r"\d+ update_(?:pre|post)image(?:, \d+ update_(?:pre|post)image)+")


def change_counts_sorted(v):
    """tether-vcs lists a table's non-insert/delete change counts in the
    order DuckDB's GROUP BY returns them, which varies from run to run
    ("2 update_preimage, 2 update_postimage" or the reverse); ours are
    sorted.  Compare them as sets (docs/backend-ducklake.md)."""
    if isinstance(v, str):
        return _OTHER_COUNTS.sub(lambda m: ", ".join(sorted(m.group(0).split(", "))), v)
    if isinstance(v, list):
        return [change_counts_sorted(x) for x in v]
    if isinstance(v, dict):
        return {k: change_counts_sorted(x) for k, x in v.items()}
    return v


def test_bad_input_names_the_file_and_writes_nothing(tmp_path, tether, env):
    ds = new_dataset(tmp_path / "ds", tether, env)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all\n" * 100)
    foreign = tmp_path / "foreign.sqlite"
    subprocess.run(["sqlite3", str(foreign), "CREATE TABLE x (a INTEGER)"], check=True)
    broken_duck = tmp_path / "broken.ducklake"
    broken_duck.write_bytes(b"\0garbage" * 512)
    cases = [(f"sqlite:{garbage}", str(garbage)), (f"sqlite:{foreign}", str(foreign)),
             (str(broken_duck), str(broken_duck)), (f"sqlite:{tmp_path}/absent.sqlite", "absent.sqlite")]
    for locator, named in cases:
        before = git("status", "--porcelain", "--untracked-files=all", cwd=ds, env=env)
        tether("add", "lake", locator, "--kind", "ducklake", cwd=ds)
        proc = tether("commit", "-m", "x", cwd=ds, check=False)
        assert proc.returncode == 1, (locator, proc.stdout, proc.stderr)
        assert named in proc.stderr, (locator, proc.stderr)
        assert "[ducklake]" in proc.stderr or "[lake]" in proc.stderr
        assert "state" not in manifest(ds, "lake")
        tether("remove", "lake", cwd=ds)
        assert git("status", "--porcelain", "--untracked-files=all", cwd=ds, env=env) == before
    assert "not a DuckLake catalog" in tether(
        "add", "f", f"sqlite:{foreign}", "--kind", "ducklake", cwd=ds, check=False).stderr + \
        tether("status", "--snapshot", cwd=ds, check=False).stderr


def test_committed_init_sql_is_refused(tmp_path, tether, env):
    ds = new_dataset(tmp_path / "ds", tether, env)
    toml = ds / "tether.toml"
    toml.write_text(toml.read_text() + '\n[backends.ducklake]\ninit_sql = ["CREATE SECRET s (TYPE s3)"]\n')
    proc = tether("status", cwd=ds, check=False)
    assert proc.returncode == 1
    assert "init_sql" in proc.stderr and "secrets.toml" in proc.stderr


def test_wrong_postgres_password_names_the_server_only(tmp_path, tether, env, home, pg_db):
    server, db = pg_db
    words = f"dbname={db} host=127.0.0.1 port={server.port} user=tether"
    lake = Lake(home, f"ducklake:postgres:{words} password={PASSWORD}", tmp_path / "data")
    write_history(lake)
    ds = new_dataset(tmp_path / "ds", tether, env)
    wrong = "Wr0ng-pa55-canary"
    (ds / ".tether" / "secrets.toml").write_text(f'[objects."lake"]\npassword = "{wrong}"\n')
    tether("add", "lake", f"postgres:{words}", "--kind", "ducklake", cwd=ds)
    proc = tether("commit", "-m", "x", cwd=ds, check=False)
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert f"127.0.0.1:{server.port}" in out, out
    assert wrong not in out and PASSWORD not in out
    (ds / ".tether" / "secrets.toml").write_text(f'[objects."lake"]\npassword = "{PASSWORD}"\n')
    tether("commit", "-m", "x", cwd=ds)
    assert manifest(ds, "lake")["state"] == lake.head()


def test_duckdb_file_held_by_a_writer_fails_at_once(tmp_path, tether, env, home):
    meta = tmp_path / "meta.ducklake"
    lake = Lake(home, f"ducklake:{meta}", tmp_path / "data")
    write_history(lake)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "lake", str(meta), "--kind", "ducklake", cwd=ds)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time\n"
         f"c = duckdb.connect({str(meta)!r})\nprint('held', flush=True)\ntime.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        proc = tether("commit", "-m", "x", cwd=ds, check=False)
        assert time.monotonic() - start < 20
        assert proc.returncode == 1
        assert str(meta) in proc.stderr and "another process" in proc.stderr, proc.stderr
    finally:
        holder.kill()
        holder.wait()
    tether("commit", "-m", "x", cwd=ds)
    assert manifest(ds, "lake")["state"] == lake.head()


def test_build_without_libduckdb_says_what_a_duckdb_catalog_needs(tmp_path, tether, env, home):
    meta = tmp_path / "meta.ducklake"
    lake = Lake(home, f"ducklake:{meta}", tmp_path / "data")
    write_history(lake)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "lake", str(meta), "--kind", "ducklake", cwd=ds)
    proc = tether("commit", "-m", "x", cwd=ds, check=False,
                  env={"TETHER_LIBDUCKDB": str(tmp_path / "no-libduckdb.so")})
    assert proc.returncode == 1
    assert "libduckdb" in proc.stderr and "SQLite" in proc.stderr, proc.stderr


def test_backends_lists_ducklake_installed(tmp_path, tether):
    rows = {b["kind"]: b for b in tether.json("backends", cwd=tmp_path)}
    assert rows["ducklake"]["installed"] is True
    assert rows["ducklake"]["maturity"] == "experimental"


def test_password_in_the_locator_is_refused(tmp_path, tether, env):
    ds = new_dataset(tmp_path / "ds", tether, env)
    for loc in ("postgres:dbname=lake host=db password=Canary-pw-1",
                "postgres:postgresql://reader:Canary-pw-1@db/lake"):
        proc = tether("add", "lake", loc, "--kind", "ducklake", cwd=ds, check=False)
        assert proc.returncode == 1, proc.stderr
        assert "secrets.toml" in proc.stderr and "Canary-pw-1" not in proc.stdout + proc.stderr
        assert not (ds / ".tether/objects/lake.toml").exists()
