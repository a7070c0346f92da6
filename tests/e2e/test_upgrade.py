"""`upgrade` on datasets made by older tether-vcs releases, each installed
from PyPI into its own virtualenv in the per-machine tool cache
(~/.cache/tether-tools/tether-vcs-<version>, made once, then reused):
0.1.0b1-b3 datasets (version 4) come forward exactly as tether-vcs 0.1.0b7
brings them (same plan, same tether.toml, same journal record shape); one
already at version 5 is left alone; alpha datasets (versions 1 and 2) come
forward as 0.1.0b7 brings them too, their pre-namespace pins and working
branches renamed in the stores and their history rewritten."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import Runner, git

# Made once per machine, outside the checkout (a clean clone reuses them).
VENVS = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tether-tools"


def old_tether(version: str, extra: str | None = None, *packages: str) -> Path:
    """That release's CLI (with `extra` and the pinned `packages` beside it),
    installed under a lock (test workers share it) and marked done only once
    the install finished."""
    pinned = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:8] if packages else ""
    name = f"tether-vcs-{version}" + (f"-{extra}" if extra else "") + (f"-{pinned}" if pinned else "")
    venv = VENVS / name
    exe, done = venv / "bin" / "tether", VENVS / f"{name}.done"
    if done.exists() and exe.exists():
        return exe
    VENVS.mkdir(parents=True, exist_ok=True)
    with open(VENVS / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and exe.exists():
            return exe
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        extras = "cli" + (f",{extra}" if extra else "")
        proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                               f"tether-vcs[{extras}]=={version}", *packages],
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            msg = f"cannot install tether-vcs {version}: {proc.stderr[-500:]}"
            if "1" in (os.environ.get("TETHER_REQUIRE_JJ"), os.environ.get("TETHER_REQUIRE_TOOLS")):
                # under make check and CI: no silent skips
                pytest.fail(msg)
            pytest.skip(msg)
        done.touch()
    return exe


def made_by(version: str, tmp_path: Path, env, name: str = "ds") -> Path:
    """A dataset made by that release: one git object, one commit."""
    old = Runner(old_tether(version), env)
    store = tmp_path / f"store-{name}"
    store.mkdir()
    git("init", "-q", "-b", "main", cwd=store, env=env)
    (store / "a").write_text("1\n")
    git("add", "a", cwd=store, env=env)
    git("commit", "-q", "-m", "one", cwd=store, env=env)
    root = tmp_path / name
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    old("init", cwd=root)
    old("add", "code", str(store), "--kind", "git", cwd=root)
    old("commit", "-m", "first", cwd=root)
    return root


def twin(root: Path, tmp_path: Path, name: str) -> Path:
    """A copy of the dataset (same store) for the other implementation."""
    other = tmp_path / name
    shutil.copytree(root, other, symlinks=True)
    return other


def comparable(plan: dict) -> dict:
    return {k: v for k, v in plan.items() if k not in ("created_at", "digest")}


@pytest.mark.parametrize("version", ["0.1.0b1", "0.1.0b3"])
def test_version_4_dataset_comes_forward_as_tether_vcs_brings_it(tmp_path, env, tether, ref, version):
    ours = made_by(version, tmp_path, env)
    assert "version = 4" in (ours / "tether.toml").read_text()
    theirs = twin(ours, tmp_path, "theirs")
    # refused by every other command until upgraded
    st = tether("status", cwd=ours, check=False)
    assert st.returncode == 1 and "version 4" in st.stderr
    assert comparable(tether.json("upgrade", "--dry-run", cwd=ours)) == \
        comparable(ref.json("upgrade", "--dry-run", cwd=theirs))
    o, t = tether.json("upgrade", cwd=ours), ref.json("upgrade", cwd=theirs)
    assert o["from_version"] == t["from_version"] == 4 and o["to_version"] == t["to_version"] == 5
    assert {k: v for k, v in o.items() if k != "vcs_commit"} == {k: v for k, v in t.items() if k != "vcs_commit"}
    assert (ours / "tether.toml").read_text() == (theirs / "tether.toml").read_text()
    for root in (ours, theirs):
        assert git("log", "-1", "--format=%s", cwd=root, env=env).strip() == "tether upgrade: v4 -> v5"
        assert git("status", "--porcelain", cwd=root, env=env) == ""
    entries = [[json.loads(l) for l in (r / ".tether/ops.jsonl").read_text().splitlines()][-1]
               for r in (ours, theirs)]
    assert entries[0]["command"] == entries[1]["command"] == "upgrade"
    assert sorted(entries[0]) == sorted(entries[1])
    assert comparable(entries[0]["plan"]) == comparable(entries[1]["plan"])
    # the whole record: all but its id, time and the commit each side made
    same = lambda e: {**{k: v for k, v in e.items() if k not in ("id", "at", "plan")},
                      "result": {k: v for k, v in e["result"].items() if k != "vcs_commit"}}
    assert same(entries[0]) == same(entries[1])
    assert entries[0]["status"] == "done" and entries[0]["result"]["vcs_commit"]
    # the upgraded dataset works for both, and each verifies the other's pins
    tether("verify", cwd=theirs)
    ref("verify", cwd=ours)
    assert tether.json("status", cwd=ours)["stale"] is False


def test_current_dataset_is_left_alone(tmp_path, env, tether, ref):
    root = made_by("0.1.0b5", tmp_path, env)
    head = git("rev-parse", "HEAD", cwd=root, env=env)
    text = tether("upgrade", cwd=root).stdout
    assert text == ref("upgrade", cwd=root).stdout == "already at version 5\n"
    assert comparable(tether.json("upgrade", "--dry-run", cwd=root)) == \
        comparable(ref.json("upgrade", "--dry-run", cwd=root))
    assert git("rev-parse", "HEAD", cwd=root, env=env) == head


# --- crash points ----------------------------------------------------------------


@pytest.mark.parametrize("point", ["upgrade:after-config", "upgrade:after-vcs-commit"])
def test_killed_upgrade_rerun_finishes_it(tmp_path, env, tether, ref, point):
    root = made_by("0.1.0b3", tmp_path, env)
    killed = tether("upgrade", cwd=root, check=False, env={**env, "TETHER_FAULT": point})
    assert killed.returncode == -9, killed
    assert "version = 5" in (root / "tether.toml").read_text()
    out = tether.json("upgrade", cwd=root)
    if point == "upgrade:after-config":
        # the rerun lands the commit the kill stopped, and journals it
        assert out["from_version"] == 4 and out["vcs_commit"]
        last = json.loads((root / ".tether/ops.jsonl").read_text().splitlines()[-1])
        assert last["command"] == "upgrade" and last["result"]["vcs_commit"] == out["vcs_commit"]
    else:
        assert out["from_version"] == 5 and out.get("vcs_commit") is None
    assert git("log", "-1", "--format=%s", cwd=root, env=env).strip() == "tether upgrade: v4 -> v5"
    assert git("status", "--porcelain", cwd=root, env=env) == ""
    assert tether("upgrade", cwd=root).stdout == "already at version 5\n"
    tether("verify", cwd=root)
    ref("verify", cwd=root)


# --- the parts: each dataset comes forward as tether-vcs 0.1.0b7 brings its twin ---------


def same_upgrade(tether, ref, ours: Path, theirs: Path, env) -> tuple[dict, dict]:
    """Plan and apply on both twins; everything each writes must agree."""
    po, pt = tether.json("upgrade", "--dry-run", cwd=ours), ref.json("upgrade", "--dry-run", cwd=theirs)
    assert comparable(po) == comparable(pt)
    o, t = tether.json("upgrade", cwd=ours), ref.json("upgrade", cwd=theirs)
    assert {k: v for k, v in o.items() if k != "vcs_commit"} == {k: v for k, v in t.items() if k != "vcs_commit"}
    for rel in (".tether/objects", ".tether/listings"):
        a, b = ours / rel, theirs / rel
        files = lambda d: {p.relative_to(d).as_posix(): p.read_text() for p in d.rglob("*") if p.is_file()} \
            if d.is_dir() else {}
        assert files(a) == files(b), rel
    for rel in ("tether.toml", ".tether/workspace.toml"):
        assert (ours / rel).read_text() == (theirs / rel).read_text(), rel
    for name in ("tether-touched.jsonl", "tether-created.jsonl"):
        a, b = ours / ".git" / name, theirs / ".git" / name
        assert (a.read_text() if a.exists() else None) == (b.read_text() if b.exists() else None), name
    entries = [json.loads((r / ".tether/ops.jsonl").read_text().splitlines()[-1]) for r in (ours, theirs)]
    assert entries[0]["command"] == entries[1]["command"] == "upgrade"
    assert sorted(entries[0]) == sorted(entries[1])
    assert comparable(entries[0]["plan"]) == comparable(entries[1]["plan"])
    assert entries[0]["result"]["rewritten_manifests"] == entries[1]["result"]["rewritten_manifests"]
    for root in (ours, theirs):
        assert git("log", "-1", "--format=%s", cwd=root, env=env).strip().startswith("tether upgrade: v")
        assert git("status", "--porcelain", cwd=root, env=env) == ""
    return pt, o


def b3_identities(tmp_path: Path, env) -> Path:
    """A 0.1.0b3 dataset holding what 0.1.0b4 records otherwise: a directory
    with symlinks (0.1.0b3 left them out of its state), a directory named by
    a `file://` URI with a trailing slash through a symlinked parent (its
    identity, and so its listing's name, changed), and a touched-store record
    in the spellings 0.1.0b3 gave such a store."""
    old = Runner(old_tether("0.1.0b3"), env)
    real = tmp_path / "real"
    (real / "links" / "sub").mkdir(parents=True)
    (real / "links" / "x").write_text("x\n")
    (real / "links" / "sub" / "y").write_text("y\n")
    os.symlink("sub", real / "links" / "to-sub")
    os.symlink("x", real / "links" / "to-x")
    (real / "spelled" / "s").mkdir(parents=True)
    (real / "spelled" / "a").write_text("a\n")
    (real / "spelled" / "s" / "b").write_text("b\n")
    os.symlink(real, tmp_path / "via")
    root = tmp_path / "ds"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    old("init", cwd=root)
    old("add", "links", str(real / "links"), "--kind", "file", cwd=root)
    uri = f"file://{tmp_path}/via/spelled/"
    old("add", "spelled", uri, "--kind", "file", cwd=root)
    old("commit", "-m", "first", cwd=root)
    ds = (root / "tether.toml").read_text().split('id = "')[1][:8]
    with (root / ".git" / "tether-touched.jsonl").open("a") as f:
        for spelling in (uri, f"{tmp_path}/via/spelled"):
            f.write(json.dumps({"dataset_id": ds, "kind": "file", "identity": {"uri": spelling},
                                "locator": {"uri": spelling}, "key": "spelled",
                                "at": "2026-01-01T00:00:00+00:00"}) + "\n")
    return root


def test_b3_identities_and_states_come_forward_as_tether_vcs_brings_them(tmp_path, env, tether, ref):
    ours = b3_identities(tmp_path, env)
    theirs = twin(ours, tmp_path, "theirs")
    plan, out = same_upgrade(tether, ref, ours, theirs, env)
    ops = [(a["op"], a["key"] or a["target"]) for a in plan["actions"]]
    assert ("rewrite-index", "tether-touched.jsonl") in ops
    assert ("rewrite-state", "links") in ops
    assert [op for op, _ in ops].count("copy-listing") == 1
    assert out["rewritten_manifests"] == ["links"] and out["rewritten_indexes"] == {"tether-touched.jsonl": 2}
    assert len(out["copied_listings"]) == 1
    # one record per store now, under the identity the store has today
    records = [json.loads(l) for l in (ours / ".git/tether-touched.jsonl").read_text().splitlines()]
    assert [r["identity"] for r in records] == [{"uri": str((tmp_path / "real/spelled").resolve())}]
    # the directory reads unchanged (not modified) for both, and each verifies the other's
    for runner in (tether, ref):
        for root in (ours, theirs):
            runner("verify", cwd=root)
    st = tether.json("status", cwd=ours)
    assert st["stale"] is False
    assert "links" not in json.dumps(st.get("modified", st.get("changed", [])))
    assert tether("diff", "--content", "HEAD~1", "HEAD", cwd=ours, check=False).returncode in (0, 1)



def alpha_v2(tmp_path: Path, env, dotted: bool = False) -> Path:
    """A dataset 0.1.0a8 made (tether.toml version 2: dataset-namespaced pins
    already): local files by relative path with mtime states, manifests with
    a write policy, a workspace from before bookmarks, a pinned git store;
    with `dotted`, a key with a dot in its last segment, which 0.1.0a8 kept in
    the file of the key before the dot."""
    old = Runner(old_tether("0.1.0a8"), env)
    (tmp_path / "files" / "d").mkdir(parents=True)
    (tmp_path / "files" / "one.txt").write_text("one\n")
    (tmp_path / "files" / "d" / "x").write_text("x\n")
    store = tmp_path / "store"
    store.mkdir()
    git("init", "-q", "-b", "main", cwd=store, env=env)
    (store / "a").write_text("1\n")
    git("add", "a", cwd=store, env=env)
    git("commit", "-q", "-m", "one", cwd=store, env=env)
    root = tmp_path / "ds"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    old("init", cwd=root)
    old("add", "one", "../files/one.txt", "--kind", "file", cwd=root)
    if dotted:
        old("add", "d.x", "../files/d", "--kind", "file", cwd=root)
    old("add", "code", "../store", "--kind", "git", cwd=root)
    old("commit", "-m", "first", cwd=root)
    assert "version = 2" in (root / "tether.toml").read_text()
    assert 'write = "fork"' in (root / ".tether/objects/one.toml").read_text()
    assert "mtime_ns" in (root / ".tether/objects/one.toml").read_text()
    return root


def test_alpha_v2_dataset_comes_forward_as_tether_vcs_brings_it(tmp_path, env, tether, ref):
    ours = alpha_v2(tmp_path, env)
    theirs = twin(ours, tmp_path, "theirs")
    plan, out = same_upgrade(tether, ref, ours, theirs, env)
    assert plan["context"]["parts"] == ["content-hashed file states; no write policy",
                                        "one manifest file per key; absolute local paths",
                                        "0.1.0b3 identities and states"]
    ops = {(a["op"], a["key"]) for a in plan["actions"]}
    assert {("rewrite-manifest", "one"), ("rewrite-manifest", "code"), ("refingerprint", "one"),
            ("rewrite-locator", "one"), ("rewrite-locator", "code")} <= ops
    assert out["refingerprinted"] == ["one"]
    text = (ours / ".tether/objects/one.toml").read_text()
    assert "write =" not in text and "mtime_ns" not in text and "sha256" in text
    assert f'uri = "{tmp_path / "files" / "one.txt"}"' in text
    assert 'bookmark = "main"' in (ours / ".tether/workspace.toml").read_text()
    st = tether("status", cwd=ours).stdout
    assert "clean  one" in st and "clean  code" in st
    tether("verify", cwd=theirs)
    ref("verify", cwd=ours)


def test_alpha_dotted_key_moves_to_its_own_file(tmp_path, env, tether, ref):
    """tether-vcs 0.1.0b7 writes the rehashed `d.x` at d.x.toml before its v4
    part moves d.toml there, then stops on the collision it made itself (with
    both files left in the tree).  This build writes the rehashed manifest
    where it is read from, so the move that follows lands it."""
    ours = alpha_v2(tmp_path, env, dotted=True)
    assert (ours / ".tether/objects/d.toml").exists() and not (ours / ".tether/objects/d.x.toml").exists()
    theirs = twin(ours, tmp_path, "theirs")
    po, pt = tether.json("upgrade", "--dry-run", cwd=ours), ref.json("upgrade", "--dry-run", cwd=theirs)
    assert comparable(po) == comparable(pt)
    assert ("rename-manifest", "d.x", ".tether/objects/d.x.toml") in \
        [(a["op"], a["key"], a["target"]) for a in po["actions"]]
    stopped = ref("upgrade", cwd=theirs, check=False)
    assert stopped.returncode == 1 and "already exists; a key collided here before v4" in stopped.stderr
    out = tether.json("upgrade", cwd=ours)
    assert out["refingerprinted"] == ["d.x", "one"] and "d.x" in out["rewritten_manifests"]
    assert not (ours / ".tether/objects/d.toml").exists()
    assert 'key = "d.x"' in (ours / ".tether/objects/d.x.toml").read_text()
    assert git("status", "--porcelain", cwd=ours, env=env) == ""
    assert "clean  d.x" in tether("status", cwd=ours).stdout
    ref("verify", cwd=ours)
    assert "d.x" in ref("status", cwd=ours).stdout


def test_killed_upgrade_mid_parts_rerun_finishes_it(tmp_path, env, tether, ref):
    point = "upgrade:after-parts"
    ours = alpha_v2(tmp_path, env)
    theirs = twin(ours, tmp_path, "theirs")
    killed = tether("upgrade", cwd=ours, check=False, env={**env, "TETHER_FAULT": point})
    assert killed.returncode == -9, killed
    assert "version = 2" in (ours / "tether.toml").read_text()
    assert git("status", "--porcelain", cwd=ours, env=env) != ""  # the parts wrote, nothing committed
    out = tether.json("upgrade", cwd=ours)
    assert out["from_version"] == 2 and out["vcs_commit"]
    ref("upgrade", cwd=theirs)
    for rel in (".tether/objects/one.toml", ".tether/objects/code.toml", "tether.toml"):
        assert (ours / rel).read_text() == (theirs / rel).read_text()
    assert git("status", "--porcelain", cwd=ours, env=env) == ""
    assert not (ours / ".tether/cache/upgrade-interrupted").exists()
    assert tether("upgrade", cwd=ours).stdout == "already at version 5\n"
    ref("verify", cwd=ours)


def test_b3_relative_ducklake_path_is_made_absolute_as_tether_vcs_does(tmp_path, env, tether, ref):
    """0.1.0b3 kept a DuckLake catalog path as typed (`ducklake:../lake/...`),
    which each directory read differently; the upgrade resolves it against
    the dataset root."""
    exe = old_tether("0.1.0b3", "ducklake", "duckdb==1.5.5", "duckdb-extension-ducklake==1.5.5")
    lake = tmp_path / "lake"
    lake.mkdir()
    from test_ducklake_backend import connect  # the extensions, from the wheels into HOME
    con = connect(Path(env["HOME"]))
    con.execute(f"ATTACH 'ducklake:{lake / 'cat.ducklake'}' AS l (DATA_PATH '{lake / 'data'}')")
    con.execute("CREATE TABLE l.t(a INT)")
    con.execute("INSERT INTO l.t VALUES (1)")
    con.close()
    old = Runner(exe, env)
    ours = tmp_path / "ds"
    ours.mkdir()
    git("init", "-q", "-b", "main", cwd=ours, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ours, env=env)
    old("init", cwd=ours)
    old("add", "lake", "ducklake:../lake/cat.ducklake", "--kind", "ducklake", cwd=ours)
    old("commit", "-m", "first", cwd=ours)
    assert 'uri = "ducklake:../lake/cat.ducklake"' in (ours / ".tether/objects/lake.toml").read_text()
    theirs = twin(ours, tmp_path, "theirs")
    plan, out = same_upgrade(tether, ref, ours, theirs, env)
    assert [(a["op"], a["key"]) for a in plan["actions"]] == [("rewrite-locator", "lake"), ("vcs-commit", "")]
    assert out["rewritten_manifests"] == ["lake"]
    assert f'uri = "ducklake:{lake / "cat.ducklake"}"' in (ours / ".tether/objects/lake.toml").read_text()
    assert "clean  lake" in tether("status", cwd=ours).stdout
    ref("verify", cwd=ours)
    tether("verify", cwd=theirs)


def test_b3_lance_state_off_main_gets_its_branch_id_as_tether_vcs_gives_it(tmp_path, env, tether, ref):
    """0.1.0b3 recorded a Lance state on a branch other than main without the
    branch's id, which 0.1.0b4 records (a branch deleted and made again under
    its name is another branch); the data being unchanged, the upgrade
    carries the state forward."""
    lance = pytest.importorskip("lance")
    pa = pytest.importorskip("pyarrow")
    exe = old_tether("0.1.0b3", "lance", "pylance==14.0.2", "pyarrow==26.0.1")
    uri = tmp_path / "t.lance"
    ds = lance.write_dataset(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), str(uri))
    ds.create_branch("dev", ds.version)
    dev = lance.dataset(str(uri)).checkout_version(("dev", None))
    lance.write_dataset(pa.table({"x": pa.array([4], pa.int64())}), dev, mode="append")
    old = Runner(exe, env)
    ours = tmp_path / "ds"
    ours.mkdir()
    git("init", "-q", "-b", "main", cwd=ours, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ours, env=env)
    old("init", cwd=ours)
    old("add", "t", str(uri), "--kind", "lance", "--branch", "dev", cwd=ours)
    old("commit", "-m", "first", cwd=ours)
    assert "branch_id" not in (ours / ".tether/objects/t.toml").read_text()
    theirs = twin(ours, tmp_path, "theirs")
    plan, out = same_upgrade(tether, ref, ours, theirs, env)
    assert [(a["op"], a["key"]) for a in plan["actions"]] == [("rewrite-state", "t"), ("vcs-commit", "")]
    assert out["rewritten_manifests"] == ["t"]
    assert "branch_id" in (ours / ".tether/objects/t.toml").read_text()
    assert "clean  t" in tether("status", cwd=ours).stdout
    ref("verify", cwd=ours)
    tether("verify", cwd=theirs)


# --- alpha datasets from before the dataset namespace (version 1) ----------------


def alpha_v1(version: str, where: Path, env) -> Path:
    """A dataset that release made (tether.toml version 1: no dataset id,
    pins named `tether.<hash>`), with its stores inside `where` so a copy
    put back at the same path is the same dataset: a git store pinned by two
    commits, `new`'s working branch `tether.ws.<ws8>.<key>` (0.1.0a7:
    `...<key>-<key6>`) in it, and a
    local file by relative path."""
    old = Runner(old_tether(version), env)
    store = where / "store"
    store.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=store, env=env)
    (store / "a").write_text("1\n")
    git("add", "a", cwd=store, env=env)
    git("commit", "-q", "-m", "one", cwd=store, env=env)
    (where / "files").mkdir()
    (where / "files" / "one.txt").write_text("one\n")
    root = where / "ds"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=root, env=env)
    old("init", cwd=root)
    old("add", "code", str(store), "--kind", "git", cwd=root)
    old("add", "one", "../files/one.txt", "--kind", "file", cwd=root)
    old("commit", "-m", "first", cwd=root)
    (store / "a").write_text("2\n")
    git("commit", "-q", "-am", "two", cwd=store, env=env)
    old("commit", "-m", "second", cwd=root)
    old("new", *(["--eager"] if version >= "0.1.0a7" else []), cwd=root)  # a7 forks lazily by default
    text = (root / "tether.toml").read_text()
    assert "version = 1" in text and "[dataset]" not in text
    return root


def snapshot(root: Path, env) -> dict:
    """What an upgrade writes, read without tether: files, store refs,
    the dataset's history (messages, authors, dates and manifest texts)."""
    files = lambda d: {p.relative_to(d).as_posix(): p.read_text() for p in sorted(d.rglob("*")) if p.is_file()} \
        if d.is_dir() else {}
    last = json.loads((root / ".tether/ops.jsonl").read_text().splitlines()[-1])
    return {
        "objects": files(root / ".tether/objects"),
        "listings": files(root / ".tether/listings"),
        "tether.toml": (root / "tether.toml").read_text(),
        "workspace.toml": (root / ".tether/workspace.toml").read_text(),
        "store": git("for-each-ref", "--format=%(refname) %(objectname)", cwd=root.parent / "store", env=env),
        "history": git("log", "--all", "-p", "--format=%s|%an|%ae|%ad|%cd|%B", "--", ".",
                       # (this build also ignores its temporary files there)
                       ":!.tether/.gitignore", cwd=root, env=env),
        "status": git("status", "--porcelain", cwd=root, env=env),
        "journal": {"command": last["command"], "keys": sorted(last), "plan": comparable(last["plan"]),
                    "result": {k: v for k, v in last["result"].items() if k not in ("vcs_commit", "rewritten_commits")},
                    "rewritten": sorted(last["result"]["rewritten_commits"])},
    }


