"""scripts/style-check.py, the conventions `make check` enforces: it passes
on this tree, and each rule fails on a violation planted in a small tree
of its own (and passes again once the allowlist gives its reason)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD_DIR, ROOT

SCRIPT = ROOT / "scripts" / "style-check.py"


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root),
                           "--allow", str(root / "allow.txt"), *args],
                          capture_output=True, text=True, timeout=120)


def function(name: str, lines: int) -> str:
    """A function whose definition spans `lines` lines, as ctags counts."""
    body = "".join(f"\tx += {i};\n" for i in range(lines - 5))
    return f"int {name}(int x)\n{{\n{body}\treturn x;\n\t/* end */\n}}\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A clean tree: one kind table, code that compares only in backends/."""
    root = tmp_path / "t"
    (root / "src/backends").mkdir(parents=True)
    (root / "src/engine/kernel").mkdir(parents=True)
    (root / "src/engine/cmd").mkdir()
    (root / "src/backends/registry.c").write_text(
        'static const tt_kind kinds[] = {\n\t{ .name = "file", },\n\t{ .name = "git", },\n};\n')
    (root / "src/backends/pick.c").write_text(
        'int tt_pick(const char *kind)\n{\n\treturn strcmp(kind, "file") == 0;\n}\n')
    (root / "src/engine/cmd/ok.c").write_text(
        '/* strcmp(kind, "file") in a comment is no test */\n'
        'int tt_ok(const char *k)\n{\n\treturn strcmp(k, "filed") == 0;\n}\n'
        + function("tt_long_enough", 120))
    (root / "allow.txt").write_text("# nothing excused\n")
    assert run(root).returncode == 0, run(root).stdout
    return root


def test_this_tree_passes():
    lib = BUILD_DIR / "libtether.a"
    if not lib.exists():
        pytest.fail(f"no {lib}: build first")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--root", str(ROOT), "--lib", str(lib)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rule in ("symbol", "kind-test", "file-length", "function-length", "engine-layers"):
        assert f"== style {rule}" in proc.stdout and "FAILED" not in proc.stdout


def test_a_kind_name_test_outside_backends_fails(tree: Path):
    (tree / "src/engine/cmd/bad.c").write_text(
        'int tt_bad(const char *kind)\n{\n\treturn strcmp(kind,\n\t\t      "git") == 0;\n}\n')
    proc = run(tree)
    assert proc.returncode == 1
    assert 'kind-test: src/engine/cmd/bad.c:3: compares with the kind name "git"' in proc.stdout, proc.stdout
    (tree / "allow.txt").write_text("kind-test src/engine/cmd/bad.c git a reason a reviewer accepts\n")
    assert run(tree).returncode == 0


def test_a_file_over_1500_lines_fails(tree: Path):
    (tree / "src/engine/cmd/big.h").write_text("/* x */\n" * 1500)
    assert run(tree).returncode == 0
    (tree / "src/engine/cmd/big.h").write_text("/* x */\n" * 1501)
    proc = run(tree)
    assert proc.returncode == 1
    assert "file-length: src/engine/cmd/big.h: 1501 lines" in proc.stdout, proc.stdout
    (tree / "allow.txt").write_text("file-length src/engine/cmd/big.h generated, read by nobody\n")
    assert run(tree).returncode == 0


def test_a_function_over_150_lines_fails(tree: Path):
    (tree / "src/engine/cmd/long.c").write_text(
        "static int\n" + function("too_long", 151).replace("int too_long", "too_long", 1))
    proc = run(tree)
    assert proc.returncode == 1
    assert "function-length: src/engine/cmd/long.c:2: too_long is 151 lines" in proc.stdout, proc.stdout
    (tree / "allow.txt").write_text("function-length src/engine/cmd/long.c:too_long to be split\n")
    assert run(tree).returncode == 0


