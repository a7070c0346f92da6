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
    (root / "src/engine").mkdir()
    (root / "src/backends/registry.c").write_text(
        'static const tt_kind kinds[] = {\n\t{ .name = "file", },\n\t{ .name = "git", },\n};\n')
    (root / "src/backends/pick.c").write_text(
        'int tt_pick(const char *kind)\n{\n\treturn strcmp(kind, "file") == 0;\n}\n')
    (root / "src/engine/ok.c").write_text(
        '/* strcmp(kind, "file") in a comment is no test */\n'
        'int tt_ok(const char *k)\n{\n\treturn strcmp(k, "filed") == 0;\n}\n'
        + function("tt_long_enough", 150))
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
    for rule in ("symbol", "kind-test", "file-length", "function-length"):
        assert f"== style {rule}" in proc.stdout and "FAILED" not in proc.stdout


def test_a_kind_name_test_outside_backends_fails(tree: Path):
    (tree / "src/engine/bad.c").write_text(
        'int tt_bad(const char *kind)\n{\n\treturn strcmp(kind,\n\t\t      "git") == 0;\n}\n')
    proc = run(tree)
    assert proc.returncode == 1
    assert 'kind-test: src/engine/bad.c:3: compares with the kind name "git"' in proc.stdout, proc.stdout
    (tree / "allow.txt").write_text("kind-test src/engine/bad.c git a reason a reviewer accepts\n")
    assert run(tree).returncode == 0


def test_a_file_over_1500_lines_fails(tree: Path):
    (tree / "src/engine/big.h").write_text("/* x */\n" * 1500)
    assert run(tree).returncode == 0
    (tree / "src/engine/big.h").write_text("/* x */\n" * 1501)
    proc = run(tree)
    assert proc.returncode == 1
    assert "file-length: src/engine/big.h: 1501 lines" in proc.stdout, proc.stdout
    (tree / "allow.txt").write_text("file-length src/engine/big.h generated, read by nobody\n")
    assert run(tree).returncode == 0


def test_a_function_over_150_lines_fails(tree: Path):
    (tree / "src/engine/long.c").write_text(
        "static int\n" + function("too_long", 151).replace("int too_long", "too_long", 1))
    proc = run(tree)
    assert proc.returncode == 1
    assert "function-length: src/engine/long.c:2: too_long is 151 lines" in proc.stdout, proc.stdout
    (tree / "allow.txt").write_text("function-length src/engine/long.c:too_long to be split\n")
    assert run(tree).returncode == 0


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
    (tree / "allow.txt").write_text("function-length src/engine/ok.c:tt_long_enough to be split\n")
    proc = run(tree)
    assert proc.returncode == 1
    assert "excuses src/engine/ok.c:tt_long_enough, which no longer needs it" in proc.stdout
    (tree / "allow.txt").write_text("function-length src/engine/ok.c:tt_long_enough\n")
    proc = run(tree)
    assert proc.returncode == 1 and "want '<rule> <subject> <reason>'" in proc.stdout, proc.stdout
