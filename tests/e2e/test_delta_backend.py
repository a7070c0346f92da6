"""The `delta` backend end to end, against deltalake and tether-vcs.

A table written by deltalake (append, overwrite, delete, optimize,
checkpoint, vacuum) goes through add, commit, status, pull, log,
diff --content, verify --deep and open; every expected version, id and
history comes from deltalake.  The same tables (and the delta-rs fixture
tables) added and committed by tether-vcs give the same manifests.  Broken
logs fail with the table and file named, exit 1, and nothing written."""
from __future__ import annotations

import re
import subprocess
import tomllib
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

from conftest import FIXTURES, git

warnings.simplefilter("ignore")
from deltalake import DeltaTable, write_deltalake  # noqa: E402

DS = "de17a0b5"
DELTA_FIXTURES = FIXTURES / "delta"


def rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "v": [f"r{i}" for i in range(start, start + n)]})


def manifest(ds: Path, key: str) -> dict:
    return tomllib.loads((ds / ".tether" / "objects" / f"{key}.toml").read_text())


def new_dataset(root: Path, runner, env) -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", DS, cwd=root)
    return root


def deltalake_state(uri: Path, version: int | None = None) -> dict:
    dt = DeltaTable(str(uri), version=version)
    return {"version": dt.version(), "table_id": str(dt.metadata().id)}


