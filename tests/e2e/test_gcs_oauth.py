"""gs:// with a service-account key file: tether signs the OAuth2 grant's
JWT (RS256) itself and trades it for an access token at the file's
token_uri, as Google's libraries do.

The token endpoint is a local fake on 127.0.0.1 that checks each grant with
google-auth's own JWT verifier (signature, audience, expiry) before it
issues a token; a proxy in front of fake-gcs-server lets through only
requests that carry a token it issued and has not revoked.  The grant is
held to google-auth's signer on the same key: for the same issue time the
two JWTs are the same bytes (RS256 is deterministic)."""
from __future__ import annotations

import datetime
import http.client
import http.server
import json
import threading
import urllib.parse
from pathlib import Path

import pytest

pytest.importorskip("google.auth")
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from google.auth import _helpers, jwt  # noqa: E402
from google.oauth2 import service_account  # noqa: E402

from test_gcs_file import BUCKET, gcs, make_dataset, manifest  # noqa: E402,F401

AUDIENCE = "https://oauth2.googleapis.com/token"
SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def _serve(handler_cls) -> tuple[http.server.ThreadingHTTPServer, int]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_cls)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


class TokenEndpoint:
    """A fake OAuth2 token endpoint: jwt-bearer grants checked with
    google-auth's verifier; tokens "tok-N" valid until revoked."""

    def __init__(self, public_pem: bytes):
        self.public_pem = public_pem
        self.assertions: list[str] = []
        self.forms: list[dict[str, str]] = []
        self.valid: set[str] = set()
        self.expires_in = 3600
        self.refuse: tuple[int, dict] | None = None
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(n).decode()))
                outer.forms.append(form)
                status, body = 200, {}
                if outer.refuse:
                    status, body = outer.refuse
                elif (self.headers.get("Content-Type") != "application/x-www-form-urlencoded"
                      or form.get("grant_type") != GRANT):
                    status, body = 400, {"error": "unsupported_grant_type"}
                else:
                    try:
                        jwt.decode(form["assertion"], certs=outer.public_pem, audience=AUDIENCE)
                    except Exception as e:  # what google's endpoint would refuse
                        status, body = 400, {"error": "invalid_grant",
                                             "error_description": str(e)[:80]}
                    else:
                        outer.assertions.append(form["assertion"])
                        tok = f"tok-{len(outer.assertions)}"
                        outer.valid.add(tok)
                        body = {"access_token": tok, "expires_in": outer.expires_in,
                                "token_type": "Bearer"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.srv, self.port = _serve(H)
        self.uri = f"http://127.0.0.1:{self.port}/token"

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class AuthProxy:
    """Forwards to fake-gcs-server only requests with a valid bearer token
    (the emulator checks none); counts what it saw."""

    def __init__(self, upstream: str, tokens: TokenEndpoint):
        up = urllib.parse.urlparse(upstream)
        self.requests = 0
        self.refused = 0
        self.revoke_at: int | None = None  # request number that finds every token revoked
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                outer.requests += 1
                if outer.revoke_at is not None and outer.requests >= outer.revoke_at:
                    outer.revoke_at = None
                    tokens.valid.clear()
                auth = self.headers.get("Authorization", "")
                if not (auth.startswith("Bearer ") and auth[7:] in tokens.valid):
                    outer.refused += 1
                    data = b'{"error":{"code":401,"message":"Invalid Credentials"}}'
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":  # a HEAD answer has no body
                        self.wfile.write(data)
                    return
                c = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("host", "authorization", "connection")}
                c.request(self.command, self.path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                c.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        self.srv, self.port = _serve(H)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def oauth(gcs, env, tmp_path):
    url, w = gcs
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    tokens = TokenEndpoint(pub)
    proxy = AuthProxy(url, tokens)
    info = {"type": "service_account", "project_id": "tt-test",
            "private_key_id": "0f3c9a7e51d2b8", "private_key": pem,
            "client_email": "tether-e2e@tt-test.iam.gserviceaccount.com",
            "client_id": "1234567890", "token_uri": tokens.uri,
            "gcs_base_url": proxy.url}
    sa = tmp_path / "sa.json"
    sa.write_text(json.dumps(info))
    # the emulator file of the gcs fixture must not be what tether uses
    env.pop("GOOGLE_SERVICE_ACCOUNT", None)
    w.put("d/a.bin", b"hello")
    for i in range(5):
        w.put(f"d/p/{i}", b"x" * i)
    yield {"sa": sa, "info": info, "pem": pem, "tokens": tokens, "proxy": proxy}
    proxy.close()
    tokens.close()


def _dataset(tmp_path: Path, tether, sa: Path) -> Path:
    root = make_dataset(tmp_path / "ds", tether)
    (root / ".tether/secrets.toml").write_text(
        f'[uris."gs://{BUCKET}/"]\nservice_account_path = "{sa}"\n')
    (root / ".tether/secrets.toml").chmod(0o600)
    return root


def _claims(assertion: str) -> tuple[dict, dict]:
    h, p, _ = assertion.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    import base64
    return (json.loads(base64.urlsafe_b64decode(pad(h))),
            json.loads(base64.urlsafe_b64decode(pad(p))))


def test_gcs_oauth_grant_is_google_auths_jwt(oauth, tether, tmp_path, monkeypatch):
    root = _dataset(tmp_path, tether, oauth["sa"])
    tether("add", "obj", f"gs://{BUCKET}/d/a.bin", "--kind", "file", cwd=root)
    tether("add", "dir", f"gs://{BUCKET}/d/", "--kind", "file", cwd=root)
    tether("commit", "-m", "gcs over oauth", cwd=root)
    assert "size = 5" in manifest(root, "obj") and "count = 6" in manifest(root, "dir")
    tokens, proxy = oauth["tokens"], oauth["proxy"]
    assert tokens.assertions and proxy.requests > 0 and proxy.refused == 0

    ours = tokens.assertions[0]
    header, claims = _claims(ours)
    info = oauth["info"]
    assert header == {"typ": "JWT", "alg": "RS256", "kid": info["private_key_id"]}
    assert claims["iss"] == info["client_email"] and claims["aud"] == AUDIENCE
    assert claims["scope"] == SCOPE and claims["exp"] - claims["iat"] == 3600
    # google-auth's signer on the same key at the same issue time: same bytes
    creds = service_account.Credentials.from_service_account_info(info, scopes=[SCOPE])
    when = datetime.datetime.fromtimestamp(claims["iat"], datetime.timezone.utc)
    monkeypatch.setattr(_helpers, "utcnow", lambda: when.replace(tzinfo=None))
    theirs = creds._make_authorization_grant_assertion()
    theirs = theirs.decode() if isinstance(theirs, bytes) else theirs
    assert ours == theirs
    # and google-auth's own grant at the fake endpoint has the same form
    monkeypatch.undo()
    import google.auth.transport.requests as gtr
    creds.refresh(gtr.Request())
    assert creds.token in tokens.valid
    assert set(tokens.forms[0]) == set(tokens.forms[-1]) == {"grant_type", "assertion"}


def test_gcs_oauth_token_cached_then_refreshed(oauth, tether, tmp_path):
    tokens, proxy = oauth["tokens"], oauth["proxy"]
    root = _dataset(tmp_path, tether, oauth["sa"])
    tether("add", "dir", f"gs://{BUCKET}/d/", "--kind", "file", cwd=root)
    tether("add", "obj", f"gs://{BUCKET}/d/a.bin", "--kind", "file", cwd=root)
    before = len(tokens.assertions)
    tether("commit", "-m", "one token", cwd=root)
    assert len(tokens.assertions) - before == 1, "one token for the whole command"
    assert proxy.requests >= 2

    # tokens that live less than the refresh margin: asked for again each time
    tokens.expires_in = 100
    tether("status", "--snapshot", cwd=root)  # gets one, short-lived
    n, r = len(tokens.assertions), proxy.requests
    tether("status", "--snapshot", cwd=root)
    assert proxy.requests - r >= 2 and len(tokens.assertions) - n == proxy.requests - r

    # a token revoked in the middle of a command: the store's 401 gets one
    # fresh token and one retry, and the command goes on
    tokens.expires_in = 3600
    n, refused = len(tokens.assertions), proxy.refused
    proxy.revoke_at = proxy.requests + 2  # the command's second request
    out = tether.json("status", "--snapshot", cwd=root)
    assert {o["key"]: o["state"] for o in out["objects"]} == {"dir": "clean", "obj": "clean"}
    # one refused request (two when both were in flight), each retried once
    assert 1 <= proxy.refused - refused <= 2 and len(tokens.assertions) - n >= 2


def test_gcs_oauth_errors_name_the_endpoint_never_the_key(oauth, tether, tmp_path):
    tokens, pem = oauth["tokens"], oauth["pem"]
    root = _dataset(tmp_path, tether, oauth["sa"])
    secret_line = pem.splitlines()[5]
    tether("add", "obj", f"gs://{BUCKET}/d/a.bin", "--kind", "file", cwd=root)

    tokens.refuse = (400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
    r = tether("commit", "-m", "x", cwd=root, check=False)
    assert r.returncode == 1, r.stderr
    assert tokens.uri in r.stderr and str(oauth["sa"]) in r.stderr
    assert "invalid_grant" in r.stderr and "HTTP 400" in r.stderr
    assert secret_line not in r.stderr + r.stdout
    assert "eyJ" not in r.stderr + r.stdout  # no JWT
    assert not (root / ".tether/objects/obj.toml").read_text().count("etag")

    tokens.refuse = None
    tokens.srv.shutdown()
    tokens.srv.server_close()
    r = tether("commit", "-m", "x", cwd=root, check=False)
    assert r.returncode == 1 and f"127.0.0.1:{tokens.port}" in r.stderr, r.stderr
    assert secret_line not in r.stderr

    bad = dict(oauth["info"], private_key="-----BEGIN PRIVATE KEY-----\nnotakey\n"
               "-----END PRIVATE KEY-----\n")
    oauth["sa"].write_text(json.dumps(bad))
    r = tether("commit", "-m", "x", cwd=root, check=False)
    assert r.returncode == 1 and str(oauth["sa"]) in r.stderr and "RSA private key" in r.stderr
    assert "notakey" not in r.stderr


def test_gcs_oauth_key_given_inline_in_secrets(oauth, tether, tmp_path):
    """service_account_key: the key file's text itself in secrets.toml."""
    root = make_dataset(tmp_path / "ds", tether)
    text = json.dumps(oauth["info"])
    assert "'" not in text
    (root / ".tether/secrets.toml").write_text(
        f"[uris.\"gs://{BUCKET}/\"]\nservice_account_key = '{text}'\n")
    (root / ".tether/secrets.toml").chmod(0o600)
    tether("add", "obj", f"gs://{BUCKET}/d/a.bin", "--kind", "file", cwd=root)
    tether("commit", "-m", "inline key", cwd=root)
    assert "size = 5" in manifest(root, "obj")
    assert len(oauth["tokens"].assertions) == 1 and oauth["proxy"].refused == 0