def renamed(value, ours: str, theirs: str):
    """value with dataset id `ours` spelled `theirs` (each side draws its own)."""
    return json.loads(json.dumps(value).replace(ours, theirs))


@pytest.mark.parametrize("version", ["0.1.0a5", "0.1.0a7"])
def test_alpha_v1_dataset_comes_forward_as_tether_vcs_brings_it(tmp_path, env, tether, ref, version):
    where = tmp_path / "alpha"
    alpha_v1(version, where, env)
    pristine = tmp_path / "pristine"
    shutil.copytree(where, pristine, symlinks=True)
    root = where / "ds"
    old_tags = git("tag", "--list", "tether.*", cwd=where / "store", env=env).split()
    old_branch = git("branch", "--list", "tether.ws.*", "--format=%(refname:short)", cwd=where / "store", env=env).strip()
    assert len(old_tags) == 2 and old_branch

    sides = {}
    for name, runner in (("theirs", ref), ("ours", tether)):
        if name == "ours":  # the same dataset, back at the same path
            shutil.move(str(where), str(tmp_path / "by-ref"))
            shutil.copytree(pristine, where, symlinks=True)
        plan = runner.json("upgrade", "--dry-run", cwd=root)
        text = runner("upgrade", "--dry-run", cwd=root).stdout
        out = runner.json("upgrade", cwd=root)
        ds = tomllib.loads((root / "tether.toml").read_text())["dataset"]["id"]
        sides[name] = (plan, text, out, snapshot(root, env), ds)
    (pt, tt, t, st, tid), (po, to, o, so, oid) = sides["theirs"], sides["ours"]
    assert po["context"]["parts"][0] == "dataset-namespaced refs"
    assert {a["op"] for a in po["actions"]} >= {"rename-pin", "rename-branch", "rewrite-history"}
    assert comparable(renamed(po, po["context"]["dataset_id"], pt["context"]["dataset_id"])) == comparable(pt)
    # the text plan: the same lines, each side with the fresh id its dry run drew
    ids = lambda text: __import__("re").sub(r"\b[0-9a-f]{8}\b", "<id>", text)
    assert ids(to) == ids(tt)
    assert renamed({k: v for k, v in o.items() if k not in ("vcs_commit", "rewritten_commits")}, oid, tid) == \
        {k: v for k, v in t.items() if k not in ("vcs_commit", "rewritten_commits")}
    assert sorted(o["rewritten_commits"]) == sorted(t["rewritten_commits"]) and len(o["rewritten_commits"]) == 2
    ours_snap = renamed(so, oid, tid)
    # commit ids differ (the manifests they hold name each side's dataset id); everything else agrees
    # (and the upgrade's own commit is made at its own moment)
    strip = lambda h: "\n".join(l.split("|")[0] if l.startswith("tether upgrade:") else l
                                 for l in h.splitlines() if not l.startswith("index "))
    ours_snap["history"], st["history"] = strip(ours_snap["history"]), strip(st["history"])
    ours_snap["store"] = sorted(l.split()[0] for l in ours_snap["store"].splitlines())
    st["store"] = sorted(l.split()[0] for l in st["store"].splitlines())
    assert ours_snap == st
    # old refs are gone from the store, under their namespaced names now
    tags = git("tag", "--list", "tether.*", cwd=where / "store", env=env).split()
    assert len(tags) == 2 and not set(tags) & set(old_tags) and all(t.startswith(f"tether.{oid}.") for t in tags)
    branches = git("branch", "--list", "tether.ws.*", "--format=%(refname:short)", cwd=where / "store", env=env).split()
    assert branches == [o["renamed_branches"][old_branch]] and branches[0].startswith(f"tether.ws.{oid}.")
    assert so["status"] == ""
    # both implementations work on what ours made
    ref("verify", cwd=root)
    tether("verify", cwd=root)
    assert "clean  code" in tether("status", cwd=root).stdout
    assert tether("upgrade", cwd=root).stdout == "already at version 5\n"


