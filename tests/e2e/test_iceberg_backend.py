"""The `iceberg` backend end to end, on real SQL catalogs.

pyiceberg 0.12 creates and appends to tables in its SQL catalog (on SQLite
and on PostgreSQL 15); tether reads the catalog and the table metadata
natively and pins, forks and promotes by writing the next metadata file and
swapping the catalog's metadata_location; pyiceberg then reads at the tag
and the branch and appends on the fork.  tether-vcs on the same catalog
gives the same manifests and pin ids, and each reads the other's dataset.
Hostile input (committed credentials, broken metadata, a metadata file
outside the warehouse) is refused with the table named, nothing written.
"""
from __future__ import annotations

import json
import tomllib
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

from conftest import git
from pg import PASSWORD, pg_db, postgres_server  # noqa: F401  (fixtures)

warnings.simplefilter("ignore")
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402

DS = "1ceb0e9a"
SCHEMA = pa.schema([("id", pa.int64())])


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids)}, schema=SCHEMA)


class Catalog:
    """One SQL catalog: what pyiceberg loads and what secrets.toml says."""

    def __init__(self, uri: str, warehouse: Path):
        self.uri = uri
        self.warehouse = f"file://{warehouse}"
        warehouse.mkdir(parents=True, exist_ok=True)

    def load(self) -> SqlCatalog:
        return SqlCatalog("default", uri=self.uri, warehouse=self.warehouse)

    def secrets(self) -> str:
        return ("[backends.iceberg]\n"
                f'catalog = {{ type = "sql", uri = "{self.uri}", warehouse = "{self.warehouse}" }}\n')

    def table(self, ident: str):
        return self.load().load_table(ident)


@pytest.fixture(params=["sqlite", "postgres"])
def catalog(request, tmp_path) -> Catalog:
    if request.param == "sqlite":
        return Catalog(f"sqlite:///{tmp_path / 'catalog.db'}", tmp_path / "warehouse")
    server, name = request.getfixturevalue("pg_db")
    uri = server.dsn(name).replace("postgresql://", "postgresql+psycopg://")
    return Catalog(uri, tmp_path / "warehouse")


@pytest.fixture
def sqlite_catalog(tmp_path) -> Catalog:
    return Catalog(f"sqlite:///{tmp_path / 'catalog.db'}", tmp_path / "warehouse")


def make_table(cat: Catalog, ident: str = "ns.t", batches=((1, 2), (3,))):
    c = cat.load()
    ns = ident.rsplit(".", 1)[0]
    if (ns,) not in c.list_namespaces():
        c.create_namespace(ns)
    t = c.create_table(ident, schema=SCHEMA)
    for b in batches:
        t.append(rows(*b))
    return c.load_table(ident)


def new_dataset(root: Path, runner, env, cat: Catalog, ds_id: str = DS) -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", ds_id, cwd=root)
    secrets = root / ".tether" / "secrets.toml"
    secrets.write_text(cat.secrets())
    secrets.chmod(0o600)
    return root


def manifest(ds: Path, key: str) -> dict:
    return tomllib.loads((ds / ".tether" / "objects" / f"{key}.toml").read_text())


def ancestry(table, ref: str = "main") -> list[int]:
    out, sid = [], table.refs()[ref].snapshot_id
    while sid is not None:
        out.append(sid)
        sid = table.snapshot_by_id(sid).parent_snapshot_id
    return out