def test_an_engine_function_over_120_lines_fails(tree: Path):
    """The engine's commands are held to 120 lines a function; the rest of
    the tree to 150."""
    (tree / "src/backends/long.c").write_text(function("tt_backend_long", 150))
    (tree / "src/engine/cmd/short.c").write_text(function("tt_cmd_short", 120))
    assert run(tree).returncode == 0, run(tree).stdout
    (tree / "src/engine/cmd/short.c").write_text(function("tt_cmd_short", 121))
    proc = run(tree)
    assert proc.returncode == 1
    assert "function-length: src/engine/cmd/short.c:1: tt_cmd_short is 121 lines (at most 120)" in proc.stdout, \
        proc.stdout


def test_a_global_without_the_prefix_fails(tree: Path, tmp_path: Path):
    cc = shutil.which("cc")
    if not cc:
        pytest.fail("no C compiler")
    src = tmp_path / "lib.c"
    src.write_text("static int helper(void) { return 1; }\n"
                   "int tt_fine(void) { return helper(); }\n"
                   "int tt_table[2];\n")
    subprocess.run([cc, "-c", "-o", str(tmp_path / "lib.o"), str(src)], check=True)
    subprocess.run(["ar", "rcs", str(tmp_path / "libtether.a"), str(tmp_path / "lib.o")], check=True)
    assert run(tree, "--lib", str(tmp_path / "libtether.a")).returncode == 0
    src.write_text(src.read_text() + "int toml_free(void) { return 0; }\n")
    subprocess.run([cc, "-c", "-o", str(tmp_path / "lib.o"), str(src)], check=True)
    subprocess.run(["ar", "rcs", str(tmp_path / "libtether.a"), str(tmp_path / "lib.o")], check=True)
    proc = run(tree, "--lib", str(tmp_path / "libtether.a"))
    assert proc.returncode == 1
    assert "symbol: toml_free (in lib.o): a global without the tt_ prefix" in proc.stdout, proc.stdout


def test_a_sanitizer_build_passes_and_still_fails_on_a_bad_global(tree: Path, tmp_path: Path):
    """Under ASan the compiler adds an ODR indicator (__odr_asan.<name>) for
    every global variable: the rule reads the variable's own name."""
    cc = shutil.which("cc")
    if not cc:
        pytest.fail("no C compiler")
    src = tmp_path / "lib.c"
    lib = tmp_path / "libtether.a"

    def build(text: str) -> str:
        src.write_text(text)
        subprocess.run([cc, "-fsanitize=address", "-c", "-o", str(tmp_path / "lib.o"), str(src)], check=True)
        lib.unlink(missing_ok=True)
        subprocess.run(["ar", "rcs", str(lib), str(tmp_path / "lib.o")], check=True)
        return subprocess.run(["nm", "--defined-only", str(lib)], capture_output=True, text=True).stdout

    symbols = build("int tt_table[2] = { 1, 2 };\nint tt_get(int i) { return tt_table[i]; }\n")
    assert "__odr_asan" in symbols, symbols  # the instrumentation this test is about
    proc = run(tree, "--lib", str(lib))
    assert proc.returncode == 0, proc.stdout
    build("int toml_table[2] = { 1, 2 };\nint tt_get(int i) { return toml_table[i]; }\n")
    proc = run(tree, "--lib", str(lib))
    assert proc.returncode == 1
    assert "symbol: toml_table (in lib.o): a global without the tt_ prefix" in proc.stdout, proc.stdout
    assert "__odr_asan" not in proc.stdout, proc.stdout


def test_an_excuse_nothing_needs_fails(tree: Path):
    (tree / "allow.txt").write_text("function-length src/engine/cmd/ok.c:tt_long_enough to be split\n")
    proc = run(tree)
    assert proc.returncode == 1
    assert "excuses src/engine/cmd/ok.c:tt_long_enough, which no longer needs it" in proc.stdout
    (tree / "allow.txt").write_text("function-length src/engine/cmd/ok.c:tt_long_enough\n")
    proc = run(tree)
    assert proc.returncode == 1 and "want '<rule> <subject> <reason>'" in proc.stdout, proc.stdout


