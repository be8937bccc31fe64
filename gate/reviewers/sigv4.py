"""AWS Signature Version 4 for one request, from the standard AWS environment.

Why our own signer rather than ``httpx-auth``: the gate needs one function of
plain values (method, URL, headers, body, credentials, clock) that returns the
headers to add, with no dependency on how the request is sent, and with the
clock injectable so that the tests can check it against AWS's published
SigV4 test vectors and against botocore (the official implementation, a
test-only dependency) byte for byte. It is sixty lines of hashing, and the
alternative would add a dependency to the image for them.

Canonical form (AWS's "Create a canonical request"): the URI path as sent,
percent-encoded once more (every service but S3 encodes twice, which is what
botocore does for the Bedrock runtime: the model id is encoded in the URL,
and the canonical path encodes that again); the query decoded and re-encoded,
sorted by key then value; header names lower-cased, values trimmed with inner
runs of spaces collapsed, same-name values joined with commas; the payload's
SHA-256 in hex.

Credentials come from ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and the
optional ``AWS_SESSION_TOKEN`` (what ``aws-actions/configure-aws-credentials``
exports after its OIDC exchange), region from ``AWS_REGION`` or
``AWS_DEFAULT_REGION``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote, urlsplit

from gate.errors import ConfigError
from gate.providers import AWS_SESSION_TOKEN_ENV, DEFAULT_KEY_ENV, Provider

ALGORITHM = "AWS4-HMAC-SHA256"
ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV = DEFAULT_KEY_ENV[Provider.BEDROCK]
SESSION_TOKEN_ENV = AWS_SESSION_TOKEN_ENV


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    session_token: str | None = None

    def __repr__(self) -> str:  # never show the secret in a traceback or a log
        return f"Credentials(access_key={self.access_key[:4]}..., secret_key=[redacted])"


def credentials_from_env(environ: Mapping[str, str]) -> Credentials:
    """AWS credentials from the standard variables, or a ConfigError naming the missing one."""
    values: dict[str, str] = {}
    for name in (ACCESS_KEY_ENV, SECRET_KEY_ENV, SESSION_TOKEN_ENV):
        raw = environ.get(name, "")
        value = raw.strip()
        if value and (not value.isascii() or not value.isprintable()):
            raise ConfigError(
                f"{name} holds control or non-ASCII characters; set it to the credential "
                "exactly as AWS issued it"
            )
        values[name] = value
    for name in (ACCESS_KEY_ENV, SECRET_KEY_ENV):
        if not values[name]:
            raise ConfigError(
                f"the bedrock provider signs requests with AWS credentials, and {name} is "
                "not set: run aws-actions/configure-aws-credentials (OIDC) in an earlier "
                "step, or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
    return Credentials(
        access_key=values[ACCESS_KEY_ENV],
        secret_key=values[SECRET_KEY_ENV],
        session_token=values[SESSION_TOKEN_ENV] or None,
    )


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def canonical_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    encoded = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def canonical_headers(headers: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """(canonical header block, signed header names) for ``headers``."""
    merged: dict[str, list[str]] = {}
    for name, value in headers:
        merged.setdefault(name.strip().lower(), []).append(" ".join(value.split()))
    names = sorted(merged)
    block = "".join(f"{name}:{','.join(merged[name])}\n" for name in names)
    return block, ";".join(names)


def sign(
    *,
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    credentials: Credentials,
    region: str,
    service: str,
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers to add (``x-amz-date``, maybe ``x-amz-security-token``, ``authorization``).

    ``headers`` are the request's headers to sign; ``host`` is added from the
    URL when absent. Every header passed in is signed.
    """
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    parts = urlsplit(url)
    added: dict[str, str] = {"x-amz-date": amz_date}
    if credentials.session_token:
        added["x-amz-security-token"] = credentials.session_token
    signed = [(k, v) for k, v in headers if k.lower() not in added]
    if not any(k.lower() == "host" for k, _ in signed):
        signed.append(("host", parts.netloc))
    signed.extend(added.items())
    header_block, signed_names = canonical_headers(signed)
    canonical = "\n".join(
        [
            method.upper(),
            quote(parts.path or "/", safe="/~"),
            canonical_query(parts.query),
            header_block,
            signed_names,
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        [ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()]
    )
    key = _hmac(f"AWS4{credentials.secret_key}".encode(), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    added["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={signed_names}, Signature={signature}"
    )
    return added
