"""Amazon Bedrock ``ConverseStream``: SigV4-signed, answered in AWS event-stream frames.

Request: ``POST {base_url}/model/{quote(modelId, safe='')}/converse-stream``
(``base_url`` is ``https://bedrock-runtime.{region}.amazonaws.com``) with the
JSON body ``{messages, system, inferenceConfig: {maxTokens, temperature}}``,
signed with AWS Signature Version 4 (:mod:`gate.reviewers.sigv4`, service
``bedrock``) from the standard AWS variables: the secret key is the
settings' key (``AWS_SECRET_ACCESS_KEY``), the key id and the optional session
token are read beside it, and both secrets are registered for redaction while
the attempt runs. Without a key (a local test server) nothing is signed.

Answer: ``application/vnd.amazon.eventstream`` binary frames, decoded strictly
by :class:`~gate.reviewers.eventstream.EventStreamDecoder` (every prelude and
message CRC checked). Events: ``messageStart``, ``contentBlockStart``,
``contentBlockDelta`` (``delta.text`` is content; reasoning and tool deltas
are not), ``contentBlockStop``, ``messageStop`` (``stopReason``), then
``metadata`` (usage). Complete only with ``messageStop`` carrying a stop
reason, then ``metadata``, then a clean end of body with no byte of an
unfinished frame left. An ``exception`` (or ``error``) frame is an error frame
and wins over everything, as the precedence rule of
:mod:`~gate.reviewers.stream` says; a CRC mismatch (``eventstream_crc``,
retried: the bytes did not arrive as sent), a malformed frame
(``eventstream_malformed``) or a cut inside a frame (``eventstream_cut``,
retried) blocks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from gate.decide.attempt import EndReason, FinishReason
from gate.errors import TransportError, UsageError
from gate.providers import Provider, region_from_env
from gate.reviewers import eventstream, sigv4
from gate.reviewers.base import Exchange, HttpRequest, Reply, one_line
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.stream import ErrorFrame, SSEStream, int_fields, load_object, transient_error
from gate.safe import redact

NAME = Provider.BEDROCK
SERVICE = "bedrock"
MEDIA_TYPE = "application/vnd.amazon.eventstream"

_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "guardrail_intervened": FinishReason.REFUSAL,
    "content_filtered": FinishReason.REFUSAL,
}
#: Exceptions that name a passing condition (AWS retries these itself).
_TRANSIENT = frozenset(
    {
        "throttlingException",
        "serviceUnavailableException",
        "internalServerException",
        "modelStreamErrorException",
        "modelNotReadyException",
    }
)
_RETRYABLE_FAULTS = frozenset({"eventstream_crc", "eventstream_cut"})


def request_url(settings: ReviewerSettings) -> str:
    model = quote(settings.model, safe="")
    return f"{settings.base_url.rstrip('/')}/model/{model}/converse-stream"


def request_body(settings: ReviewerSettings, *, system: str, user: str) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": [{"text": user}]}],
        "system": [{"text": system}],
        "inferenceConfig": {
            "maxTokens": settings.max_tokens,
            "temperature": settings.temperature,
        },
    }


def signing_region(settings: ReviewerSettings, environ: Mapping[str, str]) -> str | None:
    """The region to sign for: the setting, the AWS variables, else the endpoint's host."""
    if settings.region:
        return settings.region
    from_env = region_from_env(environ)
    if from_env:
        return from_env
    host = urlsplit(settings.base_url).hostname or ""
    parts = host.split(".")
    if len(parts) == 4 and parts[0] == "bedrock-runtime" and host.endswith(".amazonaws.com"):
        return parts[1]
    return None


def build_request(
    settings: ReviewerSettings,
    *,
    system: str,
    user: str,
    environ: Mapping[str, str] | None = None,
) -> HttpRequest:
    env = os.environ if environ is None else environ
    url = request_url(settings)
    body = json.dumps(request_body(settings, system=system, user=user), ensure_ascii=False)
    raw = body.encode("utf-8")
    headers = {"accept": MEDIA_TYPE, "content-type": "application/json"}
    if settings.api_key:
        access = env.get(sigv4.ACCESS_KEY_ENV, "").strip()
        token = env.get(sigv4.SESSION_TOKEN_ENV, "").strip() or None
        redact.remember(settings.api_key, token)
        region = signing_region(settings, env)
        if not access or not region:
            raise UsageError(
                f"bedrock needs {sigv4.ACCESS_KEY_ENV} and a region (reviewer.region or "
                "AWS_REGION) to sign; run aws-actions/configure-aws-credentials first",
                reason="missing_api_key",
            )
        credentials = sigv4.Credentials(access, settings.api_key, token)
        headers.update(
            sigv4.sign(
                method="POST",
                url=url,
                headers=list(headers.items()),
                body=raw,
                credentials=credentials,
                region=region,
                service=SERVICE,
            )
        )
    return HttpRequest(url=url, headers=headers, body=raw)