def test_alpha_rename_that_fails_stops_before_any_rewrite(tmp_path, env, tether, ref):
    """A store rename that cannot be made stops the upgrade before history
    or a manifest is rewritten (only the dataset id the renames are made
    under is kept, as tether-vcs 0.1.0b7 keeps it); the renames that did
    happen are journalled, and the rerun once the cause is gone skips them."""
    root = alpha_v1("0.1.0a5", tmp_path / "alpha", env)
    store = root.parent / "store"
    saved = tmp_path / "plan.json"
    tether("upgrade", "--plan", str(saved), cwd=root)
    plan = json.loads(saved.read_text())
    renames = sorted((a for a in plan["actions"] if a["op"] == "rename-pin"), key=lambda a: a["target"])
    assert len(renames) == 2 and any(a["op"] == "rewrite-history" for a in plan["actions"])
    blocked, other = renames
    # the new name of one pin already names another commit in the store
    elsewhere = [c for c in git("rev-list", "main", cwd=store, env=env).split()
                 if c != blocked["params"]["state"]["sha"]][0]
    git("tag", blocked["target"], elsewhere, cwd=store, env=env)
    files = lambda: {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                     if p.is_file() and ".git/" not in p.as_posix() and "/cache/" not in p.as_posix()
                     and p.name not in ("ops.jsonl", "lock")}
    before, head = files(), git("rev-parse", "HEAD", cwd=root, env=env)
    p = tether("upgrade", "--from-plan", str(saved), cwd=root, check=False)
    assert p.returncode == 1, p
    assert "upgrade stopped before rewriting history: 1 store rename(s) failed" in p.stderr
    assert f"rename-pin {blocked['params']['old']['ref']}" in p.stderr
    after = files()
    cfg = after.pop("tether.toml").decode()
    assert f'[dataset]\nid = "{plan["context"]["dataset_id"]}"' in cfg and "version = 1" in cfg
    before.pop("tether.toml")
    assert after == before and git("rev-parse", "HEAD", cwd=root, env=env) == head
    tags = git("tag", "--list", "tether.*", cwd=store, env=env).split()
    assert blocked["params"]["old"]["ref"] in tags and other["target"] in tags
    assert other["params"]["old"]["ref"] not in tags
    last = json.loads((root / ".tether/ops.jsonl").read_text().splitlines()[-1])
    assert last["command"] == "upgrade" and last["result"]["stopped"] is True
    assert last["result"]["renamed_pins"] == {other["params"]["old"]["ref"]: other["target"]}
    assert not (root / ".tether/cache/upgrade-interrupted").exists()  # no manifest was touched
    # the cause gone, a fresh upgrade finishes under the same id
    git("tag", "-d", blocked["target"], cwd=store, env=env)
    out = tether.json("upgrade", cwd=root)
    assert out["renamed_pins"] == {blocked["params"]["old"]["ref"]: blocked["target"]}
    assert sorted(git("tag", "--list", "tether.*", cwd=store, env=env).split()) == \
        sorted([blocked["target"], other["target"]])
    assert git("status", "--porcelain", cwd=root, env=env) == ""
    ref("verify", cwd=root)
    tether("verify", cwd=root)


