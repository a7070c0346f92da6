"""A cloned dataset is untrusted input: malformed or hostile files are
refused with an error that names the file, line and column (or the key and
where it belongs), exit 1, and nothing is written."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from conftest import git


@pytest.fixture
def dataset(git_repo, tether):
    tether("init", "--dataset-id", "0a1b2c3d", cwd=git_repo)
    tether("add", "d", "/tmp", "--kind", "file", cwd=git_repo)
    return git_repo


def snapshot_tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git/" not in str(p) + "/" and p.name != "lock"
        and not str(p.relative_to(root)).startswith(".git")
    }


def refused(tether, root: Path, pattern: str, *cmd: str) -> str:
    before = snapshot_tree(root)
    proc = tether(*(cmd or ("set", "--all", "--pin", "record")), cwd=root, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("error: "), proc.stderr
    assert re.search(pattern, proc.stderr), proc.stderr
    assert snapshot_tree(root) == before
    return proc.stderr


CONFIG_CASES = [
    ('[tether]\nversion = 5\n[dataset\nid = "0a1b2c3d"\n', r"error: tether\.toml:3:9: "),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\nid = "x"\n', r"error: tether\.toml:5:1: "),
    ('[tether]\nversion = "5"\n[dataset]\nid = "0a1b2c3d"\n', r"error: tether\.toml:2:1: \[tether\] version must be an integer, not a string"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0A1B"\n', r"tether\.toml:4:1: .*no valid \[dataset\] id"),
    ('[tether]\nversion = 9\n[dataset]\nid = "0a1b2c3d"\n', r"tether\.toml:2:1: tether\.toml is version 9, newer"),
    ('[tether]\nversion = 4\n[dataset]\nid = "0a1b2c3d"\n', r"version 4; this tether expects 5"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[new]\nfork = "sometimes"\n', r"tether\.toml:6:1: invalid \[new\] fork"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[snapshot]\nauto = 1\n', r"tether\.toml:6:1: \[snapshot\] auto must be true or false"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[vcs]\ngit_path = "/tmp/evil"\n',
     r"tether\.toml:6:1: tether\.toml \[vcs\] sets git_path.*\nhint: put it in \.tether/secrets\.toml"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[backends.file]\nstorage_options = { endpoint = "http://evil" }\n',
     r"\[backends\.file\] sets storage_options\.endpoint.*\nhint: put it in \.tether/secrets\.toml \(untracked\) under \[backends\.file\]"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[backends.neon]\napi_url = "http://evil"\n',
     r"\[backends\.neon\] sets api_url"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[backends.ducklake]\ninit_sql = ["ATTACH 1"]\n',
     r"\[backends\.ducklake\] sets init_sql"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[backends.iceberg]\ncatalog = { type = "rest", uri = "http://evil" }\n',
     r"\[backends\.iceberg\] sets catalog\.uri"),
    ('[tether]\nversion = 5\n[dataset]\nid = "0a1b2c3d"\n[import]\nquery = "DROP TABLE x"\n',
     r"\[import\] sets query"),
    ('\xff\n', r"tether\.toml:1:1: "),
]


@pytest.mark.parametrize("text,pattern", CONFIG_CASES)
def test_bad_tether_toml(dataset, tether, text, pattern):
    (dataset / "tether.toml").write_bytes(text.encode("utf-8", "surrogateescape")
                                          if isinstance(text, str) else text)
    if text == "\xff\n":
        (dataset / "tether.toml").write_bytes(b"\xff\n")
    refused(tether, dataset, pattern)


def test_allowed_committed_backend_options(dataset, tether):
    cfg = dataset / "tether.toml"
    cfg.write_text(cfg.read_text() + '\n[backends.file]\nstorage_options = { region = "us-west-2", allow_http = true }\n'
                   '\n[backends.iceberg]\ncatalog = { type = "rest", warehouse = "w" }\n')
    tether("set", "--all", "--pin", "record", cwd=dataset)


MANIFEST_CASES = [
    ('key = "d"\nkind = "file"\n[locator\n', r"\.tether/objects/d\.toml:3:9: "),
    ('key = "../../etc/passwd"\nkind = "file"\n', r"\.tether/objects/d\.toml:1:1: unsafe object key: '\.\./\.\./etc/passwd'"),
    ('key = "/etc/x"\nkind = "file"\n', r"unsafe object key: '/etc/x'"),
    ('key = "a\\\\b"\nkind = "file"\n', r"unsafe object key"),
    ('key = "C:/x"\nkind = "file"\n', r"unsafe object key"),
    ('kind = "file"\n', r"\.tether/objects/d\.toml: object manifest missing 'key'"),
    ('key = "d"\nkind = "file"\n[policy]\npin = "sometimes"\n', r"\.tether/objects/d\.toml:4:1: invalid policy\.pin"),
    ('key = "d"\nkind = "file"\nlocator = 3\n', r"\.tether/objects/d\.toml:3:1: manifest locator must be a table"),
    ('key = "d"\nkind = "file"\n[pin]\nid = "x"\n', r"\[pin\] needs both id and ref"),
    ('key = "other"\nkind = "file"\n', r"declares key 'other', which belongs in \.tether/objects/other\.toml"),
]


@pytest.mark.parametrize("text,pattern", MANIFEST_CASES)
def test_bad_manifest(dataset, tether, text, pattern):
    (dataset / ".tether/objects/d.toml").write_text(text)
    refused(tether, dataset, pattern)


def test_manifest_symlink_refused(dataset, tether, tmp_path):
    outside = tmp_path / "outside.toml"
    outside.write_text('key = "e"\nkind = "file"\n')
    os.symlink(outside, dataset / ".tether/objects/e.toml")
    refused(tether, dataset, r"\.tether/objects/e\.toml is a symbolic link")


SECRETS_CASES = [
    ('[vcs]\ngit_path = \n', r"\.tether/secrets\.toml:2:12: "),
    ('[vcs]\ngit_path = 3\n', r"\.tether/secrets\.toml:2:1: \[vcs\] git_path must be a string"),
    ('uris = 1\n', r"\.tether/secrets\.toml:1:1: "),
    ('[uris]\n"s3://x/" = "token-value"\n', r"\[uris\] entries must be tables"),
]


@pytest.mark.parametrize("text,pattern", SECRETS_CASES)
def test_bad_secrets(dataset, tether, text, pattern):
    path = dataset / ".tether/secrets.toml"
    path.write_text(text)
    path.chmod(0o600)
    err = refused(tether, dataset, pattern)
    assert "token-value" not in err


def test_secrets_never_printed_and_lax_mode_warned(dataset, tether):
    path = dataset / ".tether/secrets.toml"
    path.write_text('[uris."s3://bucket/"]\nsecret_access_key = "SUPERSECRET"\n')
    path.chmod(0o644)
    proc = tether("set", "--all", "--pin", "record", cwd=dataset)
    assert "warning:" in proc.stderr and "chmod 600" in proc.stderr
    assert "SUPERSECRET" not in proc.stderr + proc.stdout
    path.chmod(0o600)
    proc = tether("set", "--all", "--pin", "native", cwd=dataset)
    assert "warning" not in proc.stderr


@pytest.mark.parametrize("name", ["secrets.toml", "workspace.toml", "ops.jsonl"])
def test_tracked_per_checkout_files_refused(dataset, tether, env, name):
    path = dataset / ".tether" / name
    if not path.exists():
        path.write_text("")
    git("add", "-f", f".tether/{name}", cwd=dataset, env=env)
    err = refused(tether, dataset, rf"git tracks \.tether/{re.escape(name)}")
    assert f"git rm --cached .tether/{name}" in err


def test_tracked_secrets_cannot_choose_git(dataset, tether, env, tmp_path):
    """A cloned secrets.toml naming git_path must never run that program."""
    marker = tmp_path / "ran"
    evil = tmp_path / "evil-git"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\nexec git \"$@\"\n")
    evil.chmod(0o755)
    (dataset / ".tether/secrets.toml").write_text(f'[vcs]\ngit_path = "{evil}"\n')
    git("add", "-f", ".tether/secrets.toml", cwd=dataset, env=env)
    refused(tether, dataset, r"git tracks \.tether/secrets\.toml")
    assert not marker.exists()


def test_untracked_secrets_git_path_is_used(dataset, tether, tmp_path):
    marker = tmp_path / "ran"
    wrapper = tmp_path / "my-git"
    wrapper.write_text(f"#!/bin/sh\ntouch {marker}\nexec git \"$@\"\n")
    wrapper.chmod(0o755)
    secrets = dataset / ".tether/secrets.toml"
    secrets.write_text(f'[vcs]\ngit_path = "{wrapper}"\n')
    secrets.chmod(0o600)
    # reads start no git when the repository is read natively
    # (vcs/git_native.c): through git, the configured one runs
    tether("set", "--all", "--pin", "record", cwd=dataset, env={"TETHER_GIT_NATIVE": "0"})
    assert marker.exists()


def test_git_environment_cannot_redirect_the_dataset(dataset, tether, tmp_path, env):
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", cwd=other, env=env)
    proc = tether("set", "--all", "--pin", "record", cwd=dataset,
                  env={"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other),
                       "GIT_INDEX_FILE": str(other / "idx")})
    assert proc.returncode == 0


def test_no_dataset(tmp_path, tether):
    proc = tether("set", "--all", "--pin", "record", cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "no tether dataset found" in proc.stderr


def test_checkout_lock_times_out_naming_the_lock(dataset, tether):
    """A held .tether/lock makes a writing command wait, then fail naming it."""
    import fcntl
    import time
    with open(dataset / ".tether/lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        start = time.monotonic()
        proc = tether("set", "d", "--pin", "record", cwd=dataset, check=False,
                      env={"TETHER_LOCK_TIMEOUT_MS": "400"})
        waited = time.monotonic() - start
    assert proc.returncode == 1
    assert ".tether/lock is locked" in proc.stderr
    assert waited >= 0.3
