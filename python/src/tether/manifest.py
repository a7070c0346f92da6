"""A dataset's committed records: object manifests, pins and policies, and
the ids and hashes computed over them (by libtether, so they are the ids and
hashes the CLI and tether-vcs compute)."""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from tether import _native

__all__ = [
    "REF_PREFIX",
    "ObjectManifest",
    "Pin",
    "Policy",
    "WorkspaceState",
    "compute_pin_id",
    "listing_name",
    "manifest_hash",
    "ref_for_pin",
    "working_ref_name",
]

REF_PREFIX = "tether."
"""What every native ref tether makes starts with."""

Locator = dict[str, Any]
State = dict[str, Any]


@dataclass
class Policy:
    """How an object is treated: ``file`` is ``immutable`` (a change is an
    error) or ``mutable``; ``pin`` is ``native`` (pin each committed state
    with a ref) or ``record`` (record the state only)."""

    file: str = "immutable"
    pin: str = "native"

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "pin": self.pin}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Policy:
        data = data or {}
        return cls(file=str(data.get("file", "immutable")), pin=str(data.get("pin", "native")))


@dataclass
class Pin:
    """The native ref that keeps a committed state readable: ``id`` is
    ``<dataset8>.<hash16>``, ``ref`` the name in the store (``tether.<id>``)."""

    id: str
    ref: str
    created: bool = field(default=True, compare=False, repr=False)
    """Whether this run made the ref (runtime only, never saved)."""

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "ref": self.ref}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pin:
        return cls(id=str(data["id"]), ref=str(data["ref"]))

    @classmethod
    def from_ref(cls, ref: str) -> Pin:
        """The pin a ``tether.<id>`` ref names."""
        return cls(id=ref[len(REF_PREFIX) :] if ref.startswith(REF_PREFIX) else ref, ref=ref)


@dataclass
class ObjectManifest:
    """One tracked object, as ``.tether/objects/<key>.toml`` records it."""

    key: str
    kind: str
    locator: Locator
    policy: Policy = field(default_factory=Policy)
    state: State | None = None
    """The committed state (``None`` before the first commit)."""
    pin: Pin | None = None
    """The pin of the committed state, if it has one."""
    captured_at: str | None = None
    recoverable: bool = True
    """Whether the committed state can be read back later."""
    origin: Literal["adopted", "created"] = "adopted"
    """``created`` when ``add(create=True)`` made the store."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ObjectManifest:
        pin = data.get("pin")
        return cls(
            key=str(data["key"]),
            kind=str(data["kind"]),
            locator=dict(data.get("locator") or {}),
            policy=Policy.from_dict(data.get("policy")),
            state=dict(data["state"]) if data.get("state") is not None else None,
            pin=Pin.from_dict(pin) if pin else None,
            captured_at=data.get("captured_at"),
            recoverable=bool(data.get("recoverable", True)),
            origin="created" if data.get("origin") == "created" else "adopted",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "locator": self.locator,
            "policy": self.policy.to_dict(),
            "state": self.state,
            "pin": self.pin.to_dict() if self.pin else None,
            "captured_at": self.captured_at,
            "recoverable": self.recoverable,
            "origin": self.origin,
        }


@dataclass
class WorkspaceState:
    """This checkout's own state (`.tether/workspace.toml`, never committed):
    the bookmark it works on, each object's working branch and what it was
    forked from, and the last snapshot.  A read-only view: libtether writes
    it."""

    workspace_id: str = ""
    bookmark: str | None = None
    base_states: dict[str, State] = field(default_factory=dict)
    working_refs: dict[str, str] = field(default_factory=dict)
    pending_forks: dict[str, str] = field(default_factory=dict)
    pending_resets: dict[str, State] = field(default_factory=dict)
    fork_points: dict[str, State] = field(default_factory=dict)
    last_snapshot: dict[str, State] = field(default_factory=dict)
    last_snapshot_at: str | None = None
    last_snapshot_errors: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WorkspaceState:
        def table(name: str) -> dict[str, Any]:
            return {k: (dict(v) if isinstance(v, dict) else v) for k, v in (d.get(name) or {}).items()}

        return cls(
            workspace_id=str(d.get("workspace_id") or ""),
            bookmark=d.get("bookmark"),
            base_states=table("base_states"),
            working_refs=table("working_refs"),
            pending_forks=table("pending_forks"),
            pending_resets=table("pending_resets"),
            fork_points=table("fork_points"),
            last_snapshot=table("last_snapshot"),
            last_snapshot_at=d.get("last_snapshot_at"),
            last_snapshot_errors=table("last_snapshot_errors"),
        )


def compute_pin_id(kind: str, identity: Locator, state: State, dataset_id: str) -> str:
    """The pin id of ``state`` of an object of ``kind`` at ``identity`` (its
    locator identity) in the dataset ``dataset_id``: ``<dataset8>.<hash16>``.
    ``state`` is the content state (volatile fields removed)."""
    return _native.compute_pin_id(kind, dict(identity), dict(state), dataset_id)


def listing_name(kind: str, identity: Locator, state: State) -> str:
    """The file name (under `.tether/listings/`) of a state's per-file listing."""
    return _native.listing_name(kind, dict(identity), dict(state))


def working_ref_name(dataset_id: str, bookmark: str) -> str:
    """The store branch that stands for a bookmark: `tether.ws.<dataset8>.<slug>`."""
    return _native.working_ref_name(dataset_id, bookmark)


def ref_for_pin(pin_id: str) -> str:
    """The native ref name of a pin id: ``tether.<pin id>``."""
    return REF_PREFIX + pin_id


def manifest_hash(objects: Mapping[str, ObjectManifest | Mapping[str, Any]]) -> str:
    """The hash of a whole object set, by key (the dataset's tree id, which
    ``status`` shows the first 12 digits of)."""
    plain: dict[str, Any] = {}
    for key, m in objects.items():
        plain[key] = m.to_dict() if isinstance(m, ObjectManifest) else dict(m)
    return _native.manifest_hash(plain)


_HEX8 = re.compile(r"^[0-9a-f]{8}$")
_SIBLING = re.compile(r"^(.+)\.([0-9]+)$")


def _working_ref_split(ref: str) -> tuple[str, str, str | None] | None:
    # tether.ws.<dataset8>.<slug>[.<n>], or before bookmarks
    # tether.ws.<dataset8>.<workspace8>.<rest>: (dataset, slug, workspace|None).
    prefix = "tether.ws."
    if not ref.startswith(prefix):
        return None
    ds, _, rest = ref[len(prefix):].partition(".")
    if not _HEX8.match(ds) or not rest:
        return None
    m = _SIBLING.match(rest)
    if m:
        rest = m.group(1)
    head, dot, tail = rest.partition(".")
    if dot and tail and _HEX8.match(head):
        return ds, tail, head
    return ds, rest, None


def working_ref_bookmark(ref: str) -> str | None:
    """The bookmark slug a working branch stands for (`None` for a
    pre-bookmark per-workspace name, or a ref that is not tether's)."""
    parts = _working_ref_split(ref)
    return parts[1] if parts and parts[2] is None else None


def working_ref_workspace(ref: str) -> str | None:
    """The workspace id in a pre-bookmark per-workspace branch name, else `None`."""
    parts = _working_ref_split(ref)
    return parts[2] if parts else None
