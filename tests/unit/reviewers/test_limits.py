"""Quota and rate-limit signatures, from each provider's documented error body.

The official SDKs are the oracle where they tell the kinds apart: Anthropic's error class
(``PaymentRequiredError``, ``RateLimitError``, ``OverloadedError`` and the spend-limit
classes), OpenAI's ``code`` (both kinds are its ``RateLimitError``), google-genai's
``status``, botocore's parsed error code and its throttling list.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gate.reviewers.limits import Limit, bedrock_error_code, classify

# --- OpenAI (and Azure OpenAI, the Responses API): one 429, two codes ------------------

OPENAI_QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing "
        "details. For more information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
}
OPENAI_RATE = {
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-x on tokens per min "
        "(TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
AZURE_RATE = {
    "error": {
        "code": "429",
        "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API "
        "version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing "
        "tier. Please retry after 6 seconds.",
    }
}

# --- Anthropic ----------------------------------------------------------------------


def anthropic_error(kind: str, message: str, code: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "message": message}
    if code is not None:
        error["details"] = {"error_code": code}
    return {"type": "error", "error": error}


ANTHROPIC_CASES = [
    (529, anthropic_error("overloaded_error", "Overloaded"), Limit.OVERLOADED),
    (
        429,
        anthropic_error(
            "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
        ),
        Limit.RATE,
    ),
    (
        402,
        anthropic_error(
            "billing_error", "There's an issue with your billing or payment information."
        ),
        Limit.QUOTA,
    ),
    (
        400,
        anthropic_error(
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
            "Billing to upgrade or purchase credits.",
        ),
        Limit.QUOTA,
    ),
    (
        429,
        anthropic_error("rate_limit_error", "spend limit", "enforced_spend_limit_reached"),
        Limit.QUOTA,
    ),
    (
        429,
        anthropic_error("rate_limit_error", "spend limit", "contract_spend_limit_reached"),
        Limit.QUOTA,
    ),
]

# --- Gemini (and Vertex) ------------------------------------------------------------


METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_requests"


def gemini_exhausted(quota_id: str | None) -> dict[str, Any]:
    error: dict[str, Any] = {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
    }
    if quota_id is not None:
        error["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": METRIC,
                        "quotaId": quota_id,
                        "quotaDimensions": {"location": "global", "model": "gemini-2.0-flash"},
                        "quotaValue": "200",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43s"},
        ]
    return {"error": error}


@pytest.mark.parametrize(
    ("body", "kind"),
    [(OPENAI_QUOTA, Limit.QUOTA), (OPENAI_RATE, Limit.RATE), (AZURE_RATE, Limit.RATE)],
)
@pytest.mark.parametrize("provider", ["openai", "openai-responses", "azure-openai"])
def test_openai_quota_is_told_from_its_rate_limit_by_the_sdks_code(
    provider: str, body: dict[str, Any], kind: Limit
) -> None:
    import httpx2
    from openai import OpenAI, RateLimitError

    response = httpx2.Response(429, json=body, request=httpx2.Request("POST", "https://x/v1"))
    oracle = OpenAI(api_key="k")._make_status_error_from_response(response)
    assert isinstance(oracle, RateLimitError)  # the SDK's class: the same for both
    expected = Limit.QUOTA if oracle.code == "insufficient_quota" else Limit.RATE
    found = classify(provider, 429, {}, json.dumps(body).encode())
    assert found is not None
    assert found.kind is expected is kind
    assert found.retryable is (kind is not Limit.QUOTA)


@pytest.mark.parametrize(("status", "body", "kind"), ANTHROPIC_CASES)
def test_anthropic_signatures_match_the_sdks_error_classes(
    status: int, body: dict[str, Any], kind: Limit
) -> None:
    import httpx2
    from anthropic import OverloadedError, PaymentRequiredError, RateLimitError
    from anthropic._error_classes import make_status_error

    response = httpx2.Response(status, json=body, request=httpx2.Request("POST", "https://x"))
    oracle = make_status_error("m", body=body, response=response)
    spend = type(oracle).__name__.endswith("SpendLimitReachedError")
    if kind is Limit.OVERLOADED:
        assert isinstance(oracle, OverloadedError)
    elif kind is Limit.RATE:
        assert isinstance(oracle, RateLimitError)
        assert not spend
    elif status == 402 or spend:
        assert isinstance(oracle, PaymentRequiredError) or spend
    found = classify("anthropic", status, {}, json.dumps(body).encode())
    assert found is not None
    assert found.kind is kind


@pytest.mark.parametrize(
    ("quota_id", "kind"),
    [
        (None, Limit.RATE),
        ("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", Limit.RATE),
        ("GenerateRequestsPerDayPerProjectPerModel-FreeTier", Limit.QUOTA),
    ],
)
@pytest.mark.parametrize("provider", ["gemini", "vertex"])
def test_gemini_resource_exhausted_is_a_quota_stop_only_per_day(
    provider: str, quota_id: str | None, kind: Limit
) -> None:
    from google.genai import errors

    body = gemini_exhausted(quota_id)
    oracle = errors.ClientError(429, body)
    assert (oracle.code, oracle.status) == (429, "RESOURCE_EXHAUSTED")
    found = classify(provider, 429, {}, json.dumps(body).encode())
    assert found is not None
    assert found.kind is kind


BEDROCK_CODES = [
    "ThrottlingException",
    "ServiceQuotaExceededException",
    "ModelNotReadyException",
    "ServiceUnavailableException",
    "ValidationException",
    "AccessDeniedException",
]


def _bedrock_model() -> dict[str, Any]:
    import gzip
    from pathlib import Path

    import botocore

    root = Path(botocore.__file__).parent / "data" / "bedrock-runtime"
    [version] = sorted(p for p in root.iterdir() if p.is_dir())[-1:]
    data: dict[str, Any] = json.loads(gzip.decompress((version / "service-2.json.gz").read_bytes()))
    return data


@pytest.mark.parametrize("code", BEDROCK_CODES)
@pytest.mark.parametrize("where", ["header", "body"])
def test_bedrock_codes_read_as_botocore_reads_them(code: str, where: str) -> None:
    from botocore.parsers import RestJSONParser
    from botocore.retries.standard import ThrottledRetryableChecker

    status = _bedrock_model()["shapes"][code]["error"]["httpStatusCode"]
    message = {"message": f"{code} (documented)"}
    if where == "header":
        headers = {
            "x-amzn-errortype": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        }
        body = message
    else:
        headers, body = {}, {"__type": f"com.amazon.bedrock#{code}", **message}
    raw = json.dumps(body).encode()
    parsed = RestJSONParser().parse({"status_code": status, "headers": headers, "body": raw}, None)
    assert parsed["Error"]["Code"] == code == bedrock_error_code(headers, body)
    found = classify("bedrock", status, headers, raw)
    throttled = code in ThrottledRetryableChecker._THROTTLED_ERROR_CODES
    if code == "ServiceQuotaExceededException":
        assert status == 400
        assert not throttled
        assert found is not None
        assert found.kind is Limit.QUOTA
        assert not found.retryable
    elif throttled or code == "ModelNotReadyException":
        assert found is not None
        assert found.kind is Limit.RATE
        assert found.retryable
    elif code == "ServiceUnavailableException":
        assert found is not None
        assert found.kind is Limit.OVERLOADED
        assert found.retryable
    else:
        assert found is None


def test_a_quota_stop_says_who_must_act() -> None:
    found = classify("openai", 429, {}, json.dumps(OPENAI_QUOTA).encode())
    assert found is not None
    advice = found.advice("openai")
    assert "not retried" in advice
    assert "owns that account" in advice
    assert "insufficient_quota" in advice


@pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b"{}", b'{"error": 7}', b"\xff\xfe"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "bedrock", "mc1", "vertex"])
def test_an_unreadable_429_is_a_rate_limit_and_other_statuses_are_nothing(
    provider: str, raw: bytes
) -> None:
    found = classify(provider, 429, {}, raw)
    assert found is not None
    assert found.kind is Limit.RATE
    assert classify(provider, 500, {}, raw) is None
