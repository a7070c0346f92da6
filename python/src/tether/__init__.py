"""tether: version control (fingerprints, pins, forks) for datasets that
live in other systems -- the Python API on libtether, the C engine.

The entry point is `Repo`, with the names, report types and errors of
tether-vcs's Python API, so scripts written for it run unchanged:

    >>> from tether import Repo
    >>> repo = Repo.find(".")
    >>> repo.commit("baseline")            # pin every object, commit the manifests
    >>> repo.new(bookmark="relabel")       # a bookmark: a branch per store, off the pins
    >>> handle = repo.open("zarr/imaging")  # writable; this open forks the branch
"""

from __future__ import annotations

from tether import _native
from tether.errors import (
    BackendError,
    CapabilityError,
    ConfigError,
    ImmutableObjectModified,
    MergeConflict,
    MultiObjectError,
    PinDriftError,
    RefMovedError,
    StalePlanError,
    StaleWorkingCopyError,
    TetherError,
    UnpinnedStateError,
    UsageError,
    VcsError,
    _from_native,
)

_native._set_error_factory(_from_native)

from importlib.metadata import PackageNotFoundError  # noqa: E402

from tether import backends, errors, handles, manifest, oplog, plan, registry  # noqa: E402
from tether.manifest import (  # noqa: E402
    ObjectManifest,
    Pin,
    Policy,
    WorkspaceState,
    compute_pin_id,
    listing_name,
    manifest_hash,
    ref_for_pin,
    working_ref_bookmark,
    working_ref_name,
    working_ref_workspace,
)
from tether.oplog import OpEntry  # noqa: E402
from tether.plan import Action, Plan, Precondition  # noqa: E402
from tether.registry import (  # noqa: E402
    ExportBundle,
    ImportReport,
    ImportSpec,
    PublishReport,
    build_bundle,
    specs_from_rows,
)
from tether.repo import (  # noqa: E402
    TETHER_REV_ENV,
    AbandonReport,
    BookmarkCheckout,
    BookmarkInfo,
    BookmarksReport,
    DropReport,
    ExpiredBookmark,
    ExpiryReport,
    GcExpiredReport,
    ForgetWorkspaceReport,
    RecoveredObject,
    RecoveredRefs,
    RecoverReport,
    RecoverStep,
    UpgradeReport,
    CommitResult,
    DiffEntry,
    GcReport,
    ObjectStatus,
    PromoteReport,
    PullReport,
    RepairReport,
    Repo,
    RepoConfig,
    SetReport,
    StatusReport,
    UndoReport,
    VcsDrift,
)

libtether_version = _native.version()
"""The version of the libtether it is built on."""

__version__ = libtether_version
"""This package's version: libtether's, which it is built with (one number,
CMake's project(VERSION), for the binary, the .deb and this package)."""

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
    "ExportBundle",
    "ForgetWorkspaceReport",
    "ImportReport",
    "ImportSpec",
    "PackageNotFoundError",
    "PublishReport",
    "RecoverReport",
    "RecoverStep",
    "RecoveredObject",
    "RecoveredRefs",
    "UpgradeReport",
    "build_bundle",
    "errors",
    "manifest",
    "plan",
    "registry",
    "repo",
    "specs_from_rows",
    "working_ref_bookmark",
    "working_ref_workspace",
    "Action",
    "BackendError",
    "CapabilityError",
    "CommitResult",
    "ConfigError",
    "DiffEntry",
    "GcReport",
    "ImmutableObjectModified",
    "MergeConflict",
    "MultiObjectError",
    "ObjectManifest",
    "ObjectStatus",
    "OpEntry",
    "Pin",
    "PinDriftError",
    "Plan",
    "Policy",
    "Precondition",
    "PromoteReport",
    "PullReport",
    "RefMovedError",
    "RepairReport",
    "Repo",
    "RepoConfig",
    "SetReport",
    "StalePlanError",
    "StaleWorkingCopyError",
    "StatusReport",
    "TetherError",
    "UndoReport",
    "UnpinnedStateError",
    "UsageError",
    "VcsDrift",
    "VcsError",
    "WorkspaceState",
    "backends",
    "compute_pin_id",
    "handles",
    "listing_name",
    "manifest_hash",
    "oplog",
    "ref_for_pin",
    "working_ref_name",
]
