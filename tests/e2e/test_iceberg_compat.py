"""The iceberg lifecycle side by side with tether-vcs 0.1.0b7 on a
PostgreSQL SQL catalog and on Apache Iceberg's REST catalog server: add,
status (a table the catalog lacks, a ref the table lacks), commit, log,
verify, open, new, a write on the fork through pyiceberg, commit, diff,
promote (the plan and the move), gc, undo, ops.  Every step's exit code,
error line and --json answer, the manifests, workspace.toml, the journal's
shape and the table's refs must agree once run-bound ids are symbolised
(side_by_side.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path
import warnings

import pyarrow as pa
import pytest

import side_by_side as sbs
from conftest import git
from iceberg_rest import TOKEN, rest_server  # noqa: F401  (fixture)
from pg import pg_db, postgres_server  # noqa: F401  (fixtures)

warnings.simplefilter("ignore")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402

DS = "1ceb0e9b"
SCHEMA = pa.schema([("id", pa.int64())])
BRANCH = f"tether.ws.{DS}.feat"


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids)}, schema=SCHEMA)


class Catalog:
    def __init__(self, kind: str, uri: str, warehouse: str):
        self.kind, self.uri, self.warehouse = kind, uri, warehouse

    def load(self):
        if self.kind == "rest":
            return RestCatalog("default", uri=self.uri, token=TOKEN)
        return SqlCatalog("default", uri=self.uri, warehouse=self.warehouse)

    def secrets(self) -> str:
        if self.kind == "rest":
            extra = f', token = "{TOKEN}"'
            uri = self.uri
        else:
            extra = ""
            uri = self.uri
        return ("[backends.iceberg]\n"
                f'catalog = {{ type = "{self.kind}", uri = "{uri}", warehouse = "{self.warehouse}"{extra} }}\n')

    def fresh(self, *idents: str) -> None:
        """The tables anew: dropped (with every ref a run made) and created."""
        c = self.load()
        if ("ns",) not in c.list_namespaces():
            c.create_namespace("ns")
        for ident in idents:
            if c.table_exists(ident):
                c.drop_table(ident)


@pytest.fixture(params=["postgres", "rest"])
def catalog(request, tmp_path):
    if request.param == "postgres":
        server, name = request.getfixturevalue("pg_db")
        wh = tmp_path / "warehouse"
        wh.mkdir()
        uri = server.dsn(name).replace("postgresql://", "postgresql+psycopg://")
        return Catalog("sql", uri, f"file://{wh}")
    srv = request.getfixturevalue("rest_server")
    return Catalog("rest", srv.uri, f"file://{srv.warehouse}")


def snapshots(cat: Catalog, ident: str) -> list[str]:
    t = cat.load().load_table(ident)
    return [str(s.snapshot_id) for s in sorted(t.snapshots(), key=lambda s: s.sequence_number)]


def table_refs(cat: Catalog, ident: str) -> dict[str, list]:
    t = cat.load().load_table(ident)
    return {name: [str(r.snapshot_id), r.snapshot_ref_type] for name, r in sorted(t.refs().items())}


def dataset(root, runner, env, cat: Catalog):
    ds = root / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
    runner("init", "--dataset-id", DS, cwd=ds)
    secrets = ds / ".tether" / "secrets.toml"
    secrets.write_text(cat.secrets())
    secrets.chmod(0o600)
    return ds


def lifecycle(cat: Catalog, env):
    def make(root, runner, name):
        cat.fresh("ns.t", "ns.empty")
        c = cat.load()
        t = c.create_table("ns.t", schema=SCHEMA)
        t.append(rows(1, 2))
        t.append(rows(3))
        c.create_table("ns.empty", schema=SCHEMA)
        ds = dataset(root, runner, env, cat)

        def write_on_fork(ds):
            cat.load().load_table("ns.t").append(rows(9), branch=BRANCH)

        def main_moves(ds):
            cat.load().load_table("ns.t").append(rows(10))

        steps = [
            ("add", "t", "--kind", "iceberg", "--table", "ns.t"),
            ("add", "e", "--kind", "iceberg", "--table", "ns.empty"),
            ("add", "gone", "--kind", "iceberg", "--table", "ns.gone"),
            ("add", "at", "--kind", "iceberg", "--table", "ns.t", "--at", "nosuchref"),
            ("status", "--json"),
            ("remove", "gone"),
            ("remove", "at"),
            ("commit", "-m", "first", "--json"),
            ("log", "t", "--json"),
            ("verify", "--json"),
            ("open", "t", "--json"),
            ("open", "t", "-r", "HEAD", "--json"),
            ("remove", "e"),
            ("commit", "-m", "without e", "--json"),
            ("new", "-b", "feat", "--eager", "--json"),
            write_on_fork,
            ("status", "--json"),
            ("commit", "-m", "work", "--json"),
            ("diff", "HEAD~1", "HEAD", "--json"),
            ("log", "t", "--json"),
            ("promote", "--dry-run", "--json"),
            main_moves,
            ("promote", "--dry-run", "--json"),
            ("promote", "--json"),
            ("new", "main", "--json"),
            ("gc", "--dry-run", "--json"),
            ("gc", "--no-dry-run", "--json"),
            ("undo", "--json"),
            ("status", "--json"),
            ("ops", "--json"),
        ]
        shown = sbs.run(runner, ds, steps)
        w = sbs.World(name, shown, sbs.dataset_files(ds, env), seed=snapshots(cat, "ns.t"))
        w.files["refs"] = table_refs(cat, "ns.t")
        return w
    return make


def test_iceberg_lifecycle_side_by_side(tmp_path, env, tether, ref, catalog):
    worlds = sbs.both(tmp_path, tether, ref, lifecycle(catalog, env))
    diffs = sbs.differences(worlds["ours"], worlds["theirs"])
    if diffs and os.environ.get("SBS_DUMP"):
        Path(os.environ["SBS_DUMP"]).write_text("\n\n".join(diffs))
    assert diffs == []
    ours = worlds["ours"].normalised()
    status = ours["steps"][4]["json"]["objects"]
    errors = {o["key"]: o["error"] for o in status}
    assert errors["at"] == "[iceberg] no snapshot for ref 'nosuchref'"
    assert errors["gone"].startswith("[iceberg] iceberg: NoSuchTableError: ")
    # the moved main: a non-merging backend's plan says what re-running does
    plan = ours["steps"][22]["json"]
    assert [a["op"] for a in plan["actions"]] == ["refuse"]
    first = ours["steps"][20]["json"]
    base = [p for p in first["preconditions"] if p["kind"] == "base_state"]
    assert len(base) == 1 and "the iceberg backend cannot merge; " in base[0]["detail"]


def test_new_of_an_empty_table_exits_3_where_tether_vcs_exits_1(tmp_path, env, tether, ref, catalog):
    """Deliberate difference: `new --eager` that cannot fork a table with no
    snapshot yet forks the rest and exits 3 (partial), naming the rerun;
    tether-vcs leaves the same world and exits 1."""
    def make(root, runner, name):
        cat = catalog
        cat.fresh("ns.t", "ns.empty")
        c = cat.load()
        c.create_table("ns.t", schema=SCHEMA).append(rows(1))
        c.create_table("ns.empty", schema=SCHEMA)
        ds = dataset(root, runner, env, cat)
        shown = sbs.run(runner, ds, [
            ("add", "t", "--kind", "iceberg", "--table", "ns.t"),
            ("add", "e", "--kind", "iceberg", "--table", "ns.empty"),
            ("commit", "-m", "first"),
            ("new", "-b", "feat", "--eager"),
            ("status", "--json"),
        ])
        w = sbs.World(name, shown, sbs.dataset_files(ds, env), seed=snapshots(cat, "ns.t"))
        w.files["refs"] = table_refs(cat, "ns.t")
        w.files["bookmark"] = git("symbolic-ref", "--short", "HEAD", cwd=ds, env=env)
        return w

    worlds = sbs.both(tmp_path, tether, ref, make)
    ours, theirs = (worlds[n].normalised() for n in ("ours", "theirs"))
    assert [s["rc"] for s in ours["steps"]] == [0, 0, 0, 3, 0]
    assert [s["rc"] for s in theirs["steps"]] == [0, 0, 0, 1, 0]
    for name in ("ours", "theirs"):
        assert "had no snapshot yet" in worlds[name].steps[3]["_stderr"], name
    for w in worlds.values():
        w.steps[3] = dict(w.steps[3], rc=None, error=None)
    diffs = sbs.differences(worlds["ours"], worlds["theirs"])
    if diffs and os.environ.get("SBS_DUMP"):
        Path(os.environ["SBS_DUMP"]).write_text("\n\n".join(diffs))
    assert diffs == []
    assert ours["files"]["bookmark"] == "feat\n"
