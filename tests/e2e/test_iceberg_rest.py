"""The `iceberg` backend end to end on a REST catalog.

Apache Iceberg's own REST catalog server (iceberg_rest.py: the 1.10.0 test
fixtures over a JDBC catalog on SQLite, on 127.0.0.1, requiring a bearer
token or OAuth2 client credentials) holds the tables; pyiceberg's
RestCatalog creates, appends and reads them; tether speaks the REST API
(config, load table, commit table with assert-ref-snapshot-id
requirements).  The SQL-catalog scenarios of test_iceberg_backend.py run
here again on the REST catalog (their `catalog` fixtures are this file's),
plus what only REST has: OAuth2 client credentials, a refused token, the
token never shown.
"""
from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import pytest

from conftest import git
from iceberg_rest import CLIENT, SECRET, TOKEN, rest_server, start_server, stop_server  # noqa: F401
from test_iceberg_backend import (  # noqa: F401  (the scenarios, collected again here)
    DS, SCHEMA, ancestry, ids_at, make_table, manifest, new_dataset, rows,
    test_a_promote_whose_base_moved_meanwhile_is_refused, test_at_pick_and_pin_record,
    test_committed_catalog_secrets_are_refused, test_lifecycle_with_pyiceberg,
    test_racing_promotes_exactly_one_wins, test_refused_promote_plan_is_tether_vcs_s,
    test_same_manifests_and_pin_ids_as_tether_vcs, test_the_empty_table_cannot_be_forked,
    test_undo_and_gc_release_the_tag)

warnings.simplefilter("ignore")
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402


class RestCat:
    """One REST catalog server: what pyiceberg loads and what secrets.toml says."""

    def __init__(self, server, auth: str = "token"):
        self.server = server
        self.rest_uri = server.uri
        self.warehouse = f"file://{server.warehouse}"
        self.auth = auth

    def load(self) -> RestCatalog:
        return RestCatalog("default", uri=self.rest_uri, token=TOKEN)

    def secrets(self) -> str:
        if self.auth == "credential":
            cred = (f'credential = "{CLIENT}:{SECRET}", '
                    f'"oauth2-server-uri" = "{self.rest_uri}/v1/oauth/tokens"')
        else:
            cred = f'token = "{TOKEN}"'
        return ("[backends.iceberg]\n"
                f'catalog = {{ type = "rest", uri = "{self.rest_uri}", warehouse = "{self.warehouse}", '
                f"{cred} }}\n")

    def table(self, ident: str):
        return self.load().load_table(ident)


@pytest.fixture
def catalog(rest_server) -> RestCat:
    return RestCat(rest_server)


@pytest.fixture
def sqlite_catalog(rest_server) -> RestCat:  # the name the scenarios ask for
    return RestCat(rest_server)


def _all_output(procs) -> str:
    return "".join((p.stdout or "") + (p.stderr or "") for p in procs)


