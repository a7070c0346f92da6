"""Apache Iceberg's own REST catalog server for the iceberg REST tests.

`rest_server` starts the iceberg-open-api test server (a JDBC catalog on
SQLite behind the REST routes) through the launcher in
tests/servers/iceberg-rest, bound to 127.0.0.1 on a free port, with its
warehouse in a temporary directory (file://), and waits for /v1/config.
It needs a bearer token (TOKEN) or the OAuth2 client credentials
(CLIENT:SECRET) on every request, so the tests see that the client sends
them.  scripts/setup.sh installs the server (scripts/iceberg-rest.sh);
without it the tests skip, or fail under TETHER_REQUIRE_TOOLS=1.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "rest-T0ken-sekrit"
CLIENT = "tether-client"
SECRET = "cl1ent-Sekrit"


def server_dir() -> Path:
    out = subprocess.run([str(ROOT / "scripts" / "iceberg-rest.sh"), "path"], capture_output=True,
                         text=True, check=True)
    return Path(out.stdout.strip())


class RestServer:
    def __init__(self, port: int, warehouse: Path, proc: subprocess.Popen, log: Path):
        self.port = port
        self.uri = f"http://127.0.0.1:{port}"
        self.warehouse = warehouse
        self.proc = proc
        self.log = log


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(java: str, d: Path, port: int, warehouse: Path, base: Path, props, out):
    return subprocess.Popen(
        # C1 only and the serial collector: a quicker start for a short-lived test server.
        [java, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
         f"-Dtether.rest.token={TOKEN}", f"-Dtether.rest.client={CLIENT}",
         f"-Dtether.rest.secret={SECRET}",
         *(f"-Dtether.rest.{k}={v}" for k, v in (props or {}).items()), "-cp", f"{d / 'classes'}:{d / 'lib'}/*",
         "org.apache.iceberg.rest.TetherRestServer", str(port), str(warehouse), str(base / "catalog.db")],
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def start_server(base: Path, props: dict[str, str] | None = None) -> RestServer:
    d = server_dir()
    java = shutil.which("java")
    msg = None
    if not (d / "classes" / "org" / "apache" / "iceberg" / "rest" / "TetherRestServer.class").exists():
        msg = f"the Iceberg REST server is not installed ({d}); run scripts/setup.sh"
    elif not java:
        msg = "java is not installed; run scripts/setup.sh"
    if msg:
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    warehouse = base / "warehouse"
    warehouse.mkdir(parents=True)
    port = _free_port()
    log = base / "server.log"
    with open(log, "w") as out:
        proc = _spawn(java, d, port, warehouse, base, props, out)
    deadline = time.monotonic() + 60
    while True:
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/config",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the Iceberg REST server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    return RestServer(port, warehouse, proc, log)


def stop_server(s: RestServer) -> None:
    s.proc.terminate()
    try:
        s.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()


@pytest.fixture
def rest_server(tmp_path):
    """A fresh server per test (its fault counters and tables are the
    test's own), warehouse under tmp_path/rest, linked as tmp_path/warehouse
    where the shared iceberg scenarios look for metadata files."""
    base = tmp_path / "rest"
    base.mkdir()
    s = start_server(base)
    (tmp_path / "warehouse").symlink_to(s.warehouse)
    yield s
    stop_server(s)
