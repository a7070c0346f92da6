"""The `file` kind's directory state from Watchman (TETHER_FSMONITOR=watchman,
`[file] fsmonitor = "watchman"` in .tether/secrets.toml) is the walk's state,
byte for byte, after every kind of change; every reason not to trust
Watchman's answer falls back to the walk and says so in the trace.

Each test runs its own Watchman server (the real `watchman` 4.9 that
scripts/setup.sh installs) on a socket in its temporary directory, reached
through WATCHMAN_SOCK (the watchman command line itself takes --sockname), and compares three fingerprints of the same tree:
ours with the watcher (a checkout cache of its own), ours walking (another
cache), and tether-vcs's FileBackend."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import git
from tether.backends.base import build_backend

WATCHMAN = shutil.which("watchman")


@pytest.fixture
def watchman(tmp_path: Path):
    """A private Watchman server; yields its socket path."""
    if not WATCHMAN:
        pytest.fail("watchman is not installed: scripts/setup.sh installs it (Debian's watchman)")
    d = tmp_path / "wm"
    d.mkdir()
    sock = d / "sock"
    proc = subprocess.Popen([WATCHMAN, "--foreground", f"--sockname={sock}", f"--statefile={d}/state",
                             f"--logfile={d}/log", f"--pidfile={d}/pid", "--no-save-state"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if sock.exists():
            break
        time.sleep(0.05)
    try:
        yield sock
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fingerprint(build_dir: Path, env: dict, root: Path, cache: Path | None,
                extra: dict | None = None) -> tuple[dict, str]:
    """Our state of root and the trace lines (watcher on when cache and
    WATCHMAN_SOCK or PATH allow)."""
    e = dict(env)
    e["TETHER_TRACE"] = "1"
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        e["TT_BACKEND_CACHE_DIR"] = str(cache)
    e.update(extra or {})
    p = subprocess.run([str(build_dir / "tt_backend"), "file", json.dumps({"uri": str(root)}),
                        "fingerprint"], env=e, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p.stderr


class Trio:
    """Fingerprints of one tree: watched, walked, and tether-vcs's."""

    def __init__(self, build_dir: Path, env: dict, root: Path, sock: Path, tmp: Path):
        self.build_dir, self.root, self.tmp = build_dir, root, tmp
        self.env = dict(env, TETHER_FSMONITOR="watchman", WATCHMAN_SOCK=str(sock))
        self.plain = dict(env)

    def watched(self, extra: dict | None = None) -> tuple[dict, str]:
        return fingerprint(self.build_dir, self.env, self.root, self.tmp / "cache-watch", extra)

    def check(self, expect: str) -> dict:
        """The watched state equals the walked one and tether-vcs's; the
        trace contains expect."""
        got, trace = self.watched()
        walked, plain_trace = fingerprint(self.build_dir, self.plain, self.root, self.tmp / "cache-walk")
        assert plain_trace == ""  # the watcher is off without the opt-in
        ref = build_backend("file").fingerprint({"uri": str(self.root)}, None)
        assert got == walked == ref, trace
        assert expect in trace, trace
        return got


def make_tree(root: Path) -> None:
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "d").mkdir()
    for i in range(5):
        (root / f"top{i}.txt").write_text(f"top {i}\n")
        (root / "a" / f"f{i}.txt").write_text(f"a {i}\n")
        (root / "a" / "b" / f"g{i}.bin").write_bytes(bytes([i]) * (100 + i))
        (root / "a" / "b" / "c" / f"h{i}").write_text(f"deep {i}\n")
        (root / "d" / f"e{i}").write_text(f"d {i}\n")
    (root / "dangling").symlink_to("nowhere")
    (root / "to-dir").symlink_to("a")


def same_second_rewrite(p: Path) -> None:
    """New bytes of the same size with the old mtime put back."""
    st = p.stat()
    p.write_text(p.read_text().upper())
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