def test_oauth2_client_credentials_and_no_secret_shown(tmp_path, tether, env, rest_server):
    cat = RestCat(rest_server, auth="credential")
    t = make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    procs = [tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds),
             tether("commit", "-m", "first", cwd=ds),
             tether("verify", cwd=ds), tether("log", "t", cwd=ds), tether("status", cwd=ds),
             tether("open", "t", "--json", cwd=ds),
             tether("new", "-b", "feat", "--eager", cwd=ds)]
    m = manifest(ds, "t")
    assert m["state"] == {"snapshot_id": t.current_snapshot().snapshot_id}
    assert cat.table("ns.t").refs()[m["pin"]["ref"]].snapshot_id == m["state"]["snapshot_id"]
    h = json.loads(procs[5].stdout)
    assert h["catalog"] == {"type": "rest", "warehouse": cat.warehouse}
    out = _all_output(procs)
    issued = f"client-credentials-token:sub={CLIENT}"
    for secret in (TOKEN, SECRET, issued):
        assert secret not in out
    for f in (ds / ".tether").rglob("*"):
        if f.is_file() and f.name != "secrets.toml":
            data = f.read_bytes()
            assert SECRET.encode() not in data and issued.encode() not in data, f
    for f in (ds / ".git").rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_a_refused_token_is_a_clear_error(tmp_path, tether, env, rest_server):
    cat = RestCat(rest_server)
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds)
    head = git("rev-parse", "HEAD", cwd=ds, env=env)
    bad = "wr0ng-T0ken"
    (ds / ".tether" / "secrets.toml").write_text(cat.secrets().replace(TOKEN, bad))
    proc = tether("commit", "-m", "refused", cwd=ds, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "ns.t" in proc.stderr and "401" in proc.stderr and "catalog.token" in proc.stderr
    assert bad not in proc.stdout + proc.stderr
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head
    # Wrong client credentials: refused at the token endpoint, by name.
    (ds / ".tether" / "secrets.toml").write_text(
        RestCat(rest_server, auth="credential").secrets().replace(SECRET, "nope-S3cret"))
    proc = tether("commit", "-m", "refused", cwd=ds, check=False)
    assert proc.returncode == 1 and "token endpoint" in proc.stderr and "ns.t" in proc.stderr
    assert "nope-S3cret" not in proc.stdout + proc.stderr
    assert list(cat.table("ns.t").refs()) == ["main"]


def test_a_table_the_catalog_does_not_have(tmp_path, tether, env, rest_server):
    cat = RestCat(rest_server)
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "gone", "--kind", "iceberg", "--table", "ns.gone", cwd=ds)
    proc = tether("commit", "-m", "missing", cwd=ds, check=False)
    assert proc.returncode == 1
    # pyiceberg's words, as tether-vcs passes them on; the hint says where.
    assert "[iceberg] iceberg: NoSuchTableError: NoSuchTableException: Table does not exist: ns.gone" \
        in proc.stderr
    # one object's error carries the hint naming where it was looked up
    proc = tether("log", "gone", cwd=ds, check=False)
    assert proc.returncode == 1
    assert f"hint: table ns.gone looked up in REST catalog {rest_server.uri}" in proc.stderr


def test_a_pin_racing_another_writer_on_the_same_ref(tmp_path, tether, env, rest_server):
    """A commit whose assert-ref-snapshot-id fails (someone else moved the
    ref between tether's read and its commit) is refused by the catalog;
    the REST server's 409 is what tether reads as 'moved meanwhile'."""
    cat = RestCat(rest_server)
    t = make_table(cat)
    head = t.current_snapshot().snapshot_id
    parent = t.snapshot_by_id(head).parent_snapshot_id
    import urllib.request
    body = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
            "updates": [{"action": "set-snapshot-ref", "ref-name": "x", "snapshot-id": head,
                         "type": "tag"}]}
    req = urllib.request.Request(f"{cat.rest_uri}/v1/namespaces/ns/tables/t", method="POST",
                                 data=json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {TOKEN}",
                                          "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 409  # the contract tether's "moved meanwhile" rests on


def _faults(cat: RestCat, **counts: int) -> None:
    import urllib.parse
    import urllib.request
    q = urllib.parse.urlencode(counts)
    urllib.request.urlopen(urllib.request.Request(f"{cat.rest_uri}/tether-test/faults?{q}",
                                                  method="POST", data=b""))


def test_a_commit_the_catalog_applied_then_failed_is_not_redone(tmp_path, tether, env, rest_server):
    """The catalog applies the pin's commit and answers 503: the retry is
    refused (the tag exists now), and tether reads the table again to find
    its own write rather than report a conflict or pin twice."""
    cat = RestCat(rest_server)
    t = make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds)
    _faults(cat, applied503=1)
    tether("commit", "-m", "first", cwd=ds)
    tag = manifest(ds, "t")["pin"]["ref"]
    refs = cat.table("ns.t").refs()
    assert refs[tag].snapshot_id == t.current_snapshot().snapshot_id
    assert sorted(refs) == sorted(["main", tag])
    # The same for a promote: main moved by the first, failed, attempt.
    tether("new", "-b", "feat", "--eager", cwd=ds)
    cat.table("ns.t").append(rows(9), branch=f"tether.ws.{DS}.feat")
    tether("commit", "-m", "fork work", cwd=ds)
    fork_head = cat.table("ns.t").refs()[f"tether.ws.{DS}.feat"].snapshot_id
    _faults(cat, applied503=1)
    out = tether.json("promote", cwd=ds)
    assert out["fast_forwarded"] == {"t": {"snapshot_id": fork_head}}
    assert cat.table("ns.t").current_snapshot().snapshot_id == fork_head


