"""The common core of the three server-sent-events dialects (OpenAI, Anthropic, Gemini).

:class:`SSEStream` parses the body with :class:`~gate.reviewers.sse.SSEParser`,
reads each event's data once as strict JSON (:func:`load_object`, the verdict's
own loader: a duplicate key is refused, never last-wins), applies the one
precedence rule (:func:`frame_error`), and only then hands the event to the
dialect subclass, which collects content, the finish reason, usage, malformed
events and the end marker. :meth:`SSEStream.conclude` turns them, with the
HTTP evidence of :class:`~gate.reviewers.base.Exchange`, into a
:class:`~gate.reviewers.base.Reply`, sealing the content into an MC1 envelope
only when every piece of completeness evidence is present, and otherwise
naming the first missing one.

The precedence rule: an event that is named ``error`` (in any case, with any
data or none, even ``data: [DONE]``), or whose data is a JSON object carrying a
non-null ``error`` or a ``type``/``object`` of ``"error"`` (read leniently when
the object is not strict JSON, e.g. a duplicated ``error`` key), is an error
frame. It wins over everything else the event says, before any dialect logic,
before the end-marker check and after an end marker too. ``"error": null`` is
not an error: the official SDKs ignore it, and it carries no error to lose.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gate.decide.attempt import EndReason, FinishReason
from gate.decide.envelope import seal
from gate.errors import TransportError
from gate.reviewers.base import Exchange, Reply, one_line
from gate.reviewers.limits import QUOTA_REASON, Refusal, quota_in_frame
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.sse import SSEEvent, SSEParser
from gate.safe import strictjson


def _malformed(message: str, *, reason: str | None = None) -> TransportError:
    return TransportError(f"malformed event: {message}", reason="malformed_event")


def load_object(data: str) -> dict[str, Any]:
    """Parse one event's JSON data strictly (:func:`gate.safe.strictjson.loads`); an object."""
    value = strictjson.loads(data, what="the event data", error=_malformed)
    if not isinstance(value, dict):
        raise TransportError(
            f"malformed event: data is JSON {type(value).__name__}, expected an object",
            reason="malformed_event",
        )
    return value


def int_fields(value: object) -> dict[str, int]:
    """The token counts of a usage object: its integer fields (nested details and
    booleans left out); none at all when any is negative (a count below zero would lower
    the reported cost, so every count of that record is unknown instead)."""
    if not isinstance(value, dict):
        return {}
    counts = {
        str(key): item
        for key, item in value.items()
        if isinstance(item, int) and not isinstance(item, bool)
    }
    # one count below zero and none of them can be trusted: dropping just that one would
    # read as zero (an extra count such as cache tokens) and the cost as known
    return {} if any(item < 0 for item in counts.values()) else counts


@dataclass
class ErrorFrame:
    kind: str
    message: str
    transient: bool
    #: a quota or billing stop (:func:`gate.reviewers.limits.quota_in_frame`): never retried
    quota: Refusal | None = None


@dataclass(frozen=True)
class Frame:
    """One event with data, its data read once as strict JSON (``value``) or why not."""

    name: str  # the ``event:`` field, "" when there was none
    data: str
    value: dict[str, Any] | None
    problem: str | None  # why ``data`` is not a strict JSON object (None when it is)

    def object(self) -> dict[str, Any]:
        """The data as a strict JSON object, or raise ``malformed_event``."""
        if self.value is None:
            raise TransportError(self.problem or "malformed event", reason="malformed_event")
        return self.value


def _carries_error(pairs: list[tuple[str, Any]]) -> bool:
    return any(
        (key == "error" and value is not None) or (key in ("type", "object") and value == "error")
        for key, value in pairs
    )


def _loose_pairs(data: str) -> list[tuple[str, Any]]:
    """Every top-level key/value of a JSON object read leniently (duplicates kept), else []."""
    try:
        value = json.loads(data, object_pairs_hook=lambda pairs: pairs)
    except (ValueError, RecursionError):
        return []
    return value if isinstance(value, list) and all(isinstance(p, tuple) for p in value) else []