def test_alpha_v1_jj_dataset_comes_forward_as_tether_vcs_brings_it(tmp_path, env, jj_bin, tether, ref):
    """On a colocated jj dataset 0.1.0a5 made, the history rewrite is jj's
    (a child of each change holding the new manifests, squashed into it:
    the change ids stay): ours and tether-vcs 0.1.0b7's agree on the same
    dataset put back at the same path."""
    jenv = {**env, "PATH": f"{jj_bin.parent}{os.pathsep}{env.get('PATH', '')}", "JJ_USER": "Test",
            "JJ_EMAIL": "test@example.com", "JJ_CONFIG": str(tmp_path / "jjconfig.toml")}
    jj = lambda *a, cwd: subprocess.run([str(jj_bin), "--no-pager", *a], cwd=str(cwd), env=jenv, check=True,
                                        capture_output=True, text=True).stdout
    old = Runner(old_tether("0.1.0a5"), jenv)
    where = tmp_path / "alpha"
    store, root = where / "store", where / "ds"
    store.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=store, env=env)
    (store / "a").write_text("1\n")
    git("add", "a", cwd=store, env=env)
    git("commit", "-q", "-m", "one", cwd=store, env=env)
    root.mkdir()
    jj("git", "init", "--colocate", cwd=root)
    old("init", cwd=root)
    old("add", "code", str(store), "--kind", "git", cwd=root)
    old("commit", "-m", "first", cwd=root)
    (store / "a").write_text("2\n")
    git("commit", "-q", "-am", "two", cwd=store, env=env)
    old("commit", "-m", "second", cwd=root)
    assert "version = 1" in (root / "tether.toml").read_text()
    pristine = tmp_path / "pristine"
    shutil.copytree(where, pristine, symlinks=True)
    log = lambda: jj("log", "--no-graph", "-r", "::@- ~ root()", "-T",
                     'change_id ++ " " ++ description.first_line() ++ "\\n"', cwd=root).splitlines()

    sides = {}
    for name, exe in (("theirs", ref.exe), ("ours", tether.exe)):
        if name == "ours":
            shutil.move(str(where), str(tmp_path / "by-ref"))
            shutil.copytree(pristine, where, symlinks=True)
        runner = Runner(exe, jenv, check_json=name == "ours")
        plan = runner.json("upgrade", "--dry-run", cwd=root)
        out = runner.json("upgrade", cwd=root)
        ds = tomllib.loads((root / "tether.toml").read_text())["dataset"]["id"]
        changes = log()
        history = {c.split()[0]: jj("file", "show", "-r", c.split()[0], "root:.tether/objects/code.toml", cwd=root)
                   for c in changes}
        files = {rel: (root / rel).read_text() for rel in ("tether.toml", ".tether/objects/code.toml",
                                                          ".tether/workspace.toml")}
        tags = sorted(git("tag", "--list", "tether.*", cwd=store, env=env).split())
        sides[name] = renamed((plan, out, changes, history, files, tags), ds, "<id>"), \
            jj("diff", "--summary", "-r", "@", cwd=root)
        sides[name] = (sides[name][0], sides[name][1], plan["context"]["dataset_id"])
    (t, t_wc, t_plan_id), (o, o_wc, o_plan_id) = sides["theirs"], sides["ours"]
    (pt, tout, tchanges, thist, tfiles, ttags), (po, oout, ochanges, ohist, ofiles, otags) = t, o
    assert comparable(renamed(po, o_plan_id, t_plan_id)) == comparable(renamed(pt, t_plan_id, t_plan_id))
    assert "rewrite-history" in {a["op"] for a in po["actions"]}
    drop = lambda r: {k: v for k, v in r.items() if k not in ("vcs_commit", "rewritten_commits")}
    assert drop(oout) == drop(tout) and len(oout["rewritten_commits"]) == len(tout["rewritten_commits"]) >= 2
    assert ochanges == tchanges and ochanges[0].endswith("tether upgrade: v1 -> v5")
    assert ohist == thist and ofiles == tfiles and otags == ttags and len(otags) == 2
    assert o_wc == t_wc == ""  # the working copy holds nothing left over
    assert all(f'"tether.<id>.' in text for text in ohist.values() if "[pin]" in text)
    Runner(ref.exe, jenv)("verify", cwd=root)
    Runner(tether.exe, jenv)("verify", cwd=root)


