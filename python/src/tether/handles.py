"""The native handles `Repo.open` returns.

libtether decides where an object opens (a branch, a tag, a snapshot, a
version) and hands back a description; the handle then opens it with the
kind's own Python library, imported only when that kind is opened.  tether
stays out of the data path: read and write through the library object the
handle carries.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from tether.errors import BackendError

__all__ = [
    "DeltaHandle",
    "DoltHandle",
    "DuckLakeHandle",
    "FileHandle",
    "GitHandle",
    "Handle",
    "IcebergHandle",
    "IcechunkHandle",
    "LanceHandle",
    "MemoryHandle",
    "MissingLibraryError",
    "NeonHandle",
]


class MissingLibraryError(BackendError, ImportError):
    """The kind's Python library is not installed; the message names the pip
    package to install."""


def _import(module: str, package: str, *, key: str, kind: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingLibraryError(
            f"opening a {kind} object needs the Python package {package!r}: pip install {package}",
            key=key,
            kind=kind,
        ) from exc


def _local_path(uri: str) -> str | None:
    if uri.startswith("file://"):
        return uri[len("file://") :]
    if "://" in uri:
        return None
    return uri


@dataclass
class Handle:
    """What every handle has."""

    key: str
    """A display label: the store's path or URI (not the object key)."""
    read_only: bool
    """Whether writes through this handle are allowed."""


@dataclass
class FileHandle(Handle):
    """A local file or directory, or an object-store object (read-only)."""

    uri: str
    version_id: str | None = None


@dataclass
class GitHandle(Handle):
    """A git repository at a commit."""

    path: str
    """The repository's absolute path."""
    sha: str
    """The commit the handle is at."""
    worktree: str | None = None
    """A checked-out worktree's path, when one was made."""


@dataclass
class IcechunkHandle(Handle):
    """An Icechunk repository: ``session`` is writable on a branch and
    read-only at a tag or snapshot; ``repository`` opens other sessions."""

    repository: Any
    session: Any = None
    branch: str | None = None
    tag: str | None = None
    snapshot_id: str | None = None


@dataclass
class LanceHandle(Handle):
    """A Lance dataset checked out at a branch (writable) or a tag or
    version (read-only); append with ``lance.write_dataset(data,
    handle.dataset, mode="append")``."""

    uri: str
    dataset: Any
    version: int
    branch: str | None = None
    tag: str | None = None


@dataclass
class DeltaHandle(Handle):
    """A Delta table loaded at a version (tether never writes Delta tables:
    write with ``deltalake`` itself)."""

    uri: str
    version: int
    table: Any


@dataclass
class IcebergHandle(Handle):
    """A pyiceberg table, loaded from its catalog: writable on a branch
    (``table.append(df, branch=handle.ref)``), read-only at a tag or a
    recorded snapshot (``table.scan(snapshot_id=handle.snapshot_id)``)."""

    table: Any
    """The ``pyiceberg.table.Table``."""
    ref: str | None = None
    """The branch or tag it is at (None at a recorded snapshot)."""
    snapshot_id: int | None = None
    """The snapshot it is at, when opened at a tag or a recorded state
    (-1: the table was empty)."""


@dataclass
class DuckLakeHandle(Handle):
    """A DuckLake catalog attached read-only in its own DuckDB connection as
    ``alias``, at ``snapshot_id``.  ``attach_sql`` is the ATTACH to paste in
    another DuckDB (without credentials: a PostgreSQL catalog's password
    comes from libpq's PGPASSWORD or ~/.pgpass there).  A DuckDB-file
    catalog can be attached by one process at a time: :meth:`close` (or
    ``with``) when done."""

    metadata: str
    alias: str
    connection: Any
    snapshot_id: int
    attach_sql: str
    data_path: str | None = None
    table: str | None = None

    def table_ref(self, table: str | None = None) -> str:
        """The qualified name (``alias.table``) to use in SQL."""
        name = table or self.table
        if not name:
            raise ValueError("no table given and the locator has no 'table'")
        return f"{self.alias}.{name}"

    def close(self) -> None:
        """Detach the catalog and close the connection (idempotent)."""
        con, self.connection = self.connection, None
        if con is None:
            return
        try:
            con.execute(f"DETACH {self.alias}")
        except Exception:  # noqa: BLE001 - already detached or closed
            pass
        con.close()

    def __enter__(self) -> DuckLakeHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _redact(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass
class NeonHandle(Handle):
    """A Neon branch's Postgres connection URL (the branch's read-write
    endpoint, or a read-only one at a pin).  ``url`` carries the role's
    password, for ``psycopg.connect(handle.url)``; it is kept out of ``repr``,
    and :attr:`redacted_url` is what to log or display."""

    url: str = field(repr=False)
    branch: str = ""

    @property
    def redacted_url(self) -> str:
        return _redact(self.url)


@dataclass
class DoltHandle(Handle):
    """A Dolt revision database: ``mysql://user@host:port/db/<ref>`` (no
    password).  ``ref`` is a branch (writable) or a tag or commit (read-only);
    connect with ``database=handle.database_ref``."""

    url: str
    database: str
    ref: str
    commit: str | None = None

    @property
    def database_ref(self) -> str:
        return f"{self.database}/{self.ref}"


@dataclass
class MemoryHandle(Handle):
    """A system in the ``memory`` kind's store (the executable
    specification backends are tested against)."""

    store: Any
    system: str
    ref: str


_ICECHUNK_REPOS: dict[str, Any] = {}
"""Opened Icechunk repositories by URI: a session reads the refs afresh,
so one Repository serves every open of a store."""


_CLIENT_OPTIONS = ("connect_timeout", "timeout", "request_timeout")
"""HTTP client options libtether reads from secrets.toml in seconds, which
the stores' own libraries spell otherwise: left to their defaults."""


def _storage_options(d: dict[str, Any]) -> dict[str, str]:
    """An object-store URI's options as lance and deltalake take them
    (object_store's keys, string values), credentials included."""
    out: dict[str, str] = {}
    for k, v in (d.get("secret_storage_options") or {}).items():
        if k in _CLIENT_OPTIONS or v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() in ("1", "true", "yes", "on"))


