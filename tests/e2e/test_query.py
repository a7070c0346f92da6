"""`tether query`: SQL over every object of a dataset at a revision.

Each kind's store is written by its own library (deltalake, pylance,
pyiceberg, DuckDB with the ducklake extension, pyarrow files), committed
twice, changed in between; `tether query -r HEAD~1` and at HEAD must
return exactly the rows each library reads at the version that commit
recorded (the row count, and a digest over the sorted rows).  A file
object whose bytes changed since the revision is refused; git and
icechunk objects are not relations; a missing extension is named with
how to install it.  The DuckDB and Polars snippets of `open --for` are run
by those libraries.  DuckDB's extensions come from the duckdb-extension-*
wheels in the test venv (TETHER_DUCKDB_EXTENSIONS names its
site-packages): nothing is downloaded."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, git
from dolt import dolt  # noqa: F401  (the fixture)
from iceberg_rest import TOKEN, rest_server  # noqa: F401  (the fixture)
from pg import PASSWORD, pg_db, postgres_server  # noqa: F401  (fixtures)
from s3server import MotoS3, make_dataset
from test_neon_backend import neon  # noqa: F401  (the fixture)

sys.path.insert(0, str(ROOT / "tests" / "support"))
import neon_fake  # noqa: E402

warnings.simplefilter("ignore")
import duckdb  # noqa: E402
import lance  # noqa: E402
from deltalake import DeltaTable, write_deltalake  # noqa: E402
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402

DS = "9e4a0001"
SITE = Path(duckdb.__file__).resolve().parents[1]


def digest(rows: list[dict]) -> tuple[int, str]:
    """(count, sha256 over the rows sorted as canonical JSON lines)."""
    lines = sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
    return len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest()


def table(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "v": [f"r{i}" for i in range(start, start + n)]})


@pytest.fixture
def qenv(env):
    e = dict(env)
    e["TETHER_DUCKDB_EXTENSIONS"] = str(SITE)
    e["XDG_CACHE_HOME"] = str(Path(env["HOME"]) / ".cache")  # where Lance version views go
    # under ASan: what DuckDB's extensions leak is theirs (see the file)
    e["LSAN_OPTIONS"] = f"suppressions={Path(__file__).with_name('duckdb-extensions.lsan.supp')}"
    return e


def q(tether, ds, *args, env, check=True):
    return tether("query", *args, cwd=ds, env=env, check=check)


def qrows(tether, ds, sql, *args, env) -> list[dict]:
    return json.loads(q(tether, ds, sql, "--json", *args, env=env).stdout)


def new_dataset(root: Path, tether, env, secrets: str = "") -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    tether("init", "--dataset-id", DS, cwd=root)
    if secrets:
        s = root / ".tether" / "secrets.toml"
        s.write_text(secrets)
        s.chmod(0o600)
    return root


class Stores:
    """One store of each table kind, each written by its own library."""

    def __init__(self, base: Path, home: Path):
        self.base = base
        self.delta = base / "sales.delta"
        self.lance = base / "vecs.lance"
        self.raw = base / "raw"
        self.raw.mkdir(parents=True)
        self.warehouse = base / "warehouse"
        self.warehouse.mkdir()
        self.cat_uri = f"sqlite:///{base / 'catalog.db'}"
        self.lake_meta = base / "lake.sqlite"
        self.lake_data = base / "lake-data"
        self.home = home

    def catalog(self) -> SqlCatalog:
        return SqlCatalog("default", uri=self.cat_uri, warehouse=f"file://{self.warehouse}")

    def secrets(self) -> str:
        return ("[backends.iceberg]\n"
                f'catalog = {{ type = "sql", uri = "{self.cat_uri}", warehouse = "file://{self.warehouse}" }}\n')

    def duck(self):
        con = duckdb.connect()
        con.execute(f"SET extension_directory = '{self.home}/.duckdb-test-ext'")
        for name in ("ducklake", "sqlite_scanner"):
            con.execute(f"LOAD '{SITE}/duckdb_extension_{name}/extensions/v1.5.5/{name}.duckdb_extension'")
        con.execute(f"ATTACH 'ducklake:sqlite:{self.lake_meta}' AS lake (DATA_PATH '{self.lake_data}/')")
        return con

    def first(self):
        write_deltalake(str(self.delta), table(0, 5))
        lance.write_dataset(table(100, 4), str(self.lance))
        c = self.catalog()
        c.create_namespace("ns")
        t = c.create_table("ns.ev", schema=table(0, 1).schema)
        t.append(table(200, 3))
        pq.write_table(table(300, 2), self.raw / "part-0.parquet")
        con = self.duck()
        con.execute("CREATE TABLE lake.t (id BIGINT, v VARCHAR)")
        con.execute("INSERT INTO lake.t SELECT i, 'r' || i FROM range(400, 406) t(i)")
        con.close()

    def second(self):
        write_deltalake(str(self.delta), table(5, 3), mode="append")
        DeltaTable(str(self.delta)).delete("id = 1")
        lance.write_dataset(table(104, 2), str(self.lance), mode="append")
        self.catalog().load_table("ns.ev").append(table(203, 2))
        pq.write_table(table(302, 1), self.raw / "part-1.parquet")
        con = self.duck()
        con.execute("DELETE FROM lake.t WHERE id = 400")
        con.execute("INSERT INTO lake.t VALUES (406, 'r406')")
        con.close()

    # what each library reads at a recorded state
    def delta_rows(self, version: int) -> list[dict]:
        return DeltaTable(str(self.delta), version=version).to_pyarrow_table().to_pylist()

    def lance_rows(self, version: int) -> list[dict]:
        return lance.dataset(str(self.lance), version=version).to_table().to_pylist()

    def iceberg_rows(self, sid: int) -> list[dict]:
        return self.catalog().load_table("ns.ev").scan(snapshot_id=sid).to_arrow().to_pylist()

    def lake_rows(self, snapshot: int) -> list[dict]:
        con = duckdb.connect()
        for name in ("ducklake", "sqlite_scanner"):
            con.execute(f"LOAD '{SITE}/duckdb_extension_{name}/extensions/v1.5.5/{name}.duckdb_extension'")
        con.execute(f"ATTACH 'ducklake:sqlite:{self.lake_meta}' AS lake "
                    f"(DATA_PATH '{self.lake_data}/', SNAPSHOT_VERSION {snapshot}, READ_ONLY)")
        cur = con.execute("SELECT * FROM lake.t")
        cols = [d[0] for d in cur.description]
        out = [dict(zip(cols, r)) for r in cur.fetchall()]
        con.close()
        return out


def manifests(ds: Path) -> dict[str, dict]:
    import tomllib
    return {p.stem: tomllib.loads(p.read_text()) for p in (ds / ".tether" / "objects").glob("*.toml")}


@pytest.fixture
def dataset(tmp_path, tether, env, home):
    """A dataset of delta, lance, iceberg, ducklake, file and git objects,
    committed twice with every store changed in between; yields (ds,
    stores, the manifests of the first commit, those of the second)."""
    st = Stores(tmp_path / "stores", home)
    st.first()
    code = tmp_path / "stores" / "code"
    code.mkdir()
    git("init", "-q", "-b", "main", cwd=code, env=env)
    git("commit", "-q", "--allow-empty", "-m", "c", cwd=code, env=env)
    ds = new_dataset(tmp_path / "ds", tether, env, st.secrets())
    tether("add", "sales", str(st.delta), "--kind", "delta", cwd=ds)
    tether("add", "vecs", str(st.lance), "--kind", "lance", cwd=ds)
    tether("add", "ev", "--kind", "iceberg", "--set", "identifier=ns.ev", cwd=ds)
    tether("add", "lake", f"sqlite:{st.lake_meta}", "--kind", "ducklake", "--set",
           f"data_path={st.lake_data}/", cwd=ds)
    tether("add", "raw/files", str(st.raw), "--kind", "file", "--file", "versioned", cwd=ds)
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    one = manifests(ds)
    st.second()
    # objects read at their upstream head move with `pull`, the rest with `commit`
    tether("pull", cwd=ds)
    tether("commit", "-m", "second", cwd=ds)
    two = manifests(ds)
    return ds, st, one, two


def expected(st: Stores, m: dict[str, dict], key: str) -> list[dict]:
    s = m[key]["state"]
    if key == "sales":
        return st.delta_rows(int(s["version"]))
    if key == "vecs":
        return st.lance_rows(int(s["version"]))
    if key == "ev":
        return st.iceberg_rows(int(s["snapshot_id"]))
    if key == "lake":
        return st.lake_rows(int(s["snapshot_id"]))
    raise KeyError(key)


RELATIONS = {"sales": "sales", "vecs": "vecs", "ev": "ev", "lake": "lake.t"}


def test_each_kind_reads_its_exact_rows_at_both_revisions(dataset, tether, qenv):
    ds, st, one, two = dataset
    for rev, m in (("HEAD~1", one), ("HEAD", two)):
        for key, rel in RELATIONS.items():
            want = expected(st, m, key)
            got = qrows(tether, ds, f"SELECT * FROM {rel}", "-r", rev, env=qenv)
            assert digest(got) == digest(want), (rev, key)
            count = qrows(tether, ds, f"SELECT count(*) AS n FROM {rel}", "-r", rev, env=qenv)
            assert count == [{"n": len(want)}], (rev, key)
    # the two revisions differ for every kind (the test can fail)
    for key, rel in RELATIONS.items():
        assert digest(expected(st, one, key)) != digest(expected(st, two, key)), key
    # without -r: what the working copy records (the second commit)
    got = qrows(tether, ds, "SELECT * FROM sales", env=qenv)
    assert digest(got) == digest(expected(st, two, "sales"))
    # one statement over several kinds at once
    joined = qrows(tether, ds, "SELECT (SELECT count(*) FROM sales) + (SELECT count(*) FROM ev) AS n",
                   "-r", "HEAD~1", env=qenv)
    assert joined == [{"n": len(expected(st, one, "sales")) + len(expected(st, one, "ev"))}]


def test_file_objects_only_while_their_bytes_are_the_recorded_state(dataset, tether, qenv):
    ds, st, one, two = dataset
    want = pq.read_table(st.raw).to_pylist()
    got = qrows(tether, ds, 'SELECT * FROM "raw/files"', env=qenv)
    assert digest(got) == digest(want)
    # at HEAD~1 the directory held one file less: its bytes are not that state
    proc = q(tether, ds, 'SELECT * FROM "raw/files"', "-r", "HEAD~1", env=qenv, check=False)
    assert proc.returncode == 1
    assert "'raw/files' (file) has changed since HEAD~1" in proc.stderr
    assert "cannot be read in the past" in proc.stderr
    # and after a change, neither at HEAD
    pq.write_table(table(900, 1), st.raw / "part-9.parquet")
    proc = q(tether, ds, 'SELECT count(*) FROM "raw/files"', "-r", "HEAD", env=qenv, check=False)
    assert proc.returncode == 1 and "has changed since HEAD" in proc.stderr
    # an object the SQL does not name is not read at all
    assert qrows(tether, ds, "SELECT count(*) AS n FROM sales", "-r", "HEAD~1", env=qenv)[0]["n"] > 0


def test_git_and_icechunk_are_refused_by_name(dataset, tether, qenv):
    ds, st, one, two = dataset
    proc = q(tether, ds, "SELECT * FROM code", env=qenv, check=False)
    assert proc.returncode == 1
    assert "'code' (git) is not a relation" in proc.stderr and "files and commits" in proc.stderr
    proc = q(tether, ds, "SELECT 1", "--key", "code", env=qenv, check=False)
    assert proc.returncode == 1 and "'code' (git) is not a relation" in proc.stderr
    schema = tether.json("query", "--schema", cwd=ds, env=qenv)
    assert "files and commits" in schema["not_relations"]["code"]


def test_schema_explain_formats(dataset, tether, qenv):
    ds, st, one, two = dataset
    schema = tether.json("query", "--schema", "-r", "HEAD~1", cwd=ds, env=qenv)
    rel = {r["key"]: r for r in schema["relations"]}
    assert set(rel) == {"sales", "vecs", "ev", "lake"}
    assert "has changed since HEAD~1" in schema["not_relations"]["raw/files"]
    assert set(schema["not_relations"]) == {"raw/files", "code"}
    now = {r["key"]: r for r in tether.json("query", "--schema", cwd=ds, env=qenv)["relations"]}
    assert set(now) == {"sales", "vecs", "ev", "lake", "raw/files"}
    rel["raw/files"] = now["raw/files"]
    assert rel["raw/files"]["name"] == '"raw/files"'
    assert [c["name"] for c in rel["sales"]["columns"]] == ["id", "v"]
    assert rel["sales"]["at"] == f"version {one['sales']['state']['version']}"
    assert [c["name"] for c in rel["lake"]["tables"]["main.t"]] == ["id", "v"]
    assert "secret_setup" not in schema
    text = q(tether, ds, "--schema", env=qenv).stdout
    assert "sales  (delta at version" in text and "    id" in text
    explain = q(tether, ds, "--explain", "-r", "HEAD~1", env=qenv).stdout
    v1 = one["sales"]["state"]["version"]
    assert f"delta_scan('{st.delta}', version => {v1})" in explain
    assert f"snapshot_from_id => {one['ev']['state']['snapshot_id']}" in explain
    assert f"SNAPSHOT_VERSION {one['lake']['state']['snapshot_id']}" in explain
    # with SQL: the statements of what the SQL reads
    explain = q(tether, ds, "--explain", "-r", "HEAD~1", "SELECT * FROM sales", env=qenv).stdout
    assert "delta_scan(" in explain and "iceberg_scan(" not in explain and "ATTACH" not in explain
    # csv and the table
    out = q(tether, ds, "SELECT id, v FROM sales ORDER BY id LIMIT 3", "--csv", env=qenv).stdout
    assert list(csv.reader(io.StringIO(out)))[0] == ["id", "v"]
    assert len(out.splitlines()) == 4
    tab = q(tether, ds, "SELECT * FROM range(100) t(i)", "--limit", "5", env=qenv).stdout
    assert "(100 rows, first 5 shown" in tab and len(tab.splitlines()) == 2 + 5 + 1
    # JSON values as DuckDB's to_json maps them
    got = qrows(tether, ds, "SELECT 1::HUGEINT AS h, [1,2] AS l, {'a': NULL} AS s, DATE '2024-01-02' AS d, "
                "NULL AS n", env=qenv)
    assert got == [{"h": 1, "l": [1, 2], "s": {"a": None}, "d": "2024-01-02", "n": None}]
    # several statements: the last one's rows
    assert qrows(tether, ds, "CREATE TEMP TABLE x AS SELECT 7 AS a; SELECT a FROM x", env=qenv) == [{"a": 7}]
    # an engine --for does not know is a usage error
    for args in (["open", "sales", "--for", "excel"], ["query", "--for", "excel"]):
        proc = tether(*args, cwd=ds, env=qenv, check=False)
        assert proc.returncode == 2 and "duckdb, spark, trino or polars, not 'excel'" in proc.stderr
    # a SQL error names DuckDB's reason, exit 1
    proc = q(tether, ds, "SELECT nope FROM sales", env=qenv, check=False)
    assert proc.returncode == 1 and "nope" in proc.stderr


def test_missing_extension_is_named_with_how_to_install(dataset, tether, qenv):
    ds, st, one, two = dataset
    e = dict(qenv)
    e["TETHER_DUCKDB_EXTENSIONS"] = str(ds)  # holds no extension
    proc = q(tether, ds, "SELECT * FROM sales", env=e, check=False)
    assert proc.returncode == 1
    assert "the DuckDB extension 'delta'" in proc.stderr
    assert "INSTALL delta" in proc.stderr and "pip install duckdb-extension-delta==1.5.5" in proc.stderr
    # found through secrets.toml [duckdb] extensions too
    s = ds / ".tether" / "secrets.toml"
    s.write_text(s.read_text() + f'\n[duckdb]\nextensions = "{SITE}"\n')
    assert qrows(tether, ds, "SELECT count(*) AS n FROM sales", env=e)[0]["n"] == len(st.delta_rows(
        int(manifests(ds)["sales"]["state"]["version"])))


def test_duckdb_and_polars_snippets_run(dataset, tether, qenv):
    import polars as pl
    ds, st, one, two = dataset
    for key in ("sales", "vecs", "ev"):
        want = digest(expected(st, one, key))
        snip = tether.json("open", key, "-r", "HEAD~1", "--for", "polars", cwd=ds, env=qenv)
        ns: dict = {"pl": pl}
        exec(snip["snippet"], ns)
        assert digest(ns["df"].collect().to_dicts()) == want, key
        duck = q(tether, ds, "-r", "HEAD~1", "--for", "duckdb", "--key", key, env=qenv).stdout
        con = duckdb.connect()
        con.execute(f"SET extension_directory = '{st.home}/.duckdb-test-ext'")
        code = "\n".join(ln for ln in duck.splitlines() if not ln.startswith("--"))
        for stmt in [s.strip() for s in code.split(";\n") if s.strip()]:
            if stmt.startswith("LOAD "):
                name = stmt.split()[1]
                stmt = f"LOAD '{SITE}/duckdb_extension_{name}/extensions/v1.5.5/{name}.duckdb_extension'"
            cur = con.execute(stmt)
        cols = [d[0] for d in cur.description]
        assert digest([dict(zip(cols, r)) for r in cur.fetchall()]) == want, key
    # a kind the engine cannot address at a state: refused by name
    proc = tether("open", "lake", "--for", "polars", cwd=ds, env=qenv, check=False)
    assert proc.returncode == 1 and "Polars has no reader that addresses a ducklake state" in proc.stderr


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))[1:]


def test_dolt_at_the_pinned_commit_through_the_mysql_scanner(tmp_path, tether, env, qenv, dolt):
    dolt.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))")
    dolt.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    dolt.commit("seed")
    ds = new_dataset(tmp_path / "ds", tether, env, dolt.secrets())
    tether("add", "db", "--kind", "dolt", "--database", dolt.database, "--host", dolt.host, "--port",
           str(dolt.port), cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    one = manifests(ds)["db"]["state"]["commit"]
    dolt.sql("DELETE FROM t WHERE id = 1")
    dolt.sql("INSERT INTO t VALUES (3, 'c')")
    dolt.commit("second")
    tether("pull", cwd=ds)
    two = manifests(ds)["db"]["state"]["commit"]
    assert one != two
    # an uncommitted write on the branch is in neither recorded state
    dolt.sql("INSERT INTO t VALUES (9, 'uncommitted')")
    for rev, commit in (("HEAD~1", one), ("HEAD", two)):
        want = [[str(a), str(b)] for a, b in dolt.sql("SELECT id, v FROM t ORDER BY id", database=f"{dolt.database}/{commit}")]
        got = csv_rows(q(tether, ds, "SELECT id, v FROM db.t ORDER BY id", "--csv", "-r", rev, env=qenv).stdout)
        assert got == want, rev
    assert len(want) == 2 and want[-1] == ["3", "c"]
    schema = tether.json("query", "--schema", cwd=ds, env=qenv)
    assert [c["name"] for c in schema["relations"][0]["tables"]["db.t"]] == ["id", "v"]
    # the password never shows
    explain = q(tether, ds, "--explain", env=qenv).stdout
    assert dolt.password not in explain and f"{dolt.database}/{two}" in explain


def test_neon_at_a_read_only_endpoint_of_the_pin_branch(tmp_path, tether, env, qenv, neon):
    fake = neon
    fake.psql("main", "INSERT INTO t VALUES (1, 'one'), (2, 'two')")
    ds = new_dataset(tmp_path / "ds", tether, env, "")
    (ds / ".tether" / "secrets.toml").write_text(f'[backends.neon]\napi_url = "{fake.url}"\n')
    tether("add", "db", "--kind", "neon", "--project-id", neon_fake.PROJECT, "--database", "app",
           "--role", neon_fake.ROLE, cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    pin1 = manifests(ds)["db"]["pin"]["ref"]
    fake.psql("main", "DELETE FROM t WHERE id = 1")
    fake.psql("main", "INSERT INTO t VALUES (3, 'three')")
    tether("pull", cwd=ds)
    pin2 = manifests(ds)["db"]["pin"]["ref"]
    assert pin1 != pin2
    fake.psql("main", "INSERT INTO t VALUES (9, 'after')")
    for rev, pin in (("HEAD~1", pin1), ("HEAD", pin2)):
        want = fake.psql(pin, "SELECT id, v FROM t ORDER BY id")
        got = csv_rows(q(tether, ds, "SELECT id, v FROM db.public.t ORDER BY id", "--csv", "-r", rev, env=qenv).stdout)
        assert got == want, rev
        # through a read-only endpoint of that branch
        ep = [e for e in fake.endpoints.values() if e["branch_id"] == fake.branch(pin).id]
        assert ep and {e["type"] for e in ep} == {"read_only"}
    assert want == [["2", "two"], ["3", "three"]]
    explain = q(tether, ds, "--explain", env=qenv).stdout
    assert neon_fake.PASSWORD not in explain and "READ_ONLY" in explain


# --------------------------------------------------------------------------- #
# Lance: the recorded version on its branch, through a tag, and the version
# view's safety
# --------------------------------------------------------------------------- #
def lance_write(uri: Path, ids: list[int], mode: str = "append", branch: str | None = None):
    t = pa.table({"id": pa.array(ids, pa.int64())})
    if mode == "create":
        return lance.write_dataset(t, str(uri))
    ds = lance.dataset(str(uri))
    if branch:
        ds = ds.checkout_version((branch, None))
    return lance.write_dataset(t, ds, mode="append")


def lance_at_pin(uri: Path, m: dict) -> list[dict]:
    """What pylance reads through the pin's tag (its branch and version)."""
    return lance.dataset(str(uri)).checkout_version(m["pin"]["ref"]).to_table().to_pylist()


