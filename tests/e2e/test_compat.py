"""Each implementation reads the other's datasets: what ours writes,
tether-vcs 0.1.0b7 loads (status, backends) and hashes the same; what
tether-vcs writes (including committed states and pins), ours loads and
hashes the same."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import git


def dataset_view(build_dir: Path, cwd: Path, env) -> dict:
    proc = subprocess.run([str(build_dir / "tt_dataset")], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def stores(tmp_path, env):
    """A directory of files and a git repository, both outside the dataset."""
    data = tmp_path / "stores" / "images"
    (data / "sub").mkdir(parents=True)
    (data / "a.txt").write_text("alpha\n")
    (data / "sub" / "b.bin").write_bytes(bytes(range(256)))
    (data / "ünï.txt").write_text("unicode name\n")
    code = tmp_path / "stores" / "code"
    code.mkdir()
    git("init", "-q", "-b", "main", cwd=code, env=env)
    (code / "main.py").write_text("print('hi')\n")
    git("add", ".", cwd=code, env=env)
    git("commit", "-q", "-m", "one", cwd=code, env=env)
    return data, code


def test_reference_reads_our_dataset(git_repo, tether, ref, build_dir, env, stores):
    data, code = stores
    tether("init", cwd=git_repo)
    tether("add", "images", str(data), "--kind", "file", cwd=git_repo)
    tether("add", "code", str(code), "--kind", "git", cwd=git_repo)
    tether("add", "nested/db", "--kind", "neon", "--project-id", "p", "--database", "d",
           "--role", "r", "--set", "extra=ü", cwd=git_repo)
    tether("set", "nested/db", "--pin", "record", cwd=git_repo)
    tether("remove", "nested/db", cwd=git_repo)
    status = ref.json("status", cwd=git_repo)
    assert [o["key"] for o in status["objects"]] == ["code", "images"]
    assert all(o["error"] is None for o in status["objects"])
    assert status["bookmark"] == "main" and status["trunk"] is True
    ours = dataset_view(build_dir, git_repo, env)
    assert ours["manifest_hash"] == status["manifest_hash"]
    ref("backends", cwd=git_repo)
    # And the reference can keep working in it.
    ref("commit", "-m", "first", cwd=git_repo)
    ref("verify", cwd=git_repo)


def test_we_read_the_reference_dataset(git_repo, tether, ref, build_dir, env, stores):
    data, code = stores
    ref("init", cwd=git_repo)
    ref("add", "images", str(data), "--kind", "file", cwd=git_repo)
    ref("add", "code", str(code), "--kind", "git", cwd=git_repo)
    ref("add", "tbl", "--kind", "neon", "--project-id", "p", "--database", "d", "--role", "r",
        cwd=git_repo)
    ref("remove", "tbl", cwd=git_repo)
    ref("commit", "-m", "first", cwd=git_repo)
    status = ref.json("status", cwd=git_repo)
    view = dataset_view(build_dir, git_repo, env)
    assert view["manifest_hash"] == status["manifest_hash"]
    assert view["bookmark"] == "main"
    code_m = view["objects"]["code"]
    assert code_m["pin_id"].startswith(view["dataset_id"] + ".")
    assert code_m["pin_ref"] == "tether." + code_m["pin_id"]
    assert view["objects"]["images"]["state"]["type"] == "dir"
    assert view["objects"]["images"]["recoverable"] is False
    # Our writing commands work on it, and the reference still reads the result.
    tether("add", "more", str(data / "sub"), "--kind", "file", cwd=git_repo)
    tether("set", "images", "--file", "versioned", cwd=git_repo)
    status2 = ref.json("status", cwd=git_repo)
    assert dataset_view(build_dir, git_repo, env)["manifest_hash"] == status2["manifest_hash"]
    # Both journals' entries are one log.
    lines = (git_repo / ".tether/ops.jsonl").read_text().splitlines()
    assert [json.loads(x).get("command") for x in lines if "command" in json.loads(x)][-2:] == ["add", "set"]
    ops = ref.json("ops", cwd=git_repo)
    assert ops[0]["command"] == "set" and ops[1]["command"] == "add"


def test_manifest_written_by_us_after_reference_commit_is_byte_identical(git_repo, tether, ref, env, stores):
    """`set` rewrites a committed manifest (state, pin, captured_at) exactly
    as tether-vcs would."""
    data, code = stores
    ref("init", cwd=git_repo)
    ref("add", "code", str(code), "--kind", "git", cwd=git_repo)
    ref("commit", "-m", "first", cwd=git_repo)
    path = git_repo / ".tether/objects/code.toml"
    original = path.read_text()
    tether("set", "code", "--pin", "record", cwd=git_repo)
    ours = path.read_text()
    path.write_text(original)
    ref("set", "code", "--pin", "record", cwd=git_repo)
    assert ours == path.read_text()