def _icechunk_storage(ic: Any, uri: str, d: dict[str, Any], key: str) -> Any:
    path = _local_path(uri)
    if path is not None:
        return ic.local_filesystem_storage(path)
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if parts.scheme not in ("s3", "s3a"):
        raise BackendError(f"this package opens Icechunk repositories on local paths and s3:// only, not {uri}",
                           key=key, kind="icechunk")
    o = d.get("secret_storage_options") or {}
    kwargs: dict[str, Any] = {"bucket": parts.netloc, "prefix": parts.path.strip("/") or None,
                              "region": o.get("region")}
    if o.get("endpoint_url") or o.get("endpoint"):
        kwargs["endpoint_url"] = str(o.get("endpoint_url") or o.get("endpoint"))
    if _truthy(o.get("allow_http")):
        kwargs["allow_http"] = True
    if o.get("virtual_hosted_style_request") is False or _truthy(o.get("force_path_style")):
        kwargs["force_path_style"] = True
    if o.get("access_key_id") and o.get("secret_access_key"):
        kwargs.update(access_key_id=str(o["access_key_id"]), secret_access_key=str(o["secret_access_key"]),
                      session_token=str(o["session_token"]) if o.get("session_token") else None)
    else:
        kwargs["from_env"] = True
    return ic.s3_storage(**kwargs)


def _icechunk(d: dict[str, Any], key: str) -> IcechunkHandle:
    uri = d["uri"]
    ic = _import("icechunk", "icechunk", key=key, kind="icechunk")
    repo = _ICECHUNK_REPOS.get(uri)
    if repo is None:
        repo = _ICECHUNK_REPOS[uri] = ic.Repository.open(_icechunk_storage(ic, uri, d, key))
    ro = bool(d["read_only"])
    branch, tag, sid = d.get("branch"), d.get("tag"), d.get("snapshot_id")
    if branch and not ro:
        session = repo.writable_session(branch)
    elif branch:
        session = repo.readonly_session(branch=branch)
    elif tag:
        session = repo.readonly_session(tag=tag)
    else:
        session = repo.readonly_session(snapshot_id=sid)
    return IcechunkHandle(
        key=uri, read_only=ro, repository=repo, session=session, branch=branch, tag=tag,
        snapshot_id=session.snapshot_id,
    )


def _lance(d: dict[str, Any], key: str) -> LanceHandle:
    uri = d["uri"]
    lance = _import("lance", "pylance", key=key, kind="lance")
    so = _storage_options(d)
    ds = lance.dataset(uri, storage_options=so) if so else lance.dataset(uri)
    ro = bool(d["read_only"])
    branch, tag, version = d.get("branch"), d.get("tag"), int(d["version"])
    if tag:
        ds = ds.checkout_version(tag)
    elif ro:
        ds = ds.checkout_version((branch or "main", version))
    elif branch and branch != "main":
        ds = ds.checkout_version((branch, None))
    return LanceHandle(key=uri, read_only=ro, uri=uri, dataset=ds, version=int(ds.version), branch=None if tag else branch, tag=tag)


