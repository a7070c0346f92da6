"""The report types of `tether.backends`, under the module name tether-vcs uses."""

from tether.backends import ChangeEntry, HistoryEntry, ObjectDiff, Tier, VerifyReport, VerifyStatus

__all__ = ["ChangeEntry", "HistoryEntry", "ObjectDiff", "Tier", "VerifyReport", "VerifyStatus"]
