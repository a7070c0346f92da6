"""The --json shapes of every command, checked against docs/json-schema.json.

Every run of our binary with --json in the end-to-end suite (the Runner in
conftest.py) is checked here: stdout against the schema of its command, and
under a failure, a JSON object on stderr against the error schema.  A
command without a schema fails the test that ran it, so a new command or
shape cannot land unnoticed.

The schema file pins the shapes scripts rely on: the keys every answer
has, and the JSON type of each value, down the whole document.  It allows
keys it does not name (a new field is not a break); a key that
disappears, or a value that changes type, is.

To write the schema anew from what the suite produces (after a deliberate
change of shape; review the diff before committing it):

    TETHER_JSON_CORPUS=/tmp/corpus pytest tests/e2e -n 3 ...
    python tests/e2e/json_shapes.py /tmp/corpus
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "docs" / "json-schema.json"
# Options that take a value before the command word.
_VALUED_GLOBALS = {"-C", "--directory"}
_schema_cache: dict | None = None


def command_of(args: tuple[str, ...]) -> str | None:
    it = iter(args)
    for a in it:
        if a in _VALUED_GLOBALS:
            next(it, None)
            continue
        if a.startswith("-"):
            continue
        return a
    return None


def _documents(text: str) -> tuple[str, list] | None:
    """('doc', [value]) for one JSON document, ('lines', values) for JSON lines."""
    text = text.strip()
    if not text:
        return None
    try:
        return "doc", [json.loads(text)]
    except ValueError:
        pass
    values = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            values.append(json.loads(line))
        except ValueError:
            return None  # not JSON at all: nothing to check (a usage error's text, ...)
    return "lines", values


def _schema() -> dict:
    global _schema_cache
    if _schema_cache is None:
        _schema_cache = json.loads(SCHEMA_PATH.read_text())
    return _schema_cache


def _record(cmd: str, stream: str, form: str, values: list) -> None:
    corpus = os.environ.get("TETHER_JSON_CORPUS")
    if not corpus:
        return
    Path(corpus).mkdir(parents=True, exist_ok=True)
    with open(Path(corpus) / f"shapes-{os.getpid()}.jsonl", "a") as f:
        for v in values:
            f.write(json.dumps({"command": cmd, "stream": stream, "form": form, "value": v}) + "\n")


def check(args: tuple[str, ...], returncode: int, stdout: str, stderr: str) -> None:
    """Raise AssertionError when a --json answer does not fit its schema."""
    import jsonschema

    cmd = command_of(args) or "(none)"
    for stream, text in (("stdout", stdout), ("stderr", stderr)):
        found = _documents(text)
        if found is None:
            continue
        form, values = found
        if stream == "stderr" and (returncode == 0 or form != "doc" or not isinstance(values[0], dict)):
            continue  # progress, warnings: not the answer
        _record(cmd, stream, form, values)
        if os.environ.get("TETHER_JSON_CORPUS"):
            continue  # collecting: the schema is about to be written anew
        key = "error" if stream == "stderr" else cmd
        entry = _schema()["commands"].get(key)
        if entry is None:
            raise AssertionError(
                f"tether {' '.join(args)}: no JSON schema for '{key}' in {SCHEMA_PATH.name}; "
                "add one (see tests/e2e/json_shapes.py)")
        schema = entry.get(form)
        if schema is None:
            raise AssertionError(f"tether {' '.join(args)}: '{key}' answered {form} on {stream}, "
                                 f"but {SCHEMA_PATH.name} has only {sorted(entry)}")
        for v in values:
            try:
                jsonschema.validate(v, schema)
            except jsonschema.ValidationError as e:
                where = "/".join(str(p) for p in e.absolute_path) or "(top)"
                raise AssertionError(
                    f"tether {' '.join(args)}: {stream} does not fit the '{key}' schema at {where}: "
                    f"{e.message}") from None


# ---- writing the schema from a corpus --------------------------------------------

def _type(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def infer(values: list, depth: int = 0) -> dict:
    types = {_type(v) for v in values}
    if "number" in types:
        types.discard("integer")
    out: dict = {}
    if depth > 14:
        return out
    out["type"] = sorted(types)[0] if len(types) == 1 else sorted(types)
    objs = [v for v in values if isinstance(v, dict)]
    if objs:
        keys: dict[str, list] = {}
        for o in objs:
            for k, v in o.items():
                keys.setdefault(k, []).append(v)
        required = sorted(k for k, vs in keys.items() if len(vs) == len(objs))
        if len(keys) > 12 and not required:
            # keyed by data (object keys, pin ids, paths): a map
            out["additionalProperties"] = infer([v for vs in keys.values() for v in vs], depth + 1)
        else:
            out["properties"] = {k: infer(vs, depth + 1) for k, vs in sorted(keys.items())}
            if required:
                out["required"] = required
    arrays = [v for v in values if isinstance(v, list)]
    if arrays:
        items = [x for a in arrays for x in a]
        if items:
            out["items"] = infer(items, depth + 1)
    return out


def write_schema(corpus: Path) -> dict:
    samples: dict[str, dict[str, list]] = {}
    for f in sorted(corpus.glob("shapes-*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            key = "error" if r["stream"] == "stderr" else r["command"]
            samples.setdefault(key, {}).setdefault(r["form"], []).append(r["value"])
    commands = {k: {form: infer(vs) for form, vs in sorted(forms.items())} for k, forms in sorted(samples.items())}
    doc = {
        "$comment": "The --json shapes of tether's commands (the keys every answer has and the type of each "
                    "value), keyed by command; 'error' is the object on stderr when a command fails under "
                    "--json; 'doc' is one JSON document, 'lines' one per line. Checked by the end-to-end "
                    "suite (tests/e2e/json_shapes.py), which also writes it anew from a run.",
        "commands": commands,
    }
    SCHEMA_PATH.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return doc


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: json_shapes.py CORPUS_DIR")
    d = write_schema(Path(sys.argv[1]))
    print(f"{SCHEMA_PATH}: {len(d['commands'])} commands")
