"""The API's shape against tether-vcs's: the same report fields, error
hierarchy, handle fields and method parameters.  tether-vcs is read in its
own interpreter (the checkout's .venv), as the two cannot share one."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tether

pytestmark = pytest.mark.skipif(not hasattr(tether, "libtether_version"), reason="compares the libtether package")

REFERENCE = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python"

REPORTS = [
    "StatusReport", "ObjectStatus", "CommitResult", "SetReport", "PullReport", "GcReport", "PromoteReport",
    "RepairReport", "UndoReport", "DiffEntry", "VcsDrift", "OpEntry", "Plan", "Action", "Precondition",
    "ObjectManifest", "Pin", "Policy", "WorkspaceState",
    "AbandonReport", "DropReport", "ForgetWorkspaceReport", "UpgradeReport", "RecoverReport", "RecoverStep",
    "RecoveredObject", "RecoveredRefs", "ExportBundle", "ImportReport", "ImportSpec", "PublishReport",
]
HANDLES = [
    "FileHandle", "GitHandle", "IcechunkHandle", "LanceHandle", "DeltaHandle", "MemoryHandle", "IcebergHandle",
    "DuckLakeHandle",
]
ERRORS = [
    "TetherError", "ConfigError", "VcsError", "BackendError", "CapabilityError", "MergeConflict",
    "ImmutableObjectModified", "UnpinnedStateError", "PinDriftError", "StaleWorkingCopyError", "StalePlanError",
    "MultiObjectError", "RefMovedError",
]
METHODS = [
    "find", "init", "status", "snapshot", "commit", "plan_commit", "apply_commit", "new", "plan_new", "apply_new",
    "open", "add", "create", "remove", "set_policy", "verify", "diff", "history", "history_for", "gc", "plan_gc",
    "apply_gc", "pull", "promote", "plan_promote", "apply_promote", "restore", "plan_restore", "apply_restore",
    "ops", "undo", "repair", "plan_repair", "apply_repair", "stale_keys", "is_stale", "on_trunk",
    "current_manifest_hash",
    "drop", "plan_drop", "apply_drop", "abandon", "forget_workspace", "plan_forget_workspace",
    "apply_forget_workspace", "upgrade", "plan_upgrade", "apply_upgrade", "recover_report", "export",
    "import_objects", "plan_import", "apply_import", "materialize_fork", "bookmark_drift", "vcs_drift",
    "incomplete_ops", "select_keys",
]

# tether-vcs's public names this package does not offer, and why.  Any
# other public name of tether-vcs's module or Repo missing here fails.
NOT_OFFERED = {
    "module": {
        "testing": "the backend conformance harness of tether-vcs's Python backends; backends here are C",
        "vcs": "tether-vcs's Python VCS adapters; libtether drives git and jj itself",
    },
    "Repo": {
        "adopt_trunk": "done by `init` and `new` in libtether",
        "backend_for": "backends are C objects in libtether, not Python ones",
        "bookmark_holders": "libtether's internal check before `new` and `drop`",
        "created_stores": "the experimental created-store index is read by `gc --delete-stores` in libtether",
        "touched_stores": "likewise the touched-store index",
        "live_bookmarks": "gc's internal view of live checkouts",
        "live_workspace_ids": "gc's internal view of live checkouts",
        "moving_keys": "commit's internal choice of what to fingerprint",
        "require_persisted_workspace": "libtether persists the workspace before it saves a plan",
    },
}


NAMES_PROBE = r"""
import json, tether
print(json.dumps({"module": sorted(n for n in dir(tether) if not n.startswith("_")),
                  "Repo": sorted(n for n in dir(tether.Repo) if not n.startswith("_"))}))
"""

PROBE = r"""
import dataclasses, inspect, json, sys
import tether, tether.handles, tether.errors
names = json.loads(sys.argv[1])
def fields(obj):
    return [f.name for f in dataclasses.fields(obj) if not f.name.startswith("_")]
out = {
    "reports": {n: fields(getattr(tether, n)) for n in names["reports"]},
    "handles": {n: fields(getattr(tether.handles, n)) for n in names["handles"]},
    "errors": {n: [c.__name__ for c in getattr(tether.errors, n).__mro__] for n in names["errors"]},
    "methods": {n: [p for p in inspect.signature(getattr(tether.Repo, n)).parameters if p not in ("self", "cls")]
                for n in names["methods"]},
    "exports": sorted(n for n in ["TETHER_REV_ENV", "compute_pin_id", "ref_for_pin", "manifest_hash"] if hasattr(tether, n)),
    "rev_env": tether.TETHER_REV_ENV,
}
print(json.dumps(out))
"""


def _mine() -> dict:
    def fields(obj):
        return [f.name for f in dataclasses.fields(obj) if not f.name.startswith("_")]

    return {
        "reports": {n: fields(getattr(tether, n)) for n in REPORTS},
        "handles": {n: fields(getattr(tether.handles, n)) for n in HANDLES},
        "errors": {n: [c.__name__ for c in getattr(tether.errors, n).__mro__] for n in ERRORS},
        "methods": {
            n: [p for p in inspect.signature(getattr(tether.Repo, n)).parameters if p not in ("self", "cls")]
            for n in METHODS
        },
        "exports": sorted(n for n in ["TETHER_REV_ENV", "compute_pin_id", "ref_for_pin", "manifest_hash"] if hasattr(tether, n)),
        "rev_env": tether.TETHER_REV_ENV,
    }


@pytest.fixture(scope="module")
def reference() -> dict:
    if not REFERENCE.exists():
        pytest.skip("no tether-vcs environment (.venv) beside the package")
    names = {"reports": REPORTS, "handles": HANDLES, "errors": ERRORS, "methods": METHODS}
    out = subprocess.run([str(REFERENCE), "-c", PROBE, json.dumps(names)], capture_output=True, text=True,
                         check=True, cwd="/")
    return json.loads(out.stdout)


@pytest.mark.parametrize("part", ["reports", "handles", "errors", "exports", "rev_env"])
def test_same_shape_as_tether_vcs(reference, part):
    assert _mine()[part] == reference[part]


def test_methods_take_tether_vcs_parameters(reference):
    mine = _mine()["methods"]
    # Ours may add keyword-only parameters at the end (progress=).
    differ = {n: (mine[n], p) for n, p in reference["methods"].items() if mine[n][: len(p)] != p}
    assert differ == {}


@pytest.mark.parametrize("part", ["module", "Repo"])
def test_every_public_name_of_tether_vcs(part):
    if not REFERENCE.exists():
        pytest.skip("no tether-vcs environment (.venv) beside the package")
    out = subprocess.run([str(REFERENCE), "-c", NAMES_PROBE], capture_output=True, text=True, check=True, cwd="/")
    theirs = json.loads(out.stdout)[part]
    ours = set(dir(tether if part == "module" else tether.Repo))
    missing = sorted(n for n in theirs if n not in ours and n not in NOT_OFFERED[part])
    assert missing == []
    # An excuse for a name we do offer, or tether-vcs no longer has, is stale.
    assert sorted(n for n in NOT_OFFERED[part] if n in ours or n not in theirs) == []