def test_commit_conflicts_are_retried_then_refused(tmp_path, tether, env, rest_server):
    """A 409 (another writer's commit landed first) is retried from a fresh
    read; a catalog that keeps refusing gets 'moved meanwhile', exit 1, and
    nothing is pinned or committed."""
    cat = RestCat(rest_server)
    t = make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds)
    head = git("rev-parse", "HEAD", cwd=ds, env=env)
    _faults(cat, refused409=100)
    proc = tether("commit", "-m", "refused", cwd=ds, check=False)
    assert proc.returncode == 1
    assert "ns.t" in proc.stderr and "moved meanwhile" in proc.stderr, proc.stderr
    assert list(cat.table("ns.t").refs()) == ["main"]
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head
    _faults(cat, refused409=2)
    tether("commit", "-m", "after two conflicts", cwd=ds)
    tag = manifest(ds, "t")["pin"]["ref"]
    assert cat.table("ns.t").refs()[tag].snapshot_id == t.current_snapshot().snapshot_id


def test_the_config_prefix_and_a_nested_namespace(tmp_path, tether, env):
    """The server's /v1/config overrides the prefix; it serves tables only
    under /v1/<prefix>/, so pinning, forking and promoting work only if the
    prefix is followed; a.b.t is sent as the namespace a\\x1fb."""
    base = tmp_path / "rest"
    base.mkdir()
    s = start_server(base, {"prefix": "wh-1"})
    try:
        cat = RestCat(s)
        c = cat.load()
        c.create_namespace(("a",))
        c.create_namespace(("a", "b"))
        t = c.create_table("a.b.t", schema=SCHEMA)
        t.append(rows(1, 2))
        ds = new_dataset(tmp_path / "ds", tether, env, cat)
        tether("add", "t", "--kind", "iceberg", "--table", "a.b.t", cwd=ds)
        tether("commit", "-m", "first", cwd=ds)
        m = manifest(ds, "t")
        t = cat.table("a.b.t")
        assert t.refs()[m["pin"]["ref"]].snapshot_id == t.current_snapshot().snapshot_id
        tether("new", "-b", "feat", "--eager", cwd=ds)
        t.append(rows(3), branch=f"tether.ws.{DS}.feat")
        tether("commit", "-m", "fork work", cwd=ds)
        tether("promote", cwd=ds)
        t = cat.table("a.b.t")
        assert ids_at(t, t.current_snapshot().snapshot_id) == [1, 2, 3]
    finally:
        stop_server(s)


def test_broken_metadata_and_a_location_outside_the_warehouse(tmp_path, tether, env, rest_server):
    """The catalog (its JDBC table edited behind its back) points at a
    metadata file outside the warehouse: refused naming the table; a load
    answer with malformed metadata: a clear error naming the table."""
    import sqlite3
    cat = RestCat(rest_server)
    t = make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds)
    head = git("rev-parse", "HEAD", cwd=ds, env=env)
    meta = Path(t.metadata_location.removeprefix("file://"))
    outside = tmp_path / "elsewhere" / meta.name
    outside.parent.mkdir()
    outside.write_bytes(meta.read_bytes())
    db = sqlite3.connect(rest_server.warehouse.parent / "catalog.db")
    db.execute("UPDATE iceberg_tables SET metadata_location = ?", (str(outside),))
    db.commit()
    proc = tether("commit", "-m", "outside", cwd=ds, check=False)
    assert proc.returncode == 1
    assert "ns.t" in proc.stderr and "outside the catalog's warehouse" in proc.stderr, proc.stderr
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head
    db.execute("UPDATE iceberg_tables SET metadata_location = ?", (str(meta),))
    db.commit()
    db.close()
    _faults(cat, garbled=1)
    proc = tether("commit", "-m", "garbled", cwd=ds, check=False)
    assert proc.returncode == 1
    assert "ns.t" in proc.stderr and "garbled.metadata.json" in proc.stderr, proc.stderr
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head
    tether("commit", "-m", "fine again", cwd=ds)
    assert sorted(cat.table("ns.t").refs()) == sorted(["main", manifest(ds, "t")["pin"]["ref"]])


