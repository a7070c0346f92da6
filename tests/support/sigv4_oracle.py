"""botocore's SigV4 signer on the cases tests/unit/test_sigv4.c gives it.

Reads a JSON list of cases from the file named by argv[1]; prints a JSON
list with, per case, the Authorization and X-Amz-Content-SHA256 headers
(header form) or the presigned URL's X-Amz-Signature (query form).
"""

import datetime
import json
import sys
from urllib.parse import parse_qs, urlsplit

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials


def sign(case):
    stamp = datetime.datetime.strptime(case["timestamp"], "%Y%m%dT%H%M%SZ")
    botocore.auth.get_current_datetime = lambda *a, **k: stamp
    creds = Credentials(case["key"], case["secret"], case.get("token"))
    body = bytes.fromhex(case["body_hex"])
    req = AWSRequest(
        method=case["method"], url=case["url"], headers=dict(case["headers"]), data=body
    )
    if case["unsigned_payload"]:
        req.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    if case["presign"]:
        signer = botocore.auth.S3SigV4QueryAuth(
            creds, case["service"], case["region"], expires=case["expires"]
        )
        signer.add_auth(req)
        q = parse_qs(urlsplit(req.url).query, keep_blank_values=True)
        return {"signature": q["X-Amz-Signature"][0], "url": req.url}
    signer = botocore.auth.S3SigV4Auth(creds, case["service"], case["region"])
    signer.add_auth(req)
    return {
        "authorization": req.headers["Authorization"],
        "content_sha256": req.headers["X-Amz-Content-SHA256"],
        "token": req.headers.get("X-Amz-Security-Token"),
    }


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    json.dump([sign(c) for c in cases], sys.stdout)


if __name__ == "__main__":
    main()