def test_lance_reads_the_recorded_version_on_its_branch_through_its_tag(tmp_path, tether, env, qenv):
    side, main = tmp_path / "stores" / "side.lance", tmp_path / "stores" / "main.lance"
    side.parent.mkdir()
    lance_write(side, [1, 2], "create")
    lance_write(side, [3])
    lance.dataset(str(side)).create_branch("busy", 2)
    lance_write(side, [5], branch="busy")            # busy v3: 1 2 3 5
    lance_write(main, [100], "create")
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "side", str(side), "--kind", "lance", "--branch", "busy", cwd=ds)
    tether("add", "main", str(main), "--kind", "lance", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    # both branches move on, main past the version numbers busy used
    lance_write(side, [6], branch="busy")
    for i in range(3):
        lance_write(side, [40 + i])
        lance_write(main, [110 + i])
    tether("pull", cwd=ds)
    tether("commit", "-m", "second", cwd=ds)
    # a fork: main.lance's working branch takes a write, main moves on again
    tether("new", "-b", "exp", "--eager", cwd=ds)
    fork = manifests(ds)["main"]
    lance_write(main, [999], branch=f"tether.ws.{DS}.exp")
    lance_write(main, [120])
    tether("commit", "-m", "third", cwd=ds)
    third = manifests(ds)
    assert third["main"]["state"]["branch"] == f"tether.ws.{DS}.exp" and fork
    seen = {}
    for rev in ("HEAD~2", "HEAD~1", "HEAD"):
        m = {p: tomllib_loads(git("show", f"{rev}:.tether/objects/{p}.toml", cwd=ds, env=env))
             for p in ("side", "main")}
        for key, uri in (("side", side), ("main", main)):
            want = lance_at_pin(uri, m[key])
            got = qrows(tether, ds, f"SELECT * FROM {key}", "-r", rev, env=qenv)
            assert digest(got) == digest(want), (rev, key, m[key]["state"])
            seen.setdefault(key, set()).add(digest(want))
    # the revisions differ, and what a branch held is not main's same-numbered version
    assert len(seen["side"]) == 2 and len(seen["main"]) == 3
    one = tomllib_loads(git("show", "HEAD~2:.tether/objects/side.toml", cwd=ds, env=env))
    v = one["state"]["version"]
    assert digest(lance.dataset(str(side), version=v).to_table().to_pylist()) != \
        digest(lance_at_pin(side, one))
    schema = tether.json("query", "--schema", "-r", "HEAD~2", cwd=ds, env=qenv)
    at = {r["key"]: r["at"] for r in schema["relations"]}
    assert at["side"] == f"version {v} (tag {one['pin']['ref']})", at
    # Polars reads the same through the tag; Spark's reader names no branch
    import polars as pl
    snip = tether.json("open", "side", "-r", "HEAD~2", "--for", "polars", cwd=ds, env=qenv)
    ns: dict = {"pl": pl}
    exec(snip["snippet"], ns)
    assert digest(ns["df"].collect().to_dicts()) == digest(lance_at_pin(side, one))
    proc = tether("open", "side", "-r", "HEAD~2", "--for", "spark", cwd=ds, env=qenv, check=False)
    assert proc.returncode == 1 and "naming a branch" in proc.stderr and "--for polars" in proc.stderr


def tomllib_loads(text: str) -> dict:
    import tomllib
    return tomllib.loads(text)


def view_of(tether, ds, key, *args, env) -> Path:
    """The version view a query of key reads (from --explain)."""
    text = q(tether, ds, "--explain", "--key", key, *args, env=env).stdout
    line = next(ln for ln in text.splitlines() if ln.startswith(f'CREATE VIEW "{key}" '))
    return Path(line.split("SELECT * FROM '", 1)[1].rsplit("'", 1)[0])


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root (links not followed) with its bytes' sha256."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def lance_ds(tmp_path, tether, env, qenv):
    """A dataset of one Lance object committed twice: (ds, uri, manifests of each)."""
    uri = tmp_path / "stores" / "vecs.lance"
    uri.parent.mkdir()
    lance_write(uri, [1, 2, 3], "create")
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "vecs", str(uri), "--kind", "lance", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    one = manifests(ds)
    lance_write(uri, [4])
    tether("pull", cwd=ds)
    tether("commit", "-m", "second", cwd=ds)
    return ds, uri, one["vecs"], manifests(ds)["vecs"]


def test_lance_version_views_live_in_the_cache_and_never_write_the_store(lance_ds, tether, qenv):
    ds, uri, one, two = lance_ds
    before = tree_digest(uri)
    views = Path(qenv["XDG_CACHE_HOME"]) / "tether" / "lance-views"
    old = view_of(tether, ds, "vecs", "-r", "HEAD~1", env=qenv)
    assert old.parent == views and old.is_dir() and (views.stat().st_mode & 0o777) == 0o700
    # that version's manifest alone, a copy; every other directory is the
    # view's own, of links to the store's files
    kept = list((old / "_versions").iterdir())
    store = [p for p in (uri / "_versions").iterdir() if p.name == kept[0].name]
    assert len(kept) == 1 and not kept[0].is_symlink() and kept[0].read_bytes() == store[0].read_bytes()
    assert {d.name for d in old.iterdir()} >= {"_versions", "data"}
    for d in old.iterdir():
        assert d.is_dir() and not d.is_symlink(), d
        if d.name != "_versions":
            assert all(f.is_symlink() and Path(os.readlink(f)).parent == uri / d.name for f in d.iterdir()), d
    assert digest(qrows(tether, ds, "SELECT * FROM vecs", "-r", "HEAD~1", env=qenv)) == \
        digest(lance_at_pin(uri, one))
    # a write pointed at the view (Lance's own append, through DuckDB) lands
    # in the cache, never in the store ...
    q(tether, ds, f"COPY (SELECT 7::BIGINT AS id) TO '{old}' (FORMAT lance, mode 'append')", "--csv",
      "--key", "vecs", env=qenv)
    assert len(list((old / "_versions").glob("*.manifest"))) == 2
    assert tree_digest(uri) == before
    # ... and the next query finds the view written through and reads the
    # recorded version from a fresh one
    for rev, m in (("HEAD~1", one), ("HEAD", two)):
        got = qrows(tether, ds, "SELECT * FROM vecs", "-r", rev, env=qenv)
        assert digest(got) == digest(lance_at_pin(uri, m)), rev
    assert tree_digest(uri) == before
    assert [p.name for p in (old / "_versions").iterdir()] == [kept[0].name]
    assert not [p for p in views.iterdir() if p.name.startswith(".")]  # no staging left


def test_lance_views_under_concurrent_queries(lance_ds, tether, qenv):
    ds, uri, one, two = lance_ds
    want = {"HEAD~1": digest(lance_at_pin(uri, one)), "HEAD": digest(lance_at_pin(uri, two))}
    procs = [(rev, subprocess.Popen([str(tether.exe), "query", "SELECT * FROM vecs", "--json", "-r", rev],
                                    cwd=ds, env={**tether.env, **qenv}, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True))
             for _ in range(4) for rev in want]
    for rev, p in procs:
        out, errs = p.communicate(timeout=300)
        assert p.returncode == 0, errs
        assert digest(json.loads(out)) == want[rev], rev
    views = Path(qenv["XDG_CACHE_HOME"]) / "tether" / "lance-views"
    assert len([p for p in views.iterdir() if p.name.endswith(".lance")]) == 2
    assert not [p for p in views.iterdir() if p.name.startswith(".")]


# --------------------------------------------------------------------------- #
# What is no relation, and what DuckDB cannot read, is refused by name
# --------------------------------------------------------------------------- #
def test_an_icechunk_repository_is_refused_with_what_reads_it(tmp_path, tether, env, qenv):
    import icechunk
    import zarr
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "arrays")))
    session = repo.writable_session("main")
    zarr.group(store=session.store).create_array("temps", shape=(3,), dtype="i4")[:] = [1, 2, 3]
    session.commit("first")
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", "temps", str(tmp_path / "arrays"), "--kind", "icechunk", cwd=ds, env={"ICECHUNK_LOG": "error"})
    tether("commit", "-m", "first", cwd=ds)
    for args in (["SELECT * FROM temps"], ["SELECT 1", "--key", "temps"]):
        proc = q(tether, ds, *args, env=qenv, check=False)
        assert proc.returncode == 1, proc.stderr
        assert "'temps' (icechunk) is not a relation" in proc.stderr
        assert "Zarr arrays" in proc.stderr and "xarray or zarr" in proc.stderr
        assert "tether open temps -r REV" in proc.stderr
    schema = tether.json("query", "--schema", cwd=ds, env=qenv)
    assert schema["relations"] == [] and "Zarr arrays" in schema["not_relations"]["temps"]
    proc = tether("open", "temps", "--for", "duckdb", cwd=ds, env=qenv, check=False)
    assert proc.returncode == 1 and "Zarr arrays" in proc.stderr


