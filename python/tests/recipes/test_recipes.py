"""The Python recipes of tether's documentation, written against the public
API only, so the same file runs against tether-vcs and against this
package (each installed in its own environment as `tether`):

- provenance: record TETHER_REV (or the dataset commit) and {key: pin id}
  next to a result, and read exactly those states back later;
- open a fork, write with the kind's own library, commit;
- promote the bookmark onto the trunk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import git
from tether import (
    TETHER_REV_ENV,
    CapabilityError,
    ConfigError,
    Repo,
    TetherError,
    compute_pin_id,
    listing_name,
    manifest_hash,
    ref_for_pin,
    working_ref_name,
)


def _repo(dataset: Path) -> Repo:
    Repo.init(dataset)
    return Repo.find(dataset)


def test_provenance_records_rev_and_pins_and_reads_them_back(dataset, git_store, tmp_path, monkeypatch):
    repo = _repo(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    result = repo.commit("baseline")
    assert result.vcs_commit
    assert set(result.pinned) == {"code"}

    repo = Repo.find(dataset)
    rev = os.environ.get(TETHER_REV_ENV) or repo.vcs.current_rev()
    pins = {key: m.pin.id for key, m in repo.objects.items() if m.pin}
    (tmp_path / "provenance.json").write_text(json.dumps({"tether_rev": rev, "pins": pins}))
    assert rev == result.vcs_commit
    assert pins == {"code": result.pinned["code"].id}
    pinned_sha = repo.objects["code"].state["sha"]

    # The store moves on; the recorded provenance still reads the old state.
    (git_store / "README").write_text("two\n")
    git(git_store, "commit", "-qam", "two")
    record = json.loads((tmp_path / "provenance.json").read_text())
    monkeypatch.setenv(TETHER_REV_ENV, record["tether_rev"])
    handle = Repo.find(dataset).open("code")
    assert handle.read_only
    assert handle.sha == pinned_sha
    assert git(git_store, "rev-parse", ref_for_pin(record["pins"]["code"])) == pinned_sha


def test_pin_ids_and_manifest_hash_are_computable_from_the_manifests(dataset, git_store):
    repo = _repo(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.commit("baseline")
    m = Repo.find(dataset).objects["code"]
    assert m.pin.ref == ref_for_pin(m.pin.id)
    assert m.pin.id.startswith(repo.config.dataset_id + ".")
    # The same inputs give the same id in every implementation.
    assert compute_pin_id("file", {"path": "/x"}, {"type": "file"}, "abcdef12") == "abcdef12.624b2b611287b6c4"
    assert listing_name("file", {"path": "/x"}, {"type": "file"}) == "624b2b611287b6c4bb3b.jsonl"
    assert working_ref_name("abcdef12", "feat/x y") == "tether.ws.abcdef12.feat-x-y-b483c3"
    assert manifest_hash(Repo.find(dataset).objects) == Repo.find(dataset).status(do_snapshot=False).manifest_hash


def test_status_after_commit_is_clean_and_names_tiers(dataset, git_store, tmp_path):
    f = tmp_path / "stores" / "notes.txt"
    f.write_text("hello\n")
    repo = _repo(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.add("notes", "file", {"uri": str(f)})
    before = {o.key: o.state_label for o in repo.status().objects}
    assert before == {"code": "new", "notes": "new"}
    repo.commit("baseline")
    st = Repo.find(dataset).status()
    assert [o.key for o in st.objects] == ["code", "notes"]
    assert {o.key: o.state_label for o in st.objects} == {"code": "clean", "notes": "clean"}
    assert {o.key: o.tier.value for o in st.objects} == {"code": "forkable", "notes": "observed"}
    assert st.bookmark == "main" and st.trunk and not st.stale


def test_open_a_fork_write_with_git_commit_promote(dataset, git_store):
    repo = _repo(dataset)
    repo.add("code", "git", {"uri": str(git_store)})
    repo.commit("baseline")
    repo.new(bookmark="relabel")
    handle = repo.open("code")
    assert not handle.read_only
    branch = git(git_store, "for-each-ref", "--format=%(refname:short)", "refs/heads/tether.ws.*")
    assert branch
    git(git_store, "checkout", "-q", branch)
    (git_store / "labels.csv").write_text("a,1\n")
    git(git_store, "add", "labels.csv")
    git(git_store, "commit", "-qm", "labels")
    git(git_store, "checkout", "-q", "main")
    head = git(git_store, "rev-parse", branch)

    result = repo.commit("relabel")
    assert "code" in result.pinned
    report = repo.promote()
    assert set(report.fast_forwarded) == {"code"}
    assert git(git_store, "rev-parse", "main") == head
    assert report.trunk_moved


def test_open_an_icechunk_fork_write_with_zarr_commit_promote(dataset, icechunk_store):
    zarr = pytest.importorskip("zarr")
    repo = _repo(dataset)
    repo.add("cube", "icechunk", {"uri": str(icechunk_store)})
    repo.commit("baseline")
    repo.new(bookmark="recalibrate")
    handle = repo.open("cube")
    assert not handle.read_only and handle.branch
    arr = zarr.open_group(store=handle.session.store)["temperature"]
    arr[:] = [10, 20, 30, 40]
    snapshot = handle.session.commit("recalibrated")

    repo.commit("recalibrate")
    report = repo.promote()
    assert set(report.fast_forwarded) == {"cube"}
    import icechunk as ic

    upstream = ic.Repository.open(ic.local_filesystem_storage(str(icechunk_store)))
    assert upstream.lookup_branch("main") == snapshot
    main = zarr.open_group(store=upstream.readonly_session(branch="main").store, mode="r")
    assert list(main["temperature"][:]) == [10, 20, 30, 40]


def test_pinned_icechunk_read_is_read_only_at_the_pin(dataset, icechunk_store, monkeypatch):
    zarr = pytest.importorskip("zarr")
    repo = _repo(dataset)
    repo.add("cube", "icechunk", {"uri": str(icechunk_store)})
    rev = repo.commit("baseline").vcs_commit
    repo.new(bookmark="edit")
    h = repo.open("cube")
    zarr.open_group(store=h.session.store)["temperature"][:] = [0, 0, 0, 0]
    h.session.commit("zeroed")
    monkeypatch.setenv(TETHER_REV_ENV, rev)
    old = Repo.find(dataset).open("cube")
    assert old.read_only
    assert list(zarr.open_group(store=old.session.store, mode="r")["temperature"][:]) == [1, 2, 3, 4]


def test_open_a_lance_fork_append_commit_promote(dataset, lance_store):
    lance = pytest.importorskip("lance")
    pa = pytest.importorskip("pyarrow")
    repo = _repo(dataset)
    repo.add("rows", "lance", {"uri": str(lance_store)})
    repo.commit("baseline")
    repo.new(bookmark="more")
    handle = repo.open("rows")
    assert not handle.read_only and handle.branch
    lance.write_dataset(pa.table({"id": [4]}), handle.dataset, mode="append")
    repo.commit("more rows")
    after = Repo.find(dataset).open("rows", read_only=True)
    assert after.dataset.count_rows() == 4


def test_delta_opens_read_only_at_the_committed_version(dataset, delta_store):
    deltalake = pytest.importorskip("deltalake")
    pa = pytest.importorskip("pyarrow")
    repo = _repo(dataset)
    repo.add("events", "delta", {"uri": str(delta_store)})
    rev = repo.commit("baseline").vcs_commit
    deltalake.write_deltalake(str(delta_store), pa.table({"n": [3]}), mode="append")
    handle = Repo.find(dataset).open("events", rev=rev)
    assert handle.read_only and handle.version == 0
    assert handle.table.to_pyarrow_table().num_rows == 2


def test_errors_are_typed(dataset, tmp_path):
    with pytest.raises(ConfigError):
        Repo.find(tmp_path / "nowhere")
    f = tmp_path / "stores" / "notes.txt"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("x\n")
    repo = _repo(dataset)
    repo.add("notes", "file", {"uri": str(f)})
    repo.commit("baseline")
    with pytest.raises(CapabilityError):
        repo.open("notes", read_only=False)
    with pytest.raises(TetherError):
        repo.open("missing")


def _iceberg_catalog(dataset: Path, tmp_path: Path):
    """A pyiceberg SQLite catalog with table ns.t (two appends), and the
    dataset's secrets.toml naming it (a catalog's uri is a secret)."""
    sql = pytest.importorskip("pyiceberg.catalog.sql")
    pa = pytest.importorskip("pyarrow")
    uri, warehouse = f"sqlite:///{tmp_path / 'catalog.db'}", tmp_path / "warehouse"
    warehouse.mkdir()
    catalog = sql.SqlCatalog("default", uri=uri, warehouse=f"file://{warehouse}")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("n", pa.int64())]))
    table.append(pa.table({"n": [1, 2]}))
    table.append(pa.table({"n": [3]}))
    secrets = dataset / ".tether" / "secrets.toml"
    secrets.write_text(f'[backends.iceberg]\ncatalog = {{ type = "sql", uri = "{uri}", warehouse = "file://{warehouse}" }}\n')
    secrets.chmod(0o600)
    return catalog


def test_open_an_iceberg_fork_append_with_pyiceberg_commit_promote(dataset, tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    Repo.init(dataset)
    catalog = _iceberg_catalog(dataset, tmp_path)
    repo = Repo.find(dataset)
    repo.add("t", "iceberg", {"identifier": "ns.t"})
    rev = repo.commit("baseline").vcs_commit
    repo.new(bookmark="more")
    handle = repo.open("t")
    assert not handle.read_only and handle.ref and handle.ref != "main"
    handle.table.append(pa.table({"n": [4]}), branch=handle.ref)
    repo.commit("more rows")
    report = repo.promote()
    assert set(report.fast_forwarded) == {"t"}
    assert sorted(catalog.load_table("ns.t").scan().to_arrow()["n"].to_pylist()) == [1, 2, 3, 4]

    # the baseline, read back through its pin
    monkeypatch.setenv(TETHER_REV_ENV, rev)
    old = Repo.find(dataset).open("t")
    assert old.read_only and old.snapshot_id is not None
    rows = old.table.scan(snapshot_id=old.snapshot_id).to_arrow()["n"].to_pylist()
    assert sorted(rows) == [1, 2, 3]


def _ducklake_connect(duckdb):
    """DuckDB with the DuckLake and SQLite extensions installed from their
    PyPI wheels into $HOME's extension directory (no network here)."""
    import glob

    site = Path(duckdb.__file__).resolve().parents[1]
    con = duckdb.connect()
    for name in ("ducklake", "sqlite_scanner"):
        found = glob.glob(str(site / f"duckdb_extension_{name}" / "extensions" / "*" / f"{name}.duckdb_extension"))
        if not found:
            pytest.skip(f"duckdb-extension-{name} is not installed")
        con.execute(f"INSTALL '{found[0]}'")
        con.execute(f"LOAD {name}")
    return con


