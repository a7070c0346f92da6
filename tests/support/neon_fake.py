"""A fake of Neon's control-plane API v2, backed by real PostgreSQL 15.

Written from Neon's published OpenAPI spec (public-v2-for-users.gen.yaml in
the npm package @neondatabase/api-client): every request it receives and
every response it sends is validated against that spec, and any mismatch is
recorded in `FakeNeon.violations` (the tests assert it stays empty), so a
client tested here cannot drift from the real API.

Model.  A Neon branch owns its own PostgreSQL cluster (a data directory):
its own WAL, LSNs and transaction ids, as a Neon timeline has.  A branch
created at its parent's head is a base backup of the parent's running
compute (or a copy of the parent's stopped data directory); one created at
an explicit `parent_lsn` is accepted only when no transaction committed on
the parent after that LSN (pg_walinspect reads the parent's WAL), so the copy
holds exactly the data at that LSN; otherwise it is refused, as Neon refuses
an LSN outside its history window.  It never branches at another point
silently.  An endpoint is a running postmaster on the branch's data
directory (read_only: sessions default to read-only transactions); a
connection URI names its endpoint in `application_name`.

Faults on demand: `fail_next(status, ...)` answers the next matching
requests with an error (423, 429 + Retry-After, 503, ...) before doing
anything; `stall_next(seconds)` holds a request before handling it (a
client timeout); `slow_operations` keeps each new operation `running` that
long, during which Neon answers mutations with 423 Locked.
"""
from __future__ import annotations

import itertools
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

PG_BIN = Path(os.environ.get("TETHER_PG_BIN", "/usr/lib/postgresql/15/bin"))
ROLE = "tether"
PASSWORD = "npg-Fake-Pa55word"
PROJECT = "fake-project-1"
SPEC_HOST = "https://console.neon.tech"
SPEC_PREFIX = "/api/v2"

_spec_cache: dict[str, object] = {}


def spec_path() -> Path:
    here = Path(__file__).resolve().parents[2]
    out = subprocess.run([str(here / "scripts" / "neon-spec-path.sh")], capture_output=True,
                         text=True, check=True).stdout.strip()
    return Path(out)


def openapi():
    """The parsed spec (openapi-core), loaded once per process."""
    if "spec" not in _spec_cache:
        from openapi_core import OpenAPI
        _spec_cache["spec"] = OpenAPI.from_file_path(str(spec_path()))
    return _spec_cache["spec"]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_words = itertools.count(101)


def _new_id(prefix: str) -> str:
    return f"{prefix}-fake-{next(_words):06d}"


class NeonError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


class _Req:
    """An openapi-core request built from what the server received."""

    def __init__(self, method: str, path: str, query: str, headers: dict, body: bytes | None):
        from werkzeug.datastructures import Headers, ImmutableMultiDict
        from openapi_core.datatypes import RequestParameters
        self.method = method.lower()
        self.host_url = SPEC_HOST
        self.path = path
        self.body = body or None
        self.content_type = headers.get("Content-Type", "application/json") if body else ""
        q = ImmutableMultiDict([(k, v) for k, vs in parse_qs(query, keep_blank_values=True).items()
                                for v in vs])
        self.parameters = RequestParameters(query=q, header=Headers(list(headers.items())),
                                            cookie=ImmutableMultiDict())


class _Resp:
    def __init__(self, status: int, data: bytes | None, headers: dict):
        from werkzeug.datastructures import Headers
        self.status_code = status
        self.data = data
        self.content_type = "application/json" if data else ""
        self.headers = Headers(list(headers.items()))


