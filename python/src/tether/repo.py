"""`Repo`, the dataset, and the reports its operations return.

Every method is one libtether call (the GIL released while it runs); the
result comes back in the shape `tether <command> --json` prints and is
turned into the report type tether-vcs returns for it.
"""

from __future__ import annotations

import math
import os
import re
import time
import warnings
from urllib.parse import unquote
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, TypeVar, Union

from tether import _help, _native
from tether.backends import HistoryEntry, ObjectDiff, Tier, VerifyReport
from tether.errors import MultiObjectError, TetherError, UsageError
from tether.handles import Handle, from_description
from tether.manifest import ObjectManifest, Pin, Policy, WorkspaceState, ref_for_pin
from tether.oplog import OpEntry
from tether.plan import Plan, _plan
from tether.registry import ExportBundle, ImportReport, ImportSpec, _bundle

__all__ = [
    "TETHER_REV_ENV",
    "AbandonReport",
    "BookmarkCheckout",
    "BookmarkInfo",
    "BookmarksReport",
    "DropReport",
    "ExpiredBookmark",
    "ExpiryReport",
    "GcExpiredReport",
    "ForgetWorkspaceReport",
    "GcScope",
    "RecoverReport",
    "RecoverStep",
    "RecoveredObject",
    "RecoveredRefs",
    "UpgradeReport",
    "CommitResult",
    "DiffEntry",
    "GcReport",
    "ObjectStatus",
    "PromoteReport",
    "PullReport",
    "RepairReport",
    "Repo",
    "SetReport",
    "StatusReport",
    "UndoReport",
    "VcsDrift",
]

TETHER_REV_ENV = "TETHER_REV"
"""The environment variable `Repo.open` reads as the default `rev`: set it
to a dataset commit and every open is read-only at what that commit pinned."""

State = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])


def _doc(command: str) -> Callable[[F], F]:
    """Prefix a method's docstring with the CLI's `--help` text for command."""

    def wrap(fn: F) -> F:
        text = _help.HELP.get(command, "")
        fn.__doc__ = text + ("\n\n" + fn.__doc__ if fn.__doc__ else "")
        return fn

    return wrap


# --------------------------------------------------------------------------- #
# Reports
# --------------------------------------------------------------------------- #


@dataclass
class ObjectStatus:
    """One object's row in a `StatusReport`."""

    key: str
    kind: str
    tier: Tier
    committed: bool
    """Whether the manifest has a committed state."""
    pinned: bool
    recoverable: bool
    changed: bool
    """Whether the current state differs from the committed one."""
    current_state: State | None
    """The fingerprint this status used (taken now, or the cached one)."""
    origin: str = "adopted"
    verify: VerifyReport | None = None
    error: str | None = None
    behind: bool = False
    """No working branch, and the upstream branch moved past the committed
    state: `pull` takes it."""

    @property
    def state_label(self) -> str:
        """`new`, `modified`, `behind`, `clean` or `error`."""
        if self.error is not None:
            return "error"
        if not self.committed:
            return "new"
        if self.behind:
            return "behind"
        return "modified" if self.changed else "clean"


@dataclass
class VcsDrift:
    """A dataset commit this checkout made that left VCS history behind
    tether's back (`git reset`, `jj abandon`, ...)."""

    op: OpEntry
    commit: str
    referenced: dict[str, bool] = field(default_factory=dict)
    _message: str = field(default="", repr=False)

    @property
    def message(self) -> str:
        return self._message or f"dataset commit {self.commit[:12]} (op {self.op.id}) is no longer in VCS history"


@dataclass
class StatusReport:
    """What `Repo.status` found."""

    manifest_hash: str
    stale: bool
    objects: list[ObjectStatus] = field(default_factory=list)
    stale_keys: list[str] = field(default_factory=list)
    bookmark: str | None = None
    trunk: bool = False
    bookmark_drift: list[str] = field(default_factory=list)
    vcs_drift: list[VcsDrift] = field(default_factory=list)
    fresh: bool = True
    snapshot_at: str | None = None


@dataclass
class CommitResult:
    """What `Repo.commit` recorded."""

    message: str
    pinned: dict[str, Pin | None] = field(default_factory=dict)
    """key -> the pin made (or reused), `None` for a state recorded without one."""
    unrecoverable: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    vcs_commit: str | None = None


@dataclass
class SetReport:
    """What `Repo.set_policy` changed."""

    changed: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)


@dataclass
class PullReport:
    """What `Repo.pull` fetched and committed."""

    bookmark: str = ""
    committed: dict[str, tuple[State, State]] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    vcs_commit: str | None = None
    pinned: dict[str, Pin | None] = field(default_factory=dict)


@dataclass
class GcReport:
    """What `Repo.gc` released (or would, in a dry run)."""

    unpinned: dict[str, list[str]] = field(default_factory=dict)
    kept_pins: dict[str, list[str]] = field(default_factory=dict)
    deleted_working_refs: dict[str, list[str]] = field(default_factory=dict)
    kept_working_refs: dict[str, list[str]] = field(default_factory=dict)
    forgotten_working_refs: dict[str, list[str]] = field(default_factory=dict)
    deleted_listings: list[str] = field(default_factory=list)
    deleted_stores: dict[str, str] = field(default_factory=dict)
    kept_stores: dict[str, str] = field(default_factory=dict)
    forgotten_stores: list[str] = field(default_factory=list)
    dry_run: bool = True
    plan: Plan | None = None


@dataclass
class PromoteReport:
    """What `Repo.promote` landed on the trunk."""

    fast_forwarded: dict[str, State] = field(default_factory=dict)
    merged: dict[str, State] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    kept_forks: dict[str, str] = field(default_factory=dict)
    trunk_moved: str | None = None
    trunk_held: str | None = None
    plan: Plan | None = None


@dataclass
class RepairReport:
    """What `Repo.repair` rebuilt."""

    repinned: dict[str, str] = field(default_factory=dict)
    reforked: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    plan: Plan | None = None


@dataclass
class UndoReport:
    """What `Repo.undo` reversed."""

    op: OpEntry
    undo_id: str = ""
    restored: list[str] = field(default_factory=list)
    irreversible: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.irreversible


@dataclass
class DiffEntry:
    """One object's row in `Repo.diff`."""

    key: str
    change: str
    """`added`, `removed`, `changed` or `unchanged`."""
    a_pin: str | None = None
    b_pin: str | None = None
    detail: ObjectDiff | None = None
    detail_error: str | None = None
    why: tuple[str, ...] = ()
    """For `changed`: which of `state`, `pin`, `locator`, `policy` differ."""


@dataclass
class ForgetWorkspaceReport:
    """What `Repo.apply_forget_workspace` did."""

    workspace: str = ""
    removed_files: list[str] = field(default_factory=list)
    vcs: str | None = None
    failed: dict[str, str] = field(default_factory=dict)
    plan: Plan | None = None


@dataclass
class DropReport:
    """What `Repo.drop` did: a bookmark, its commits and its store leftovers, gone."""

    bookmark: str
    left_for: str | None = None
    abandoned: list[str] = field(default_factory=list)
    gc_report: GcReport | None = None
    plan: Plan | None = None


