"""Time the Python API: `Repo.find(path).status()` and `repo.open(key)` in a
loop, under whichever `tether` this interpreter imports (tether-vcs, or the
package on libtether).  scripts/bench-python.sh runs it under both in one go.

    python bench/python_api.py make DIR        # a dataset with git, file, lance, icechunk objects
    python bench/python_api.py time DIR [-n N] # one JSON line of timings
    python bench/python_api.py cli DIR --bin B # the same through the CLI binary B
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def make(top: Path, n_files: int) -> None:
    from tether import Repo

    stores = top / "stores"
    (stores / "files").mkdir(parents=True)
    code = stores / "code"
    code.mkdir()
    git(code, "init", "-q", "-b", "main")
    (code / "README").write_text("bench\n")
    git(code, "add", "README")
    git(code, "commit", "-qm", "one")
    for i in range(n_files):
        (stores / "files" / f"part-{i:04d}.bin").write_bytes(os.urandom(4096))
    ds = top / "dataset"
    ds.mkdir()
    git(ds, "init", "-q", "-b", "main")
    git(ds, "commit", "-q", "--allow-empty", "-m", "start")
    repo = Repo.init(ds)
    repo.add("code", "git", {"uri": str(code)})
    repo.add("files", "file", {"uri": str(stores / "files")})
    try:
        import lance
        import pyarrow as pa

        lance.write_dataset(pa.table({"id": list(range(1000))}), str(stores / "rows.lance"))
        repo.add("rows", "lance", {"uri": str(stores / "rows.lance")})
    except ImportError:
        pass
    try:
        import icechunk as ic
        import zarr

        r = ic.Repository.create(ic.local_filesystem_storage(str(stores / "cube.icechunk")))
        s = r.writable_session("main")
        zarr.group(store=s.store).create_array("t", shape=(16,), dtype="i4")[:] = list(range(16))
        s.commit("cube")
        repo.add("cube", "icechunk", {"uri": str(stores / "cube.icechunk")})
    except ImportError:
        pass
    os.environ.update(GIT_ENV)
    repo.commit("baseline")


def timed(fn, n: int) -> dict[str, float]:
    fn()  # warm caches once
    xs = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t) * 1000)
    return {"median_ms": round(statistics.median(xs), 2), "min_ms": round(min(xs), 2)}


def run(top: Path, n: int) -> None:
    import tether
    from tether import Repo

    ds = top / "dataset"
    impl = "libtether" if hasattr(tether, "libtether_version") else "tether-vcs"
    repo = Repo.find(ds)
    keys = sorted(repo.objects)
    out = {"impl": impl, "objects": len(keys), "n": n,
           "find+status": timed(lambda: Repo.find(ds).status(), n),
           "find+status(no snapshot)": timed(lambda: Repo.find(ds).status(do_snapshot=False), n)}
    for key in keys:
        out[f"open {key}"] = timed(lambda key=key: repo.open(key, read_only=True), n)
    print(json.dumps(out))


def run_cli(top: Path, n: int, binary: str) -> None:
    """The same operations as `tether` CLI processes (spawn included)."""
    ds = top / "dataset"

    def cli(*args: str):
        return lambda: subprocess.run([binary, *args], cwd=ds, check=True, capture_output=True)

    keys = sorted(p.stem for p in (ds / ".tether" / "objects").glob("*.toml"))
    out = {"impl": "CLI", "objects": len(keys), "n": n,
           "find+status": timed(cli("status", "--snapshot", "--json"), n),
           "find+status(no snapshot)": timed(cli("status", "--no-snapshot", "--json"), n)}
    for key in keys:
        out[f"open {key}"] = timed(cli("open", key, "--read-only", "--json"), n)
    print(json.dumps(out))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["make", "time", "cli"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--bin", default="tether", help="the CLI binary (cli mode)")
    a = ap.parse_args()
    if a.what == "make":
        make(a.dir, a.files)
    elif a.what == "cli":
        run_cli(a.dir, a.n, a.bin)
    else:
        run(a.dir, a.n)
    sys.exit(0)