def frame_error(
    event: SSEEvent, value: dict[str, Any] | None, secret: str | None
) -> ErrorFrame | None:
    """The one precedence rule: is this event an error frame, whatever else it says?

    ``value`` is the event's data as a strict JSON object, or None when it has
    no data or the data is not one. See the module docstring for the rule.
    """
    named = event.event.strip().casefold() == "error"
    if value is not None:
        if not (named or _carries_error(list(value.items()))):
            return None
        return error_frame(value, secret)
    data = event.data
    if not (named or (data is not None and _carries_error(_loose_pairs(data)))):
        return None
    # an error frame is an error whatever its body; redacted before it is shortened
    message = one_line(data, secret, limit=200) if data else "(no data)"
    return ErrorFrame("error", message, transient=False)


def error_frame(value: dict[str, Any], secret: str | None) -> ErrorFrame:
    """The :class:`ErrorFrame` an error object inside a 200 stream is, wherever a dialect
    carries it (an error event, Responses' ``response.failed``): its kind and message, and
    a quota or billing stop read from it (:func:`gate.reviewers.limits.quota_in_frame`),
    which is never transient, whatever the rest of it says."""
    kind, message, code = error_fields(value, secret)
    quota = quota_in_frame(value)
    return ErrorFrame(kind, message, transient_error(kind, code) and quota is None, quota)


def _frame_verdict(error: ErrorFrame, provider: str) -> tuple[str, str, bool]:
    """(reason, detail, retryable) of an error frame inside a 200 stream: a quota stop
    names who acts first (the detail is cut at its limit) and is never retried."""
    if error.quota is not None:
        detail = (
            f"{error.quota.advice(provider)}; said inside the 200 stream "
            f"({error.kind}: {error.message})"
        )
        return QUOTA_REASON, detail, False
    advice = "transient, retryable" if error.transient else "not retryable"
    detail = (
        f"the provider sent an error inside the 200 stream ({error.kind}: {error.message}); "
        f"everything after it is void; {advice}"
    )
    return "error_frame", detail, error.transient