@pytest.mark.parametrize("point", ["upgrade:after-renames", "upgrade:after-history"])
def test_killed_alpha_upgrade_rerun_lands_what_tether_vcs_lands(tmp_path, env, tether, ref, point):
    """Killed after the store renames, or after the history rewrite, the
    rerun finishes: the dataset then holds what tether-vcs 0.1.0b7's
    uninterrupted upgrade of the same dataset holds."""
    where = tmp_path / "alpha"
    root = alpha_v1("0.1.0a5", where, env)
    pristine = tmp_path / "pristine"
    shutil.copytree(where, pristine, symlinks=True)
    ref("upgrade", cwd=root)
    theirs = snapshot(root, env)
    tid = tomllib.loads((root / "tether.toml").read_text())["dataset"]["id"]
    shutil.move(str(where), str(tmp_path / "by-ref"))
    shutil.copytree(pristine, where, symlinks=True)
    killed = tether("upgrade", cwd=root, check=False, env={**env, "TETHER_FAULT": point})
    assert killed.returncode == -9, killed
    assert "version = 1" in (root / "tether.toml").read_text()
    out = tether.json("upgrade", cwd=root)
    assert out["from_version"] == 1 and out["vcs_commit"]
    oid = tomllib.loads((root / "tether.toml").read_text())["dataset"]["id"]
    ours = renamed(snapshot(root, env), oid, tid)
    strip = lambda h: "\n".join(l.split("|")[0] if l.startswith("tether upgrade:") else l
                                 for l in h.splitlines() if not l.startswith("index "))
    for k in ("objects", "listings", "tether.toml", "workspace.toml", "status"):
        assert ours[k] == theirs[k], k
    assert strip(ours["history"]) == strip(theirs["history"])
    names = lambda s: sorted(l.split()[0] for l in s.splitlines())
    assert names(ours["store"]) == names(theirs["store"])
    assert tether("upgrade", cwd=root).stdout == "already at version 5\n"
    ref("verify", cwd=root)
