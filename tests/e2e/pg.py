"""A throwaway PostgreSQL 15 server for the registry tests.

`postgres_server` (session scope) runs initdb and pg_ctl from the Debian
packages in a temporary directory, listening on 127.0.0.1 at a free port,
with password (scram) authentication over TCP; when the tests run as root
the server runs as the `postgres` system user, which owns the data
directory.  It is stopped when the session ends.  `pg_dsn` gives each test
a fresh database and a DSN with the password in it (so tests can check it
is never printed).  `psql` runs SQL there and returns rows as lists.
"""
from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

PG_BIN = Path(os.environ.get("TETHER_PG_BIN", "/usr/lib/postgresql/15/bin"))
PASSWORD = "s3cret-Pa55word"
USER = "tether"
_counter = itertools.count()


class Server:
    def __init__(self, port: int, base: Path, prefix: list[str]):
        self.port = port
        self.base = base
        self.prefix = prefix

    def dsn(self, db: str = "postgres", password: bool = True) -> str:
        auth = f"{USER}:{PASSWORD}" if password else USER
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{db}"

    def psql(self, sql: str, db: str = "postgres", check: bool = True) -> list[list[str]]:
        env = dict(os.environ, PGPASSWORD=PASSWORD)
        proc = subprocess.run(
            [str(PG_BIN / "psql"), "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
             "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, "-d", db, "-c", sql],
            env=env, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"psql failed: {proc.stderr}")
        return [line.split("\t") for line in proc.stdout.splitlines() if line]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_server():
    if not (PG_BIN / "initdb").exists():
        pytest.fail(f"PostgreSQL 15 is not installed ({PG_BIN}); run scripts/setup.sh")
    base = Path(tempfile.mkdtemp(prefix="tether-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        # initdb refuses to run as root: hand the directory to `postgres`.
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, sock = base / "data", base / "sock"
    pwfile = base / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        os.chown(pwfile, user.pw_uid, user.pw_gid)
    run = lambda *args: subprocess.run([*prefix, *map(str, args)], check=True,  # noqa: E731
                                       capture_output=True, text=True, timeout=120)
    run("mkdir", "-p", sock)
    run(PG_BIN / "initdb", "-D", data, "-U", USER, "--pwfile", pwfile, "--auth-host=scram-sha-256",
        "--auth-local=trust", "-E", "UTF8", "--locale=C.UTF-8")
    port = _free_port()
    log = base / "server.log"
    run(PG_BIN / "pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "-o",
        f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    server = Server(port, base, prefix)
    try:
        yield server
    finally:
        subprocess.run([*prefix, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                        "stop"], capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_db(postgres_server):
    """A fresh database: (server, name)."""
    name = f"t{os.getpid()}_{next(_counter)}"
    postgres_server.psql(f"CREATE DATABASE {name}")
    return postgres_server, name