class SSEStream:
    """Collect one SSE answer and conclude it into a :class:`Reply`.

    Subclasses implement :meth:`on_event` and :meth:`normalize`, and set the
    end-marker wording. A malformed event or an error frame is recorded (the
    first one wins) and reading goes on, so the raw bytes are complete for the
    record; neither can be outweighed by anything that follows.
    """

    PROVIDER = ""
    END_MARKER = ""  # e.g. "data: [DONE]"
    MISSING_END_REASON = ""  # e.g. "missing_done"
    REQUEST_ID_HEADERS: tuple[str, ...] = ("x-request-id",)

    def __init__(self, settings: ReviewerSettings) -> None:
        self.settings = settings
        self.parser = SSEParser()
        self.parts: list[str] = []
        self.finish: str | None = None
        self.end_marker = False
        self.error: ErrorFrame | None = None
        self.malformed: str | None = None
        self.usage: dict[str, int] = {}
        self.response_id: str | None = None
        self.refusal_text = ""
        self.events = 0
        self.tool_calls: list[str] = []  # what the model called (the gate sends no tools)
        self.unread: str | None = None  # content of a kind the gate does not read as text

    # subclass hooks
    def on_event(self, frame: Frame) -> None:
        """One event that is not an error frame and has data."""
        raise NotImplementedError

    def normalize(self, verbatim: str) -> FinishReason:
        raise NotImplementedError

    def missing_end_detail(self) -> str:
        return (
            f"the stream ended without {self.END_MARKER}; the answer may be cut "
            "(a proxy or the provider closed the stream early); retryable"
        )

    # the machinery
    def progress(self) -> int:
        """Events read so far: what a heartbeat counts (a comment is no event)."""
        return self.events

    def feed(self, chunk: bytes) -> None:
        if self.malformed is not None:
            return
        try:
            for event in self.parser.feed(chunk):
                self.events += 1
                self.take(event)
        except TransportError as err:
            self.note_malformed(err.message)
        except (ValueError, RecursionError) as err:  # never out of perform(): the record is kept
            self.note_malformed(
                f"malformed event: {type(err).__name__}: "
                f"{one_line(str(err), self.settings.api_key, limit=120)}"
            )

    def take(self, event: SSEEvent) -> None:
        """Read the data once, apply the precedence rule, then hand the event to the dialect."""
        value: dict[str, Any] | None = None
        problem: str | None = None
        if event.data is not None:
            try:
                value = load_object(event.data)
            except TransportError as err:
                problem = err.message
        error = frame_error(event, value, self.settings.api_key)
        if error is not None:
            self.note_error(error)
            return
        if event.data is None:
            name = one_line(event.event, self.settings.api_key, limit=40)
            self.note_malformed(f"malformed event: event {name!r} has no data line")
            return
        self.on_event(Frame(name=event.event, data=event.data, value=value, problem=problem))

    def note_malformed(self, text: str) -> None:
        if self.malformed is None:
            self.malformed = text

    def note_finish(self, reason: str) -> None:
        """Record the finish reason; a second, different one is malformed (the first stays).

        A ``length`` finish followed by a ``stop`` must never be read as a clean stop.
        """
        if self.finish is not None and reason != self.finish:
            self.note_malformed(
                f"malformed event: a second finish reason {one_line(reason, limit=40)!r} "
                f"after {one_line(self.finish, limit=40)!r}"
            )
            return
        self.finish = reason

    def note_error(self, error: ErrorFrame) -> None:
        if self.error is None:
            self.error = error

    def note_tool_call(self, name: object) -> None:
        """The model called a tool: never a complete verdict, whatever the finish says.

        The gate sends no tools, so a tool call is a model that did not answer in text
        (with empty text, or a preamble that is not the verdict). One rule for every
        dialect: :meth:`judge_finish` blocks it as ``unexpected_finish``.
        """
        shown = one_line(name, self.settings.api_key, limit=60) if isinstance(name, str) else ""
        if shown or not self.tool_calls:  # a call's later deltas carry no name again
            self.tool_calls.append(shown or "(unnamed)")

    def note_unread(self, detail: str) -> None:
        """Content the gate cannot read as review text (the first one wins): blocks with
        ``unsupported_content`` rather than being skipped, so no text is sealed with a
        part left out."""
        if self.unread is None:
            self.unread = detail

    @property
    def content(self) -> str:
        return "".join(self.parts)

    def conclude(self, exchange: Exchange) -> Reply:
        secret = self.settings.api_key
        finish = self.normalize(self.finish) if self.finish is not None else FinishReason.NONE

        def reply(
            reason: str,
            detail: str,
            end: EndReason,
            *,
            retry: bool = False,
            envelope: bytes | None = None,
        ) -> Reply:
            return Reply.from_exchange(
                exchange,
                provider=self.PROVIDER,
                reason=reason,
                detail=detail,
                end=end,
                secret=secret,
                request_id=exchange.header(*self.REQUEST_ID_HEADERS) or self.response_id,
                retry=retry,
                envelope=envelope,
                content=self.content,
                finish=finish,
                provider_finish=self.finish,
                usage=self.usage,
            )

        if exchange.head_refused:
            return reply(
                exchange.reason,
                exchange.failure_detail,
                EndReason.HTTP_ERROR,
                retry=exchange.retryable,
            )
        if self.error is not None:
            reason, detail, retry = _frame_verdict(self.error, self.PROVIDER)
            return reply(reason, detail, EndReason.ERROR_FRAME, retry=retry)
        if exchange.failure:
            return reply(
                exchange.reason,
                exchange.failure_detail,
                exchange.end_reason,
                retry=exchange.retryable,
            )
        if self.malformed is not None:
            return reply(
                "malformed_event",
                f"{self.malformed}; the provider's stream broke its own format; not retryable",
                EndReason.TRAILER,
            )
        if self.unread is not None:
            return reply(
                "unsupported_content",
                f"{self.unread}; the gate reads only text parts, so it cannot tell what this "
                "answer says; use a model or endpoint that answers in plain text; not retryable",
                EndReason.TRAILER,
            )
        kind = exchange.headers.get("content-type", "")
        if self.events == 0 and ("text/event-stream" not in kind or not self.parser.pending):
            return self.no_events(kind, reply)
        if self.parser.pending:
            return reply(
                "partial_event",
                "the stream ended in the middle of an event (no blank line after it); "
                "the answer is cut; retryable",
                EndReason.TRAILER,
                retry=True,
            )
        if not self.end_marker:
            hint = "" if "text/event-stream" in kind else f" (Content-Type was {kind or 'none'!r})"
            return reply(
                self.MISSING_END_REASON,
                self.missing_end_detail() + hint,
                EndReason.TRAILER,
                retry=True,
            )
        return self.judge_finish(finish, reply)

    def no_events(self, kind: str, reply: Callable[..., Reply]) -> Reply:
        """A 200 whose body arrived whole (its framing complete) and held no event."""
        if "text/event-stream" not in kind:
            return reply(
                "not_event_stream",
                f"the reviewer answered with Content-Type {kind or 'none'!r} and no server-sent "
                "events; it did not stream (check base_url and that the server supports "
                "stream: true); not retryable",
                EndReason.TRAILER,
            )
        return reply(
            "empty_answer",
            "the server ended its 200 answer whole (the HTTP framing complete) without a "
            "single event; self-hosted servers (llama.cpp, Ollama) answer this way when "
            "the prompt does not fit their context: raise the server's context "
            "(llama.cpp --ctx-size or llama-cpp-python --n_ctx, Ollama num_ctx, vLLM "
            "--max-model-len) or lower max_chunk_bytes; not retryable",
            EndReason.TRAILER,
        )

    def judge_finish(self, finish: FinishReason, reply: Callable[..., Reply]) -> Reply:
        verbatim = self.finish
        if self.tool_calls:  # before every finish reason: one rule for every dialect
            called = ", ".join(sorted(set(self.tool_calls))[:3])
            return reply(
                "unexpected_finish",
                f"the model called a tool ({called}) instead of answering in text "
                f"(finish reason {verbatim!r}); the gate sends no tools, so a tool call is "
                "never a complete verdict; not retryable",
                EndReason.TRAILER,
            )
        if finish is FinishReason.NONE:
            return reply(
                "missing_finish_reason",
                f"the stream ended ({self.END_MARKER}) without a finish reason; "
                "the answer cannot be shown complete; retryable",
                EndReason.TRAILER,
                retry=True,
            )
        if finish is FinishReason.LENGTH:
            return reply(
                "token_exhaustion",
                f"the model ran out of output tokens (finish reason {verbatim!r}, "
                f"max_tokens={self.settings.max_tokens}); the answer is complete but "
                "truncated by the model; raise max_tokens",
                EndReason.TRAILER,
            )
        if finish is FinishReason.REFUSAL:
            said = f": {self.refusal_text}" if self.refusal_text else ""
            return reply(
                "refusal",
                f"the model refused or was filtered (finish reason {verbatim!r}){said}; "
                "a human must review this change",
                EndReason.TRAILER,
            )
        if finish is not FinishReason.STOP:
            return reply(
                "unexpected_finish",
                f"the model stopped for {verbatim!r}, not a normal stop; "
                "the gate asked for text only; not retryable",
                EndReason.TRAILER,
            )
        try:
            data = self.content.encode("utf-8")
        except UnicodeEncodeError as err:
            return reply(
                "unpaired_surrogate",
                f"the text has an unpaired surrogate escape at character "
                f"{err.start}, so it is not valid Unicode; not retryable",
                EndReason.TRAILER,
            )
        return reply("", "", EndReason.TRAILER, envelope=seal(data))