def test_without_libduckdb_the_one_loader_says_how_to_install_it(dataset, tether, qenv, tmp_path):
    ds, st, one, two = dataset
    proc = q(tether, ds, "SELECT count(*) FROM sales", env={**qenv, "TETHER_LIBDUCKDB": str(tmp_path / "none.so")},
             check=False)
    assert proc.returncode == 1
    assert "cannot load libduckdb" in proc.stderr and "install libduckdb 1.5.5" in proc.stderr, proc.stderr
    assert "TETHER_LIBDUCKDB" in proc.stderr


def test_an_object_named_only_in_a_comment_or_string_is_not_read(dataset, tether, qenv):
    ds, st, one, two = dataset
    # raw/files cannot be read at HEAD~1 (its bytes changed since): naming it
    # outside the SQL's code does not try to
    got = qrows(tether, ds, "SELECT count(*) AS n, 'raw/files' AS s FROM sales -- not \"raw/files\"\n/* raw/files */",
                "-r", "HEAD~1", env=qenv)
    assert got == [{"n": len(expected(st, one, "sales")), "s": "raw/files"}]
    proc = q(tether, ds, 'SELECT count(*) FROM sales, "raw/files"', "-r", "HEAD~1", env=qenv, check=False)
    assert proc.returncode == 1 and "has changed since HEAD~1" in proc.stderr


