"""Data for the `file` backend benchmarks, built once and cached.

Every tree lives under .tmp/bench/ in a directory named by a version string
and its size, with a READY stamp written last: a build that was interrupted
is started again from scratch, a finished one is reused as it is.  Bump
FILEDATA_FORMAT when the shape of a tree changes.

Files are written with os.open/os.write (no buffered file objects), which is
what makes a million small files take about a minute rather than several.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

FILEDATA_FORMAT = "1"
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _say(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


def _ready(base: Path, key: str) -> bool:
    stamp = base / "READY"
    return stamp.exists() and stamp.read_text() == f"{key}\n"


def _fresh(base: Path) -> None:
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, _FLAGS, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def big_tree(cache: Path, nfiles: int, size: int) -> tuple[Path, int]:
    """`nfiles` files of `size` random bytes, 100 to a directory.
    Returns (tree, total bytes)."""
    key = f"file-big-v{FILEDATA_FORMAT}-{nfiles}x{size}"
    base = cache / key
    tree = base / "tree"
    if not _ready(base, key):
        _fresh(base)
        t0 = time.perf_counter()
        for i in range(nfiles):
            d = tree / f"d{i // 100:04d}"
            if i % 100 == 0:
                d.mkdir(parents=True)
            _write(str(d / f"f{i:06d}.bin"), os.urandom(size))
            if (i + 1) % 2000 == 0:
                _say(f"building {key}: {i + 1}/{nfiles} files "
                     f"({time.perf_counter() - t0:.0f}s)")
        (base / "READY").write_text(f"{key}\n")
    return tree, nfiles * size


def warm_page_cache(tree: Path) -> int:
    """Read every file once so the first timed fingerprint is not a disk
    benchmark.  Returns the bytes read."""
    total = 0
    for dirpath, _dirs, files in os.walk(tree):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                while True:
                    b = os.read(fd, 1 << 20)
                    if not b:
                        break
                    total += len(b)
            finally:
                os.close(fd)
    return total


def small_shard(cache: Path, shard_files: int, k: int) -> Path:
    """Shard k of the small-file trees: `shard_files` files of about 40 bytes,
    nested as aNN/bNN/fNNNNNNN.txt (100 files to a leaf directory).  The
    100k benchmark uses shard 0 alone; the 1M one the directory holding ten
    shards, so the two share their files on disk."""
    key = f"file-small-v{FILEDATA_FORMAT}-{shard_files}"
    base = cache / key
    shard = base / "tree" / f"s{k}"
    stamp = base / f"s{k}.READY"
    if stamp.exists() and stamp.read_text() == f"{key}/s{k}\n":
        return shard
    if shard.exists():
        shutil.rmtree(shard)
    shard.mkdir(parents=True)
    t0 = time.perf_counter()
    leaf = ""
    for j in range(shard_files):
        if j % 100 == 0:
            leaf = os.path.join(str(shard), f"a{j // 10000:02d}", f"b{(j // 100) % 100:02d}")
            os.makedirs(leaf)
        _write(os.path.join(leaf, f"f{j:07d}.txt"),
               f"shard {k} file {j}\nline two of {j}\n".encode())
        if (j + 1) % 100000 == 0:
            _say(f"building {key}/s{k}: {j + 1}/{shard_files} files "
                 f"({time.perf_counter() - t0:.0f}s)")
    stamp.write_text(f"{key}/s{k}\n")
    return shard


def small_tree(cache: Path, shard_files: int, shards: int) -> Path:
    """`shards` shards of `shard_files` files under one directory."""
    for k in range(shards):
        small_shard(cache, shard_files, k)
    root = cache / f"file-small-v{FILEDATA_FORMAT}-{shard_files}" / "tree"
    extra = sorted(p.name for p in root.iterdir() if p.name not in {f"s{k}" for k in range(shards)})
    if extra:
        raise RuntimeError(f"{root} holds more than {shards} shards: {extra[:3]}")
    return root


def mid_tree(cache: Path, nfiles: int, size: int) -> Path:
    """`nfiles` files of `size` random bytes, 100 to a directory."""
    tree, _ = big_tree(cache, nfiles, size)
    return tree


def hardlink_copy(src: Path, dst: Path) -> None:
    """dst mirrors src with hard links (no data blocks copied).  A file that
    is changed later must be replaced (os.replace), never written in place."""
    for dirpath, _dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        out = os.path.join(dst, rel) if rel != "." else str(dst)
        os.makedirs(out, exist_ok=True)
        for name in files:
            os.link(os.path.join(dirpath, name), os.path.join(out, name))


def replace_file(path: Path, data: bytes) -> None:
    tmp = str(path) + ".new"
    _write(tmp, data)
    os.replace(tmp, path)
