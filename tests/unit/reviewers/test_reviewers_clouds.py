"""The clouds' stream readers on edge cases of their formats, fed directly (no socket).

Bedrock: the simulator's frames decode the same with botocore's own decoder (the
oracle); an exception frame wins wherever it comes; completeness needs
messageStop, then metadata, then nothing. Azure: a content filter that fired, on
any chunk and any category, blocks as ``content_filter``. Responses: the
terminal events and what may follow them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gate.decide.attempt import EndReason
from gate.lab.sim import SIM_EXTRAS, SimResponse, render_events
from gate.reviewers import azure_openai, bedrock, openai_responses
from gate.reviewers.base import Exchange, Failure, Framing, Reply
from gate.reviewers.eventstream import encode_frame
from gate.reviewers.settings import ReviewerSettings

botocore_es = pytest.importorskip("botocore.eventstream")
ANSWER = "Reviewed: fine, ship it."


def settings(provider: str, **values: Any) -> ReviewerSettings:
    return ReviewerSettings(
        provider=provider,
        model="m",
        base_url="http://127.0.0.1:9",
        **{**SIM_EXTRAS.get(provider, {}), **values},
    )


def exchange(raw: bytes, content_type: str) -> Exchange:
    return Exchange(
        status=200,
        headers={"content-type": content_type},
        raw=raw,
        framing=Framing.CHUNKED,
        failure=Failure.NONE,
        failure_detail="",
        end_reason=EndReason.TRAILER,
        retryable=False,
        elapsed_s=0.0,
        first_byte_s=0.0,
    )


def judge(module: Any, provider: str, parts: list[bytes], chunk: int | None = None) -> Reply:
    stream = module.Stream(settings(provider))
    raw = b"".join(parts)
    pieces = [raw[i : i + chunk] for i in range(0, len(raw), chunk)] if chunk else parts
    for piece in pieces:
        stream.feed(piece)
    kind = bedrock.MEDIA_TYPE if module is bedrock else "text/event-stream"
    reply: Reply = stream.conclude(exchange(raw, kind))
    return reply


# --- bedrock ----------------------------------------------------------------------


def frames(**shape: Any) -> list[bytes]:
    return render_events("bedrock", ANSWER, SimResponse(piece_size=6, **shape))


def test_bedrock_sim_frames_decode_the_same_with_botocore() -> None:
    parts = frames()
    buffer = botocore_es.EventStreamBuffer()
    buffer.add_data(b"".join(parts))
    theirs = [(m.headers[":event-type"], json.loads(m.payload)) for m in buffer]
    from gate.reviewers.eventstream import EventStreamDecoder

    ours = [
        (f.event_type, json.loads(f.payload)) for f in EventStreamDecoder().feed(b"".join(parts))
    ]
    assert ours == theirs
    assert [name for name, _ in theirs][-2:] == ["messageStop", "metadata"]


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_bedrock_healthy_is_sealed_whatever_the_chunking(chunk: int | None) -> None:
    reply = judge(bedrock, "bedrock", frames(), chunk)
    assert reply.complete, reply.detail
    assert reply.content == ANSWER
    assert reply.usage["outputTokens"] > 0


EXCEPTION = encode_frame(
    {
        ":exception-type": "validationException",
        ":content-type": "application/json",
        ":message-type": "exception",
    },
    b'{"message":"bad"}',
)


@pytest.mark.parametrize("position", range(len(frames()) + 1))
def test_bedrock_exception_frame_wins_anywhere(position: int) -> None:
    parts = frames()
    reply = judge(bedrock, "bedrock", [*parts[:position], EXCEPTION, *parts[position:]])
    assert not reply.complete
    assert reply.reason == "error_frame"
    assert "validationException" in reply.detail
    assert not reply.retryable


@pytest.mark.parametrize("kind", ["throttlingException", "serviceUnavailableException"])
def test_bedrock_transient_exceptions_are_retried(kind: str) -> None:
    frame = encode_frame({":exception-type": kind, ":message-type": "exception"}, b"{}")
    reply = judge(bedrock, "bedrock", [*frames()[:2], frame])
    assert reply.reason == "error_frame"
    assert reply.retryable


@pytest.mark.parametrize("keep", range(len(frames())))
def test_bedrock_stream_cut_at_every_frame_boundary_is_incomplete(keep: int) -> None:
    reply = judge(bedrock, "bedrock", frames()[:keep])
    assert not reply.complete
    expected = "missing_metadata" if keep == len(frames()) - 1 else "missing_message_stop"
    assert reply.reason == expected
    assert reply.retryable


def test_bedrock_cut_inside_a_frame_and_a_flip_block() -> None:
    raw = b"".join(frames())
    for cut in range(1, len(raw)):
        reply = judge(bedrock, "bedrock", [raw[:cut]])
        assert not reply.complete, cut
    flipped = []
    for at in range(len(raw)):
        bad = bytearray(raw)
        bad[at] ^= 0x01
        reply = judge(bedrock, "bedrock", [bytes(bad)])
        assert not reply.complete, at
        flipped.append(reply.reason)
    assert set(flipped) <= {"eventstream_crc", "eventstream_malformed", "eventstream_cut"}


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}}),
            "malformed_event",
        ),
        (("metadata", {"usage": {}}), "malformed_event"),
        (("someFutureEvent", {}), "malformed_event"),
    ],
)
def test_bedrock_nothing_may_follow_metadata(
    extra: tuple[str, dict[str, Any]], reason: str
) -> None:
    name, payload = extra
    frame = encode_frame(
        {":event-type": name, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(payload).encode(),
    )
    reply = judge(bedrock, "bedrock", [*frames(), frame])
    assert reply.reason == reason


def test_bedrock_stop_reasons() -> None:
    assert judge(bedrock, "bedrock", frames(finish="length")).reason == "token_exhaustion"
    assert judge(bedrock, "bedrock", frames(finish="refusal")).reason == "refusal"
    other = judge(bedrock, "bedrock", frames(provider_finish="tool_use"))
    assert other.reason == "unexpected_finish"
    assert judge(bedrock, "bedrock", frames(finish="none")).reason == "malformed_event"


def test_bedrock_signs_with_the_session_token_and_redacts_both_secrets() -> None:
    from gate.safe import redact

    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SESSION_TOKEN": "SESSIONTOKENVALUE123"}
    with redact.scope("SECRETKEYVALUE123"):
        request = bedrock.build_request(
            settings("bedrock", api_key="SECRETKEYVALUE123"), system="s", user="u", environ=env
        )
        assert redact.redact("x SESSIONTOKENVALUE123 y") == "x [redacted] y"
    assert request.headers["x-amz-security-token"] == "SESSIONTOKENVALUE123"
    assert "/us-east-1/bedrock/aws4_request" in request.headers["authorization"]
    assert "SECRETKEYVALUE123" not in json.dumps(dict(request.headers))


# --- azure ------------------------------------------------------------------------


def azure_events(**shape: Any) -> list[bytes]:
    return render_events("azure-openai", ANSWER, SimResponse(piece_size=6, **shape))


def test_azure_healthy_with_its_quirks_is_sealed() -> None:
    events = azure_events()
    assert b"prompt_filter_results" in events[0]
    assert b'"choices":[]' in events[0]
    reply = judge(azure_openai, "azure-openai", events)
    assert reply.complete, reply.detail
    assert reply.content == ANSWER
    assert reply.request_id == "chatcmpl-sim"  # the first chunk's empty id is no id


def _fire(event: bytes, where: str, category: str) -> bytes:
    chunk = json.loads(event[len(b"data: ") :])
    if where == "prompt":
        chunk["prompt_filter_results"][0]["content_filter_results"][category]["filtered"] = True
    else:
        chunk["choices"][0]["content_filter_results"] = {category: {"filtered": True}}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@pytest.mark.parametrize("category", ["hate", "violence"])
@pytest.mark.parametrize("index", [0, 2, 3])
def test_azure_any_fired_filter_blocks_as_content_filter(index: int, category: str) -> None:
    events = azure_events()
    events[index] = _fire(events[index], "prompt" if index == 0 else "choice", category)
    reply = judge(azure_openai, "azure-openai", events)
    assert not reply.complete
    assert reply.reason == "content_filter"
    assert category in reply.detail
    assert not reply.retryable


def test_azure_content_filter_finish_has_its_own_reason() -> None:
    reply = judge(azure_openai, "azure-openai", azure_events(finish="refusal"))
    assert reply.reason == "content_filter"
    assert reply.provider_finish_reason == "content_filter"


@pytest.mark.parametrize(
    ("deployment", "version", "auth", "path", "header"),
    [
        (
            "dep",
            None,
            None,
            "/openai/deployments/dep/chat/completions?api-version=2024-10-21",
            "api-key",
        ),
        (
            "dep",
            "2025-01-01-preview",
            "entra",
            "/openai/deployments/dep/chat/completions?api-version=2025-01-01-preview",
            "authorization",
        ),
        (None, None, None, "/openai/v1/chat/completions", "authorization"),
        (
            None,
            "preview",
            "entra",
            "/openai/v1/chat/completions?api-version=preview",
            "authorization",
        ),
    ],
)
def test_azure_paths_and_auth(
    deployment: str | None, version: str | None, auth: str | None, path: str, header: str
) -> None:
    values = {"deployment": deployment, "api_version": version, "auth": auth, "api_key": "k"}
    request = azure_openai.build_request(settings("azure-openai", **values), system="s", user="u")
    assert request.url == "http://127.0.0.1:9" + path
    assert header in request.headers
    assert {"api-key", "authorization"} - {header} & set(request.headers) == set()


# --- openai-responses ----------------------------------------------------------------


def responses(**shape: Any) -> list[bytes]:
    return render_events("openai-responses", ANSWER, SimResponse(piece_size=6, **shape))


def test_responses_terminal_events() -> None:
    assert judge(openai_responses, "openai-responses", responses()).complete
    assert judge(openai_responses, "openai-responses", responses(finish="length")).reason == (
        "token_exhaustion"
    )
    assert judge(openai_responses, "openai-responses", responses(finish="refusal")).reason == (
        "refusal"
    )
    cut = judge(openai_responses, "openai-responses", responses(end_marker=False))
    assert cut.reason == "missing_response_completed"
    assert cut.retryable


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (_event("response.output_text.delta", delta="more"), "malformed_event"),
        (b"data: [DONE]\n\ndata: [DONE]\n\n", "malformed_event"),  # one marker, not two
        (b"data: [DONE] \n\n", "malformed_event"),  # exactly the marker (issue 23)
        (b"event: done\ndata: [DONE]\n\n", "malformed_event"),
        (_event("response.failed", response={"status": "failed", "error": None}), "error_frame"),
        (_event("error", code="server_error", message="boom"), "error_frame"),
    ],
)
def test_responses_nothing_may_follow_the_terminal_event(extra: bytes, reason: str) -> None:
    reply = judge(openai_responses, "openai-responses", [*responses(), extra])
    assert reply.reason == reason


def test_responses_failed_is_an_error_frame_and_status_must_agree() -> None:
    events = responses(end_marker=False)
    failed = _event(
        "response.failed",
        response={"status": "failed", "error": {"code": "server_error", "message": "boom"}},
    )
    reply = judge(openai_responses, "openai-responses", [*events, failed])
    assert reply.reason == "error_frame"
    assert reply.retryable
    lying = _event("response.completed", response={"status": "incomplete"})
    assert judge(openai_responses, "openai-responses", [*events, lying]).reason == "malformed_event"
    renamed = responses()
    renamed[-1] = renamed[-1].replace(b"event: response.completed", b"event: response.done", 1)
    assert judge(openai_responses, "openai-responses", renamed).reason == "malformed_event"


def test_responses_refusal_part_makes_a_completed_answer_a_refusal() -> None:
    events = responses()
    refusal = _event("response.refusal.delta", delta="I can't review this.")
    reply = judge(openai_responses, "openai-responses", [*events[:5], refusal, *events[5:]])
    assert reply.reason == "refusal"


# --- endpoints and settings ------------------------------------------------------------


def test_cloud_base_urls() -> None:
    from gate.providers import cloud_base_url

    assert cloud_base_url("bedrock", region="eu-west-1") == (
        "https://bedrock-runtime.eu-west-1.amazonaws.com"
    )
    env = {"AWS_REGION": "", "AWS_DEFAULT_REGION": "ap-south-1"}
    assert cloud_base_url("bedrock", environ=env).endswith(".ap-south-1.amazonaws.com")
    assert cloud_base_url("bedrock", environ={}) == ""
    assert (
        cloud_base_url("vertex", location="us-east5")
        == "https://us-east5-aiplatform.googleapis.com"
    )
    assert cloud_base_url("vertex", location="global") == "https://aiplatform.googleapis.com"
    assert cloud_base_url("azure-openai") == ""


def test_config_without_an_endpoint_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from gate.config.model import ReviewerConfig
    from gate.errors import ConfigError

    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError) as caught:
        ReviewerSettings.from_config(ReviewerConfig(provider="bedrock", model="m"), "k")
    assert "region" in str(caught.value)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    got = ReviewerSettings.from_config(ReviewerConfig(provider="bedrock", model="m"), "k")
    assert got.base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"provider": "bedrock", "region": "us-east-1.evil.example/"}, "config_invalid"),
        ({"provider": "vertex", "location": "us-east5", "project": "a/b"}, "config_invalid"),
        ({"provider": "vertex", "location": "us-east5"}, "config_invalid"),
        ({"provider": "vertex", "project": "proj-123"}, "config_invalid"),
        ({"provider": "azure-openai", "deployment": "a/../b"}, "config_invalid"),
        ({"provider": "azure-openai", "auth": "oauth"}, "config_invalid"),
        (
            {
                "provider": "vertex",
                "project": "proj-123",
                "location": "us-east5",
                "base_url": "https://us-east5-aiplatform.googleapis.com",
            },
            "missing_api_key",
        ),
        (
            {"provider": "azure-openai", "base_url": "https://r.openai.azure.com"},
            "missing_api_key",
        ),
    ],
)
def test_cloud_settings_are_refused_before_any_request(values: dict[str, Any], reason: str) -> None:
    from gate.errors import UsageError
    from gate.reviewers.settings import validate

    merged = {"model": "m", "base_url": "http://127.0.0.1:9", **values}
    with pytest.raises(UsageError) as caught:
        validate(ReviewerSettings(**merged))
    assert caught.value.reason == reason


def test_bedrock_with_a_key_but_no_key_id_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from gate.errors import UsageError
    from gate.reviewers.settings import validate

    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    with pytest.raises(UsageError) as caught:
        validate(settings("bedrock", api_key="secret"))
    assert caught.value.reason == "missing_api_key"
    assert "AWS_ACCESS_KEY_ID" in str(caught.value)


def test_bedrock_a_200_that_is_not_an_event_stream_says_so() -> None:
    stream = bedrock.Stream(settings("bedrock"))
    body = b'{"message": "not an event stream"}'
    stream.feed(body)
    reply = stream.conclude(exchange(body, "application/json"))
    assert reply.reason == "not_event_stream"
    assert not reply.retryable


def test_the_action_masks_every_cloud_secret_from_the_start() -> None:
    from gate.action.inputs import ActionInputs

    env = {
        "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
        "AWS_SESSION_TOKEN": "aws-session-token-value",
        "AZURE_OPENAI_AD_TOKEN": "azure-entra-token-value",
        "GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.google-token-value",
        "AZURE_OPENAI_API_KEY": "azure-key-value",
    }
    secrets = ActionInputs.from_env(env).secrets(env)
    assert set(env.values()) <= set(secrets)
