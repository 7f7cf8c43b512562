#!/usr/bin/env python3
"""An independent AWS Signature Version 4 signer for S3, for Tests/ObjectStorageTests
(SigV4BotocoreTests): reads a JSON list of requests (from the file named, or stdin) and prints, for each, what
botocore's S3SigV4Auth / S3SigV4QueryAuth make of it. Chunk signatures (which botocore does not
compute) follow the S3 API reference's chunked-upload page with hmac/hashlib directly.

Each request: {"method", "host", "path" (decoded), "query": [[name, value]...], "headers":
[[name, value]...], "payload": {"body": base64} | {"unsigned": true} | {"streaming": [base64 chunk...]},
"date": "YYYYMMDDTHHMMSSZ", "region", "access_key", "secret_key", "token" (or null), "presign_expires" (or null)}
Output per request: {"authorization", "x_amz_content_sha256", "presigned_signature", "chunk_signatures"}
"""
import base64, datetime, hashlib, hmac, json, sys
from unittest import mock
from urllib.parse import quote, urlsplit, parse_qs

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


class FixedPayload(S3SigV4Auth):
    """S3SigV4Auth with the payload hash set by the request (UNSIGNED-PAYLOAD or streaming)."""
    def __init__(self, credentials, region, fixed):
        super().__init__(credentials, "s3", region)
        self.fixed = fixed

    def payload(self, request):
        return self.fixed if self.fixed is not None else super().payload(request)


def url(case, query):
    encoded = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in query)
    return f"http://{case['host']}{quote(case['path'], safe='/~')}" + (f"?{encoded}" if encoded else "")


def sign(case):
    when = datetime.datetime.strptime(case["date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    credentials = Credentials(case["access_key"], case["secret_key"], case["token"])
    payload = case["payload"]
    body = base64.b64decode(payload["body"]) if "body" in payload else b""
    fixed = "UNSIGNED-PAYLOAD" if payload.get("unsigned") else ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD" if "streaming" in payload else None)
    request = AWSRequest(method=case["method"], url=url(case, case["query"]), data=body)
    for name, value in case["headers"]:
        request.headers.add_header(name, value)
    with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
        FixedPayload(credentials, case["region"], fixed).add_auth(request)
    out = {"authorization": request.headers["Authorization"], "x_amz_content_sha256": request.headers["X-Amz-Content-SHA256"],
           "presigned_signature": None, "chunk_signatures": []}
    if case.get("presign_expires"):
        # botocore's presigner keeps the first value of a repeated name; the test sends those alone.
        first = {}
        for name, value in case["query"]:
            first.setdefault(name, value)
        presign = AWSRequest(method=case["method"], url=url(case, list(first.items())))
        with mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
            S3SigV4QueryAuth(credentials, "s3", case["region"], expires=case["presign_expires"]).add_auth(presign)
        out["presigned_signature"] = parse_qs(urlsplit(presign.url).query)["X-Amz-Signature"][0]
    if "streaming" in payload:
        day = case["date"][:8]
        key = ("AWS4" + case["secret_key"]).encode()
        for part in (day, case["region"], "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        previous = out["authorization"].rsplit("Signature=", 1)[1]
        scope = f"{day}/{case['region']}/s3/aws4_request"
        for chunk in [base64.b64decode(c) for c in payload["streaming"]] + [b""]:
            text = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", case["date"], scope, previous,
                              hashlib.sha256(b"").hexdigest(), hashlib.sha256(chunk).hexdigest()])
            previous = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
            out["chunk_signatures"].append(previous)
    return out


cases = json.load(open(sys.argv[1])) if len(sys.argv) > 1 else json.load(sys.stdin)
json.dump([sign(case) for case in cases], sys.stdout)
