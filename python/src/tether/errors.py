"""The exceptions tether raises, one class per kind of failure.

Every error libtether reports arrives as one of these, chosen by the
error's code; the message is the text the CLI prints after ``error:``
(``[key] ...`` when it is about one object) and ``hint`` is the fix the CLI
prints on its ``hint:`` line, when there is one.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "CapabilityError",
    "ConfigError",
    "ImmutableObjectModified",
    "MergeConflict",
    "MultiObjectError",
    "PinDriftError",
    "RefMovedError",
    "StalePlanError",
    "StaleWorkingCopyError",
    "TetherError",
    "UnpinnedStateError",
    "UsageError",
    "VcsError",
]


class TetherError(Exception):
    """Base of every error tether raises."""

    hint: str | None = None
    """How to fix it, when libtether knows (the CLI's ``hint:`` line)."""
    code: str | None = None
    """libtether's name for the error's code (``config``, ``backend``, ...)."""


class ConfigError(TetherError):
    """``tether.toml``, a manifest, ``secrets.toml`` or an object key is wrong,
    or the object asked for does not exist."""


class VcsError(TetherError):
    """The dataset's git (or jj) failed."""


class BackendError(TetherError):
    """A store refused or failed.  ``key`` and ``kind`` name the object and
    its backend when known; the message then starts ``[key]`` (or ``[kind]``)."""

    def __init__(self, message: str, *, key: str | None = None, kind: str | None = None) -> None:
        self.key = key
        self.kind = kind
        label = key if key is not None else kind
        super().__init__(f"[{label}] {message}" if label is not None else message)


class MergeConflict(BackendError):
    """A native merge stopped on conflicts and wrote nothing; ``conflicts``
    lists the units (paths, tables, arrays) the store named."""

    def __init__(
        self,
        message: str,
        *,
        conflicts: list[str] | None = None,
        key: str | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message, key=key, kind=kind)
        self.conflicts = list(conflicts or [])


class RefMovedError(BackendError):
    """A conditional ref move found the ref at another head than the plan
    expected; nothing was written.  Plan again and review what moved."""


class CapabilityError(BackendError):
    """The object's kind cannot do what was asked (a writable handle on an
    object that cannot fork, for example)."""


class ImmutableObjectModified(BackendError):
    """An object registered as immutable changed."""


class UnpinnedStateError(BackendError):
    """A state could not be pinned and the commit was strict."""


class PinDriftError(BackendError):
    """A pin no longer points at the state its manifest records."""


class StaleWorkingCopyError(TetherError):
    """This checkout forked from manifests that HEAD no longer has: run
    ``Repo.new`` before writing."""


class StalePlanError(TetherError):
    """A saved plan's preconditions no longer hold: plan again."""


class MultiObjectError(TetherError):
    """Several objects failed in one operation.  ``errors`` maps each target
    to its failure; ``report`` is what the operation did before that."""

    def __init__(self, message: str, errors: dict[str, Exception], *, report: object = None) -> None:
        self.errors = errors
        self.report = report
        parts = "; ".join(f"{target}: {exc}" for target, exc in errors.items())
        super().__init__(f"{message} ({parts})" if parts else message)


class UsageError(TetherError, ValueError):
    """The call asked for something meaningless (contradictory options, a
    malformed argument)."""


_BY_CODE: dict[int, type[TetherError]] = {
    -2: ConfigError,  # config
    -3: BackendError,  # backend
    -4: CapabilityError,  # capability
    -5: ConfigError,  # not found
    -6: ConfigError,  # exists
    -8: RefMovedError,  # ref moved
    -9: MergeConflict,  # conflict
    -10: StalePlanError,  # stale plan
    -14: ConfigError,  # parse
    -15: VcsError,  # vcs
    -16: ImmutableObjectModified,
    -17: PinDriftError,
    -18: UnpinnedStateError,
    -19: UsageError,
}


def _from_native(
    code: int,
    name: str,
    message: str | None,
    hint: str | None,
    key: str | None,
    kind: str | None,
    text: str | None,
) -> TetherError:
    """Build the exception for a libtether error (called by ``tether._native``)."""
    cls = _BY_CODE.get(code, TetherError)
    message = message or text or name
    exc: TetherError
    if issubclass(cls, BackendError):
        # The native text already carries "[key]"/"[kind]"; keep it as is.
        exc = cls.__new__(cls)
        Exception.__init__(exc, text or message)
        exc.key, exc.kind = key, kind
        if cls is MergeConflict:
            exc.conflicts = []
    else:
        exc = cls(text or message)
    exc.hint = hint
    exc.code = name
    return exc
