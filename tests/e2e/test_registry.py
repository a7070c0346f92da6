"""The registry commands (export, publish, import) against tether-vcs 0.1.0b7:
the same history exported by both implementations, in every format, must
give the same rows and hashes, read back by Python's own readers (sqlite3,
pyarrow, csv, json); publish by both into PostgreSQL gives the same tables;
import registers, syncs and undoes."""
from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path

import pytest

from conftest import git

DS = "0a1b2c3d"
FORMATS = ("sqlite", "parquet", "csv", "jsonl")
# tether_meta rows that differ by nature between two runs and two programs.
VOLATILE_META = ("exported_at", "tether_version")


def fixed(env, n):
    e = dict(env)
    stamp = f"2026-01-0{n}T00:00:00+00:00"
    e.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    return e


@pytest.fixture
def history(tmp_path, env, ref):
    """A dataset with a file object and a git object over four commits (one
    on a side branch), made by tether-vcs so both read the same history."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a\n")
    (data / "sub").mkdir()
    (data / "sub" / "b.txt").write_text("b, \"quoted\"\n")
    code = tmp_path / "code"
    code.mkdir()
    git("init", "-q", "-b", "main", cwd=code, env=env)
    (code / "model.py").write_text("weights = 1\n")
    git("add", ".", cwd=code, env=fixed(env, 1))
    git("commit", "-q", "-m", "initial model", cwd=code, env=fixed(env, 1))
    root = tmp_path / "ds"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=fixed(env, 1))
    ref("init", "--dataset-id", DS, cwd=root)
    ref("add", "files", str(data), "--kind", "file", cwd=root)
    ref("add", "code", str(code), "--kind", "git", cwd=root)
    ref("commit", "-m", "first\n\nwith a body, \"quotes\" and ünïcode", cwd=root, env=fixed(env, 2))
    (code / "model.py").write_text("weights = 2\n")
    git("commit", "-q", "-am", "retrain", cwd=code, env=fixed(env, 3))
    ref("pull", cwd=root, env=fixed(env, 3))
    git("tag", "v1", cwd=root, env=env)
    git("branch", "side", cwd=root, env=env)
    ref("set", "code", "--pin", "record", cwd=root)
    ref("commit", "-m", "record only", cwd=root, env=fixed(env, 4))
    return root


def load(path: Path, fmt: str) -> dict[str, list[dict]]:
    """Every table as rows, through Python's own reader for the format."""
    tables: dict[str, list[dict]] = {}
    if fmt == "sqlite":
        con = sqlite3.connect(path)
        con.row_factory = sqlite3.Row
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            tables[name] = [dict(r) for r in con.execute(f"SELECT * FROM {name}")]
        tables["_ddl"] = sorted(
            tuple(r) for r in con.execute("SELECT type, name, sql FROM sqlite_master"))
        con.close()
        return tables
    for f in sorted(path.iterdir()):
        if f.name == "schema.json":
            tables["_schema"] = json.loads(f.read_text())
            continue
        name = f.name.rsplit(".", 1)[0]
        if fmt == "parquet":
            import pyarrow.parquet as pq
            t = pq.read_table(f)
            tables[name] = t.to_pylist()
            tables[name + "._types"] = [(fl.name, str(fl.type)) for fl in t.schema]
        elif fmt == "csv":
            with f.open(newline="", encoding="utf-8") as fh:
                tables[name] = list(csv.DictReader(fh))
        else:
            tables[name] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return tables


