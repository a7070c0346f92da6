"""init / add / set / remove / backends, and the dataset files they write,
checked against tether-vcs 0.1.0b7 run on the same inputs."""
from __future__ import annotations

import json
import re
import os
import subprocess
from pathlib import Path

import pytest

from conftest import git

DATASET_ID = "0a1b2c3d"


def init_pair(tmp_path: Path, env, tether, ref, *, branch: str = "main"):
    """Two fresh git repositories, one initialised by us and one by tether-vcs,
    with the same dataset id."""
    out = []
    for name, runner in (("ours", tether), ("theirs", ref)):
        repo = tmp_path / name
        repo.mkdir()
        git("init", "-q", "-b", branch, cwd=repo, env=env)
        git("commit", "-q", "--allow-empty", "-m", "start", cwd=repo, env=env)
        runner("init", "--dataset-id", DATASET_ID, cwd=repo)
        out.append(repo)
    return out


def test_init_writes_the_same_files_as_tether_vcs(tmp_path, env, tether, ref):
    ours, theirs = init_pair(tmp_path, env, tether, ref)
    assert (ours / "tether.toml").read_bytes() == (theirs / "tether.toml").read_bytes()
    # tether-vcs's lines, then the pattern for the temporaries a killed write
    # leaves (tether-vcs keeps a line it does not know).
    assert (ours / ".tether/.gitignore").read_bytes() == \
        (theirs / ".tether/.gitignore").read_bytes() + b".*.tmp\n"
    assert (ours / ".tether/objects").is_dir()
    ws = (ours / ".tether/workspace.toml").read_text()
    lines = ws.splitlines()
    assert lines[0].startswith('workspace_id = "') and len(lines[0]) == len('workspace_id = ""') + 32
    assert lines[1] == 'bookmark = "main"'


def test_init_json_and_text(git_repo, tether):
    out = tether.json("init", cwd=git_repo)
    assert out["root"] == str(git_repo.resolve())
    assert len(out["dataset_id"]) == 8 and all(c in "0123456789abcdef" for c in out["dataset_id"])
    again = tether("init", cwd=git_repo, check=False)
    assert again.returncode == 1
    assert "already initialized" in again.stderr


def test_init_text_names_the_namespace(git_repo, tether):
    out = tether("init", cwd=git_repo).stdout
    assert out.startswith(f"initialized tether dataset at {git_repo.resolve()} (dataset id ")
    assert "tether.ws." in out


def test_init_outside_git_writes_nothing(tmp_path, tether):
    bare = tmp_path / "plain"
    bare.mkdir()
    proc = tether("init", cwd=bare, check=False)
    assert proc.returncode == 1
    assert "no git or jj repository" in proc.stderr
    assert list(bare.iterdir()) == []


def test_init_in_a_new_subdirectory(git_repo, tether):
    tether("init", "sub/ds", "--dataset-id", DATASET_ID, cwd=git_repo)
    assert (git_repo / "sub/ds/tether.toml").is_file()


def test_init_rejects_a_bad_dataset_id(git_repo, tether):
    proc = tether("init", "--dataset-id", "XYZ", cwd=git_repo, check=False)
    assert proc.returncode == 1
    assert "invalid dataset id" in proc.stderr
    assert not (git_repo / "tether.toml").exists()


def test_init_adopts_the_current_branch_as_trunk(tmp_path, env, tether, ref):
    ours, theirs = init_pair(tmp_path, env, tether, ref, branch="dev")
    assert (ours / "tether.toml").read_bytes() == (theirs / "tether.toml").read_bytes()
    assert '[vcs]\ntrunk = "dev"' in (ours / "tether.toml").read_text()


def test_init_on_a_detached_head_parks_on_the_trunk(git_repo, env, tether):
    sha = git("rev-parse", "HEAD", cwd=git_repo, env=env).strip()
    git("checkout", "-q", "--detach", sha, cwd=git_repo, env=env)
    tether("init", cwd=git_repo)
    assert git("symbolic-ref", "--short", "HEAD", cwd=git_repo, env=env).strip() == "main"


