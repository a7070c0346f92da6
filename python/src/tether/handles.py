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
    """An Iceberg table at a branch or tag (kind not in this build yet)."""

    table: Any
    ref: str | None = None
    snapshot_id: int | None = None


@dataclass
class DuckLakeHandle(Handle):
    """A DuckLake catalog attached in DuckDB (kind not in this build yet)."""

    metadata: str
    alias: str
    connection: Any
    snapshot_id: int
    attach_sql: str
    data_path: str | None = None
    table: str | None = None


@dataclass
class NeonHandle(Handle):
    """A Neon branch's Postgres URL (kind not in this build yet)."""

    url: str = field(repr=False)
    branch: str = ""


@dataclass
class DoltHandle(Handle):
    """A Dolt revision database (kind not in this build yet)."""

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
"""Opened Icechunk repositories by path: a session reads the refs afresh,
so one Repository serves every open of a store."""


def _icechunk(d: dict[str, Any], key: str) -> IcechunkHandle:
    uri = d["uri"]
    ic = _import("icechunk", "icechunk", key=key, kind="icechunk")
    path = _local_path(uri)
    if path is None:
        raise BackendError(f"this package opens local Icechunk repositories only, not {uri}", key=key, kind="icechunk")
    repo = _ICECHUNK_REPOS.get(path)
    if repo is None:
        repo = _ICECHUNK_REPOS[path] = ic.Repository.open(ic.local_filesystem_storage(path))
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
    ds = lance.dataset(uri)
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
    table = deltalake.DeltaTable(uri, version=int(d["version"]))
    return DeltaHandle(key=uri, read_only=True, uri=uri, version=int(table.version()), table=table)


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
    if kind == "memory":
        return MemoryHandle(key=d["address"], read_only=bool(d["read_only"]), store=None, system=d["system"], ref=d["ref"])
    raise BackendError(f"this package has no handle for kind {kind!r} yet", key=key or None, kind=kind)
