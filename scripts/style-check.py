#!/usr/bin/env python3
"""The conventions of docs/conventions.md that a program can hold the tree to.

Rules (each over src/; tests, fuzz targets and benchmarks are not held to them):
  symbol          every global symbol of libtether.a is tt_-prefixed
  kind-test       no comparison with a kind's name ("file", "git", ...) outside
                  src/backends/: what differs by kind is a backend op or a
                  column of the kinds table
  file-length     no source file over 1,500 lines
  function-length no function over 150 lines (120 in src/engine/, whose
                  commands read as short stories of named steps)
  engine-layers   src/engine/ is a kernel (kernel/) under the commands
                  (cmd/, gc/, registry/) under the public entry points (api/):
                  no include of a higher floor's header, no circle between
                  files (a file and its header are one unit; an include is
                  an edge), and one header per file (a header beside no .c
                  of its name declares types only)

An exception is a line of the allowlist (scripts/style-allow.txt) with its
reason:
  symbol          NAME             reason
  kind-test       PATH KIND        reason
  file-length     PATH             reason
  function-length PATH:FUNCTION    reason
  engine-layers   FROM->TO | A,B,...  reason   (an upward include; a circle's units)
An entry that no longer matches anything is an error too: the list only
shrinks as the code is fixed.

Usage: style-check.py [--root DIR] [--lib LIBTETHER_A] [--allow FILE]
Prints one line per violation and a summary per rule; exits 1 when any rule
fails, 2 on bad usage.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

MAX_FILE_LINES = 1500
MAX_FUNCTION_LINES = 150
MAX_ENGINE_FUNCTION_LINES = 120
RULES = ("symbol", "kind-test", "file-length", "function-length", "engine-layers")
# src/engine/'s floors: a file may include headers of its own floor or below.
ENGINE_FLOORS = {"kernel": 0, "cmd": 1, "gc": 1, "registry": 1, "api": 2}


def load_allow(path: Path) -> tuple[dict[tuple[str, str], str], list[str]]:
    """{(rule, subject): reason} and the problems with the file itself."""
    allow: dict[tuple[str, str], str] = {}
    problems = []
    if not path.exists():
        return allow, problems
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        rule = parts[0]
        width = 3 if rule == "kind-test" else 2
        if rule not in RULES or len(parts) <= width:
            problems.append(f"{path.name}:{n}: want '<rule> <subject> <reason>' "
                            f"(rules: {', '.join(RULES)}): {raw}")
            continue
        subject = " ".join(parts[1:width])
        allow[(rule, subject)] = " ".join(parts[width:])
    return allow, problems


def sources(root: Path) -> list[Path]:
    return sorted(p for p in (root / "src").rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def rel(root: Path, p: Path) -> str:
    return p.relative_to(root).as_posix()


# --- symbol -------------------------------------------------------------------

def check_symbols(lib: Path) -> list[tuple[str, str]]:
    out = subprocess.run(["nm", "--defined-only", str(lib)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"style-check: nm {lib} failed: {out.stderr.strip()}")
    found = []
    obj = "?"
    for line in out.stdout.splitlines():
        if line.endswith(":") and " " not in line.strip():
            obj = line[:-1]
            continue
        parts = line.split()
        # "<value> <type> <name>": upper-case types are global (U is excluded
        # by --defined-only; weak and common symbols count too)
        # AddressSanitizer adds an ODR indicator, __odr_asan.<name>, beside
        # every global variable: the variable itself is checked.
        if len(parts) == 3 and parts[2].startswith("__odr_asan."):
            continue
        if len(parts) == 3 and parts[1].isupper() and not parts[2].startswith("tt_"):
            found.append((parts[2], f"{parts[2]} (in {obj}): a global without the tt_ prefix"))
    return found


# --- kind-test ----------------------------------------------------------------

def kind_names(root: Path) -> list[str]:
    reg = root / "src/backends/registry.c"
    names = re.findall(r'\.name\s*=\s*"([a-z][a-z0-9_]*)"', reg.read_text()) if reg.exists() else []
    return sorted(set(names))


COMPARE = re.compile(r"\b(?:strcmp|strncmp|strcasecmp|strncasecmp|streq|memcmp)\s*\(")


def call_args(text: str, start: int) -> str:
    """The text between the parentheses of the call opening at start."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
        elif c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        i += 1
    return text[start + 1:]


