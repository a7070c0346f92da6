"""The deltalake package as a test oracle for the delta backend.

    delta_oracle.py expect DIR        what deltalake reads: version, table id, history
    delta_oracle.py new DIR           write a fresh table (version 0)
    delta_oracle.py mutate DIR        append a batch of new rows

Every command prints one JSON line.  Expected values in the delta tests come
from here, never typed in by hand.
"""
from __future__ import annotations

import json
import sys
import warnings
from datetime import datetime, timezone

warnings.simplefilter("ignore")

import pyarrow as pa  # noqa: E402
from deltalake import DeltaTable, write_deltalake  # noqa: E402


def batch(start: int, n: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "v": [f"row{i}" for i in range(start, start + n)]})


def iso(ms) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")


def main() -> int:
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "expect":
        dt = DeltaTable(path)
        history = [
            {"version": int(c["version"]), "operation": c.get("operation"),
             "when": iso(c.get("timestamp"))}
            for c in dt.history()
        ]
        print(json.dumps({"version": dt.version(), "table_id": str(dt.metadata().id),
                          "history": history}))
    elif cmd == "new":
        write_deltalake(path, batch(0, 2))
        print(json.dumps({"version": DeltaTable(path).version()}))
    elif cmd == "mutate":
        dt = DeltaTable(path)
        n = dt.version() + 1
        write_deltalake(path, batch(n * 10, n + 1), mode="append")
        print(json.dumps({"version": DeltaTable(path).version()}))
    else:
        print(f"unknown command {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
