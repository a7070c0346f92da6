"""The git backend end to end: states and pin ids equal tether-vcs's for the
same repository, our CLI drives a git object through add, commit, status,
verify, log and diff, each implementation verifies the other's pins, and a
cloned dataset (untrusted input) can neither point git at a path it
should not nor make a repository's config run a program."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, git

DS = "0a1b2c3d"


def commit_file(repo: Path, name: str, text: str, env, message: str | None = None) -> str:
    (repo / name).write_text(text)
    git("add", name, cwd=repo, env=env)
    git("commit", "-q", "-m", message or f"write {name}", cwd=repo, env=env)
    return git("rev-parse", "HEAD", cwd=repo, env=env).strip()


@pytest.fixture
def code(tmp_path, env) -> Path:
    """A code repository outside the dataset, on main with one commit."""
    repo = tmp_path / "stores" / "code"
    repo.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo, env=env)
    commit_file(repo, "main.py", "print('hi')\n", env, "one")
    return repo


@pytest.fixture
def dataset(git_repo, tether):
    tether("init", "--dataset-id", DS, cwd=git_repo)
    return git_repo


def reference_api(env, script: str, *args: str) -> object:
    """Run `script` with tether-vcs importable, in the isolated environment;
    it prints JSON."""
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


REF_STATES = """
import json, sys
from tether.backends.base import content_state
from tether.backends.git import GitBackend
from tether.manifest import compute_pin_id
b = GitBackend({})
out = {}
for spec in sys.argv[2:]:
    key, _, ref = spec.partition("=")
    loc = {"uri": sys.argv[1]}
    if ref:
        loc["ref"] = ref
    state = b.fingerprint(loc, None)
    out[key] = {"state": state,
                "pin_id": compute_pin_id("git", b.identity(loc), content_state(b, state),
                                         "%s")}
