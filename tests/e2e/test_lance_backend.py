"""The lance backend end to end, against real pylance and tether-vcs.

Expected values come from pylance (what each upstream fixture holds, version
by version) and from tether-vcs (states, pin ids, manifests, log and diff
output for the same datasets); pylance also reads back everything we write:
our tags check out, survive cleanup_old_versions and are listed, and our
branches open and take appends."""
from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD_DIR, FIXTURES, git

DS = "1a2b3c4d"
LANCE_FIXTURES = Path(os.environ.get("TETHER_LANCE_FIXTURES", FIXTURES / "lance"))

lance = pytest.importorskip("lance")
pa = pytest.importorskip("pyarrow")


def tt_lance(*args: str) -> object:
    proc = subprocess.run([str(BUILD_DIR / "tt_lance"), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def fixture_datasets() -> list[Path]:
    return sorted(p for p in LANCE_FIXTURES.glob("*/*") if (p / "_versions").is_dir())


def write(uri: Path | str, rows: list[int], mode: str = "append", branch: str | None = None):
    table = pa.table({"x": pa.array(rows, pa.int64())})
    if mode == "create":
        return lance.write_dataset(table, str(uri))
    ds = lance.dataset(str(uri))
    if branch:
        ds = ds.checkout_version((branch, None))
    return lance.write_dataset(table, ds, mode="append")


@pytest.fixture
def dataset(git_repo, tether):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    return git_repo


@pytest.fixture
def table(tmp_path) -> Path:
    uri = tmp_path / "stores" / "t.lance"
    uri.parent.mkdir()
    write(uri, [1, 2, 3], "create")
    write(uri, [4])
    return uri


# --------------------------------------------------------------------------- #
# Every upstream fixture reads as pylance reads it
# --------------------------------------------------------------------------- #
def pylance_view(path: Path) -> list[dict]:
    ds = lance.dataset(str(path))
    out = []
    for v in ds.versions():
        at = ds.checkout_version(v["version"])
        frags = []
        for f in at.get_fragments():
            meta = f.metadata
            dele = meta.deletion_file
            frags.append({
                "id": f.fragment_id,
                "physical_rows": meta.physical_rows or 0,
                "files": [df.path for df in meta.files],
                "deleted": None if dele is None else (dele.num_deleted_rows or 0),
            })
        out.append({"version": v["version"],
                    "timestamp": calendar.timegm(v["timestamp"].timetuple()),
                    "fragments": frags, "columns": at.schema.names})
    return out


def our_view(path: Path) -> list[dict]:
    out = []
    for m in tt_lance("versions", str(path)):
        out.append({
            "version": m["version"], "timestamp": m["timestamp"],
            "fragments": [{"id": f["id"], "physical_rows": f["physical_rows"], "files": f["files"],
                           "deleted": None if f["deletion"] is None else f["deletion"]["rows"]}
                          for f in m["fragments"]],
            "columns": [f["name"] for f in m["fields"] if f["parent"] == -1],
        })
    return out


def test_every_fixture_reads_as_pylance_reads_it():
    datasets = fixture_datasets()
    assert len(datasets) >= 14, f"fixtures missing under {LANCE_FIXTURES}"
    for path in datasets:
        assert our_view(path) == pylance_view(path), path


def test_corrupt_schema_diffs_match_pylance():
    """v0.10.5/corrupt_schema reuses field ids after drop_columns; the diff
    of each step is what pylance's two versions differ in."""
    path = LANCE_FIXTURES / "v0.10.5" / "corrupt_schema"
    ds = lance.dataset(str(path))
    versions = [v["version"] for v in ds.versions()]
    assert len(versions) == 6
    seen_columns = False
    for a, b in zip(versions, versions[1:]):
        da, db = ds.checkout_version(a), ds.checkout_version(b)
        fa = {f.fragment_id: f.metadata for f in da.get_fragments()}
        fb = {f.fragment_id: f.metadata for f in db.get_fragments()}
        want = []
        for fid in sorted(set(fa) | set(fb)):
            if fid not in fa:
                want.append([f"fragment {fid}", "added", f"+{fb[fid].physical_rows or 0} rows"])
            elif fid not in fb:
                want.append([f"fragment {fid}", "removed", f"-{fa[fid].physical_rows or 0} rows"])
            elif (fa[fid].deletion_file is None) != (fb[fid].deletion_file is None):
                want.append([f"fragment {fid}", "modified", "deletions changed"])
            elif ([f.path for f in fa[fid].files] != [f.path for f in fb[fid].files]
                  or fa[fid].physical_rows != fb[fid].physical_rows):
                want.append([f"fragment {fid}", "modified", "rewritten"])
        names_a, names_b = da.schema.names, db.schema.names
        want += [[f"column {n}", "added", None] for n in sorted(set(names_b) - set(names_a))]
        want += [[f"column {n}", "removed", None] for n in sorted(set(names_a) - set(names_b))]
        seen_columns |= set(names_a) != set(names_b)
        got = tt_lance("diff", str(path), str(a), str(b))
        assert [[e["path"], e["change"], e.get("detail")] for e in got["entries"]] == want, (a, b)
    assert seen_columns


# --------------------------------------------------------------------------- #
# Same states and pin ids as tether-vcs
# --------------------------------------------------------------------------- #
REF_STATES = """
import json, sys
from tether.backends.base import content_state
from tether.backends.lance import LanceBackend
from tether.manifest import compute_pin_id
b = LanceBackend({})
out = {}
for spec in json.loads(sys.argv[1]):
    key, loc, ref = spec
    state = b.fingerprint(loc, ref)
    out[key] = {"state": state,
                "pin_id": compute_pin_id("lance", b.identity(loc), content_state(b, state), "%s")}
print(json.dumps(out))
""" % DS


def reference_states(env, specs) -> dict:
    proc = subprocess.run([sys.executable, "-c", REF_STATES, json.dumps(specs)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_states_and_pin_ids_match_tether_vcs(dataset, tether, table, env):
    ds = lance.dataset(str(table))
    ds.tags.create("t1", 1)
    ds.create_branch("side", "t1")        # untouched: reports its parent's address
    ds.create_branch("busy", 2)
    write(table, [5], branch="busy")
    write(table, [6])
    specs = [["main", {"uri": str(table)}, None],
             ["side", {"uri": str(table), "branch": "side"}, None],
             ["busy", {"uri": str(table), "branch": "busy"}, None],
             ["tagged", {"uri": str(table), "at": "t1"}, None],
             ["v2", {"uri": str(table), "at": "2"}, None]]
    tether("add", "main", str(table), "--kind", "lance", cwd=dataset)
    tether("add", "side", str(table), "--kind", "lance", "--branch", "side", cwd=dataset)
    tether("add", "busy", str(table), "--kind", "lance", "--branch", "busy", cwd=dataset)
    tether("add", "tagged", str(table), "--kind", "lance", "--at", "t1", cwd=dataset)
    tether("add", "v2", str(table), "--kind", "lance", "--at", "2", cwd=dataset)
    ours = tether.json("snapshot", cwd=dataset)
    theirs = reference_states(env, specs)
    assert ours == {k: v["state"] for k, v in theirs.items()}
    assert "branch_id" in ours["busy"] and ours["side"] == {"branch": "main", "version": 1}
    out = tether.json("commit", "-m", "first", cwd=dataset)
    for key, v in theirs.items():
        toml = (dataset / ".tether/objects" / f"{key}.toml").read_text()
        assert f'id = "{v["pin_id"]}"' in toml, key
    assert {f"tether.{v['pin_id']}" for v in theirs.values()} <= set(lance.dataset(str(table)).tags.list())
    assert out["pinned"]


def test_same_manifest_as_reference_cli(tmp_path, tether, ref, table, env):
    """One dataset, added and committed by both CLIs: the same manifest (up
    to the capture time) and one tag, created by whichever came first."""
    texts = []
    for name, runner in (("theirs", ref), ("ours", tether)):
        root = tmp_path / name
        root.mkdir()
        git("init", "-q", "-b", "main", cwd=root, env=env)
        runner("init", "--dataset-id", DS, cwd=root)
        runner("add", "tbl", str(table), "--kind", "lance", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        texts.append(re.sub(r'captured_at = "[^"]*"\n', "",
                            (root / ".tether/objects/tbl.toml").read_text()))
    assert texts[0] == texts[1]
    tags = [t for t in lance.dataset(str(table)).tags.list() if t.startswith("tether.")]
    assert len(tags) == 1 and tags[0] in texts[0]


# --------------------------------------------------------------------------- #
# pylance accepts what we write
# --------------------------------------------------------------------------- #
def test_pylance_accepts_our_tags_and_branches(dataset, tether, table, env):
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    pin1 = tether.json("commit", "-m", "first", cwd=dataset)["pinned"]["tbl"]
    ds = lance.dataset(str(table))
    assert pin1 in ds.tags.list()                                     # tags.list() shows ours
    assert ds.tags.list()[pin1]["version"] == 2 and ds.tags.list()[pin1]["branch"] is None
    assert ds.checkout_version(pin1).to_table()["x"].to_pylist() == [1, 2, 3, 4]

    # Our branch opens in pylance and takes appends; our next pin points into it.
    tether("new", "-b", "exp", "--eager", cwd=dataset)
    branch = f"tether.ws.{DS}.exp"
    assert branch in lance.dataset(str(table)).branches.list()
    write(table, [10], branch=branch)
    pin2 = tether.json("commit", "-m", "on the branch", cwd=dataset)["pinned"]["tbl"]
    ds = lance.dataset(str(table))
    assert ds.tags.list()[pin2]["branch"] == branch
    assert sorted(ds.checkout_version(pin2).to_table()["x"].to_pylist()) == [1, 2, 3, 4, 10]
    assert ds.checkout_version((branch, None)).version == 3
    # main is untouched.
    assert lance.dataset(str(table)).to_table()["x"].to_pylist() == [1, 2, 3, 4]

    # cleanup_old_versions keeps our tagged version and drops untagged ones.
    write(table, [20])
    write(table, [30])
    lance.dataset(str(table)).cleanup_old_versions(older_than=__import__("datetime").timedelta(0),
                                                   error_if_tagged_old_versions=False)
    ds = lance.dataset(str(table))
    left = [v["version"] for v in ds.versions()]
    assert 2 in left and 1 not in left and 3 not in left
    assert ds.checkout_version(pin1).to_table()["x"].to_pylist() == [1, 2, 3, 4]
    assert tether.json("verify", cwd=dataset)["tbl"]["status"] == "ok"


def test_forks_of_every_fixture_open_in_pylance(tmp_path, tether, env):
    """Our branch manifests cloned from every upstream manifest shape (old
    and new flags, deletion files, index sections, multi-file fragments):
    pylance opens each branch at its parent's rows and appends to it."""
    checked = appended = 0
    for src in fixture_datasets():
        name = f"{src.parent.name}-{src.name}".replace(".", "_")
        uri = tmp_path / "stores" / name
        shutil.copytree(src, uri)
        root = tmp_path / "ds" / name
        root.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=root, env=env)
        tether("init", "--dataset-id", DS, cwd=root)
        tether("add", "t", str(uri), "--kind", "lance", cwd=root)
        tether("commit", "-m", "first", cwd=root)
        tether("new", "-b", "w", "--eager", cwd=root)
        ds = lance.dataset(str(uri))
        branch = ds.checkout_version((f"tether.ws.{DS}.w", None))
        assert branch.version == ds.version, name
        assert [f.fragment_id for f in branch.get_fragments()] == \
            [f.fragment_id for f in ds.get_fragments()], name
        checked += 1
        try:
            rows = ds.to_table()
        except (OSError, pa.ArrowInvalid):  # some fixtures ship without data files
            continue
        assert branch.to_table().equals(rows), name
        # pylance 14 writes data files of format 2.x only, and refuses to mix
        # them into a legacy (0.1) dataset on any branch.
        if rows.num_rows and ds.data_storage_version != "0.1":
            lance.write_dataset(rows.slice(0, 1), branch, mode="append")
            again = lance.dataset(str(uri))
            assert again.checkout_version((f"tether.ws.{DS}.w", None)).count_rows() == \
                rows.num_rows + 1, name
            assert again.count_rows() == rows.num_rows, name
            appended += 1
    assert checked == len(fixture_datasets()) and appended >= 5


# --------------------------------------------------------------------------- #
# log, diff and open through our CLI, compared with tether-vcs
# --------------------------------------------------------------------------- #
def test_log_and_diff_match_reference(dataset, tether, ref, table, env):
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    write(table, [5, 6])
    tether("commit", "-m", "append", cwd=dataset)
    lance.dataset(str(table)).delete("x = 2")
    tether("commit", "-m", "delete", cwd=dataset)
    for args in (("diff", "--content", "HEAD~1", "HEAD"), ("diff", "--content", "HEAD~2", "HEAD~1"),
                 ("log", "tbl"), ("log", "tbl", "-n", "2")):
        assert tether.json(*args, cwd=dataset) == ref.json(*args, cwd=dataset), args
        assert tether(*args, cwd=dataset).stdout == ref(*args, cwd=dataset).stdout, args


def test_open_address_and_fields(dataset, tether, ref, table):
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    pin = tether.json("commit", "-m", "first", cwd=dataset)["pinned"]["tbl"]
    for args in (("open", "tbl"), ("open", "tbl", "-r", "HEAD")):
        assert tether(*args, cwd=dataset).stdout == ref(*args, cwd=dataset).stdout, args
    got = tether.json("open", "tbl", cwd=dataset)
    assert (got["address"], got["read_only"], got["branch"], got["version"], got["tag"]) == \
        (f"{table}#main@v2", False, "main", 2, None)
    got = tether.json("open", "tbl", "-r", "HEAD", cwd=dataset)
    assert (got["address"], got["read_only"], got["tag"], got["uri"]) == \
        (f"{table}#{pin}", True, pin, str(table))
    # The fields are enough to open it natively.
    assert lance.dataset(got["uri"]).checkout_version(got["tag"]).version == got["version"]


def test_promote_refused_with_instructions(dataset, tether, ref, table):
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "exp", "--eager", cwd=dataset)
    write(table, [10], branch=f"tether.ws.{DS}.exp")
    tether("commit", "-m", "on the branch", cwd=dataset)
    before = lance.dataset(str(table)).version
    proc = tether("promote", cwd=dataset, check=False)
    theirs = ref("promote", cwd=dataset, check=False)
    assert (proc.returncode, proc.stderr) == (theirs.returncode, theirs.stderr)
    assert proc.returncode == 1 and "write the result onto the base branch" in proc.stdout
    # one line, and the refusal said once (tether-vcs says "cannot move a branch" twice)
    assert proc.stdout.count("cannot move a branch") == 1 and len(proc.stdout.splitlines()) == 1
    assert tether.json("promote", cwd=dataset, check=False) == \
        json.loads(ref("promote", "--json", cwd=dataset, check=False).stdout)
    assert lance.dataset(str(table)).version == before


def test_gc_releases_tags_then_branches(dataset, tether, table, env):
    """The end of the lifecycle: a bookmark's commit dropped from history
    leaves its tag (on the working branch) unreferenced; gc releases it,
    and with the tag gone Lance lets gc delete the branch."""
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    first = tether.json("commit", "-m", "first", cwd=dataset)["pinned"]["tbl"]
    tether("new", "-b", "exp", "--eager", cwd=dataset)
    branch = f"tether.ws.{DS}.exp"
    write(table, [10], branch=branch)
    second = tether.json("commit", "-m", "on the branch", cwd=dataset)["pinned"]["tbl"]
    assert lance.dataset(str(table)).tags.list()[second]["branch"] == branch
    git("checkout", "-q", "main", cwd=dataset, env=env)
    tether("new", "main", cwd=dataset)
    git("branch", "-q", "-D", "exp", cwd=dataset, env=env)
    git("reflog", "expire", "--expire=now", "--all", cwd=dataset, env=env)
    git("gc", "-q", "--prune=now", cwd=dataset, env=env)

    # A commit this repository held named the tag: with no remote, only
    # --release-foreign says no clone made before the deletion needs it.
    tether("gc", "--prune-bookmarks", "--no-dry-run", "--release-foreign", cwd=dataset)
    ds = lance.dataset(str(table))
    assert set(t for t in ds.tags.list() if t.startswith("tether.")) == {first}
    assert branch in ds.branches.list()          # holds writes no pin names now
    tether("gc", "--prune-bookmarks", "--force-prune", "--no-dry-run", cwd=dataset)
    ds = lance.dataset(str(table))
    assert branch not in ds.branches.list() and not (table / "tree" / branch).exists()
    assert ds.checkout_version(first).to_table()["x"].to_pylist() == [1, 2, 3, 4]


# --------------------------------------------------------------------------- #
# Corrupt input
# --------------------------------------------------------------------------- #
def test_corrupt_manifest_is_named_and_nothing_written(dataset, tether, table, env):
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    head = git("rev-parse", "HEAD", cwd=dataset, env=env)
    newest = sorted((table / "_versions").glob("*.manifest"))[0]   # V2: newest sorts first
    data = newest.read_bytes()
    newest.write_bytes(data[: len(data) // 2])
    proc = tether("commit", "-m", "broken", cwd=dataset, check=False)
    assert proc.returncode == 1
    assert "corrupt manifest" in proc.stderr and newest.name in proc.stderr
    assert str(table) in proc.stderr
    assert git("rev-parse", "HEAD", cwd=dataset, env=env) == head
    assert not (table / "_refs").exists()


# --------------------------------------------------------------------------- #
# A fork killed half-way is finished by the rerun
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("leftover", ["manifest", "tempfile", "directory"])
def test_fork_killed_before_its_branch_file_is_finished_by_the_rerun(dataset, tether, table, env,
                                                                      leftover):
    """Killed between the branch's manifest and its branch file (or while
    the manifest was being written, leaving only a temp file, or right
    after its directory was made, leaving tree/<branch>/ empty), the store
    holds tree/<branch>/ with no branch.  The same `new` again finishes the
    fork; pylance opens the branch; repair and gc have nothing left over."""
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    pin = tether.json("commit", "-m", "first", cwd=dataset)["pinned"]["tbl"]
    branch = f"tether.ws.{DS}.exp"
    proc = tether("new", "-b", "exp", "--eager", cwd=dataset, check=False,
                  env={"TETHER_FAULT": "fork:lance-before-ref"})
    assert proc.returncode != 0
    versions = table / "tree" / branch / "_versions"
    made = sorted(versions.iterdir())
    assert len(made) == 1 and made[0].name.endswith(".manifest")
    assert branch not in lance.dataset(str(table)).branches.list()
    if leftover == "tempfile":
        # As a kill inside the manifest's write leaves it.
        made[0].rename(versions / f".{made[0].name}.0123456789abcdef.tmp")
    if leftover == "directory":
        # As a kill between making tree/<branch>/ and its _versions/ leaves it.
        shutil.rmtree(versions)
        assert not any((table / "tree" / branch).iterdir())

    tether("new", "-b", "exp", "--eager", cwd=dataset)
    ds = lance.dataset(str(table))
    assert branch in ds.branches.list()
    assert ds.checkout_version((branch, None)).to_table()["x"].to_pylist() == [1, 2, 3, 4]
    assert not [p for p in versions.iterdir() if p.name.endswith(".tmp")]
    write(table, [10], branch=branch)
    tether("commit", "-m", "on the branch", cwd=dataset)
    assert tether.json("verify", cwd=dataset)["tbl"]["status"] == "ok"
    tether("repair", cwd=dataset)
    tether("gc", "--no-dry-run", cwd=dataset)
    ds = lance.dataset(str(table))
    assert branch in ds.branches.list() and pin in ds.tags.list()
    assert sorted(ds.checkout_version((branch, None)).to_table()["x"].to_pylist()) == [1, 2, 3, 4, 10]


def test_new_that_cannot_fork_one_object_is_partial_and_its_rerun_finishes(dataset, tether, tmp_path,
                                                                            env):
    """`new -b X --eager` switches to X, forks the objects it can and
    records them; one it cannot fork makes it a partial success (exit 3)
    naming the rerun, and that literal rerun finishes it."""
    stores = tmp_path / "stores"
    stores.mkdir()
    good, bad = stores / "good.lance", stores / "bad.lance"
    for uri in (good, bad):
        write(uri, [1, 2], "create")
        tether("add", uri.stem, str(uri), "--kind", "lance", cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    branch = f"tether.ws.{DS}.exp"
    # Someone else's files where bad's branch would go: not a branch, not ours.
    theirs = bad / "tree" / branch / "_versions" / "theirs.txt"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("x")

    proc = tether("new", "-b", "exp", "--eager", cwd=dataset, check=False)
    assert proc.returncode == 3, proc.stderr
    # errors name the backend kind, as tether-vcs has them; the key leads the line
    assert f"bad: [lance] lance branch {branch} is half-made" in proc.stderr
    assert f"(rm -r {theirs.parent.parent})" in proc.stderr
    assert "`tether new -b exp --eager` again" in proc.stderr
    assert git("symbolic-ref", "--short", "HEAD", cwd=dataset, env=env).strip() == "exp"
    assert branch in lance.dataset(str(good)).branches.list()
    # The rerun does not clear what it did not leave.
    proc = tether("new", "-b", "exp", "--eager", cwd=dataset, check=False)
    assert proc.returncode == 3 and theirs.exists()

    shutil.rmtree(bad / "tree")
    tether("new", "-b", "exp", "--eager", cwd=dataset)
    for uri in (good, bad):
        ds = lance.dataset(str(uri))
        assert branch in ds.branches.list()
        assert ds.checkout_version((branch, None)).to_table()["x"].to_pylist() == [1, 2]
    ws = (dataset / ".tether/workspace.toml").read_text()
    assert f'good = "{branch}"' in ws and f'bad = "{branch}"' in ws
    # A bookmark this checkout did not just make is still refused.
    tether("new", "-b", "other", cwd=dataset)
    git("checkout", "-q", "exp", cwd=dataset, env=env)
    proc = tether("new", "-b", "other", cwd=dataset, check=False)
    assert proc.returncode == 1 and "bookmark 'other' exists" in proc.stderr


def test_lazy_fork_killed_in_a_writable_open_is_finished_by_the_rerun(dataset, tether, table, env):
    tether("add", "tbl", str(table), "--kind", "lance", cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "exp", cwd=dataset)
    branch = f"tether.ws.{DS}.exp"
    proc = tether("open", "tbl", "--writable", cwd=dataset, check=False,
                  env={"TETHER_FAULT": "fork:lance-before-ref"})
    assert proc.returncode != 0 and (table / "tree" / branch / "_versions").is_dir()
    tether("open", "tbl", "--writable", cwd=dataset)
    ds = lance.dataset(str(table))
    assert branch in ds.branches.list()
    assert ds.checkout_version((branch, None)).to_table()["x"].to_pylist() == [1, 2, 3, 4]
