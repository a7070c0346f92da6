"""What the backends report: capability tiers, verify results, history
entries and content diffs.  The backends themselves are libtether's; the
kinds this build drives are listed by `available()`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from tether import _native

__all__ = ["ChangeEntry", "HistoryEntry", "ObjectDiff", "Tier", "VerifyReport", "VerifyStatus", "available"]


class Tier(Enum):
    """How much of tether's model a kind supports, weakest first."""

    OBSERVED = "observed"
    ADDRESSABLE = "addressable"
    PINNABLE = "pinnable"
    FORKABLE = "forkable"


class VerifyStatus(Enum):
    OK = "ok"
    DRIFTED = "drifted"
    MISSING = "missing"
    UNKNOWN = "unknown"


@dataclass
class VerifyReport:
    """Whether a pin or recorded state still resolves."""

    status: VerifyStatus
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status is VerifyStatus.OK

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VerifyReport:
        return cls(status=VerifyStatus(d.get("status", "unknown")), message=str(d.get("message") or ""))


@dataclass
class ChangeEntry:
    """One changed unit inside an object (a file, table, array, ...)."""

    path: str
    change: str
    detail: str = ""


@dataclass
class ObjectDiff:
    """A backend's content diff between two states."""

    unit: str = "entries"
    added: int = 0
    removed: int = 0
    modified: int = 0
    entries: list[ChangeEntry] = field(default_factory=list)
    truncated: bool = False
    note: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ObjectDiff:
        return cls(
            unit=str(d.get("unit", "entries")),
            added=int(d.get("added", 0)),
            removed=int(d.get("removed", 0)),
            modified=int(d.get("modified", 0)),
            entries=[ChangeEntry(str(e["path"]), str(e["change"]), str(e.get("detail") or "")) for e in d.get("entries") or []],
            truncated=bool(d.get("truncated", False)),
            note=str(d.get("note") or ""),
        )


@dataclass
class HistoryEntry:
    """One entry of a store's native history; ``id`` is what a locator's
    ``at`` accepts."""

    id: str
    when: str | None = None
    message: str = ""
    refs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "when": self.when, "message": self.message, "refs": list(self.refs)}


def available() -> list[dict[str, Any]]:
    """Every kind libtether knows: ``{kind, installed, maturity, tier,
    capabilities, note, schemes}`` (what ``tether backends --json``
    prints)."""
    return _native.backends()
