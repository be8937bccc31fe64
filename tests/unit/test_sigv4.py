"""gate.reviewers.sigv4 against AWS's published SigV4 test vectors and botocore (the oracle)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.errors import ConfigError
from gate.providers import region_from_env
from gate.reviewers.sigv4 import Credentials, credentials_from_env, sign

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "aws4_testsuite.json").read_text("utf-8")
)["vectors"]
SUITE_CREDS = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
SUITE_TIME = datetime(2015, 8, 30, 12, 36, tzinfo=UTC)


def parse_req(text: str) -> tuple[str, str, list[tuple[str, str]], bytes]:
    head, _, body = text.partition("\n\n")
    lines = head.split("\n")
    method, _, rest = lines[0].partition(" ")
    target = rest.rsplit(" ", 1)[0]
    headers = [(n, v) for n, _, v in (line.partition(":") for line in lines[1:] if line)]
    return method, target, headers, body.encode("utf-8")


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_published_vectors(vector: dict[str, str]) -> None:
    method, target, headers, body = parse_req(vector["req"])
    token = next((v for n, v in headers if n.lower() == "x-amz-security-token"), None)
    creds = Credentials(*SUITE_CREDS, session_token=token)
    kept = [(n, v) for n, v in headers if n.lower() not in ("x-amz-date", "x-amz-security-token")]
    added = sign(
        method=method,
        url="https://example.amazonaws.com" + target,
        headers=kept,
        body=body,
        credentials=creds,
        region="us-east-1",
        service="service",
        now=SUITE_TIME,
    )
    assert added["authorization"] == vector["authz"]
    assert added["x-amz-date"] == "20150830T123600Z"


def botocore_sign(
    url: str, headers: list[tuple[str, str]], body: bytes, creds: Credentials, when: datetime
) -> dict[str, str]:
    from unittest import mock

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials

    request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    auth = SigV4Auth(
        BotoCredentials(creds.access_key, creds.secret_key, creds.session_token),
        "bedrock",
        "eu-west-3",
    )
    with mock.patch("botocore.auth.get_current_datetime", return_value=when.replace(tzinfo=None)):
        auth.add_auth(request)
    return {k.lower(): v for k, v in request.headers.items()}


MODEL_IDS = st.sampled_from(
    [
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        "arn:aws:bedrock:eu-west-3:123456789012:inference-profile/eu.meta.llama3",
        "mistral.mistral-large-2407-v1:0",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    model=MODEL_IDS,
    body=st.binary(max_size=64),
    token=st.none() | st.text("abcdef0123456789/+=", min_size=8, max_size=40),
    accept=st.sampled_from(["application/vnd.amazon.eventstream", "*/*"]),
    seconds=st.integers(0, 2_000_000_000),
)
def test_same_signature_as_botocore(
    model: str, body: bytes, token: str | None, accept: str, seconds: int
) -> None:
    """The Bedrock request as the gate builds it is signed exactly as botocore signs it."""
    url = (
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/"
        + quote(model, safe="")
        + "/converse-stream"
    )
    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    when = datetime.fromtimestamp(seconds, tz=UTC)
    headers = [("content-type", "application/json"), ("accept", accept)]
    ours = sign(
        method="POST",
        url=url,
        headers=headers,
        body=body,
        credentials=creds,
        region="eu-west-3",
        service="bedrock",
        now=when,
    )
    theirs = botocore_sign(url, headers, body, creds, when)
    assert ours["authorization"] == theirs["authorization"]
    assert ours["x-amz-date"] == theirs["x-amz-date"]
    assert ours.get("x-amz-security-token") == theirs.get("x-amz-security-token")


def test_credentials_from_env_names_the_missing_variable() -> None:
    with pytest.raises(ConfigError, match="AWS_SECRET_ACCESS_KEY"):
        credentials_from_env({"AWS_ACCESS_KEY_ID": "AKID"})
    creds = credentials_from_env(
        {"AWS_ACCESS_KEY_ID": " AKID\n", "AWS_SECRET_ACCESS_KEY": "s3cret", "AWS_SESSION_TOKEN": ""}
    )
    assert creds == Credentials("AKID", "s3cret", None)
    assert "s3cret" not in repr(creds)


@pytest.mark.parametrize("bad", ["se\x00cret", "sécret", "a\nb"])
def test_credentials_refuse_control_and_non_ascii_without_echo(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        credentials_from_env({"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": bad})
    assert bad.strip() not in str(info.value)
    assert "AWS_SECRET_ACCESS_KEY" in str(info.value)


def test_region_order() -> None:
    assert region_from_env({"AWS_DEFAULT_REGION": "b", "AWS_REGION": "a"}) == "a"
    assert region_from_env({"AWS_DEFAULT_REGION": "b"}) == "b"
    assert region_from_env({}) is None