@dataclass
class BookmarkCheckout:
    """A live checkout working on a bookmark (see `BookmarkInfo.checkouts`)."""

    workspace_id: str
    """The checkout's workspace id, 8 characters."""
    root: str
    """Where its dataset root is."""
    here: bool = False
    """Whether it is the checkout this `Repo` opened."""


@dataclass
class BookmarkInfo:
    """One bookmark of the dataset, as `Repo.list_bookmarks` lists it."""

    name: str
    trunk: bool
    head: str
    """The bookmark's commit (full length)."""
    created: str | None = None
    """When its expiry was first set, ISO 8601 UTC (`None`: no expiry)."""
    expires: str | None = None
    """When it expires, ISO 8601 UTC (`"2030-06-01T10:00:00Z"`); `None`:
    never (always for the trunk)."""
    expired: bool = False
    """Whether `expires` has passed: `Repo.gc_expired` drops it."""
    working_refs: dict[str, list[str]] = field(default_factory=dict)
    """Object key -> the store branches working on this bookmark."""
    checkouts: list[BookmarkCheckout] = field(default_factory=list)


@dataclass
class BookmarksReport:
    """What `Repo.list_bookmarks` found: every bookmark, the trunk first."""

    trunk: str
    now: str
    """The time `expired` was judged against, ISO 8601 UTC."""
    bookmarks: list[BookmarkInfo] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """Object key -> why its store's working branches could not be listed."""

    def get(self, name: str) -> BookmarkInfo | None:
        """The bookmark called `name`, or `None`."""
        return next((b for b in self.bookmarks if b.name == name), None)

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.bookmarks]


@dataclass
class ExpiryReport:
    """What `Repo.set_expiry` did: the bookmark's expiry as it now is."""

    bookmark: str
    created: str | None = None
    """When the expiry was first set, ISO 8601 UTC (kept when it changes;
    `None` once cleared)."""
    expires: str | None = None
    """ISO 8601 UTC; `None`: cleared."""
    commit: str | None = None
    """The commit on the bookmark that records it (`None`: nothing changed)."""
    changed: bool = False


@dataclass
class ExpiredBookmark:
    """One expired bookmark in a `GcExpiredReport`."""

    bookmark: str
    expires: str
    created: str | None = None
    outcome: str = ""
    """`planned` (a dry run), `dropped`, `refused` (drop refuses it, a
    checkout works on it, or its branches hold unpinned writes) or `failed`
    (its drop was applied and failed)."""
    plan: Plan | None = None
    """The drop plan (dry runs; a refused bookmark's too, the plan it was
    judged by): `Repo.apply_drop(plan)` applies a planned one alone."""
    result: DropReport | None = None
    """What its drop did (`dropped`)."""
    error: str | None = None
    """Why it was refused or failed, naming the fix."""


@dataclass
class GcExpiredReport:
    """What `Repo.gc_expired` did with each bookmark whose expiry has passed."""

    dry_run: bool = True
    now: str = ""
    """The time the expiries were judged against, ISO 8601 UTC."""
    bookmarks: list[ExpiredBookmark] = field(default_factory=list)

    def _named(self, outcome: str) -> list[str]:
        return [b.bookmark for b in self.bookmarks if b.outcome == outcome]

    @property
    def planned(self) -> list[str]:
        return self._named("planned")

    @property
    def dropped(self) -> list[str]:
        return self._named("dropped")

    @property
    def refused(self) -> dict[str, str]:
        """Bookmark -> why it was refused."""
        return {b.bookmark: b.error or "" for b in self.bookmarks if b.outcome == "refused"}


@dataclass
class AbandonReport:
    """What `Repo.abandon` did: commits dropped, and the gc that follows."""

    abandoned: list[str] = field(default_factory=list)
    gc_plan: Plan | None = None
    gc_report: GcReport | None = None


@dataclass
class UpgradeReport:
    """What `Repo.upgrade` rewrote to bring the dataset to this format."""

    from_version: int = 0
    to_version: int = 0
    renamed_pins: dict[str, str] = field(default_factory=dict)
    renamed_branches: dict[str, str] = field(default_factory=dict)
    rewritten_commits: dict[str, str] = field(default_factory=dict)
    refingerprinted: list[str] = field(default_factory=list)
    rewritten_manifests: list[str] = field(default_factory=list)
    rewritten_indexes: dict[str, int] = field(default_factory=dict)
    copied_listings: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    vcs_commit: str | None = None
    plan: Plan | None = None


@dataclass
class RecoveredRefs:
    """The refs a store holds under one dataset id (see `RecoverReport`)."""

    dataset_id: str
    pins: set[str] = field(default_factory=set)
    """Pin ids; `recover` counts them, so this build fills in placeholders
    (`<dataset>.#<n>`) as many as the store holds."""
    bookmarks: dict[str, list[str]] = field(default_factory=dict)
    """Bookmark slug -> its working branches, lowest generation first."""
    legacy: dict[str, list[str]] = field(default_factory=dict)
    """Workspace id -> per-workspace working branches from before bookmarks."""

    def merge(self, other: RecoveredRefs) -> None:
        self.pins |= other.pins
        for slug, refs in other.bookmarks.items():
            mine = self.bookmarks.setdefault(slug, [])
            mine.extend(r for r in refs if r not in mine)
        for ws, refs in other.legacy.items():
            mine = self.legacy.setdefault(ws, [])
            mine.extend(r for r in refs if r not in mine)
            mine.sort()

    def to_dict(self, current: str) -> dict[str, Any]:
        return {
            "dataset_id": self.dataset_id, "current": self.dataset_id == current, "pins": len(self.pins),
            "bookmarks": [
                {"bookmark": slug, "branch": refs[-1], "generation": _generation(refs[-1]), "branches": list(refs)}
                for slug, refs in sorted(self.bookmarks.items())
            ],
            "legacy": [{"workspace": ws, "branches": list(refs)} for ws, refs in sorted(self.legacy.items())],
        }

    @classmethod
    def _from_dict(cls, d: Mapping[str, Any]) -> RecoveredRefs:
        ds = str(d.get("dataset_id") or "")
        return cls(
            dataset_id=ds, pins={f"{ds}.#{i}" for i in range(int(d.get("pins") or 0))},
            bookmarks={b["bookmark"]: list(b.get("branches") or [b["branch"]]) for b in d.get("bookmarks") or []},
            legacy={w["workspace"]: list(w.get("branches") or []) for w in d.get("legacy") or []},
        )


def _generation(ref: str) -> int | None:
    last = ref.rsplit(".", 1)[-1]
    return int(last) if last.isdigit() else None


@dataclass
class RecoveredObject:
    """One object's row in a `RecoverReport`."""

    key: str
    kind: str
    namespaces: dict[str, RecoveredRefs] = field(default_factory=dict)
    holds_refs: bool = True
    error: str | None = None
    missing_pin: str | None = None
    unrecognized: list[str] = field(default_factory=list)

    def to_dict(self, current: str) -> dict[str, Any]:
        return {
            "key": self.key, "kind": self.kind, "holds_refs": self.holds_refs, "error": self.error,
            "missing_pin": self.missing_pin, "unrecognized": list(self.unrecognized),
            "datasets": [self.namespaces[ds].to_dict(current) for ds in sorted(self.namespaces)],
        }


