"""The `file` backend end to end, against tether-vcs.

States, listing names, listings and pin ids of files and directories
(nested, unicode names, symlinks, empty files, the owner marker) equal what
tether-vcs's own FileBackend computes; commit / status --snapshot / the
immutable policy / diff --content run through our CLI; each implementation
reads the other's datasets clean and the other's hash cache."""
from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import git
from tether.backends.base import build_backend
from tether.manifest import compute_pin_id, listing_name

DS = "5e1f0a7b"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A directory with everything the walk has a rule for."""
    root = tmp_path / "stores" / "data"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "ünï" / "ñ").mkdir(parents=True)
    (root / "a.txt").write_text("hello\n")
    (root / "empty").write_bytes(b"")
    (root / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
    (root / "sub" / "deeper" / "ü-ñ.txt").write_text("unicode\n")
    (root / "ünï" / "ñ" / "日本.txt").write_text("nihongo\n")
    (root / "sp ace #1?.txt").write_text("odd name\n")
    (root / "sub" / "empty-dir").mkdir()
    (root / ".tether-owner").write_text("not content at the root\n")
    (root / "sub" / ".tether-owner").write_text("content below it\n")
    (root / "link-file").symlink_to("a.txt")
    (root / "link-dir").symlink_to("sub")
    (root / "dangling").symlink_to("nowhere")
    return root


def read_manifest(ds: Path, key: str) -> dict:
    return tomllib.loads((ds / ".tether" / "objects" / f"{key}.toml").read_text())


def reference(path: Path | str) -> tuple[dict, dict, str | None]:
    """tether-vcs's identity, state and listing for a path."""
    backend = build_backend("file")
    loc = {"uri": str(path)}
    state = backend.fingerprint(loc, None)
    return backend.identity(loc), state, backend.listing(loc, state)