print(json.dumps(out))
""" % DS


def tags(repo: Path, env) -> list[str]:
    return git("tag", "--list", cwd=repo, env=env).split()


# --------------------------------------------------------------------------- #
# Same states and pin ids as tether-vcs
# --------------------------------------------------------------------------- #
def test_states_and_pin_ids_match_tether_vcs(dataset, tether, code, env):
    git("branch", "side", cwd=code, env=env)
    commit_file(code, "main.py", "print('bye')\n", env)
    (code / "stray.txt").write_text("not committed\n")  # main is dirty, side is not
    tether("add", "code", str(code), "--kind", "git", cwd=dataset)
    tether("add", "side", str(code), "--kind", "git", "--set", "ref=side", cwd=dataset)
    ours = tether.json("snapshot", cwd=dataset)
    theirs = reference_api(env, REF_STATES, str(code), "code", "side=side")
    assert ours == {k: v["state"] for k, v in theirs.items()}
    assert ours["code"]["dirty"] is True and ours["side"]["dirty"] is False
    assert set(ours["code"]) == {"sha", "dirty"}  # no jj here: no change_id
    # A dirty tree is not pinned (allow_dirty is not set); the clean one is,
    # under tether-vcs's pin id.
    out = tether("commit", "-m", "first", "--json", cwd=dataset, check=False)
    assert "refusing to pin a dirty working tree (set allow_dirty)" in out.stderr
    (code / "stray.txt").unlink()
    out = tether.json("commit", "-m", "second", cwd=dataset)
    assert out["pinned"]["side"] == f"tether.{theirs['side']['pin_id']}"
    code_pin = out["pinned"].get("code") or next(
        t for t in tags(code, env) if t != out["pinned"]["side"])
    # The dirty state and the clean one are one content state: one pin id.
    assert code_pin == f"tether.{theirs['code']['pin_id']}"
    assert sorted(tags(code, env)) == sorted({code_pin, out["pinned"]["side"]})


def test_pin_ids_equal_reference_cli(tmp_path, tether, ref, code, env):
    """The same repository added and committed by both CLIs: the same pin,
    the same manifest (up to the capture time)."""
    roots = []
    for name, runner in (("ours", tether), ("theirs", ref)):
        root = tmp_path / name
        root.mkdir()
        git("init", "-q", "-b", "main", cwd=root, env=env)
        commit_file(root, "README", "dataset\n", env)
        runner("init", "--dataset-id", DS, cwd=root)
        runner("add", str(code), "--kind", "git", cwd=root)
        runner("commit", "-m", "first", cwd=root)
        roots.append(root)
    texts = [re.sub(r'captured_at = "[^"]*"\n', "", (r / ".tether/objects/code.toml").read_text())
             for r in roots]
    assert texts[0] == texts[1]
    assert len(tags(code, env)) == 1 and tags(code, env)[0] in texts[0]


def test_empty_root_sha_is_tether_vcs_constant(env):
    theirs = reference_api(
        env, "import json\nfrom tether.backends.git import GitBackend\n"
             "print(json.dumps([GitBackend.EMPTY_ROOT_SHA, GitBackend.EMPTY_TREE]))")
    header = (ROOT / "src/backends/git/gitobj.h").read_text()
    assert f'#define TT_GIT_EMPTY_ROOT_SHA "{theirs[0]}"' in header
    assert f'#define TT_GIT_EMPTY_TREE "{theirs[1]}"' in header


# --------------------------------------------------------------------------- #
# End to end with our CLI
# --------------------------------------------------------------------------- #
def test_end_to_end(dataset, tether, code, env):
    tether("add", str(code), "--kind", "git", cwd=dataset)
    manifest = (dataset / ".tether/objects/code.toml").read_text()
    assert f'uri = "{code}"' in manifest
    first = tether.json("commit", "-m", "first", cwd=dataset)
    pin1 = first["pinned"]["code"]
    assert tags(code, env) == [pin1]
    sha1 = git("rev-parse", "HEAD", cwd=code, env=env).strip()
    assert git("rev-parse", f"{pin1}^{{commit}}", cwd=code, env=env).strip() == sha1

    sha2 = commit_file(code, "main.py", "print('hello')\n", env, "two")
    st = tether.json("status", "--snapshot", cwd=dataset)
    assert [(o["key"], o["state"], o["tier"]) for o in st["objects"]] == [
        ("code", "modified", "forkable")]
    second = tether.json("commit", "-m", "second", cwd=dataset)
    pin2 = second["pinned"]["code"]
    assert sorted(tags(code, env)) == sorted([pin1, pin2])
    assert tether.json("snapshot", cwd=dataset)["code"] == {"sha": sha2, "dirty": False}

    assert tether.json("verify", cwd=dataset) == {"code": {"status": "ok", "message": ""}}
    # A moved tag drifts; a deleted one is missing.
    git("tag", "-f", pin2, sha1, cwd=code, env=env)
    v = tether.json("verify", cwd=dataset, check=False)
    assert v["code"]["status"] == "drifted"
    assert v["code"]["message"] == f"{pin2} -> {sha1}, expected {sha2}"
    git("tag", "-d", pin2, cwd=code, env=env)
    v = tether.json("verify", cwd=dataset, check=False)
    assert v["code"] == {"status": "missing", "message": f"{pin2} not found"}
    git("tag", pin2, sha2, cwd=code, env=env)

    log = tether.json("log", "code", cwd=dataset)
    assert [e["id"] for e in log] == [sha2, sha1]
    assert [e["message"] for e in log] == ["two", "one"]
    assert log[0]["refs"] == ["main", pin2] and log[1]["refs"] == [pin1]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", e["when"])
               for e in log)

    d = tether.json("diff", "--content", "HEAD~1", "HEAD", cwd=dataset)
    assert d[0]["key"] == "code" and d[0]["change"] == "changed"
    assert d[0]["detail"]["summary"] == "+0 -0 ~1 files"
    assert d[0]["detail"]["entries"] == [
        {"path": "main.py", "change": "modified", "detail": "+1 -1"}]
    text = tether("diff", "--content", "HEAD~1", "HEAD", cwd=dataset).stdout
    assert "modified  main.py  +1 -1" in text


def test_diff_and_log_match_reference(dataset, tether, ref, code, env):
    tether("add", str(code), "--kind", "git", cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    (code / "gone.py").write_text("x = 1\n")
    (code / "old_name.py").write_text("a long enough line to be detected as a rename\n" * 3)
    git("add", ".", cwd=code, env=env)
    git("commit", "-q", "-m", "more", cwd=code, env=env)
    tether("commit", "-m", "second", cwd=dataset)
    git("rm", "-q", "gone.py", cwd=code, env=env)
    git("mv", "old_name.py", "new_name.py", cwd=code, env=env)
    (code / "main.py").write_text("print('hi')\nprint('there')\n")
    (code / "added.txt").write_text("new\n")
    git("add", ".", cwd=code, env=env)
    git("commit", "-q", "-m", "shuffle", cwd=code, env=env)
    git("checkout", "-q", "-b", "feature", cwd=code, env=env)
    tether("commit", "-m", "third", cwd=dataset)
    for args in (("diff", "--content", "HEAD~1", "HEAD"), ("diff", "--content", "HEAD~2"),
                 ("log", "code"), ("log", "code", "-n", "2"), ("log", "code", "--ref", "main")):
        assert tether.json(*args, cwd=dataset) == ref.json(*args, cwd=dataset), args
        assert tether(*args, cwd=dataset).stdout == ref(*args, cwd=dataset).stdout, args


# --------------------------------------------------------------------------- #
# Cross-implementation
# --------------------------------------------------------------------------- #
def test_cross_implementation_verify(tmp_path, tether, ref, code, env):
    theirs = tmp_path / "theirs-ds"
    ours = tmp_path / "ours-ds"
    for root, runner in ((theirs, ref), (ours, tether)):
        root.mkdir()
        git("init", "-q", "-b", "main", cwd=root, env=env)
        commit_file(root, "README", "dataset\n", env)
        runner("init", "--dataset-id", DS if runner is ref else "5eed5eed", cwd=root)
        runner("add", str(code), "--kind", "git", cwd=root)
        runner("commit", "-m", "first", cwd=root)
    commit_file(code, "main.py", "print(2)\n", env)
    ref("commit", "-m", "second", cwd=theirs)
    tether("commit", "-m", "second", cwd=ours)
    # Each verifies the other's pins.
    assert tether.json("verify", cwd=theirs) == {"code": {"status": "ok", "message": ""}}
    assert ref.json("verify", cwd=ours) == {"code": {"status": "ok", "message": ""}}
    assert tether.json("verify", cwd=theirs) == ref.json("verify", cwd=theirs)
    # And each reads the other's states as its own.
    assert tether.json("status", "--snapshot", cwd=theirs)["objects"][0]["state"] == "clean"
    assert ref.json("status", "--snapshot", cwd=ours)["objects"][0]["state"] == "clean"
    # Ours keeps working in theirs: a new commit, pinned the same way.
    commit_file(code, "main.py", "print(3)\n", env)
    pinned = tether.json("commit", "-m", "third", cwd=theirs)["pinned"]["code"]
    assert pinned in tags(code, env)
    assert ref.json("verify", cwd=theirs) == {"code": {"status": "ok", "message": ""}}


# --------------------------------------------------------------------------- #
# A cloned dataset is untrusted input
# --------------------------------------------------------------------------- #
def write_manifest(root: Path, key: str, locator: dict[str, str]) -> None:
    lines = "".join(f'{k} = {json.dumps(v)}\n' for k, v in locator.items())
    (root / ".tether/objects" / f"{key}.toml").write_text(
        f'key = "{key}"\nkind = "git"\nrecoverable = true\n\n[locator]\n{lines}\n'
        '[policy]\nfile = "immutable"\npin = "native"\n')


def object_error(tether, root: Path) -> str:
    st = tether.json("status", "--snapshot", cwd=root, check=False)
    (obj,) = st["objects"]
    assert obj["state"] == "error"
    return obj["error"]


def refused_everywhere(tether, root: Path, pattern: str) -> None:
    assert re.search(pattern, object_error(tether, root))
    proc = tether("status", "--snapshot", cwd=root, check=False)
    assert proc.returncode == 1 and "error  code" in proc.stdout
    proc = tether("commit", "-m", "from the clone", cwd=root, check=False)
    assert re.search(pattern, proc.stderr), proc.stderr


@pytest.mark.parametrize("shape", ["relative", "uri-relative"])
def test_relative_path_refused(dataset, tether, code, env, shape):
    rel = "../stores/code"
    write_manifest(dataset, "code", {"path" if shape == "relative" else "uri": rel})
    refused_everywhere(tether, dataset, r"git path '\.\./stores/code' is not absolute; "
                                        r"`add` stores an absolute path")
    assert tags(code, env) == []


def test_in_checkout_path_refused(dataset, tether, env, tmp_path):
    inner = dataset / "vendor" / "code"
    inner.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=inner, env=env)
    commit_file(inner, "x.py", "x\n", env)
    marker = tmp_path / "FSMONITOR-RAN"
    prog = tmp_path / "fsmonitor.sh"
    prog.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 1\n")
    prog.chmod(0o755)
    git("config", "core.fsmonitor", str(prog), cwd=inner, env=env)
    # `add` refuses it outright...
    proc = tether("add", "code", str(inner), "--kind", "git", cwd=dataset, check=False)
    assert proc.returncode == 1 and "is inside the dataset's checkout" in proc.stderr
    # ...and a hand-written manifest (as a clone brings) is refused at use,
    # through a symlink from outside too.
    link = tmp_path / "outside-link"
    link.symlink_to(inner)
    for path in (inner, link):
        write_manifest(dataset, "code", {"path": str(path)})
        refused_everywhere(tether, dataset, r"is inside the dataset's checkout \(.*\), whose "
                                            r"files came with the clone")
    assert tags(inner, env) == []
    assert not marker.exists()


def test_gc_names_the_object_whose_git_path_is_inside_the_checkout(dataset, tether, code, env):
    """A pinned manifest of the history points inside the checkout (as a
    clone may bring it): gc, which walks every object of the history,
    refuses it naming the object's key."""
    tether("add", "code", str(code), "--kind", "git", cwd=dataset)
    tether("commit", "-m", "pinned", cwd=dataset)
    inner = dataset / "vendor" / "code"
    inner.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=inner, env=env)
    path = dataset / ".tether" / "objects" / "code.toml"
    path.write_text(path.read_text().replace(json.dumps(str(code)), json.dumps(str(inner))))
    git("add", "-A", ".tether", cwd=dataset, env=env)
    git("commit", "-q", "-m", "a clone's manifest", cwd=dataset, env=env)
    proc = tether("gc", cwd=dataset, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"\[git\] code: git path \S+ is inside the dataset's checkout", proc.stderr), proc.stderr
    proc = tether("gc", "--json", cwd=dataset, check=False)
    err = json.loads(proc.stdout or proc.stderr)["error"]
    assert err["key"] == "code" and err["message"].startswith("[git] code: git path ")


