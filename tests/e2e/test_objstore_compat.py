"""`file` objects on gs:// (fake-gcs-server) and az:// (Azurite) side by
side with tether-vcs 0.1.0b7: add (an object, a prefix, a missing object,
a store `--create` makes), status, commit, verify, open, an overwrite seen
as drift, pull, diff, restore, set, remove, new on a kind that cannot fork,
gc with --delete-stores, undo, ops.  Every step's exit code, error line and
--json answer and the dataset's files (manifests, listings, workspace.toml,
journal) must agree once run-bound ids (generations, etags) are symbolised
(side_by_side.py).  The bucket or container is emptied between the runs."""
from __future__ import annotations

import json
import os
import re
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import side_by_side as sbs
from conftest import git
from test_lake_gs_az import CONTAINER, server  # noqa: F401  (fixture)

DS = "5e3e2e05"
# Azure etags ("0x8DC...") and GCS md5/crc32c hashes differ by run.
ETAGS = re.compile(r"0x[0-9A-F]{12,20}")


class Bucket:
    """Writes and deletes objects in the emulator's bucket or container, the
    way each emulator takes them."""

    def __init__(self, srv):
        self.srv = srv
        if srv.scheme == "az":
            import obstore
            from obstore.store import from_url
            self.obs = obstore
            self.store = from_url(f"az://{CONTAINER}", client_options={"allow_http": True})
        else:
            sa = json.loads(Path(srv.env["GOOGLE_SERVICE_ACCOUNT"]).read_text())
            self.url = sa["gcs_base_url"]

    def put(self, key: str, body: bytes) -> None:
        if self.srv.scheme == "az":
            self.obs.put(self.store, key, body)
            return
        q = urllib.parse.urlencode({"uploadType": "media", "name": key})
        req = urllib.request.Request(f"{self.url}/upload/storage/v1/b/{CONTAINER}/o?{q}", method="POST",
                                     data=body, headers={"Content-Type": "application/octet-stream"})
        assert urllib.request.urlopen(req).status == 200

    def keys(self) -> list[str]:
        if self.srv.scheme == "az":
            return sorted(m["path"] for batch in self.obs.list(self.store) for m in batch)
        out, token = [], None
        while True:
            q = {"maxResults": "1000", **({"pageToken": token} if token else {})}
            with urllib.request.urlopen(f"{self.url}/storage/v1/b/{CONTAINER}/o?"
                                        f"{urllib.parse.urlencode(q)}") as r:
                doc = json.loads(r.read())
            out += [i["name"] for i in doc.get("items", [])]
            token = doc.get("nextPageToken")
            if not token:
                return sorted(out)

    def empty(self) -> None:
        for k in self.keys():
            if self.srv.scheme == "az":
                self.obs.delete(self.store, k)
            else:
                req = urllib.request.Request(
                    f"{self.url}/storage/v1/b/{CONTAINER}/o/{urllib.parse.quote(k, safe='')}",
                    method="DELETE")
                urllib.request.urlopen(req)


def dataset(root: Path, runner, env) -> Path:
    ds = root / "ds"
    ds.mkdir()
    git("init", "-q", "-b", "main", cwd=ds, env=env)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=ds, env=env)
    runner("init", "--dataset-id", DS, cwd=ds)
    with open(ds / "tether.toml", "a") as f:
        f.write("\n[backends.file]\nstorage_options = { allow_http = true }\n")
    git("add", "tether.toml", cwd=ds, env=env)
    return ds


def test_file_objects_on_gs_and_az_side_by_side(tmp_path, env, tether, ref, server):
    b = Bucket(server)
    root = server.root

    def make(world, runner, name):
        b.empty()
        for k, body in (("d/a.bin", b"hello"), ("d/sub/b.bin", b"bravo!"), ("d/\u00e9.txt", b"u"),
                        ("other", b"x")):
            b.put(k, body)
        ds = dataset(world, runner, env)

        def overwrite(ds):
            b.put("d/a.bin", b"HELLO")
            b.put("d/new.bin", b"n")

        def again(ds):
            b.put("d/sub/b.bin", b"BRAVO")

        def bucket_keys(ds):
            return b.keys()

        steps = [
            ("add", "obj", f"{root}/d/a.bin", "--kind", "file", "--file", "versioned"),
            ("add", "dir", f"{root}/d/", "--kind", "file"),
            ("add", "gone", f"{root}/nothing/here.bin", "--kind", "file"),
            ("add", "made", f"{root}/made/", "--kind", "file", "--create"),
            ("status", "--json"),
            ("remove", "gone"),
            ("commit", "-m", "first", "--json"),
            ("verify", "--json"),
            ("verify", "--deep", "--json"),
            ("open", "obj", "--json"),
            ("open", "obj", "-r", "HEAD", "--json"),
            ("open", "dir", "-r", "HEAD", "--json"),
            ("log", "obj", "--json"),
            ("new", "-b", "feat", "--json"),
            ("new", "main", "--json"),
            overwrite,
            ("status", "--snapshot", "--json"),
            ("diff", "--json"),
            ("pull", "-m", "changed", "--json"),
            ("set", "dir", "--file", "versioned", "--json"),
            ("commit", "-m", "changed", "--json"),
            ("diff", "HEAD~1", "HEAD", "--content", "--json"),
            again,
            ("pull", "-m", "again", "--json"),
            ("open", "obj", "-r", "HEAD~1", "--json"),
            ("restore", "obj", "--from", "HEAD~1", "--json"),
            ("status", "--json"),
            ("remove", "dir"),
            ("commit", "-m", "without dir", "--json"),
            ("gc", "--dry-run", "--json"),
            ("gc", "--no-dry-run", "--json"),
            ("undo", "--json"),
            ("status", "--json"),
            bucket_keys,
            ("ops", "--json"),
        ]
        shown = sbs.run(runner, ds, steps)
        for s in shown:  # etags are the store's, by run
            if s.get("error"):
                s["error"] = ETAGS.sub("<etag>", s["error"])
            if "json" in s:
                s["json"] = json.loads(ETAGS.sub("<etag>", json.dumps(s["json"])))
        files = json.loads(ETAGS.sub("<etag>", json.dumps(sbs.dataset_files(ds, env))))
        files["listings"] = sorted(files["listings"])
        return sbs.World(name, shown, files)

    worlds = sbs.both(tmp_path, tether, ref, make)
    diffs = sbs.differences(worlds["ours"], worlds["theirs"])
    assert diffs == [], "\n".join(diffs)
    ours = worlds["ours"].normalised()
    status = {o["key"]: o for o in ours["steps"][4]["json"]["objects"]}
    assert status["gone"]["state"] == "error"
    assert "cannot create a store" in ours["steps"][3]["error"]
    # the overwrite: an immutable prefix that changed is refused, alike
    assert "immutable object 'dir' changed" in ours["steps"][16]["error"]
    assert "immutable object 'dir' changed" in ours["steps"][18]["error"]
    assert [s.get("rc") for s in ours["steps"][19:24]] == [0, 0, 0, None, 0]
    assert "dir" in ours["steps"][23]["json"]["committed"]