def normalized(tables):
    out = {}
    for name, rows in tables.items():
        if name.startswith("_") or name.endswith("._types"):
            out[name] = rows
            continue
        if name == "tether_meta":
            rows = [r for r in rows if r["key"] not in VOLATILE_META]
        out[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out


def export(runner, root, target, fmt, *extra):
    args = ["export", str(target), "--format", fmt, *extra]
    return runner(*args, cwd=root)


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_matches_reference(history, tether, ref, tmp_path, fmt):
    suffix = ".sqlite" if fmt == "sqlite" else ""
    theirs, ours = tmp_path / f"ref{suffix}", tmp_path / f"ours{suffix}"
    export(ref, history, theirs, fmt, "--listings", "--workspace")
    proc = export(tether, history, ours, fmt, "--listings", "--workspace")
    assert "note: export/publish/import are experimental" in proc.stderr
    a, b = normalized(load(theirs, fmt)), normalized(load(ours, fmt))
    assert a.keys() == b.keys()
    for name in a:
        assert b[name] == a[name], name
    objects = b["objects"]
    assert len(b["commits"]) == 4 and len(b["commit_parents"]) == 3
    assert len({r["commit_id"] for r in objects}) == 3 and len(objects) == 6
    assert all(r["identity_hash"] for r in objects)
    assert all(len(r["state_hash"]) == 32 for r in objects)
    assert len(b["object_states"]) >= 3 and b["listing_entries"]
    if fmt in ("csv", "jsonl"):
        # Byte for byte, in the same row order (tether_meta has the clock).
        for f in sorted(theirs.iterdir()):
            if not f.name.startswith("tether_meta."):
                assert (ours / f.name).read_bytes() == f.read_bytes(), f.name
    if fmt == "parquet":
        types = dict(b["objects._types"])
        assert types["recoverable"] == "bool" and types["locator_json"] == "string"
        assert dict(b["commit_parents._types"])["position"] == "int64"


def test_export_hashes_are_tether_vcs_digests(history, tether, tmp_path):
    from tether.backends.file import FileBackend
    from tether.backends.git import GitBackend
    from tether.manifest import _blake, canonical_bytes
    volatile = {"git": GitBackend.VOLATILE_KEYS, "file": FileBackend.VOLATILE_KEYS}
    tether("export", str(tmp_path / "x.sqlite"), cwd=history)
    con = sqlite3.connect(tmp_path / "x.sqlite")
    for kind, ident, ih, state, sh in con.execute(
            "SELECT kind, identity_json, identity_hash, state_json, state_hash FROM objects"):
        assert ih == _blake(canonical_bytes(json.loads(ident)), size=16)
        content = {k: v for k, v in json.loads(state).items() if k not in volatile[kind]}
        assert sh == _blake(canonical_bytes(content), size=16)
    meta = dict(con.execute("SELECT key, value FROM tether_meta"))
    assert meta["schema_version"] == "3" and meta["vcs"] == "git"


@pytest.mark.parametrize("runner_name", ["tether", "ref"])
def test_export_append_twice_no_duplicates(history, tether, ref, tmp_path, runner_name, env):
    runner = tether if runner_name == "tether" else ref
    target = tmp_path / "reg.sqlite"
    runner("export", str(target), "--rev", "HEAD~1", cwd=history)
    runner("export", str(target), "--append", cwd=history)
    runner("export", str(target), "--append", cwd=history)
    con = sqlite3.connect(target)
    for table, key in (("objects", "commit_id, key"), ("commits", "commit_id"),
                       ("object_states", "kind, identity_hash, state_hash"), ("refs", "name, kind"),
                       ("tether_meta", "key")):
        total = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        distinct = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {key} FROM {table})").fetchone()[0]
        assert total == distinct, table
    assert con.execute("SELECT count(*) FROM commits").fetchone()[0] == 4
    # Without --append the file is replaced.
    con.close()
    runner("export", str(target), "--rev", "HEAD", cwd=history)
    con = sqlite3.connect(target)
    assert con.execute("SELECT count(*) FROM commits").fetchone()[0] == 1


