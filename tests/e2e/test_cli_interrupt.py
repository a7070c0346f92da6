"""Ctrl-C while a command has its dataset open: the first SIGINT stops the
read-only phase once the objects under way are done -- exit 130,
"cancelled", nothing written -- and a second ends the process at once.

The fingerprint is held in flight by a proxy in front of moto that answers
the listing only when the test lets it, so the signal lands mid-phase on
every run, however loaded the machine.

Needs moto[server] and botocore (tests/requirements.txt)."""
from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading

import pytest

from conftest import TETHER_BIN
from s3server import FaultProxy, MotoS3
from test_s3_faults import BUCKET, dataset, head, listing

moto = pytest.importorskip("moto")

NOTICE = "tether: interrupted: stopping once the objects under way are done"


class Gate:
    """Holds every listing until opened; says when the first one arrived."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.open = threading.Event()

    def hook(self, method: str, path: str):
        if listing(method, path) and not self.open.is_set():
            self.reached.set()
            self.open.wait(60)
        return None


@pytest.fixture
def held(tmp_path, tether):
    s3 = MotoS3(BUCKET)
    for i in range(30):
        s3.client.put_object(Bucket=BUCKET, Key=f"p/{i:03d}", Body=b"x" * i)
    proxy = FaultProxy(s3.port)
    ds = dataset(tmp_path / "ds", tether, proxy.url)
    gate = Gate()
    proxy.hook = gate.hook
    yield ds, gate
    gate.open.set()
    proxy.close()
    s3.close()


def start(env, ds, *args, sigint=signal.SIG_DFL) -> tuple[subprocess.Popen, queue.Queue]:
    # SIGINT's disposition is set for the child: a suite started in the background by a
    # non-interactive shell inherits it ignored, and tether keeps an ignored SIGINT
    # ignored, so by default the child gets what a terminal's foreground job has.
    proc = subprocess.Popen([str(TETHER_BIN), *args], cwd=ds, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


def wait_for(lines: queue.Queue, needle: str) -> list[str]:
    seen = []
    while True:
        line = lines.get(timeout=60)
        assert line is not None, f"stderr ended before {needle!r}: {seen}"
        seen.append(line)
        if needle in line:
            return seen


def rest(lines: queue.Queue) -> str:
    out = []
    while (line := lines.get(timeout=60)) is not None:
        out.append(line)
    return "".join(out)


def untouched(ds, before: str, ops_before: str) -> None:
    assert head(ds) == before
    assert "digest" not in (ds / ".tether/objects/p.toml").read_text()
    assert ops_text(ds) == ops_before


def ops_text(ds) -> str:
    ops = ds / ".tether/ops.jsonl"
    return ops.read_text() if ops.exists() else ""


def test_ctrl_c_stops_a_commit_in_its_fingerprint_and_nothing_is_written(held, env, tether):
    ds, gate = held
    before, ops_before = head(ds), ops_text(ds)
    proc, lines = start(env, ds, "commit", "-m", "p")
    assert gate.reached.wait(60)
    proc.send_signal(signal.SIGINT)
    wait_for(lines, NOTICE)  # printed once the request is made
    gate.open.set()          # the object under way finishes...
    err = rest(lines)
    assert proc.wait(timeout=60) == 130, err
    # ...and the phase stops there: no pin, no manifest, no journal entry, no commit
    assert "error: fingerprint cancelled after 1 of 1 object(s); nothing was written" in err, err
    untouched(ds, before, ops_before)
    # the same commit, left alone, records the object
    tether("commit", "-m", "p", cwd=ds)
    assert "count = 30" in (ds / ".tether/objects/p.toml").read_text()


def test_ctrl_c_under_json_is_a_cancelled_error_object(held, env):
    ds, gate = held
    proc, lines = start(env, ds, "status", "--json")
    assert gate.reached.wait(60)
    proc.send_signal(signal.SIGINT)
    wait_for(lines, NOTICE)
    gate.open.set()
    err = rest(lines)
    assert proc.wait(timeout=60) == 130, err
    assert proc.stdout.read() == ""
    e = json.loads(err.strip().splitlines()[-1])["error"]
    assert e["code"] == "cancelled" and e["exit"] == 130
    assert "nothing was written" in e["message"]


def test_a_second_ctrl_c_ends_the_process_at_once(held, env):
    ds, gate = held
    before, ops_before = head(ds), ops_text(ds)
    proc, lines = start(env, ds, "commit", "-m", "p")
    assert gate.reached.wait(60)
    proc.send_signal(signal.SIGINT)
    wait_for(lines, NOTICE)
    proc.send_signal(signal.SIGINT)  # the listing is still held: only the signal can end it
    assert proc.wait(timeout=60) == -signal.SIGINT
    untouched(ds, before, ops_before)


def test_a_sigint_the_shell_ignores_stays_ignored(held, env):
    ds, gate = held
    proc, lines = start(env, ds, "commit", "-m", "p", sigint=signal.SIG_IGN)
    assert gate.reached.wait(60)
    proc.send_signal(signal.SIGINT)  # discarded by the kernel: the process ignores it
    gate.open.set()
    err = rest(lines)
    assert proc.wait(timeout=60) == 0, err
    assert NOTICE not in err
    assert "count = 30" in (ds / ".tether/objects/p.toml").read_text()
