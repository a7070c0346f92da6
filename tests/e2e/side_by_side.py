"""Running one scripted scenario through tether-vcs 0.1.0b7 and through ours,
and comparing what each left: every step's exit code, error line and --json
answer, and the files and store state the scenario names.

Both worlds are made at the same path, one after the other (a store's path
or URI is part of its pin ids and of every locator), so the outputs can be
compared as they are once times and run-bound ids are normalised.  Ids that
differ by run -- workspace and journal ids, the dataset repository's own
commits, an Iceberg table's snapshot ids, jj change ids, a GCS object's
generation -- are replaced by symbols numbered in the order each world first
shows them (`#1`, `#2`, ...): two worlds agree when they show equal ids at
the same places, whatever the ids are.  A world may seed the numbering with
the store's own order (an Iceberg table's snapshots, oldest first), so ids
that only appear as dictionary keys get the same symbol on both sides.
"""
from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

TIMES = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:\d\d|Z)?")
# Hex ids (7 and up: short shas, op ids, pin hashes), long decimal ids
# (Iceberg snapshot ids, GCS generations), jj change ids (k-z letters).
IDS = re.compile(r"(?<![0-9A-Za-z_])(?:[0-9a-f]{7,64}|\d{12,20}|[k-z]{12,32})(?![0-9A-Za-z_])")
AGES = re.compile(r"\b\d+[smhd] ago\b")


class Symbols:
    """One world's ids, numbered by first appearance."""

    def __init__(self, seed: list[str] | None = None):
        self.table: dict[str, str] = {}
        for s in seed or ():
            self.symbol(str(s))

    def symbol(self, token: str) -> str:
        if token not in self.table:
            self.table[token] = f"#{len(self.table) + 1}"
        return self.table[token]

    def text(self, s: str) -> str:
        s = AGES.sub("<age>", TIMES.sub("<time>", s))
        return IDS.sub(lambda m: self.symbol(m.group(0)), s)

    def value(self, v: Any) -> Any:
        """A JSON value with its strings (and keys) symbolised, in document
        order (keys sorted)."""
        if isinstance(v, dict):
            # a saved plan's digest covers its created_at: run-bound, like a time
            return {self.text(str(k)): "<digest>" if k == "digest" and isinstance(v[k], str)
                    else self.value(v[k]) for k in sorted(v)}
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, int) and not isinstance(v, bool) and len(str(abs(v))) >= 12:
            return self.text(str(v))
        return v


def error_line(stderr: str) -> str | None:
    """The error a command reported: its `error: ` line, or under --json
    ours's error object read back as that line (docs/cli.md; listed in
    docs/compatibility.md)."""
    for line in stderr.splitlines():
        if line.startswith("error: "):
            return line
        if line.startswith('{"error": '):
            try:
                return "error: " + json.loads(line)["error"]["message"].split("\n")[0]
            except (ValueError, KeyError, TypeError):
                pass
    return None


Step = tuple | Callable[[Path], Any]


@dataclass
class World:
    """What one implementation's run of a scenario showed."""
    name: str
    steps: list[dict] = field(default_factory=list)
    files: dict[str, Any] = field(default_factory=dict)
    seed: list[str] = field(default_factory=list)

    def normalised(self) -> dict:
        sym = Symbols(self.seed)
        steps = []
        for s in self.steps:
            out = {k: v for k, v in s.items() if not k.startswith("_")}  # _: kept, not compared
            for k in ("json", "value"):
                if k in out:
                    out[k] = sym.value(out[k])
            if out.get("error"):
                out["error"] = sym.text(out["error"])
            steps.append(out)
        files = {k: sym.value(v) for k, v in self.files.items()}
        return {"steps": steps, "files": files}


def run(runner, ds: Path, steps: list[Step], *, env: dict | None = None,
        stdin: dict[int, str] | None = None) -> list[dict]:
    """Each step: a tether command line (its exit code, error line, and the
    --json answer when it asked for one), or a callable run on the dataset
    path (a write to a store, say) whose return value is kept."""
    shown = []
    for i, step in enumerate(steps):
        if callable(step):
            value = step(ds)
            shown.append({"step": getattr(step, "__name__", "step"), "value": value})
            continue
        proc = runner(*step, cwd=ds, check=False, env=env,
                      input=(stdin or {}).get(i))
        rec: dict[str, Any] = {"step": " ".join(step), "rc": proc.returncode,
                               "error": error_line(proc.stderr), "_stderr": proc.stderr}
        if "--json" in step and proc.stdout.strip():
            try:
                rec["json"] = json.loads(proc.stdout)
            except ValueError:
                rec["stdout"] = proc.stdout
        shown.append(rec)
    return shown


def manifests(ds: Path) -> dict[str, str]:
    """The dataset's manifests (captured_at aside) by path."""
    d = ds / ".tether" / "objects"
    if not d.is_dir():
        return {}
    return {str(p.relative_to(d)): re.sub(r'captured_at = "[^"]*"\n', "", p.read_text())
            for p in sorted(d.rglob("*.toml"))}


