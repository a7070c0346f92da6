"""A line-driven writer over the real icechunk Python package, for tests
that need repositories and commits made by icechunk itself.

Each stdin line is a JSON array; each answer is one JSON line:
  ["create", path]                   -> {"ok": true}
  ["commit", path, branch, name]     -> {"ok": true, "snapshot_id": ...}
        (writes a new array `name` on branch and commits)
  ["branch", path, name, snapshot_id] -> create_branch
  ["remove", path, branch, name]     -> deletes array `name` and commits
  ["tags", path] / ["branches", path] -> {"ok": true, "names": [...]}
  ["lookup_tag", path, name] / ["lookup_branch", path, name]
  ["ancestry", path, ref]            -> {"ok": true, "entries": [[id, iso, msg], ...]}
  ["expire", path, older_than_iso]   -> expire_snapshots + garbage_collect
  ["check", path]                    -> opens and resolves every branch and tag
Errors answer {"ok": false, "error": "..."}.

A path "s3://bucket/prefix" opens S3 storage, reached through
ICECHUNK_S3_ENDPOINT (plain HTTP, path-style) with the keys in
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY: how the tests run icechunk (1.x
here, 2.x under Python 3.12) against a local S3 server.
A path "az://container/prefix" opens Azure storage on the emulator at
AZURITE_BLOB_STORAGE_URL with its development account.
"""
import json
import logging
import os
import sys

# icechunk's Rust logging writes to fd 1: keep the answers on a private
# copy of stdout and send everything else to stderr.
ANSWERS = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
logging.disable(logging.WARNING)

import icechunk as ic  # noqa: E402
import zarr  # noqa: E402


def storage(path):
    if path.startswith("s3://"):
        bucket, _, prefix = path[len("s3://"):].partition("/")
        return ic.s3_storage(
            bucket=bucket, prefix=prefix or None, region="us-east-1",
            endpoint_url=os.environ["ICECHUNK_S3_ENDPOINT"], allow_http=True,
            force_path_style=True, access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
            secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
    if path.startswith("az://"):
        container, _, prefix = path[len("az://"):].partition("/")
        return ic.azure_storage(
            account="devstoreaccount1", container=container, prefix=prefix,
            access_key=os.environ["AZURE_STORAGE_ACCOUNT_KEY"],
            config={"azure_storage_use_emulator": "true", "azure_allow_http": "true"})
    return ic.local_filesystem_storage(path)


def repo(path):
    return ic.Repository.open(storage(path))


def run(cmd):
    op, path, *rest = cmd
    if op == "create":
        ic.Repository.create(storage(path))
        return {}
    r = repo(path)
    if op == "commit":
        branch, name = rest
        s = r.writable_session(branch)
        g = zarr.open_group(store=s.store, mode="a")
        g.create_array(name, shape=(2,), dtype="i4")
        return {"snapshot_id": s.commit(f"write {name}")}
    if op == "branch":
        r.create_branch(rest[0], rest[1])
        return {}
    if op == "remove":
        branch, name = rest
        s = r.writable_session(branch)
        g = zarr.open_group(store=s.store, mode="a")
        del g[name]
        return {"snapshot_id": s.commit(f"remove {name}")}
    if op == "tags":
        return {"names": sorted(r.list_tags())}
    if op == "branches":
        return {"names": sorted(r.list_branches())}
    if op == "lookup_tag":
        return {"snapshot_id": r.lookup_tag(rest[0])}
    if op == "lookup_branch":
        return {"snapshot_id": r.lookup_branch(rest[0])}
    if op == "ancestry":
        ref = rest[0]
        try:
            it = r.ancestry(branch=ref)
        except ic.IcechunkError:
            it = r.ancestry(tag=ref)
        return {"entries": [[i.id, i.written_at.isoformat(timespec="seconds"), i.message]
                            for i in it]}
    if op == "expire":
        import datetime

        older = datetime.datetime.fromisoformat(rest[0])
        expired = r.expire_snapshots(older_than=older)
        r.garbage_collect(older)
        return {"expired": sorted(expired)}
    if op == "check":
        for b in r.list_branches():
            r.lookup_branch(b)
        for t in r.list_tags():
            r.lookup_tag(t)
        return {}
    raise ValueError(f"unknown op {op}")


for line in sys.stdin:
    try:
        out = {"ok": True, **run(json.loads(line))}
    except Exception as exc:  # answered, not raised: the caller decides
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out), file=ANSWERS, flush=True)
