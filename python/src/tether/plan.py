"""Saved plans: what a store-writing command would do, and the
preconditions checked before a saved plan is applied."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Action", "Plan", "Precondition"]


@dataclass
class Precondition:
    """Something that must still hold when the plan is applied."""

    kind: str
    expected: Any = None
    key: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    detail: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Precondition:
        return cls(
            kind=str(d.get("kind", "")),
            expected=d.get("expected"),
            key=d.get("key"),
            params=dict(d.get("params") or {}),
            detail=str(d.get("detail") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "expected": self.expected, "key": self.key, "params": self.params, "detail": self.detail}


@dataclass
class Action:
    """One step of a plan: ``op`` on ``target`` of object ``key``."""

    op: str
    key: str = ""
    kind: str = ""
    target: str = ""
    detail: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Action:
        return cls(
            op=str(d.get("op", "")),
            key=str(d.get("key") or ""),
            kind=str(d.get("kind") or ""),
            target=str(d.get("target") or ""),
            detail=str(d.get("detail") or ""),
            params=dict(d.get("params") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "key": self.key, "kind": self.kind, "target": self.target, "detail": self.detail, "params": self.params}


@dataclass
class Plan:
    """A plan in the saved format (format 3) the CLI's ``--plan FILE``
    writes and ``--from-plan FILE`` reads.  The ``apply_*`` methods take it
    back; a plan edited after it was made is refused there."""

    command: str
    actions: list[Action] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    preconditions: list[Precondition] = field(default_factory=list)
    created_at: str = ""
    tether_version: str = ""
    saved_digest: str | None = field(default=None, compare=False, repr=False)
    _json: str | None = field(default=None, compare=False, repr=False)
    _text: str | None = field(default=None, compare=False, repr=False)

    @property
    def writes(self) -> list[Action]:
        """The actions that change something."""
        return list(self.actions)

    def is_empty(self) -> bool:
        return not self.actions

    def to_dict(self) -> dict[str, Any]:
        if self._json is not None:
            return json.loads(self._json)
        return {
            "format": 3,
            "tether_version": self.tether_version,
            "command": self.command,
            "created_at": self.created_at,
            "context": self.context,
            "notes": self.notes,
            "preconditions": [p.to_dict() for p in self.preconditions],
            "actions": [a.to_dict() for a in self.actions],
            "digest": self.saved_digest,
        }

    def to_json(self) -> str:
        """The saved text (exactly what libtether produced, digest and all)."""
        return self._json if self._json is not None else json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, text: str | None = None, rendered: str | None = None) -> Plan:
        return cls(
            command=str(d.get("command", "")),
            actions=[Action.from_dict(a) for a in d.get("actions") or []],
            context=dict(d.get("context") or {}),
            notes=[str(n) for n in d.get("notes") or []],
            preconditions=[Precondition.from_dict(p) for p in d.get("preconditions") or []],
            created_at=str(d.get("created_at") or ""),
            tether_version=str(d.get("tether_version") or ""),
            saved_digest=d.get("digest"),
            _json=text,
            _text=rendered,
        )

    @classmethod
    def from_json(cls, text: str) -> Plan:
        return cls.from_dict(json.loads(text), text=text)

    def render(self) -> list[str]:
        """The plan as the CLI's ``--dry-run`` prints it, one line each."""
        if self._text is not None:
            return self._text.rstrip("\n").split("\n")
        lines = [f"{self.command}: {len(self.actions)} action(s)"]
        lines += [f"  {a.op} {a.target} ({a.key})" if a.key else f"  {a.op} {a.target}" for a in self.actions]
        lines += [f"  note: {n}" for n in self.notes]
        return lines

    def __str__(self) -> str:
        return "\n".join(self.render())


def _plan(pair: tuple[str, str]) -> Plan:
    text, rendered = pair
    return Plan.from_dict(json.loads(text), text=text, rendered=rendered)