def strip_comments(text: str) -> str:
    """Comments blanked (newlines kept, so line numbers hold); strings kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def check_kind_tests(root: Path) -> list[tuple[str, str]]:
    kinds = kind_names(root)
    if not kinds:
        return []
    literal = re.compile(r'"(' + "|".join(map(re.escape, kinds)) + r')"')
    found = []
    for p in sources(root):
        r = rel(root, p)
        if r.startswith("src/backends/"):
            continue
        text = strip_comments(p.read_text(errors="replace"))
        for m in COMPARE.finditer(text):
            args = call_args(text, m.end() - 1)
            for lit in literal.finditer(args):
                # the literal must be a whole argument, not part of a longer string
                line = text.count("\n", 0, m.start()) + 1
                found.append((f"{r} {lit.group(1)}",
                              f'{r}:{line}: compares with the kind name "{lit.group(1)}"'))
    return found


# --- file-length, function-length -----------------------------------------------

SIGNATURE = re.compile(r"^(?=[A-Za-z_])[^;{}(]*?([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each function definition written as
    the tree writes them: the signature from column 0, the body's braces
    alone on their lines at column 0.  Lines count as ctags counts: from
    the line with the name to the closing brace."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            # the signature: back over its continuation lines to the line
            # at column 0 that names the function
            j = i - 1
            while j > 0 and lines[j][:1] in (" ", "\t"):
                j -= 1
            m = SIGNATURE.match(lines[j]) if j >= 0 else None
            end = i + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            if m:
                out.append((m.group(1), j + 1, end + 1))
            i = end + 1
        else:
            i += 1
    return out


def check_sizes(root: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    files, funcs = [], []
    for p in sources(root):
        r = rel(root, p)
        text = p.read_text(errors="replace")
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > MAX_FILE_LINES:
            files.append((r, f"{r}: {n} lines (at most {MAX_FILE_LINES})"))
        limit = MAX_ENGINE_FUNCTION_LINES if r.startswith("src/engine/") else MAX_FUNCTION_LINES
        for name, first, last in functions(text):
            length = last - first + 1
            if length > limit:
                funcs.append((f"{r}:{name}",
                              f"{r}:{first}: {name} is {length} lines (at most {limit})"))
    return files, funcs


# --- engine-layers ------------------------------------------------------------

ENGINE_INCLUDE = re.compile(r'^\s*#\s*include\s+"(engine/[^"]+)\.h"', re.M)
DECLARES_FUNCTION = re.compile(r"^[A-Za-z_][^;{}()#]*\b[A-Za-z_][A-Za-z0-9_]*\s*\([^;{}]*\)\s*;", re.M)


def check_engine_layers(root: Path) -> list[tuple[str, str]]:
    engine = root / "src/engine"
    if not engine.is_dir():
        return []
    found = []
    units: dict[str, set[str]] = {}
    for p in sorted(engine.rglob("*")):
        if p.suffix not in (".c", ".h") or not p.is_file():
            continue
        r = rel(root, p)
        parts = p.relative_to(engine).parts
        if len(parts) < 2 or parts[0] not in ENGINE_FLOORS:
            found.append((r, f"{r}: outside the engine's folders ({', '.join(sorted(ENGINE_FLOORS))})"))
            continue
        unit = p.with_suffix("").relative_to(root / "src").as_posix()
        text = strip_comments(p.read_text(errors="replace"))
        if p.suffix == ".h" and not p.with_suffix(".c").exists() and DECLARES_FUNCTION.search(text):
            found.append((r, f"{r}: declares functions but no {p.stem}.c defines them beside it "
                             "(one header per file)"))
        edges = units.setdefault(unit, set())
        for m in ENGINE_INCLUDE.finditer(text):
            dep = m.group(1)
            if dep == unit:
                continue
            edges.add(dep)
            dparts = dep.split("/")
            if len(dparts) >= 3 and dparts[1] in ENGINE_FLOORS and len(parts) >= 2 \
                    and ENGINE_FLOORS[dparts[1]] > ENGINE_FLOORS[parts[0]]:
                found.append((f"{unit}->{dep}",
                              f"{r}: includes {dep}.h, a floor above {parts[0]}/ (an upward include)"))
    # circles: the strongly connected components of more than one unit
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(units.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(units):
        if v not in index:
            visit(v)
    for comp in comps:
        subject = ",".join(comp)
        found.append((subject, f"a circle of includes between {', '.join(comp)}"))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=Path(__file__).resolve().parents[1], type=Path)
    ap.add_argument("--lib", type=Path, help="libtether.a (the symbol rule is skipped without it)")
    ap.add_argument("--allow", type=Path, help="the allowlist (default: ROOT/scripts/style-allow.txt)")
    a = ap.parse_args()
    root = a.root.resolve()
    allow_path = a.allow or root / "scripts/style-allow.txt"
    allow, problems = load_allow(allow_path)
    for p in problems:
        print(f"style: allowlist: {p}")

    found: dict[str, list[tuple[str, str]]] = {}
    if a.lib:
        if not a.lib.exists():
            print(f"style-check: no library at {a.lib}", file=sys.stderr)
            return 2
        found["symbol"] = check_symbols(a.lib)
    found["kind-test"] = check_kind_tests(root)
    found["file-length"], found["function-length"] = check_sizes(root)
    found["engine-layers"] = check_engine_layers(root)

    failed = bool(problems)
    for rule in RULES:
        if rule not in found:
            print(f"== style {rule:16} skipped (no --lib)")
            continue
        bad = [msg for subject, msg in found[rule] if (rule, subject) not in allow]
        used = {subject for subject, _ in found[rule]}
        stale = [s for (r, s) in allow if r == rule and s not in used]
        for msg in bad:
            print(f"style: {rule}: {msg}")
        for s in stale:
            print(f"style: {rule}: the allowlist excuses {s}, which no longer needs it: remove the line")
        allowed = len(found[rule]) - len(bad)
        print(f"== style {rule:16} {'ok' if not bad and not stale else 'FAILED'}"
              f" ({len(bad)} violation(s), {allowed} allowed, {len(stale)} stale)")
        failed |= bool(bad or stale)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