def test_open_a_ducklake_state_read_only_and_query_it(dataset, tmp_path, monkeypatch):
    duckdb = pytest.importorskip("duckdb")
    meta, data = tmp_path / "meta.sqlite", tmp_path / "lake-data"
    attach = f"ATTACH 'ducklake:sqlite:{meta}' AS lake (DATA_PATH '{data}/')"
    con = _ducklake_connect(duckdb)
    con.execute(attach)
    con.execute("CREATE TABLE lake.t (a INTEGER)")
    con.execute("INSERT INTO lake.t SELECT i FROM range(5) r(i)")
    con.execute("DETACH lake")

    repo = _repo(dataset)
    repo.add("lake", "ducklake", {"metadata": f"sqlite:{meta}", "data_path": str(data), "table": "main.t"})
    rev = repo.commit("baseline").vcs_commit
    con.execute(attach)
    con.execute("INSERT INTO lake.t VALUES (99)")
    con.execute("DETACH lake")
    con.close()

    monkeypatch.setenv(TETHER_REV_ENV, rev)
    with Repo.find(dataset).open("lake") as handle:
        assert handle.read_only and handle.attach_sql.startswith("ATTACH ")
        assert handle.table_ref() == f"{handle.alias}.main.t"
        count = handle.connection.execute(f"SELECT count(*) FROM {handle.table_ref()}").fetchone()[0]
        assert count == 5
    assert handle.connection is None