@dataclass(frozen=True)
class RecoverStep:
    """One step of a `RecoverReport`: a command to run, or none, and a note."""

    command: str | None
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "note": self.note}


@dataclass
class RecoverReport:
    """What `Repo.recover_report` found: tether's refs in each object's store,
    by the dataset id they carry, and what to run to take them back."""

    dataset_id: str
    trunk: str
    objects: list[RecoveredObject] = field(default_factory=list)
    pinned: bool = False
    suggested_id: str | None = None
    scoped: bool = False
    steps: list[RecoverStep] = field(default_factory=list)

    @property
    def datasets(self) -> dict[str, RecoveredRefs]:
        """Dataset id -> what every selected store holds under it, merged."""
        out: dict[str, RecoveredRefs] = {}
        for o in self.objects:
            for ds, refs in o.namespaces.items():
                out.setdefault(ds, RecoveredRefs(ds)).merge(refs)
        return out

    def to_dict(self) -> dict[str, Any]:
        found = self.datasets
        return {
            "dataset_id": self.dataset_id, "trunk": self.trunk, "pinned": self.pinned,
            "suggested_dataset_id": self.suggested_id, "scoped": self.scoped,
            "objects": [o.to_dict(self.dataset_id) for o in self.objects],
            "datasets": [found[ds].to_dict(self.dataset_id) for ds in sorted(found)],
            "steps": [step.to_dict() for step in self.steps],
        }


@dataclass(frozen=True)
class GcScope:
    """What `drop` asks of `plan_gc`: judge these bookmarks' branches only
    (`None`: every stray branch), plan as if `excluded_commits` were out of
    history and `gone_bookmarks` no longer live.  (`dropped_manifests` is
    refused by this build: name the commits in `excluded_commits`.)"""

    bookmarks: frozenset[str] | None = None
    excluded_commits: frozenset[str] = frozenset()
    gone_bookmarks: frozenset[str] = frozenset()
    dropped_manifests: tuple[ObjectManifest, ...] = ()


def _gc_fields(out: Mapping[str, Any]) -> GcReport:
    return GcReport(**{k: out[k] for k in GcReport.__dataclass_fields__ if k in out and k != "plan"})


def _plan_of(obj: Any, text: str | None = None) -> Plan | None:
    if isinstance(obj, str):
        return Plan.from_json(obj)
    return Plan.from_dict(obj, text=text) if isinstance(obj, dict) else None


def _pin_of_ref(ref: str | None) -> Pin | None:
    return Pin.from_ref(ref) if ref else None


def _pin_of_id(pin_id: str | None) -> Pin | None:
    return Pin(id=pin_id, ref=ref_for_pin(pin_id)) if pin_id else None


def _raise_failed(what: str, failed: Mapping[str, str], report: object) -> None:
    if failed:
        raise MultiObjectError(f"{what}: {len(failed)} action(s) failed", {k: TetherError(v) for k, v in failed.items()}, report=report)


def _keys(keys: Sequence[str] | str | None) -> list[str] | None:
    if keys is None:
        return None
    if isinstance(keys, str):
        return [keys]
    return list(keys)


_LAST_EXPIRY = 253402300799
"""9999-12-31T23:59:59Z: the last time an expiry file holds (ISO 8601's
four-digit years, from 1970)."""


def _expiry_seconds(expires: datetime | timedelta | float) -> int:
    """An expiry as UTC seconds since the epoch: a `datetime` with its
    timezone, a `timedelta` from now (`--ttl`), or seconds themselves."""
    if isinstance(expires, datetime):
        if expires.tzinfo is None or expires.utcoffset() is None:
            raise UsageError(f"expires {expires.isoformat()!r} is a naive datetime: give it a timezone "
                             "(datetime(..., tzinfo=timezone.utc)), as --expires needs Z or an offset")
        seconds = math.floor(expires.timestamp())
    elif isinstance(expires, timedelta):
        if expires.total_seconds() < 1:
            raise UsageError(f"expires {expires!r} is not a time to live: give a timedelta of a second or more")
        seconds = math.floor(time.time() + expires.total_seconds())
    elif isinstance(expires, (int, float)) and not isinstance(expires, bool):
        if not math.isfinite(expires):
            raise UsageError(f"expires {expires!r} is not a time")
        seconds = math.floor(expires)
    else:
        raise TypeError("expires must be a datetime with tzinfo, a timedelta, seconds since the epoch, or None "
                        f"(to clear), not {type(expires).__name__}")
    if not 0 <= seconds <= _LAST_EXPIRY:
        raise UsageError(f"expires {expires!r} is outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z, "
                         "the times an expiry file can hold")
    return seconds


Progress = Union[Callable[[str, str, int, int], object], bool, None]
"""A progress receiver: fn(phase, key, done, total), True for a bar, or None."""


class _Bar:
    """Progress as a tqdm bar per phase (tqdm imported on first report), or
    one stderr line per object when tqdm is not installed."""

    def __init__(self) -> None:
        self._bar: Any = None

    def __call__(self, phase: str, key: str, done: int, total: int) -> None:
        if self._bar is None:
            try:
                from tqdm import tqdm
            except ImportError:
                self._bar = False
            else:
                self._bar = tqdm(total=total, desc=phase, unit="object", leave=False)
        if self._bar is False:
            import sys

            print(f"{phase}: {done}/{total} {key}", file=sys.stderr)
        else:
            self._bar.set_postfix_str(key, refresh=False)
            self._bar.update(1)
            if done >= total:
                self._bar.close()
                self._bar = None


class _Vcs:
    """The dataset's version control, as far as a script needs it."""

    def __init__(self, native: Any) -> None:
        self._n = native

    @property
    def kind(self) -> str:
        return self._n.vcs_kind

    def current_rev(self) -> str:
        """The working copy's commit id (full length)."""
        return self._n.current_rev()

    def bookmarks(self) -> dict[str, str]:
        """The dataset repository's bookmarks (git: its branches, leaving
        out tether's `tether/` parking branches): name -> commit id (full
        length), as tether-vcs's `repo.vcs.bookmarks()`."""
        return dict(self._n.bookmarks())


class QueryRows(list):
    """The rows of ``Repo.query``: tuples, with ``columns`` (their names),
    ``relations`` and ``not_relations`` (what was set up, and why not)."""

    columns: tuple[str, ...] = ()
    relations: list[dict[str, Any]]
    not_relations: dict[str, str]


