"""Progress of a file fingerprint (issue 21): files and bytes hashed, with a
rate and an ETA, at most ~10 redraws a second, erased cleanly -- on a
pseudo-terminal, from the library's progress callback."""
from __future__ import annotations

import os
import re
import time

from test_cli_manners import run_in_pty

# "fingerprint: 1/2 objects[, KEY done]; 12/3000 files, 1.5 MiB/47 MiB[, 103 MiB/s] (0.4s[, ETA 0.1s])"
LINE = re.compile(
    r"fingerprint: (\d+)/(\d+) objects(?:, (\S+) done)?; (\d+)/(\d+) files, "
    r"([\d.]+ (?:B|KiB|MiB|GiB))/([\d.]+ (?:B|KiB|MiB|GiB))(, [\d.]+ (?:B|KiB|MiB|GiB)/s)? "
    r"\(([\d.]+)s(?:, ETA [\dm.s]+)?\)")
FILES, SIZE = 3000, 16384


def test_file_fingerprint_progress_counts_files_and_bytes(git_repo, tether, tmp_path):
    data = tmp_path / "many"
    data.mkdir()
    for i in range(FILES):
        (data / f"f{i:04d}").write_bytes(os.urandom(SIZE))
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "a").write_text("a\n")
    tether("init", cwd=git_repo)
    tether("add", "many", str(data), "--kind", "file", cwd=git_repo)
    tether("add", "small", str(tmp_path / "small"), "--kind", "file", cwd=git_repo)
    env = dict(tether.env, TERM="xterm", TETHER_PROGRESS="1")
    started = time.monotonic()
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot"], git_repo, env)
    took = time.monotonic() - started
    assert rc == 0, out
    draws = out.split("\r\033[K")
    lines = [m for m in (LINE.search(d) for d in draws) if m]
    assert lines, out
    # the files and bytes of both objects, counted up to all of them
    total_files = FILES + 1
    seen = [(int(m[4]), int(m[5])) for m in lines]
    assert all(done <= total <= total_files for done, total in seen), seen
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    last = lines[-1]
    assert (int(last[4]), int(last[5])) == (total_files, total_files), last[0]
    assert last[7] == "47 MiB" and last[6] == "47 MiB", last[0]
    # byte counts come once per file, but redraws stay at ~10 a second
    byte_only = [m for m in lines if not m[3]]
    assert len(byte_only) <= 10 * took + 3, (len(byte_only), took)
    # once the hashing has run a while, a rate is shown
    spans = [float(m[9]) for m in lines]
    if spans[-1] - spans[0] >= 0.4:
        assert any(m[8] for m in lines), [m[0] for m in lines]
    # erased before the result
    assert out.index("dataset ") > out.rindex("fingerprint: ")
    assert out[out.rindex("fingerprint: "):].count("\r\033[K") >= 1
    # --json keeps stderr free of it
    rc, out = run_in_pty([str(tether.exe), "status", "--snapshot", "--json"], git_repo, env)
    assert rc == 0 and "fingerprint:" not in out


def test_file_progress_lines_fit_a_narrow_terminal(git_repo, tether, tmp_path):
    data = tmp_path / ("a-rather-long-object-key-" * 3)
    data.mkdir()
    for i in range(50):
        (data / f"f{i}").write_bytes(os.urandom(1024))
    tether("init", cwd=git_repo)
    tether("add", data.name, str(data), "--kind", "file", cwd=git_repo)
    env = dict(tether.env, TERM="xterm", TETHER_PROGRESS="1")
    import fcntl
    import struct
    import termios

    # a 40-column terminal: set on the pty before the command runs
    import pty as ptymod

    pid, fd = ptymod.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
        os.chdir(str(git_repo))
        argv = [str(tether.exe), "status", "--snapshot"]
        os.execve(argv[0], argv, env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = out.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    draws = [d for d in text.split("\r\033[K") if d.startswith("fingerprint")]
    assert draws, text
    assert all(len(d.split("\r\n")[0]) <= 39 for d in draws), draws