def _delta(d: dict[str, Any], key: str) -> DeltaHandle:
    uri = d["uri"]
    deltalake = _import("deltalake", "deltalake", key=key, kind="delta")
    so = _storage_options(d)
    table = deltalake.DeltaTable(uri, version=int(d["version"]), storage_options=so or None)
    return DeltaHandle(key=uri, read_only=True, uri=uri, version=int(table.version()), table=table)


def _iceberg(d: dict[str, Any], key: str) -> IcebergHandle:
    catalog = _import("pyiceberg.catalog", "pyiceberg", key=key, kind="iceberg")
    props = {str(k): v for k, v in (d.get("secret_catalog") or d.get("catalog") or {}).items()}
    props.pop("name", None)
    ident = d["identifier"]
    try:
        table = catalog.load_catalog(d["catalog_name"], **props).load_table(ident)
    except Exception as exc:  # pyiceberg raises its own and SQLAlchemy's errors
        # (the message is pyiceberg's: it names the table, not the credentials)
        raise BackendError(f"cannot load iceberg table {ident}: {exc}", key=key or None, kind="iceberg") from exc
    sid = d.get("snapshot_id")
    return IcebergHandle(
        key=ident, read_only=bool(d["read_only"]), table=table, ref=d.get("ref"),
        snapshot_id=None if sid is None else int(sid),
    )


def _ducklake_extension(duckdb: Any, con: Any, name: str) -> None:
    """Load a DuckDB extension: already installed, or from its PyPI wheel
    (``duckdb-extension-<name>``), or installed by DuckDB itself."""
    try:
        con.execute(f"LOAD {name}")
        return
    except duckdb.Error:
        pass
    import glob
    import pathlib

    site = pathlib.Path(duckdb.__file__).resolve().parents[1]
    found = glob.glob(str(site / f"duckdb_extension_{name}" / "extensions" / "*" / f"{name}.duckdb_extension"))
    con.execute(f"INSTALL '{found[0]}'" if found else f"INSTALL {name}")
    con.execute(f"LOAD {name}")


def _ducklake(d: dict[str, Any], key: str) -> DuckLakeHandle:
    duckdb = _import("duckdb", "duckdb", key=key, kind="ducklake")
    metadata = d["metadata"]
    con = duckdb.connect()
    try:
        _ducklake_extension(duckdb, con, "ducklake")
        if metadata.startswith("ducklake:sqlite:"):
            _ducklake_extension(duckdb, con, "sqlite_scanner")
        elif metadata.startswith("ducklake:postgres:"):
            _ducklake_extension(duckdb, con, "postgres_scanner")
        for stmt in d.get("secret_init_sql") or []:
            con.execute(str(stmt))
        con.execute(d.get("secret_attach_sql") or d["attach_sql"])
    except duckdb.Error as exc:
        con.close()
        # DuckDB's message names the catalog; the ATTACH with a password is not in it
        raise BackendError(f"cannot attach ducklake catalog {metadata}: {exc}", key=key or None,
                           kind="ducklake") from exc
    return DuckLakeHandle(
        key=metadata, read_only=True, metadata=metadata, alias=d["alias"], connection=con,
        snapshot_id=int(d["snapshot_id"]), attach_sql=d["attach_sql"], data_path=d.get("data_path"),
        table=d.get("table"),
    )


def from_description(d: dict[str, Any]) -> Handle:
    """The handle for libtether's description of where an object opens."""
    # libtether's description: `kind` is the backend, `object` the key
    # (`type` and `key` are tether-vcs's handle class and store address)
    kind = d.get("kind")
    key = str(d.get("object") or "")
    if kind == "file":
        return FileHandle(key=d["uri"], read_only=True, uri=d["uri"], version_id=d.get("version_id"))
    if kind == "git":
        return GitHandle(key=d["path"], read_only=bool(d["read_only"]), path=d["path"], sha=d["sha"], worktree=d.get("worktree"))
    if kind == "icechunk":
        return _icechunk(d, key)
    if kind == "lance":
        return _lance(d, key)
    if kind == "delta":
        return _delta(d, key)
    if kind == "iceberg":
        return _iceberg(d, key)
    if kind == "ducklake":
        return _ducklake(d, key)
    if kind == "neon":
        url = d.get("url_with_password") or d["address"]
        return NeonHandle(key=str(d.get("key") or d["address"]), read_only=bool(d["read_only"]), url=url,
                          branch=str(d.get("branch") or ""))
    if kind == "dolt":
        return DoltHandle(key=str(d.get("key") or d["url"]), read_only=bool(d["read_only"]), url=d["url"],
                          database=d["database"], ref=d["ref"], commit=d.get("commit"))
    if kind == "memory":
        return MemoryHandle(key=d["address"], read_only=bool(d["read_only"]), store=None, system=d["system"], ref=d["ref"])
    raise BackendError(f"this package has no handle for kind {kind!r} yet", key=key or None, kind=kind)