def test_an_expired_oauth2_token_is_fetched_again(tmp_path, tether, env, rest_server):
    """The catalog refuses the token it issued (401, as when it expires):
    tether asks the token endpoint again once and goes on."""
    cat = RestCat(rest_server, auth="credential")
    t = make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds)
    _faults(cat, expired=1)
    tether("commit", "-m", "first", cwd=ds)
    tag = manifest(ds, "t")["pin"]["ref"]
    assert cat.table("ns.t").refs()[tag].snapshot_id == t.current_snapshot().snapshot_id
    # Refused again right after a fresh token: an error, not a loop.
    _faults(cat, expired=10)
    proc = tether("verify", cwd=ds, check=False)
    assert proc.returncode == 1 and "401" in proc.stdout + proc.stderr
    _faults(cat, expired=0)


# --- SigV4 (rest.sigv4-enabled), as S3 Tables-style catalogs take it -----------

AK, SK, REGION = "AKIDTETHERSIGV4", "sigv4-Secret-Key", "us-east-1"


class SigV4Gateway:
    """An IAM-style gateway in front of the REST server: it checks each
    request's SigV4 signature by recomputing it with botocore (the AWS SDK's
    own signer: canonical request from the SignedHeaders the client lists,
    the body's SHA-256, service execute-api) and forwards what verifies
    with the server's bearer token; anything else is a 403."""

    def __init__(self, upstream: str, secret: str = SK):
        import http.server
        import threading
        import urllib.request
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        gw = self
        self.verified, self.refused = 0, []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _check(self, body: bytes) -> str | None:
                auth = self.headers.get("Authorization", "")
                if not auth.startswith("AWS4-HMAC-SHA256 "):
                    return "not signed"
                fields = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
                ak, date, region, service, _ = fields["Credential"].split("/")
                if ak != AK or region != REGION or service != "execute-api":
                    return f"wrong scope {fields['Credential']}"
                signed = fields["SignedHeaders"].split(";")
                if "host" not in signed or "x-amz-date" not in signed:
                    return "host and x-amz-date must be signed"
                import hashlib
                if self.headers.get("x-amz-content-sha256", hashlib.sha256(body).hexdigest()) != \
                        hashlib.sha256(body).hexdigest():
                    return "x-amz-content-sha256 is not the body's"
                req = AWSRequest(method=self.command, url=f"http://{self.headers['Host']}{self.path}",
                                 data=body, headers={h: self.headers[h] for h in signed})
                req.context["timestamp"] = self.headers["x-amz-date"]
                signer = SigV4Auth(Credentials(AK, secret), "execute-api", REGION)
                canonical = signer.canonical_request(req)
                want = signer.signature(signer.string_to_sign(req, canonical), req)
                return None if want == fields["Signature"] else "signature mismatch"

            def _serve(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                why = self._check(body)
                if why:
                    gw.refused.append(f"{self.command} {self.path}: {why}")
                    out = json.dumps({"error": {"message": f"SignatureDoesNotMatch: {why}",
                                                "type": "NotAuthorizedException", "code": 403}}).encode()
                    self.send_response(403)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                gw.verified += 1
                fwd = urllib.request.Request(upstream + self.path, data=body or None, method=self.command)
                for h in ("Content-Type", "Accept"):
                    if self.headers.get(h):
                        fwd.add_header(h, self.headers[h])
                fwd.add_header("Authorization", f"Bearer {TOKEN}")
                try:
                    with urllib.request.urlopen(fwd, timeout=60) as r:
                        status, data, ctype = r.status, r.read(), r.headers.get("Content-Type")
                except urllib.error.HTTPError as e:
                    status, data, ctype = e.code, e.read(), e.headers.get("Content-Type")
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_HEAD = _serve

        import urllib.error  # noqa: F401  (used in the handler)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class SigV4Cat(RestCat):
    def __init__(self, server, gateway: SigV4Gateway, secret: str = SK):
        super().__init__(server)
        self.gateway, self.secret = gateway, secret

    def secrets(self) -> str:
        return ("[backends.iceberg]\n"
                f'catalog = {{ type = "rest", uri = "{self.gateway.uri}", warehouse = "{self.warehouse}", '
                f'"rest.sigv4-enabled" = "true", "rest.signing-region" = "{REGION}", '
                f'"client.access-key-id" = "{AK}", "client.secret-access-key" = "{self.secret}" }}\n')


@pytest.fixture
def gateway(rest_server):
    g = SigV4Gateway(rest_server.uri)
    yield g
    g.close()


def test_sigv4_signed_requests_verify_with_botocore(tmp_path, tether, env, rest_server, gateway):
    pytest.importorskip("boto3")
    cat = SigV4Cat(rest_server, gateway)
    t = make_table(cat)
    # the reference signer through the same gateway: pyiceberg's own SigV4
    ref = RestCatalog("default", uri=gateway.uri, **{"rest.sigv4-enabled": "true",
                                                    "rest.signing-region": REGION,
                                                    "client.access-key-id": AK,
                                                    "client.secret-access-key": SK})
    assert ref.load_table("ns.t").current_snapshot().snapshot_id == t.current_snapshot().snapshot_id
    assert not gateway.refused and gateway.verified >= 2
    seen = gateway.verified

    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    procs = [tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds),
             tether("commit", "-m", "first", cwd=ds),
             tether("verify", cwd=ds),
             tether("new", "-b", "feat", "--eager", cwd=ds)]
    assert not gateway.refused, gateway.refused
    assert gateway.verified > seen + 3  # config, loads and the tag and branch commits, all signed
    m = manifest(ds, "t")
    refs = cat.table("ns.t").refs()
    assert refs[m["pin"]["ref"]].snapshot_id == m["state"]["snapshot_id"]
    assert any(r.startswith("tether.ws.") for r in refs), list(refs)
    assert SK not in _all_output(procs)


