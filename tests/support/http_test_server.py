"""A small HTTP server for the net/ unit tests, on 127.0.0.1.

Prints its port on the first line of stdout, then serves until killed.
With `--tls CERT KEY` it serves https with that certificate.
Behaviour by path:
  /ok                      200 "hello"
  /status/CODE/N/ID        CODE for the first N requests with this ID, then 200 "recovered"
  /retry-after/N/ID        429 with Retry-After: 1 for the first N, then 200
  /reset/N/ID              drop the connection without a response for the first N
  /truncate/ID             a body shorter than its Content-Length, every time
  /slow/SECONDS            wait, then 200 "slow"
  /stall                   send headers and part of the body, then stall for 30 s
  /big/N                   N bytes of 'x'
  /redirect/same           307 to /ok on this host
  /redirect/other          307 to the same path on "localhost" (another host name)
  /count/ID                the number of requests seen for ID
  /echo                    the method, the request line and the headers, then the body
AWS credential endpoints (fakes of what the SDKs read, with the real shapes):
  /ecs/creds               ECS/EKS container credentials; 401 unless
                           "Authorization: container-token" is sent
  /ecs/creds/short         the same, expiring in two minutes, a new key each time
                           (counted as ID ecs-short)
  /latest/api/token        IMDSv2: PUT with X-aws-ec2-metadata-token-ttl-seconds -> "imds-token"
  /latest/meta-data/iam/security-credentials/[ROLE]
                           the role list ("tether-role"), then its keys; 401 without
                           "X-aws-ec2-metadata-token: imds-token"
"""

import http.server
import socket
import sys
import threading
import time

_counts = {}
_lock = threading.Lock()


def _seen(ident):
    with _lock:
        _counts[ident] = _counts.get(ident, 0) + 1
        return _counts[ident]


def _creds(ak, sk, token, code=False, ttl=3600):
    import json
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + ttl))
    doc = {"AccessKeyId": ak, "SecretAccessKey": sk, "Token": token, "Expiration": exp}
    if code:
        doc.update(Code="Success", Type="AWS-HMAC", LastUpdated=exp)
    return json.dumps(doc).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _handle(self):
        body = self._body()
        parts = self.path.split("?")[0].strip("/").split("/")
        what = parts[0]
        if what == "ok":
            return self._send(200, b"hello", [("ETag", '"abc"')])
        if what == "status":
            code, n, ident = int(parts[1]), int(parts[2]), parts[3]
            if _seen(ident) <= n:
                return self._send(code, b"failing")
            return self._send(200, b"recovered")
        if what == "retry-after":
            n, ident = int(parts[1]), parts[2]
            if _seen(ident) <= n:
                return self._send(429, b"slow down", [("Retry-After", "1")])
            return self._send(200, b"recovered")
        if what == "reset":
            n, ident = int(parts[1]), parts[2]
            if _seen(ident) <= n:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                self.close_connection = True
                self.connection.close()
                return
            return self._send(200, b"recovered")
        if what == "truncate":
            _seen(parts[1])
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"only ten!!")
            self.wfile.flush()
            self.close_connection = True
            return
        if what == "slow":
            time.sleep(float(parts[1]))
            return self._send(200, b"slow")
        if what == "stall":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"part")
            self.wfile.flush()
            time.sleep(30)
            return
        if what == "big":
            return self._send(200, b"x" * int(parts[1]))
        if what == "redirect":
            port = self.server.server_address[1]
            host = "127.0.0.1" if parts[1] == "same" else "localhost"
            target = "/ok" if parts[1] == "same" else self.path
            return self._send(307, b"", [("Location", f"http://{host}:{port}{target}")])
        if what == "count":
            with _lock:
                n = _counts.get(parts[1], 0)
            return self._send(200, str(n).encode())
        if what == "echo":
            lines = [f"{self.command} {self.path}"]
            lines += [f"{k}: {v}" for k, v in self.headers.items()]
            return self._send(200, ("\n".join(lines) + "\n\n").encode() + body)
        if self.path in ("/ecs/creds", "/ecs/creds/short"):
            if self.headers.get("Authorization") != "container-token":
                return self._send(401, b"no token")
            if self.path.endswith("/short"):
                n = _seen("ecs-short")
                return self._send(200, _creds(f"ASIAECS{n}", "ecs-secret", "ecs-session", ttl=120))
            return self._send(200, _creds("ASIAECS", "ecs-secret", "ecs-session"))
        if self.path == "/latest/api/token":
            if self.command != "PUT" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self._send(400, b"IMDSv2 wants a PUT with a TTL")
            return self._send(200, b"imds-token")
        if self.path.startswith("/latest/meta-data/iam/security-credentials/"):
            if self.headers.get("X-aws-ec2-metadata-token") != "imds-token":
                return self._send(401, b"")
            role = self.path.rsplit("/", 1)[1]
            if not role:
                return self._send(200, b"tether-role\n")
            if role != "tether-role":
                return self._send(404, b"")
            return self._send(200, _creds("ASIAIMDS", "imds-secret", "imds-session", code=True))
        return self._send(404, b"no such test path")

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