def test_awkward_sql_streams_and_quotes_its_cells(dataset, tether, qenv):
    ds, st, one, two = dataset
    sql = ("SELECT 'a;b' AS \"semi;colon\", E'it\\'s' AS e, $q$ x; y $q$ AS d, NULL AS n, '' AS empty, "
           "'line\nbreak, \"quoted\"' AS awkward /* ; */ -- trailing; comment")
    rows = qrows(tether, ds, sql, env=qenv)
    assert rows == [{"semi;colon": "a;b", "e": "it's", "d": " x; y ", "n": None, "empty": "",
                     "awkward": 'line\nbreak, "quoted"'}]
    out = q(tether, ds, sql, "--csv", env=qenv).stdout
    assert list(csv.reader(io.StringIO(out))) == [["semi;colon", "e", "d", "n", "empty", "awkward"],
                                                  ["a;b", "it's", " x; y ", "", "", 'line\nbreak, "quoted"']]
    # NULL and the empty string stay apart in CSV: nothing, and ""
    assert out.splitlines()[1].startswith('a;b,it\'s, x; y ,,"",')


# --------------------------------------------------------------------------- #
# Iceberg on a REST catalog and on a PostgreSQL catalog
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("kind", ["rest", "postgres"])
def test_iceberg_through_its_catalog_at_both_revisions(kind, request, tmp_path, tether, env, qenv):
    if kind == "rest":
        server = request.getfixturevalue("rest_server")
        cat = RestCatalog("default", uri=server.uri, token=TOKEN)
        secret = TOKEN
        secrets = ("[backends.iceberg]\n"
                   f'catalog = {{ type = "rest", uri = "{server.uri}", warehouse = "file://{server.warehouse}", '
                   f'token = "{TOKEN}" }}\n')
    else:
        server, name = request.getfixturevalue("pg_db")
        uri = server.dsn(name).replace("postgresql://", "postgresql+psycopg://")
        (tmp_path / "warehouse").mkdir()
        cat = SqlCatalog("default", uri=uri, warehouse=f"file://{tmp_path / 'warehouse'}")
        secret = PASSWORD
        secrets = ("[backends.iceberg]\n"
                   f'catalog = {{ type = "sql", uri = "{uri}", warehouse = "file://{tmp_path / "warehouse"}" }}\n')
    cat.create_namespace("ns")
    cat.create_table("ns.ev", schema=table(0, 1).schema).append(table(0, 4))
    ds = new_dataset(tmp_path / "ds", tether, env, secrets)
    tether("add", "ev", "--kind", "iceberg", "--set", "identifier=ns.ev", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    one = manifests(ds)["ev"]
    t = cat.load_table("ns.ev")
    t.append(table(4, 3))
    t.delete("id = 1")
    tether("pull", cwd=ds)
    tether("commit", "-m", "second", cwd=ds)
    two = manifests(ds)["ev"]
    assert one["state"]["snapshot_id"] != two["state"]["snapshot_id"]
    shown = []
    for rev, m in (("HEAD~1", one), ("HEAD", two)):
        want = cat.load_table("ns.ev").scan(snapshot_id=int(m["state"]["snapshot_id"])).to_arrow().to_pylist()
        proc = q(tether, ds, "SELECT * FROM ev", "--json", "-r", rev, env=qenv)
        shown.append(proc.stdout + proc.stderr)
        assert digest(json.loads(proc.stdout)) == digest(want), rev
    # the metadata file the catalog gives, at the recorded snapshot
    proc = q(tether, ds, "--explain", "-r", "HEAD~1", env=qenv)
    shown.append(proc.stdout + proc.stderr)
    meta = cat.load_table("ns.ev").metadata_location.removeprefix("file://")
    assert f"iceberg_scan('{Path(meta).parent}/" in proc.stdout
    assert f"snapshot_from_id => {one['state']['snapshot_id']}" in proc.stdout
    proc = q(tether, ds, "SELECT nope FROM ev", env=qenv, check=False)
    assert proc.returncode == 1
    shown.append(proc.stdout + proc.stderr)
    assert not [o for o in shown if secret in o]


# --------------------------------------------------------------------------- #
# Object stores: Delta on s3:// with credentials only in DuckDB's memory;
# Lance there is refused with what reads it
# --------------------------------------------------------------------------- #
S3_KEY_ID = "AKIAQUERYKEYID7F3X"
S3_SECRET = "qUeRy-s3cr3t/Value+9z"


@pytest.fixture
def s3():
    server = MotoS3("tt-query")
    yield server
    server.close()


def s3_dataset(root: Path, tether, s3: MotoS3, kind: str) -> Path:
    ds = make_dataset(root, tether, s3.url, "tt-query", DS, kind)
    # credentials of our own, so that no other text can hold them by chance
    # (moto takes any)
    (ds / ".tether/secrets.toml").write_text(
        f'[uris."s3://tt-query/"]\nendpoint_url = "{s3.url}"\nregion = "us-east-1"\n'
        f'access_key_id = "{S3_KEY_ID}"\nsecret_access_key = "{S3_SECRET}"\n')
    return ds


def files_holding(root: Path, *needles: str) -> list[str]:
    out = []
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            if any(n.encode() in data for n in needles):
                out.append(str(p))
    return out


def test_delta_on_s3_with_credentials_only_in_duckdb_memory(s3, tmp_path, tether, env, qenv, home):
    uri = "s3://tt-query/tables/sales"
    opts = {**s3.storage_options(), "aws_conditional_put": "etag"}
    write_deltalake(uri, table(0, 5), storage_options=opts)
    ds = s3_dataset(tmp_path / "ds", tether, s3, "delta")
    tether("add", "sales", uri, "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    one = manifests(ds)["sales"]
    write_deltalake(uri, table(5, 3), mode="append", storage_options=opts)
    DeltaTable(uri, storage_options=opts).delete("id = 2")
    tether("pull", cwd=ds)
    tether("commit", "-m", "second", cwd=ds)
    two = manifests(ds)["sales"]
    outputs = []
    for rev, m in (("HEAD~1", one), ("HEAD", two)):
        want = DeltaTable(uri, version=int(m["state"]["version"]), storage_options=opts).to_pyarrow_table().to_pylist()
        proc = q(tether, ds, "SELECT * FROM sales", "--json", "-r", rev, env=qenv)
        outputs.append(proc.stdout + proc.stderr)
        assert digest(json.loads(proc.stdout)) == digest(want), rev
        for fmt in (["--csv"], ["--format", "table"]):
            proc = q(tether, ds, "SELECT * FROM sales ORDER BY id", *fmt, "-r", rev, env=qenv)
            outputs.append(proc.stdout + proc.stderr)
    for args in (["--explain"], ["--schema", "--json"], ["--for", "duckdb"], ["--for", "spark"]):
        proc = q(tether, ds, *args, env=qenv)
        outputs.append(proc.stdout + proc.stderr)
    assert "CREATE TEMPORARY SECRET (TYPE s3, SCOPE 's3://tt-query/tables/sales', REGION 'us-east-1', " \
        f"ENDPOINT '127.0.0.1:{s3.port}', URL_STYLE 'path', USE_SSL false, ...credentials" in outputs[-4]
    # the secret is in DuckDB's memory, which shows it redacted: the key id
    # (an identifier, as AWS has it) but never the secret key
    mine = q(tether, ds, "SELECT * FROM duckdb_secrets()", "--json", "--key", "sales", env=qenv).stdout
    assert '"persistent": false' in mine and '"storage": "memory"' in mine and "secret=redacted" in mine
    assert S3_SECRET not in mine
    # an error while the secret is loaded: a data file of the old version gone
    data = [k for k in s3.keys("tt-query", "tables/sales/") if k.endswith(".parquet")]
    for k in data:
        s3.client.delete_object(Bucket="tt-query", Key=k)
    proc = q(tether, ds, "SELECT * FROM sales", "-r", "HEAD~1", env=qenv, check=False)
    assert proc.returncode == 1, proc.stdout
    outputs.append(proc.stdout + proc.stderr)
    proc = q(tether, ds, "SELECT * FROM sales", "--json", "-r", "HEAD~1", env=qenv, check=False)
    outputs.append(proc.stdout + proc.stderr)
    leaked = [o for o in outputs if S3_KEY_ID in o or S3_SECRET in o]
    assert not leaked, leaked[0]
    # nothing the commands leave holds them: only secrets.toml does
    journal = list(ds.rglob("ops.jsonl"))
    assert journal and journal[0].stat().st_size > 0  # (it is looked through below)
    assert files_holding(tmp_path, S3_KEY_ID, S3_SECRET) == [str(ds / ".tether/secrets.toml")]


def test_lance_on_s3_is_refused_with_the_pointer_to_polars(s3, tmp_path, tether, env, qenv):
    uri = "s3://tt-query/vecs.lance"
    lance.write_dataset(table(0, 3), uri, storage_options=s3.storage_options())
    ds = s3_dataset(tmp_path / "ds", tether, s3, "lance")
    tether("add", "vecs", uri, "--kind", "lance", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    proc = q(tether, ds, "SELECT * FROM vecs", env=qenv, check=False)
    assert proc.returncode == 1
    assert "'vecs' (lance) is not a relation" in proc.stderr
    assert "DuckDB's lance extension reads only a dataset's latest version" in proc.stderr
    assert "tether open vecs --for polars" in proc.stderr
    assert S3_SECRET not in proc.stderr and S3_KEY_ID not in proc.stderr
    snip = tether.json("open", "vecs", "--for", "polars", cwd=ds, env=qenv)
    assert f'version="{manifests(ds)["vecs"]["pin"]["ref"]}"' in snip["snippet"] and uri in snip["snippet"]
    # and DuckDB is not offered where it cannot read
    proc = tether("open", "vecs", "--for", "trino", cwd=ds, env=qenv, check=False)
    assert proc.returncode == 1 and "--for duckdb" not in proc.stderr


def test_a_lance_tag_naming_a_branch_outside_the_dataset_is_refused(lance_ds, tether, qenv, tmp_path):
    ds, uri, one, two = lance_ds
    # a copy of the dataset's tree where a hostile tag would lead
    outside = tmp_path / "outside"
    (outside / "_versions").mkdir(parents=True)
    for p in (uri / "_versions").iterdir():
        (outside / "_versions" / p.name).write_bytes(p.read_bytes())
    tag = uri / "_refs" / "tags" / f"{two['pin']['ref']}.json"
    t = json.loads(tag.read_text())
    t["branch"] = os.path.relpath(outside, uri / "tree")
    tag.write_text(json.dumps(t))
    proc = q(tether, ds, "SELECT * FROM vecs", env=qenv, check=False)
    assert proc.returncode == 1, proc.stdout
    # the pin is checked against the committed state before anything is read
    # (query's own check - a tag's branch must be a path under tree/ - stands
    # behind it)
    assert "[vecs]" in proc.stderr and "no longer names the committed state" in proc.stderr, proc.stderr
    views = Path(qenv["XDG_CACHE_HOME"]) / "tether" / "lance-views"
    assert not views.exists() or not [p for p in views.iterdir() if p.name.endswith(".lance")]
