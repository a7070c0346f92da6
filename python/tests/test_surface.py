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
]
HANDLES = ["FileHandle", "GitHandle", "IcechunkHandle", "LanceHandle", "DeltaHandle", "MemoryHandle"]
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
]

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
