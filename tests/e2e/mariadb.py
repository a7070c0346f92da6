"""A throwaway MariaDB server (Debian's mariadb-server) for the tests of
the MySQL side of the db layer, and for anything else that needs a real
MySQL-protocol server.

`mariadb_server` (session scope) runs mariadb-install-db and mariadbd in a
temporary directory, listening on 127.0.0.1 at a free port, with a user
that authenticates by password over TCP (root stays on the socket only).
No option file is read (--no-defaults), so the machine's own MariaDB
configuration never leaks in.  It is stopped when the session ends.
`mysql_db` gives each test a fresh database.
"""
from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

PASSWORD = "my-S3cret-pw"
USER = "tether"
_counter = itertools.count()


def _tool(name: str, *alts: str) -> str | None:
    for n in (name, *alts):
        p = shutil.which(n) or (f"/usr/sbin/{n}" if Path(f"/usr/sbin/{n}").exists() else None)
        if p:
            return p
    return None


class Server:
    def __init__(self, port: int, base: Path, sock: Path, client: str):
        self.port, self.base, self.sock, self.client = port, base, sock, client

    def url(self, db: str = "", password: bool = True) -> str:
        auth = f"{USER}:{PASSWORD}" if password else USER
        return f"mysql://{auth}@127.0.0.1:{self.port}/{db}"

    def sql(self, statement: str, db: str | None = None) -> list[list[str]]:
        args = [self.client, "--no-defaults", "-S", str(self.sock), "-u", "root", "-N", "-B", "-r", "-e", statement]
        if db:
            args.append(db)
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise AssertionError(f"mariadb failed: {proc.stderr}")
        return [line.split("\t") for line in proc.stdout.splitlines() if line]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def mariadb_server():
    install, daemon, client = _tool("mariadb-install-db"), _tool("mariadbd", "mysqld"), _tool("mariadb")
    if not (install and daemon and client):
        pytest.fail("MariaDB is not installed (mariadb-server); run scripts/setup.sh")
    base = Path(tempfile.mkdtemp(prefix="tether-mariadb-"))
    data, sock, log = base / "data", base / "sock", base / "server.log"
    user = ["--user=root"] if os.geteuid() == 0 else []
    subprocess.run([install, "--no-defaults", f"--datadir={data}", *user, "--skip-test-db",
                    "--auth-root-authentication-method=socket"],
                   check=True, capture_output=True, text=True, timeout=300)
    port = _free_port()
    proc = subprocess.Popen([daemon, "--no-defaults", f"--datadir={data}", *user, f"--port={port}",
                             "--bind-address=127.0.0.1", f"--socket={sock}", f"--pid-file={base / 'pid'}",
                             f"--log-error={log}", "--skip-log-bin", "--innodb-buffer-pool-size=32M"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Server(port, base, sock, client)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                server.sql("SELECT 1")
                break
            except AssertionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("mariadbd did not start: " + (log.read_text() if log.exists() else ""))
                time.sleep(0.2)
        server.sql(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}'")
        server.sql(f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%'")
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def mysql_db(mariadb_server):
    """A fresh database: (server, name)."""
    name = f"t{os.getpid()}_{next(_counter)}"
    mariadb_server.sql(f"CREATE DATABASE {name}")
    return mariadb_server, name