class Stream(SSEStream):
    """Decode frames as they come; the SSE core's record-keeping and judgement are reused."""

    PROVIDER = NAME
    END_MARKER = "messageStop, then metadata"
    MISSING_END_REASON = "missing_message_stop"
    REQUEST_ID_HEADERS: tuple[str, ...] = ("x-amzn-requestid", "x-amz-request-id")

    def __init__(self, settings: ReviewerSettings) -> None:
        super().__init__(settings)
        self.decoder = eventstream.EventStreamDecoder()
        self.fault: TransportError | None = None
        self.stopped = False  # messageStop seen
        self.metadata = False  # metadata seen after messageStop

    def feed(self, chunk: bytes) -> None:
        if self.fault is not None:
            return  # past a broken frame nothing can be decoded; the bytes are still kept
        try:
            frames = self.decoder.feed(chunk)
        except TransportError as err:
            self.fault = err
            return
        for frame in frames:
            self.events += 1
            try:
                self.take_frame(frame)
            except TransportError as err:
                self.note_malformed(err.message)
            except (ValueError, RecursionError) as err:
                self.note_malformed(f"malformed event: {type(err).__name__}")

    def take_frame(self, frame: eventstream.Frame) -> None:
        secret = self.settings.api_key
        kind = frame.message_type
        if kind in ("exception", "error"):
            self.note_error(self._error(frame))
            return
        if kind != "event":
            shown = one_line(str(kind), secret, 40)
            self.note_malformed(f"malformed event: a frame of message type {shown!r}")
            return
        name = frame.event_type or ""
        data = load_object(frame.payload.decode("utf-8"))
        if self.metadata:
            self.note_malformed(f"malformed event: {one_line(name, secret, 40)} after metadata")
            return
        if name == "contentBlockStart":
            start = data.get("start")
            use = start.get("toolUse") if isinstance(start, dict) else None
            if use is not None:
                self.note_tool_call(use.get("name") if isinstance(use, dict) else None)
        elif name == "contentBlockDelta":
            delta = data.get("delta")
            if isinstance(delta, dict) and "toolUse" in delta:
                self.note_tool_call(None)
            text = delta.get("text") if isinstance(delta, dict) else None
            if text is not None:
                if not isinstance(text, str):
                    self.note_malformed("malformed event: delta.text is not a string")
                elif self.stopped:
                    self.note_malformed("malformed event: text after messageStop")
                else:
                    self.parts.append(text)
        elif name == "messageStop":
            reason = data.get("stopReason")
            if not isinstance(reason, str) or not reason:
                self.note_malformed("malformed event: messageStop without a stopReason")
                return
            self.stopped = True
            self.note_finish(reason)
        elif name == "metadata":
            if not self.stopped:
                self.note_malformed("malformed event: metadata before messageStop")
                return
            self.metadata = True
            self.end_marker = True
            self.usage = int_fields(data.get("usage"))
        # messageStart, contentBlockStart/Stop and later event types carry no content

    def _error(self, frame: eventstream.Frame) -> ErrorFrame:
        secret = self.settings.api_key
        kind = frame.exception_type or frame.header(":error-code") or "exception"
        message = frame.header(":error-message") or ""
        try:
            value = json.loads(frame.payload.decode("utf-8"))
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            message = value["message"]
        elif not message:
            message = frame.payload.decode("utf-8", "replace")
        return ErrorFrame(
            one_line(kind, secret, 120),
            one_line(message, secret, 200),
            kind in _TRANSIENT or transient_error(kind),
        )

    def conclude(self, exchange: Exchange) -> Reply:
        if exchange.head_refused or self.error is not None or exchange.failure:
            return super().conclude(exchange)
        secret = self.settings.api_key
        finish = self.normalize(self.finish) if self.finish is not None else FinishReason.NONE

        def reply(reason: str, detail: str, *, retry: bool = False) -> Reply:
            return Reply.from_exchange(
                exchange,
                provider=self.PROVIDER,
                reason=reason,
                detail=detail,
                end=EndReason.TRAILER,
                secret=secret,
                request_id=exchange.header(*self.REQUEST_ID_HEADERS),
                retry=retry,
                content=self.content,
                finish=finish,
                provider_finish=self.finish,
                usage=self.usage,
            )

        kind = exchange.headers.get("content-type", "")
        if self.events == 0 and MEDIA_TYPE not in kind:
            return reply(
                "not_event_stream",
                f"the reviewer answered with Content-Type {kind or 'none'!r} and no event-stream "
                f"frames (expected {MEDIA_TYPE}); check base_url and the model id; not retryable",
            )
        fault = self.fault
        if fault is None:
            try:
                self.decoder.close()
            except TransportError as err:
                fault = err
        if fault is not None:
            retry = fault.reason in _RETRYABLE_FAULTS
            advice = "the bytes did not arrive as sent; retryable" if retry else "not retryable"
            return reply(fault.reason, f"{fault.message}; {advice}", retry=retry)
        if self.malformed is not None:
            return super().conclude(exchange)
        if not self.stopped:
            return reply(
                self.MISSING_END_REASON,
                "the event stream ended without messageStop; the answer may be cut; retryable",
                retry=True,
            )
        if not self.metadata:
            return reply(
                "missing_metadata",
                "the event stream ended after messageStop without the metadata frame that "
                "ends a ConverseStream; the answer may be cut; retryable",
                retry=True,
            )

        def judged(reason: str, detail: str, end: EndReason, **rest: Any) -> Reply:
            return Reply.from_exchange(
                exchange,
                provider=self.PROVIDER,
                reason=reason,
                detail=detail,
                end=end,
                secret=secret,
                request_id=exchange.header(*self.REQUEST_ID_HEADERS),
                content=self.content,
                finish=finish,
                provider_finish=self.finish,
                usage=self.usage,
                **rest,
            )

        return self.judge_finish(finish, judged)

    def normalize(self, verbatim: str) -> FinishReason:
        return _FINISH.get(verbatim, FinishReason.OTHER)
