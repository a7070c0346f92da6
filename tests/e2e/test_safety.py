"""tether never reads or writes outside the dataset, never commits what a
crash left, and refuses meaningless input: committed directory symlinks,
the temporaries of a killed write, limits out of range, keys and paths that
would be tether's own files, a journal line too deep to read."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import git


@pytest.fixture
def store(tmp_path: Path) -> Path:
    s = tmp_path / "store"
    s.mkdir()
    (s / "a.txt").write_text("one\n")
    return s


@pytest.fixture
def dataset(git_repo, tether, env, store):
    tether("init", "--dataset-id", "0a1b2c3d", cwd=git_repo)
    tether("add", "files", str(store), "--kind", "file", "--file", "versioned", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    return git_repo


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (links not followed), with its bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if rel.startswith(".git/") or name == "lock":
                continue
            out[rel] = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
    return out


def tracked(root: Path, env) -> list[str]:
    return git("ls-tree", "-r", "--name-only", "HEAD", cwd=root, env=env).split()


# --- committed directory symlinks (nothing read or written through them) ------------

LINKED = [".tether", ".tether/objects", ".tether/listings", ".tether/cache"]


def link_out(dataset: Path, rel: str, outside: Path) -> None:
    """Replace dataset/rel with a link to a copy of it at outside, as a
    hostile commit would bring it."""
    src = dataset / rel
    if src.exists():
        shutil.copytree(src, outside)
        shutil.rmtree(src)
    else:
        outside.mkdir()
    os.symlink(outside, src)


@pytest.mark.parametrize("rel", LINKED)
@pytest.mark.parametrize("cmd", [("status", "--snapshot"), ("add", "more", "{store}", "--kind", "file"),
                                 ("commit", "-m", "second"), ("status",)])
def test_directory_symlink_refused(dataset, tether, store, tmp_path, rel, cmd):
    (store / "a.txt").write_text("changed, and longer\n")
    outside = tmp_path / "elsewhere"
    link_out(dataset, rel, outside)
    before_out, before_ds = tree(outside), tree(dataset)
    proc = tether(*(c.format(store=store) for c in cmd), cwd=dataset, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"error: {rel} is a symbolic link"), proc.stderr
    assert "hint: " in proc.stderr
    assert tree(outside) == before_out
    assert tree(dataset) == before_ds


def test_committed_symlink_in_a_clone_refused(dataset, tether, env, tmp_path):
    """The hostile case end to end: a commit replaces .tether/objects with a
    link to a directory of the clone's machine; the clone refuses it."""
    outside = tmp_path / "victim"
    outside.mkdir()
    shutil.rmtree(dataset / ".tether/objects")
    os.symlink(outside, dataset / ".tether/objects")
    git("add", "-A", ".tether", cwd=dataset, env=env)
    git("commit", "-q", "-m", "hostile", cwd=dataset, env=env)
    clone = tmp_path / "clone"
    git("clone", "-q", str(dataset), str(clone), cwd=tmp_path, env=env)
    assert (clone / ".tether/objects").is_symlink()
    proc = tether("add", "x", str(tmp_path), "--kind", "file", cwd=clone, check=False)
    assert proc.returncode == 1
    assert ".tether/objects is a symbolic link" in proc.stderr
    assert list(outside.iterdir()) == []


