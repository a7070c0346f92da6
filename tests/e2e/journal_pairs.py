"""One scenario run through tether-vcs 0.1.0b7 and through ours, compared
by what each journals: the records every step appends to
.tether/ops.jsonl (entry, progress, done), its exit code, and for `undo`
what it says it undid.

Both worlds are built at the same path (the stores' paths are in the
records) with fixed git dates, so only what legitimately differs is
normalised: times, journal and workspace ids (journal ids renamed in the
order they appear, so `parent`, `undoes` and `done` still have to point
at the right entry), plan digests and history digests (hashes over the
dataset's commits, whose trees differ by the extra `.tether/.gitignore`
line), commit ids (named by their repository and subject, so a record
naming the wrong commit still differs), workspace.toml kept in a record
(compared as TOML: the order of its tables is not tether-vcs's to keep,
see docs/compatibility.md), and the order in which parallel forks report
progress.
"""
from __future__ import annotations

import json
import re
import sqlite3
import tomllib
from pathlib import Path

from conftest import git

DS = "5ca1ab1e"
STAMP = "2026-01-01T00:00:00+00:00"


def working_ref(bookmark: str) -> str:
    return f"tether.ws.{DS}.{bookmark}"


def fixed(env: dict) -> dict:
    e = dict(env)
    e.update(GIT_AUTHOR_DATE=STAMP, GIT_COMMITTER_DATE=STAMP)
    return e


def make_store(path: Path, env: dict) -> None:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path, env=env)
    (path / "model.py").write_text(f"{path.name} = 1\n")
    git("add", ".", cwd=path, env=fixed(env))
    git("commit", "-q", "-m", f"initial {path.name}", cwd=path, env=fixed(env))


# --- steps outside tether ------------------------------------------------------


def write(store: str, branch: str, text: str, message: str, path: str = "model.py"):
    """A commit on a store's branch (through a worktree when it is not the
    branch checked out), with fixed dates so both worlds make the same sha."""
    def step(world: Path, env: dict) -> None:
        repo, e = world / store, fixed(env)
        if git("symbolic-ref", "--short", "HEAD", cwd=repo, env=e).strip() == branch:
            (repo / path).write_text(text)
            git("add", path, cwd=repo, env=e)
            git("commit", "-q", "-m", message, cwd=repo, env=e)
            return
        wt = world / f"wt-{store}"
        git("worktree", "add", "-q", str(wt), branch, cwd=repo, env=e)
        (wt / path).write_text(text)
        git("add", path, cwd=wt, env=e)
        git("commit", "-q", "-m", message, cwd=wt, env=e)
        git("worktree", "remove", "--force", str(wt), cwd=repo, env=e)
    return step


def in_git(*args: str, repo: str = "ds"):
    def step(world: Path, env: dict) -> None:
        git(*args, cwd=world / repo, env=fixed(env))
    return step


def delete_tags(store: str):
    def step(world: Path, env: dict) -> None:
        for tag in git("tag", cwd=world / store, env=env).split():
            git("tag", "-d", tag, cwd=world / store, env=env)
    return step


def registry(rows):
    """A SQLite registry beside the dataset: (key, kind, store, pin policy, owner)."""
    def step(world: Path, env: dict) -> None:
        con = sqlite3.connect(world / "reg.sqlite")
        con.execute("DROP TABLE IF EXISTS registry")
        con.execute("CREATE TABLE registry (key TEXT, kind TEXT, uri TEXT, policy_pin TEXT, owner TEXT)")
        con.executemany("INSERT INTO registry VALUES (?, ?, ?, ?, ?)",
                        [(k, kind, str(world / s), p, o) for k, kind, s, p, o in rows])
        con.commit()
        con.close()
    return step


# --- normalising ---------------------------------------------------------------


TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")
ID12 = re.compile(r"\b[0-9a-f]{12}\b")


def commit_names(world: Path, env: dict) -> dict[str, str]:
    """Every commit of the world's repositories, full and abbreviated to 12,
    named <repo:subject#n>."""
    names = {}
    for repo in sorted(p for p in world.iterdir() if (p / ".git").exists()):
        seen: dict[str, int] = {}
        log = git("log", "--all", "--format=%H %s", cwd=repo, env=env)
        for line in reversed(log.splitlines()):
            sha, _, subject = line.partition(" ")
            n = seen.get(subject, 0)
            seen[subject] = n + 1
            names[sha] = f"<{repo.name}:{subject}#{n}>"
            names[sha[:12]] = f"<{repo.name}:{subject}#{n}:12>"
    return names


