"""A moto S3 server on 127.0.0.1 for the e2e tests of stores on s3:// (the
icechunk, lance and delta backends), and the dataset files that reach it."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

KEY = "testing"  # moto's keys; a test asserts they never appear in output


class MotoS3:
    def __init__(self, *buckets: str):
        import botocore.session

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        self.client = botocore.session.get_session().create_client(
            "s3", endpoint_url=self.url, region_name="us-east-1",
            aws_access_key_id=KEY, aws_secret_access_key=KEY,
        )
        for b in buckets:
            self.client.create_bucket(Bucket=b)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        out, token = [], None
        while True:
            kw = {"Bucket": bucket, "Prefix": prefix, **({"ContinuationToken": token} if token else {})}
            page = self.client.list_objects_v2(**kw)
            out += [o["Key"] for o in page.get("Contents", [])]
            token = page.get("NextContinuationToken")
            if not token:
                return sorted(out)

    def storage_options(self) -> dict[str, str]:
        """What pylance and deltalake take to reach it."""
        return {"aws_access_key_id": KEY, "aws_secret_access_key": KEY, "aws_endpoint": self.url,
                "aws_region": "us-east-1", "allow_http": "true"}

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def make_dataset(root: Path, runner, url: str, bucket: str, ds_id: str, kind: str) -> Path:
    """A dataset whose [backends.KIND] storage_options allow plain HTTP and
    whose secrets.toml gives the bucket's endpoint and keys."""
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    runner("init", "--dataset-id", ds_id, cwd=root)
    with open(root / "tether.toml", "a") as f:
        # a string: pylance and deltalake take no booleans among their options
        f.write(f"\n[backends.{kind}]\nstorage_options = {{ allow_http = \"true\" }}\n")
    secrets = root / ".tether/secrets.toml"
    secrets.write_text(
        f'[uris."s3://{bucket}/"]\nendpoint_url = "{url}"\nregion = "us-east-1"\n'
        f'access_key_id = "{KEY}"\nsecret_access_key = "{KEY}"\n'
    )
    secrets.chmod(0o600)
    return root


class FaultProxy:
    """Forwards every request to the server on upstream_port; `hook(method,
    path)` (if set) picks a fault for one request: None (forward), "drop"
    (close the connection unanswered), an int (that status, empty body),
    ("status", code, xml) (that status and S3 error body), ("slow", s)
    (wait s seconds, then forward), "truncate" (forward, but cut the body
    short of its Content-Length and close)."""

    def __init__(self, upstream_port: int):
        import http.client
        import http.server
        import threading

        self.hook = None
        self.fired = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fault = proxy.hook(self.command, self.path) if proxy.hook else None
                if fault is not None:
                    proxy.fired += 1
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(fault, int) or (isinstance(fault, tuple) and fault[0] == "status"):
                    code, xml = (fault, b"") if isinstance(fault, int) else (fault[1], fault[2].encode())
                    self.send_response(code)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    self.wfile.write(xml)
                    return
                if isinstance(fault, tuple) and fault[0] == "slow":
                    time.sleep(fault[1])
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                conn.request(self.command, self.path, body=body or None,
                             headers={k: v for k, v in self.headers.items()})
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if fault == "truncate" and self.command != "HEAD":
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(data)

            do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
