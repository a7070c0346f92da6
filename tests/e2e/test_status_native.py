"""Cached `tether status` reads the dataset repository natively: no child
process at all (strace shows only tether), and the same answers as when
every read goes through git (TETHER_GIT_NATIVE=0), on loose and on packed
repositories, with journal commits alive and rewritten away."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git


def _strace() -> str:
    exe = shutil.which("strace")
    if not exe:
        msg = "strace not installed (scripts/setup.sh installs it)"
        if os.environ.get("TETHER_REQUIRE_TOOLS") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def _mixed_dataset(tmp_path: Path, git_repo: Path, tether, env) -> Path:
    """A dataset with a file, a git and a memory object, committed twice
    (so the journal names dataset commits), and its snapshot cached."""
    files = tmp_path / "stores" / "images"
    files.mkdir(parents=True)
    (files / "a.bin").write_bytes(b"a" * 100)
    code = tmp_path / "stores" / "code"
    code.mkdir()
    git("init", "-q", "-b", "main", cwd=code, env=env)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=code, env=env)
    tether("init", cwd=git_repo)
    tether("add", "images", str(files), "--kind", "file", cwd=git_repo)
    tether("add", str(code), "--kind", "git", cwd=git_repo)
    tether("add", "m", "sys1", "--kind", "memory", cwd=git_repo)
    tether("commit", "-m", "first", cwd=git_repo)
    more = tmp_path / "stores" / "more"
    more.mkdir()
    (more / "b.bin").write_bytes(b"b" * 10)
    tether("add", "more", str(more), "--kind", "file", cwd=git_repo)
    tether("commit", "-m", "second", cwd=git_repo)
    tether("snapshot", cwd=git_repo)
    return git_repo


@pytest.fixture
def mixed(tmp_path, git_repo, tether, env):
    env["TETHER_MEMORY_STORE"] = str(tmp_path / "memory.json")
    return _mixed_dataset(tmp_path, git_repo, tether, env)


def test_cached_status_starts_no_child_process(mixed, tether, env, tmp_path):
    strace = _strace()
    trace = tmp_path / "trace"
    argv = [strace, "-f", "-qq", "-e", "trace=execve", "-o", str(trace), str(tether.exe), "status"]
    # LeakSanitizer cannot run under ptrace: an ASan build is traced
    # without its leak check (the rest of the suite keeps it).
    env = dict(env)
    env["ASAN_OPTIONS"] = ":".join([o for o in env.get("ASAN_OPTIONS", "").split(":")
                                    if o and not o.startswith("detect_leaks=")] + ["detect_leaks=0"])
    for args in ([], ["--json"]):
        p = subprocess.run(argv + args, cwd=mixed, env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        execs = [ln for ln in trace.read_text().splitlines() if "execve(" in ln and "ENOENT" not in ln]
        assert len(execs) == 1 and str(tether.exe) in execs[0], execs
    # packed refs and objects too
    git("gc", "-q", "--aggressive", cwd=mixed, env=env)
    p = subprocess.run(argv, cwd=mixed, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    execs = [ln for ln in trace.read_text().splitlines() if "execve(" in ln and "ENOENT" not in ln]
    assert len(execs) == 1, execs


def _both(tether, cwd: Path) -> tuple[object, object]:
    native = tether("status", "--json", cwd=cwd)
    through_git = tether("status", "--json", cwd=cwd, env={"TETHER_GIT_NATIVE": "0"})
    text_n = tether("status", cwd=cwd)
    text_g = tether("status", cwd=cwd, env={"TETHER_GIT_NATIVE": "0"})
    age = re.compile(r"fingerprinted \S+ ago")
    assert age.sub("", text_n.stdout) == age.sub("", text_g.stdout)
    assert text_n.stderr == text_g.stderr
    return json.loads(native.stdout), json.loads(through_git.stdout)


def test_cached_status_same_natively_and_through_git(mixed, tether, env):
    a, b = _both(tether, mixed)
    assert a == b and a["vcs_drift"] == [] and a["bookmark"] == "main"
    git("gc", "-q", "--aggressive", cwd=mixed, env=env)
    a, b = _both(tether, mixed)
    assert a == b
    # a journal commit rewritten away: the drift warning, found by the walk
    git("reset", "-q", "--hard", "HEAD~1", cwd=mixed, env=env)
    git("reflog", "expire", "--expire=now", "--all", cwd=mixed, env=env)
    a, b = _both(tether, mixed)
    assert a == b and a["vcs_drift"], a
    # a bookmark moved by hand and the working copy on another branch
    git("switch", "-q", "-c", "elsewhere", cwd=mixed, env=env)
    a, b = _both(tether, mixed)
    assert a == b and a["bookmark_drift"], a


# -- libraries loaded on first use (src/util/dynlib.h) ----------------------- #
LAZY_LIBS = ("libcurl", "libpq", "libmariadb", "libcrypto", "libssl", "libduckdb")


def _loaded_libraries(tether, args, cwd, env) -> list[str]:
    """The shared libraries the dynamic loader initialised for one run."""
    env = dict(env, LD_DEBUG="libs")
    p = subprocess.run([str(tether.exe), *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    return [ln.split("calling init:", 1)[1].strip() for ln in p.stderr.splitlines() if "calling init:" in ln]


def test_cached_status_loads_no_network_or_database_library(mixed, tether, env):
    """Neither the binary nor a command that needs no store pays the dynamic
    loader for libcurl, libpq, libmariadb or OpenSSL (and their dependency
    trees): they are opened on first use."""
    for args in (["status"], ["status", "--json"], ["backends"], ["ops"]):
        libs = _loaded_libraries(tether, args, mixed, env)
        assert libs, "LD_DEBUG=libs printed nothing"
        heavy = [lib for lib in libs if any(Path(lib).name.startswith(n) for n in LAZY_LIBS)]
        assert not heavy, (args, heavy)


def _forget_hashes(ds: Path) -> None:
    """Drop the file hash cache, so the next refresh hashes the files again."""
    for f in (Path(ds) / ".tether" / "cache").glob("file-hashes*"):
        f.unlink()


def test_a_command_that_hashes_loads_libcrypto_then(mixed, tether, env):
    _forget_hashes(mixed)
    libs = _loaded_libraries(tether, ["status", "--snapshot", "--json"], mixed, env)
    assert any(Path(lib).name.startswith("libcrypto") for lib in libs), libs


def test_a_library_that_cannot_be_loaded_is_named_with_its_package(mixed, tether, env):
    """A missing libcrypto fails the command that needs it with exit 1 and a
    message naming the library and the package to install (recorded as the
    object's fingerprint error, as any store failure is); commands that do
    not need it still work."""
    _forget_hashes(mixed)
    bad = dict(env, TETHER_LIBCRYPTO=str(Path(mixed).parent / "no-such-libcrypto.so.3"))
    p = subprocess.run([str(tether.exe), "snapshot"], cwd=mixed, env=bad, capture_output=True, text=True)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "libcrypto" in p.stderr and "no-such-libcrypto.so.3" in p.stderr, p.stderr
    assert "libssl3" in p.stderr and "TETHER_LIBCRYPTO" in p.stderr, p.stderr
    for args in (["backends"], ["ops"]):
        p = subprocess.run([str(tether.exe), *args], cwd=mixed, env=bad, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    # and with the library there, the same command succeeds
    for args in (["snapshot"], ["status"]):
        p = subprocess.run([str(tether.exe), *args], cwd=mixed, env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def test_a_network_store_without_libcurl_says_what_to_install(git_repo, tether, env):
    tether("init", cwd=git_repo)
    tether("add", "remote", "s3://bucket/prefix/", "--kind", "file", cwd=git_repo)
    bad = dict(env, TETHER_LIBCURL="/nonexistent/libcurl.so.4", AWS_ACCESS_KEY_ID="AKIAEXAMPLE",
               AWS_SECRET_ACCESS_KEY="example-secret", AWS_REGION="us-east-1")
    p = subprocess.run([str(tether.exe), "snapshot", "remote"], cwd=git_repo, env=bad, capture_output=True,
                       text=True)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "libcurl" in p.stderr and "libcurl4" in p.stderr, p.stderr
    assert "example-secret" not in p.stderr + p.stdout


# -- the journal's reachability, cached under the ref tips ------------------- #
def _object_reads(strace, tether, cwd, env, tmp_path) -> int:
    trace = tmp_path / "open-trace"
    p = subprocess.run([strace, "-qq", "-e", "trace=openat", "-o", str(trace), str(tether.exe), "status"],
                       cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return sum(1 for ln in trace.read_text().splitlines() if re.search(r"\.git/objects/[0-9a-f]{2}/", ln))


def test_journal_reachability_is_cached_under_the_ref_tips(mixed, tether, env, tmp_path):
    """A status whose refs have not moved answers "is each journal commit
    still in history" from .tether/cache/alive-commits instead of walking
    the commits again; moved refs, another token or a damaged file send the
    question to the walk, with the same answers."""
    strace = _strace()
    env = dict(env)
    env["ASAN_OPTIONS"] = ":".join([o for o in env.get("ASAN_OPTIONS", "").split(":")
                                    if o and not o.startswith("detect_leaks=")] + ["detect_leaks=0"])
    (mixed / "NOTES").write_text("0\n")
    for i in range(30):  # history since the journal's commits, for the walk to cross
        (mixed / "NOTES").write_text(f"{i}\n")
        git("add", "NOTES", cwd=mixed, env=env)
        git("commit", "-q", "-m", f"note {i}", cwd=mixed, env=env)
    cache = mixed / ".tether" / "cache" / "alive-commits"
    cache.unlink(missing_ok=True)
    walked = _object_reads(strace, tether, mixed, env, tmp_path)
    text = cache.read_text()
    assert text.startswith("tether-alive-commits 1 ") and text.count(" 1\n") == 2, text
    cached = _object_reads(strace, tether, mixed, env, tmp_path)
    assert cached + 30 <= walked, (cached, walked)
    fresh = tether.json("status", "--json", cwd=mixed)
    token = text.splitlines()[0].split()[-1]
    commits = [ln.split()[0] for ln in text.splitlines()[1:]]
    for bad in ("tether-alive-commits 1 " + "0" * 64 + "\n" + "".join(f"{c} 0\n" for c in commits),  # another token
                text.splitlines()[0] + "\n" + "".join(f"{c} 0" for c in commits),  # cut short
                text.splitlines()[0] + "\n" + "".join(f"{c} 0\n" for c in commits[:1]),  # one missing
                "garbage\n", ""):
        cache.write_text(bad)
        assert tether.json("status", "--json", cwd=mixed) == fresh, bad
        assert cache.read_text() == text  # rewritten with the walk's answers
    # the same token claims what the walk found: the cache is believed
    cache.write_text(text)
    assert tether.json("status", "--json", cwd=mixed)["vcs_drift"] == []
    # refs moved: a journal commit rewritten away is found by the walk
    git("reset", "-q", "--hard", "HEAD~31", cwd=mixed, env=env)
    git("reflog", "expire", "--expire=now", "--all", cwd=mixed, env=env)
    a, b = _both(tether, mixed)
    assert a == b and a["vcs_drift"], a
    assert cache.read_text().split()[2] != token