@pytest.mark.parametrize("field", ["ref", "at"])
def test_option_shaped_ref_refused(dataset, tether, code, env, tmp_path, field):
    out = tmp_path / "pwned"
    write_manifest(dataset, "code", {"uri": str(code), field: f"--output={out}"})
    refused_everywhere(tether, dataset, rf"git ref '--output={re.escape(str(out))}' looks like "
                                        r"an option; refused")
    assert not out.exists()
    assert tags(code, env) == []


def test_option_shaped_remote_refused(dataset, tether, code, env, tmp_path):
    write_manifest(dataset, "code", {"uri": str(code), "remote": "--receive-pack=touch pwned"})
    proc = tether("commit", "-m", "x", cwd=dataset, check=False)
    assert "git remote '--receive-pack=touch pwned' looks like an option; refused" in proc.stderr
    assert tags(code, env) == []
    # A remote the repository does not have is refused too: a clone does not
    # choose where your code is pushed.
    write_manifest(dataset, "code", {"uri": str(code), "remote": str(tmp_path / "elsewhere")})
    proc = tether("commit", "-m", "x", cwd=dataset, check=False)
    assert "is not a remote configured in" in proc.stderr
    assert tags(code, env) == []


HOOKS = ("pre-commit", "post-commit", "post-checkout", "post-merge", "reference-transaction",
         "post-index-change", "pre-push", "pre-auto-gc")