def test_export_append_matches_reference(history, tether, ref, tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    for runner, target in ((ref, a), (tether, b)):
        runner("export", str(target), "--rev", "HEAD~2", cwd=history)
        runner("export", str(target), "--rev", "HEAD", "--append", cwd=history)
    assert normalized(load(b, "sqlite")) == normalized(load(a, "sqlite"))


def test_export_revs_and_json(history, tether, ref, tmp_path):
    for runner, name in ((ref, "r"), (tether, "t")):
        out = runner.json("export", str(tmp_path / f"{name}.sqlite"), "--no-all-history",
                          cwd=history)
        assert out["rows"]["commits"] == 1 and out["format"] == "sqlite"
        assert out["head"] == git("rev-parse", "HEAD", cwd=history, env=runner.env).strip()
    proc = tether("export", str(tmp_path / "x"), "--format", "xml", cwd=history, check=False)
    assert proc.returncode == 1 and "--format must be one of" in proc.stderr
    proc = tether("export", str(tmp_path / "y.sqlite"), "--rev", "nope", cwd=history, check=False)
    assert proc.returncode == 1 and "could not resolve revision" in proc.stderr


# --- publish ----------------------------------------------------------------

import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

from pg import PASSWORD, PG_BIN, pg_db, postgres_server  # noqa: E402,F401  (fixtures)

TABLES = ("tether_meta", "commits", "commit_parents", "refs", "objects", "object_states",
          "listings", "listing_entries", "workspace")


def pg_tables(server, db, schema):
    out = {}
    for t in TABLES:
        rows = server.psql(f"SELECT row_to_json(x)::text FROM {schema}.{t} x", db=db)
        rows = [json.loads(r[0]) for r in rows]
        if t == "tether_meta":
            rows = [r for r in rows if r["key"] not in VOLATILE_META]
        out[t] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
    cols = server.psql(
        "SELECT table_name, column_name, data_type, ordinal_position FROM information_schema.columns "
        f"WHERE table_schema = '{schema}' ORDER BY table_name, ordinal_position", db=db)
    keys = server.psql(
        "SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc "
        "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name "
        f"AND kcu.table_schema = tc.table_schema WHERE tc.table_schema = '{schema}' "
        "AND tc.constraint_type = 'PRIMARY KEY' ORDER BY 1, kcu.ordinal_position", db=db)
    views = server.psql(f"SELECT table_name FROM information_schema.views WHERE table_schema = '{schema}' "
                        "ORDER BY 1", db=db)
    out["_columns"], out["_keys"], out["_views"] = cols, keys, views
    return out


def no_secret(proc):
    assert PASSWORD not in proc.stdout and PASSWORD not in proc.stderr


def test_publish_matches_reference(history, tether, ref, pg_db):
    server, db = pg_db
    dsn = server.dsn(db)
    r = ref("publish", "--to", dsn, "--schema", "theirs", "--listings", cwd=history)
    o = tether("publish", "--to", dsn, "--schema", "ours", "--listings", cwd=history)
    no_secret(o)
    assert "note: export/publish/import are experimental" in o.stderr
    assert o.stdout.splitlines()[0] == r.stdout.splitlines()[0].replace("'theirs'", "'ours'")
    assert pg_tables(server, db, "ours") == pg_tables(server, db, "theirs")
    # Again: every commit is already there, nothing duplicates.
    again = tether.json("publish", "--schema", "ours", cwd=history, env={"TETHER_PUBLISH_DSN": dsn})
    assert again["skipped_commits"] == 4 and again["upserted"]["objects"] == 0
    theirs_again = ref.json("publish", "--schema", "theirs", cwd=history,
                            env={"TETHER_PUBLISH_DSN": dsn})
    assert again == {**theirs_again, "schema": "ours"}
    # The server's notices (schema and tables already exist) are not printed.
    quiet = tether("publish", "--schema", "ours", "--to", dsn, cwd=history)
    assert "NOTICE" not in quiet.stderr and "already exists" not in quiet.stderr
    assert server.psql("SELECT count(*) FROM ours.commits", db=db) == [["4"]]
    assert pg_tables(server, db, "ours") == pg_tables(server, db, "theirs")
    assert server.psql("SELECT count(*) FROM ours.objects_head", db=db) == [["2"]]


def test_publish_dry_run_writes_nothing(history, tether, ref, pg_db):
    server, db = pg_db
    dsn = server.dsn(db)
    ours = tether.json("publish", "--to", dsn, "--dry-run", cwd=history)
    theirs = ref.json("publish", "--to", dsn, "--dry-run", cwd=history)
    for plan in (ours, theirs):
        plan.pop("created_at"), plan.pop("digest")
    assert ours == theirs
    assert [a["op"] for a in ours["actions"]] == ["upsert"] * 6
    assert server.psql("SELECT to_regnamespace('tether') IS NULL", db=db) == [["t"]]
    text = tether("publish", "--to", dsn, "--dry-run", cwd=history).stdout
    assert text.startswith("plan: publish (6 write(s))") and "tether.objects" in text


def test_publish_failure_leaves_nothing_half_written(history, tether, pg_db):
    server, db = pg_db
    dsn = server.dsn(db)
    # A statement the server refuses (refs gets a column publish cannot fill)
    # after commits and objects were written: nothing stays, not even the
    # tables publish created.
    server.psql("CREATE SCHEMA tether; CREATE TABLE tether.refs (name TEXT, kind TEXT, "
                "commit_id TEXT, owner TEXT NOT NULL, PRIMARY KEY (name, kind))", db=db)
    proc = tether("publish", "--to", dsn, cwd=history, check=False)
    assert proc.returncode == 1
    no_secret(proc)
    assert f"PostgreSQL database '{db}' on server 127.0.0.1:{server.port}" in proc.stderr
    assert "owner" in proc.stderr
    assert server.psql("SELECT to_regclass('tether.commits') IS NULL", db=db) == [["t"]]
    assert server.psql("SELECT count(*) FROM tether.refs", db=db) == [["0"]]


def test_publish_killed_mid_transaction_leaves_nothing(history, tether, pg_db):
    server, db = pg_db
    dsn = server.dsn(db)
    tether("publish", "--to", dsn, "--rev", "HEAD~3", cwd=history)
    assert server.psql("SELECT count(*) FROM tether.commits", db=db) == [["1"]]
    # Another session holds refs: the next publish writes tether_meta,
    # commits and commit_parents, then waits on it - and is killed there.
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    holder = subprocess.Popen(
        [str(PG_BIN / "psql"), "-X", "-q", "-h", "127.0.0.1", "-p", str(server.port), "-U", "tether",
         "-d", db, "-c", "BEGIN; LOCK TABLE tether.refs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(120)"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    publisher = None
    try:
        deadline = time.time() + 30
        while server.psql("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                          "WHERE c.relname = 'refs' AND l.granted", db=db) == [["0"]]:
            assert time.time() < deadline, "the lock holder never got its lock"
            time.sleep(0.1)
        publisher = subprocess.Popen([str(tether.exe), "publish", "--to", dsn], cwd=history, env=tether.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while server.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tether' "
                          "AND wait_event_type = 'Lock'", db=db) == [["0"]]:
            assert publisher.poll() is None, publisher.stderr.read()
            assert time.time() < deadline, "publish never reached refs"
            time.sleep(0.1)
        publisher.send_signal(signal.SIGKILL)
        publisher.wait(timeout=30)
    finally:
        if publisher and publisher.poll() is None:
            publisher.kill()
        server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE '%pg_sleep(120)%' AND pid <> pg_backend_pid()", db=db)
        holder.wait(timeout=30)
    # The server ends the dead client's transaction: what it wrote is gone.
    deadline = time.time() + 30
    while server.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tether'",
                      db=db) != [["0"]]:
        assert time.time() < deadline, "the killed publish's session never ended"
        time.sleep(0.1)
    assert server.psql("SELECT count(*) FROM tether.commits", db=db) == [["1"]]
    assert server.psql("SELECT count(*) FROM tether.commit_parents", db=db) == [["0"]]
    # And the next publish completes from there.
    tether("publish", "--to", dsn, cwd=history)
    assert server.psql("SELECT count(*) FROM tether.commits", db=db) == [["4"]]


def test_publish_errors_never_print_the_password(history, tether, pg_db):
    server, db = pg_db
    bad = server.dsn(db).replace(PASSWORD, PASSWORD + "x")
    proc = tether("publish", "--to", bad, cwd=history, check=False)
    assert proc.returncode == 1 and "password authentication failed" in proc.stderr
    assert PASSWORD not in proc.stderr and PASSWORD not in proc.stdout
    assert f"on server 127.0.0.1:{server.port}" in proc.stderr
    proc = tether("publish", cwd=history, check=False)
    assert proc.returncode == 1 and "a Postgres DSN is required" in proc.stderr
    # This checkout's secrets may name it (never the committed tether.toml).
    secrets = history / ".tether" / "secrets.toml"
    secrets.write_text(f'[publish]\ndsn = "{server.dsn(db)}"\n')
    secrets.chmod(0o600)
    proc = tether("publish", cwd=history)
    no_secret(proc)
    assert server.psql("SELECT count(*) FROM tether.commits", db=db) == [["4"]]
    proc = tether("publish", "--to", server.dsn(db), "--schema", "x;drop", cwd=history, check=False)
    assert proc.returncode == 1 and "invalid SQL identifier" in proc.stderr


# --- import -----------------------------------------------------------------

@pytest.fixture
def repos(tmp_path, env):
    """Three small git repositories a registry can list."""
    out = {}
    for name in ("c1", "c2", "c3"):
        r = tmp_path / "stores" / name
        r.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=r, env=env)
        (r / "f").write_text(name)
        git("add", "f", cwd=r, env=env)
        git("commit", "-q", "-m", "init", cwd=r, env=env)
        out[name] = str(r)
    return out


def empty_dataset(path: Path, runner, env) -> Path:
    path.mkdir()
    git("init", "-q", "-b", "main", cwd=path, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=path, env=env)
    runner("init", "--dataset-id", DS, cwd=path)
    return path


def manifests(root: Path) -> dict[str, str]:
    """Manifest texts by path, less captured_at (a commit's clock)."""
    d = root / ".tether" / "objects"
    return {p.relative_to(d).as_posix(): re.sub(r'(?m)^captured_at = .*\n', "", p.read_text())
            for p in sorted(d.rglob("*.toml"))}


def sqlite_registry(path: Path, rows):
    con = sqlite3.connect(path)
    con.execute("DROP TABLE IF EXISTS registry")
    con.execute("CREATE TABLE registry (key TEXT, kind TEXT, uri TEXT, policy_pin TEXT, owner TEXT)")
    con.executemany("INSERT INTO registry VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()


def test_import_sqlite_sync_undo_matches_reference(tmp_path, tether, ref, env, repos):
    reg = tmp_path / "reg.sqlite"
    sqlite_registry(reg, [("a", "git", repos["c1"], None, "x"), ("team/b", "git", repos["c2"], "record", "y")])
    ours = empty_dataset(tmp_path / "ours", tether, env)
    theirs = empty_dataset(tmp_path / "theirs", ref, env)
    for runner, root in ((tether, ours), (ref, theirs)):
        plan = runner.json("import", str(reg), "--table", "registry", "--dry-run", cwd=root)
        assert [(a["op"], a["key"]) for a in plan["actions"]] == [("add", "a"), ("add", "team/b")]
        assert plan["notes"] == ["ignored columns: owner"]
        out = runner.json("import", str(reg), "--table", "registry", cwd=root)
        assert out == {"added": ["a", "team/b"], "updated": [], "removed": [], "unchanged": []}
    assert manifests(ours) == manifests(theirs) and len(manifests(ours)) == 2
    # Both journal the plan they applied, not null.
    plans = {}
    for name, root in (("ours", ours), ("theirs", theirs)):
        entry = [json.loads(l) for l in (root / ".tether/ops.jsonl").read_text().splitlines()][-1]
        assert entry["command"] == "import" and entry["plan"] is not None, entry
        plans[name] = {k: entry["plan"][k] for k in ("command", "format", "notes")} | {
            "actions": [(a["op"], a["key"], a["kind"], a["target"]) for a in entry["plan"]["actions"]]}
    assert plans["ours"] == plans["theirs"]
    tether("commit", "-m", "imported", cwd=ours)
    ref("commit", "-m", "imported", cwd=theirs)
    first = manifests(ours)
    # The registry changes: a's policy, b gone, c new.
    sqlite_registry(reg, [("a", "git", repos["c1"], "record", "x"), ("c", "git", repos["c3"], None, "z")])
    for runner, root in ((tether, ours), (ref, theirs)):
        text = runner("import", str(reg), "--query", "SELECT key, kind, uri, policy_pin FROM registry",
                      "--sync", cwd=root).stdout
        assert text.splitlines()[0] == "added 1, updated 1, removed 1, unchanged 0"
    assert manifests(ours) == manifests(theirs)
    assert set(manifests(ours)) == {"a.toml", "c.toml"}
    assert 'pin = "record"' in manifests(ours)["a.toml"]
    # Unchanged rows are reported as such.
    out = tether.json("import", str(reg), "--table", "registry", "--sync", cwd=ours)
    assert out["unchanged"] == ["a", "c"] and not out["added"]
    # undo restores the manifests the sync replaced.
    proc = tether("undo", cwd=ours)
    assert "import" in proc.stdout
    assert manifests(ours) == first
    assert tether.json("status", cwd=ours)["objects"]


def test_import_refuses_writing_and_multiple_statements(tmp_path, tether, env, repos):
    reg = tmp_path / "reg.sqlite"
    sqlite_registry(reg, [("a", "git", repos["c1"], None, "x")])
    ds = empty_dataset(tmp_path / "ds", tether, env)
    for q in ("DELETE FROM registry RETURNING key, kind, uri",
              "SELECT key, kind, uri FROM registry; DROP TABLE registry",
              "INSERT INTO registry (key, kind, uri) VALUES ('z', 'git', '/x') RETURNING *"):
        proc = tether("import", str(reg), "--query", q, cwd=ds, check=False)
        assert proc.returncode == 1, q
        assert f"SQLite database {reg}" in proc.stderr
    con = sqlite3.connect(reg)
    assert con.execute("SELECT count(*) FROM registry").fetchone()[0] == 1
    assert manifests(ds) == {}
    proc = tether("import", str(reg), cwd=ds, check=False)
    assert proc.returncode == 1 and "exactly one of --table or --query" in proc.stderr
    proc = tether("import", str(reg), "--table", "registry; drop", cwd=ds, check=False)
    assert proc.returncode == 1 and "invalid table name" in proc.stderr
    proc = tether("import", str(tmp_path / "missing.sqlite"), "--table", "t", cwd=ds, check=False)
    assert proc.returncode == 1 and "import source not found" in proc.stderr


def test_import_query_from_secrets_not_from_the_committed_file(tmp_path, tether, env, repos):
    reg = tmp_path / "reg.sqlite"
    sqlite_registry(reg, [("a", "git", repos["c1"], None, "x"), ("b", "git", repos["c2"], None, "x")])
    ds = empty_dataset(tmp_path / "ds", tether, env)
    secrets = ds / ".tether" / "secrets.toml"
    secrets.write_text("[import]\nquery = \"SELECT key, kind, uri FROM registry WHERE key = 'b'\"\n")
    secrets.chmod(0o600)
    assert tether.json("import", str(reg), cwd=ds)["added"] == ["b"]
    # A committed tether.toml that chooses SQL is refused by name.
    cfg = ds / "tether.toml"
    cfg.write_text(cfg.read_text() + "\n[import]\nquery = \"DELETE FROM registry\"\n")
    proc = tether("import", str(reg), cwd=ds, check=False)
    assert proc.returncode == 1 and "[import]" in proc.stderr and "query" in proc.stderr
    assert set(manifests(ds)) == {"b.toml"}


def test_import_csv_and_jsonl(tmp_path, tether, ref, env, repos):
    rows = [{"key": "a", "kind": "git", "uri": repos["c1"], "note": "x, \"y\""},
            {"key": "b", "kind": "git", "locator_json": json.dumps({"uri": repos["c2"]})}]
    with (tmp_path / "reg.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["key", "kind", "uri", "locator_json", "note"])
        w.writeheader()
        w.writerows(rows)
    (tmp_path / "reg.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for src in ("reg.csv", "reg.jsonl"):
        ours = empty_dataset(tmp_path / f"ours-{src}", tether, env)
        theirs = empty_dataset(tmp_path / f"theirs-{src}", ref, env)
        a = tether.json("import", str(tmp_path / src), "--dry-run", cwd=ours)
        b = ref.json("import", str(tmp_path / src), "--dry-run", cwd=theirs)
        for p in (a, b):
            p.pop("created_at"), p.pop("digest"), p["context"].pop("manifest_hash")
            for pre in p["preconditions"]:
                pre.pop("expected")
        assert a == b
        tether("import", str(tmp_path / src), cwd=ours)
        ref("import", str(tmp_path / src), cwd=theirs)
        assert manifests(ours) == manifests(theirs) and len(manifests(ours)) == 2


def test_import_postgres_sync_undo_and_read_only(tmp_path, tether, ref, env, repos, pg_db):
    server, db = pg_db
    server.psql("CREATE TABLE registry (key TEXT, kind TEXT, uri TEXT, policy_pin TEXT, "
                "meta JSONB)", db=db)
    server.psql(f"INSERT INTO registry VALUES ('a', 'git', '{repos['c1']}', NULL, '{{}}'), "
                f"('b', 'git', '{repos['c2']}', 'record', NULL)", db=db)
    dsn = server.dsn(db)
    query = "SELECT key, kind, uri, policy_pin FROM registry"
    ours = empty_dataset(tmp_path / "ours", tether, env)
    theirs = empty_dataset(tmp_path / "theirs", ref, env)
    for runner, root in ((tether, ours), (ref, theirs)):
        out = runner.json("import", dsn, "--query", query, cwd=root)
        assert out["added"] == ["a", "b"]
    assert manifests(ours) == manifests(theirs)
    before = manifests(ours)
    server.psql(f"DELETE FROM registry WHERE key = 'b'; UPDATE registry SET uri = '{repos['c3']}' "
                "WHERE key = 'a'", db=db)
    for runner, root in ((tether, ours), (ref, theirs)):
        out = runner.json("import", dsn, "--table", "registry", "--sync", cwd=root)
        assert out == {"added": [], "updated": ["a"], "removed": ["b"], "unchanged": []}
    assert manifests(ours) == manifests(theirs)
    assert repos["c3"] in manifests(ours)["a.toml"]
    tether("undo", cwd=ours)
    assert manifests(ours) == before
    # Hostile queries: the read-only transaction refuses any write, and
    # only one statement runs.
    for q in ("WITH d AS (DELETE FROM registry RETURNING key, kind, uri) SELECT * FROM d",
              "SELECT key, kind, uri FROM registry; DROP TABLE registry",
              "SELECT set_config('transaction_read_only', 'off', true), key, kind, uri FROM registry"):
        proc = tether("import", dsn, "--query", q, cwd=ours, check=False)
        assert proc.returncode == 1, q
        assert f"PostgreSQL database '{db}' on server 127.0.0.1:{server.port}" in proc.stderr
        no_secret(proc)
    proc = tether("import", dsn, "--query", "WITH d AS (DELETE FROM registry RETURNING key, kind, uri) "
                  "SELECT * FROM d", cwd=ours, check=False)
    assert "read-only transaction" in proc.stderr
    assert server.psql("SELECT count(*) FROM registry", db=db) == [["1"]]
    assert manifests(ours) == before


BAD_ROWS = [
    ({"key": "a", "kind": "nope", "uri": "/x"},),
    ({"key": "b", "kind": "git", "uri": "C1"}, {"key": "b", "kind": "git", "uri": "C2"}),
    ({"key": "a", "kind": "file", "uri": "C1"},),
    ({"key": "b", "kind": "git", "locator_json": "[1]"},),
    ({"key": "../x", "kind": "git", "uri": "C1"},),
    ({"key": "q", "kind": "git"},),
    ({"key": "q", "kind": "git", "uri": "C1", "policy_pin": "sometimes"},),
    ({"key": "", "kind": "git", "uri": "C1"},),
]


@pytest.mark.parametrize("rows", BAD_ROWS, ids=range(len(BAD_ROWS)))
def test_import_refusals_match_reference(tmp_path, tether, ref, env, repos, rows):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"key": "a", "kind": "git", "uri": repos["c1"]}) + "\n")
    bad = tmp_path / "bad.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in rows)
    bad.write_text(text.replace('"C1"', json.dumps(repos["c1"])).replace('"C2"', json.dumps(repos["c2"])))
    errors = []
    for runner, name in ((tether, "ours"), (ref, "theirs")):
        root = empty_dataset(tmp_path / name, runner, env)
        runner("import", str(good), cwd=root)
        before = manifests(root)
        proc = runner("import", str(bad), "--sync", cwd=root, check=False)
        assert proc.returncode == 1, proc.stdout
        assert manifests(root) == before
        errors.append([ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")][-1])
    ours, theirs = errors
    if "needs `key` and `kind`" in theirs:  # the row is shown in each language's notation
        ours, theirs = ours.split(": {")[0], theirs.split(": {")[0]
    assert ours.split(" (")[0] == theirs.split(" (")[0]


def test_export_workspace_on_a_working_branch_matches_reference(tmp_path, tether, ref, env, repos):
    root = empty_dataset(tmp_path / "ds", ref, env)
    ref("add", "code", repos["c1"], "--kind", "git", cwd=root)
    ref("commit", "-m", "one", cwd=root)
    ref("new", "-b", "feature", "--eager", cwd=root)
    ref("status", cwd=root)
    for runner, name in ((ref, "r"), (tether, "o")):
        runner("export", str(tmp_path / name), "--format", "jsonl", "--workspace", cwd=root)
    rows = (tmp_path / "o" / "workspace.jsonl").read_text()
    assert "tether.ws.0a1b2c3d.feature" in rows
    for t in ("workspace", "refs", "objects", "commits"):
        assert (tmp_path / "o" / f"{t}.jsonl").read_bytes() == (tmp_path / "r" / f"{t}.jsonl").read_bytes(), t