class Branch:
    def __init__(self, fake: "FakeNeon", bid: str, name: str, parent: "Branch | None",
                 parent_lsn: str | None, protected: bool):
        self.id, self.name, self.parent_id = bid, name, parent.id if parent else None
        self.parent_lsn = parent_lsn
        self.protected = protected
        self.created_at = self.updated_at = _now()
        self.last_reset_at: str | None = None
        self.data = fake.base / "branches" / bid
        self.port: int | None = None  # running compute

    def json(self, fake: "FakeNeon") -> dict:
        out = {
            "id": self.id, "project_id": PROJECT, "name": self.name,
            "current_state": "ready", "state_changed_at": self.updated_at,
            "creation_source": "console", "created_at": self.created_at,
            "updated_at": self.updated_at, "default": self.parent_id is None,
            "primary": self.parent_id is None, "protected": self.protected,
            "cpu_used_sec": 0, "active_time_seconds": 0, "compute_time_seconds": 0,
            "written_data_bytes": 0, "data_transfer_bytes": 0, "logical_size": 0,
        }
        if self.parent_id:
            out["parent_id"] = self.parent_id
            out["parent_lsn"] = self.parent_lsn
            out["parent_timestamp"] = self.created_at
        if self.last_reset_at:
            out["last_reset_at"] = self.last_reset_at
        return out


