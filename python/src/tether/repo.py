"""`Repo`, the dataset, and the reports its operations return.

Every method is one libtether call (the GIL released while it runs); the
result comes back in the shape `tether <command> --json` prints and is
turned into the report type tether-vcs returns for it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar, Union

from tether import _help, _native
from tether.backends import HistoryEntry, ObjectDiff, Tier, VerifyReport
from tether.errors import MultiObjectError, TetherError
from tether.handles import Handle, from_description
from tether.manifest import ObjectManifest, Pin, Policy, WorkspaceState, ref_for_pin
from tether.oplog import OpEntry
from tether.plan import Plan, _plan

__all__ = [
    "TETHER_REV_ENV",
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
        repo = cls(_native.Repo(os.fspath(path)))
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
        if adopt:
            raise TetherError("new(adopt=True) is not in this build yet")
        self._n.new(rev, bookmark, shared, keep, -1 if eager is None else int(eager), discard)

    def plan_new(
        self, rev: str | None = None, *, bookmark: str | None = None, shared: bool = False, keep: bool = False,
        eager: bool | None = None, discard: bool = False, adopt: bool = False,
    ) -> Plan:
        if adopt:
            raise TetherError("new(adopt=True) is not in this build yet")
        return _plan(self._n.new(rev, bookmark, shared, keep, -1 if eager is None else int(eager), discard, plan_only=True))

    def apply_new(self, plan: Plan, *, verify: bool = True) -> None:
        self._n.new(from_plan=plan.to_json())

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
        self, keys: Sequence[str] | None = None, *, rev: str | None = None, strategy: str = "auto", message: str | None = None
    ) -> PromoteReport:
        return self._promote_report(self._n.promote(_keys(keys), rev, strategy, message))

    def plan_promote(
        self, keys: Sequence[str] | None = None, *, rev: str | None = None, strategy: str = "auto", message: str | None = None
    ) -> Plan:
        return _plan(self._n.promote(_keys(keys), rev, strategy, message, plan_only=True))

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
        fields = {k: out[k] for k in GcReport.__dataclass_fields__ if k in out and k != "plan"}
        report = GcReport(**fields)
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
        scope: Any = None,
    ) -> Plan:
        if scope is not None:
            raise TetherError("plan_gc(scope=...) is not in this build yet")
        args = self._gc_args(prune_bookmarks, keep_bookmarks, force_prune, delete_stores, stores, release_foreign)
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

    def __repr__(self) -> str:
        return f"Repo({str(self.root)!r})"
