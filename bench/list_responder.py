"""A minimal S3 ListObjectsV2 responder: one bucket holding `--keys` keys
named <prefix><8 digits>, served from memory so that what a benchmark
measures is the client, not the server.

A full page (1000 keys starting at a multiple of 1000) is one template
made once at start, its page number patched in with one bytes.replace; a
page starting elsewhere (a start-after in the middle of a page) is built
key by key.  It honours prefix, continuation-token, start-after and
max-keys (at most 1000), checks no signature, says the bucket keeps no versions, and
answers anything else with 404.

`--fail-every N` answers every Nth listing request with 503 SlowDown, a
request at most once (its retry is answered), for tests of a client's
back-off.  `--keys` above 10^8 is refused (the
names have 8 digits).

    python bench/list_responder.py --keys 10000000 --port 0
prints "listening on http://127.0.0.1:PORT" and serves until killed.
"""
from __future__ import annotations

import argparse
import bisect
import http.server
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

PAGE = 1000
VERBOSE = False
DIGITS = 8
STAMP = "2020-01-01T00:00:00.000Z"


class Keys:
    def __init__(self, prefix: str, n: int) -> None:
        self.prefix, self.n = prefix, n
        # a full page: page number as the placeholder PPPPP
        entries = []
        for j in range(PAGE):
            entries.append(
                f"<Contents><Key>{escape(prefix)}PPPPP{j:03d}</Key><LastModified>{STAMP}"
                f"</LastModified><ETag>&quot;PPPPP{j:03d}QQQQQQQQ0123456789abcdef&quot;</ETag>"
                f"<Size>{j % 7}</Size><StorageClass>STANDARD</StorageClass></Contents>")
        self.template = "".join(entries).encode()

    def name(self, i: int) -> str:
        return f"{self.prefix}{i:0{DIGITS}d}"

    def bounds(self, p: str) -> tuple[int, int]:
        """The indexes [lo, hi) of the keys starting with p."""
        if self.prefix.startswith(p):
            return 0, self.n
        if not p.startswith(self.prefix):
            return 0, 0
        rest = p[len(self.prefix):]
        if len(rest) > DIGITS or not rest.isdigit():
            return 0, 0
        lo = int(rest.ljust(DIGITS, "0"))
        hi = int(rest.ljust(DIGITS, "9")) + 1
        return min(lo, self.n), min(hi, self.n)

    def first_after(self, after: str, lo: int, hi: int) -> int:
        return bisect.bisect_right(range(lo, hi), after, key=self.name) + lo

    def entries(self, start: int, end: int) -> bytes:
        if start % PAGE == 0 and end - start == PAGE:
            page = start // PAGE
            # QQQQQQQQ differs by key; patched once per page below
            body = self.template.replace(b"PPPPP", f"{page:05d}".encode())
            return body.replace(b"QQQQQQQQ", b"%08x" % (page % (1 << 32)))
        out = []
        for i in range(start, end):
            page, j = divmod(i, PAGE)
            out.append(
                f"<Contents><Key>{escape(self.name(i))}</Key><LastModified>{STAMP}"
                f"</LastModified><ETag>&quot;{page:05d}{j:03d}{page % (1 << 32):08x}0123456789abcdef"
                f"&quot;</ETag><Size>{j % 7}</Size><StorageClass>STANDARD</StorageClass></Contents>")
        return "".join(out).encode()


def make_handler(keys: Keys, bucket: str, fail_every: int, delay: float = 0.0):
    lock = threading.Lock()
    count = [0]
    failed: set[str] = set()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args) -> None:  # quiet unless asked
            if VERBOSE:
                sys.stderr.write(fmt % args + "\n")

        def reply(self, status: int, body: bytes, ctype: str = "application/xml") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
            if url.path.strip("/") == bucket and "versioning" in q:  # unversioned
                self.reply(200, b'<?xml version="1.0" encoding="UTF-8"?>\n<VersioningConfiguration '
                           b'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>')
                return
            if url.path.strip("/") != bucket or q.get("list-type") != "2":
                self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>")
                return
            if fail_every:
                with lock:
                    count[0] += 1
                    fail = count[0] % fail_every == 0 and self.path not in failed
                    if fail:
                        failed.add(self.path)
                if fail:
                    self.reply(503, b"<Error><Code>SlowDown</Code><Message>Please reduce your "
                               b"request rate.</Message></Error>")
                    return
            if delay:
                time.sleep(delay)
            prefix = q.get("prefix", "")
            lo, hi = keys.bounds(prefix)
            start = lo
            if "continuation-token" in q:
                start = max(lo, int(q["continuation-token"].lstrip("c") or 0))
            elif "start-after" in q:
                start = keys.first_after(q["start-after"], lo, hi)
            mk = max(0, min(PAGE, int(q.get("max-keys", PAGE))))
            end = min(hi, start + mk)
            body = keys.entries(start, end) if end > start else b""
            more = end < hi
            head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult '
                    f'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>{bucket}</Name>'
                    f"<Prefix>{escape(prefix)}</Prefix><KeyCount>{max(0, end - start)}</KeyCount>"
                    f"<MaxKeys>{mk}</MaxKeys><IsTruncated>{'true' if more else 'false'}</IsTruncated>")
            if "continuation-token" in q:
                head += f"<ContinuationToken>{escape(q['continuation-token'])}</ContinuationToken>"
            if "start-after" in q:
                head += f"<StartAfter>{escape(q['start-after'])}</StartAfter>"
            if more:
                head += f"<NextContinuationToken>c{end}</NextContinuationToken>"
            self.reply(200, head.encode() + body + b"</ListBucketResult>")

    return Handler


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--bucket", default="bench")
    ap.add_argument("--prefix", default="big/")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--fail-every", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    a = ap.parse_args()
    if not 0 <= a.keys <= 10 ** DIGITS:
        ap.error(f"--keys: at most {10 ** DIGITS}")
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port),
                                          make_handler(Keys(a.prefix, a.keys), a.bucket, a.fail_every,
                                                       a.delay_ms / 1000))
    srv.daemon_threads = True
    print(f"listening on http://127.0.0.1:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