ADD_CASES = [
    # (args run in the dataset's "work" subdirectory, expected key)
    (["data", "../payload", "--kind", "file"], "data"),
    (["../payload/", "--kind", "file"], "payload"),
    (["images/raw", "~/pics", "--kind", "file", "--file", "versioned"], "images/raw"),
    (["tbl", "../t.delta", "--kind", "delta", "--at", "3", "--region", "eu-west-1"], "tbl"),
    (["../vectors.lance", "--kind", "lance", "--branch", "dev"], "vectors"),
    (["zarr", "s3://bucket/zarr.icechunk", "--kind", "icechunk", "--pin", "record"], "zarr"),
    (["db", "--kind", "neon", "--project-id", "p-1", "--database", "app", "--role", "r",
      "--set", "extra=1"], "db"),
    (["dolt1", "--kind", "dolt", "--database", "d", "--host", "127.0.0.1", "--port", "3307"], "dolt1"),
    (["lake", "meta.ducklake", "--kind", "ducklake", "--set", "data_path=files/"], "lake"),
    (["ice", "--kind", "iceberg", "--set", "identifier=ns.tbl"], "ice"),
    (["ünïcode/κλειδί", "../payload", "--kind", "file"], "ünïcode/κλειδί"),
]


@pytest.mark.parametrize("args,key", ADD_CASES, ids=[c[1] for c in ADD_CASES])
def test_add_writes_the_same_manifest_as_tether_vcs(tmp_path, env, tether, ref, home, args, key):
    ours, theirs = init_pair(tmp_path, env, tether, ref)
    for repo, runner in ((ours, tether), (theirs, ref)):
        (repo / "work").mkdir()
        runner("add", *args, cwd=repo / "work")
    rel = Path(".tether/objects") / (key + ".toml")
    a = (ours / rel).read_text()
    b = (theirs / rel).read_text()
    # Relative paths resolve against each repository's own directory.
    assert a.replace(str(ours), "<ROOT>") == b.replace(str(theirs), "<ROOT>")


def test_add_output_and_experimental_note(git_repo, tether):
    tether("init", cwd=git_repo)
    out = tether("add", "db", "--kind", "neon", "--project-id", "p", "--database", "d",
                 "--role", "r", cwd=git_repo)
    assert out.stdout == "added db (neon)\n"
    assert "note: the neon backend is experimental" in out.stderr
    out = tether("add", "x.lance", "--kind", "lance", "--at", "v2", cwd=git_repo)
    assert out.stdout == "added x (lance, key from the locator) at v2\n"


def test_add_uses_the_configured_default_policy(git_repo, tether):
    tether("init", cwd=git_repo)
    cfg = git_repo / "tether.toml"
    cfg.write_text(cfg.read_text().replace('pin = "native"', 'pin = "record"'))
    tether("add", "d", "/tmp", "--kind", "file", cwd=git_repo)
    assert 'pin = "record"' in (git_repo / ".tether/objects/d.toml").read_text()


@pytest.mark.parametrize(
    "args,message",
    [
        (["a", "/x", "--kind", "nosuch"], "unknown backend kind: 'nosuch'"),
        (["../up", "/x", "--kind", "file"], "unsafe object key: '../up'"),
        (["/abs", "/x", "--kind", "file"], "unsafe object key: '/abs'"),
        (["a\\b", "/x", "--kind", "file"], "unsafe object key"),
        (["C:/a", "/x", "--kind", "file"], "unsafe object key"),
        (["a//b", "/x", "--kind", "file"], "unsafe object key"),
        (["a", "/x", "--kind", "file", "--at", " "], "--at needs a native state"),
        (["a", "/x", "--kind", "file", "--file", "mutable"], "invalid policy.file: 'mutable'"),
        (["a", "/x", "--kind", "file", "--pin", "nope"], "invalid policy.pin: 'nope'"),
        (["g", "/elsewhere", "--kind", "git", "--remote", "-x"], "git remote '-x' looks like an option"),
        (["g", "--kind", "git", "--set", "path=-oops"], "inside the dataset's checkout"),
        (["g", "/elsewhere", "--kind", "git", "--set", "ref=--output=x"], "looks like an option"),
        (["g", "--kind", "git", "--set", "path=."], "inside the dataset's checkout"),
        (["t", "/t", "--kind", "delta", "--at", "v1"], "delta `at` must be a table version number"),
        (["n", "--kind", "neon", "--project-id", "p"], "neon locator needs 'database', 'role'"),
        (["i", "gs://b/x", "--kind", "icechunk"], "unsupported icechunk storage scheme: 'gs'"),
        (["x", "--kind", "neon", "--set", "novalue"], "--set expects key=value"),
    ],
)
def test_add_refusals_write_nothing(git_repo, tether, args, message):
    tether("init", cwd=git_repo)
    before = sorted(p.relative_to(git_repo) for p in (git_repo / ".tether").rglob("*"))
    proc = tether("add", *args, cwd=git_repo, check=False)
    assert proc.returncode == 1, proc.stderr
    assert message in proc.stderr
    assert proc.stderr.startswith("error: ")
    after = sorted(p.relative_to(git_repo) for p in (git_repo / ".tether").rglob("*")
                   if p.name != "lock")
    assert after == [p for p in before if p.name != "lock"]