def test_object_repo_config_runs_nothing(dataset, tether, code, env, tmp_path):
    marker = tmp_path / "RAN"
    script = f"#!/bin/sh\necho \"$0\" >> '{marker}'\nexit 1\n"
    prog = tmp_path / "fsmonitor.sh"
    prog.write_text(script)
    prog.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        for where in (hooks, code / ".git" / "hooks"):
            (where / name).write_text(script.replace("exit 1", "exit 0"))
            (where / name).chmod(0o755)
    git("config", "core.fsmonitor", str(prog), cwd=code, env=env)
    git("config", "core.hooksPath", str(hooks), cwd=code, env=env)
    # Sharp: plain git runs them (fsmonitor on status, reference-transaction
    # on a tag).
    subprocess.run(["git", "status", "--porcelain"], cwd=code, env=env, check=True,
                   capture_output=True)
    subprocess.run(["git", "tag", "probe"], cwd=code, env=env, check=True, capture_output=True)
    ran = marker.read_text()
    assert "fsmonitor.sh" in ran and "reference-transaction" in ran
    marker.unlink()
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "tag", "-d", "probe"], cwd=code,
                   env=env, check=True, capture_output=True)

    tether("add", str(code), "--kind", "git", cwd=dataset)
    tether("status", "--snapshot", cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    tether("verify", cwd=dataset)
    (code / "main.py").write_text("changed\n")
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
                    "commit", "-qam", "two"], cwd=code, env=env, check=True)
    tether("status", "--snapshot", cwd=dataset)
    tether("commit", "-m", "second", cwd=dataset)
    tether("verify", cwd=dataset)
    tether("log", "code", cwd=dataset)
    tether("diff", "--content", "HEAD~1", "HEAD", cwd=dataset)
    assert len(tags(code, env)) == 2
    assert not marker.exists(), marker.read_text()