class FakeNeon:
    """The fake: `url` is the API base (http://127.0.0.1:PORT/api/v2)."""

    def __init__(self, base: Path, api_key: str = "neon-fake-key-0123456789",
                 databases: tuple[str, ...] = ("app", "other"), page_size: int = 4):
        self.base = base
        self.api_key = api_key
        self.databases = databases
        self.page_size = page_size
        self.lock = threading.RLock()
        self.branches: dict[str, Branch] = {}
        self.endpoints: dict[str, dict] = {}
        self.operations: dict[str, dict] = {}
        self.violations: list[str] = []
        self.requests: list[tuple[str, str, dict | None]] = []
        self.faults: list[dict] = []
        self.stalls: list[float] = []
        self.slow_operations = 0.0
        self.pending = 0  # requests whose validation has not finished
        self.validating = threading.Lock()
        self.prefix: list[str] = []
        self.uid = self.gid = None
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            self.uid, self.gid = user.pw_uid, user.pw_gid
            self.prefix = ["runuser", "-u", "postgres", "--"]
        (base / "branches").mkdir(parents=True, exist_ok=True)
        (base / "sock").mkdir(exist_ok=True)
        if self.uid is not None:
            for p in (base, base / "branches", base / "sock"):
                os.chown(p, self.uid, self.gid)
        self._init_main()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{SPEC_PREFIX}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    # -- PostgreSQL ------------------------------------------------------ #
    def _run(self, *args, timeout: int = 120) -> str:
        proc = subprocess.run([*self.prefix, *map(str, args)], capture_output=True, text=True,
                              timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def _init_main(self) -> None:
        pw = self.base / "pw"
        pw.write_text(PASSWORD + "\n")
        if self.uid is not None:
            os.chown(pw, self.uid, self.gid)
        main = Branch(self, _new_id("br"), "main", None, None, False)
        self._run(PG_BIN / "initdb", "-D", main.data, "-U", ROLE, "--pwfile", pw,
                  "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8",
                  "--locale=C.UTF-8")
        self.branches[main.id] = main
        self._start(main)
        self.sql(main, "CREATE EXTENSION pg_walinspect")
        for db in self.databases:
            self.sql(main, f"CREATE DATABASE {db}")
            self.sql(main, "CREATE TABLE t (id int primary key, v text)", db=db)
        self.main = main

    def _start(self, br: Branch) -> None:
        if br.port is not None:
            return
        port = _free_port()
        opts = (f"-p {port} -k {self.base / 'sock'} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c shared_buffers=8MB -c max_connections=30 -c max_wal_senders=4 "
                "-c wal_level=replica -c autovacuum=off -c wal_keep_size=256MB")
        self._run(PG_BIN / "pg_ctl", "-D", br.data, "-l", f"{br.data}.log", "-w", "-t", "60",
                  "-o", opts, "start")
        br.port = port

    def _stop(self, br: Branch) -> None:
        if br.port is None:
            return
        self._run(PG_BIN / "pg_ctl", "-D", br.data, "-m", "fast", "-w", "stop")
        br.port = None

    def sql(self, br: Branch, query: str, db: str = "postgres") -> list[list[str]]:
        """Run SQL on a branch's compute (started when it has none)."""
        self._start(br)
        out = self._run(PG_BIN / "psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v",
                        "ON_ERROR_STOP=1", "-h", self.base / "sock", "-p", br.port, "-U", ROLE,
                        "-d", db, "-c", query)
        return [line.split("\t") for line in out.splitlines() if line]

    def _copy(self, src: Branch, dest: Path, lsn: str | None) -> str:
        """Copy src's data at its head (or at lsn, when nothing committed
        after it) into dest; the LSN the copy holds."""
        if src.port is None and lsn is None:
            self._run("cp", "-a", src.data, dest)
            return src.parent_lsn or "0/0"
        head = self.sql(src, "SELECT pg_current_wal_flush_lsn()")[0][0]
        if lsn is not None:
            if not re.fullmatch(r"[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}", lsn):
                raise NeonError(400, "BAD_REQUEST", f"invalid LSN {lsn!r}")
            if self._lsn(lsn) > self._lsn(head):
                raise NeonError(400, "BAD_REQUEST",
                                f"specified LSN {lsn} is in the future (branch head is {head})")
            if self._lsn(lsn) < self._lsn(head):
                try:
                    n = int(self.sql(src, "SELECT count(*) FROM pg_get_wal_records_info("
                                     f"'{lsn}', pg_current_wal_flush_lsn()) WHERE resource_manager"
                                     " = 'Transaction' AND record_type LIKE 'COMMIT%'")[0][0])
                except RuntimeError:
                    n = 1  # the WAL since then is gone: the fake cannot tell
                if n:
                    raise NeonError(
                        400, "BAD_REQUEST",
                        f"LSN {lsn} is outside the history this project retains "
                        "(this fake keeps only each branch's head)")
        self._run(PG_BIN / "pg_basebackup", "-h", self.base / "sock", "-p", src.port, "-U", ROLE,
                  "-D", dest, "-X", "stream", "-c", "fast", "--no-sync")
        return lsn or head

    @staticmethod
    def _lsn(text: str) -> int:
        hi, lo = text.split("/")
        return (int(hi, 16) << 32) | int(lo, 16)

    def settle(self, timeout: float = 120.0) -> None:
        """Wait until every request received so far has been validated."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.pending == 0:
                    return
            time.sleep(0.05)
        raise AssertionError("the fake's validations did not finish")

    def close(self) -> None:
        self.server.shutdown()
        with self.lock:
            for br in self.branches.values():
                try:
                    subprocess.run([*self.prefix, str(PG_BIN / "pg_ctl"), "-D", str(br.data),
                                    "-m", "immediate", "-w", "stop"], capture_output=True,
                                   timeout=60)
                except Exception:
                    pass
        shutil.rmtree(self.base, ignore_errors=True)

    # -- test helpers ---------------------------------------------------- #
    def fail_next(self, status: int, count: int = 1, method: str | None = None,
                  path: str | None = None, retry_after: int | None = None) -> None:
        with self.lock:
            self.faults.append({"status": status, "count": count, "method": method,
                                "path": path, "retry_after": retry_after})

    def stall_next(self, seconds: float, method: str | None = None) -> None:
        """Hold the next request (of method) that long before handling it."""
        with self.lock:
            self.stalls.append((seconds, method))

    def branch(self, name: str) -> Branch | None:
        return next((b for b in self.branches.values() if b.name == name), None)

    def dsn(self, name: str, db: str = "app") -> str:
        """A direct DSN to a branch's compute (started when needed)."""
        with self.lock:
            br = self.branch(name)
            assert br is not None, name
            self._start(br)
            return f"postgresql://{ROLE}:{PASSWORD}@127.0.0.1:{br.port}/{db}"

    def psql(self, name: str, query: str, db: str = "app") -> list[list[str]]:
        with self.lock:
            br = self.branch(name)
            assert br is not None, name
            return self.sql(br, query, db=db)

    # -- operations ------------------------------------------------------ #
    def _op(self, action: str, br: Branch, endpoint_id: str | None = None) -> dict:
        op = {"id": str(uuid.uuid4()), "project_id": PROJECT, "branch_id": br.id,
              "action": action, "status": "finished", "failures_count": 0,
              "created_at": _now(), "updated_at": _now(), "total_duration_ms": 1,
              "_done": time.monotonic() + self.slow_operations}
        if endpoint_id:
            op["endpoint_id"] = endpoint_id
        self.operations[op["id"]] = op
        return op

    def _op_json(self, op: dict) -> dict:
        out = {k: v for k, v in op.items() if not k.startswith("_")}
        out["status"] = "running" if time.monotonic() < op["_done"] else "finished"
        return out

    def _busy(self) -> bool:
        return any(time.monotonic() < op["_done"] for op in self.operations.values())

    # -- the API --------------------------------------------------------- #
    def _get_branch(self, bid: str) -> Branch:
        br = self.branches.get(bid)
        if br is None:
            raise NeonError(404, "NOT_FOUND", f"branch {bid} not found")
        return br

    def _endpoint_json(self, ep: dict) -> dict:
        return {k: v for k, v in ep.items() if not k.startswith("_")}

    def handle(self, method: str, path: str, query: dict, body: dict | None) -> tuple[int, dict | None]:
        m = re.fullmatch(r"/projects/([^/]+)(/.*)?", path)
        if not m:
            raise NeonError(404, "NOT_FOUND", f"no route {path}")
        if m.group(1) != PROJECT:
            raise NeonError(404, "NOT_FOUND", f"project {m.group(1)} not found")
        rest = m.group(2) or ""
        q = {k: v[-1] for k, v in query.items()}
        mutating = method in ("POST", "PATCH", "DELETE")
        if mutating and self._busy():
            raise NeonError(423, "LOCKED",
                            "project already has running conflicting operations, scheduling of "
                            "new ones is prohibited")
        if rest == "" and method == "GET":
            return 200, {"project": self._project_json()}
        if rest == "/branches" and method == "GET":
            return 200, self._list_branches(q)
        if rest == "/branches" and method == "POST":
            return 201, self._create_branch(body or {})
        if rest == "/endpoints" and method == "GET":
            return 200, {"endpoints": [self._endpoint_json(e) for e in self.endpoints.values()]}
        if rest == "/endpoints" and method == "POST":
            return 201, self._create_endpoint(body or {})
        if rest == "/connection_uri" and method == "GET":
            return 200, self._connection_uri(q)
        if rest == "/operations" and method == "GET":
            return 200, {"operations": [self._op_json(o) for o in self.operations.values()]}
        m = re.fullmatch(r"/operations/([^/]+)", rest)
        if m and method == "GET":
            op = self.operations.get(m.group(1))
            if op is None:
                raise NeonError(404, "NOT_FOUND", f"operation {m.group(1)} not found")
            return 200, {"operation": self._op_json(op)}
        m = re.fullmatch(r"/branches/([^/]+)(/[a-z_]+)?", rest)
        if m:
            br = self.branches.get(m.group(1))
            sub = m.group(2) or ""
            if br is None:
                if method == "DELETE" and not sub:
                    return 204, None
                raise NeonError(404, "NOT_FOUND", f"branch {m.group(1)} not found")
            if not sub and method == "GET":
                return 200, {"branch": br.json(self)}
            if not sub and method == "PATCH":
                return 200, self._patch_branch(br, body or {})
            if not sub and method == "DELETE":
                return 200, self._delete_branch(br)
            if sub == "/restore" and method == "POST":
                return 200, self._restore(br, body or {})
            if sub == "/endpoints" and method == "GET":
                return 200, {"endpoints": [self._endpoint_json(e) for e in self.endpoints.values()
                                           if e["branch_id"] == br.id]}
            if sub == "/databases" and method == "GET":
                return 200, {"databases": [
                    {"id": i + 1, "branch_id": br.id, "name": d, "owner_name": ROLE,
                     "created_at": br.created_at, "updated_at": br.updated_at}
                    for i, d in enumerate(self.databases)]}
            if sub == "/roles" and method == "GET":
                return 200, {"roles": [{"branch_id": br.id, "name": ROLE, "protected": False,
                                        "created_at": br.created_at,
                                        "updated_at": br.updated_at}]}
        raise NeonError(404, "NOT_FOUND", f"the fake has no {method} {path}")

    def _project_json(self) -> dict:
        return {"id": PROJECT, "platform_id": "aws", "region_id": "aws-us-east-2",
                "name": "fake", "provisioner": "k8s-neonvm", "pg_version": 15,
                "proxy_host": "127.0.0.1", "branch_logical_size_limit": 0,
                "branch_logical_size_limit_bytes": 0, "store_passwords": True,
                "cpu_used_sec": 0, "active_time": 0, "creation_source": "console",
                "created_at": self.main.created_at, "updated_at": self.main.updated_at,
                "owner_id": "fake-owner", "history_retention_seconds": 86400,
                "consumption_period_start": self.main.created_at,
                "consumption_period_end": self.main.created_at}

    def _list_branches(self, q: dict) -> dict:
        allb = sorted(self.branches.values(), key=lambda b: b.created_at + b.id)
        if q.get("search"):
            allb = [b for b in allb if q["search"] in b.name or q["search"] in b.id]
        limit = min(int(q.get("limit") or self.page_size), self.page_size)
        start = int(q["cursor"][1:]) if q.get("cursor", "").startswith("c") else 0
        page = allb[start:start + limit]
        out: dict = {"branches": [b.json(self) for b in page], "annotations": {}}
        if start + limit < len(allb):
            out["pagination"] = {"next": f"c{start + limit}", "sort_by": "created_at",
                                 "sort_order": "asc"}
        return out

    def _create_branch(self, body: dict) -> dict:
        spec = body.get("branch") or {}
        parent = self._get_branch(spec["parent_id"]) if spec.get("parent_id") else self.main
        name = spec.get("name") or _new_id("br")
        if self.branch(name) is not None:
            raise NeonError(409, "CONFLICT", f"branch with name {name!r} already exists")
        br = Branch(self, _new_id("br"), name, parent, None, bool(spec.get("protected")))
        br.parent_lsn = self._copy(parent, br.data, spec.get("parent_lsn"))
        self.branches[br.id] = br
        ops = [self._op("create_branch", br)]
        for ep in body.get("endpoints") or []:
            ops.append(self._add_endpoint(br, ep.get("type", "read_write"))[1])
        return {"branch": br.json(self), "operations": [self._op_json(o) for o in ops],
                "endpoints": [self._endpoint_json(e) for e in self.endpoints.values()
                              if e["branch_id"] == br.id],
                "databases": [], "roles": [], "connection_uris": []}

    def _patch_branch(self, br: Branch, body: dict) -> dict:
        spec = body.get("branch") or {}
        if "name" in spec:
            if self.branch(spec["name"]) not in (None, br):
                raise NeonError(409, "CONFLICT", f"branch {spec['name']!r} already exists")
            br.name = spec["name"]
        if "protected" in spec:
            br.protected = bool(spec["protected"])
        br.updated_at = _now()
        return {"branch": br.json(self), "operations": []}

    def _delete_branch(self, br: Branch) -> dict:
        if br.parent_id is None:
            raise NeonError(400, "BAD_REQUEST", "cannot delete the project's default branch")
        if br.protected:
            raise NeonError(400, "BAD_REQUEST", f"branch {br.id} is protected")
        kids = [b.name for b in self.branches.values() if b.parent_id == br.id]
        if kids:
            raise NeonError(422, "BAD_REQUEST",
                            f"branch {br.id} has child branches ({', '.join(sorted(kids))})")
        self._stop(br)
        for eid in [e for e, ep in self.endpoints.items() if ep["branch_id"] == br.id]:
            del self.endpoints[eid]
        del self.branches[br.id]
        subprocess.run([*self.prefix, "rm", "-rf", str(br.data)], capture_output=True)
        return {"branch": br.json(self), "operations": [self._op_json(self._op("delete_timeline", br))]}

    def _restore(self, br: Branch, body: dict) -> dict:
        src = self._get_branch(body["source_branch_id"])
        kids = [b for b in self.branches.values() if b.parent_id == br.id]
        if (kids or src is br) and not body.get("preserve_under_name"):
            raise NeonError(400, "BAD_REQUEST",
                            "preserve_under_name is required when the branch has children or "
                            "restores from itself")
        if body.get("preserve_under_name"):
            raise NeonError(400, "BAD_REQUEST", "the fake does not support preserve_under_name")
        running = br.port is not None
        tmp = self.base / "branches" / f"{br.id}.restore"
        self._copy(src, tmp, body.get("source_lsn"))
        self._stop(br)
        self._run("rm", "-rf", br.data)
        self._run("mv", tmp, br.data)
        if running:
            self._start(br)
        br.last_reset_at = br.updated_at = _now()
        return {"branch": br.json(self), "operations": [self._op_json(self._op("create_timeline", br))]}

    def _add_endpoint(self, br: Branch, typ: str) -> tuple[dict, dict]:
        if typ == "read_write" and any(e["branch_id"] == br.id and e["type"] == "read_write"
                                       for e in self.endpoints.values()):
            raise NeonError(409, "CONFLICT",
                            f"branch {br.id} already has a read_write endpoint")
        self._start(br)
        eid = _new_id("ep")
        ep = {"host": "127.0.0.1", "id": eid, "project_id": PROJECT, "branch_id": br.id,
              "region_id": "aws-us-east-2", "autoscaling_limit_max_cu": 0.25,
              "autoscaling_limit_min_cu": 0.25, "type": typ, "current_state": "active",
              "pooler_enabled": False, "pooler_mode": "transaction", "disabled": False,
              "passwordless_access": True, "creation_source": "console", "created_at": _now(),
              "updated_at": _now(), "settings": {}, "proxy_host": "127.0.0.1",
              "suspend_timeout_seconds": 0, "provisioner": "k8s-neonvm"}
        self.endpoints[eid] = ep
        return ep, self._op("start_compute", br, eid)

    def _create_endpoint(self, body: dict) -> dict:
        spec = body["endpoint"]
        br = self._get_branch(spec["branch_id"])
        ep, op = self._add_endpoint(br, spec["type"])
        return {"endpoint": self._endpoint_json(ep), "operations": [self._op_json(op)]}

    def _connection_uri(self, q: dict) -> dict:
        br = self._get_branch(q["branch_id"]) if q.get("branch_id") else self.main
        eps = [e for e in self.endpoints.values() if e["branch_id"] == br.id]
        if q.get("endpoint_id"):
            eps = [e for e in eps if e["id"] == q["endpoint_id"]]
        else:
            eps = [e for e in eps if e["type"] == "read_write"]
        if not eps:
            raise NeonError(404, "NOT_FOUND", f"no endpoint for branch {br.id}")
        db, role = q.get("database_name"), q.get("role_name")
        if db not in self.databases:
            raise NeonError(404, "NOT_FOUND", f"database {db!r} not found")
        if role != ROLE:
            raise NeonError(404, "NOT_FOUND", f"role {role!r} not found")
        self._start(br)
        ep = eps[0]
        uri = (f"postgresql://{role}:{PASSWORD}@127.0.0.1:{br.port}/{db}"
               f"?application_name={ep['id']}")
        if ep["type"] == "read_only":
            uri += "&options=" + quote("-c default_transaction_read_only=on")
        return {"uri": uri}

    # -- HTTP ------------------------------------------------------------ #
    def _validate_request(self, req: _Req) -> None:
        try:
            openapi().validate_request(req)
        except Exception as exc:  # noqa: BLE001 - every mismatch is recorded
            self.violations.append(f"request {req.method.upper()} {req.path}: {exc!r} "
                                   f"{getattr(exc, '__cause__', '')!r}")

    def _validate_response(self, req: _Req, resp: _Resp) -> None:
        try:
            openapi().validate_response(req, resp)
        except Exception as exc:  # noqa: BLE001
            self.violations.append(f"response {resp.status_code} to {req.method.upper()} "
                                   f"{req.path}: {exc!r} {getattr(exc, '__cause__', '')!r}")

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _serve(self):
                parts = urlsplit(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                headers = {k: v for k, v in self.headers.items()}
                req = _Req(self.command, parts.path, parts.query, headers, raw)
                status, payload, extra = 500, None, {}
                stall = 0.0
                with fake.lock:
                    for s in fake.stalls:
                        if s[1] in (None, self.command):
                            fake.stalls.remove(s)
                            stall = s[0]
                            break
                if stall:
                    time.sleep(stall)
                with fake.lock:
                    fake.pending += 1
                    body = None
                    try:
                        body = json.loads(raw) if raw else None
                    except ValueError:
                        pass
                    fake.requests.append((self.command, parts.path, body))
                    try:
                        if headers.get("Authorization") != f"Bearer {fake.api_key}":
                            raise NeonError(401, "UNAUTHORIZED", "authentication required")
                        if not parts.path.startswith(SPEC_PREFIX):
                            raise NeonError(404, "NOT_FOUND", "unknown path")
                        path = parts.path[len(SPEC_PREFIX):]
                        for f in fake.faults:
                            if (f["method"] in (None, self.command)
                                    and (f["path"] is None or f["path"] in path)):
                                f["count"] -= 1
                                if f["count"] <= 0:
                                    fake.faults.remove(f)
                                extra = ({"Retry-After": str(f["retry_after"])}
                                         if f["retry_after"] is not None else {})
                                raise NeonError(f["status"], "INJECTED",
                                                f"injected fault {f['status']}", extra)
                        status, payload = fake.handle(self.command, path, parse_qs(parts.query),
                                                      body)
                    except NeonError as exc:
                        status, extra = exc.status, exc.headers
                        payload = {"code": exc.code, "message": exc.message,
                                   "request_id": str(uuid.uuid4())}
                    except Exception as exc:  # noqa: BLE001 - the fake's own failure
                        status = 500
                        payload = {"code": "INTERNAL", "message": f"fake failure: {exc}"}
                    data = json.dumps(payload).encode() if payload is not None else None
                try:
                    self.send_response(status)
                    for k, v in extra.items():
                        self.send_header(k, v)
                    if data is not None:
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data or b"")))
                    self.end_headers()
                    if data:
                        self.wfile.write(data)
                    self.wfile.flush()
                except OSError:
                    pass  # the client gave up (a timeout test)
                finally:
                    # Validated after answering: the spec's first use of an
                    # operation is slow, and a client's time limit is not the
                    # validator's.  settle() waits for these.
                    try:
                        with fake.validating:
                            fake._validate_request(req)
                            if status != 500 or payload.get("code") != "INTERNAL":
                                fake._validate_response(req, _Resp(status, data, extra))
                            else:
                                fake.violations.append(payload["message"])
                    finally:
                        with fake.lock:
                            fake.pending -= 1

            do_GET = do_POST = do_PATCH = do_DELETE = _serve

        return Handler