def test_add_usage_errors_exit_2(git_repo, tether):
    tether("init", cwd=git_repo)
    assert tether("add", "a", "/x", cwd=git_repo, check=False).returncode == 2
    assert tether("add", "a", "/x", "--kind", "file", "--bogus", cwd=git_repo, check=False).returncode == 2
    assert tether("add", "a", "/x", "--kind", "dolt", "--port", "x", cwd=git_repo, check=False).returncode == 2


def test_add_twice_refused(git_repo, tether):
    tether("init", cwd=git_repo)
    tether("add", "a", "/tmp", "--kind", "file", cwd=git_repo)
    proc = tether("add", "a", "/var", "--kind", "file", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "object already exists: a" in proc.stderr


def test_set_and_remove_match_tether_vcs(tmp_path, env, tether, ref):
    ours, theirs = init_pair(tmp_path, env, tether, ref)
    results = []
    for repo, runner in ((ours, tether), (theirs, ref)):
        runner("add", "a", "/tmp/a", "--kind", "file", cwd=repo)
        runner("add", "b/c", "/tmp/b", "--kind", "file", cwd=repo)
        r1 = runner.json("set", "a", "b/c", "--pin", "record", cwd=repo)
        r2 = runner.json("set", "--all", "--pin", "record", "--file", "versioned", cwd=repo)
        runner("remove", "b/c", cwd=repo)
        results.append((r1, r2, (repo / ".tether/objects/a.toml").read_text(),
                        sorted(p.name for p in (repo / ".tether/objects").iterdir())))
    assert results[0] == results[1]
    # The journal records the same operations, in the same shape.
    for repo in (ours, theirs):
        lines = [json.loads(line) for line in (repo / ".tether/ops.jsonl").read_text().splitlines()]
        assert [e["command"] for e in lines] == ["add", "add", "set", "set", "remove"]
    ours_log = [json.loads(line) for line in (ours / ".tether/ops.jsonl").read_text().splitlines()]
    theirs_log = [json.loads(line) for line in (theirs / ".tether/ops.jsonl").read_text().splitlines()]
    for a, b in zip(ours_log, theirs_log):
        assert a.keys() == b.keys()
        assert a["result"] == b["result"]
        assert a["pre"]["objects"] == b["pre"]["objects"]


def test_set_text_output(git_repo, tether):
    tether("init", cwd=git_repo)
    tether("add", "a", "/tmp", "--kind", "file", cwd=git_repo)
    out = tether("set", "a", "--file", "versioned", cwd=git_repo).stdout
    assert out == "  set a  file immutable -> versioned\ncommit to record the policy\n"
    out = tether("set", "a", "--file", "versioned", cwd=git_repo).stdout
    assert out == "  unchanged a\n"
    proc = tether("set", "nope", "--pin", "record", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "no such object: nope" in proc.stderr
    proc = tether("set", "a", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "nothing to set" in proc.stderr


def test_remove_prunes_empty_directories(git_repo, tether):
    tether("init", cwd=git_repo)
    tether("add", "x/y/z", "/tmp", "--kind", "file", cwd=git_repo)
    assert tether("remove", "x/y/z", cwd=git_repo).stdout == "removed x/y/z\n"
    assert list((git_repo / ".tether/objects").iterdir()) == []
    proc = tether("remove", "x/y/z", cwd=git_repo, check=False)
    assert proc.returncode == 1 and "no such object" in proc.stderr


def test_backends_lists_every_kind_of_tether_vcs(git_repo, tether, ref):
    ours = {r["kind"]: r for r in tether.json("backends", cwd=git_repo)}
    theirs = {r["kind"]: r for r in ref.json("backends", cwd=git_repo)}
    assert sorted(ours) == sorted(theirs)
    for kind, row in theirs.items():
        mine = ours[kind]
        assert mine["maturity"] == row["maturity"], kind
        assert mine["tier"] == row["tier"], kind
        assert mine["capabilities"] == row["capabilities"], kind
        # schemes: which URI schemes this build reaches the kind's stores
        # through (issue #13); tether-vcs does not say
        assert set(mine) - {"schemes"} == set(row)
        if not mine["installed"]:
            assert "not built" in mine["note"]


def test_backends_say_which_schemes_this_build_reaches(tmp_path, tether):
    rows = {r["kind"]: r for r in tether.json("backends", cwd=tmp_path)}
    for kind in ("file", "lance", "delta"):
        assert {"file", "s3", "gs", "az"} <= set(rows[kind]["schemes"]), kind
    assert rows["icechunk"]["schemes"] == ["file", "s3", "s3a", "az", "azure"]
    assert rows["git"]["schemes"] is None and rows["dolt"]["schemes"] is None
    text = {line.split()[0]: line for line in tether("backends", cwd=tmp_path).stdout.splitlines()}
    assert text["icechunk"].endswith("  [file, s3, s3a, az, azure]")
    assert "[" not in text["git"]


def test_backends_text(tmp_path, tether):
    out = tether("backends", cwd=tmp_path).stdout.splitlines()
    assert out[0].startswith("delta      stable        addressable fingerprint, addressable")
    assert len(out) == 10


def test_every_command_of_tether_vcs_is_here(tmp_path, tether, ref):
    def names(text: str, header: str) -> set[str]:
        block = text.split(header, 1)[1].split("\n\n", 1)[0]
        # a name is indented two spaces; a wrapped summary's lines, more
        return {line.split()[0] for line in block.splitlines() if re.match(r"  \S", line)}
    theirs = names(ref("--help", cwd=tmp_path).stdout, "Commands:\n")
    ours = names(tether("--help", cwd=tmp_path).stdout, "commands:\n")
    # every command of tether-vcs, plus those only tether has (docs/compatibility.md)
    only_ours = {"help", "completion", "query", "bookmarks"}
    assert len(theirs) == 28 and ours == theirs | only_ours


def test_help_and_version(tmp_path, tether):
    assert tether("--version", cwd=tmp_path).stdout == "tether 0.1.0 (tether-vcs 0.1.0b7 compatible)\n"
    top = tether("--help", cwd=tmp_path).stdout
    for cmd in ("init", "add", "set", "remove", "backends", "status", "snapshot", "commit"):
        assert f"  {cmd} " in top
        h1 = tether(cmd, "--help", cwd=tmp_path).stdout
        h2 = tether("help", cmd, cwd=tmp_path).stdout
        assert h1 == h2 and h1.startswith(f"usage: tether {cmd} ")
    proc = tether("frobnicate", cwd=tmp_path, check=False)
    assert proc.returncode == 2
    # every command is built: none is announced as "not in this build yet"
    assert "not in this build" not in top
    for cmd in ("recover", "drop", "abandon", "forget-workspace", "upgrade"):
        assert re.search(rf"^  {cmd}(\s|$)", top, re.M), cmd
        assert tether("help", cmd, cwd=tmp_path).stdout.startswith(f"usage: tether {cmd} ")
    assert tether(cwd=tmp_path, check=False).returncode == 2