def test_lifecycle_against_deltalake(tmp_path, tether, ref, env):
    table = tmp_path / "stores" / "sales.delta"
    ds = new_dataset(tmp_path / "ds", tether, env)
    write_deltalake(str(table), rows(0, 4))
    tether("add", str(table), "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    assert manifest(ds, "sales")["state"] == deltalake_state(table)

    # Append, overwrite, delete, optimize: the trunk falls behind the table.
    write_deltalake(str(table), rows(10, 3), mode="append")
    write_deltalake(str(table), rows(20, 5), mode="overwrite")
    DeltaTable(str(table)).delete("id < 22")
    write_deltalake(str(table), rows(30, 2), mode="append")
    DeltaTable(str(table)).optimize.compact()
    DeltaTable(str(table)).create_checkpoint()
    status = tether("status", "--snapshot", cwd=ds).stdout
    assert re.search(r"behind\s+sales", status), status
    tether("pull", cwd=ds)
    assert manifest(ds, "sales")["state"] == deltalake_state(table)

    # log: one entry per commit, newest first, as deltalake's history.
    log = tether.json("log", "sales", "-n", "100", cwd=ds)
    history = DeltaTable(str(table)).history()
    assert [e["id"] for e in log] == [str(c["version"]) for c in history]
    assert [e["message"].split(":")[0] for e in log] == [c["operation"] for c in history]
    # tether-vcs lists the same log from our dataset.
    assert log == ref.json("log", "sales", "-n", "100", cwd=ds)
    # Every id is usable as `add --at`.
    tether("add", "old", str(table), "--kind", "delta", "--at", log[-2]["id"], cwd=ds)
    tether("commit", "-m", "old", cwd=ds)
    assert manifest(ds, "old")["state"] == deltalake_state(table, int(log[-2]["id"]))

    # HEAD~2 is the first commit (v0), HEAD~1 the pull, HEAD the `old` add.
    # diff --content: one entry per commit in (first, pulled].
    text = tether("diff", "--content", "HEAD~2", "HEAD~1", cwd=ds).stdout
    head = DeltaTable(str(table)).version()
    for v in range(1, head + 1):
        assert re.search(rf"modified\s+v{v}\s", text), text
    assert "WRITE: +3 rows, +1 files" in text, text
    assert "DELETE" in text and "OPTIMIZE" in text

    # open: read-only, at the recorded version.
    h = tether.json("open", "sales", cwd=ds)
    assert h["read_only"] is True and h["version"] == head and h["uri"] == str(table.resolve())
    assert h["address"] == f"{table.resolve()}@v{head}"
    h0 = tether.json("open", "sales", "-r", "HEAD~2", cwd=ds)
    assert h0["version"] == 0

    # verify --deep: ok now; vacuum v0's files away and v0 is missing.
    out = tether("verify", "--deep", "-r", "HEAD~2", cwd=ds).stdout
    assert re.search(r"ok\s+sales", out), out
    DeltaTable(str(table)).vacuum(retention_hours=0, enforce_retention_duration=False,
                                  dry_run=False)
    with pytest.raises(Exception):
        DeltaTable(str(table), version=0).to_pyarrow_table()
    proc = tether("verify", "--deep", "-r", "HEAD~2", cwd=ds, check=False)
    assert re.search(r"missing\s+sales", proc.stdout), proc.stdout + proc.stderr
    out = tether("verify", "--deep", cwd=ds, check=False).stdout
    assert re.search(r"ok\s+sales", out), out

    # Not forkable: a new bookmark skips it (no working ref, nothing pending).
    out = tether.json("new", "-b", "feature", cwd=ds)
    assert out["bookmark"] == "feature"
    assert out["working_refs"] == {} and out["pending_forks"] == {}


def test_manifests_equal_tether_vcs(tmp_path, tether, ref, env):
    """The same tables added and committed by both CLIs: equal manifests
    (up to the capture time), no pins, for deltalake-written tables and
    every fixture table."""
    table = tmp_path / "stores" / "t.delta"
    write_deltalake(str(table), rows(0, 3))
    write_deltalake(str(table), rows(5, 2), mode="append")
    DeltaTable(str(table)).create_checkpoint()
    write_deltalake(str(table), rows(9, 1), mode="append")
    sources = [table] + sorted(p for p in DELTA_FIXTURES.iterdir() if (p / "_delta_log").is_dir())
    texts = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        ds = new_dataset(tmp_path / name, runner, env)
        for src in sources:
            runner("add", str(src), "--kind", "delta", cwd=ds)
        out = runner("commit", "-m", "first", cwd=ds).stdout
        assert "tether." + DS not in out
        texts[name] = {p.name: re.sub(r'captured_at = "[^"]*"\n', "", p.read_text())
                       for p in (ds / ".tether" / "objects").glob("*.toml")}
    assert len(texts["ours"]) == len(sources)
    assert texts["ours"] == texts["theirs"]


def break_commit(table: Path) -> Path:
    f = sorted((table / "_delta_log").glob("*.json"))[-1]
    f.write_text('{"commitInfo":{"operation":"WRITE"}}\n{"add":{"path":')
    return f


def break_checkpoint(table: Path) -> Path:
    f = sorted((table / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    # The id must come from the checkpoint: drop the commits that repeat it.
    for j in (table / "_delta_log").glob("*.json"):
        if int(j.name[:20]) <= int(f.name[:20]):
            j.unlink()
    return f


def drop_log(table: Path) -> Path:
    log = table / "_delta_log"
    for p in log.iterdir():
        p.unlink()
    log.rmdir()
    return log


@pytest.mark.parametrize("breaker", [break_commit, break_checkpoint, drop_log])
def test_bad_input_names_table_and_file(tmp_path, tether, env, breaker):
    table = tmp_path / "stores" / "bad.delta"
    write_deltalake(str(table), rows(0, 2))
    write_deltalake(str(table), rows(2, 2), mode="append")
    DeltaTable(str(table)).create_checkpoint()
    write_deltalake(str(table), rows(4, 2), mode="append")
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", str(table), "--kind", "delta", cwd=ds)
    before = subprocess.run(["git", "status", "--porcelain"], cwd=ds, capture_output=True,
                            text=True, env=env).stdout
    head_before = git("rev-parse", "HEAD", cwd=ds, env=env)
    broken = breaker(table)
    proc = tether("commit", "-m", "x", cwd=ds, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert str(table.resolve()) in proc.stderr and broken.name in proc.stderr, proc.stderr
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head_before
    after = subprocess.run(["git", "status", "--porcelain"], cwd=ds, capture_output=True,
                           text=True, env=env).stdout
    assert after == before
    assert "state" not in manifest(ds, "bad")


@pytest.mark.parametrize("statistics", [True, False])
def test_checkpoint_footer_statistics_or_unknown(tmp_path, tether, env, statistics):
    """When the id is only in a Parquet checkpoint, it comes from the
    footer's column statistics; without them the state says "unknown"
    instead of guessing."""
    import pyarrow.parquet as pq

    table = tmp_path / "stores" / "t.delta"
    write_deltalake(str(table), rows(0, 2))
    write_deltalake(str(table), rows(2, 2), mode="append")
    want = deltalake_state(table)
    log = table / "_delta_log"
    # A checkpoint at v1 holding just the metaData row, written by pyarrow
    # with or without statistics; the commits it stands for are gone.
    meta = pa.table({"metaData": pa.array([{"id": want["table_id"]}],
                                          pa.struct([("id", pa.string())]))})
    pq.write_table(meta, log / f"{1:020d}.checkpoint.parquet", write_statistics=statistics)
    for v in (0, 1):
        (log / f"{v:020d}.json").unlink()
    commit_info_only(log, 2)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", str(table), "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    state = manifest(ds, "t")["state"]
    assert state["version"] == 2
    assert state["table_id"] == (want["table_id"] if statistics else "unknown")


def test_deep_verify_after_log_cleanup_reads_the_checkpoint(tmp_path, tether, env):
    """deltalake's own log cleanup (a zero retention) removes the commits
    before a checkpoint; verify --deep then learns the files the version has
    from the checkpoint's add.path column, and agrees with deltalake reading
    the version: a file only the checkpoint lists is missed when it is gone."""
    table = tmp_path / "stores" / "kept.delta"
    write_deltalake(str(table), rows(0, 3),
                    configuration={"delta.logRetentionDuration": "interval 0 seconds"})
    write_deltalake(str(table), rows(10, 3), mode="append")
    DeltaTable(str(table)).delete("id = 1")
    DeltaTable(str(table)).create_checkpoint()
    DeltaTable(str(table)).cleanup_metadata()
    write_deltalake(str(table), rows(20, 3), mode="append")
    log = table / "_delta_log"
    assert not (log / f"{0:020d}.json").exists(), "deltalake did not clean the log up"
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", str(table), "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    assert manifest(ds, "kept")["state"] == deltalake_state(table)

    proc = tether("verify", "--deep", cwd=ds, check=False)
    assert proc.returncode == 0 and re.search(r"ok\s+kept", proc.stdout), proc.stdout + proc.stderr
    assert "not checked" not in proc.stdout + proc.stderr
    v3 = DeltaTable(str(table), version=3)
    v3.to_pyarrow_table()  # deltalake reads it too

    # A file live at v3 that no remaining commit names: only the checkpoint
    # lists it.  Gone, both deltalake and tether fail the version.
    commits = "".join(p.read_text() for p in log.glob("*.json"))
    only_ckpt = [Path(u).name for u in v3.file_uris() if Path(u).name not in commits]
    assert only_ckpt, "every live file is named by a remaining commit"
    (table / only_ckpt[0]).rename(tmp_path / "moved.parquet")
    with pytest.raises(Exception):
        DeltaTable(str(table), version=3).to_pyarrow_table()
    proc = tether("verify", "--deep", cwd=ds, check=False)
    assert re.search(r"missing\s+kept", proc.stdout), proc.stdout + proc.stderr
    assert only_ckpt[0] in proc.stdout + proc.stderr
    (tmp_path / "moved.parquet").rename(table / only_ckpt[0])
    out = tether("verify", "--deep", cwd=ds).stdout
    assert re.search(r"ok\s+kept", out), out

    # Overwrite and vacuum: v3's files are deleted; v3 is missing, head ok.
    write_deltalake(str(table), rows(30, 2), mode="overwrite")
    DeltaTable(str(table)).vacuum(retention_hours=0, enforce_retention_duration=False,
                                  dry_run=False)
    with pytest.raises(Exception):
        DeltaTable(str(table), version=3).to_pyarrow_table()
    proc = tether("verify", "--deep", cwd=ds, check=False)
    assert re.search(r"missing\s+kept", proc.stdout), proc.stdout + proc.stderr


def test_deep_verify_reads_deletion_vectors_from_a_checkpoint(tmp_path, tether, env):
    """After log cleanup the deletion vectors come from the checkpoint's
    add.deletionVector columns, matched to their add by row: a gone vector
    file makes the version missing, an inline vector needs no file."""
    import json
    import shutil

    import pyarrow.parquet as pq

    table = tmp_path / "stores" / "dv.delta"
    shutil.copytree(DELTA_FIXTURES / "table-with-dv-small", table)
    for p in [table, *table.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    log = table / "_delta_log"
    lines = [json.loads(x) for v in (0, 1) for x in (log / f"{v:020d}.json").read_text().splitlines()]
    table_id = next(a["metaData"]["id"] for a in lines if "metaData" in a)
    with_dv = [a["add"] for a in lines if "add" in a and a["add"].get("deletionVector")][-1]
    (table / "plain.parquet").write_bytes(b"x")
    (table / "inline.parquet").write_bytes(b"x")
    dv_t = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()),
                      ("offset", pa.int32()), ("sizeInBytes", pa.int32()),
                      ("cardinality", pa.int64())])
    add_t = pa.struct([("path", pa.string()), ("size", pa.int64()), ("deletionVector", dv_t)])
    adds = [{"path": with_dv["path"], "size": 1, "deletionVector": with_dv["deletionVector"]},
            None,
            {"path": "plain.parquet", "size": 1, "deletionVector": None},
            {"path": "inline.parquet", "size": 1,
             "deletionVector": {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
                                "offset": None, "sizeInBytes": 40, "cardinality": 1}}]
    meta = [None, {"id": table_id}, None, None]
    pq.write_table(pa.table({"add": pa.array(adds, add_t),
                             "metaData": pa.array(meta, pa.struct([("id", pa.string())]))}),
                   log / f"{1:020d}.checkpoint.parquet", compression="SNAPPY")
    for v in (0, 1):
        (log / f"{v:020d}.json").unlink()

    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", str(table), "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    assert manifest(ds, "dv")["state"] == {"version": 1, "table_id": table_id}
    out = tether("verify", "--deep", cwd=ds).stdout
    assert re.search(r"ok\s+dv", out), out
    dv_file = next(table.glob("deletion_vector_*.bin"))
    dv_file.rename(tmp_path / "dv.moved")
    proc = tether("verify", "--deep", cwd=ds, check=False)
    assert re.search(r"missing\s+dv", proc.stdout), proc.stdout + proc.stderr
    assert dv_file.name in proc.stdout
    (tmp_path / "dv.moved").rename(dv_file)
    (table / "plain.parquet").unlink()
    proc = tether("verify", "--deep", cwd=ds, check=False)
    assert re.search(r"missing\s+dv", proc.stdout) and "plain.parquet" in proc.stdout, proc.stdout


def commit_info_only(log: Path, version: int) -> None:
    """A commit with only a commitInfo action (no metaData)."""
    (log / f"{version:020d}.json").write_text(
        '{"commitInfo":{"timestamp":1700000000000,"operation":"SET TBLPROPERTIES"}}\n')


def test_multi_part_checkpoint(tmp_path, tether, env):
    """A multi-part checkpoint counts only when every part is there; the id
    is in whichever part holds the metaData row."""
    import pyarrow.parquet as pq

    table = tmp_path / "stores" / "m.delta"
    write_deltalake(str(table), rows(0, 2))
    write_deltalake(str(table), rows(2, 2), mode="append")
    want = deltalake_state(table)
    log = table / "_delta_log"
    kind = pa.struct([("id", pa.string())])
    parts = [pa.array([None], kind), pa.array([{"id": want["table_id"]}], kind)]
    for i, arr in enumerate(parts, 1):
        pq.write_table(pa.table({"metaData": arr}),
                       log / f"{1:020d}.checkpoint.{i:010d}.{len(parts):010d}.parquet")
    for v in (0, 1):
        (log / f"{v:020d}.json").unlink()
    commit_info_only(log, 2)
    ds = new_dataset(tmp_path / "ds", tether, env)
    tether("add", str(table), "--kind", "delta", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    assert manifest(ds, "m")["state"] == {"version": 2, "table_id": want["table_id"]}
    # Without its second part the checkpoint does not count: v2 cannot be read.
    (log / f"{1:020d}.checkpoint.{2:010d}.{2:010d}.parquet").unlink()
    proc = tether("status", "--snapshot", cwd=ds, check=False)
    assert "no longer in the log" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