def engine_file(tree: Path, path: str, *includes: str, body: str = "") -> None:
    f = tree / "src/engine" / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("".join(f'#include "engine/{i}.h"\n' for i in includes) + body)


def test_an_engine_circle_fails(tree: Path):
    """Two commands that include each other's headers are one circle; the
    same files with the shared part moved to the kernel pass."""
    engine_file(tree, "kernel/state.h", body="int tt_short_state(void);\n")
    engine_file(tree, "kernel/state.c", "kernel/state")
    engine_file(tree, "cmd/commit.h", body="int tt_commit(void);\n")
    engine_file(tree, "cmd/commit.c", "cmd/commit", "kernel/state", "cmd/preconditions")
    engine_file(tree, "cmd/preconditions.h", body="int tt_pre(void);\n")
    engine_file(tree, "cmd/preconditions.c", "cmd/preconditions", "kernel/state")
    assert run(tree).returncode == 0, run(tree).stdout
    engine_file(tree, "cmd/preconditions.c", "cmd/preconditions", "kernel/state", "cmd/commit")
    proc = run(tree)
    assert proc.returncode == 1
    assert ("engine-layers: a circle of includes between engine/cmd/commit, engine/cmd/preconditions"
            in proc.stdout), proc.stdout
    # a longer circle, through a header that includes another
    engine_file(tree, "cmd/preconditions.c", "cmd/preconditions", "kernel/state")
    engine_file(tree, "kernel/state.h", "cmd/commit", body="int tt_short_state(void);\n")
    proc = run(tree)
    assert proc.returncode == 1
    assert ("a circle of includes between engine/cmd/commit, engine/cmd/preconditions, engine/kernel/state"
            in proc.stdout), proc.stdout
    (tree / "allow.txt").write_text(
        "engine-layers engine/kernel/state->engine/cmd/commit a reason\n"
        "engine-layers engine/cmd/commit,engine/cmd/preconditions,engine/kernel/state a reason\n")
    assert run(tree).returncode == 0, run(tree).stdout


def test_an_upward_include_fails(tree: Path):
    engine_file(tree, "cmd/fork.h", body="int tt_fork(void);\n")
    engine_file(tree, "cmd/fork.c", "cmd/fork")
    engine_file(tree, "kernel/context.h", body="int tt_ctx(void);\n")
    engine_file(tree, "kernel/context.c", "kernel/context")
    assert run(tree).returncode == 0
    engine_file(tree, "kernel/context.c", "kernel/context", "cmd/fork")
    proc = run(tree)
    assert proc.returncode == 1
    assert ("engine-layers: src/engine/kernel/context.c: includes engine/cmd/fork.h, a floor above kernel/"
            in proc.stdout), proc.stdout


def test_engine_files_live_in_its_folders_one_header_per_file(tree: Path):
    engine_file(tree, "loose.c", body="int tt_loose(void) { return 0; }\n")
    proc = run(tree)
    assert proc.returncode == 1
    assert "engine-layers: src/engine/loose.c: outside the engine's folders" in proc.stdout, proc.stdout
    (tree / "src/engine/loose.c").unlink()
    # a header of types only needs no .c; one that declares functions does
    engine_file(tree, "kernel/handle.h", body="/* f(x); in a comment */\ntypedef struct tt_h { int x; } tt_h;\n")
    assert run(tree).returncode == 0, run(tree).stdout
    engine_file(tree, "kernel/engine.h", body="int tt_engine_a(void);\nint tt_engine_b(int x);\n")
    proc = run(tree)
    assert proc.returncode == 1
    assert ("engine-layers: src/engine/kernel/engine.h: declares functions but no engine.c defines them"
            in proc.stdout), proc.stdout