def test_symlinked_tether_toml_refused(dataset, tether, tmp_path):
    outside = tmp_path / "conf.toml"
    shutil.copy(dataset / "tether.toml", outside)
    (dataset / "tether.toml").unlink()
    os.symlink(outside, dataset / "tether.toml")
    proc = tether("status", cwd=dataset, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: tether.toml is a symbolic link")


def test_symlinked_per_checkout_file_refused(dataset, tether, tmp_path):
    """A link at a per-checkout file (the journal, the lock) would have tether
    append to or create a file elsewhere."""
    outside = tmp_path / "journal"
    shutil.copy(dataset / ".tether/ops.jsonl", outside)
    (dataset / ".tether/ops.jsonl").unlink()
    os.symlink(outside, dataset / ".tether/ops.jsonl")
    before = outside.read_bytes()
    proc = tether("set", "files", "--pin", "record", cwd=dataset, check=False)
    assert proc.returncode == 1
    assert ".tether/ops.jsonl is a symbolic link" in proc.stderr
    assert outside.read_bytes() == before


def test_init_refuses_a_symlinked_tether_dir(git_repo, tether, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, git_repo / ".tether")
    proc = tether("init", cwd=git_repo, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: .tether is a symbolic link")
    assert list(outside.iterdir()) == []
    assert not (git_repo / "tether.toml").exists()


def test_symlinked_listing_refused(dataset, tether, store, tmp_path, env):
    """diff --content reads the working tree's listings: a link there would
    show a file from elsewhere."""
    listings = sorted((dataset / ".tether/listings").iterdir())
    secret = tmp_path / "secret"
    secret.write_text('{"path": "leaked-from-outside", "token": "x"}\n')
    for p in listings:
        p.unlink()
        os.symlink(secret, p)
    proc = tether("status", cwd=dataset, check=False)
    assert proc.returncode == 1
    assert ".tether/listings/" in proc.stderr and "symbolic link" in proc.stderr


# --- temporaries a killed write leaves ------------------------------------------------

def test_crash_leftover_temp_is_never_committed(git_repo, tether, env, store):
    tether("init", "--dataset-id", "0a1b2c3d", cwd=git_repo)
    git("add", "-A", cwd=git_repo, env=env)
    git("commit", "-q", "-m", "init", cwd=git_repo, env=env)
    # Killed between writing the manifest's temporary and renaming it.
    proc = tether("add", "files", str(store), "--kind", "file", cwd=git_repo, check=False,
                  env={"TETHER_FAULT": "fs:before-rename"})
    assert proc.returncode in (-9, 137)
    temps = [p for p in (git_repo / ".tether").rglob(".*.tmp")]
    assert temps, "the kill left no temporary"
    # The documented recovery: rerun, then commit.
    tether("add", "files", str(store), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    assert not [f for f in tracked(git_repo, env) if f.endswith(".tmp")]
    assert not [p for p in (git_repo / ".tether").rglob(".*.tmp")]
    assert git("status", "--porcelain", cwd=git_repo, env=env) == ""


def test_killed_commit_leaves_no_temporary_after_its_rerun(git_repo, tether, env, store):
    """The first atomic write of a commit is the hash cache's (written under
    its own flock, not the checkout lock): its temporary goes too."""
    tether("init", cwd=git_repo)
    tether("add", "files", str(store), "--kind", "file", cwd=git_repo)
    proc = tether("commit", "-m", "first", cwd=git_repo, check=False,
                  env={"TETHER_FAULT": "fs:before-rename"})
    assert proc.returncode in (-9, 137)
    assert [p for p in (git_repo / ".tether").rglob(".*.tmp")]
    tether("commit", "-m", "first", cwd=git_repo)
    assert [p for p in (git_repo / ".tether").rglob(".*.tmp")] == []
    assert not [f for f in tracked(git_repo, env) if f.endswith(".tmp")]
    assert tether.json("verify", cwd=git_repo)


def test_old_gitignore_leftover_temps_not_committed(dataset, tether, env, store):
    """A dataset whose .gitignore predates the temporaries' pattern (as
    tether-vcs writes it): the next writing command removes a stale
    temporary of ours, and commit never stages one it cannot remove."""
    gi = dataset / ".tether/.gitignore"
    gi.write_text("".join(f"/{n}\n" for n in ("workspace.toml", "ops.jsonl", "cache", "lock",
                                              "secrets.toml")))
    git("commit", "-q", "-am", "old gitignore", cwd=dataset, env=env)
    ours = dataset / ".tether/objects/.files.toml.0123456789abcdef.tmp"
    nested = dataset / ".tether/objects/grp/.x.toml.fedcba9876543210.tmp"
    top = dataset / ".tether/.workspace.toml.00112233445566ff.tmp"
    root_cfg = dataset / ".tether.toml.aabbccddeeff0011.tmp"
    foreign = dataset / ".tether/objects/.files.toml.tmp"  # tether-vcs's name: not swept
    nested.parent.mkdir()
    for p in (ours, nested, top, root_cfg, foreign):
        p.write_text("partial")
    more = store.parent / "more"
    more.mkdir()
    (more / "b.txt").write_text("b\n")
    tether("add", "more", str(more), "--kind", "file", cwd=dataset)
    tether("commit", "-m", "second", cwd=dataset)
    for p in (ours, nested, top, root_cfg):
        assert not p.exists(), p
    assert foreign.exists()
    files = tracked(dataset, env)
    assert not [f for f in files if f.endswith(".tmp")], files
    assert ".tether/objects/more.toml" in files
    # A leftover alone is no change to commit (and never blocks pull).
    proc = tether("commit", "-m", "third", cwd=dataset)
    assert git("log", "-1", "--format=%s", cwd=dataset, env=env).strip() == "second"
    assert proc.returncode == 0


def test_temp_of_a_running_writer_is_kept(dataset, tether, store):
    """Only what is older than the process is stale: a temporary modified
    after the command started may belong to a writer at work."""
    fresh = dataset / ".tether/objects/.files.toml.0123456789abcdef.tmp"
    fresh.write_text("in progress")
    future = time.time() + 3600
    os.utime(fresh, (future, future))
    tether("set", "files", "--pin", "record", cwd=dataset)
    assert fresh.exists()


def test_new_gitignore_ignores_temporaries(git_repo, tether, env):
    tether("init", cwd=git_repo)
    assert ".*.tmp" in (git_repo / ".tether/.gitignore").read_text().splitlines()
    for rel in (".tether/objects/.k.toml.0123456789abcdef.tmp", ".tether/..gitignore.0123456789abcdef.tmp",
                ".tether/listings/.abc.jsonl.0123456789abcdef.tmp"):
        (git_repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (git_repo / rel).write_text("x")
        assert git("check-ignore", rel, cwd=git_repo, env=env).strip() == rel
    (git_repo / ".tether/objects/k.toml").write_text("x")
    proc = subprocess.run(["git", "check-ignore", ".tether/objects/k.toml"], cwd=git_repo, env=env)
    assert proc.returncode == 1  # a manifest is not ignored


# --- input that means nothing ---------------------------------------------------------

@pytest.mark.parametrize("args", [("log", "files", "-n", "-1"),
                                  ("log", "files", "-n", "99999999999999999999999"),
                                  ("log", "files", "--limit=-5"),
                                  ("ops", "-n", "-1"),
                                  ("diff", "--limit", "-1"),
                                  ("ops", "-n", "-99999999999999999999999")])
def test_limit_out_of_range_is_a_usage_error(dataset, tether, args):
    proc = tether(*args, cwd=dataset, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "invalid value for --limit" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("key,locator,what", [
    (".tether", "{store}", "segment '.tether' starts with '.'"),
    ("x/.git", "{store}", "segment '.git' starts with '.'"),
    (".a.toml.0123456789abcdef.tmp/b", "{store}", "starts with '.'"),
    ("a.toml/b", "{store}", "directory segment 'a.toml' ends in \".toml\""),
    ("c", ".tether", "would be tether's own files (.tether)"),
    ("c", ".tether/objects", "would be tether's own files (.tether)"),
    ("c", "file://{ds}/.tether/cache", "would be tether's own files (.tether)"),
    ("c", "tether.toml", "would be tether's own files (tether.toml)"),
    (None, ".tether", "(the key taken from the locator)"),
])
def test_add_refuses_tethers_own_names(dataset, tether, store, key, locator, what):
    before = tree(dataset)
    loc = locator.format(store=store, ds=dataset)
    args = ("add", key, loc) if key else ("add", loc)
    proc = tether(*args, "--kind", "file", cwd=dataset, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert what in proc.stderr, proc.stderr
    assert tree(dataset) == before


def test_add_refuses_a_git_object_inside_tether(dataset, tether):
    proc = tether("add", "g", str(dataset / ".tether"), "--kind", "git", "--create", cwd=dataset,
                  check=False)
    assert proc.returncode == 1
    assert "[g]" in proc.stderr and "tether's own files" in proc.stderr


def deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize("where", ["middle", "last"])
def test_deeply_nested_journal_line_refused_with_its_line(dataset, tether, where):
    ops = dataset / ".tether/ops.jsonl"
    lines = ops.read_text().splitlines()
    good = lines[0]
    text = "\n".join(lines + [deep(5000)] + ([good] if where == "middle" else [])) + "\n"
    ops.write_text(text)
    proc = tether("ops", cwd=dataset, check=False)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.startswith(f"error: .tether/ops.jsonl:{len(lines) + 1}: "), proc.stderr
    # As a garbage line in the middle is.
    ops.write_text("\n".join(lines + ["garbage", good]) + "\n")
    proc = tether("ops", cwd=dataset, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"error: .tether/ops.jsonl:{len(lines) + 1}: ")


def test_torn_last_journal_line_still_skipped(dataset, tether):
    ops = dataset / ".tether/ops.jsonl"
    ops.write_text(ops.read_text() + '{"id": "torn00000000", "comm' + "[" * 5000)
    n = len(tether.json("ops", cwd=dataset))
    assert n >= 1