class Normaliser:
    def __init__(self, world: Path, env: dict):
        self.world, self.env, self.ids = world, env, {}

    def text(self, text: str) -> str:
        names = commit_names(self.world, self.env)
        for sha in sorted(names, key=len, reverse=True):
            text = text.replace(sha, names[sha])
        text = TIMES.sub("<time>", text)
        text = re.sub(r"\b[0-9a-f]{40}\b", "<commit gone>", text)
        text = re.sub(r"\b[0-9a-f]{32}\b", "<workspace>", text)
        return ID12.sub(lambda m: self.ids.setdefault(m.group(0), f"<op{len(self.ids)}>"), text)

    def records(self, lines: list[str]) -> list[dict]:
        out = [_tidy(json.loads(self.text(line))) for line in lines]
        # Parallel forks report their progress in the order they finish.
        step = lambda r: isinstance(r.get("progress"), str)  # a progress record, not an entry
        progress = sorted((r for r in out if step(r)), key=lambda r: json.dumps(r, sort_keys=True))
        return [r for r in out if not step(r)] + progress


def _tidy(obj):
    """Digests out; workspace.toml as TOML."""
    if isinstance(obj, list):
        return [_tidy(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        if k in ("digest", "history_digest") and isinstance(v, str):
            v = "<digest>"
        elif k == "workspace" and isinstance(v, str) and "workspace_id" in v:
            v = {"toml": tomllib.loads(v)}
        else:
            v = _tidy(v)
        out[k] = v
    if out.get("kind") == "history_digest" and "expected" in out:
        out["expected"] = "<digest>"
    return out


def _said(text: str) -> str:
    """What undo says, less the `hint:` lines this build adds below an error."""
    return _tidy("".join(l for l in text.splitlines(keepends=True) if not l.startswith("hint: ")))


# --- running -------------------------------------------------------------------


def make_world(world: Path, env: dict, stores=("code", "lib")) -> Path:
    world.mkdir(parents=True)
    for name in stores:
        make_store(world / name, env)
    ds = world / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=fixed(env))
    return ds


def run(runner, world: Path, env: dict, steps, side: str) -> list[dict]:
    """Each step's exit code, output and the journal records it appended.
    A step is an argument tuple (run in ds), {"args", "cwd"} (run in
    another checkout), {"ours", "theirs"} (each side its own arguments), a
    callable (a step outside tether), or an argument tuple naming journal
    entries as "@-N" (the N-th newest entry's id)."""
    norm = Normaliser(world, env)
    out = []
    for step in steps:
        if callable(step):
            step(world, env)
            continue
        if isinstance(step, dict) and "ours" in step:
            step = step[side]
        cwd = world / "ds"
        if isinstance(step, dict):
            step, cwd = step["args"], world / step["cwd"]
        journal = cwd / ".tether/ops.jsonl"
        lines = journal.read_text().splitlines() if journal.exists() else []
        entries = [json.loads(l)["id"] for l in lines if '"command"' in l]
        args = tuple(entries[-int(a[2:])] if a.startswith("@-") else a for a in step)
        proc = runner(*args, cwd=cwd, check=False, env=fixed(env))
        after = journal.read_text().splitlines() if journal.exists() else []
        assert after[:len(lines)] == lines, f"{args}: the journal was rewritten, not appended to"
        out.append({"args": " ".join(step), "rc": proc.returncode,
                    "records": norm.records(after[len(lines):]),
                    "said": _said(norm.text(proc.stdout + proc.stderr)) if step[0] == "undo" else None})
    ops = runner("ops", cwd=world / "ds", check=False)
    out.append({"args": "ops", "rc": ops.returncode, "records": [], "said": norm.text(ops.stdout)})
    return out


def pair(tmp_path: Path, env: dict, tether, ref, steps, stores=("code", "lib")) -> dict:
    """The scenario through each implementation, in the same place."""
    out = {}
    for side, runner in (("ours", tether), ("theirs", ref)):
        world = tmp_path / "world"
        make_world(world, env, stores)
        out[side] = run(runner, world, env, steps, side)
        world.rename(tmp_path / side)
    return out


def _diff(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        lines = []
        for k in list(a) + [k for k in b if k not in a]:
            if k not in b or k not in a:
                lines.append(f"{path}.{k}: only {'ours' if k in a else 'theirs'}: {json.dumps((a if k in a else b)[k])}")
            else:
                lines += _diff(a[k], b[k], f"{path}.{k}")
        return lines
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [line for i, (x, y) in enumerate(zip(a, b)) for line in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: ours {json.dumps(a)} theirs {json.dumps(b)}"]


def assert_same(both: dict) -> None:
    """Step by step: the same exit code, the same records, undo saying the
    same; the first difference is reported field by field."""
    for o, t in zip(both["ours"], both["theirs"]):
        assert o["args"] == t["args"]
        what = {k: o[k] for k in ("rc", "records", "said")}
        want = {k: t[k] for k in ("rc", "records", "said")}
        assert what == want, f"`tether {o['args']}`:\n  " + "\n  ".join(_diff(what, want))