CHANGES = {
    "create": lambda r: (r / "a" / "new.txt").write_text("new\n"),
    "create-deep": lambda r: (r / "a" / "b" / "c" / "new").write_text("deep new\n"),
    "delete": lambda r: (r / "a" / "f1.txt").unlink(),
    "rename": lambda r: (r / "a" / "f2.txt").rename(r / "d" / "moved.txt"),
    "truncate": lambda r: os.truncate(r / "a" / "b" / "g3.bin", 7),
    "chmod": lambda r: os.chmod(r / "top1.txt", 0o600),
    "rewrite": lambda r: (r / "top2.txt").write_text("other content, longer\n"),
    "same-mtime-second": lambda r: same_second_rewrite(r / "d" / "e2"),
    "dir-replaced-by-file": lambda r: (shutil.rmtree(r / "a" / "b" / "c"),
                                       (r / "a" / "b" / "c").write_text("a file now\n")),
    "nested-dir-deleted": lambda r: shutil.rmtree(r / "a" / "b"),
    "symlink-retargeted": lambda r: ((r / "dangling").unlink(), (r / "dangling").symlink_to("elsewhere")),
    "file-replaced-by-dir-symlink": lambda r: ((r / "top3.txt").unlink(), (r / "top3.txt").symlink_to("d")),
    "fifo-created": lambda r: os.mkfifo(r / "d" / "pipe"),
    "owner-marker": lambda r: (r / ".tether-owner").write_text("not content\n"),
    "many": lambda r: [(r / "d" / f"e{i}").write_text(f"changed {i}\n") for i in range(5)],
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_watched_state_is_the_walks_after_each_change(change, build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    make_tree(root)
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    before = trio.check("walking: no rows stored with a Watchman clock yet")
    assert trio.check("Watchman: 0 path(s) changed") == before
    CHANGES[change](root)
    after = trio.check("Watchman: ")
    if change not in ("chmod", "fifo-created", "owner-marker"):  # none of them content
        assert after != before
    # and again: the changes since the stored clock are asked for again
    assert trio.check("Watchman: ") == after


def test_new_directory_is_walked(build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    make_tree(root)
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    (root / "a" / "fresh" / "er").mkdir(parents=True)
    (root / "a" / "fresh" / "er" / "x").write_text("x\n")
    trio.check("walking: a directory appeared")
    (root / "a" / "fresh" / "er" / "x").write_text("y\n")
    trio.check("Watchman: 1 path(s) changed")  # stored again after that walk


def test_many_changes_store_the_rows_again(build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    (root / "d").mkdir(parents=True)
    for i in range(1100):
        (root / "d" / f"f{i:04d}").write_text(f"{i}\n")
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    for i in range(0, 1100):
        (root / "d" / f"f{i:04d}").write_text(f"{i} changed\n")
    trio.check("rows stored again")
    (root / "d" / "f0001").unlink()
    trio.check("Watchman: 1 path(s) changed")


# --- the fallbacks ---------------------------------------------------------------- #


def test_fresh_instance_after_a_restart(build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    make_tree(root)
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    subprocess.run([WATCHMAN, f"--sockname={watchman}", "--no-spawn", "shutdown-server"], env=trio.env, capture_output=True,
                   timeout=30)
    pid = (watchman.parent / "pid").read_text().strip()
    for _ in range(200):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.05)
    # a new server on the same socket knows nothing of the stored clock
    proc = subprocess.Popen([WATCHMAN, "--foreground", f"--sockname={watchman}",
                             f"--statefile={watchman.parent}/state2", f"--logfile={watchman.parent}/log2",
                             f"--pidfile={watchman.parent}/pid2", "--no-save-state"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if (watchman.parent / "pid2").exists() and watchman.exists():
                break
            time.sleep(0.05)
        time.sleep(0.2)
        (root / "top0.txt").write_text("changed while no one watched\n")
        trio.check("walking: Watchman cannot say what changed since the stored clock (a fresh instance")
        trio.check("Watchman: 0 path(s) changed")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_recrawl_is_not_trusted(build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    make_tree(root)
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    subprocess.run([WATCHMAN, f"--sockname={watchman}", "debug-recrawl", str(root)], env=trio.env, capture_output=True, check=True,
                   timeout=30)
    (root / "a" / "f0.txt").write_text("during a recrawl\n")
    for _ in range(100):  # the recrawl runs on Watchman's own thread
        if "warning" in subprocess.run([WATCHMAN, f"--sockname={watchman}", "--no-pretty", "watch-project", str(root)], env=trio.env,
                                       capture_output=True, text=True).stdout:
            break
        time.sleep(0.05)
    trio.check("walking: Watchman recrawled the directory since the stored clock")
    # the walk stored its rows with a clock after the recrawl: trusted again
    (root / "a" / "f0.txt").write_text("after the recrawl\n")
    trio.check("Watchman: 1 path(s) changed")


def test_clock_of_another_watch(build_dir, env, tmp_path, watchman):
    root, other = tmp_path / "data", tmp_path / "other"
    make_tree(root)
    make_tree(other)
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    Trio(build_dir, env, other, watchman, tmp_path).check("walking: no rows stored")
    snaps = {p: p.read_bytes() for p in (tmp_path / "cache-watch" / "file-watch").iterdir()}
    assert len(snaps) == 2
    # the stored rows of root, with other's clock
    out = subprocess.run([WATCHMAN, f"--sockname={watchman}", "--no-pretty", "clock", str(other)], env=trio.env,
                         capture_output=True, text=True, check=True).stdout
    other_clock = json.loads(out).get("clock")
    assert other_clock, out
    for p, data in snaps.items():
        head, _, rest = data.partition(b"\n")
        hdr = json.loads(head)
        if hdr["root"] == str(root):
            hdr["clock"] = other_clock
            new = json.dumps(hdr, separators=(",", ":"), sort_keys=True).encode() + b"\n"
            pad = (-len(new)) % 8
            body = rest[(-(len(head) + 1)) % 8:]
            p.write_bytes(new + b"\0" * pad + body)
            # and another watch's rows under root's name
    (root / "d" / "e0").write_text("changed\n")
    trio.check("walking: ")
    trio.check("Watchman: 0 path(s) changed")
    # a snapshot naming another watch
    for p in (tmp_path / "cache-watch" / "file-watch").iterdir():
        head, _, rest = p.read_bytes().partition(b"\n")
        hdr = json.loads(head)
        if hdr["root"] == str(root):
            hdr["watch"] = str(other)
            new = json.dumps(hdr, separators=(",", ":"), sort_keys=True).encode() + b"\n"
            body = rest[(-(len(head) + 1)) % 8:]
            p.write_bytes(new + b"\0" * ((-len(new)) % 8) + body)
    trio.check("walking: the stored clock is of another watch")


def test_symlinked_directory(build_dir, env, tmp_path, watchman):
    """A locator through a symlink is resolved first (as tether-vcs's
    local_path does): the directory watched and walked is the target."""
    real = tmp_path / "real"
    make_tree(real)
    (tmp_path / "link").symlink_to(real)
    trio = Trio(build_dir, env, tmp_path / "link", watchman, tmp_path)
    trio.check(f"{real}: walking: no rows stored")
    (real / "top0.txt").write_text("changed\n")
    trio.check(f"{real}: Watchman: 1 path(s) changed")


def test_symlink_to_a_file_inside(build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    make_tree(root)
    (root / "to-file").symlink_to("top0.txt")
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    (root / "top0.txt").write_text("the link's target changed\n")
    trio.check("walking: it holds symlinks to files")
    (root / "to-file").unlink()
    trio.check("walking: it holds symlinks to files")
    trio.check("Watchman: 0 path(s) changed")
    (root / "d" / "to-file").symlink_to("e1")
    trio.check("walking: a symlink to a file appeared")


def test_vcs_directory_inside(build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    make_tree(root)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: x\n")
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: it holds a .git, .hg or .svn directory")
    (root / ".git" / "HEAD").write_text("ref: y\n")
    trio.check("walking: it holds a .git, .hg or .svn directory")


def test_watchman_missing(build_dir, env, tmp_path):
    root = tmp_path / "data"
    make_tree(root)
    bare = tmp_path / "bin"
    bare.mkdir()
    trio = Trio(build_dir, env, root, tmp_path / "unused", tmp_path)
    del trio.env["WATCHMAN_SOCK"]
    trio.env["PATH"] = str(bare)
    trio.check("walking: Watchman is not installed")


def serve(path: Path, answer) -> threading.Thread:
    """A unix socket answering each request line with answer(request)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(4)

    def loop():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            with c:
                buf = b""
                while True:
                    data = c.recv(65536)
                    if not data:
                        break
                    buf += data
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        out = answer(json.loads(line))
                        if out is not None:
                            c.sendall(json.dumps(out).encode() + b"\n")
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    t.sock = s  # type: ignore[attr-defined]
    return t


def test_watchman_too_old(build_dir, env, tmp_path):
    """What Watchman before relative_root answers a version request that
    requires it."""
    root = tmp_path / "data"
    make_tree(root)
    sock = tmp_path / "old.sock"
    t = serve(sock, lambda req: {"version": "3.0.0", "error": "client required capability "
                                 "`relative_root` is not supported by this server"})
    try:
        trio = Trio(build_dir, env, root, sock, tmp_path)
        trio.check("walking: Watchman is too old")
    finally:
        t.sock.close()  # type: ignore[attr-defined]


def test_watchman_not_answering(build_dir, env, tmp_path):
    root = tmp_path / "data"
    make_tree(root)
    sock = tmp_path / "mute.sock"
    t = serve(sock, lambda req: None)
    try:
        trio = Trio(build_dir, env, root, sock, tmp_path)
        got, trace = trio.watched({"TETHER_WATCHMAN_TIMEOUT_MS": "300"})
        assert "walking: Watchman did not answer in 300 ms" in trace
        assert got == build_backend("file").fingerprint({"uri": str(root)}, None)
    finally:
        t.sock.close()  # type: ignore[attr-defined]


def test_bad_setting_is_refused(build_dir, env, tmp_path):
    root = tmp_path / "data"
    make_tree(root)
    p = subprocess.run([str(build_dir / "tt_backend"), "file", json.dumps({"uri": str(root)}), "fingerprint"],
                       env=dict(env, TETHER_FSMONITOR="inotify"), capture_output=True, text=True)
    assert p.returncode == 1
    assert 'TETHER_FSMONITOR is "inotify"' in p.stderr and '"watchman"' in p.stderr


# --- through the CLI: secrets.toml's opt-in ------------------------------------------ #


def test_status_with_secrets_opt_in(tether, git_repo, env, tmp_path, watchman):
    root = tmp_path / "stores" / "data"
    make_tree(root)
    ds = git_repo
    tether("init", cwd=ds)
    tether("add", "d", str(root), "--kind", "file", cwd=ds)
    tether("commit", "-m", "first", cwd=ds)
    secrets = ds / ".tether" / "secrets.toml"
    secrets.write_text('[file]\nfsmonitor = "watchman"\n')
    secrets.chmod(0o600)
    e = {"WATCHMAN_SOCK": str(watchman), "TETHER_TRACE": "1"}
    p = tether("status", "--snapshot", cwd=ds, env=e)
    assert "walking: no rows stored" in p.stderr
    p = tether("status", "--snapshot", cwd=ds, env=e)
    assert "Watchman: 0 path(s) changed" in p.stderr
    clean = tether.json("status", "--snapshot", cwd=ds, env=e)
    assert [o["state"] for o in clean["objects"]] == ["clean"]
    # the file stays out of the dataset's history: secrets.toml is never committed
    assert "secrets.toml" not in git("ls-files", cwd=ds, env=env)
    # without the trace, nothing extra on stderr
    assert tether("status", "--snapshot", cwd=ds, env={"WATCHMAN_SOCK": str(watchman)}).stderr == ""
    # a change is seen, and a listing (commit) is the walk's
    (root / "a" / "f0.txt").write_text("changed\n")
    p = tether("status", "--snapshot", cwd=ds, env=e, check=False)
    assert "Watchman: 1 path(s) changed" in p.stderr
    # the environment wins over secrets.toml: `none` walks, and says nothing
    p = tether("status", "--snapshot", cwd=ds, env=dict(e, TETHER_FSMONITOR="none"), check=False)
    assert "tether: trace:" not in p.stderr
    # and with it back on, Watchman is asked again from the same stored clock
    p = tether("status", "--snapshot", cwd=ds, env=e, check=False)
    assert "Watchman: 1 path(s) changed" in p.stderr


def test_commit_listing_with_the_watcher_is_the_walks(tether, git_repo, env, tmp_path, watchman):
    """A watched refresh gives a state without rows; the listing a commit
    stores is then read by a walk, byte for byte tether-vcs's."""
    from tether.manifest import listing_name
    root = tmp_path / "stores" / "data"
    make_tree(root)
    ds = git_repo
    tether("init", cwd=ds)
    tether("add", "d", str(root), "--kind", "file", cwd=ds)
    e = {"WATCHMAN_SOCK": str(watchman), "TETHER_TRACE": "1", "TETHER_FSMONITOR": "watchman"}
    tether("snapshot", cwd=ds, env=e)
    (root / "a" / "f0.txt").write_text("changed before the commit\n")
    assert "Watchman: 1 path(s) changed" in tether("snapshot", cwd=ds, env=e).stderr
    tether("commit", "-m", "watched", cwd=ds, env=e)
    backend = build_backend("file")
    loc = {"uri": str(root)}
    state = backend.fingerprint(loc, None)
    listing = ds / ".tether" / "listings" / listing_name("file", backend.identity(loc), state)
    assert listing.read_text(encoding="utf-8") == backend.listing(loc, state)


def test_directory_below_a_project_root(build_dir, env, tmp_path, watchman):
    """Watchman watches the enclosing project (a directory holding .git):
    the directory is asked about by its path relative to that watch."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    root = project / "sub" / "data"
    make_tree(root)
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    (root / "a" / "f3.txt").write_text("changed below the project\n")
    (project / "elsewhere.txt").write_text("outside the directory: not asked about\n")
    trio.check("Watchman: 1 path(s) changed")
    out = subprocess.run([WATCHMAN, f"--sockname={watchman}", "--no-pretty", "watch-list"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["roots"] == [str(project)]


@pytest.mark.parametrize("damage", ["truncated", "other-version"])
def test_damaged_stored_rows_are_walked(damage, build_dir, env, tmp_path, watchman):
    root = tmp_path / "data"
    make_tree(root)
    trio = Trio(build_dir, env, root, watchman, tmp_path)
    trio.check("walking: no rows stored")
    (snap,) = (tmp_path / "cache-watch" / "file-watch").iterdir()
    data = snap.read_bytes()
    if damage == "truncated":
        snap.write_bytes(data[:-5])
        expect = "walking: the stored rows are damaged"
    else:
        head, _, rest = data.partition(b"\n")
        hdr = json.loads(head)
        hdr["v"] = 99
        new = json.dumps(hdr, separators=(",", ":"), sort_keys=True).encode() + b"\n"
        snap.write_bytes(new + b"\0" * ((-len(new)) % 8) + rest[(-(len(head) + 1)) % 8:])
        expect = "walking: the stored rows are of another version"
    (root / "d" / "e4").write_text("changed\n")
    trio.check(expect)
    trio.check("Watchman: 0 path(s) changed")