def tt_ids(build_dir: Path, cases: list[dict], env) -> list:
    proc = subprocess.run([str(build_dir / "tt_ids")], input="".join(json.dumps(c) + "\n" for c in cases),
                          env=env, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def status_states(runner, ds: Path) -> dict[str, str]:
    out = runner.json("status", "--snapshot", cwd=ds)
    return {o["key"]: o["state"] for o in out["objects"]}


# --- states, listings, ids ------------------------------------------------------- #


def test_states_listings_and_ids_match_reference(git_repo, tether, build_dir, env, tree, tmp_path):
    # The same directory through a symlinked parent is the same store.
    linked = tmp_path / "linked"
    linked.symlink_to(tree.parent)
    (tree.parent / "lonely").mkdir()
    objects = {
        "d": tree,                          # a directory with every rule
        "f": tree / "a.txt",                # a single file
        "u": tree / "ünï" / "ñ" / "日本.txt",  # a unicode single file
        "s": tree / "link-file",            # a symlink to a file: read through
        "z": tree / "empty",                # an empty file
        "e": linked / "lonely",             # an empty directory, via a symlinked parent
    }
    tether("init", "--dataset-id", DS, cwd=git_repo)
    for key, path in objects.items():
        tether("add", key, str(path), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "files", cwd=git_repo)

    committed = set(git("ls-files", ".tether/listings", cwd=git_repo, env=env).split())
    expected_listings = set()
    cases = []
    for key, path in objects.items():
        ident, state, listing = reference(path)
        m = read_manifest(git_repo, key)
        assert m["state"] == state, key
        if key == "d":
            assert state["count"] == 10 and state["type"] == "dir"
        name = listing_name("file", ident, state)
        listing_path = git_repo / ".tether" / "listings" / name
        if listing is None:
            assert not listing_path.exists()
        else:
            # Byte for byte, and committed under tether-vcs's name for it.
            assert listing_path.read_text(encoding="utf-8") == listing, key
            expected_listings.add(f".tether/listings/{name}")
        cases.append({"op": "pin_id", "dataset": DS, "kind": "file",
                      "identity": {"uri": os.path.realpath(m["locator"]["uri"])},
                      "state": m["state"], "_want": compute_pin_id("file", ident, state, DS)})
    assert committed == expected_listings
    got = tt_ids(build_dir, [{k: v for k, v in c.items() if k != "_want"} for c in cases], env)
    assert got == [c["_want"] for c in cases]


def test_large_tree_matches_reference(git_repo, tether, tmp_path):
    """A tree big enough for the walk's work after the stats to be split
    across threads (sorting, the cache lookups): names that sort
    differently as whole paths than directory by directory ("a-1" before
    "a/x", "a.b" before "a/"), nested and unicode; its state and listing
    equal tether-vcs's, first hashed and then from the cache, and after one
    file changes."""
    root = tmp_path / "stores" / "big"
    names = ["a", "a-1", "a.b", "a b", "a_", "ab", "A", "é", "z~", "0"]
    n = 0
    for d1 in names:
        for d2 in names[:6]:
            d = root / d1 / d2
            d.mkdir(parents=True)
            for i in range(350):
                stem = names[i % len(names)]
                (d / f"{stem}{i}").write_bytes(b"%d" % (n % 97))
                n += 1
    assert n > 20000
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "big", str(root), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "big", cwd=git_repo)
    ident, state, listing = reference(root)
    assert read_manifest(git_repo, "big")["state"] == state
    name = listing_name("file", ident, state)
    assert (git_repo / ".tether" / "listings" / name).read_text(encoding="utf-8") == listing
    # From the cache: clean.  One file's bytes changed: refused as a change
    # of an immutable object.  The bytes put back (its stat still new, so
    # only it is hashed again among the cache's hits): clean again.
    assert status_states(tether, git_repo) == {"big": "clean"}
    changed = root / "a-1" / "a.b" / "a.b2"
    before = changed.read_bytes()
    changed.write_bytes(b"changed")
    os.utime(changed, ns=(1, 1))
    assert reference(root)[1]["digest"] != state["digest"]
    proc = tether("status", "--snapshot", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "immutable object 'big' changed" in proc.stderr, proc.stderr
    changed.write_bytes(before)
    assert status_states(tether, git_repo) == {"big": "clean"}


def test_single_files_and_directories_in_one_dataset_read_by_reference(git_repo, tether, ref, tree):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    tether("add", "f", str(tree / "sub" / "b.bin"), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "ours", cwd=git_repo)
    # Their status and verify read our committed states as clean / ok.
    assert status_states(ref, git_repo) == {"d": "clean", "f": "clean"}
    assert {k: v["status"] for k, v in ref.json("verify", cwd=git_repo).items()} == {
        "d": "ok", "f": "ok"}


# --- commit, status, the immutable policy, diff ---------------------------------- #


def test_commit_status_and_immutable_policy(git_repo, tether, env, tree):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    assert status_states(tether, git_repo) == {"d": "clean"}
    assert tether.json("verify", cwd=git_repo)["d"]["status"] == "ok"

    # A timestamp is not a change: touch and an identical rewrite read clean.
    target = tree / "sub" / "b.bin"
    original = target.read_bytes()
    os.utime(target, (1_000_000_000, 1_000_000_000))
    target.write_bytes(original)
    assert status_states(tether, git_repo) == {"d": "clean"}

    # One byte changed (same size): the default immutable policy refuses.
    changed = bytearray(original)
    changed[100] ^= 0xFF
    target.write_bytes(bytes(changed))
    proc = tether("status", "--snapshot", cwd=git_repo, check=False)
    assert proc.returncode == 1
    assert "immutable object 'd' changed since it was committed" in proc.stderr
    assert "[d]" in proc.stderr
    verify = tether("verify", "--json", cwd=git_repo, check=False)
    assert verify.returncode == 1
    assert json.loads(verify.stdout)["d"] == {"status": "drifted",
                                              "message": "content changed since commit"}
    # Put back: clean again, whatever the timestamps say.
    target.write_bytes(original)
    assert status_states(tether, git_repo) == {"d": "clean"}


def test_diff_content_file_by_file(git_repo, tether, ref, env, tree):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "one", cwd=git_repo)
    _, before, before_listing = reference(tree)
    (tree / "a.txt").write_bytes(b"hello\n" + b"\0" * 4096)
    (tree / "sub" / "b.bin").unlink()
    (tree / "new.txt").write_text("new\n")
    (tree / "link-dir").unlink()
    (tree / "link-dir").symlink_to("ünï")  # retargeted: a change
    # Record the new state: re-register (immutable objects are not pulled).
    tether("remove", "d", cwd=git_repo)
    tether("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "two", cwd=git_repo)
    assert len(git("ls-files", ".tether/listings", cwd=git_repo, env=env).split()) == 2

    ours = tether.json("diff", "HEAD~1", "HEAD", "--content", cwd=git_repo)
    theirs = ref.json("diff", "HEAD~1", "HEAD", "--content", cwd=git_repo)
    assert ours == theirs
    detail = ours[0]["detail"]
    # And what tether-vcs's backend itself makes of the two listings.
    _, after, after_listing = reference(tree)
    want = build_backend("file").diff({"uri": str(tree)}, before, after,
                                      listings=(before_listing, after_listing))
    assert detail == want.to_dict()
    assert detail["summary"] == "+1 -1 ~3 files"
    assert {"path": "a.txt", "change": "modified", "detail": "+4.0 KiB"} in detail["entries"]
    text = tether("diff", "HEAD~1", "HEAD", "--content", cwd=git_repo).stdout
    assert "modified  a.txt  +4.0 KiB" in text

    # Without a stored listing (the working tree's is gone; HEAD~1's is in
    # git): the count and size summary, with the note.
    for p in (git_repo / ".tether" / "listings").iterdir():
        p.unlink()
    ours = tether.json("diff", "HEAD~1", "--content", cwd=git_repo)
    assert ours[0]["detail"]["note"] == "no stored listing for side b"
    # (a.txt's growth counts twice: link-file reads it through)
    assert ours[0]["detail"]["entries"][0]["detail"] == "10 -> 10 files, -2.0 KiB"
    assert ours[0]["detail"]["entries"][0]["path"] == "(summary)"
    assert ours == ref.json("diff", "HEAD~1", "--content", cwd=git_repo)


# --- each reads the other's datasets and caches ---------------------------------- #


def test_reference_dataset_reads_clean_in_ours(git_repo, tether, ref, tree):
    ref("init", "--dataset-id", DS, cwd=git_repo)
    ref("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    ref("add", "f", str(tree / "ünï" / "ñ" / "日本.txt"), "--kind", "file", cwd=git_repo)
    ref("commit", "-m", "theirs", cwd=git_repo)
    assert status_states(tether, git_repo) == {"d": "clean", "f": "clean"}
    assert {k: v["status"] for k, v in tether.json("verify", cwd=git_repo).items()} == {
        "d": "ok", "f": "ok"}
    (tree / "a.txt").write_text("HELLO\n")
    proc = tether("status", "--snapshot", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "immutable object 'd' changed" in proc.stderr


def test_our_dataset_reads_clean_in_reference(git_repo, tether, ref, tree):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "ours", cwd=git_repo)
    assert status_states(ref, git_repo) == {"d": "clean"}
    assert ref.json("verify", cwd=git_repo)["d"]["status"] == "ok"
    (tree / "empty").write_text("x")
    proc = ref("status", "--snapshot", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "immutable object 'd' changed" in proc.stderr


def _poison(cache: Path, victim: Path) -> None:
    """Make the cache's entry for victim claim another hash, made long enough
    after the file's last change to be trusted (not "racy")."""
    entries = json.loads(cache.read_text())
    key = os.path.realpath(victim)
    entry = entries[key]
    assert len(entry) == 6 and entry[4] == build_backend("file").fingerprint(
        {"uri": key}, None)["sha256"]
    entry[4] = "0" * 64
    entry[5] = max(entry[1], entry[2]) + 10_000_000_000
    cache.write_text(json.dumps(entries, separators=(",", ":")))


@pytest.mark.parametrize("writer", ["ref", "ours"])
def test_hash_caches_interoperate(git_repo, tether, ref, tree, writer):
    """Whichever implementation wrote .tether/cache/file-hashes.json, the
    other reads its entries (a poisoned entry is believed, so it was read)
    and keeps them when it writes the file back."""
    first, second = (ref, tether) if writer == "ref" else (tether, ref)
    cache = git_repo / ".tether" / "cache" / "file-hashes.json"
    first("init", "--dataset-id", DS, cwd=git_repo)
    first("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    first("commit", "-m", "first", cwd=git_repo)
    assert status_states(first, git_repo) == {"d": "clean"}
    assert cache.is_file()
    written = json.loads(cache.read_text())
    assert {os.path.realpath(tree / "a.txt"), os.path.realpath(tree / "sub" / "b.bin")} <= set(written)

    # The other implementation reads it: clean, and the file still parses
    # with every entry it had.
    assert status_states(second, git_repo) == {"d": "clean"}
    assert set(json.loads(cache.read_text())) >= set(written)

    # Proof it was read, not recomputed: a trusted entry that lies is believed.
    _poison(cache, tree / "a.txt")
    proc = second("status", "--snapshot", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "immutable object 'd' changed" in proc.stderr
    # A file whose stat changes is read again, whatever the cache says.
    (tree / "a.txt").write_text("hello\n")
    assert status_states(second, git_repo) == {"d": "clean"}
    assert status_states(first, git_repo) == {"d": "clean"}


def test_create_marker_matches_reference(git_repo, tether, ref, tmp_path):
    """A directory `add --create` makes holds tether-vcs's marker, and each
    implementation reads the other's store as created by this dataset."""
    tether("init", "--dataset-id", DS, cwd=git_repo)
    store = tmp_path / "stores" / "made" / "here"
    proc = tether("add", "m", str(store), "--kind", "file", "--create", cwd=git_repo, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (store / ".tether-owner").read_text() == f"{DS}\n"
    assert build_backend("file").owner({"uri": str(store)}) == DS
    # add contacts the store only to make it (tether-vcs writes no state
    # either); the first commit records the empty directory as tether-vcs
    # fingerprints it, the marker skipped.
    assert "state" not in read_manifest(git_repo, "m")
    assert read_manifest(git_repo, "m")["origin"] == "created"
    tether("commit", "-m", "made", cwd=git_repo)
    assert read_manifest(git_repo, "m")["state"] == reference(store)[1]