_TRANSIENT_WORDS = (
    "overload",
    "rate_limit",
    "server_error",
    "internal",
    "unavailable",
    "timeout",
    "api_error",
    "resource_exhausted",
    "deadline_exceeded",
)


def transient_error(kind: object, code: object = None) -> bool:
    """Whether an in-stream error names a passing condition (overload, 5xx, 429)."""
    if isinstance(code, int) and not isinstance(code, bool) and (code == 429 or code >= 500):
        return True
    words = f"{kind} {code}".lower()
    return any(word in words for word in _TRANSIENT_WORDS)


def error_fields(value: object, secret: str | None = None) -> tuple[str, str, object]:
    """(kind, message, code) of an error object as providers send it (redacted, then shortened).

    The object is ``value["error"]`` when that is set (OpenAI, Anthropic, Gemini),
    else ``value`` itself (vLLM's ``{"object": "error", "message": ...}``).
    """
    error = value.get("error") if isinstance(value, dict) else None
    if error is None:
        error = value
    if isinstance(error, dict):
        kind = error.get("type") or error.get("status") or error.get("code") or "error"
        message = error.get("message") or ""
        return (
            one_line(str(kind), secret, limit=120),
            one_line(str(message), secret, limit=200),
            error.get("code"),
        )
    return "error", one_line(str(error), secret, limit=200), None
