"""Credentials in .tether/secrets.toml, for every source a backend can get
them from ([backends.<kind>], [uris."<prefix>"], [objects."<key>"]), never
appear in any command's output, the journal, or anything committed."""
from __future__ import annotations

from pathlib import Path

from conftest import git

CANARIES = ("CANARY-KIND-7f3a", "CANARY-PREFIX-91be", "CANARY-OBJECT-c04d")


def test_secrets_never_printed_journaled_or_committed(git_repo, tether, env, tmp_path):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "a.txt").write_text("one\n")
    (data / "b.txt").write_text("two\n")
    tether("init", "--dataset-id", "5ec2e75a", cwd=git_repo)
    secrets = git_repo / ".tether/secrets.toml"
    secrets.write_text(
        "[backends.file]\n"
        f'secret_access_key = "{CANARIES[0]}"\n'
        f'[uris."{data}/"]\n'
        f'secret_access_key = "{CANARIES[1]}"\n'
        '[objects."obj/b"]\n'
        f'session_token = "{CANARIES[2]}"\n'
    )
    secrets.chmod(0o600)
    outputs = []

    def run(*args, check=True):
        proc = tether(*args, cwd=git_repo, check=check)
        outputs.append(proc.stdout + proc.stderr)
        return proc

    run("add", "obj/sub", str(data / "sub"), "--kind", "file")
    run("add", "obj/b", str(data / "b.txt"), "--kind", "file")
    run("status")
    run("status", "--json")
    run("commit", "-m", "objects with credentials")
    (data / "sub" / "a.txt").write_text("changed\n")
    run("status", "--json")
    run("diff", "obj/sub", check=False)
    run("verify", check=False)
    run("commit", "-m", "drift")
    run("log", "obj/sub", check=False)
    run("gc", "--dry-run", check=False)
    run("undo", check=False)

    seen = "\n".join(outputs)
    tracked = git("ls-files", cwd=git_repo, env=env).split()
    committed = "\n".join(
        (git_repo / p).read_text(errors="replace")
        for p in tracked if (git_repo / p).is_file()
    )
    history = git("log", "-p", "--all", cwd=git_repo, env=env)
    journal = "".join(
        p.read_text(errors="replace")
        for p in Path(git_repo, ".tether").rglob("*")
        if p.is_file() and p.name != "secrets.toml"
    )
    for canary in CANARIES:
        assert canary not in seen, canary
        assert canary not in committed, canary
        assert canary not in history, canary
        assert canary not in journal, canary
    assert ".tether/secrets.toml" not in tracked
