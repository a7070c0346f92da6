"""The binary copy of the file hash cache (.tether/cache/file-hashes.bin).

tether-vcs reads and writes only file-hashes.json; we keep a binary copy of
it beside, made from one exact JSON file and used only while that file is
the one there.  These tests drive tether-vcs's own cache class to write the
JSON, so the binary copy is made stale the way tether-vcs makes it stale,
and use a trusted entry that lies (a file's hash replaced by zeros) as the
proof of which of the two answered."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tether.backends.file import _HashCache

DS = "5e1f0a7b"
LIE = "0" * 64


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "stores" / "data"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("hello\n")
    (root / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
    for i in range(50):
        (root / "sub" / f"f{i:03d}.txt").write_text(f"file {i}\n")
    # Entries made within 2 s of a file's last change are not trusted (and
    # made again by every refresh); past that, a refresh records nothing.
    time.sleep(2.1)
    return root


def cache_dir(ds: Path) -> Path:
    return ds / ".tether" / "cache"


def states(runner, ds: Path, **kw):
    return runner("status", "--snapshot", cwd=ds, check=False, **kw)


def vcs_lie(ds: Path, victim: Path) -> None:
    """tether-vcs's _HashCache records a lie for victim (trusted: hashed long
    after the file's last change) and saves the table as it does."""
    hc = _HashCache(cache_dir(ds) / "file-hashes.json")
    entries = hc._load()
    key = os.path.realpath(victim)
    entry = entries[key]
    assert len(entry) == 6 and entry[4] != LIE
    st = os.stat(key)
    hc.record(Path(key), st, LIE)
    hc._load()[key][5] = max(st.st_mtime_ns, st.st_ctime_ns) + 10_000_000_000
    hc.save()


def committed(tether, git_repo: Path, tree: Path) -> Path:
    tether("init", "--dataset-id", DS, cwd=git_repo)
    tether("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    return git_repo


def test_binary_copy_is_written_and_answers_like_the_json(git_repo, tether, tree):
    ds = committed(tether, git_repo, tree)
    binary = cache_dir(ds) / "file-hashes.bin"
    assert binary.is_file()
    assert binary.read_bytes()[:7] == b"TTHCBIN"
    before = binary.stat()
    proc = states(tether, ds)
    assert proc.returncode == 0, proc.stderr
    # A refresh with nothing to record leaves both files as they were.
    assert binary.stat().st_mtime_ns == before.st_mtime_ns
    json.loads((cache_dir(ds) / "file-hashes.json").read_text())


def test_a_json_tether_vcs_rewrote_wins_over_the_binary_copy(git_repo, tether, tree):
    ds = committed(tether, git_repo, tree)
    assert states(tether, ds).returncode == 0  # answered from the binary copy
    vcs_lie(ds, tree / "a.txt")
    # The binary copy still says the true hash; the JSON tether-vcs wrote
    # says otherwise, and the JSON is believed.
    proc = states(tether, ds)
    assert proc.returncode == 1 and "immutable object 'd' changed" in proc.stderr
    # ... also once the binary copy has been made again from that JSON.
    proc = states(tether, ds)
    assert proc.returncode == 1 and "immutable object 'd' changed" in proc.stderr


def test_a_cache_tether_vcs_wrote_is_honoured(git_repo, tether, ref, tree):
    ref("init", "--dataset-id", DS, cwd=git_repo)
    ref("add", "d", str(tree), "--kind", "file", cwd=git_repo)
    ref("commit", "-m", "first", cwd=git_repo)
    assert not (cache_dir(git_repo) / "file-hashes.bin").exists()
    assert states(tether, git_repo).returncode == 0
    # Our first read parsed tether-vcs's JSON and made the binary copy.
    assert (cache_dir(git_repo) / "file-hashes.bin").is_file()
    vcs_lie(git_repo, tree / "sub" / "f007.txt")
    for _ in range(2):  # from the JSON, then from the copy made of it
        proc = states(tether, git_repo)
        assert proc.returncode == 1 and "immutable object 'd' changed" in proc.stderr
    # tether-vcs still reads the JSON as its own (and believes the same).
    proc = ref("status", "--snapshot", cwd=git_repo, check=False)
    assert proc.returncode != 0


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_damaged_binary_copy_is_ignored_and_replaced(git_repo, tether, tree, damage):
    ds = committed(tether, git_repo, tree)
    binary = cache_dir(ds) / "file-hashes.bin"
    good = binary.read_bytes()
    if damage == "truncate":
        binary.write_bytes(good[:-1])
    elif damage == "flip":
        # A bit of the first record's hash (header 128 bytes, the hash at 48
        # in an 80-byte record): believed, it would make a file look changed.
        at = 128 + 48
        binary.write_bytes(good[:at] + bytes([good[at] ^ 0x01]) + good[at + 1:])
    elif damage == "garbage":
        binary.write_bytes(b"not a cache" * 100)
    else:
        binary.write_bytes(b"")
    proc = states(tether, ds)
    assert proc.returncode == 0, proc.stderr
    # Made again from the same JSON: the same bytes as before the damage.
    assert binary.read_bytes() == good