def _sql_lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _sql_ident(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


_SQL_STRING = re.compile(r"'((?:[^']|'')*)'")


def _scrub(message: str, setup: Sequence[str], shown: Sequence[str]) -> str:
    """message with every credential of the setup statements replaced by ***:
    each string of theirs that no shown statement holds, and the password
    inside one (a URL's user:PASSWORD@, libpq's password=VALUE) - as the
    library scrubs DuckDB's errors."""
    seen = "\n".join(shown)
    secrets: set[str] = set()
    for stmt in setup:
        for m in _SQL_STRING.finditer(stmt):
            lit = m.group(1).replace("''", "'")
            if lit in seen:
                continue
            secrets.add(lit)
            u = re.search(r"://([^/?#@]*)@", lit)
            if u and ":" in u.group(1):
                pw = u.group(1).split(":", 1)[1]
                secrets.update((pw, unquote(pw)))
            secrets.update(re.findall(r"password\s*=\s*'?([^'\s]+)", lit))
    for sec in sorted((x for x in secrets if len(x) >= 3), key=len, reverse=True):
        message = message.replace(sec, "***")
    return message


@dataclass
class RepoConfig:
    """The parts of `tether.toml` a script reads."""

    dataset_id: str
    trunk: str


# --------------------------------------------------------------------------- #
# Repo
# --------------------------------------------------------------------------- #


class Repo:
    """A tether dataset: manifests in a git working tree plus the stores they
    name.  Get one with `Repo.find` (an existing dataset) or `Repo.init`."""

    def __init__(self, native: Any) -> None:
        self._n = native

    # -- opening ---------------------------------------------------------- #

    @classmethod
    def find(cls, path: Path | str = ".", *, allow_outdated: bool = False, progress: Progress = None) -> Repo:
        """Open the dataset whose `tether.toml` is at or above `path`.

        `progress` (this package only): a callable `fn(phase, key, done,
        total)` called as each object finishes a long step (`snapshot`), or
        `True` for a `tqdm` bar on stderr (plain lines without tqdm); see
        `Repo.progress`.  Raises `ConfigError` when there is no dataset, or
        when the checkout's per-checkout files are tracked by git."""
        repo = cls(_native.Repo(os.fspath(path), outdated=allow_outdated))
        for warning in repo.warnings:
            warnings.warn(warning, stacklevel=2)
        if progress is not None:
            repo.progress = progress
        return repo

    @classmethod
    @_doc("init")
    def init(cls, path: Path | str = ".", *, config: Any = None, dataset_id: str | None = None) -> Repo:
        """Returns the opened `Repo`."""
        if config is not None and dataset_id is None:
            dataset_id = getattr(config, "dataset_id", None)
        _native.init(os.fspath(path), dataset_id)
        return cls.find(path)

    # -- progress --------------------------------------------------------- #

    @property
    def progress(self) -> Progress:
        """What receives progress reports: `None`, `True` (a bar) or a callable."""
        return getattr(self, "_progress", None)

    @progress.setter
    def progress(self, value: Progress) -> None:
        self._progress = value
        if value is None or value is False:
            self._n.set_progress(None)
        elif value is True:
            self._n.set_progress(_Bar())
        else:
            self._n.set_progress(value)

    def cancel(self) -> None:
        """Stop the fingerprint or verify running on this Repo (this package
        only): call it from another thread or from the progress callback.
        No object starts after it, and the running call raises `TetherError`
        ("fingerprint cancelled after N of M object(s)") having written
        nothing -- a cancelled commit pins and commits nothing.  Steps that
        change stores (fork, promote) are not cut short.  A request made
        while nothing runs stops the next fingerprint or verify."""
        self._n.cancel()

    # -- what it is ------------------------------------------------------- #

    @property
    def root(self) -> Path:
        """The dataset root (the directory holding `tether.toml`)."""
        return Path(self._n.root)

    @property
    def dataset_id(self) -> str:
        return self._n.dataset_id

    @property
    def config(self) -> RepoConfig:
        return RepoConfig(dataset_id=self._n.dataset_id, trunk=self._n.trunk)

    @property
    def trunk(self) -> str:
        """The trunk bookmark (`[vcs] trunk`)."""
        return self._n.trunk

    @property
    def bookmark(self) -> str | None:
        """The bookmark this checkout works on (`None`: read-only)."""
        return self._n.bookmark

    @property
    def vcs(self) -> _Vcs:
        return _Vcs(self._n)

    @property
    def workspace(self) -> WorkspaceState:
        """This checkout's workspace state, read afresh (Python 3.11+; empty before)."""
        return WorkspaceState.from_dict(self._workspace())

    @property
    def warnings(self) -> list[str]:
        return self._n.warnings

    @property
    def objects(self) -> dict[str, ObjectManifest]:
        """The working tree's manifests by key (read afresh each time)."""
        return {k: ObjectManifest.from_dict(v) for k, v in self._n.objects().items()}

    def on_trunk(self) -> bool:
        return self.bookmark == self.trunk

    def current_manifest_hash(self) -> str:
        return self.status(do_snapshot=False).manifest_hash

    def stale_keys(self) -> list[str]:
        return self.status(do_snapshot=False).stale_keys

    def is_stale(self) -> bool:
        return bool(self.stale_keys())

    # -- objects ---------------------------------------------------------- #

    @_doc("add")
    def add(
        self, key: str | None, kind: str, locator: Mapping[str, Any], *, policy: Policy | None = None, create: bool = False
    ) -> ObjectManifest:
        """Returns the new manifest.  Relative paths in `locator` resolve
        against the current directory."""
        out = self._n.add(
            key, kind, dict(locator), file=policy.file if policy else None, pin=policy.pin if policy else None,
            cwd=os.getcwd(), create=create,
        )
        return self.objects[out["key"]]

    def create(self, key: str | None, kind: str, locator: Mapping[str, Any], *, policy: Policy | None = None) -> Handle:
        """Make an empty store at `locator`, register it, and open it (`add(create=True)` then `open`)."""
        m = self.add(key, kind, locator, policy=policy, create=True)
        return self.open(m.key)

    @_doc("remove")
    def remove(self, key: str) -> None:
        self._n.remove(key)

    @_doc("set")
    def set_policy(self, keys: Sequence[str], *, file: str | None = None, pin: str | None = None) -> SetReport:
        out = self._n.set_policy(list(keys), file=file, pin=pin)
        changed = {k: {f: (d["from"], d["to"]) for f, d in fields.items()} for k, fields in out["changed"].items()}
        return SetReport(changed=changed, unchanged=list(out["unchanged"]))

    set = set_policy

    # -- reading ---------------------------------------------------------- #

    @_doc("snapshot")
    def snapshot(
        self, keys: Sequence[str] | None = None, *, upstream: bool = True, failures: dict[str, Exception] | None = None
    ) -> dict[str, State]:
        """Returns {key: state}."""
        return self._n.snapshot(_keys(keys))

    @_doc("status")
    def status(self, keys: Sequence[str] | None = None, *, do_snapshot: bool = True) -> StatusReport:
        out = self._n.status(_keys(keys), 1 if do_snapshot else 0)
        states = self._cached_states()
        objects = []
        for o in out["objects"]:
            label = o["state"]
            objects.append(
                ObjectStatus(
                    key=o["key"], kind=o["kind"], tier=Tier(o["tier"]), committed=label not in ("new",),
                    pinned=bool(o["pinned"]), recoverable=bool(o["recoverable"]),
                    changed=label in ("modified", "behind"), current_state=states.get(o["key"]),
                    origin=o.get("origin", "adopted"),
                    verify=VerifyReport.from_dict(o["verify"]) if o.get("verify") else None,
                    error=o.get("error"), behind=label == "behind",
                )
            )
        drift = []
        for d in out.get("vcs_drift") or []:
            op = d.get("op")
            entry = OpEntry.from_dict(op) if isinstance(op, dict) else OpEntry(id=str(op or ""), at="", command="commit")
            drift.append(VcsDrift(op=entry, commit=str(d.get("commit", "")), referenced=dict(d.get("referenced") or {}), _message=str(d.get("message") or "")))
        return StatusReport(
            manifest_hash=out["manifest_hash"], stale=bool(out["stale"]), objects=objects,
            stale_keys=list(out["stale_keys"]), bookmark=out.get("bookmark"), trunk=bool(out.get("trunk")),
            bookmark_drift=list(out.get("bookmark_drift") or []), vcs_drift=drift, fresh=bool(out.get("fresh", True)),
            snapshot_at=out.get("snapshot_at"),
        )

    def _workspace(self) -> dict[str, Any]:
        # This checkout's workspace.toml, for what libtether's results leave
        # out (the fingerprints status used, a fork's branch name).
        try:
            import tomllib
        except ImportError:  # Python < 3.11: no reader at hand
            return {}
        try:
            with open(self.root / ".tether" / "workspace.toml", "rb") as fh:
                return tomllib.load(fh)
        except (OSError, ValueError):
            return {}

    def _cached_states(self) -> dict[str, State]:
        return self.workspace.last_snapshot

    @_doc("verify")
    def verify(
        self, keys: Sequence[str] | None = None, *, rev: str | None = None, deep: bool = False, all_history: bool = False
    ) -> dict[str, VerifyReport]:
        out = self._n.verify(_keys(keys), rev, deep, all_history)
        return {k: VerifyReport.from_dict(v) for k, v in out.items()}

    @_doc("diff")
    def diff(
        self, rev_a: str | None = None, rev_b: str | None = None, *, keys: Sequence[str] | None = None, content: bool = False
    ) -> list[DiffEntry]:
        rows = self._n.diff(rev_a, rev_b, _keys(keys), content)
        return [
            DiffEntry(
                key=r["key"], change=r["change"], a_pin=r.get("a"), b_pin=r.get("b"),
                detail=ObjectDiff.from_dict(r["detail"]) if isinstance(r.get("detail"), dict) else None,
                detail_error=r.get("detail_error"), why=tuple(r.get("why") or ()),
            )
            for r in rows
        ]

    @_doc("log")
    def history(self, key: str, *, ref: str | None = None, limit: int = 20) -> list[HistoryEntry]:
        rows = self._n.log(key=key, ref=ref, limit=limit)
        return [HistoryEntry(id=r["id"], when=r.get("when"), message=r.get("message") or "", refs=list(r.get("refs") or [])) for r in rows]

    log = history

    def history_for(self, kind: str, locator: Mapping[str, Any], *, ref: str | None = None, limit: int = 20) -> list[HistoryEntry]:
        """The native history of a store not registered here."""
        rows = self._n.log(kind=kind, locator=dict(locator), ref=ref, limit=limit)
        return [HistoryEntry(id=r["id"], when=r.get("when"), message=r.get("message") or "", refs=list(r.get("refs") or [])) for r in rows]

    @_doc("ops")
    def ops(self, limit: int | None = None) -> list[OpEntry]:
        return [OpEntry.from_dict(e) for e in self._n.ops(limit or 0)]

    # -- commit ----------------------------------------------------------- #

    @staticmethod
    def _commit_result(message: str, out: Mapping[str, Any]) -> CommitResult:
        return CommitResult(
            message=message, pinned={k: _pin_of_ref(v) for k, v in out["pinned"].items()},
            unrecoverable=list(out["unrecoverable"]), unchanged=list(out["unchanged"]), vcs_commit=out.get("vcs_commit"),
        )

    @_doc("commit")
    def commit(
        self, message: str, *, keys: Sequence[str] | None = None, vcs: bool = True, strict: bool = False,
        force: bool = False, do_snapshot: bool = True,
    ) -> CommitResult:
        out = self._n.commit(message, _keys(keys), not vcs, strict, force, not do_snapshot)
        return self._commit_result(message, out)

    def plan_commit(
        self, message: str, *, keys: Sequence[str] | None = None, strict: bool = False, force: bool = False,
        do_snapshot: bool = True, fetched: dict[str, State] | None = None,
    ) -> Plan:
        """The commit's plan, applied by `apply_commit`.  (`fetched`, states
        read elsewhere to commit instead of fingerprinting, is refused: use
        `pull`.)"""
        if fetched is not None:
            raise TetherError("plan_commit(fetched=...) is not in this build; `pull` commits fetched heads")
        plan = _plan(self._n.commit(message, _keys(keys), False, strict, force, not do_snapshot, plan_only=True))
        plan.context.setdefault("message", message)
        return plan

    def apply_commit(self, plan: Plan, *, keys: Sequence[str] | None = None, vcs: bool = True, verify: bool = True) -> CommitResult:
        """Apply a commit plan once its preconditions still hold."""
        message = str(plan.context.get("message") or "")
        out = self._n.commit(message, _keys(keys), not vcs, from_plan=plan.to_json())
        return self._commit_result(message, out)

    # -- new / open ------------------------------------------------------- #

    @_doc("new")
    def new(
        self, rev: str | None = None, *, bookmark: str | None = None, shared: bool = False, keep: bool = False,
        eager: bool | None = None, discard: bool = False, adopt: bool = False,
    ) -> None:
        self._n.new(rev, bookmark, shared, keep, -1 if eager is None else int(eager), discard, adopt=adopt)

    def plan_new(
        self, rev: str | None = None, *, bookmark: str | None = None, shared: bool = False, keep: bool = False,
        eager: bool | None = None, discard: bool = False, adopt: bool = False,
    ) -> Plan:
        return _plan(self._n.new(rev, bookmark, shared, keep, -1 if eager is None else int(eager), discard,
                                 plan_only=True, adopt=adopt))

    def apply_new(self, plan: Plan, *, verify: bool = True) -> None:
        self._n.new(from_plan=plan.to_json())

    # -- SQL over the dataset at a revision ----------------------------- #

    def query(self, sql: str, rev: str | None = None, *, keys: Sequence[str] | None = None) -> QueryRows:
        """Run SQL over every object of the dataset as ``rev`` recorded it (None:
        what the working copy records), each a relation named by its key, in an
        in-process DuckDB: the last statement's rows as tuples, their names in
        ``.columns``, values as DuckDB's to_json maps them."""
        out = self._n.query(sql, rev, _keys(keys))
        rows = QueryRows(tuple(r) for r in out["rows"])
        rows.columns = tuple(out["columns"])
        rows.relations = list(out["relations"])
        rows.not_relations = dict(out["not_relations"])
        return rows

    def duckdb(self, rev: str | None = None, *, keys: Sequence[str] | None = None) -> Any:
        """A ``duckdb.DuckDBPyConnection`` (the ``duckdb`` module, 1.5.5 like the
        extensions tether finds) holding the same relations as ``query``: views,
        and catalogs attached read-only, credentials as in-memory secrets."""
        try:
            import duckdb
        except ImportError as exc:
            raise TetherError("Repo.duckdb needs the duckdb module (pip install duckdb==1.5.5)") from exc
        out = self._n.query(None, rev, _keys(keys), True)
        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
        try:
            for stmt in out["secret_setup"]:
                con.execute(stmt)
            for r in out["relations"]:
                if r["kind"] != "dolt":
                    continue
                att = "tether_dolt_" + r["key"]
                for (name,) in con.execute(f"SELECT * FROM mysql_query({_sql_lit(att)}, 'SHOW TABLES')").fetchall():
                    inner = "SELECT * FROM `" + name.replace("`", "``") + "`"
                    con.execute(f"CREATE VIEW {_sql_ident(r['key'])}.{_sql_ident(name)} AS "
                                f"SELECT * FROM mysql_query({_sql_lit(att)}, {_sql_lit(inner)})")
        except Exception as exc:
            con.close()
            # DuckDB's words, never the statement, and no credential even
            # where DuckDB's words repeat one
            why = _scrub(str(exc), out["secret_setup"], out.get("statements", []))
            raise TetherError(f"setting up the dataset's relations in DuckDB failed: {why}") from None
        return con

    @_doc("open")
    def open(self, key: str, *, rev: str | None = None, read_only: bool | None = None) -> Handle:
        """Returns the kind's handle; `rev` defaults to `$TETHER_REV`."""
        ro = -1 if read_only is None else int(read_only)
        return from_description(self._n.open_object(key, rev, ro))

    def materialize_fork(self, key: str) -> str:
        """Create `key`'s deferred working branch now (a writable open does
        the same); returns the branch."""
        self._n.open_object(key, None, 0)
        return self.workspace.working_refs[key]

    # -- landing ---------------------------------------------------------- #

    @staticmethod
    def _promote_report(out: Mapping[str, Any]) -> PromoteReport:
        report = PromoteReport(
            fast_forwarded=dict(out["fast_forwarded"]), merged=dict(out["merged"]), skipped=list(out["skipped"]),
            refused=dict(out["refused"]), held=dict(out["held"]), conflicts={k: list(v) for k, v in out["conflicts"].items()},
            kept_forks=dict(out["kept_forks"]), trunk_moved=out.get("trunk_moved"), trunk_held=out.get("trunk_held"),
        )
        _raise_failed("promote", out.get("failed") or {}, report)
        return report

    @_doc("promote")
    def promote(
        self, keys: Sequence[str] | None = None, *, rev: str | None = None, strategy: str = "auto", message: str | None = None,
        check: str | None = None,
    ) -> PromoteReport:
        """check: a shell command run on exactly what lands (see `--check`); its
        output goes to standard error, a non-zero exit raises and moves nothing.
        The report then carries what the check ran and saw as `report.check`
        (an attribute beside tether-vcs's fields; None without a check)."""
        out = self._n.promote(_keys(keys), rev, strategy, message, check=check)
        report = self._promote_report(out)
        report.check = out.get("check")
        return report

    def plan_promote(
        self, keys: Sequence[str] | None = None, *, rev: str | None = None, strategy: str = "auto", message: str | None = None,
        check: str | None = None,
    ) -> Plan:
        return _plan(self._n.promote(_keys(keys), rev, strategy, message, plan_only=True, check=check))

    def apply_promote(self, plan: Plan, *, verify: bool = True) -> PromoteReport:
        report = self._promote_report(self._n.promote(from_plan=plan.to_json()))
        report.plan = plan
        return report

    @_doc("pull")
    def pull(self, bookmark: str | None = None, *, keys: Sequence[str] | None = None, message: str | None = None) -> PullReport:
        out = self._n.pull(bookmark, _keys(keys), message)
        return PullReport(
            bookmark=out.get("bookmark") or "", committed={k: (v["from"], v["to"]) for k, v in out["committed"].items()},
            unchanged=list(out["unchanged"]), skipped=dict(out["skipped"]), vcs_commit=out.get("vcs_commit"),
            pinned={k: _pin_of_id(v) for k, v in out["pinned"].items()},
        )

    @_doc("restore")
    def restore(
        self, keys: Sequence[str] | None, rev: str | None = None, *, at: str | int | None = None, discard: bool = False
    ) -> dict[str, str]:
        """Returns {key: working branch}."""
        out = self._n.restore(_keys(keys), rev, discard, at=None if at is None else str(at))
        return dict(out["working_refs"])

    def plan_restore(
        self, keys: Sequence[str] | None, rev: str | None = None, *, at: str | int | None = None, discard: bool = False
    ) -> Plan:
        return _plan(self._n.restore(_keys(keys), rev, discard, plan_only=True, at=None if at is None else str(at)))

    def apply_restore(self, plan: Plan, *, verify: bool = True) -> dict[str, str]:
        out = self._n.restore(None, None, False, from_plan=plan.to_json())
        return dict(out["working_refs"])

    # -- gc --------------------------------------------------------------- #

    @staticmethod
    def _gc_args(
        prune_bookmarks: bool, keep_bookmarks: set[str] | None, force_prune: bool, delete_stores: bool,
        stores: Sequence[tuple[str, dict]], release_foreign: bool,
    ) -> dict[str, Any]:
        specs = []
        for kind, locator in stores:
            loc = locator if isinstance(locator, str) else (locator.get("uri") or locator.get("path") or "")
            specs.append(f"{kind}={loc}")
        return dict(
            release_foreign=release_foreign, prune_bookmarks=prune_bookmarks, keep_bookmarks=sorted(keep_bookmarks or ()),
            force_prune=force_prune, delete_stores=delete_stores, stores=specs,
        )

    @staticmethod
    def _gc_report(out: Mapping[str, Any]) -> GcReport:
        report = _gc_fields(out)
        _raise_failed("gc", out.get("failed") or {}, report)
        return report

    @_doc("gc")
    def gc(
        self, *, dry_run: bool = True, prune_bookmarks: bool = False, keep_bookmarks: set[str] | None = None,
        force_prune: bool = False, delete_stores: bool = False, stores: Sequence[tuple[str, dict]] = (),
        release_foreign: bool = False,
    ) -> GcReport:
        args = self._gc_args(prune_bookmarks, keep_bookmarks, force_prune, delete_stores, stores, release_foreign)
        return self._gc_report(self._n.gc(dry_run=dry_run, **args))

    def plan_gc(
        self, *, prune_bookmarks: bool = False, keep_bookmarks: set[str] | None = None, force_prune: bool = False,
        delete_stores: bool = False, stores: Sequence[tuple[str, dict]] = (), release_foreign: bool = False,
        scope: GcScope | None = None,
    ) -> Plan:
        """The gc plan, applied by `apply_gc`.  `scope` (a `GcScope`) is
        `drop`'s: one bookmark's branches, history as if some commits were gone."""
        args = self._gc_args(prune_bookmarks, keep_bookmarks, force_prune, delete_stores, stores, release_foreign)
        if scope is not None and scope != GcScope():
            if getattr(scope, "dropped_manifests", ()):
                raise TetherError("[gc] plan_gc(scope=GcScope(dropped_manifests=...)) is not in this build: "
                                  "name the dropped commits in excluded_commits instead")
            bookmarks = getattr(scope, "bookmarks", None)
            args.update(scoped=True, scope_bookmarks=sorted(bookmarks) if bookmarks is not None else None,
                        scope_excluded=sorted(getattr(scope, "excluded_commits", ()) or ()),
                        scope_gone=sorted(getattr(scope, "gone_bookmarks", ()) or ()))
        return _plan(self._n.gc(plan_only=True, **args))

    def apply_gc(self, plan: Plan) -> GcReport:
        report = self._gc_report(self._n.gc(dry_run=False, from_plan=plan.to_json()))
        report.plan = plan
        return report

    # -- recovery --------------------------------------------------------- #

    @_doc("undo")
    def undo(self, op_id: str | None = None, *, discard: bool = False) -> UndoReport:
        out = self._n.undo(op_id, discard)
        undone = str(out.get("undone") or "")
        op = next((e for e in self.ops() if e.id == undone), None) or OpEntry(id=undone, at="", command=str(out.get("command") or ""))
        return UndoReport(
            op=op, undo_id=str(out.get("undo_id") or ""), restored=list(out.get("restored") or []),
            irreversible=list(out.get("irreversible") or []), skipped=list(out.get("skipped") or []),
        )

    @staticmethod
    def _repair_report(out: Mapping[str, Any]) -> RepairReport:
        return RepairReport(repinned=dict(out["repinned"]), reforked=dict(out["reforked"]), failed=dict(out["failed"]))

    @_doc("repair")
    def repair(self, keys: Sequence[str] | None = None, *, all_history: bool = False) -> RepairReport:
        return self._repair_report(self._n.repair(_keys(keys), all_history))

    def plan_repair(self, keys: Sequence[str] | None = None, *, all_history: bool = False) -> Plan:
        return _plan(self._n.repair(_keys(keys), all_history, plan_only=True))

    def apply_repair(self, plan: Plan, *, keys: Sequence[str] | None = None) -> RepairReport:
        report = self._repair_report(self._n.repair(_keys(keys), from_plan=plan.to_json()))
        report.plan = plan
        return report

    # -- lifecycle: drop, abandon, forget-workspace, upgrade ------------- #

    @staticmethod
    def _drop_report(out: Mapping[str, Any], plan: Plan | None = None) -> DropReport:
        gc = out.get("gc")
        return DropReport(
            bookmark=str(out.get("bookmark") or ""), left_for=out.get("left_for"),
            abandoned=list(out.get("abandoned") or []), gc_report=_gc_fields(gc) if isinstance(gc, dict) else None,
            plan=plan,
        )

    @_doc("drop")
    def drop(self, bookmark: str, *, to: str | None = None, delete_stores: bool = False,
             force_prune: bool = False, release_foreign: bool = False) -> DropReport:
        return self._drop_report(self._n.drop(bookmark, to, delete_stores, force_prune,
                                              release_foreign=release_foreign))

    def plan_drop(self, bookmark: str, *, to: str | None = None, delete_stores: bool = False,
                  force_prune: bool = False, release_foreign: bool = False) -> Plan:
        """The drop's plan, applied by `apply_drop`."""
        return _plan(self._n.drop(bookmark, to, delete_stores, force_prune, plan_only=True,
                                  release_foreign=release_foreign))

    def apply_drop(self, plan: Plan) -> DropReport:
        """Apply a drop plan once its preconditions still hold."""
        return self._drop_report(self._n.drop(from_plan=plan.to_json()), plan)

    # -- bookmarks and their expiries ------------------------------------- #

    @_doc("bookmarks")
    def list_bookmarks(self, *, stores: bool = True) -> BookmarksReport:
        """`tether bookmarks --json` as a `BookmarksReport` (this package
        only): every bookmark, the trunk first, with its head, expiry,
        working branches per object and the live checkouts on it.
        `stores=False` is `--no-stores`: only the working branches the live
        checkouts hold, without asking the stores; with `stores=True` a store
        that cannot be listed is in `errors` (the call still succeeds)."""
        out = self._n.list_bookmarks(stores)
        return BookmarksReport(
            trunk=str(out["trunk"]), now=str(out["now"]), errors=dict(out.get("errors") or {}),
            bookmarks=[
                BookmarkInfo(
                    name=b["name"], trunk=bool(b["trunk"]), head=b["head"], created=b.get("created"),
                    expires=b.get("expires"), expired=bool(b.get("expired")),
                    working_refs={k: list(v) for k, v in (b.get("working_refs") or {}).items()},
                    checkouts=[BookmarkCheckout(workspace_id=c["workspace_id"], root=c["root"], here=bool(c["here"]))
                               for c in b.get("checkouts") or []],
                )
                for b in out["bookmarks"]
            ],
        )

    @_doc("bookmarks")
    def set_expiry(self, bookmark: str, expires: datetime | timedelta | float | None) -> ExpiryReport:
        """Set `bookmark`'s expiry, or clear it (this package only; `tether
        bookmarks NAME --expires/--ttl/--no-expiry`).  `expires` is a
        `datetime` with a timezone (a naive one raises `UsageError`), a
        `timedelta` from now (`--ttl`; at least a second), seconds since the
        epoch (an `int` or `float`, UTC), or `None` to clear the expiry, so
        the bookmark stays until dropped; a time in the past is allowed
        (the bookmark is expired at once).  Times outside 1970 to 9999 raise
        `UsageError`.

        The expiry is a commit on the bookmark of
        `.tether/bookmarks/<bookmark>.toml`, made in a checkout on it, so
        every clone that has the bookmark has its expiry.  `ConfigError`,
        naming the bookmark, refuses the trunk (it never expires), a
        bookmark that does not exist, and one this `Repo` is not on (`new`
        onto it first).  Setting the expiry it already has, or clearing one
        it does not have, commits nothing (`changed=False`).  Journaled as
        `bookmarks`; `undo` does not take it back (`set_expiry(bookmark,
        None)` does)."""
        if expires is None:
            out = self._n.set_expiry(bookmark, 0, clear=True)
        else:
            out = self._n.set_expiry(bookmark, _expiry_seconds(expires))
        return ExpiryReport(
            bookmark=str(out["bookmark"]), created=out.get("created"), expires=out.get("expires"),
            commit=out.get("commit"), changed=bool(out.get("changed")),
        )

    @_doc("gc")
    def gc_expired(
        self, *, dry_run: bool = True, delete_stores: bool = False, force_prune: bool = False,
        release_foreign: bool = False,
    ) -> GcExpiredReport:
        """`tether gc --expired` (this package only): drop every bookmark
        whose expiry has passed, each through `drop`'s own plan and apply,
        journaled as its drop.  A dry run by default, like `gc`: each
        expired bookmark's drop plan in `ExpiredBookmark.plan`, nothing
        applied.  The options are `drop`'s.  A bookmark drop refuses, one a
        checkout (this one too) works on, or one whose branches hold
        unpinned writes (without `force_prune`) is refused alone, with the
        reason in `error` (`report.refused`); the others still go.  A drop
        applied that failed raises `MultiObjectError` carrying the report."""
        out = self._n.gc_expired(dry_run, delete_stores, force_prune, release_foreign)
        entries = []
        for b in out["bookmarks"]:
            plan, result = b.get("plan"), b.get("result")
            entries.append(ExpiredBookmark(
                bookmark=str(b["bookmark"]), expires=str(b["expires"]), created=b.get("created"),
                outcome=str(b["outcome"]),
                plan=Plan.from_dict(plan, rendered=b.get("plan_text")) if isinstance(plan, dict) else None,
                result=self._drop_report(result) if isinstance(result, dict) else None, error=b.get("error"),
            ))
        report = GcExpiredReport(dry_run=bool(out["dry_run"]), now=str(out["now"]), bookmarks=entries)
        failed = {b.bookmark: TetherError(b.error or "failed") for b in entries if b.outcome == "failed"}
        if failed:
            raise MultiObjectError(f"gc --expired: {len(failed)} drop(s) failed", failed, report=report)
        return report

    @_doc("abandon")
    def abandon(self, revs: Sequence[str], *, gc: bool = False) -> AbandonReport:
        out = self._n.abandon(_keys(revs) or [], gc)
        report = out.get("gc_report")
        return AbandonReport(
            abandoned=list(out.get("abandoned") or []), gc_plan=_plan_of(out.get("gc_plan"), out.get("gc_plan_text")),
            gc_report=_gc_fields(report) if isinstance(report, dict) else None,
        )

    @staticmethod
    def _forget_report(out: Mapping[str, Any], plan: Plan | None = None) -> ForgetWorkspaceReport:
        return ForgetWorkspaceReport(
            workspace=str(out.get("workspace") or ""), removed_files=list(out.get("removed_files") or []),
            vcs=out.get("vcs"), failed=dict(out.get("failed") or {}), plan=plan,
        )

    @_doc("forget-workspace")
    def forget_workspace(self, workspace_id: str | None = None) -> ForgetWorkspaceReport:
        return self._forget_report(self._n.forget_workspace(workspace_id))

    def plan_forget_workspace(self, workspace_id: str | None = None) -> Plan:
        """The forget-workspace plan, applied by `apply_forget_workspace`."""
        return _plan(self._n.forget_workspace(workspace_id, plan_only=True))

    def apply_forget_workspace(self, plan: Plan) -> ForgetWorkspaceReport:
        return self._forget_report(self._n.forget_workspace(from_plan=plan.to_json()), plan)

    @staticmethod
    def _upgrade_report(out: Mapping[str, Any], plan: Plan | None = None) -> UpgradeReport:
        fields = {k: out[k] for k in UpgradeReport.__dataclass_fields__ if k in out and k != "plan"}
        return UpgradeReport(**fields, plan=plan)

    @_doc("upgrade")
    def upgrade(self, *, ignore_immutable: bool = False) -> UpgradeReport:
        """Open an older dataset with `Repo.find(path, allow_outdated=True)` first."""
        return self._upgrade_report(self._n.upgrade(ignore_immutable))

    def plan_upgrade(self, *, ignore_immutable: bool = False) -> Plan:
        return _plan(self._n.upgrade(ignore_immutable, plan_only=True))

    def apply_upgrade(self, plan: Plan) -> UpgradeReport:
        return self._upgrade_report(self._n.upgrade(from_plan=plan.to_json()), plan)

    @_doc("recover")
    def recover_report(self, keys: Sequence[str] | None = None) -> RecoverReport:
        out = self._n.recover(_keys(keys))
        objects = []
        for o in out.get("objects") or []:
            spaces = {d["dataset_id"]: RecoveredRefs._from_dict(d) for d in o.get("datasets") or []}
            objects.append(RecoveredObject(
                key=o["key"], kind=o["kind"], namespaces=spaces, holds_refs=bool(o.get("holds_refs", True)),
                error=o.get("error"), missing_pin=o.get("missing_pin"), unrecognized=list(o.get("unrecognized") or []),
            ))
        return RecoverReport(
            dataset_id=str(out.get("dataset_id") or ""), trunk=str(out.get("trunk") or ""), objects=objects,
            pinned=bool(out.get("pinned")), suggested_id=out.get("suggested_dataset_id"), scoped=bool(out.get("scoped")),
            steps=[RecoverStep(command=st.get("command"), note=str(st.get("note") or "")) for st in out.get("steps") or []],
        )

    # -- the registry (experimental) -------------------------------------- #

    @_doc("export")
    def export(self, revs: Sequence[str] | None = None, *, listings: bool = False, workspace: bool = False) -> ExportBundle:
        """Returns the tables as an `ExportBundle` (write it with `to_sqlite`,
        `to_dir`, or `to_postgres`, which is `tether publish`)."""
        return _bundle(self._n.export(_keys(revs), listings, workspace))

    def plan_import(self, specs: Sequence[ImportSpec], *, sync: bool = False, notes: Sequence[str] = ()) -> Plan:
        """The add / update / remove plan for these specs (`sync`: also remove
        what they do not name), applied by `apply_import`."""
        rows = [s.to_row() if isinstance(s, ImportSpec) else dict(s) for s in specs]
        plan = _plan(self._n.import_(rows, plan_only=True, sync=sync))
        plan.notes = list(plan.notes) + [n for n in notes if n not in plan.notes]
        return plan

    def apply_import(self, plan: Plan, *, verify: bool = True) -> ImportReport:
        out = self._n.import_(from_plan=plan.to_json())
        return ImportReport(added=list(out.get("added") or []), updated=list(out.get("updated") or []),
                            removed=list(out.get("removed") or []), unchanged=list(out.get("unchanged") or []),
                            plan=plan)

    @_doc("import")
    def import_objects(self, rows: Iterable[Mapping[str, Any]], *, sync: bool = False) -> ImportReport:
        """Rows in the canonical columns (key, kind, uri, locator_json,
        policy_file, policy_pin, at): plan, then apply."""
        rows = [dict(r) for r in rows]
        plan = _plan(self._n.import_(rows, plan_only=True, sync=sync))
        return self.apply_import(plan)

    # -- what tether-vcs's Repo also answers ------------------------------ #

    LOCK_TIMEOUT = 30.0
    """Seconds a command waits for the checkout lock (libtether's own wait)."""
    REPO_LOCK_TIMEOUT = 60.0
    """Seconds a command waits for the repository-wide lock."""
    NO_FCNTL_MESSAGE = (
        "tether cannot take its checkout lock on this platform (no `fcntl`), so commands that write are refused "
        "here; read-only ones work"
    )

    def bookmark_drift(self) -> list[str]:
        """Objects whose store branch moved off what the bookmark committed."""
        return self.status(do_snapshot=False).bookmark_drift

    def vcs_drift(self) -> list[VcsDrift]:
        """Dataset commits this checkout made that left VCS history."""
        return self.status(do_snapshot=False).vcs_drift

    def incomplete_ops(self) -> list[OpEntry]:
        """Journal entries that began and never completed (an interrupted run)."""
        return [e for e in self.ops() if e.incomplete]

    def select_keys(self, selectors: Sequence[str] | None, *, among: Iterable[str] | None = None) -> list[str]:
        """The keys `selectors` name (a key, or `prefix/` for a subtree), sorted;
        `None` or empty: every key.  An unknown selector is a `ConfigError`."""
        keys = sorted(set(among) if among is not None else self._n.keys())
        if not selectors:
            return keys
        out: set[str] = set()
        for sel in selectors:
            hit = [k for k in keys if k == sel or (sel.endswith("/") and k.startswith(sel))]
            if not hit:
                from tether.errors import ConfigError

                raise ConfigError(f"[{sel}] no object matches; `tether status` lists the keys")
            out.update(hit)
        return sorted(out)

    def __repr__(self) -> str:
        return f"Repo({str(self.root)!r})"