def ids_at(table, snapshot_id: int) -> list[int]:
    return sorted(table.scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


def test_lifecycle_with_pyiceberg(tmp_path, tether, env, catalog):
    t = make_table(catalog)
    catalog.load().create_table("ns.empty", schema=SCHEMA)
    ds = new_dataset(tmp_path / "ds", tether, env, catalog)
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
    tether("add", "e", "--kind", "iceberg", "--table", "ns.empty", cwd=ds)
    pinned = tether.json("commit", "-m", "first", cwd=ds)["pinned"]
    head = t.current_snapshot().snapshot_id
    m = manifest(ds, "t")
    assert m["state"] == {"snapshot_id": head} and m["locator"] == {"identifier": "ns.t"}
    tag = m["pin"]["ref"]
    t = catalog.table("ns.t")
    assert t.refs()[tag].snapshot_id == head and t.refs()[tag].snapshot_ref_type == "tag"
    # The empty table is held without a tag and opens at -1.
    assert manifest(ds, "e")["state"] == {"snapshot_id": -1}
    assert list(catalog.table("ns.empty").refs()) == []
    assert "e" in pinned
    assert tether.json("verify", cwd=ds)["e"] == {"status": "ok",
                                                   "message": "no snapshot yet: nothing to hold"}
    h = tether.json("open", "e", "-r", "HEAD", cwd=ds)
    assert h["address"] == "ns.empty#-1" and h["read_only"] is True
    tether("remove", "e", cwd=ds)  # it cannot be forked (see below)

    # log: the ancestry of main with operation and row counts.
    log = tether.json("log", "t", cwd=ds)
    assert [int(e["id"]) for e in log] == ancestry(t)
    assert log[0]["message"] == "append: +1 rows" and log[1]["message"] == "append: +2 rows"
    assert tag in log[0]["refs"] and "main" in log[0]["refs"]

    # pyiceberg appends on main: the trunk falls behind; commit catches up.
    t.append(rows(4, 5))
    tether("commit", "-m", "second", cwd=ds)
    t = catalog.table("ns.t")
    assert manifest(ds, "t")["state"]["snapshot_id"] == t.current_snapshot().snapshot_id
    diff = tether.json("diff", "HEAD~1", "HEAD", "--content", cwd=ds)
    entries = [o for o in diff if o["key"] == "t"][0]["detail"]["entries"]
    assert [e["detail"] for e in entries] == ["append: +2 rows, +1 files"]

    # new: a branch at the pin; pyiceberg appends on it; commit; pyiceberg
    # reads the tag and the branch.
    tether("new", "-b", "feat", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.feat"
    t = catalog.table("ns.t")
    assert t.refs()[branch].snapshot_id == t.current_snapshot().snapshot_id
    t.append(rows(10), branch=branch)
    tether("commit", "-m", "on the fork", cwd=ds)
    t = catalog.table("ns.t")
    fork_head = t.refs()[branch].snapshot_id
    assert manifest(ds, "t")["state"] == {"snapshot_id": fork_head}
    assert ids_at(t, fork_head) == [1, 2, 3, 4, 5, 10]
    assert ids_at(t, t.refs()[tag].snapshot_id) == [1, 2, 3]
    h = tether.json("open", "t", cwd=ds)
    assert h["address"] == f"ns.t#{branch}" and h["read_only"] is False and h["key"] == "ns.t"
    assert "uri" not in h["catalog"] and PASSWORD not in json.dumps(h)
    assert not [k for k in h if k.startswith("secret_")]  # the in-process caller's, never printed

    # promote: main set to the fork's snapshot; pyiceberg reads it.
    out = tether.json("promote", cwd=ds)
    assert out["fast_forwarded"] == {"t": {"snapshot_id": fork_head}}
    t = catalog.table("ns.t")
    assert t.current_snapshot().snapshot_id == fork_head
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5, 10]
    t.append(rows(11))  # pyiceberg keeps writing on main afterwards
    assert catalog.table("ns.t").current_snapshot().parent_snapshot_id == fork_head

    # repair puts a deleted tag back.
    first_ref = tag
    assert pinned["t"] in (tag, tag.removeprefix("tether."))
    catalog.table("ns.t").manage_snapshots().remove_tag(first_ref).commit()
    proc = tether("verify", "--all-history", cwd=ds, check=False)
    assert proc.returncode == 1 and "missing" in proc.stdout
    tether("repair", "--all-history", cwd=ds)
    assert catalog.table("ns.t").refs()[first_ref].snapshot_id == head
    assert tether("verify", "--all-history", cwd=ds).returncode == 0


def test_undo_and_gc_release_the_tag(tmp_path, tether, env, sqlite_catalog):
    cat = sqlite_catalog
    t = make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
    first = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["t"]
    t.append(rows(7))
    second = tether.json("commit", "-m", "second", cwd=ds)["pinned"]["t"]
    assert {first, second} <= set(cat.table("ns.t").refs())
    tether("undo", cwd=ds)  # uncommits: the second pin is a working-tree change
    git("checkout", "HEAD", "--", ".tether/objects", cwd=ds, env=env)
    assert manifest(ds, "t")["pin"]["ref"] == first
    # The undone commit named the second pin: in a repository with no
    # remote, a clone made before the undo may hold it, so gc keeps it
    # until --release-foreign (docs/gc.md).
    tether("gc", "--no-dry-run", cwd=ds)
    assert {first, second} <= set(cat.table("ns.t").refs())
    tether("gc", "--no-dry-run", "--release-foreign", cwd=ds)
    refs = cat.table("ns.t").refs()
    assert first in refs and second not in refs
    # A bookmark dropped from history: gc --prune-bookmarks releases its
    # working branch (the table keeps main and the trunk's pin).
    git("add", "-A", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "settle", cwd=ds, env=env)
    tether("new", "-b", "exp", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.exp"
    assert branch in cat.table("ns.t").refs()
    git("checkout", "-q", "main", cwd=ds, env=env)
    tether("new", "main", cwd=ds)
    git("branch", "-q", "-D", "exp", cwd=ds, env=env)
    git("reflog", "expire", "--expire=now", "--all", cwd=ds, env=env)
    git("gc", "-q", "--prune=now", cwd=ds, env=env)
    tether("gc", "--prune-bookmarks", "--force-prune", "--no-dry-run", cwd=ds)
    refs = cat.table("ns.t").refs()
    assert branch not in refs and first in refs and "main" in refs


def test_at_pick_and_pin_record(tmp_path, tether, env, sqlite_catalog):
    cat = sqlite_catalog
    t = make_table(cat)
    tag_id = ancestry(t)[-1]
    t.manage_snapshots().create_tag(tag_id, "v1").commit()
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "by-tag", "--kind", "iceberg", "--set", "identifier=ns.t", "--at", "v1", cwd=ds)
    tether("add", "by-id", "--kind", "iceberg", "--set", "identifier=ns.t", "--at", str(tag_id),
           cwd=ds)
    tether("add", "picked", "--kind", "iceberg", "--set", "identifier=ns.t", "--pick", cwd=ds,
           input="2\n")
    tether("add", "rec", "--kind", "iceberg", "--set", "identifier=ns.t", "--pin", "record", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    for key in ("by-tag", "by-id", "picked"):
        assert manifest(ds, key)["state"] == {"snapshot_id": tag_id}, key
    rec = manifest(ds, "rec")
    assert rec["state"] == {"snapshot_id": ancestry(t)[0]} and "pin" not in rec
    tags = [r for r in cat.table("ns.t").refs() if r.startswith("tether.")]
    assert len(tags) == 1  # the three at v1 share one pin; the record object has none
    assert tether.json("verify", cwd=ds)["rec"]["status"] == "ok"
    h = tether.json("open", "rec", "-r", "HEAD", cwd=ds)
    assert h["address"] == f"ns.t#{ancestry(t)[0]}"
    tether("add", "nope", "--kind", "iceberg", "--set", "identifier=ns.t", "--at", "zz", cwd=ds)
    proc = tether("commit", "-m", "bad at", cwd=ds, check=False)
    assert proc.returncode == 1 and "no snapshot for ref 'zz'" in proc.stderr


def test_the_empty_table_cannot_be_forked(tmp_path, tether, env, sqlite_catalog):
    cat = sqlite_catalog
    make_table(cat, "ns.t")
    cat.load().create_table("ns.empty", schema=SCHEMA)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "e", "--kind", "iceberg", "--set", "identifier=ns.empty", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    proc = tether("new", "-b", "feat", "--eager", cwd=ds, check=False)
    assert proc.returncode != 0 and "had no snapshot yet" in proc.stderr + proc.stdout
    assert list(cat.table("ns.empty").refs()) == []


def test_same_manifests_and_pin_ids_as_tether_vcs(tmp_path, tether, ref, env, catalog):
    cat = catalog
    make_table(cat)
    cat.load().create_table("ns.empty", schema=SCHEMA)
    mine = new_dataset(tmp_path / "mine", tether, env, cat)
    theirs = new_dataset(tmp_path / "theirs", ref, env, cat)
    for ds, runner in ((mine, tether), (theirs, ref)):
        runner("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
        runner("add", "e", "--kind", "iceberg", "--set", "identifier=ns.empty", cwd=ds)
        runner("commit", "-m", "first", cwd=ds)
    for key in ("t", "e"):
        a, b = manifest(mine, key), manifest(theirs, key)
        a.pop("captured_at"), b.pop("captured_at")
        assert a == b, key
    # Each reads the other's dataset.
    assert ref.json("verify", cwd=mine)["t"]["status"] == "ok"
    assert tether.json("verify", cwd=theirs)["t"]["status"] == "ok"
    assert tether.json("log", "t", cwd=mine) == ref.json("log", "t", cwd=mine)
    assert tether.json("open", "t", "-r", "HEAD", cwd=theirs)["address"] == \
        ref.json("open", "t", "-r", "HEAD", cwd=theirs)["address"]
    # A fork tether-vcs made, promoted by us (without the empty table:
    # it cannot be forked).
    ref("remove", "e", cwd=theirs)
    ref("commit", "-m", "without e", cwd=theirs)
    ref("new", "-b", "feat", "--eager", cwd=theirs)
    branch = f"tether.ws.{DS}.feat"
    cat.table("ns.t").append(rows(9), branch=branch)
    tether("commit", "-m", "fork work", cwd=theirs)
    tether("promote", cwd=theirs)
    t = cat.table("ns.t")
    assert t.current_snapshot().snapshot_id == t.refs()[branch].snapshot_id


def test_a_promote_whose_base_moved_meanwhile_is_refused(tmp_path, tether, env, sqlite_catalog):
    cat = sqlite_catalog
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.feat"
    cat.table("ns.t").append(rows(9), branch=branch)
    tether("commit", "-m", "fork work", cwd=ds)
    plan = tmp_path / "plan.json"
    tether("promote", "--plan", str(plan), cwd=ds)
    # Someone moves main between the plan and its apply.
    cat.table("ns.t").append(rows(99))
    before = cat.table("ns.t")
    files = sorted((tmp_path / "warehouse" / "ns" / "t" / "metadata").glob("*.metadata.json"))
    proc = tether("promote", "--from-plan", str(plan), cwd=ds, check=False)
    assert proc.returncode == 1
    assert "moved since the plan" in proc.stdout + proc.stderr
    after = cat.table("ns.t")
    assert after.metadata_location == before.metadata_location
    assert sorted((tmp_path / "warehouse" / "ns" / "t" / "metadata").glob("*.metadata.json")) == files


def test_racing_promotes_exactly_one_wins(tmp_path, tether, env, sqlite_catalog):
    """Eight datasets fork one table and promote at once: the compare-and-set
    on metadata_location lets exactly one move main."""
    cat = sqlite_catalog
    make_table(cat)
    dss = []
    for i in range(8):
        ds_id = f"{i:08x}"
        ds = new_dataset(tmp_path / f"ds{i}", tether, env, cat, ds_id)
        tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
        tether("commit", "-m", "first", cwd=ds)
        tether("new", "-b", "feat", "--eager", cwd=ds)
        cat.table("ns.t").append(rows(100 + i), branch=f"tether.ws.{ds_id}.feat")
        tether("commit", "-m", "fork work", cwd=ds)
        dss.append(ds)
    base = cat.table("ns.t").current_snapshot().snapshot_id
    with ThreadPoolExecutor(8) as pool:
        procs = list(pool.map(lambda d: tether("promote", cwd=d, check=False), dss))
    won = [p for p in procs if p.returncode == 0]
    assert len(won) == 1, [(p.returncode, p.stdout, p.stderr) for p in procs]
    t = cat.table("ns.t")
    assert t.current_snapshot().parent_snapshot_id == base
    for p in procs:
        if p.returncode:
            assert "moved" in p.stdout + p.stderr


def test_committed_catalog_secrets_are_refused(tmp_path, tether, ref, env, sqlite_catalog):
    """A clone's committed manifest naming catalog.uri/token/credential is
    refused by name (as tether-vcs refuses it), nothing contacted."""
    cat = sqlite_catalog
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
    path = ds / ".tether" / "objects" / "t.toml"
    clean = path.read_text()
    for key in ("uri", "token", "credential"):
        path.write_text(clean.replace('identifier = "ns.t"\n',
                                      f'identifier = "ns.t"\ncatalog = {{ {key} = "x" }}\n'))
        for runner in (tether, ref):
            proc = runner("commit", "-m", "hostile", cwd=ds, check=False)
            assert proc.returncode == 1, proc.stderr
            assert f"catalog.{key}" in proc.stderr and ".tether/secrets.toml" in proc.stderr
    path.write_text(clean)
    assert list(cat.table("ns.t").refs()) == ["main"]


def test_broken_metadata_and_a_location_outside_the_warehouse(tmp_path, tether, env,
                                                             sqlite_catalog):
    cat = sqlite_catalog
    t = make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
    head = git("rev-parse", "HEAD", cwd=ds, env=env)
    meta = Path(t.metadata_location.removeprefix("file://"))
    good = meta.read_bytes()
    meta.write_text('{"format-version": 2, "snapshots": [')
    proc = tether("commit", "-m", "broken", cwd=ds, check=False)
    assert proc.returncode == 1 and "ns.t" in proc.stderr and meta.name in proc.stderr
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head
    meta.write_bytes(good)
    # The catalog points outside the warehouse: refused, nothing read there.
    outside = tmp_path / "elsewhere" / meta.name
    outside.parent.mkdir()
    outside.write_bytes(good)
    import sqlite3
    db = sqlite3.connect(cat.uri.removeprefix("sqlite:///"))
    db.execute("UPDATE iceberg_tables SET metadata_location = ?", (f"file://{outside}",))
    db.commit()
    db.close()
    proc = tether("commit", "-m", "outside", cwd=ds, check=False)
    assert proc.returncode == 1
    assert "ns.t" in proc.stderr and "outside the catalog's warehouse" in proc.stderr
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head


def test_backends_lists_iceberg_as_installed(tmp_path, tether):
    rows_ = {r["kind"]: r for r in tether.json("backends", cwd=tmp_path)}
    assert rows_["iceberg"]["installed"] is True


def test_a_commit_killed_between_the_metadata_file_and_the_swap(tmp_path, tether, env,
                                                                sqlite_catalog):
    """Killed after the next metadata file is written and before the catalog
    points at it: the table is as it was (pyiceberg reads it, no tag), and
    the rerun pins it."""
    cat = sqlite_catalog
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
    before = cat.table("ns.t").metadata_location
    proc = tether("commit", "-m", "first", cwd=ds, check=False,
                  env={"TETHER_FAULT": "iceberg:after-metadata-write"})
    assert proc.returncode != 0
    t = cat.table("ns.t")
    assert t.metadata_location == before and list(t.refs()) == ["main"]
    tether("commit", "-m", "first", cwd=ds)
    t = cat.table("ns.t")
    assert manifest(ds, "t")["pin"]["ref"] in t.refs()
    assert tether.json("verify", cwd=ds)["t"]["status"] == "ok"
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]


def test_refused_promote_plan_is_tether_vcs_s(tmp_path, tether, ref, env, sqlite_catalog):
    """main moved since the fork (not an ancestor any more) and Iceberg has
    no branch merge: both CLIs plan the same refusal on one dataset, and
    nothing moves."""
    cat = sqlite_catalog
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--set", "identifier=ns.t", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    cat.table("ns.t").append(rows(9), branch=f"tether.ws.{DS}.feat")
    cat.table("ns.t").append(rows(99))
    tether("commit", "-m", "fork work", cwd=ds)
    before = cat.table("ns.t").metadata_location
    plans = [json.loads(r("promote", "--dry-run", "--json", cwd=ds).stdout) for r in (tether, ref)]
    details = [[(a["op"], a["key"], a["detail"]) for a in p["actions"]] for p in plans]
    assert details[0] == details[1]
    assert details[0][0][0] == "refuse" and "moved since the fork" in details[0][0][2]
    proc = tether("promote", cwd=ds, check=False)
    assert proc.returncode == 1
    assert cat.table("ns.t").metadata_location == before
