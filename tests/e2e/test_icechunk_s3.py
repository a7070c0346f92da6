"""icechunk repositories on s3:// against a moto server on 127.0.0.1,
through tether's own store layer (SigV4, conditional PUT):

- icechunk 2.x (the real library, from PyPI in a Python 3.12 venv that
  scripts/objstore-tools.sh installs) writes spec-2 repositories in the
  bucket; tether fingerprints, pins, forks, promotes, logs, diffs and opens
  them, and creates one with `add --create`; icechunk reads back every ref
  tether moved.
- Every ref move is a conditional write from the head tether reviewed: of
  eight processes racing a fork of one branch from the same head, exactly
  one wins and the others fail saying the branch moved meanwhile.
- tether-vcs (icechunk 1.x through its Python package) on the same bucket:
  the same states, pin ids and manifests, and each reads the other's
  dataset.

Needs moto[server] and botocore (tests/requirements.txt) and icechunk 2.x
(`scripts/objstore-tools.sh install icechunk-py`): skipped without it unless
TETHER_REQUIRE_TOOLS=1, where its absence fails."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import BUILD_DIR, ROOT
from conftest import git as run_git

moto = pytest.importorskip("moto")

BUCKET = "tt-ice"
DS = "1ce5b3c4"
CONFIG = {"region": "us-east-1", "access_key_id": "testing",
          "secret_access_key": "testing", "allow_http": True, "force_path_style": True}


def icechunk2_python() -> Path:
    out = subprocess.run([str(ROOT / "scripts/objstore-tools.sh"), "path", "icechunk-py"],
                         capture_output=True, text=True, check=True).stdout.strip()
    py = Path(out)
    if not py.exists():
        msg = f"icechunk 2.x is not installed at {py}: run scripts/objstore-tools.sh install icechunk-py"
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return py


@pytest.fixture
def s3():
    from s3server import MotoS3
    server = MotoS3(BUCKET)
    yield server.url, server.client
    server.close()


class Writer:
    """Real icechunk behind tests/support/icechunk_writer.py, on the bucket."""

    def __init__(self, python: Path, url: str, store_env: dict[str, str] | None = None):
        """store_env: how the writer reaches its store (moto's S3 at url by default)."""
        if store_env is None:
            store_env = {"ICECHUNK_S3_ENDPOINT": url, "AWS_ACCESS_KEY_ID": "testing",
                         "AWS_SECRET_ACCESS_KEY": "testing"}
        env = {**os.environ, "ICECHUNK_LOG": "error", **store_env}
        self.proc = subprocess.Popen([str(python), str(ROOT / "tests/support/icechunk_writer.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)

    def __call__(self, *cmd: str) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        assert out.pop("ok"), (cmd, out.get("error"))
        return out

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=60)


@pytest.fixture
def ic2(s3):
    w = Writer(icechunk2_python(), s3[0])
    yield w
    w.close()


@pytest.fixture
def ic1(s3):
    """icechunk 1.x (the one tether-vcs runs on here): spec-1 repositories."""
    pytest.importorskip("icechunk")
    w = Writer(Path(sys.executable), s3[0])
    yield w
    w.close()


def make_dataset(root: Path, runner, url: str, ds_id: str = DS) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", ds_id, cwd=root)
    secrets = root / ".tether/secrets.toml"
    secrets.write_text(
        f'[uris."s3://{BUCKET}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        'access_key_id = "testing"\nsecret_access_key = "testing"\n'
        "allow_http = true\nforce_path_style = true\n"
    )
    secrets.chmod(0o600)
    return root


def manifest(root: Path, key: str) -> str:
    text = (root / ".tether/objects" / f"{key}.toml").read_text()
    return re.sub(r'captured_at = "[^"]*"\n', "", text)


def keys(client, prefix: str) -> list[str]:
    out = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for o in out.get("Contents", []))


def test_icechunk2_on_s3_end_to_end(s3, ic2, tether, tmp_path):
    """add, commit (a tag icechunk sees), drift, log, diff --content, verify,
    open, new (a branch icechunk writes on), promote (main moved, read back
    by icechunk)."""
    url, client = s3
    repo = f"s3://{BUCKET}/repos/arr"
    ic2("create", repo)
    s1 = ic2("commit", repo, "main", "a1")["snapshot_id"]
    ds = make_dataset(tmp_path / "ds", tether, url)
    tether("add", "arr", repo, "--kind", "icechunk", cwd=ds)
    pin1 = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["arr"]
    assert ic2("tags", repo)["names"] == [pin1]
    assert ic2("lookup_tag", repo, pin1)["snapshot_id"] == s1
    assert f'snapshot_id = "{s1}"' in manifest(ds, "arr")

    s2 = ic2("commit", repo, "main", "a2")["snapshot_id"]
    st = tether.json("status", "--snapshot", cwd=ds)
    assert [(x["key"], x["state"]) for x in st["objects"]] == [("arr", "modified")]
    pin2 = tether.json("commit", "-m", "second", cwd=ds)["pinned"]["arr"]
    assert sorted(ic2("tags", repo)["names"]) == sorted([pin1, pin2])
    assert tether.json("verify", cwd=ds) == {"arr": {"status": "ok", "message": ""}}
    log = tether.json("log", "arr", cwd=ds)
    assert [e["id"] for e in log] == [e[0] for e in ic2("ancestry", repo, "main")["entries"]]
    assert log[0]["refs"] == ["main", pin2]
    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=ds)
    assert d[0]["key"] == "arr"
    assert d[0]["detail"]["entries"] == [{"path": "/a2", "change": "added", "detail": "array"}]
    handle = tether.json("open", "arr", cwd=ds)
    assert handle["uri"] == repo and handle["snapshot_id"] == s2, handle

    tether("new", "-b", "feature", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.feature"
    assert ic2("branches", repo)["names"] == ["main", branch]
    s3id = ic2("commit", repo, branch, "on-feature")["snapshot_id"]
    tether("commit", "-m", "feature work", cwd=ds)
    out = tether.json("promote", cwd=ds)
    assert out["fast_forwarded"] == {"arr": {"snapshot_id": s3id}}
    assert ic2("lookup_branch", repo, "main")["snapshot_id"] == s3id
    s4 = ic2("commit", repo, "main", "after-promote")["snapshot_id"]
    assert [e[0] for e in ic2("ancestry", repo, "main")["entries"]][:2] == [s4, s3id]
    ic2("check", repo)


def test_icechunk_add_create_on_s3(s3, ic2, tether, tmp_path):
    """`add --create` makes a spec-2 repository icechunk 2.x opens and
    writes; a prefix that holds anything is never adopted."""
    url, client = s3
    ds = make_dataset(tmp_path / "ds", tether, url)
    repo = f"s3://{BUCKET}/made/new"
    tether("add", "new", repo, "--kind", "icechunk", "--create", cwd=ds)
    assert "made/new/repo" in keys(client, "made/new/")
    s1 = ic2("commit", repo, "main", "x")["snapshot_id"]
    tether("commit", "-m", "made", cwd=ds)
    assert f'snapshot_id = "{s1}"' in manifest(ds, "new")
    ic2("check", repo)

    client.put_object(Bucket=BUCKET, Key="taken/data.bin", Body=b"someone's")
    proc = tether("add", "taken", f"s3://{BUCKET}/taken", "--kind", "icechunk", "--create",
                  cwd=ds, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"s3://{BUCKET}/taken" in out and "never adopts" in out, out
    assert keys(client, "taken/") == ["taken/data.bin"]
    assert "testing" not in out


@pytest.mark.parametrize("spec", [2, 1])
def test_racing_conditional_forks_on_s3_exactly_one_wins(s3, request, tmp_path, spec):
    """Eight processes each move branch `feat` from the head they all read
    onto a different snapshot: the If-Match on the repo file (spec 2, what
    icechunk 2.x writes) or on the branch's ref.json (spec 1, icechunk 1.x)
    lets exactly one through; the others say the branch moved meanwhile;
    icechunk reads the winner's ref whole."""
    url, client = s3
    ic2 = request.getfixturevalue("ic2" if spec == 2 else "ic1")
    repo = f"s3://{BUCKET}/race/arr"
    ic2("create", repo)
    base = ic2("commit", repo, "main", "base")["snapshot_id"]
    targets = [ic2("commit", repo, "main", f"t{i}")["snapshot_id"] for i in range(8)]
    ic2("branch", repo, "feat", base)
    loc = json.dumps({"uri": repo})
    env = {**os.environ, "TT_BACKEND_CONFIG": json.dumps({**CONFIG, "endpoint_url": url})}

    def fork(target: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BUILD_DIR / "tt_backend"), "icechunk", loc, "fork",
                               json.dumps({"snapshot_id": target}), "feat",
                               json.dumps({"snapshot_id": base})],
                              capture_output=True, text=True, env=env, timeout=120)

    with ThreadPoolExecutor(8) as pool:
        procs = list(pool.map(fork, targets))
    won = [t for t, p in zip(targets, procs) if p.returncode == 0]
    assert len(won) == 1, [(p.returncode, p.stdout, p.stderr) for p in procs]
    for p in procs:
        if p.returncode:
            assert "feat moved meanwhile" in p.stderr and f"expected {base}" in p.stderr, p.stderr
            assert "testing" not in p.stderr
    assert ic2("lookup_branch", repo, "feat")["snapshot_id"] == won[0]
    ic2("check", repo)
    # an unconditional-looking retry from a stale head is refused the same way
    stale = fork(targets[0] if won[0] != targets[0] else targets[1])
    assert stale.returncode == 1 and "moved meanwhile" in stale.stderr


def test_icechunk_s3_matches_tether_vcs(s3, ic1, tether, ref, tmp_path):
    """A spec-1 repository icechunk 1.x writes on the bucket: tether and
    tether-vcs (its icechunk on the same server) record the same manifests
    and pin ids, log alike, and each reads the other's dataset."""
    url, client = s3
    repo = f"s3://{BUCKET}/v1/arr"
    ic1("create", repo)
    ic1("commit", repo, "main", "a1")
    roots = []
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = make_dataset(tmp_path / name, runner, url)
        runner("add", "arr", repo, "--kind", "icechunk", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    ic1("commit", repo, "main", "a2")
    for root, runner in zip(roots, (tether, ref)):
        runner("commit", "-m", "second", cwd=root)
    assert manifest(roots[0], "arr") == manifest(roots[1], "arr")
    for args in (("diff", "--content", "HEAD~1", "HEAD"), ("log", "arr"), ("verify",)):
        assert tether.json(*args, cwd=roots[0]) == ref.json(*args, cwd=roots[1]), args
    # each reads the other's dataset: clean
    assert tether("status", cwd=roots[1]).returncode == 0
    assert ref("status", cwd=roots[0]).returncode == 0
    assert tether.json("verify", cwd=roots[1]) == ref.json("verify", cwd=roots[0])
    ic1("check", repo)


def test_undo_removes_a_created_icechunk_store_on_s3(s3, tether, tmp_path):
    """`undo` of `add --create` deletes the repository's objects under its
    prefix, and only those: a neighbour prefix and a foreign key inside stay
    (the latter keeps the whole repository)."""
    url, client = s3
    ds = make_dataset(tmp_path / "ds", tether, url)
    client.put_object(Bucket=BUCKET, Key="made/other/keep.bin", Body=b"neighbour")
    tether("add", "new", f"s3://{BUCKET}/made/new", "--kind", "icechunk", "--create", cwd=ds)
    assert keys(client, "made/new/")
    tether("undo", cwd=ds)
    assert keys(client, "made/new/") == []
    assert keys(client, "made/other/") == ["made/other/keep.bin"]

    tether("add", "new", f"s3://{BUCKET}/made/two", "--kind", "icechunk", "--create", cwd=ds)
    client.put_object(Bucket=BUCKET, Key="made/two/notes.txt", Body=b"someone's")
    before = keys(client, "made/two/")
    out = tether.json("undo", cwd=ds, check=False)
    assert keys(client, "made/two/") == before
    assert "notes.txt" in json.dumps(out), out


@pytest.mark.parametrize("fault", [403, "drop", "expired"])
def test_icechunk_s3_store_refusals_are_named(s3, ic2, tether, tmp_path, fault):
    """The server refuses (403), dies, or says the token expired while the
    repository is read: the commit fails naming the repository's URI and
    the reason, never a key; nothing is pinned or recorded; once the
    server answers again the same commit succeeds."""
    from s3server import FaultProxy

    url, client = s3
    repo = f"s3://{BUCKET}/faults/arr"
    ic2("create", repo)
    s1 = ic2("commit", repo, "main", "a1")["snapshot_id"]
    proxy = FaultProxy(int(url.rsplit(":", 1)[1]))
    try:
        ds = make_dataset(tmp_path / "ds", tether, proxy.url)
        tether("add", "arr", repo, "--kind", "icechunk", cwd=ds)
        answer = {403: 403, "drop": "drop",
                  "expired": ("status", 400, "<Error><Code>ExpiredToken</Code><Message>The provided "
                              "token has expired.</Message></Error>")}[fault]
        proxy.hook = lambda m, p: answer
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ds, capture_output=True,
                              text=True).stdout
        proc = tether("commit", "-m", "first", cwd=ds, check=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1, out
        assert f"s3://{BUCKET}/" in out, out
        assert {403: "403", "drop": "failed after", "expired": "expired"}[fault] in out, out
        assert "testing" not in out, out
        assert "snapshot_id" not in (ds / ".tether/objects/arr.toml").read_text()
        assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=ds, capture_output=True,
                              text=True).stdout == head
        assert ic2("tags", repo)["names"] == []
        proxy.hook = None
        tether("commit", "-m", "first", cwd=ds)
        assert f'snapshot_id = "{s1}"' in manifest(ds, "arr")
    finally:
        proxy.close()


def test_racing_promotes_on_s3_exactly_one_wins(s3, ic2, tether, tmp_path):
    """Eight datasets fork one repository's main and promote at once: each
    promote moves main from the head its plan reviewed with If-Match, so
    exactly one lands; the others say main moved and leave it alone."""
    url, client = s3
    repo = f"s3://{BUCKET}/promote/arr"
    ic2("create", repo)
    base = ic2("commit", repo, "main", "a0")["snapshot_id"]
    dss, heads = [], []
    for i in range(8):
        ds_id = f"{i:08x}"
        ds = make_dataset(tmp_path / f"ds{i}", tether, url, ds_id)
        tether("add", "arr", repo, "--kind", "icechunk", cwd=ds)
        tether("commit", "-m", "first", cwd=ds)
        tether("new", "-b", "feat", "--eager", cwd=ds)
        heads.append(ic2("commit", repo, f"tether.ws.{ds_id}.feat", f"w{i}")["snapshot_id"])
        tether("commit", "-m", "fork work", cwd=ds)
        dss.append(ds)
    with ThreadPoolExecutor(8) as pool:
        procs = list(pool.map(lambda d: tether("promote", cwd=d, check=False), dss))
    won = [h for h, p in zip(heads, procs) if p.returncode == 0]
    assert len(won) == 1, [(p.returncode, p.stdout, p.stderr) for p in procs]
    assert ic2("lookup_branch", repo, "main")["snapshot_id"] == won[0]
    assert [e[0] for e in ic2("ancestry", repo, "main")["entries"]][1] == base
    for p in procs:
        if p.returncode:
            assert "moved" in p.stdout + p.stderr, p.stdout + p.stderr
    ic2("check", repo)


def test_gc_releases_tags_then_branches_on_s3(s3, ic2, tether, tmp_path, env):
    """A bookmark's commit dropped from history leaves its tag (on the
    working branch) unreferenced: gc deletes it, then the branch, each a
    conditional rewrite of the repo file icechunk 2.x reads back."""
    url, client = s3
    repo = f"s3://{BUCKET}/gc/arr"
    ic2("create", repo)
    s1 = ic2("commit", repo, "main", "a1")["snapshot_id"]
    ds = make_dataset(tmp_path / "ds", tether, url)
    git = lambda *a: run_git(*a, cwd=ds, env=env)  # noqa: E731
    tether("add", "arr", repo, "--kind", "icechunk", cwd=ds)
    first = tether.json("commit", "-m", "first", cwd=ds)["pinned"]["arr"]
    tether("new", "-b", "exp", "--eager", cwd=ds)
    branch = f"tether.ws.{DS}.exp"
    ic2("commit", repo, branch, "on-exp")
    second = tether.json("commit", "-m", "on the branch", cwd=ds)["pinned"]["arr"]
    assert sorted(ic2("tags", repo)["names"]) == sorted([first, second])
    git("checkout", "-q", "main")
    tether("new", "main", cwd=ds)
    git("branch", "-q", "-D", "exp")
    git("reflog", "expire", "--expire=now", "--all")
    git("gc", "-q", "--prune=now")
    tether("gc", "--prune-bookmarks", "--no-dry-run", "--release-foreign", cwd=ds)
    assert ic2("tags", repo)["names"] == [first]
    assert branch in ic2("branches", repo)["names"]
    tether("gc", "--prune-bookmarks", "--force-prune", "--no-dry-run", cwd=ds)
    assert ic2("branches", repo)["names"] == ["main"]
    assert ic2("lookup_tag", repo, first)["snapshot_id"] == s1
    ic2("check", repo)
