"""Journal entries: what `Repo.ops` lists and `Repo.undo` reverses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["OpEntry"]


@dataclass
class OpEntry:
    """One journaled operation of this checkout (``.tether/ops.jsonl``)."""

    id: str
    at: str
    command: str
    plan: dict[str, Any] | None = None
    result: dict[str, Any] = field(default_factory=dict)
    pre: dict[str, Any] = field(default_factory=dict)
    undoes: str | None = None
    undone_by: str | None = None
    status: str = "done"
    parent: str | None = None
    progress: list[dict[str, Any]] = field(default_factory=list)

    @property
    def incomplete(self) -> bool:
        """Still ``started``: the operation was interrupted."""
        return self.status == "started"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OpEntry:
        return cls(
            id=str(d.get("id", "")),
            at=str(d.get("at", "")),
            command=str(d.get("command", "")),
            plan=d.get("plan"),
            result=dict(d.get("result") or {}),
            pre=dict(d.get("pre") or {}),
            undoes=d.get("undoes"),
            undone_by=d.get("undone_by"),
            status=str(d.get("status") or "done"),
            parent=d.get("parent"),
            progress=list(d.get("progress") or []),
        )
