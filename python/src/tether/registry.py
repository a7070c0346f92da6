"""The registry (experimental, as in tether-vcs): the history's tables
(`Repo.export` -> `ExportBundle`), written to SQLite or a directory of
files, or upserted into PostgreSQL (`ExportBundle.to_postgres`); and the
way back, rows in the canonical object columns -> manifests
(`Repo.import_objects`).  The tables and their columns are tether-vcs's."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether import _native
from tether.errors import ConfigError
from tether.manifest import Policy
from tether.plan import Plan

__all__ = [
    "CANONICAL_COLUMNS", "ExportBundle", "ImportReport", "ImportSpec", "PublishReport", "Table", "build_bundle",
    "specs_from_rows",
]

CANONICAL_COLUMNS = ("key", "kind", "uri", "locator_json", "policy_file", "policy_pin", "at")
"""The columns an import source's rows are read in."""


@dataclass
class Table:
    """One exported table: its rows, each a dict keyed by column."""

    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)


@dataclass
class PublishReport:
    """Result of `ExportBundle.to_postgres`."""

    schema: str
    upserted: dict[str, int] = field(default_factory=dict)
    skipped_commits: int = 0
    dry_run: bool = False


@dataclass
class ExportBundle:
    """Tables derived from a repository's history, ready to write anywhere."""

    tables: dict[str, Table]
    head: str | None = None
    exported_at: str = ""

    def __getitem__(self, name: str) -> Table:
        return self.tables[name]

    def row_counts(self) -> dict[str, int]:
        return {name: len(t) for name, t in self.tables.items()}

    def _native(self) -> dict[str, Any]:
        return {"tables": {n: t.rows for n, t in self.tables.items()}, "head": self.head,
                "exported_at": self.exported_at}

    def to_sqlite(self, path: str | os.PathLike[str], *, append: bool = False) -> Path:
        """Write a SQLite database; `append` upserts into an existing file."""
        _native.export_write(self._native(), os.fspath(path), "sqlite", append)
        return Path(path)

    def to_dir(self, path: str | os.PathLike[str], fmt: str = "jsonl") -> list[Path]:
        """Write one `<table>.<fmt>` per table (plus `schema.json`) into a directory."""
        if fmt not in ("jsonl", "csv", "parquet"):
            raise ConfigError(f"unknown export format {fmt!r}")
        _native.export_write(self._native(), os.fspath(path), fmt, False)
        out = Path(path)
        return [out / "schema.json"] + [out / f"{name}.{fmt}" for name in self.tables]

    def to_arrow(self) -> dict[str, Any]:
        """Every table as a `pyarrow.Table` (needs pyarrow)."""
        try:
            import pyarrow as pa
        except ImportError as e:
            raise ConfigError("ExportBundle.to_arrow needs pyarrow: pip install pyarrow") from e
        return {name: pa.Table.from_pylist(t.rows) for name, t in self.tables.items()}

    def to_postgres(
        self, dsn: str | None = None, *, schema: str = "tether", create: bool = True, connection: Any = None,
        dry_run: bool = False,
    ) -> PublishReport:
        """Upsert the tables into a PostgreSQL schema in one transaction
        (`tether publish`); commits already there are skipped."""
        if connection is not None:
            raise ConfigError("to_postgres(connection=...) is not in this build: pass the dsn")
        if not dsn:
            raise ConfigError("to_postgres needs a dsn (a libpq connection string)")
        out = _native.export_publish(self._native(), dsn, schema, dry_run)
        return PublishReport(schema=str(out.get("schema") or schema), upserted=dict(out.get("upserted") or {}),
                             skipped_commits=int(out.get("skipped_commits") or 0), dry_run=bool(out.get("dry_run")))


def _bundle(out: Mapping[str, Any]) -> ExportBundle:
    tables = {name: Table(name, list(rows)) for name, rows in out["tables"].items()}
    return ExportBundle(tables=tables, head=out.get("head"), exported_at=str(out.get("exported_at") or ""))


def build_bundle(repo: Any, *, revs: Any = None, listings: bool = False, workspace: bool = False) -> ExportBundle:
    """Derive the export tables from `repo` (as `repo.export`)."""
    return repo.export(revs, listings=listings, workspace=workspace)


@dataclass
class ImportReport:
    """Result of `Repo.apply_import`."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    plan: Plan | None = None


@dataclass
class ImportSpec:
    """One desired object: what a registry row asks tether to track."""

    key: str
    kind: str
    locator: dict[str, Any]
    policy: Policy

    @classmethod
    def from_row(cls, row: Mapping[str, Any], defaults: Policy) -> ImportSpec:
        """Read one canonical row (`ConfigError` on a row without key or kind,
        or a `locator_json` that is not a JSON object)."""
        key = str(row.get("key") or "").strip()
        kind = str(row.get("kind") or "").strip()
        if not key or not kind:
            raise ConfigError(f"import row needs `key` and `kind`: {dict(row)!r}")
        locator: dict[str, Any] = {}
        raw = row.get("locator_json")
        if raw not in (None, ""):
            parsed = json.loads(raw) if isinstance(raw, str) else raw
            if not isinstance(parsed, Mapping):
                raise ConfigError(f"[{key}] locator_json must be a JSON object")
            locator.update({str(k): v for k, v in parsed.items() if v is not None})
        if row.get("uri") not in (None, ""):
            locator.setdefault("uri", str(row["uri"]))
        policy = Policy(file=str(row.get("policy_file") or defaults.file), pin=str(row.get("policy_pin") or defaults.pin))
        return cls(key=key, kind=kind, locator=locator, policy=policy)

    def to_row(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "locator_json": json.dumps(self.locator, sort_keys=True),
                "policy_file": self.policy.file, "policy_pin": self.policy.pin}


def specs_from_rows(rows: Iterable[Mapping[str, Any]], defaults: Policy) -> tuple[list[ImportSpec], list[str]]:
    """Validate rows into specs; returns `(specs, notes)` (notes name ignored columns)."""
    specs: list[ImportSpec] = []
    seen: set[str] = set()
    extra: set[str] = set()
    for row in rows:
        extra.update(c for c in row if c not in CANONICAL_COLUMNS)
        spec = ImportSpec.from_row(row, defaults)
        if spec.key in seen:
            raise ConfigError(f"import source lists {spec.key!r} more than once")
        seen.add(spec.key)
        specs.append(spec)
    notes = [f"ignored columns: {', '.join(sorted(extra))}"] if extra else []
    return specs, notes
