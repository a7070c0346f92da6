"""`publish` side by side with tether-vcs 0.1.0b7, each on its own dataset
built by itself in the same place, into the same PostgreSQL 15 database
(the schema dropped between the runs): a publish with no DSN, the first
publish, the same again (nothing duplicates), after a pull, with --rev, with
--listings, from a working bookmark, a refused schema name, a wrong
password.  Every step's exit code, error line and --json answer, and every
published table (rows, columns, keys, views), must agree once the dataset's
own commit ids are symbolised in history order (side_by_side.py)."""
from __future__ import annotations

import json

import pytest

import side_by_side as sbs
from conftest import git
from pg import PASSWORD, pg_db, postgres_server  # noqa: F401  (fixtures)
from test_registry import TABLES, VOLATILE_META

DS = "0a1b2c3f"


def fixed(env, n):
    e = dict(env)
    stamp = f"2026-01-0{n}T00:00:00+00:00"
    e.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    return e


def tables(server, db: str, schema: str) -> dict:
    if server.psql(f"SELECT to_regnamespace('{schema}') IS NULL", db=db) == [["t"]]:
        return {}
    out = {}
    for t in TABLES:
        rows = [json.loads(r[0]) for r in server.psql(f"SELECT row_to_json(x)::text FROM {schema}.{t} x", db=db)]
        if t == "tether_meta":
            rows = [r for r in rows if r["key"] not in VOLATILE_META]
        out[t] = rows
    out["_columns"] = server.psql(
        "SELECT table_name, column_name, data_type, ordinal_position FROM information_schema.columns "
        f"WHERE table_schema = '{schema}' ORDER BY table_name, ordinal_position", db=db)
    out["_views"] = server.psql(f"SELECT table_name FROM information_schema.views WHERE table_schema = "
                                f"'{schema}' ORDER BY 1", db=db)
    return out


def test_publish_side_by_side(tmp_path, env, tether, ref, pg_db):
    server, db = pg_db
    dsn = server.dsn(db)
    wrong = dsn.replace(PASSWORD, "not-the-Pa55word")

    def make(root, runner, name):
        server.psql("DROP SCHEMA IF EXISTS tether CASCADE; DROP SCHEMA IF EXISTS other CASCADE", db=db)
        data = root / "data"
        (data / "sub").mkdir(parents=True)
        (data / "a.txt").write_text("a\n")
        (data / "sub" / "b.txt").write_text("b\n")
        code = root / "code"
        code.mkdir()
        git("init", "-q", "-b", "main", cwd=code, env=env)
        (code / "model.py").write_text("weights = 1\n")
        git("add", ".", cwd=code, env=fixed(env, 1))
        git("commit", "-q", "-m", "initial model", cwd=code, env=fixed(env, 1))
        ds = root / "ds"
        ds.mkdir()
        git("init", "-q", "-b", "main", cwd=ds, env=env)
        git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=fixed(env, 1))

        def retrain(ds):
            (code / "model.py").write_text("weights = 2\n")
            git("commit", "-q", "-am", "retrain", cwd=code, env=fixed(env, 2))

        def on_feat(ds):
            git("switch", "-q", f"tether.ws.{DS}.feat", cwd=code, env=env)
            (code / "model.py").write_text("weights = 3\n")
            git("commit", "-q", "-am", "feature", cwd=code, env=fixed(env, 3))
            git("switch", "-q", "main", cwd=code, env=env)

        def published(schema):
            def step(ds):
                t = tables(server, db, schema)
                return {k: len(v) for k, v in t.items() if not k.startswith("_")}
            step.__name__ = f"rows in {schema}"
            return step

        steps = [
            ("init", "--dataset-id", DS),
            ("add", "files", str(data), "--kind", "file"),
            ("add", "code", str(code), "--kind", "git"),
            ("commit", "-m", "first"),
            ("publish", "--json"),
            ("publish", "--to", dsn, "--dry-run", "--json"),
            ("publish", "--to", dsn, "--json"),
            published("tether"),
            ("publish", "--to", dsn, "--json"),
            retrain,
            ("pull",),
            ("publish", "--to", dsn, "--rev", "HEAD", "--json"),
            ("publish", "--to", dsn, "--listings", "--json"),
            ("new", "-b", "feat", "--eager"),
            on_feat,
            ("commit", "-m", "feature work"),
            ("publish", "--to", dsn, "--schema", "other", "--json"),
            published("other"),
            ("publish", "--to", dsn, "--schema", "bad-name; drop", "--json"),
            ("publish", "--to", wrong, "--json"),
        ]
        shown = sbs.run(runner, ds, steps)
        for s in shown:
            for k in ("error", "_stderr"):
                assert PASSWORD not in (s.get(k) or ""), (name, s)
        history = git("rev-list", "--reverse", "--topo-order", "--all", cwd=ds, env=env).split()
        w = sbs.World(name, shown, {}, seed=history)
        w.files["tether"] = tables(server, db, "tether")
        w.files["other"] = tables(server, db, "other")
        return w

    worlds = sbs.both(tmp_path, tether, ref, make)
    # rows as sets: each table's row order is the server's
    for w in worlds.values():
        norm = w.normalised()
        for schema in ("tether", "other"):
            for t in TABLES:
                norm["files"][schema][t] = sorted(norm["files"][schema][t],
                                                   key=lambda r: json.dumps(r, sort_keys=True))
        w.files = {"tables": norm["files"]}
    # Deliberate difference: a connection the server refuses is one error
    # line naming the database and server; tether-vcs ends in a traceback.
    mine, theirs = worlds["ours"].steps[-1], worlds["theirs"].steps[-1]
    assert mine["rc"] == theirs["rc"] == 1
    assert mine["error"].startswith(f"error: PostgreSQL database '{db}' on server 127.0.0.1:{server.port}: ")
    assert "password authentication failed" in mine["error"] and "Traceback" not in mine["_stderr"]
    assert theirs["error"] is None and "OperationalError: connection failed" in theirs["_stderr"]
    theirs["error"] = mine["error"]
    diffs = sbs.differences(worlds["ours"], worlds["theirs"])
    assert diffs == [], "\n".join(diffs)
    ours = worlds["ours"].normalised()["steps"]
    assert [s.get("rc") for s in ours] == [0, 0, 0, 0, 1, 0, 0, None, 0, None, 0, 0, 0, 0, None, 0, 0,
                                            None, 1, 1]
    assert ours[7]["value"]["commits"] == 2 and ours[17]["value"]["commits"] == 4
    assert ours[8]["json"]["skipped_commits"] == 2