def dataset_files(ds: Path, env) -> dict[str, Any]:
    """What a dataset's files say: manifests, tether.toml, .tether/.gitignore,
    listings, workspace.toml, and the journal's records as (command, result
    keys) -- the shapes undo and repair read."""
    out: dict[str, Any] = {"manifests": manifests(ds)}
    for name in ("tether.toml", ".tether/.gitignore", ".tether/workspace.toml"):
        p = ds / name
        out[name] = p.read_text() if p.exists() else None
    listings = ds / ".tether" / "listings"
    # by content: a listing's name is its content's hash, and may hold ids
    out["listings"] = (sorted(p.read_text() for p in listings.iterdir())
                       if listings.is_dir() else [])
    ops = ds / ".tether" / "ops.jsonl"
    records = [json.loads(l) for l in ops.read_text().splitlines()] if ops.exists() else []
    started = {r["id"]: r["command"] for r in records if "command" in r}
    out["journal"] = [
        {"command": r["command"], "plan": bool(r.get("plan"))} if "command" in r
        else {"done": started.get(r["done"]), "result": sorted(r.get("result") or {})}
        if "done" in r else {"mark": sorted(r)}
        for r in records]
    return out


def git_out(*args: str, cwd: Path, env) -> str:
    return subprocess.run(["git", *args], cwd=str(cwd), env=env, check=True,
                          capture_output=True, text=True).stdout


def _allowed(ours: World, theirs: World) -> World:
    """Ours with the deliberate differences docs/compatibility.md lists taken
    out, before anything is symbolised: `open --json`'s added fields (the
    handle's own) and .tether/.gitignore's `.*.tmp` line."""
    steps = []
    for x, y in zip(ours.steps, theirs.steps):
        if x.get("step", "").startswith("open ") and isinstance(x.get("json"), dict) \
                and isinstance(y.get("json"), dict) and list(x["json"])[:len(y["json"])] == list(y["json"]):
            x = dict(x, json={k: x["json"][k] for k in y["json"]})
        steps.append(x)
    steps += ours.steps[len(steps):]
    files = dict(ours.files)
    ignore = files.get(".tether/.gitignore")
    if isinstance(ignore, str) and ignore.endswith(".*.tmp\n"):
        files[".tether/.gitignore"] = ignore[:-len(".*.tmp\n")]
    return World(ours.name, steps, files, ours.seed)


_SET_ORDERED = re.compile(r"(?:\[(base_states|fork_points)\.[^\]\n]*\]\n(?:[^\[\n][^\n]*\n)*\n?)+")


def _set_ordered_tables(text: str) -> str:
    """workspace.toml with its base_states and fork_points tables in key
    order: tether-vcs fills them after `new` in a Python set's order, which
    differs by process (docs/compatibility.md)."""
    def sort(m: re.Match) -> str:
        blocks = re.findall(r"\[[^\]\n]*\]\n(?:[^\[\n][^\n]*\n)*\n?", m.group(0))
        blocks = [b if b.endswith("\n\n") else b + "\n" for b in blocks]
        out = "".join(sorted(blocks))
        return out if m.group(0).endswith("\n\n") else out[:-1]
    return _SET_ORDERED.sub(sort, text)


def _set_order(w: World) -> World:
    files = dict(w.files)
    if isinstance(files.get(".tether/workspace.toml"), str):
        files[".tether/workspace.toml"] = _set_ordered_tables(files[".tether/workspace.toml"])
    return World(w.name, w.steps, files, w.seed)


def _leaves(x: Any, y: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where two JSON values differ: (path, ours, theirs) per differing leaf."""
    if isinstance(x, dict) and isinstance(y, dict):
        out = []
        for k in sorted(set(x) | set(y), key=str):
            out += _leaves(x.get(k, "<absent>"), y.get(k, "<absent>"), f"{path}/{k}")
        return out
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        out = []
        for i, (u, v) in enumerate(zip(x, y)):
            out += _leaves(u, v, f"{path}/{i}")
        return out
    return [] if x == y else [(path or "/", x, y)]


def differences(ours: World, theirs: World) -> list[str]:
    """Readable differences between two worlds, step by step then file by
    file; [] when they agree."""
    a, b = _set_order(_allowed(ours, theirs)).normalised(), _set_order(theirs).normalised()
    diffs = []
    for x, y in zip(a["steps"], b["steps"]):
        if x != y:
            where = "; ".join(f"{p}: {u!r} != {v!r}" for p, u, v in _leaves(x, y)[:6])
            diffs.append(f"step {x.get('step')}: {where}")
    if len(a["steps"]) != len(b["steps"]):
        diffs.append("different number of steps")
    for k in sorted(set(a["files"]) | set(b["files"])):
        if a["files"].get(k) != b["files"].get(k):
            diffs.append(f"{k}:\n  ours:   {json.dumps(a['files'].get(k), sort_keys=True)[:3000]}\n"
                         f"  theirs: {json.dumps(b['files'].get(k), sort_keys=True)[:3000]}")
    return diffs


def both(tmp_path: Path, tether, ref, make: Callable[[Path, Any, str], World]) -> dict[str, World]:
    """make(root, runner, name) runs the scenario in root (the same path for
    both) and returns its World; each root is moved aside afterwards, to
    tmp_path/<name>."""
    worlds = {}
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = tmp_path / "world"
        root.mkdir()
        worlds[name] = make(root, runner, name)
        root.rename(tmp_path / name)
    return worlds
