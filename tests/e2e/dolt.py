"""A Dolt server for the dolt backend's tests.

By default the test server of tests/servers/dolt (go-mysql-server with Dolt's
versioning surface), built once per machine by scripts/dolt-test-server.sh
into ~/.cache/tether-tools/dolt-test-server-<hash>; the fixture builds it
when it is missing (under the script's lock) and fails when it cannot and
TETHER_REQUIRE_TOOLS=1.  Each test gets its own server process on
127.0.0.1 at a free port, with a password, so authentication is exercised.

TETHER_TEST_DOLT=host:port[/db] runs the same tests against a real
`dolt sql-server` instead (TETHER_TEST_DOLT_USER, default root, and
TETHER_TEST_DOLT_PASSWORD): each test then creates and drops its own
database (named after /db when given).
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "dolt-test-server.sh"
PASSWORD = "d0lt-S3cret pw"
USER = "tether"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Dolt:
    def __init__(self, host: str, port: int, database: str, user: str, password: str, real: bool):
        self.host, self.port, self.database = host, port, database
        self.user, self.password, self.real = user, password, real

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}/{self.database}"

    def connect(self, database: str | None = None, autocommit: bool = True):
        import pymysql
        return pymysql.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                               database=database or self.database, autocommit=autocommit)

    def sql(self, statement: str, params: tuple = (), database: str | None = None) -> list[tuple]:
        con = self.connect(database)
        try:
            with con.cursor() as cur:
                cur.execute(statement, params)
                return [tuple(r) for r in cur.fetchall()] if cur.description else []
        finally:
            con.close()

    def commit(self, message: str, database: str | None = None) -> str:
        return self.sql("CALL DOLT_COMMIT('-A', '-m', %s)", (message,), database)[0][0]

    def head(self, branch: str = "main") -> str:
        return self.sql("SELECT hash FROM dolt_branches WHERE name = %s", (branch,))[0][0]

    def tags(self) -> dict[str, str]:
        return dict(self.sql("SELECT tag_name, tag_hash FROM dolt_tags"))

    def branches(self) -> dict[str, str]:
        return dict(self.sql("SELECT name, hash FROM dolt_branches"))

    def secrets(self) -> str:
        pw = self.password.replace("\\", "\\\\").replace('"', '\\"')
        return f'[uris."mysql://{self.host}:{self.port}"]\nuser = "{self.user}"\npassword = "{pw}"\n'


def server_binary() -> Path | None:
    path = Path(subprocess.run([str(SCRIPT), "path"], capture_output=True, text=True, check=True).stdout.strip())
    if not path.exists():
        build = subprocess.run([str(SCRIPT), "build"], capture_output=True, text=True, timeout=1800)
        if build.returncode != 0 or not path.exists():
            msg = f"the dolt test server could not be built: {build.stderr.strip()[-500:]}"
            if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
                pytest.fail(msg)
            pytest.skip(msg)
    return path


@pytest.fixture
def dolt(tmp_path):
    if os.environ.get("TETHER_TEST_DOLT"):
        yield from _real_server()
        return
    yield from _test_server(tmp_path)


# How long the test server takes over a COMMIT that publishes a merged
# working set, before and after publishing it (-commit-lag): a loaded
# server, on which the sessions of racing clients interleave.
COMMIT_LAG = "150ms"


@pytest.fixture
def loaded_dolt(tmp_path):
    """A Dolt on which racing sessions interleave: the test server with
    -commit-lag (a branch a merge moved reads dirty at its new head, to other
    sessions, until the merging transaction's COMMIT publishes its working
    set, as on Dolt), or the real server of TETHER_TEST_DOLT as it is."""
    if os.environ.get("TETHER_TEST_DOLT"):
        yield from _real_server()
        return
    yield from _test_server(tmp_path, "-commit-lag", COMMIT_LAG)


def _real_server():
    hostport, _, db = os.environ["TETHER_TEST_DOLT"].partition("/")
    host, _, port = hostport.rpartition(":")
    name = f"{db or 'tether_e2e'}_{uuid.uuid4().hex[:8]}"
    server = Dolt(host or "127.0.0.1", int(port), name, os.environ.get("TETHER_TEST_DOLT_USER", "root"),
                  os.environ.get("TETHER_TEST_DOLT_PASSWORD", ""), True)
    import pymysql
    con = pymysql.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                          autocommit=True)
    with con.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    try:
        yield server
    finally:
        with con.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        con.close()


def _test_server(tmp_path, *extra: str):
    exe = server_binary()
    port = _free_port()
    log = tmp_path / "doltserver.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(exe), "-addr", f"127.0.0.1:{port}", "-db", "tetherdb", "-user", USER,
                                 "-password", PASSWORD, *extra], stdout=out, stderr=subprocess.STDOUT)
    server = Dolt("127.0.0.1", port, "tetherdb", USER, PASSWORD, False)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                server.sql("SELECT 1")
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"dolt test server did not start: {log.read_text()}")
                time.sleep(0.1)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def old_dolt(tmp_path):
    """The test server playing a Dolt before dolt_branches.dirty (1.40) and
    DOLT_MERGE --ff-only (1.79.2): the fallbacks' test.  Not run against a
    real server (TETHER_TEST_DOLT), whose version is what it is."""
    if os.environ.get("TETHER_TEST_DOLT"):
        pytest.skip("plays an older Dolt on the test server only")
    yield from _test_server(tmp_path, "-without", "dirty,ff-only")
