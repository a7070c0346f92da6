"""promote --check CMD: write-audit-publish.

The check runs between the plan and the apply with every object readable at
exactly the heads that land; a failing check moves nothing; a head that moves
after the check refuses its object; racing checked promotes land once.
The memory backend covers the mechanics; git stores, a Delta table and an
Iceberg table (SQL catalog) are read by the check with their own tools; the
handles of Dolt (test server), Neon (the fake) and Lance hold the landing
heads and no secret; DuckLake's is the snapshot the landing records;
Icechunk (no conditional move on a local store) is compared right before
the move.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from conftest import git
from dolt import dolt  # noqa: F401  (fixture)
from test_commit import DS, mem, store  # noqa: F401  (fixtures)
from test_git_backend import commit_file
from test_icechunk_backend import oracle, oracles, quiet_icechunk  # noqa: F401  (fixtures)
from test_iceberg_backend import Catalog, make_table, rows as ice_rows, sqlite_catalog  # noqa: F401
from test_neon_backend import neon  # noqa: F401  (fixture)
from test_promote import feature  # noqa: F401  (fixture)

warnings.simplefilter("ignore")
from deltalake import DeltaTable, write_deltalake  # noqa: E402

BRANCH = f"tether.ws.{DS}.feature"


def ops(ds: Path) -> list[dict]:
    return [json.loads(l) for l in (ds / ".tether" / "ops.jsonl").read_text().splitlines() if l.strip()]


def promote_entries(ds: Path) -> list[dict]:
    return [e for e in ops(ds) if e.get("command") == "promote"]


# ---- the mechanics, on the memory backend --------------------------------------------------

def test_failing_check_moves_nothing_and_says_why(feature, tether, mem, env):
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    before_store = mem.show("sys1")["branches"]
    before_main = git("rev-parse", "main", cwd=feature, env=env)
    check = "for i in $(seq 1 30); do echo line $i; done; echo on-stderr >&2; exit 7"
    proc = tether("promote", "--check", check, cwd=feature, check=False)
    assert proc.returncode == 1, proc
    assert "exited with status 7" in proc.stderr and "nothing moved" in proc.stderr
    # the output passed through, and the last lines are in the error
    assert "line 1\n" in proc.stderr
    err = proc.stderr[proc.stderr.index("error:"):]
    assert "line 30" in err and "on-stderr" in err and "line 5\n" not in err
    assert proc.stdout == ""
    assert mem.show("sys1")["branches"] == before_store
    assert mem.show("sys1")["branches"]["main"] != sid
    assert git("rev-parse", "main", cwd=feature, env=env) == before_main
    assert promote_entries(feature) == []
    # --json: the error object, nothing on stdout
    proc = tether("promote", "--check", "false", "--json", cwd=feature, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "exited with status 1" in json.loads(proc.stderr)["error"]["message"]
    assert mem.show("sys1")["branches"] == before_store


def test_handles_are_exactly_what_lands(feature, tether, mem, env, tmp_path):
    files = tmp_path / "stores" / "files"
    files.mkdir(parents=True)
    (files / "a.txt").write_text("a\n")
    tether("add", "f", str(files), "--kind", "file", cwd=feature)
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    head = git("rev-parse", "feature", cwd=feature, env=env).strip()
    seen = tmp_path / "seen.json"
    check = (f'cp "$TETHER_CHECK_HANDLES" {seen}; ls -ld "$(dirname "$TETHER_CHECK_HANDLES")" > {seen}.dir; '
             f'echo "$TETHER_CHECK_REV $TETHER_CHECK_BOOKMARK $TETHER_REV" > {seen}.env; '
             f'tether open m1 --json > {seen}.open')
    e = {"PATH": f"{Path(str(tether.exe)).parent}:{os.environ['PATH']}"}
    out = tether.json("promote", "--check", check, cwd=feature, env=e)
    handles = json.loads(seen.read_text())
    assert handles["rev"] == head and handles["bookmark"] == "feature"
    assert handles["heads"] == {"m1": {"snapshot_id": sid}}
    # every object: a local directory is Observed, so it says why it has no handle
    assert set(handles["objects"]) == {"m1", "m2"} and set(handles["unavailable"]) == {"f"}
    proc = tether("open", "f", "-r", head, cwd=feature, check=False)
    assert proc.returncode == 1 and handles["unavailable"]["f"] in proc.stderr
    # each handle is what `open --json -r REV` shows
    for key in ("m1", "m2"):
        assert handles["objects"][key] == tether.json("open", key, "-r", head, cwd=feature)
    assert seen.with_suffix(".json.env").read_text().split() == [head, "feature", head]
    # tether open inside the check reads the same heads
    assert json.loads(seen.with_suffix(".json.open").read_text()) == handles["objects"]["m1"]
    assert seen.with_suffix(".json.dir").read_text().startswith("drwx------")
    # what landed is what was checked
    assert out["fast_forwarded"] == {"m1": {"snapshot_id": sid}}
    assert out["check"]["heads"] == handles["heads"] and out["check"]["exit_status"] == 0
    assert mem.show("sys1")["branches"]["main"] == sid
    assert out["trunk_moved"] == head


def test_private_directory_is_removed(feature, tether, mem, tmp_path):
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    where = tmp_path / "where"
    tether("promote", "--check", f'echo "$TETHER_CHECK_HANDLES" > {where}; exit 1', cwd=feature, check=False)
    path = Path(where.read_text().strip())
    assert path.name == "handles.json" and not path.exists() and not path.parent.exists()


def test_dry_run_runs_the_check_and_moves_nothing(feature, tether, mem, tmp_path):
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    before = mem.show("sys1")["branches"]
    marker = tmp_path / "ran"
    plan = tether.json("promote", "--check", f"touch {marker}", "--dry-run", cwd=feature)
    assert marker.exists()
    assert plan["context"]["check"]["exit_status"] == 0
    assert mem.show("sys1")["branches"] == before
    text = tether("promote", "--check", "true", "--dry-run", cwd=feature).stdout
    assert "checked: `true` exited 0" in text
    proc = tether("promote", "--check", "false", "--dry-run", cwd=feature, check=False)
    assert proc.returncode == 1 and "exited with status 1" in proc.stderr
    assert mem.show("sys1")["branches"] == before and promote_entries(feature) == []


def test_a_write_to_the_fork_during_the_check_refuses_that_object(feature, tether, mem, build_dir):
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    mem("sys2", {"g": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    before = {s: mem.show(s)["branches"]["main"] for s in ("sys1", "sys2")}
    write = f"{build_dir / 'tt_memory'} write sys1 {BRANCH} '{{\"f\": 2}}'"
    proc = tether("promote", "--check", write, "--json", cwd=feature, check=False)
    assert proc.returncode == 1, proc
    out = json.loads(proc.stdout)
    assert out["fast_forwarded"] == {}
    assert "moved after the check" in out["refused"]["m1"]
    assert f"snapshot_id={sid} -> " in out["refused"]["m1"]
    assert "m2" in out["held"]
    assert {s: mem.show(s)["branches"]["main"] for s in ("sys1", "sys2")} == before


def test_a_base_moved_during_the_check_refuses_that_object(feature, tether, mem, build_dir):
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    write = f"{build_dir / 'tt_memory'} write sys1 main '{{\"other\": 1}}'"
    proc = tether("promote", "--check", write, "--json", cwd=feature, check=False)
    assert proc.returncode == 1, proc
    out = json.loads(proc.stdout)
    assert out["fast_forwarded"] == {} and "main moved after the check" in out["refused"]["m1"]


def test_journal_records_the_check(feature, tether, mem):
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    out = tether.json("promote", "--check", "echo https://bob:hunter2@example.com/x >/dev/null", cwd=feature)
    assert out["check"]["command"] == "echo https://bob:***@example.com/x >/dev/null"
    (entry,) = [e for e in promote_entries(feature) if "plan" in e]
    rec = entry["plan"]["context"]["check"]
    assert rec["exit_status"] == 0 and rec["heads"] == {"m1": {"snapshot_id": sid}}
    assert rec["command"] == out["check"]["command"]
    assert "hunter2" not in (feature / ".tether" / "ops.jsonl").read_text()
    done = [e for e in ops(feature) if e.get("done") == entry["id"]]
    assert done and done[0]["result"]["check"]["rev"] == out["check"]["rev"]


def test_a_merge_cannot_be_checked(feature, tether, mem, tmp_path):
    mem("sys1", {"f": 1}, branch=BRANCH)
    mem("sys1", {"elsewhere": 1}, branch="main")
    tether("commit", "-m", "feature work", cwd=feature)
    marker = tmp_path / "ran"
    proc = tether("promote", "--check", f"touch {marker}", cwd=feature, check=False)
    assert proc.returncode == 1 and "m1 would merge" in proc.stderr
    assert not marker.exists()


def test_ctrl_c_stops_the_check_and_refuses(feature, tether, mem, env, tmp_path):
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    before = mem.show("sys1")["branches"]
    started = tmp_path / "started"
    p = subprocess.Popen([str(tether.exe), "promote", "--check", f"echo $$ > {started}; sleep 60"],
                         cwd=feature, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 30
    while not (started.exists() and started.read_text().strip()) and time.time() < deadline:
        time.sleep(0.05)
    shell = int(started.read_text())
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, (out, err)
    assert "interrupted" in err and "nothing moved" in err
    assert mem.show("sys1")["branches"] == before
    try:
        os.kill(shell, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_check_with_rev_sees_that_commit(feature, tether, mem, env, tmp_path):
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    first = git("rev-parse", "feature", cwd=feature, env=env).strip()
    mem("sys1", {"f": 2}, branch=BRANCH)
    tether("commit", "-m", "more", cwd=feature)
    seen = tmp_path / "rev"
    out = tether.json("promote", "-r", "HEAD~1", "--check", f'echo $TETHER_CHECK_REV > {seen}', cwd=feature)
    assert seen.read_text().strip() == first
    assert out["fast_forwarded"] == {"m1": {"snapshot_id": sid}} and out["check"]["rev"] == first
    assert mem.show("sys1")["branches"]["main"] == sid


# ---- real stores: git, Delta, Iceberg ---------------------------------------------------------

CHECK_SCRIPT = r'''
import json, os, subprocess, sys, warnings
warnings.simplefilter("ignore")
from deltalake import DeltaTable
from pyiceberg.catalog.sql import SqlCatalog
h = json.load(open(os.environ["TETHER_CHECK_HANDLES"]))
seen = {"rev": h["rev"], "heads": h["heads"]}
g = h["objects"]["code"]
seen["code"] = subprocess.run(["git", "-C", g["key"], "rev-parse", g["address"].rsplit("@", 1)[-1] if "@" in g["address"] else g["ref"]],
                              capture_output=True, text=True, check=True).stdout.strip()
d = h["objects"]["sales"]
seen["sales"] = DeltaTable(d["uri"], version=d["version"]).to_pyarrow_table().num_rows
seen["sales_version"] = d["version"]
i = h["objects"]["events"]
cat = SqlCatalog("default", uri=sys.argv[2], warehouse=sys.argv[3])
t = cat.load_table(i["identifier"])
seen["events_snapshot"] = i["snapshot_id"]
seen["events"] = t.scan(snapshot_id=i["snapshot_id"]).to_arrow().num_rows
json.dump(seen, open(sys.argv[1], "w"))
sys.exit(int(sys.argv[4]))
'''


def real_dataset(tmp_path, tether, env, cat) -> tuple[Path, Path, Path]:
    ds = tmp_path / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
    tether("init", "--dataset-id", DS, cwd=ds)
    secrets = ds / ".tether" / "secrets.toml"
    secrets.write_text(cat.secrets())
    secrets.chmod(0o600)
    code = tmp_path / "stores" / "code"
    code.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=code, env=env)
    commit_file(code, "f.txt", "one\n", env, "one")
    table = tmp_path / "stores" / "sales"
    write_deltalake(str(table), pa.table({"id": [1, 2]}))
    make_table(cat, "ns.events")
    tether("add", "code", str(code), "--kind", "git", cwd=ds)
    tether("add", "sales", str(table), "--kind", "delta", cwd=ds)
    tether("add", "events", "--kind", "iceberg", "--set", "identifier=ns.events", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feature", "--eager", cwd=ds)
    return ds, code, table


def heads(code: Path, table: Path, cat: Catalog, env) -> dict:
    return {"code": git("rev-parse", "main", cwd=code, env=env).strip(),
            "sales": DeltaTable(str(table)).version(),
            "events": cat.table("ns.events").current_snapshot().snapshot_id}


def test_real_stores_check_reads_exactly_what_lands(tmp_path, tether, env, sqlite_catalog):
    cat = sqlite_catalog
    ds, code, table = real_dataset(tmp_path, tether, env, cat)
    git("checkout", "-q", BRANCH, cwd=code, env=env)
    sha = commit_file(code, "f.txt", "two\n", env, "two")
    git("checkout", "-q", "main", cwd=code, env=env)
    write_deltalake(str(table), pa.table({"id": [3]}), mode="append")
    cat.table("ns.events").append(ice_rows(7, 8, 9), branch=BRANCH)
    fork_snap = cat.table("ns.events").snapshot_by_name(BRANCH).snapshot_id
    tether("commit", "-m", "feature work", cwd=ds)
    script = tmp_path / "check.py"
    script.write_text(CHECK_SCRIPT)
    seen = tmp_path / "seen.json"

    def check(code_: int) -> str:
        return f"{sys.executable} {script} {seen} {cat.uri} {cat.warehouse} {code_}"

    # A failing check: nothing moves in any store, nor the trunk.
    before = heads(code, table, cat, env)
    trunk = git("rev-parse", "main", cwd=ds, env=env)
    proc = tether("promote", "--check", check(3), cwd=ds, check=False)
    assert proc.returncode == 1 and "exited with status 3" in proc.stderr, proc
    assert heads(code, table, cat, env) == before
    assert git("rev-parse", "main", cwd=ds, env=env) == trunk
    # The check saw the fork heads that would land, read with each store's own library.
    got = json.loads(seen.read_text())
    assert got["code"] == sha
    assert got["events_snapshot"] == fork_snap and got["events"] == 6
    # Delta is not forked: the check reads it at the version the landing commit records
    recorded = tether.json("open", "sales", "-r", got["rev"], cwd=ds)
    assert got["sales_version"] == recorded["version"] == 0 and got["sales"] == 2
    # A passing check lands exactly those heads.
    out = tether.json("promote", "--check", check(0), cwd=ds)
    after = heads(code, table, cat, env)
    assert after["code"] == sha and after["events"] == fork_snap
    assert out["check"]["heads"] == got["heads"]
    assert set(out["fast_forwarded"]) == {"code", "events"}


def test_a_check_writing_to_a_real_fork_gets_it_refused(tmp_path, tether, env, sqlite_catalog):
    cat = sqlite_catalog
    ds, code, table = real_dataset(tmp_path, tether, env, cat)
    cat.table("ns.events").append(ice_rows(7), branch=BRANCH)
    git("checkout", "-q", BRANCH, cwd=code, env=env)
    commit_file(code, "f.txt", "two\n", env, "two")
    git("checkout", "-q", "main", cwd=code, env=env)
    tether("commit", "-m", "feature work", cwd=ds)
    before = heads(code, table, cat, env)
    # the check commits to the git fork behind tether's back
    write = (f"cd {code} && t=$(git commit-tree -p {BRANCH} -m sneaky {BRANCH}^{{tree}}) && "
             f"git update-ref refs/heads/{BRANCH} $t")
    proc = tether("promote", "--check", write, "--json", cwd=ds, check=False)
    assert proc.returncode == 1, proc
    out = json.loads(proc.stdout)
    assert "moved after the check" in out["refused"]["code"]
    assert out["fast_forwarded"] == {} and "events" in out["held"]
    assert heads(code, table, cat, env) == before


def test_eight_racing_checked_promotes_from_clones_land_once(tmp_path, tether, env, sqlite_catalog):
    """Eight clones, each on its own bookmark with its own writes on two git
    stores and an Iceberg table, promote --check at once: exactly one lands
    everything, the others are refused with nothing moved."""
    cat = sqlite_catalog
    seed = tmp_path / "seed"
    seed.mkdir()
    git("init", "-q", "-b", "main", cwd=seed, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=seed, env=env)
    tether("init", "--dataset-id", DS, cwd=seed)
    stores = []
    for name in ("a", "b"):
        repo = tmp_path / "stores" / name
        repo.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=repo, env=env)
        commit_file(repo, "f.txt", "one\n", env, "one")
        # main not checked out: git moves it with update-ref's old value, a
        # compare-and-swap (a checked-out main is compared before the act)
        git("checkout", "-q", "--detach", cwd=repo, env=env)
        tether("add", name, str(repo), "--kind", "git", "--set", "ref=main", cwd=seed)
        stores.append(repo)
    make_table(cat, "ns.events")
    (seed / ".tether" / "secrets.toml").write_text(cat.secrets())
    (seed / ".tether" / "secrets.toml").chmod(0o600)
    tether("add", "events", "--kind", "iceberg", "--set", "identifier=ns.events", cwd=seed)
    tether("commit", "-m", "first", cwd=seed)
    base = {"a": git("rev-parse", "main", cwd=stores[0], env=env).strip(),
            "b": git("rev-parse", "main", cwd=stores[1], env=env).strip(),
            "events": cat.table("ns.events").current_snapshot().snapshot_id}
    clones, wants = [], []
    for i in range(8):
        c = tmp_path / f"clone{i}"
        git("clone", "-q", str(seed), str(c), cwd=tmp_path, env=env)
        (c / ".tether" / "secrets.toml").write_text(cat.secrets())
        (c / ".tether" / "secrets.toml").chmod(0o600)
        tether("new", "-b", f"pr{i}", "--eager", cwd=c)
        branch = f"tether.ws.{DS}.pr{i}"
        want = {}
        for name, repo in zip(("a", "b"), stores):
            t = git("commit-tree", "-p", branch, "-m", f"clone {i}", f"{branch}^{{tree}}", cwd=repo, env=env).strip()
            git("update-ref", f"refs/heads/{branch}", t, cwd=repo, env=env)
            want[name] = t
        cat.table("ns.events").append(ice_rows(100 + i), branch=branch)
        want["events"] = cat.table("ns.events").snapshot_by_name(branch).snapshot_id
        tether("commit", "-m", f"work {i}", cwd=c)
        clones.append(c)
        wants.append(want)
    with ThreadPoolExecutor(8) as pool:
        procs = list(pool.map(lambda c: tether("promote", "--check", "true", "--json", cwd=c, check=False), clones))
    won = [i for i, p in enumerate(procs) if p.returncode == 0]
    assert len(won) == 1, [(p.returncode, p.stdout, p.stderr) for p in procs]
    w = won[0]
    now = {"a": git("rev-parse", "main", cwd=stores[0], env=env).strip(),
           "b": git("rev-parse", "main", cwd=stores[1], env=env).strip(),
           "events": cat.table("ns.events").current_snapshot().snapshot_id}
    assert now == wants[w]               # the winner landed whole
    assert now != base
    for i, p in enumerate(procs):
        if i == w:
            continue
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        out = json.loads(p.stdout)
        assert out["fast_forwarded"] == {} and out["refused"], out
        assert out["trunk_moved"] is None


# ---- real stores: Dolt, Neon, Lance ------------------------------------------------------------

def test_handles_for_dolt_neon_lance_hold_the_landing_heads_and_no_secret(tmp_path, tether, env, dolt, neon):
    """A Dolt fork with a commit lands; the unforked Neon database and Lance
    table are in the handles at what the commit records (a read-only Neon
    connection at the LSN, a Lance version); no password or API key in the
    file; a failing check leaves every store where it was."""
    import lance

    from test_dolt_backend import add as dolt_add, seed as dolt_seed
    from test_neon_backend import add as neon_add
    import neon_fake

    dolt_seed(dolt)
    fake = neon
    fake.psql("main", "INSERT INTO t VALUES (1, 'one')")
    ds = tmp_path / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
    tether("init", "--dataset-id", DS, cwd=ds)
    secrets = ds / ".tether" / "secrets.toml"
    secrets.write_text(dolt.secrets() + f'[backends.neon]\napi_url = "{fake.url}"\n')
    secrets.chmod(0o600)
    lt = tmp_path / "stores" / "t.lance"
    lt.parent.mkdir(parents=True)
    lance.write_dataset(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), str(lt))
    dolt_add(tether, ds, dolt)
    neon_add(tether, ds, "pg")
    tether("add", "tbl", str(lt), "--kind", "lance", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feature", cwd=ds)
    h = tether.json("open", "db", cwd=ds)          # the Dolt fork, made on first writable open
    dolt.sql("INSERT INTO t VALUES (3, 'c')", database=h["database_ref"])
    fork_head = dolt.commit("on the fork", database=h["database_ref"])
    tether("commit", "-m", "feature work", cwd=ds)
    rev = git("rev-parse", "feature", cwd=ds, env=env).strip()
    main_before = dolt.head("main")
    lance_before = lance.dataset(str(lt)).version
    neon_main_before = fake.main.id, {b.name for b in fake.branches.values()}
    seen = tmp_path / "seen.json"

    proc = tether("promote", "--check", f'cp "$TETHER_CHECK_HANDLES" {seen}; exit 1', cwd=ds, check=False)
    assert proc.returncode == 1 and "exited with status 1" in proc.stderr
    assert dolt.head("main") == main_before and lance.dataset(str(lt)).version == lance_before
    text = seen.read_text()
    assert neon_fake.PASSWORD not in text and fake.api_key not in text and dolt.password not in text
    got = json.loads(text)
    assert got["rev"] == rev and got["heads"] == {"db": {"commit": fork_head}}
    # Dolt: the handle names the commit that lands (its pin tag is on it)
    d = got["objects"]["db"]
    assert d["type"] == "DoltHandle" and d["read_only"] is True
    tag = d["database_ref"].split("/", 1)[1]
    assert dolt.tags()[tag] == fork_head
    assert dolt.sql("SELECT COUNT(*) FROM t", database=d["database_ref"])[0][0] == 3
    # Lance: the version the commit records, readable with pylance
    t = got["objects"]["tbl"]
    assert lance.dataset(t["uri"]).checkout_version(t["tag"]).version == t["version"] == lance_before
    # Neon: a read-only connection, password masked, at the recorded LSN
    n = got["objects"]["pg"]
    recorded = tether.json("open", "pg", "-r", rev, cwd=ds)
    assert n == recorded and n["type"] == "NeonHandle" and ":***@" in n["address"]
    assert n["read_only"] is True
    assert (fake.main.id, {b.name for b in fake.branches.values()}) == neon_main_before

    out = tether.json("promote", "--check", "true", cwd=ds)
    assert out["fast_forwarded"] == {"db": {"commit": fork_head}} and dolt.head("main") == fork_head
    assert out["check"]["heads"] == got["heads"]


# ---- Icechunk: no conditional move on a local store, so compared right before ----------------

def test_icechunk_fork_written_during_the_check_is_refused_then_lands(tmp_path, tether, env, oracle):
    """Local Icechunk has no conditional ref move: the heads the check saw
    are compared right before the move.  A commit icechunk itself makes on
    the fork during the check refuses it; after `commit`, a passing check
    lands the snapshot it saw."""
    from test_icechunk_backend import JS_DIR, ROOT as REPO_ROOT, make_repo

    o = oracle(2)
    repo = tmp_path / "stores" / "arr.icechunk"
    make_repo(o, repo, "a1")
    ds = tmp_path / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    tether("init", "--dataset-id", DS, cwd=ds)
    tether("add", "arr", str(repo), "--kind", "icechunk", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    tether("new", "-b", "feature", "--eager", cwd=ds)
    s2 = o("commit", str(repo), BRANCH, "on-feature")["snapshot_id"]
    tether("commit", "-m", "feature work", cwd=ds)
    main_before = o("lookup_branch", str(repo), "main")["snapshot_id"]
    seen = tmp_path / "seen.json"
    writer = (f"cp \"$TETHER_CHECK_HANDLES\" {seen}; "
              f"echo '[\"commit\", \"{repo}\", \"{BRANCH}\", \"sneaky\"]' | "
              f"ICECHUNK_JS_DIR={JS_DIR} node --no-warnings {REPO_ROOT / 'tests/support/icechunk_writer.mjs'} >/dev/null")
    proc = tether("promote", "--check", writer, "--json", cwd=ds, check=False)
    assert proc.returncode == 1, proc
    out = json.loads(proc.stdout)
    assert out["fast_forwarded"] == {} and "moved after the check" in out["refused"]["arr"]
    assert f"snapshot_id={s2[:16]}… -> snapshot_id=" in out["refused"]["arr"]
    assert o("lookup_branch", str(repo), "main")["snapshot_id"] == main_before
    handles = json.loads(seen.read_text())
    assert handles["heads"] == {"arr": {"snapshot_id": s2}}
    assert handles["objects"]["arr"]["snapshot_id"] == s2 and handles["objects"]["arr"]["read_only"] is True
    # commit the new head; a passing check lands exactly what it saw
    tether("commit", "-m", "sneaky too", cwd=ds)
    s3 = o("lookup_branch", str(repo), BRANCH)["snapshot_id"]
    out = tether.json("promote", "--check", "true", cwd=ds)
    assert out["fast_forwarded"] == {"arr": {"snapshot_id": s3}}
    assert o("lookup_branch", str(repo), "main")["snapshot_id"] == s3


def test_a_saved_checked_plan_lands_only_what_was_checked(feature, tether, mem, tmp_path):
    sid = mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    plan = tmp_path / "plan.json"
    tether("promote", "--check", "true", "--plan", str(plan), cwd=feature)
    assert json.loads(plan.read_text())["context"]["check"]["heads"] == {"m1": {"snapshot_id": sid}}
    before = mem.show("sys1")["branches"]["main"]
    sid2 = mem("sys1", {"f": 2}, branch=BRANCH)  # the fork moves after the check
    proc = tether("promote", "--from-plan", str(plan), cwd=feature, check=False)
    assert proc.returncode == 1 and "moved" in proc.stderr, proc
    assert mem.show("sys1")["branches"]["main"] == before
    # checked and saved again, untouched since: the saved plan lands what the check saw
    tether("commit", "-m", "more work", cwd=feature)
    tether("promote", "--check", "true", "--plan", str(plan), cwd=feature)
    out = tether.json("promote", "--from-plan", str(plan), cwd=feature)
    assert out["fast_forwarded"] == {"m1": {"snapshot_id": sid2}} and out["check"]["exit_status"] == 0
    assert mem.show("sys1")["branches"]["main"] == sid2
    (entry,) = [e for e in promote_entries(feature) if "plan" in e]
    assert entry["plan"]["context"]["check"]["heads"] == {"m1": {"snapshot_id": sid2}}


def test_ducklake_handle_is_the_snapshot_the_landing_records(feature, tether, mem, home, tmp_path):
    """A DuckLake catalog (not forked) is in the handles at the snapshot the
    landing commit records, readable there with DuckDB, whatever was written
    to the lake since."""
    from test_ducklake_backend import Lake

    meta, data = tmp_path / "stores" / "meta.sqlite", tmp_path / "lake-data"
    meta.parent.mkdir(parents=True, exist_ok=True)
    lake = Lake(home, f"ducklake:sqlite:{meta}", data)
    lake.run("CREATE TABLE lake.t (a INTEGER)", "INSERT INTO lake.t SELECT i FROM range(10) r(i)")
    tether("add", "lake", f"sqlite:{meta}", "--kind", "ducklake", "--set", f"data_path={data}/", cwd=feature)
    mem("sys1", {"f": 1}, branch=BRANCH)
    tether("commit", "-m", "feature work", cwd=feature)
    recorded = lake.head()["snapshot_id"]
    lake.run("INSERT INTO lake.t VALUES (99)")      # written after the commit
    seen = tmp_path / "seen.json"
    tether("promote", "--check", f'cp "$TETHER_CHECK_HANDLES" {seen}', "--dry-run", cwd=feature)
    h = json.loads(seen.read_text())["objects"]["lake"]
    assert h["type"] == "DuckLakeHandle" and h["snapshot_id"] == recorded
    assert lake.run("SELECT count(*) FROM lake.t", at=h["snapshot_id"]) == [(10,)]
    assert lake.run("SELECT count(*) FROM lake.t") == [(11,)]