def test_redirecting_environment_ignored(dataset, tether, code, env, tmp_path):
    """GIT_DIR and friends in the caller's environment do not move the
    backend to another repository."""
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    git("init", "-q", "-b", "main", cwd=decoy, env=env)
    commit_file(decoy, "d.txt", "decoy\n", env)
    tether("add", str(code), "--kind", "git", cwd=dataset)
    want = git("rev-parse", "HEAD", cwd=code, env=env).strip()
    got = tether.json("snapshot", cwd=dataset,
                      env={"GIT_DIR": str(decoy / ".git"), "GIT_WORK_TREE": str(decoy)})
    assert got["code"]["sha"] == want


def test_secrets_git_path_runs_object_git(dataset, tether, code, env, tmp_path):
    """The untracked secrets' [vcs] git_path is the git that object calls run
    too (a wrapper logs every call made against the object repository)."""
    log = tmp_path / "calls"
    wrapper = tmp_path / "my-git"
    wrapper.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\nexec git \"$@\"\n")
    wrapper.chmod(0o755)
    secrets = dataset / ".tether/secrets.toml"
    secrets.write_text(f'[vcs]\ngit_path = "{wrapper}"\n')
    secrets.chmod(0o600)
    tether("add", str(code), "--kind", "git", cwd=dataset)
    pin = tether.json("commit", "-m", "first", cwd=dataset)["pinned"]["code"]
    calls = log.read_text().splitlines()
    assert any(f"-C {code}" in c and "tag" in c.split() for c in calls), calls
    assert tags(code, env) == [pin]


# --------------------------------------------------------------------------- #
# A lock git left behind: reported with the fix, and promote moves nothing
# --------------------------------------------------------------------------- #
def two_stores_on_a_bookmark(tmp_path, dataset, tether, env):
    """Stores a and b (main checked out), each with a commit on the
    bookmark's working branch, committed in the dataset."""
    stores = []
    for name in ("a", "b"):
        repo = tmp_path / "stores" / name
        repo.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=repo, env=env)
        commit_file(repo, "f.txt", "one\n", env, "one")
        tether("add", str(repo), "--kind", "git", cwd=dataset)
        stores.append(repo)
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feat", "--eager", cwd=dataset)
    branch = f"tether.ws.{DS}.feat"
    for repo in stores:
        git("checkout", "-q", branch, cwd=repo, env=env)
        commit_file(repo, "f.txt", "two\n", env, "two")
        git("checkout", "-q", "main", cwd=repo, env=env)
    tether("commit", "-m", "on feat", cwd=dataset)
    return stores


def head(repo: Path, env, ref: str = "main") -> str:
    return git("rev-parse", ref, cwd=repo, env=env).strip()


def test_promote_with_a_stale_index_lock_moves_nothing_and_says_how_to_fix(tmp_path, dataset, tether,
                                                                          env):
    """A store's .git/index.lock (a git killed, or failing on a full disk,
    leaves it) would stop its fast-forward after the other store's landed:
    promote checks every object first and moves none, naming the lock and
    the command that clears it; once cleared, it lands whole."""
    a, b = two_stores_on_a_bookmark(tmp_path, dataset, tether, env)
    before = {r: head(r, env) for r in (a, b)}
    trunk = head(dataset, env, "main")
    lock = b / ".git" / "index.lock"
    lock.write_text("")

    proc = tether("promote", cwd=dataset, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert (f"{lock} exists: another git process is running in {b}, or one crashed; "
            f"if none is running, remove it: rm {lock}") in out
    assert {r: head(r, env) for r in (a, b)} == before
    assert head(dataset, env, "main") == trunk

    lock.unlink()
    tether("promote", cwd=dataset)
    branch = f"tether.ws.{DS}.feat"
    assert all(head(r, env) == head(r, env, branch) for r in (a, b))
    assert head(dataset, env, "main") != trunk


def test_status_of_a_store_leaves_no_index_lock(tmp_path, dataset, tether, env):
    """tether's own `git status` in a store takes no optional lock, so a
    kill (or a full disk) there cannot leave .git/index.lock behind."""
    a, b = two_stores_on_a_bookmark(tmp_path, dataset, tether, env)
    log = tmp_path / "git-calls"
    wrapper = tmp_path / "git-wrapper"
    wrapper.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\nexec git \"$@\"\n")
    wrapper.chmod(0o755)
    tether("promote", cwd=dataset, env={"TETHER_GIT": str(wrapper)})
    calls = [l for l in log.read_text().splitlines() if " status " in f" {l} "]
    assert calls and all("--no-optional-locks" in l for l in calls), calls