def test_a_wrong_sigv4_secret_is_refused_by_name(tmp_path, tether, env, rest_server, gateway):
    pytest.importorskip("boto3")
    cat = SigV4Cat(rest_server, gateway, secret="not-the-Secret-Key")
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds)
    head = git("rev-parse", "HEAD", cwd=ds, env=env)
    proc = tether("commit", "-m", "refused", cwd=ds, check=False)
    assert proc.returncode == 1
    assert "ns.t" in proc.stderr and "403" in proc.stderr, proc.stderr
    assert "not-the-Secret-Key" not in proc.stdout + proc.stderr
    assert gateway.refused and all("signature mismatch" in r for r in gateway.refused)
    assert git("rev-parse", "HEAD", cwd=ds, env=env) == head


def test_sigv4_without_credentials_says_where_they_go(tmp_path, tether, env, rest_server, gateway):
    cat = SigV4Cat(rest_server, gateway)
    make_table(cat)
    ds = new_dataset(tmp_path / "ds", tether, env, cat)
    (ds / ".tether" / "secrets.toml").write_text(
        cat.secrets().replace(f', "client.access-key-id" = "{AK}", "client.secret-access-key" = "{SK}"', ""))
    tether("add", "t", "--kind", "iceberg", "--table", "ns.t", cwd=ds)
    bare = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    proc = tether("commit", "-m", "no creds", cwd=ds, env=bare, check=False)
    assert proc.returncode == 1
    assert "client.access-key-id" in proc.stderr and "AWS_ACCESS_KEY_ID" in proc.stderr, proc.stderr
    assert not gateway.verified
