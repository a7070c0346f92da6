"""The dolt backend end to end, over the MySQL protocol.

CI runs these against the test server of tests/servers/dolt (go-mysql-server
with Dolt's versioning SQL); TETHER_TEST_DOLT=host:port[/db] (with
TETHER_TEST_DOLT_USER / TETHER_TEST_DOLT_PASSWORD) runs the same tests
against a real `dolt sql-server` (see tests/e2e/dolt.py, docs/backend-dolt.md).
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import pytest

from conftest import git
from dolt import PASSWORD, dolt, loaded_dolt, old_dolt  # noqa: F401  (the fixtures)

DS = "d0170001"


def new_dataset(root: Path, runner, env, server, ds_id: str = DS) -> Path:
    root.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    runner("init", "--dataset-id", ds_id, cwd=root)
    secrets = root / ".tether" / "secrets.toml"
    secrets.write_text(server.secrets())
    secrets.chmod(0o600)
    return root


def manifest(ds: Path, key: str) -> dict:
    return tomllib.loads((ds / ".tether" / "objects" / f"{key}.toml").read_text())


def seed(server, rows=((1, "a"), (2, "b"))) -> str:
    server.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))")
    for r in rows:
        server.sql("INSERT INTO t VALUES (%s, %s)", r)
    return server.commit("seed t")


def status(tether, ds, key="db") -> str:
    return {o["key"]: o for o in tether.json("status", cwd=ds)["objects"]}[key]["state"]


def add(tether, ds, server, key="db", *extra, input=None):
    return tether("add", key, "--kind", "dolt", "--database", server.database, "--host", server.host,
                  "--port", str(server.port), *extra, cwd=ds, input=input)


def test_lifecycle_add_commit_fork_write_promote(tmp_path, tether, env, dolt):
    first = seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    proc = add(tether, ds, dolt)
    assert "test server" in proc.stderr  # the experimental note says what CI tests against
    assert status(tether, ds) == "new"
    pinned = tether.json("commit", "-m", "first", cwd=ds)["pinned"]
    m = manifest(ds, "db")
    assert m["locator"] == {"database": dolt.database, "host": dolt.host, "port": dolt.port}
    assert m["state"] == {"commit": first}
    tag = m["pin"]["ref"]
    assert tag.startswith(f"tether.{DS}.") and pinned["db"] in (tag, tag.removeprefix("tether."))
    assert dolt.tags()[tag] == first
    assert tether.json("verify", cwd=ds)["db"]["status"] == "ok"
    assert status(tether, ds) == "clean"

    # log: DOLT_LOG of main, the pin and the branch on its head.
    log = tether.json("log", "db", cwd=ds)
    assert log[0]["id"] == first and log[0]["message"] == "seed t"
    assert "main" in log[0]["refs"] and tag in log[0]["refs"]

    # new: a branch at the tag; open gives its revision database.
    tether("new", "-b", "feat", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.feat"
    assert dolt.branches()[branch] == first
    h = tether.json("open", "db", cwd=ds)
    assert h["type"] == "DoltHandle" and h["read_only"] is False and h["key"] == dolt.database
    assert h["address"] == f"mysql://{dolt.user}@{dolt.host}:{dolt.port}/{dolt.database}/{branch}"
    assert h["database_ref"] == f"{dolt.database}/{branch}"
    assert PASSWORD not in json.dumps(h)
    plain = tether("open", "db", cwd=ds).stdout.strip()
    assert plain == h["address"]
    full = tether("open", "db", "--with-password", cwd=ds).stdout.strip()
    assert full.startswith(f"mysql://{dolt.user}:") and full.endswith(f"/{dolt.database}/{branch}")

    # write through the revision database, then commit and promote.
    rev = h["database_ref"]
    for r in ((3, "c"), (4, "d"), (5, "e"), (6, "f"), (7, "g"), (8, "h")):
        dolt.sql("INSERT INTO t VALUES (%s, %s)", r, database=rev)
    assert status(tether, ds) == "modified"  # the state gains dirty = true
    proc = tether("commit", "-m", "dirty", cwd=ds, check=False)
    assert proc.returncode == 1 and "uncommitted changes" in proc.stderr
    fork_head = dolt.commit("six rows", database=rev)
    assert status(tether, ds) == "modified"
    tether("commit", "-m", "on the fork", cwd=ds)
    assert manifest(ds, "db")["state"] == {"commit": fork_head}
    diff = tether.json("diff", "HEAD~1", "HEAD", "--content", cwd=ds)
    entries = [o for o in diff if o["key"] == "db"][0]["detail"]["entries"]
    assert entries == [{"path": "t", "change": "modified", "detail": "+6 rows"}]

    # the tag's revision database is read-only (Dolt's rule for tags).
    with pytest.raises(Exception, match="read-only"):
        dolt.sql("INSERT INTO t VALUES (99, 'x')", database=f"{dolt.database}/{tag}")

    out = tether.json("promote", cwd=ds)
    assert out["fast_forwarded"] == {"db": {"commit": fork_head}}
    assert dolt.head("main") == fork_head
    assert len(dolt.sql("SELECT * FROM t")) == 8


def test_at_commit_tag_branch_and_pick(tmp_path, tether, env, dolt):
    first = seed(dolt)
    dolt.sql("CALL DOLT_TAG('v1', %s)", (first,))
    dolt.sql("INSERT INTO t VALUES (3, 'c')")
    second = dolt.commit("third row")
    dolt.sql("CALL DOLT_BRANCH('side', %s)", (first,))
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt, "by-hash", "--at", first)
    add(tether, ds, dolt, "by-tag", "--at", "v1")
    add(tether, ds, dolt, "by-branch", "--at", "side")
    add(tether, ds, dolt, "picked", "--pick", input="2\n")  # DOLT_LOG(main): second, first, init
    tether("commit", "-m", "at", cwd=ds)
    for key in ("by-hash", "by-tag", "by-branch", "picked"):
        assert manifest(ds, key)["state"] == {"commit": first}, key
    add(tether, ds, dolt, "head")
    tether("commit", "-m", "head", cwd=ds)
    assert manifest(ds, "head")["state"] == {"commit": second}
    h = tether.json("open", "by-tag", "-r", "HEAD", cwd=ds)
    assert h["read_only"] is True and h["commit"] == first

    tether("add", "nope", "--kind", "dolt", "--database", dolt.database, "--port", str(dolt.port),
           "--at", "no-such-ref", cwd=ds)
    proc = tether("commit", "-m", "bad at", cwd=ds, check=False)
    assert proc.returncode == 1 and "no-such-ref" in proc.stderr


def test_merge_clean_and_conflicting_rolled_back(tmp_path, tether, env, dolt):
    seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    rev = f"{dolt.database}/tether.ws.{DS}.feat"
    dolt.sql("INSERT INTO t VALUES (10, 'fork')", database=rev)
    dolt.commit("fork row", database=rev)
    tether("commit", "-m", "fork", cwd=ds)
    # main moves on meanwhile (another row): promote merges.
    dolt.sql("INSERT INTO t VALUES (20, 'main')")
    main_head = dolt.commit("main row")
    out = tether.json("promote", "-m", "land feat", cwd=ds)
    assert "db" in json.dumps(out)
    new_main = dolt.head("main")
    assert new_main != main_head
    assert sorted(r[0] for r in dolt.sql("SELECT id FROM t")) == [1, 2, 10, 20]
    parents = dolt.sql("SELECT commit_hash, message FROM DOLT_LOG('main') LIMIT 1")
    assert parents[0][0] == new_main

    # a conflicting merge: the same row changed on both sides.
    tether("commit", "-m", "after merge", cwd=ds, check=False)
    tether("new", "-b", "clash", "--eager", cwd=ds)
    rev2 = f"{dolt.database}/tether.ws.{DS}.clash"
    dolt.sql("UPDATE t SET v = 'fork side' WHERE id = 1", database=rev2)
    dolt.commit("fork edit", database=rev2)
    tether("commit", "-m", "clash", cwd=ds)
    dolt.sql("UPDATE t SET v = 'main side' WHERE id = 1")
    before = dolt.commit("main edit")
    proc = tether("promote", "-m", "land clash", cwd=ds, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "conflict" in (proc.stdout + proc.stderr) and "t" in (proc.stdout + proc.stderr)
    assert dolt.head("main") == before
    assert dolt.sql("SELECT v FROM t WHERE id = 1") == [("main side",)]
    assert dolt.sql("SELECT * FROM dolt_conflicts") == []


def test_gc_undo_and_repair_of_a_deleted_tag(tmp_path, tether, env, dolt):
    first_commit = seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    first = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["db"]
    first = first if first.startswith("tether.") else f"tether.{first}"
    dolt.sql("INSERT INTO t VALUES (7, 'x')")
    dolt.commit("more")
    second = tether.json("commit", "-m", "second", cwd=ds)["pinned"]["db"]
    second = second if second.startswith("tether.") else f"tether.{second}"
    assert {first, second} <= set(dolt.tags())
    tether("undo", cwd=ds)
    git("checkout", "HEAD", "--", ".tether/objects", cwd=ds, env=env)
    assert manifest(ds, "db")["pin"]["ref"] == first
    tether("gc", "--no-dry-run", "--release-foreign", cwd=ds)
    tags = dolt.tags()
    assert first in tags and second not in tags

    # repair: a deleted tag is recreated at the recorded commit.
    dolt.sql("CALL DOLT_TAG('-d', %s)", (first,))
    proc = tether("verify", cwd=ds, check=False)
    assert proc.returncode == 1 and "missing" in proc.stdout
    tether("repair", cwd=ds)
    assert dolt.tags()[first] == first_commit
    assert tether("verify", cwd=ds).returncode == 0


def test_wrong_password_and_unreachable_server_name_the_database(tmp_path, tether, env, dolt):
    seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    secrets = ds / ".tether" / "secrets.toml"
    secrets.write_text(secrets.read_text().replace(PASSWORD, "wrong-password") if not dolt.real else
                       f'[uris."mysql://{dolt.host}:{dolt.port}"]\nuser = "{dolt.user}"\npassword = "wrong-password"\n')
    proc = tether("commit", "-m", "x", cwd=ds, check=False)
    assert proc.returncode == 1
    assert f"{dolt.host}:{dolt.port}/{dolt.database}" in proc.stderr and "wrong-password" not in proc.stderr
    secrets.write_text(dolt.secrets())
    # nothing listens on this port
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    tether("add", "gone", "--kind", "dolt", "--database", "nowhere", "--port", str(dead), cwd=ds)
    proc = tether("commit", "-m", "x", cwd=ds, check=False)
    assert proc.returncode == 1 and f"127.0.0.1:{dead}/nowhere" in proc.stderr


def test_authentication_failures_say_so_and_name_the_secrets_entry(tmp_path, tether, env, dolt):
    """A wrong password (on `new`, whose plan lists the branches first) and a
    password_env naming an unset variable are reported as what they are:
    the server refused the login, at host:port/database, with the
    secrets.toml entry to fix -- never as unpinned writes."""
    seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    tether("commit", "-m", "first", cwd=ds)
    secrets = ds / ".tether" / "secrets.toml"
    entry = f'[uris."mysql://{dolt.host}:{dolt.port}"]'
    secrets.write_text(f'{entry}\nuser = "{dolt.user}"\npassword = "wrong-password"\n')
    proc = tether("new", "-b", "feat", "--eager", cwd=ds, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "unpinned writes" not in proc.stderr and "wrong-password" not in proc.stderr + proc.stdout
    assert f"dolt server {dolt.where}: authentication failed for user '{dolt.user}'" in proc.stderr
    assert f"check the user and password of the {entry} entry in .tether/secrets.toml" in proc.stderr
    assert f"tether.ws.{DS}.feat" not in dolt.branches()
    if not dolt.password:
        return  # a server without a password takes the login whatever the variable says
    secrets.write_text(f'{entry}\nuser = "{dolt.user}"\npassword_env = "DOLT_TEST_PASSWORD_UNSET"\n')
    proc = tether("new", "-b", "feat", "--eager", cwd=ds, check=False)
    assert proc.returncode == 1 and "authentication failed" in proc.stderr, proc.stderr
    assert (f"the {entry} entry in .tether/secrets.toml takes its password from $DOLT_TEST_PASSWORD_UNSET, "
            "which is not set") in proc.stderr
    tether("new", "-b", "feat", "--eager", cwd=ds, env={"DOLT_TEST_PASSWORD_UNSET": dolt.password})
    assert f"tether.ws.{DS}.feat" in dolt.branches()


def test_add_takes_a_mysql_url_as_the_positional_locator(tmp_path, tether, ref, env, dolt):
    """`tether add db mysql://user@host:port/db --kind dolt`: the positional
    LOCATOR is the locator's url (tether-vcs refuses this spelling; the
    manifest it writes, a url, is one tether-vcs reads)."""
    first = seed(dolt)
    url = f"mysql://{dolt.user}@{dolt.host}:{dolt.port}/{dolt.database}"
    ds = new_dataset(tmp_path / "ours", tether, env, dolt)
    tether("add", "db", url, "--kind", "dolt", cwd=ds)
    assert manifest(ds, "db")["locator"] == {"url": url}
    tether("commit", "-m", "by url", cwd=ds)
    assert manifest(ds, "db")["state"] == {"commit": first}
    assert ref("verify", cwd=ds).returncode == 0
    proc = tether("add", "pw", url.replace("@", ":Pw-x7Q@"), "--kind", "dolt", cwd=ds, check=False)
    assert proc.returncode == 1 and "holds a password" in proc.stderr and "Pw-x7Q" not in proc.stderr
    # tether-vcs: stores it as `uri`, then refuses it (docs/compatibility.md)
    theirs = new_dataset(tmp_path / "theirs", ref, env, dolt)
    ref("add", "db", url, "--kind", "dolt", cwd=theirs)
    assert manifest(theirs, "db")["locator"] == {"uri": url}
    proc = ref("commit", "-m", "by url", cwd=theirs, check=False)
    assert proc.returncode != 0 and "needs 'database' (or a url)" in proc.stdout + proc.stderr


@pytest.mark.parametrize("field,value", [
    ("branch", "main' OR '1'='1"),
    ("branch", "x'); CALL DOLT_BRANCH('-D', 'main'); --"),
    ("at", "v1'); DROP TABLE t; --"),
    ("database", "tetherdb`; DROP TABLE t; --"),
])
def test_sql_injection_through_manifest_fields_is_refused(tmp_path, tether, env, dolt, field, value):
    seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    path = ds / ".tether" / "objects" / "db.toml"
    text = path.read_text()
    if field == "database":
        text = text.replace(f'database = "{dolt.database}"', f'database = "{value}"')
    else:
        text = text.replace("[locator]\n", f"[locator]\n{field} = {json.dumps(value)}\n")
    path.write_text(text)
    proc = tether("commit", "-m", "hostile", cwd=ds, check=False)
    assert proc.returncode == 1, proc.stdout
    assert dolt.sql("SELECT COUNT(*) FROM t") == [(2,)]
    assert "main" in dolt.branches()
    assert not any(t.startswith("tether.") for t in dolt.tags())


def test_same_manifests_and_pin_ids_as_tether_vcs(tmp_path, tether, ref, env, dolt):
    first = seed(dolt)
    dolt.sql("CALL DOLT_TAG('v1', %s)", (first,))
    dolt.sql("INSERT INTO t VALUES (3, 'c')")
    dolt.commit("third row")
    results = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        ds = new_dataset(tmp_path / name, runner, env, dolt)
        runner("add", "db", "--kind", "dolt", "--database", dolt.database, "--host", dolt.host,
               "--port", str(dolt.port), cwd=ds)
        runner("add", "old", "--kind", "dolt", "--database", dolt.database, "--host", dolt.host,
               "--port", str(dolt.port), "--at", "v1", cwd=ds)
        runner("commit", "-m", "first", cwd=ds)
        results[name] = {k: manifest(ds, k) for k in ("db", "old")}
    for key in ("db", "old"):
        ours, theirs = results["ours"][key], results["theirs"][key]
        ours.pop("captured_at", None)
        theirs.pop("captured_at", None)
        assert ours == theirs, key
    # our fork of a dataset tether-vcs committed reads the same tags
    ds = tmp_path / "theirs"
    tether("verify", cwd=ds)
    tether("remove", "old", cwd=ds)  # one database is one branch scope: fork the head object alone
    tether("commit", "-m", "head only", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    assert f"tether.ws.{DS}.feat" in dolt.branches()


def test_lockstep_lifecycle_with_tether_vcs(tmp_path, tether, ref, env, dolt):
    """tether and tether-vcs drive one server step by step (one dataset id,
    so one set of tags and branches): every step leaves the same manifests,
    pin ids included."""
    seed(dolt)
    pair = {"ours": tether, "theirs": ref}
    dss = {name: new_dataset(tmp_path / name, runner, env, dolt) for name, runner in pair.items()}

    def step(*args):
        for name, runner in pair.items():
            runner(*args, cwd=dss[name])

    def same(key="db"):
        a, b = manifest(dss["ours"], key), manifest(dss["theirs"], key)
        for m in (a, b):
            m.pop("captured_at", None)
        assert a == b
        return a

    step("add", "db", "--kind", "dolt", "--database", dolt.database, "--host", dolt.host,
         "--port", str(dolt.port))
    step("commit", "-m", "first")
    first = same()
    step("new", "-b", "feat", "--eager")
    branch = f"tether.ws.{DS}.feat"
    dolt.sql("INSERT INTO t VALUES (3, 'c')", database=f"{dolt.database}/{branch}")
    fork_head = dolt.commit("on the fork", database=f"{dolt.database}/{branch}")
    step("commit", "-m", "fork")
    m = same()
    shown = ("key", "read_only", "address", "type")
    opened = {name: runner.json("open", "db", cwd=dss[name]) for name, runner in pair.items()}
    assert {k: opened["ours"][k] for k in shown} == {k: opened["theirs"][k] for k in shown}
    assert m["state"] == {"commit": fork_head} and m["pin"] != first["pin"]
    assert dolt.tags()[m["pin"]["ref"]] == fork_head
    tether("promote", cwd=dss["ours"])
    assert dolt.head("main") == fork_head
    ref("promote", cwd=dss["theirs"])  # already there: nothing moves
    assert dolt.head("main") == fork_head
    for name, runner in pair.items():
        assert runner("verify", cwd=dss[name]).returncode == 0
    # each reads the other's dataset the same way
    assert ref("verify", cwd=dss["ours"]).returncode == 0
    assert tether("verify", cwd=dss["theirs"]).returncode == 0


def test_an_older_dolt_without_dirty_column_or_ff_only(tmp_path, tether, env, old_dolt):
    """dirty from the branch's dolt_status when dolt_branches has no dirty
    column; promote's ancestry by DOLT_MERGE_BASE when DOLT_MERGE has no
    --ff-only."""
    dolt = old_dolt
    with pytest.raises(Exception, match="dirty"):
        dolt.sql("SELECT dirty FROM dolt_branches")
    seed(dolt)
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    rev = f"{dolt.database}/tether.ws.{DS}.feat"
    dolt.sql("INSERT INTO t VALUES (3, 'c')", database=rev)
    assert status(tether, ds) == "modified"
    proc = tether("commit", "-m", "dirty", cwd=ds, check=False)
    assert proc.returncode == 1 and "uncommitted changes" in proc.stderr
    fork_head = dolt.commit("fork row", database=rev)
    tether("commit", "-m", "fork", cwd=ds)
    assert manifest(ds, "db")["state"] == {"commit": fork_head}
    tether("promote", cwd=ds)
    assert dolt.head("main") == fork_head


def test_backends_lists_dolt_as_installed(tmp_path, tether):
    rows = {r["kind"]: r for r in tether.json("backends", cwd=tmp_path)}
    assert rows["dolt"]["installed"] is True and rows["dolt"]["maturity"] == "experimental"
    page = tether("backends", "--help", cwd=tmp_path).stdout
    assert "dolt: CI tests it against a test server" in " ".join(page.split())


def test_a_hostile_pin_ref_in_a_manifest_is_data(tmp_path, tether, env, dolt):
    seed(dolt)
    dolt.sql("CALL DOLT_TAG('v1', 'main')")
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    tether("commit", "-m", "first", cwd=ds)
    path = ds / ".tether" / "objects" / "db.toml"
    m = manifest(ds, "db")
    hostile = "tether.x' OR '1'='1"
    path.write_text(path.read_text().replace(f'ref = "{m["pin"]["ref"]}"', f'ref = "{hostile}"'))
    proc = tether("verify", cwd=ds, check=False)
    assert proc.returncode == 1 and "missing" in proc.stdout, proc.stdout + proc.stderr
    assert set(dolt.tags()) == {"v1", m["pin"]["ref"]}


# --- racing promotes ---------------------------------------------------------

CLONES = 8
WRONG_ADVICE = ("DOLT_COMMIT", "DOLT_RESET", "stomped", "dirty=True", "uncommitted", "Not possible to fast-forward")


def clones_with_forks(tmp_path, tether, env, server, n=CLONES) -> dict[int, Path]:
    """n clones of one dataset, each on its own bookmark c<i> whose fork
    holds one row of its own, committed."""
    origin = new_dataset(tmp_path / "origin", tether, env, server)
    add(tether, origin, server)
    tether("commit", "-m", "first", cwd=origin)
    git("add", "-A", cwd=origin, env=env)
    bare = tmp_path / "bare.git"
    git("clone", "-q", "--bare", str(origin), str(bare), cwd=tmp_path, env=env)
    out = {}
    for i in range(n):
        c = tmp_path / f"clone{i}"
        git("clone", "-q", str(bare), str(c), cwd=tmp_path, env=env)
        (c / ".tether" / "secrets.toml").write_text(server.secrets())
        (c / ".tether" / "secrets.toml").chmod(0o600)
        tether("new", "-b", f"c{i}", "--eager", cwd=c)
        rev = f"{server.database}/tether.ws.{DS}.c{i}"
        server.sql("INSERT INTO t VALUES (%s, %s)", (100 + i, f"c{i}"), database=rev)
        server.commit(f"fork c{i}", database=rev)
        tether("commit", "-m", f"c{i} writes", cwd=c)
        out[i] = c
    return out


def promote_at_once(tether, clones: dict[int, Path]) -> dict[int, subprocess.CompletedProcess]:
    """`tether promote -m 'land c<i>' --json` in every clone, started together."""
    procs = {i: subprocess.Popen([str(tether.exe), "promote", "-m", f"land c{i}", "--json"], cwd=c,
                                 env=tether.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, c in clones.items()}
    done = {}
    for i, p in procs.items():
        out, err = p.communicate(timeout=300)
        done[i] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    return done


def workspace(ds: Path) -> dict:
    return tomllib.loads((ds / ".tether" / "workspace.toml").read_text())


def check_race(server, clones: dict[int, Path], results: dict[int, subprocess.CompletedProcess],
               diverged: bool) -> list[int]:
    """Every winner reports and records exactly what its own promote made;
    every loser is told it lost a race.  Returns the losers."""
    messages = dict(server.sql("SELECT commit_hash, message FROM DOLT_LOG('main')"))
    forks = server.branches()
    losers = []
    for i, c in clones.items():
        proc = results[i]
        said = proc.stdout + proc.stderr
        assert not any(w in said for w in WRONG_ADVICE), (i, said)
        out = json.loads(proc.stdout)
        landed = {**out.get("fast_forwarded", {}), **out.get("merged", {})}
        if proc.returncode != 0:
            assert proc.returncode == 1 and "db" not in landed, (i, said)
            text = out.get("refused", {}).get("db", "")
            assert "main moved while promoting; rerun `tether promote`" in text, (i, said)
            losers.append(i)
            continue
        state = landed["db"]
        assert set(state) == {"commit"}, (i, state)  # never dirty: this promote's own commit
        made = state["commit"]
        if "db" in out.get("merged", {}):
            assert messages.get(made) == f"land c{i}", (i, made, messages.get(made))
        else:
            assert not diverged and messages.get(made) == f"fork c{i}", (i, made, messages.get(made))
        ws = workspace(c)
        assert ws["fork_points"]["db"] == {"commit": made}, (i, ws)
        assert forks[f"tether.ws.{DS}.c{i}"] == made, (i, proc.stdout)  # the fork follows its own result
    return losers


@pytest.mark.parametrize("shape", ["diverged", "fast-forward"])
def test_racing_promotes_report_their_own_commit(tmp_path, tether, env, loaded_dolt, shape):
    """8 clones promote at the same moment onto one trunk: diverged forks
    (main moved, so each merges) or fast-forward forks (main did not; one
    fast-forwards).  Whoever lands reports, records and resets its fork onto
    the commit its own promote made -- not the head another clone moved main
    to -- and whoever loses is told main moved while promoting, never to
    commit or reset changes main does not have; rerunning lands it."""
    server = loaded_dolt
    seed(server)
    clones = clones_with_forks(tmp_path, tether, env, server)
    if shape == "diverged":
        server.sql("INSERT INTO t VALUES (50, 'main')")
        server.commit("main moves")
    results = promote_at_once(tether, clones)
    losers = check_race(server, clones, results, shape == "diverged")
    fast_forwarded = [i for i, p in results.items() if "db" in json.loads(p.stdout).get("fast_forwarded", {})]
    assert len(fast_forwarded) <= 1  # sibling forks: once one landed, the others merge or lose
    if not server.real:
        assert losers  # the test server's slow COMMIT makes the clients interleave: someone loses
    while losers:
        again = {i: clones[i] for i in losers}
        results = promote_at_once(tether, again)
        still = check_race(server, again, results, True)
        assert len(still) < len(losers)  # each round lands one at least
        losers = still
    assert not losers
    rows = sorted(r[0] for r in server.sql("SELECT id FROM t"))
    assert rows == sorted([1, 2, *range(100, 100 + CLONES), *([50] if shape == "diverged" else [])])
    assert server.sql("SELECT dirty FROM dolt_branches WHERE name = 'main'") in ([(0,)], [(False,)])


@pytest.mark.parametrize("shape", ["merge", "fast-forward"])
def test_promote_reports_its_own_commit_when_main_moves_on_at_once(tmp_path, tether, env, loaded_dolt, shape):
    """Another writer commits on main the moment this promote's move is
    published, before the promote has finished: the promote reports and
    records the commit it made (DOLT_MERGE's), not main's head read after."""
    server = loaded_dolt
    seed(server)
    ds = new_dataset(tmp_path / "ds", tether, env, server)
    add(tether, ds, server)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    rev = f"{server.database}/tether.ws.{DS}.feat"
    server.sql("INSERT INTO t VALUES (10, 'fork')", database=rev)
    fork_head = server.commit("fork row", database=rev)
    tether("commit", "-m", "fork", cwd=ds)
    if shape == "merge":
        server.sql("INSERT INTO t VALUES (20, 'main')")
        server.commit("main row")
    start = server.head("main")
    chased, stop = [], threading.Event()

    def chase():
        con = server.connect()
        try:
            with con.cursor() as cur:
                while not stop.is_set():
                    cur.execute("SELECT hash, dirty FROM dolt_branches WHERE name = 'main'")
                    head, dirty = cur.fetchone()
                    if head != start and not dirty:
                        cur.execute("INSERT INTO t VALUES (30, 'right after')")
                        cur.execute("CALL DOLT_COMMIT('-A', '-m', 'right after')")
                        chased.append((head, cur.fetchone()[0]))
                        return
                    time.sleep(0.002)
        finally:
            con.close()

    chaser = threading.Thread(target=chase)
    chaser.start()
    try:
        proc = tether("promote", "-m", "land feat", "--json", cwd=ds)
    finally:
        stop.set()
        chaser.join()
    out = json.loads(proc.stdout)
    landed = out["merged" if shape == "merge" else "fast_forwarded"]["db"]
    made = landed["commit"]
    assert landed == {"commit": made}
    if shape == "merge":
        assert dict(server.sql("SELECT commit_hash, message FROM DOLT_LOG('main')"))[made] == "land feat"
    else:
        assert made == fork_head
    assert workspace(ds)["fork_points"]["db"] == {"commit": made}
    assert server.branches()[f"tether.ws.{DS}.feat"] == made
    if not server.real:  # the test server's slow COMMIT lets the other writer in first, every time
        assert chased and chased[0][0] == made and server.head("main") == chased[0][1] != made


@pytest.mark.parametrize("constraint", ["unique index", "foreign key"])
def test_merge_refused_for_a_constraint_violation_says_so(tmp_path, tether, env, dolt, constraint):
    """Each side keeps its constraints, the merged rows break one (the same
    value under a UNIQUE index; a child row whose parent the other side
    deleted): Dolt's merge records a constraint violation, not a conflict,
    and promote says so, naming the table; nothing is merged."""
    if constraint == "foreign key" and not dolt.real:
        pytest.skip("the test server models UNIQUE violations only")
    if constraint == "unique index":
        dolt.sql("CREATE TABLE u (id INT PRIMARY KEY, email VARCHAR(40), UNIQUE KEY email_u (email))")
        dolt.sql("INSERT INTO u VALUES (1, 'a@example.com')")
        fork_sql, main_sql = ("INSERT INTO u VALUES (2, 'same@example.com')",
                              "INSERT INTO u VALUES (3, 'same@example.com')")
    else:
        dolt.sql("CREATE TABLE p (id INT PRIMARY KEY)")
        dolt.sql("CREATE TABLE u (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id))")
        dolt.sql("INSERT INTO p VALUES (1), (5)")
        dolt.sql("INSERT INTO u VALUES (1, 1)")
        fork_sql, main_sql = "INSERT INTO u VALUES (2, 5)", "DELETE FROM p WHERE id = 5"
    dolt.commit("seed")
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    rev = f"{dolt.database}/tether.ws.{DS}.feat"
    dolt.sql(fork_sql, database=rev)
    dolt.commit("fork row", database=rev)
    tether("commit", "-m", "fork", cwd=ds)
    dolt.sql(main_sql)
    before = dolt.commit("main change")
    rows = sorted(dolt.sql("SELECT id FROM u"))
    proc = tether("promote", "-m", "land feat", cwd=ds, check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said
    assert f"constraint violation in u ({constraint})" in said and "conflicts in" not in said, said
    assert dolt.head("main") == before
    assert sorted(dolt.sql("SELECT id FROM u")) == rows
    assert dolt.sql("SELECT * FROM dolt_constraint_violations") == []
    assert json.loads(tether("promote", "-m", "land feat", "--json", cwd=ds, check=False).stdout)[
        "conflicts"] == {"db": ["u"]}


@pytest.mark.parametrize("shape", ["merge", "fast-forward"])
def test_promote_onto_a_dirty_main_is_refused_whether_it_merges_or_fast_forwards(tmp_path, tether, env, dolt,
                                                                                  shape):
    """main has uncommitted changes (in a table the fork leaves alone, which
    Dolt's merge would carry over): a merge promote refuses like a
    fast-forward does, with the same words, and main is left as it was."""
    seed(dolt)
    dolt.sql("CREATE TABLE notes (id INT PRIMARY KEY)")
    dolt.commit("notes")
    ds = new_dataset(tmp_path / "ds", tether, env, dolt)
    add(tether, ds, dolt)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feat", "--eager", cwd=ds)
    rev = f"{dolt.database}/tether.ws.{DS}.feat"
    dolt.sql("INSERT INTO t VALUES (10, 'fork')", database=rev)
    dolt.commit("fork row", database=rev)
    tether("commit", "-m", "fork", cwd=ds)
    if shape == "merge":
        dolt.sql("INSERT INTO t VALUES (20, 'main')")
        dolt.commit("main row")
    dolt.sql("INSERT INTO notes VALUES (1)")  # not committed
    before = dolt.head("main")
    proc = tether("promote", "-m", "land feat", cwd=ds, check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said
    assert f"main on {dolt.where} has uncommitted changes: promote moves only a clean branch" in said, said
    assert "moved while promoting" not in said
    assert dolt.head("main") == before
    assert dolt.sql("SELECT id FROM notes") == [(1,)]
    assert dolt.sql("SELECT dirty FROM dolt_branches WHERE name = 'main'") in ([(1,)], [(True,)])
    out = tether.json("promote", "-m", "land feat", cwd=ds, check=False)
    assert out["merged"] == {} and out["fast_forwarded"] == {}
    assert "uncommitted changes" in out["failed"]["db"]
