"""Reviewer settings validation, secrets, backoff and Retry-After parsing."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from gate.decide.attempt import Attempt, EndReason
from gate.errors import UsageError
from gate.providers import DEFAULT_BASE_URLS, DEFAULT_KEY_ENV
from gate.reviewers.base import one_line, parse_retry_after
from gate.reviewers.settings import ReviewerSettings, base_url_problem, needs_api_key, validate
from gate.reviewers.transport import attempt_line, backoff_delay, review

LOCAL = ReviewerSettings(provider="openai", model="llama3", base_url="http://127.0.0.1:11434/v1")


def test_defaults_cover_every_provider() -> None:
    assert (
        set(DEFAULT_BASE_URLS)
        == set(DEFAULT_KEY_ENV)
        == {
            "openai",
            "anthropic",
            "gemini",
            "mc1",
            "openai-responses",
            "azure-openai",
            "bedrock",
            "vertex",
        }
    )
    assert DEFAULT_KEY_ENV["anthropic"] == "ANTHROPIC_API_KEY"
    assert DEFAULT_KEY_ENV["mc1"] == "REVIEW_GATE_API_KEY"
    assert LOCAL.temperature == 0.0
    assert LOCAL.max_tokens == 4096


def test_a_local_openai_compatible_server_needs_no_key() -> None:
    validate(LOCAL)


@pytest.mark.parametrize(
    ("change", "reason", "names"),
    [
        ({"provider": "cohere"}, "unknown_provider", "openai, anthropic, gemini, mc1"),
        ({"model": " "}, "missing_model", "model"),
        ({"base_url": "ftp://x"}, "bad_base_url", "base_url"),
        ({"base_url": "https://user:pw@host/v1"}, "bad_base_url", "OPENAI_API_KEY"),
        ({"base_url": "https://api.openai.com/v1"}, "missing_api_key", "OPENAI_API_KEY"),
        ({"deadline": 0}, "usage", "deadline"),
        ({"read_timeout": float("nan")}, "usage", "read_timeout"),
        ({"max_tokens": 0}, "usage", "max_tokens"),
        ({"max_tokens": True}, "usage", "max_tokens"),
        ({"attempts": 0}, "usage", "attempts"),
        ({"temperature": 3.0}, "usage", "temperature"),
        ({"backoff_cap": -1.0}, "usage", "backoff_cap"),
        ({"max_response_bytes": 0}, "usage", "max_response_bytes"),
    ],
)
def test_invalid_settings_name_the_setting(
    change: dict[str, object], reason: str, names: str
) -> None:
    with pytest.raises(UsageError) as caught:
        validate(replace(LOCAL, **change))  # type: ignore[arg-type]
    assert caught.value.reason == reason
    assert names in caught.value.message


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_official_endpoints_need_a_key(provider: str) -> None:
    settings = ReviewerSettings(provider=provider, model="m", base_url=DEFAULT_BASE_URLS[provider])
    with pytest.raises(UsageError) as caught:
        validate(settings)
    assert caught.value.reason == "missing_api_key"
    assert DEFAULT_KEY_ENV[provider] in caught.value.message
    validate(replace(settings, api_key="k"))


def test_mc1_needs_a_base_url_but_no_key_or_model() -> None:
    settings = ReviewerSettings(provider="mc1", model="", base_url=DEFAULT_BASE_URLS["mc1"])
    with pytest.raises(UsageError) as caught:
        validate(settings)
    assert caught.value.reason == "bad_base_url"
    validate(replace(settings, base_url="https://reviewer.internal/review"))


def test_review_raises_usage_error_before_any_network() -> None:
    with pytest.raises(UsageError):
        review(replace(LOCAL, provider="nope"), system="s", user="u")


def test_the_key_is_not_in_the_repr() -> None:
    settings = replace(LOCAL, api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(settings)
    assert "sk-very-secret" not in str(settings)


def test_one_line_redacts_and_bounds() -> None:
    assert one_line("bad key sk-1\n  here", "sk-1") == "bad key [redacted] here"
    assert len(one_line("x" * 1000)) == 400
    assert one_line("bad \ud800 text") == "bad ? text"  # always printable


def test_backoff_is_exponential_jittered_and_capped() -> None:
    settings = replace(LOCAL, backoff_base=1.0, backoff_cap=5.0, retry_after_cap=60.0)
    rng = random.Random(1)
    for number, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        delays = {backoff_delay(settings, number, None, rng) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered


def test_retry_after_wins_and_is_capped() -> None:
    settings = replace(LOCAL, backoff_base=100.0, retry_after_cap=60.0)
    rng = random.Random(1)
    assert backoff_delay(settings, 1, 3.0, rng) == 3.0
    assert backoff_delay(settings, 1, 3600.0, rng) == 60.0


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "5"}, 5.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Thu, 01 Jan 1970 00:01:40 GMT"}, 60.0),  # now = 40 s after epoch
        ({"retry-after": "-3"}, None),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    assert parse_retry_after(headers, now=40.0) == seconds


def test_attempt_line_names_reason_and_end() -> None:
    attempt = Attempt(
        number=2,
        provider="openai",
        complete=False,
        reason="connection_cut",
        detail="the connection closed after 10 body bytes",
        end_reason=EndReason.SOCKET_CLOSE,
        http_status=200,
        bytes_received=10,
    )
    line = attempt_line(attempt, 3)
    assert line.startswith("attempt 2/3 openai HTTP 200: incomplete: connection_cut (socket_close)")
    assert "the connection closed" in line


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:99999/v1", "Port out of range"),
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:abc/v1", "Port could not be cast"),
        ("http://127.0.0.1:0/v1", "port 0"),
        ("http:///v1", "no host"),
        ("127.0.0.1:11434/v1", "not an http(s) URL"),
    ],
)
def test_a_base_url_urllib_cannot_read_is_a_usage_error_not_a_crash(url: str, problem: str) -> None:
    found = base_url_problem(url)
    assert found is not None
    assert problem in found
    bad = replace(LOCAL, base_url=url)
    assert needs_api_key(bad) is False  # never raises, whatever the URL
    with pytest.raises(UsageError) as caught:
        validate(bad)
    assert caught.value.reason == "bad_base_url"
    assert problem in caught.value.message
    assert base_url_problem("http://[::1]:8080/v1") is None