def test_fork_onto_a_stale_ref_lock_is_partial_and_names_the_fix(dataset, tether, code, env):
    """A ref lock a killed git left where the working branch goes: `new`
    switches and records what it can, exits 3 naming the lock and the
    rerun, and once the lock is removed that rerun finishes the fork."""
    tether("add", str(code), "--kind", "git", cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    branch = f"tether.ws.{DS}.feat"
    lock = code / ".git" / "refs" / "heads" / f"{branch}.lock"
    lock.write_text("")
    proc = tether("new", "-b", "feat", "--eager", cwd=dataset, check=False)
    assert proc.returncode == 3, proc.stderr
    assert (f"{lock} exists: another git process is running in {code}, or one crashed; "
            f"if none is running, remove it: rm {lock}") in proc.stderr
    assert "`tether new -b feat --eager` again" in proc.stderr
    lock.unlink()
    tether("new", "-b", "feat", "--eager", cwd=dataset)
    assert head(code, env, branch) == head(code, env)


# --------------------------------------------------------------------------- #
# Another writer moves the base the moment promote has moved it
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("shape", ["merge", "fast-forward", "fast-forward-ref"])
def test_promote_reports_the_commit_it_made_not_the_head_after(tmp_path, dataset, tether, code, env, shape):
    """A git wrapper commits on the store's main right after promote's own
    git moved it (another writer, landing first): promote reports and
    records the commit it made -- the merge commit, or the fork head it
    fast-forwarded to, checked out (`merge --ff-only`) or not
    (`update-ref`) -- never main's head read again."""
    # fast-forward-ref: the base is named (ref = main) and not checked out
    named = ["--set", "ref=main"] if shape == "fast-forward-ref" else []
    tether("add", str(code), "--kind", "git", *named, cwd=dataset)
    tether("commit", "-m", "first", cwd=dataset)
    tether("new", "-b", "feat", "--eager", cwd=dataset)
    branch = f"tether.ws.{DS}.feat"
    git("checkout", "-q", branch, cwd=code, env=env)
    fork_head = commit_file(code, "fork.txt", "fork\n", env, "on the fork")
    if named:
        git("checkout", "-q", "-b", "side", cwd=code, env=env)
    else:
        git("checkout", "-q", "main", cwd=code, env=env)
    if shape == "merge":
        commit_file(code, "main.txt", "main\n", env, "main moves")
    tether("commit", "-m", "on feat", cwd=dataset)
    before = head(code, env)
    after = tmp_path / "right-after"
    wrapper = tmp_path / "git-wrapper"
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    wrapper.write_text(f"""#!/bin/sh
"{real}" "$@"; rc=$?
case " $* " in *" -C {code} "*)
  case " $* " in *" merge --no-ff "*|*" merge --ff-only "*|*" update-ref --end-of-options refs/heads/main "*)
    if [ $rc = 0 ] && [ ! -e "{after}" ]; then
      c=$("{real}" -C "{code}" commit-tree -p refs/heads/main -m "right after" "refs/heads/main^{{tree}}")
      "{real}" -C "{code}" update-ref refs/heads/main "$c" && echo "$c" > "{after}"
    fi;;
  esac;;
esac
exit $rc
""")
    wrapper.chmod(0o755)
    out = tether.json("promote", "-m", "land feat", cwd=dataset, env={"TETHER_GIT": str(wrapper)})
    landed = out["merged" if shape == "merge" else "fast_forwarded"][code.name]
    made = landed["sha"]
    other = after.read_text().strip()
    assert head(code, env) == other != made  # the other writer did land right after
    if shape == "merge":
        parents = git("rev-list", "--parents", "-n", "1", made, cwd=code, env=env).split()[1:]
        assert parents == [before, fork_head]
        assert git("log", "-1", "--format=%s", made, cwd=code, env=env).strip() == "land feat"
    else:
        assert made == fork_head
    ws = tomllib.loads((dataset / ".tether" / "workspace.toml").read_text())
    assert ws["fork_points"][code.name]["sha"] == made
